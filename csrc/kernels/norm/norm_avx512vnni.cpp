// AVX-512 (F/BW/VL/DQ + VNNI) normalization kernels: exact int8 statistics (VPSADBW sums,
// VPDPWSSD squares) and layer-norm rows, with masked tails. Must equal the scalar kernels byte
// for byte (statistics are exact integers; rows use the same float op order).
// Changes with: norm_generic_impl.h, norm_dispatch.h.
#define QPLUGIN_ISA_NS avx512vnni
#include <immintrin.h>

#include <type_traits>

#include "kernels/norm/norm_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace avx512vnni {
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
      __m512i v0 = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(_mm512_maskz_loadu_epi8(m, x + i), flip));
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
// of up to 64 channels keep 8 accumulators in registers, the last vector masked; row blocks of
// at most 16384 rows keep the square lanes below 2^31 (16384 * 65025), and of about 16 KiB when
// C > 64 so re-reading a block for the next channel chunk hits L1.
template <int NV>
inline void col_chunk(const uint8_t* x, int64_t rows, int64_t C, int64_t c0, __mmask16 last,
                      __m128i flip, int64_t* u1, int64_t* u2) {
  __m512i a[NV], q[NV];
  for (int k = 0; k < NV; ++k) a[k] = q[k] = _mm512_setzero_si512();
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* xr = x + r * C + c0;
    for (int k = 0; k < NV; ++k) {
      const __mmask16 m = k == NV - 1 ? last : static_cast<__mmask16>(0xFFFF);
      __m128i b = _mm_maskz_mov_epi8(m, _mm_xor_si128(_mm_maskz_loadu_epi8(m, xr + 16 * k), flip));
      __m512i v = _mm512_cvtepu8_epi32(b);
      a[k] = _mm512_add_epi32(a[k], v);
      q[k] = _mm512_dpwssd_epi32(q[k], v, v);
    }
  }
  for (int k = 0; k < NV; ++k) {
    alignas(64) int32_t ta[16], tq[16];
    _mm512_store_si512(ta, a[k]);
    _mm512_store_si512(tq, q[k]);
    const int nlanes = k == NV - 1 ? __builtin_popcount(last) : 16;
    for (int j = 0; j < nlanes; ++j) {
      u1[c0 + 16 * k + j] += ta[j];
      u2[c0 + 16 * k + j] += tq[j];
    }
  }
}

template <typename T>
void col_stats(const T* xt, int64_t rows, int64_t C, int64_t* s1, int64_t* s2) {
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const __m128i flip = _mm_set1_epi8(static_cast<char>(kFlip<T>));
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
        case 4: col_chunk<4>(xb, nr, C, c0, last, flip, u1, u2); break;
        case 3: col_chunk<3>(xb, nr, C, c0, last, flip, u1, u2); break;
        case 2: col_chunk<2>(xb, nr, C, c0, last, flip, u1, u2); break;
        default: col_chunk<1>(xb, nr, C, c0, last, flip, u1, u2); break;
      }
    }
  }
  for (int64_t c = 0; c < C; ++c) unflip<T>(rows, u1[c], u2[c], s1 + c, s2 + c);
  if (u1 != stack_u) delete[] u1;
}

template <typename T>
inline __m128i norm16(__m128i raw, __m512 mean, __m512 rstd, __m512 g, __m512 b, __m512 lo,
                      __m512 hi, __m512i out_zp) {
  __m512i w = std::is_signed<T>::value ? _mm512_cvtepi8_epi32(raw) : _mm512_cvtepu8_epi32(raw);
  __m512 v = _mm512_sub_ps(_mm512_cvtepi32_ps(w), mean);
  v = _mm512_mul_ps(v, rstd);
  v = _mm512_fmadd_ps(v, g, b);
  v = _mm512_max_ps(v, lo);
  v = _mm512_min_ps(v, hi);
  return _mm512_cvtepi32_epi8(_mm512_add_epi32(_mm512_cvtps_epi32(v), out_zp));
}

template <typename T>
void norm_row(const T* x, T* y, int64_t n, const RowNormParams& p) {
  const __m512 mean = _mm512_set1_ps(p.mean), rstd = _mm512_set1_ps(p.rstd);
  const __m512 lo = _mm512_set1_ps(p.lo), hi = _mm512_set1_ps(p.hi);
  const __m512i out_zp = _mm512_set1_epi32(p.out_zp);
  int64_t j = 0;
  for (; j + 32 <= n; j += 32) {
    __m128i r0 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j));
    __m128i r1 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j + 16));
    __m128i q0 = norm16<T>(r0, mean, rstd, _mm512_loadu_ps(p.g + j), _mm512_loadu_ps(p.b + j),
                           lo, hi, out_zp);
    __m128i q1 = norm16<T>(r1, mean, rstd, _mm512_loadu_ps(p.g + j + 16),
                           _mm512_loadu_ps(p.b + j + 16), lo, hi, out_zp);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j), q0);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j + 16), q1);
  }
  for (; j < n; j += 16) {
    const int64_t left = n - j < 16 ? n - j : 16;
    const __mmask16 m = static_cast<__mmask16>((1u << left) - 1u);
    __m128i q = norm16<T>(_mm_maskz_loadu_epi8(m, x + j), mean, rstd,
                          _mm512_maskz_loadu_ps(m, p.g + j), _mm512_maskz_loadu_ps(m, p.b + j),
                          lo, hi, out_zp);
    _mm_mask_storeu_epi8(y + j, m, q);
  }
}

}  // namespace

const NormKernelTable& make_norm_table() {
  static const NormKernelTable t = [] {
    NormKernelTable k{};
    k.isa = Isa::kAvx512Vnni;
    k.u8 = {&row_stats<uint8_t>, &col_stats<uint8_t>, &norm_row<uint8_t>};
    k.s8 = {&row_stats<int8_t>, &col_stats<int8_t>, &norm_row<int8_t>};
    return k;
  }();
  return t;
}

}  // namespace avx512vnni
}  // namespace kernels
}  // namespace qplugin
