// AVX-512 (F/BW/VL/DQ + VNNI) normalization kernels: exact int8 statistics (VPSADBW sums,
// VPDPWSSD squares) and layer-norm rows, with masked tails. Must equal the scalar kernels byte
// for byte (statistics are exact integers; rows use the same float op order).
// Changes with: normalization_generic_impl.h, normalization.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "kernels/normalization/normalization_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

// The statistics kernels work on u = code ^ flip (flip = 0x80 for int8, so u = x + 128 is
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

// int32 lanes summed in int64 (the lanes may each be close to 2^31).
inline int64_t hsum_epi32_wide(__m512i v) {
  __m512i lo = _mm512_cvtepi32_epi64(_mm512_castsi512_si256(v));
  __m512i hi = _mm512_cvtepi32_epi64(_mm512_extracti64x4_epi64(v, 1));
  return _mm512_reduce_add_epi64(_mm512_add_epi64(lo, hi));
}

// Sums of u over n bytes: VPSADBW against zero gives 64-bit sums of 8 bytes; squares widen to
// 16 bits and VPDPWSSD (non-saturating) adds pairs into int32 lanes: at most 2 * 255^2 per lane
// per 64 bytes, flushed to int64 every kBlock bytes: (kBlock / 64 + 1) * 130050 < 2^31.
template <typename T>
void row_stats(const T* xt, int64_t n, int64_t* s1, int64_t* s2) {
  constexpr int64_t kBlock = int64_t{1} << 20;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(kFlip<T>));
  const __m512i zero = _mm512_setzero_si512();
  int64_t u1 = 0, u2 = 0;
  int64_t i = 0;
  while (i < n) {
    const int64_t end = n - i < kBlock ? n : i + kBlock;
    __m512i a0 = zero, a1 = zero, q0 = zero, q1 = zero, q2 = zero, q3 = zero;
    for (; i + 128 <= end; i += 128) {
      __m512i v0 = _mm512_xor_si512(_mm512_loadu_si512(x + i), flip);
      __m512i v1 = _mm512_xor_si512(_mm512_loadu_si512(x + i + 64), flip);
      a0 = _mm512_add_epi64(a0, _mm512_sad_epu8(v0, zero));
      a1 = _mm512_add_epi64(a1, _mm512_sad_epu8(v1, zero));
      __m512i w0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v0));
      __m512i w1 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v0, 1));
      __m512i w2 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v1));
      __m512i w3 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v1, 1));
      q0 = _mm512_dpwssd_epi32(q0, w0, w0);
      q1 = _mm512_dpwssd_epi32(q1, w1, w1);
      q2 = _mm512_dpwssd_epi32(q2, w2, w2);
      q3 = _mm512_dpwssd_epi32(q3, w3, w3);
    }
    for (; i < end; i += 64) {
      const int64_t left = end - i;
      const __mmask64 m = left >= 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(left));
      // Masked-off bytes must be 0 after the flip.
      __m512i v0 = _mm512_maskz_loadu_epi8(m, x + i);
      v0 = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(v0, flip));
      a0 = _mm512_add_epi64(a0, _mm512_sad_epu8(v0, zero));
      __m512i w0 = _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v0));
      __m512i w1 = _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v0, 1));
      q0 = _mm512_dpwssd_epi32(q0, w0, w0);
      q1 = _mm512_dpwssd_epi32(q1, w1, w1);
    }
    u1 += _mm512_reduce_add_epi64(_mm512_add_epi64(a0, a1));
    u2 += hsum_epi32_wide(q0) + hsum_epi32_wide(q1) + hsum_epi32_wide(q2) + hsum_epi32_wide(q3);
  }
  unflip<T>(n, u1, u2, s1, s2);
}

// Per-column sums over rows of C codes: 16 channels per ZMM of int32 lanes (VPMOVZXBD), squares
// with VPDPWSSD of the lane against itself (the high 16 bits are zero, so it adds u*u). Chunks
// of up to 64 channels keep 8 accumulators in registers, the last vector masked if C is not a
// multiple of 16; row blocks of at most 16384 rows keep the square lanes below 2^31
// (16384 * 65025), and of about 16 KiB when C > 64 so re-reading a block for the next channel
// chunk hits L1.
template <typename T, bool kMasked>
inline __m512i load16_u(const uint8_t* p, __mmask16 m) {
  const __m128i flip = _mm_set1_epi8(static_cast<char>(kFlip<T>));
  __m128i b;
  if (kMasked) {
    b = _mm_maskz_loadu_epi8(m, p);
    // Masked-off bytes must stay 0 after the flip.
    if (kFlip<T>) b = _mm_maskz_mov_epi8(m, _mm_xor_si128(b, flip));
  } else {
    b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    if (kFlip<T>) b = _mm_xor_si128(b, flip);
  }
  return _mm512_cvtepu8_epi32(b);
}

