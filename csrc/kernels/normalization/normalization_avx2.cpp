// AVX2 + FMA normalization kernels: exact int8 statistics (VPSADBW sums, VPMADDWD squares) and
// layer-norm rows. Must equal the scalar kernels byte for byte (statistics are exact integers;
// rows use the same float op order). Changes with: normalization_generic_impl.h (tails), normalization.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include <type_traits>

#include "kernels/normalization/normalization_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

// Both statistics kernels work on u = code ^ flip (flip = 0x80 for int8, so u = x + 128 is
// unsigned) and convert the sums back to the raw domain at the end:
//   sum x = sum u - 128 n,  sum x^2 = sum u^2 - 256 sum x - 16384 n.
template <typename T>
constexpr uint8_t kFlip = std::is_signed<T>::value ? 0x80 : 0x00;

template <typename T>
inline void unflip(int64_t n, int64_t u1, int64_t u2, int64_t* s1, int64_t* s2) {
  if (std::is_signed<T>::value) {
    const int64_t x1 = u1 - 128 * n;
    *s1 += x1;
    *s2 += u2 - 256 * x1 - 16384 * n;
  } else {
    *s1 += u1;
    *s2 += u2;
  }
}

inline __m256i load32_u(const uint8_t* p, __m256i flip) {
  return _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)), flip);
}

inline int64_t hsum_epi64(__m256i v) {
  __m128i s = _mm_add_epi64(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  return _mm_cvtsi128_si64(s) + _mm_extract_epi64(s, 1);
}

// int32 lanes summed in int64 (the lanes may each be close to 2^31).
inline int64_t hsum_epi32_wide(__m256i v) {
  __m256i lo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(v));
  __m256i hi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(v, 1));
  return hsum_epi64(_mm256_add_epi64(lo, hi));
}

// Sums of u over n bytes: VPSADBW against zero gives 64-bit sums of 8 bytes; squares widen to
// 16 bits and VPMADDWD adds pairs into int32 lanes (<= 2 * 255^2 per lane per 32 bytes), flushed
// to int64 every kBlock bytes: (kBlock / 32) * 130050 < 2^31.
template <typename T>
void row_stats(const T* xt, int64_t n, int64_t* s1, int64_t* s2) {
  constexpr int64_t kBlock = int64_t{1} << 19;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(kFlip<T>));
  const __m256i zero = _mm256_setzero_si256();
  int64_t u1 = 0, u2 = 0;
  int64_t i = 0;
  const int64_t nv = n - n % 32;
  while (i < nv) {
    const int64_t end = nv - i < kBlock ? nv : i + kBlock;
    __m256i a0 = zero, a1 = zero, q0 = zero, q1 = zero, q2 = zero, q3 = zero;
    for (; i + 64 <= end; i += 64) {
      __m256i v0 = load32_u(x + i, flip), v1 = load32_u(x + i + 32, flip);
      a0 = _mm256_add_epi64(a0, _mm256_sad_epu8(v0, zero));
      a1 = _mm256_add_epi64(a1, _mm256_sad_epu8(v1, zero));
      __m256i w0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v0));
      __m256i w1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v0, 1));
      __m256i w2 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v1));
      __m256i w3 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v1, 1));
      q0 = _mm256_add_epi32(q0, _mm256_madd_epi16(w0, w0));
      q1 = _mm256_add_epi32(q1, _mm256_madd_epi16(w1, w1));
      q2 = _mm256_add_epi32(q2, _mm256_madd_epi16(w2, w2));
      q3 = _mm256_add_epi32(q3, _mm256_madd_epi16(w3, w3));
    }
    for (; i < end; i += 32) {
      __m256i v0 = load32_u(x + i, flip);
      a0 = _mm256_add_epi64(a0, _mm256_sad_epu8(v0, zero));
      __m256i w0 = _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v0));
      __m256i w1 = _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v0, 1));
      q0 = _mm256_add_epi32(q0, _mm256_madd_epi16(w0, w0));
      q1 = _mm256_add_epi32(q1, _mm256_madd_epi16(w1, w1));
    }
    u1 += hsum_epi64(_mm256_add_epi64(a0, a1));
    u2 += hsum_epi32_wide(q0) + hsum_epi32_wide(q1) + hsum_epi32_wide(q2) + hsum_epi32_wide(q3);
  }
  for (; i < n; ++i) {
    const int64_t u = x[i] ^ kFlip<T>;
    u1 += u;
    u2 += u * u;
  }
  unflip<T>(n, u1, u2, s1, s2);
}

