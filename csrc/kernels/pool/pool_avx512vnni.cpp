// avx512vnni pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS avx512vnni
// Let the vectorizer use full 512-bit vectors (GCC prefers 256 by default).
#pragma GCC target("prefer-vector-width=512")
#include <immintrin.h>

#include "kernels/pool/pool_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

// Global average of 8-bit planes (NCHW adaptive_avg_pool to 1x1): VPSADBW sums of 64-byte
// chunks (masked tail loads never touch the next plane), int8 codes flipped to unsigned
// (x + 128, corrected in the bias). Exact sums, then pool_generic::avg_one: the scalar bytes.
template <typename T>
void plane_avg(const T* xt, T* out, int64_t P, int64_t HW, double div, const AvgQ& q) {
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const __m512i flip = _mm512_set1_epi8(std::is_signed<T>::value ? static_cast<char>(0x80) : 0);
  const __m512i zero = _mm512_setzero_si512();
  const int64_t bias = -(static_cast<int64_t>(q.zp) + (std::is_signed<T>::value ? 128 : 0)) * HW;
  const float d = static_cast<float>(div);
  const int64_t full = HW / 64 * 64;
  const __mmask64 m = _bzhi_u64(~0ull, static_cast<unsigned>(HW - full));
  auto sum = [&](const uint8_t* a) -> int32_t {  // sum of the plane's codes - zp
    __m512i acc = zero;
    for (int64_t i = 0; i < full; i += 64)
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(a + i), flip), zero));
    if (full < HW) {
      __m512i v = _mm512_maskz_loadu_epi8(m, a + full);
      v = _mm512_maskz_mov_epi8(m, _mm512_xor_si512(v, flip));
      acc = _mm512_add_epi64(acc, _mm512_sad_epu8(v, zero));
    }
    return static_cast<int32_t>(_mm512_reduce_add_epi64(acc) + bias);
  };
  // 16 planes at a time: avg_one's rounding lane by lane (vdivps, vcvtps2dq under the default
  // MXCSR mode, + zp, clamp; the clamped values fit the code type, so VPMOVDB's truncation is
  // exact). With a scalar division per plane, 32 x 2048 planes of 7x7 took 0.28 ms (now 0.16).
  const __m512 dv = _mm512_set1_ps(d);
  const __m512i zp = _mm512_set1_epi32(q.zp);
  const __m512i qmin = _mm512_set1_epi32(q.qmin);
  const __m512i qmax = _mm512_set1_epi32(q.qmax);
  int64_t p = 0;
  alignas(64) int32_t s[16];
  for (; p + 16 <= P; p += 16) {
    for (int j = 0; j < 16; ++j) s[j] = sum(x + (p + j) * HW);
    const __m512 f = _mm512_div_ps(_mm512_cvtepi32_ps(_mm512_load_si512(s)), dv);
    __m512i r = _mm512_add_epi32(_mm512_cvtps_epi32(f), zp);
    r = _mm512_min_epi32(_mm512_max_epi32(r, qmin), qmax);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + p), _mm512_cvtepi32_epi8(r));
  }
  for (; p < P; ++p) out[p] = pool_generic::avg_one<T>(sum(x + p * HW), d, q);
}

// Channels-last average of one output pixel (avg_rows): out[c] = avg(sum_r rows[r][c] - zp, div),
// 64 channels at a time. Codes are summed as u16 over groups of up to 256 rows (vpmovzxbw +
// vpaddw; int8 codes flipped to unsigned, x + 128, corrected in the bias; 256 * 255 < 2^16: exact),
// each group's sums added into int32 (global averages of 28 x 28 pixels are 784 rows: they took
// the portable kernel, 2.5x torch.ao on a squeeze-excitation's 8 x 120 x 28 x 28). Rounding is
// pool_generic::avg_one's, lane by lane: int32 s = sum + bias, float(s) / div (vdivps: IEEE
// division, as the scalar '/'), round half to even (vcvtps2dq under the default MXCSR mode, as
// nearbyint), + zp, clamp -- the scalar bytes. (|sum| < 2^31: the ops bound windows by 2^23.)
template <typename T>
inline void avg_finish16(__m512i sum32, const __m512 d, const __m512i bias, const __m512i zp,
                         const __m512i qmin, const __m512i qmax, T* o, __mmask16 m) {
  __m512i s = _mm512_add_epi32(sum32, bias);
  __m512 f = _mm512_div_ps(_mm512_cvtepi32_ps(s), d);
  __m512i r = _mm512_add_epi32(_mm512_cvt_roundps_epi32(f, _MM_FROUND_TO_NEAREST_INT |
                                                               _MM_FROUND_NO_EXC), zp);
  r = _mm512_min_epi32(_mm512_max_epi32(r, qmin), qmax);
  _mm_mask_storeu_epi8(o, m, _mm512_cvtepi32_epi8(r));
}