template <typename T, int NV, bool kMasked>
inline void col_chunk(const uint8_t* x, int64_t rows, int64_t C, int64_t c0, __mmask16 last,
                      int64_t* u1, int64_t* u2) {
  __m512i a[NV], q[NV];
  for (int k = 0; k < NV; ++k) a[k] = q[k] = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * C + c0;
    for (int k = 0; k < NV; ++k) {
      const __m512i v = (kMasked && k == NV - 1) ? load16_u<T, true>(xr + 16 * k, last)
                                                 : load16_u<T, false>(xr + 16 * k, 0);
      a[k] = _mm512_add_epi32(a[k], v);
      q[k] = _mm512_dpwssd_epi32(q[k], v, v);
    }
  }
  for (int k = 0; k < NV; ++k) {
    alignas(64) int32_t ta[16], tq[16];
    _mm512_store_si512(ta, a[k]);
    _mm512_store_si512(tq, q[k]);
    const int nlanes = (kMasked && k == NV - 1) ? __builtin_popcount(last) : 16;
    for (int j = 0; j < nlanes; ++j) {
      u1[c0 + 16 * k + j] += ta[j];
      u2[c0 + 16 * k + j] += tq[j];
    }
  }
}

template <typename T, int NV>
inline void col_chunk_any(const uint8_t* x, int64_t rows, int64_t C, int64_t c0, __mmask16 last,
                          int64_t* u1, int64_t* u2) {
  if (last == 0xFFFF) {
    col_chunk<T, NV, false>(x, rows, C, c0, last, u1, u2);
  } else {
    col_chunk<T, NV, true>(x, rows, C, c0, last, u1, u2);
  }
}

template <typename T>
void col_stats(const T* xt, int64_t rows, int64_t C, int64_t* s1, int64_t* s2) {
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  constexpr int64_t kMaxRows = 16384;
  const int64_t rblk = C <= 64 ? kMaxRows : (16384 / C > 4 ? 16384 / C : 4);
  int64_t stack_u[2 * 256];
  int64_t* u1 = C <= 256 ? stack_u : new int64_t[2 * C];
  int64_t* u2 = u1 + (C <= 256 ? 256 : C);
  for (int64_t c = 0; c < C; ++c) u1[c] = u2[c] = 0;
  for (int64_t r0 = 0; r0 < rows; r0 += rblk) {
    const int64_t nr = rows - r0 < rblk ? rows - r0 : rblk;
    const uint8_t* xb = x + r0 * C;
    for (int64_t c0 = 0; c0 < C; c0 += 64) {
      const int64_t left = C - c0 < 64 ? C - c0 : 64;
      const int nv = static_cast<int>((left + 15) / 16);
      const int tail = static_cast<int>(left - 16 * (nv - 1));
      const __mmask16 last = static_cast<__mmask16>(tail == 16 ? 0xFFFFu : (1u << tail) - 1u);
      switch (nv) {
        case 4: col_chunk_any<T, 4>(xb, nr, C, c0, last, u1, u2); break;
        case 3: col_chunk_any<T, 3>(xb, nr, C, c0, last, u1, u2); break;
        case 2: col_chunk_any<T, 2>(xb, nr, C, c0, last, u1, u2); break;
        default: col_chunk_any<T, 1>(xb, nr, C, c0, last, u1, u2); break;
      }
    }
  }
  for (int64_t c = 0; c < C; ++c) unflip<T>(rows, u1[c], u2[c], s1 + c, s2 + c);
  if (u1 != stack_u) delete[] u1;
}

template <typename T>
inline __m512 to_float16(__m128i raw) {
  return _mm512_cvtepi32_ps(std::is_signed<T>::value ? _mm512_cvtepi8_epi32(raw)
                                                     : _mm512_cvtepu8_epi32(raw));
}

template <typename T>
inline __m512 load_float16(const T* x) {
  return to_float16<T>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
}

// Round half to even (MXCSR default) after clamping the top in float (NaN and +overflow -> hi);
// the packs' saturation clamps the bottom (-overflow converts to INT_MIN, which saturates too).
inline __m512i round_top16(__m512 v, __m512 hi) {
  return _mm512_cvtps_epi32(_mm512_min_ps(v, hi));
}

// Four int32 x16 vectors to 64 bytes in order, saturating to T's range: VPACKSSDW, then
// VPACKSSWB / VPACKUSWB interleave 128-bit lanes; VPERMD puts the dwords back in order.
template <typename T>
inline __m512i pack64(__m512i i0, __m512i i1, __m512i i2, __m512i i3) {
  const __m512i w01 = _mm512_packs_epi32(i0, i1), w23 = _mm512_packs_epi32(i2, i3);
  const __m512i b = std::is_signed<T>::value ? _mm512_packs_epi16(w01, w23)
                                             : _mm512_packus_epi16(w01, w23);
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_epi32(idx, b);
}