// Per-column sums over rows of C codes: 8 channels per YMM of int32 lanes (VPMOVZXBD), squares
// with VPMADDWD of the lane against itself (the high 16 bits are zero, so it is u*u). Chunks of
// up to 32 channels keep 8 accumulators in registers; row blocks of at most 16384 rows keep the
// square lanes below 2^31 (16384 * 65025), and of about 16 KiB so re-reading a block for the
// next channel chunk hits L1. Columns past the last multiple of 8 go through the scalar form.
template <typename T, int NV>
inline void col_chunk(const uint8_t* x, int64_t rows, int64_t C, int64_t c0, __m128i flip,
                      int64_t* u1, int64_t* u2) {
  __m256i a[NV], q[NV];
  for (int k = 0; k < NV; ++k) a[k] = q[k] = _mm256_setzero_si256();
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * C + c0;
    for (int k = 0; k < NV; ++k) {
      __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(xr + 8 * k));
      if (kFlip<T>) b = _mm_xor_si128(b, flip);
      __m256i v = _mm256_cvtepu8_epi32(b);
      a[k] = _mm256_add_epi32(a[k], v);
      q[k] = _mm256_add_epi32(q[k], _mm256_madd_epi16(v, v));
    }
  }
  for (int k = 0; k < NV; ++k) {
    alignas(32) int32_t ta[8], tq[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(ta), a[k]);
    _mm256_store_si256(reinterpret_cast<__m256i*>(tq), q[k]);
    for (int j = 0; j < 8; ++j) {
      u1[c0 + 8 * k + j] += ta[j];
      u2[c0 + 8 * k + j] += tq[j];
    }
  }
}

template <typename T>
void col_stats(const T* xt, int64_t rows, int64_t C, int64_t* s1, int64_t* s2) {
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const int64_t C8 = C - C % 8;
  if (C8 == 0) {
    norm_generic::col_stats<T>(xt, rows, C, s1, s2);
    return;
  }
  const __m128i flip = _mm_set1_epi8(static_cast<char>(kFlip<T>));
  // Sums of u for the vector columns, then unflipped into s1/s2.
  constexpr int64_t kMaxRows = 16384;
  int64_t rblk = C8 <= 32 ? kMaxRows : (16384 / C > 4 ? 16384 / C : 4);
  int64_t stack_u[2 * 256];
  int64_t* u1 = C8 <= 256 ? stack_u : new int64_t[2 * C8];
  int64_t* u2 = u1 + (C8 <= 256 ? 256 : C8);
  for (int64_t c = 0; c < C8; ++c) u1[c] = u2[c] = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += rblk) {
    const int64_t nr = rows - r0 < rblk ? rows - r0 : rblk;
    const uint8_t* xb = x + r0 * C;
    int64_t c0 = 0;
    for (; c0 + 32 <= C8; c0 += 32) col_chunk<T, 4>(xb, nr, C, c0, flip, u1, u2);
    switch ((C8 - c0) / 8) {
      case 3: col_chunk<T, 3>(xb, nr, C, c0, flip, u1, u2); break;
      case 2: col_chunk<T, 2>(xb, nr, C, c0, flip, u1, u2); break;
      case 1: col_chunk<T, 1>(xb, nr, C, c0, flip, u1, u2); break;
      default: break;
    }
  }
  for (int64_t c = 0; c < C8; ++c) unflip<T>(rows, u1[c], u2[c], s1 + c, s2 + c);
  if (u1 != stack_u) delete[] u1;
  if (C8 < C) {
    // Remaining columns: the scalar form on a view shifted to column C8.
    for (int64_t r = 0; r < rows; ++r) {
      const T* xr = xt + r * C;
      for (int64_t c = C8; c < C; ++c) {
        const int64_t v = xr[c];
        s1[c] += v;
        s2[c] += v * v;
      }
    }
  }
}

template <typename T>
inline __m256 to_float8(const T* x) {
  __m128i raw = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  return _mm256_cvtepi32_ps(std::is_signed<T>::value ? _mm256_cvtepi8_epi32(raw)
                                                     : _mm256_cvtepu8_epi32(raw));
}