template <typename T>
void avg_rows(const T* const* rows, int64_t nrows, T* out, int64_t C, double div, const AvgQ& q) {
  constexpr bool kSigned = std::is_signed<T>::value;
  const __m512i flip = _mm512_set1_epi8(kSigned ? static_cast<char>(0x80) : 0);
  const __m512i bias = _mm512_set1_epi32(-(q.zp + (kSigned ? 128 : 0)) * static_cast<int32_t>(nrows));
  const __m512 d = _mm512_set1_ps(static_cast<float>(div));
  const __m512i zp = _mm512_set1_epi32(q.zp);
  const __m512i qmin = _mm512_set1_epi32(q.qmin);
  const __m512i qmax = _mm512_set1_epi32(q.qmax);
  T* o = out;
  for (int64_t c0 = 0; c0 < C; c0 += 64) {
    const int64_t n = C - c0 < 64 ? C - c0 : 64;
    const __mmask64 m = n == 64 ? ~0ull : _bzhi_u64(~0ull, static_cast<unsigned>(n));
    __m512i t0 = _mm512_setzero_si512(), t1 = t0, t2 = t0, t3 = t0;  // int32 sums
    for (int64_t g = 0; g < nrows; g += 256) {
      const int64_t g1 = nrows - g < 256 ? nrows : g + 256;
      __m512i a0 = _mm512_setzero_si512(), a1 = _mm512_setzero_si512();  // u16 sums
      for (int64_t r = g; r < g1; ++r) {
        const uint8_t* p = reinterpret_cast<const uint8_t*>(rows[r]) + c0;
        __m512i v = n == 64 ? _mm512_loadu_si512(p) : _mm512_maskz_loadu_epi8(m, p);
        v = _mm512_xor_si512(v, flip);
        a0 = _mm512_add_epi16(a0, _mm512_cvtepu8_epi16(_mm512_castsi512_si256(v)));
        a1 = _mm512_add_epi16(a1, _mm512_cvtepu8_epi16(_mm512_extracti64x4_epi64(v, 1)));
      }
      t0 = _mm512_add_epi32(t0, _mm512_cvtepu16_epi32(_mm512_castsi512_si256(a0)));
      t1 = _mm512_add_epi32(t1, _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(a0, 1)));
      t2 = _mm512_add_epi32(t2, _mm512_cvtepu16_epi32(_mm512_castsi512_si256(a1)));
      t3 = _mm512_add_epi32(t3, _mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64(a1, 1)));
    }
    // Masked-off lanes hold garbage sums (flip / zero loads) but are never stored.
    const __mmask16 m0 = static_cast<__mmask16>(m), m1 = static_cast<__mmask16>(m >> 16),
                    m2 = static_cast<__mmask16>(m >> 32), m3 = static_cast<__mmask16>(m >> 48);
    T* oc = o + c0;
    avg_finish16<T>(t0, d, bias, zp, qmin, qmax, oc, m0);
    if (n > 16) avg_finish16<T>(t1, d, bias, zp, qmin, qmax, oc + 16, m1);
    if (n > 32) avg_finish16<T>(t2, d, bias, zp, qmin, qmax, oc + 32, m2);
    if (n > 48) avg_finish16<T>(t3, d, bias, zp, qmin, qmax, oc + 48, m3);
  }
}

// The portable kernels with this tier's plane_avg and avg_rows (8-bit codes).
template <typename T>
TypedPoolKernels<T> typed() {
  TypedPoolKernels<T> k = pool_generic::typed<T>();
  k.plane_avg = &plane_avg<T>;
  k.avg_rows = &avg_rows<T>;
  return k;
}

}  // namespace

const PoolKernelTable& make_pool_table() {
  static const PoolKernelTable t{.isa = Isa::kAvx512Vnni,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>(),
                                 .s32 = pool_generic::typed<int32_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