// One int32 x16 vector to 16 bytes, saturating to T's range.
template <typename T>
inline __m128i pack16(__m512i i) {
  if (std::is_signed<T>::value) return _mm512_cvtsepi32_epi8(i);
  return _mm512_cvtusepi32_epi8(_mm512_max_epi32(i, _mm512_setzero_si512()));
}

template <typename T>
inline __m512i norm16(__m512 xf, __m512 rstd, __m512 shift, __m512 g, __m512 b, __m512 hi) {
  const __m512 v = _mm512_fmadd_ps(xf, rstd, shift);
  return round_top16(_mm512_fmadd_ps(v, g, b), hi);
}

template <typename T>
void norm_row(const T* x, T* y, int64_t n, const RowNormParams& p) {
  const __m512 rstd = _mm512_set1_ps(p.rstd), shift = _mm512_set1_ps(p.shift);
  const __m512 hi = _mm512_set1_ps(p.hi);
  int64_t j = 0;
  for (; j + 64 <= n; j += 64) {
    __m512i i[4];
    for (int k = 0; k < 4; ++k) {
      i[k] = norm16<T>(load_float16(x + j + 16 * k), rstd, shift, _mm512_loadu_ps(p.g + j + 16 * k),
                       _mm512_loadu_ps(p.b + j + 16 * k), hi);
    }
    _mm512_storeu_si512(y + j, pack64<T>(i[0], i[1], i[2], i[3]));
  }
  for (; j < n; j += 16) {
    const int64_t left = n - j < 16 ? n - j : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
    __m512i i = norm16<T>(to_float16<T>(_mm_maskz_loadu_epi8(m, x + j)), rstd, shift,
                          _mm512_maskz_loadu_ps(m, p.g + j), _mm512_maskz_loadu_ps(m, p.b + j),
                          hi);
    _mm_mask_storeu_epi8(y + j, m, pack16<T>(i));
  }
}

template <typename T>
inline __m512i affine16(__m512 xf, __m512 a, __m512 b, __m512 hi) {
  return round_top16(_mm512_fmadd_ps(a, xf, b), hi);
}

// Rows of C channels: 64 channels per step (four independent chains), then masked 16s.
template <typename T>
void affine_rows(const T* x, T* y, int64_t rows, int64_t C, const ChannelAffineParams& p) {
  const __m512 hi = _mm512_set1_ps(p.hi);
  for (int64_t r = 0; r < rows; ++r) {
    const T* xr = x + r * C;
    T* yr = y + r * C;
    int64_t c = 0;
    for (; c + 64 <= C; c += 64) {
      __m512i i[4];
      for (int k = 0; k < 4; ++k) {
        i[k] = affine16<T>(load_float16(xr + c + 16 * k), _mm512_loadu_ps(p.alpha + c + 16 * k),
                           _mm512_loadu_ps(p.beta + c + 16 * k), hi);
      }
      _mm512_storeu_si512(yr + c, pack64<T>(i[0], i[1], i[2], i[3]));
    }
    for (; c < C; c += 16) {
      const int64_t left = C - c < 16 ? C - c : 16;
      const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
      __m512i i = affine16<T>(to_float16<T>(_mm_maskz_loadu_epi8(m, xr + c)),
                              _mm512_maskz_loadu_ps(m, p.alpha + c),
                              _mm512_maskz_loadu_ps(m, p.beta + c), hi);
      _mm_mask_storeu_epi8(yr + c, m, pack16<T>(i));
    }
  }
}

template <typename T>
void affine_plane(const T* x, T* y, int64_t n, int64_t ch, const ChannelAffineParams& p) {
  const __m512 hi = _mm512_set1_ps(p.hi);
  const __m512 a = _mm512_set1_ps(p.alpha[ch]), b = _mm512_set1_ps(p.beta[ch]);
  int64_t i = 0;
  for (; i + 64 <= n; i += 64) {
    __m512i q[4];
    for (int k = 0; k < 4; ++k) q[k] = affine16<T>(load_float16(x + i + 16 * k), a, b, hi);
    _mm512_storeu_si512(y + i, pack64<T>(q[0], q[1], q[2], q[3]));
  }
  for (; i < n; i += 16) {
    const int64_t left = n - i < 16 ? n - i : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
    __m512i q = affine16<T>(to_float16<T>(_mm_maskz_loadu_epi8(m, x + i)), a, b, hi);
    _mm_mask_storeu_epi8(y + i, m, pack16<T>(q));
  }
}

template <typename T>
constexpr TypedNormKernels<T> typed() {
  return {&row_stats<T>, &col_stats<T>, &norm_row<T>, &affine_rows<T>, &affine_plane<T>};
}

}  // namespace

const NormKernelTable& make_norm_table() {
  // plane_tables: kernels::table().lut8 is VPERMI2B only with VBMI.
  static const NormKernelTable t{.isa = Isa::kAvx512Vnni,
                                 .plane_tables = cpu_has_vbmi(),
                                 .row_tables = false,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