// Round half to even (MXCSR default) after clamping the top in float (NaN and +overflow -> hi);
// the packs' saturation clamps the bottom (-overflow converts to INT_MIN, which saturates too).
inline __m256i round_top8(__m256 v, __m256 hi) {
  return _mm256_cvtps_epi32(_mm256_min_ps(v, hi));
}

// Four int32 x8 vectors to 32 bytes in order, saturating to T's range: VPACKSSDW, then
// VPACKSSWB / VPACKUSWB interleave 128-bit lanes; VPERMD puts the dwords back in order.
template <typename T>
inline __m256i pack32(__m256i i0, __m256i i1, __m256i i2, __m256i i3) {
  const __m256i w01 = _mm256_packs_epi32(i0, i1), w23 = _mm256_packs_epi32(i2, i3);
  const __m256i b = std::is_signed<T>::value ? _mm256_packs_epi16(w01, w23)
                                             : _mm256_packus_epi16(w01, w23);
  return _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

template <typename T>
inline __m256i norm8(const T* x, __m256 rstd, __m256 shift, const float* g, const float* b,
                     __m256 hi) {
  const __m256 v = _mm256_fmadd_ps(to_float8<T>(x), rstd, shift);
  return round_top8(_mm256_fmadd_ps(v, _mm256_loadu_ps(g), _mm256_loadu_ps(b)), hi);
}

template <typename T>
void norm_row(const T* x, T* y, int64_t n, const RowNormParams& p) {
  const __m256 rstd = _mm256_set1_ps(p.rstd), shift = _mm256_set1_ps(p.shift);
  const __m256 hi = _mm256_set1_ps(p.hi);
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m256i i[4];
    for (int k = 0; k < 4; ++k) {
      i[k] = norm8<T>(x + j + 8 * k, rstd, shift, p.g + j + 8 * k, p.b + j + 8 * k, hi);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + j), pack32<T>(i[0], i[1], i[2], i[3]));
  }
  for (; j < n; ++j) {
    y[j] = norm_generic::norm_one<T>(x[j], p.rstd, p.shift, p.g[j], p.b[j], p.lo, p.hi);
  }
}

template <typename T>
inline __m256i affine8(const T* x, __m256 a, __m256 b, __m256 hi) {
  return round_top8(_mm256_fmadd_ps(a, to_float8<T>(x), b), hi);
}

template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const ChannelAffineParams& p) {
  const __m256 hi = _mm256_set1_ps(p.hi);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    int64_t c = 0;
    for (; c + 32 <= C; c += 32) {
      __m256i i[4];
      for (int k = 0; k < 4; ++k) {
        i[k] = affine8<T>(xr + c + 8 * k, _mm256_loadu_ps(p.alpha + c + 8 * k),
                          _mm256_loadu_ps(p.beta + c + 8 * k), hi);
      }
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(yr + c), pack32<T>(i[0], i[1], i[2], i[3]));
    }
    for (; c < C; ++c) {
      yr[c] = norm_generic::affine_one<T>(xr[c], p.alpha[c], p.beta[c], p.lo, p.hi);
    }
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t ch, const ChannelAffineParams& p) {
  const __m256 hi = _mm256_set1_ps(p.hi);
  const __m256 a = _mm256_set1_ps(p.alpha[ch]), b = _mm256_set1_ps(p.beta[ch]);
  int64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    __m256i q[4];
    for (int k = 0; k < 4; ++k) q[k] = affine8<T>(x + i + 8 * k, a, b, hi);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y + i), pack32<T>(q[0], q[1], q[2], q[3]));
  }
  for (; i < n; ++i) y[i] = norm_generic::affine_one<T>(x[i], p.alpha[ch], p.beta[ch], p.lo, p.hi);
}

template <typename T>
constexpr TypedNormKernels<T> typed() {
  return {&row_stats<T>, &col_stats<T>, &norm_row<T>, &affine_rows<T>, &affine_plane<T>};
}

}  // namespace

const NormKernelTable& make_norm_table() {
  // plane_tables: the scalar lut8 is slower than affine_plane here.
  static const NormKernelTable t{.isa = Isa::kAvx2,
                                 .plane_tables = false,
                                 .row_tables = false,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
