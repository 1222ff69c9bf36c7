// avx2 pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include "kernels/pool/pool_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

// Channels-last average of one output pixel (avg_rows), 32 channels at a time: u16 sums
// (vpmovzxbw + vpaddw, int8 codes flipped to unsigned, x + 128, corrected in the bias; exact for
// nrows <= 256, larger windows take the portable kernel), then pool_generic::avg_one's rounding
// lane by lane: int32 s = sum + bias, float(s) / div (vdivps), round half to even (vcvtps2dq,
// default MXCSR mode), + zp, clamp, saturating packs that never saturate (values are clamped).
// The < 32-channel tail runs avg_one per channel. Same bytes as the scalar kernel.
inline __m256i avg_finish8(__m128i sum16, __m256 d, __m256i bias, __m256i zp, __m256i qmin,
                           __m256i qmax) {
  const __m256i s = _mm256_add_epi32(_mm256_cvtepu16_epi32(sum16), bias);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(_mm256_cvtepi32_ps(s), d)), zp);
  return _mm256_min_epi32(_mm256_max_epi32(r, qmin), qmax);
}

template <typename T>
void avg_rows(const T* const* rows, int64_t nrows, T* out, int64_t C, double div, const AvgQ& q) {
  if (nrows > 256) return pool_generic::avg_rows<T>(rows, nrows, out, C, div, q);
  constexpr bool kSigned = std::is_signed<T>::value;
  const __m256i flip = _mm256_set1_epi8(kSigned ? static_cast<char>(0x80) : 0);
  const int32_t bias_s = -(q.zp + (kSigned ? 128 : 0)) * static_cast<int32_t>(nrows);
  const __m256i bias = _mm256_set1_epi32(bias_s);
  const float df = static_cast<float>(div);
  const __m256 d = _mm256_set1_ps(df);
  const __m256i zp = _mm256_set1_epi32(q.zp);
  const __m256i qmin = _mm256_set1_epi32(q.qmin);
  const __m256i qmax = _mm256_set1_epi32(q.qmax);
  const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const int64_t full = C / 32 * 32;
  for (int64_t c0 = 0; c0 < full; c0 += 32) {
    __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();
    for (int64_t r = 0; r < nrows; ++r) {
      const __m256i v = _mm256_xor_si256(
          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + c0)), flip);
      a0 = _mm256_add_epi16(a0, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v)));
      a1 = _mm256_add_epi16(a1, _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v, 1)));
    }
    const __m256i r0 = avg_finish8(_mm256_castsi256_si128(a0), d, bias, zp, qmin, qmax);
    const __m256i r1 = avg_finish8(_mm256_extracti128_si256(a0, 1), d, bias, zp, qmin, qmax);
    const __m256i r2 = avg_finish8(_mm256_castsi256_si128(a1), d, bias, zp, qmin, qmax);
    const __m256i r3 = avg_finish8(_mm256_extracti128_si256(a1, 1), d, bias, zp, qmin, qmax);
    const __m256i p01 = _mm256_packs_epi32(r0, r1), p23 = _mm256_packs_epi32(r2, r3);
    const __m256i b = kSigned ? _mm256_packs_epi16(p01, p23) : _mm256_packus_epi16(p01, p23);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + c0), _mm256_permutevar8x32_epi32(b, perm));
  }
  for (int64_t c = full; c < C; ++c) {
    int32_t s = 0;
    for (int64_t r = 0; r < nrows; ++r) s += static_cast<int32_t>(rows[r][c]);
    out[c] = pool_generic::avg_one<T>(s - q.zp * static_cast<int32_t>(nrows), df, q);
  }
}

// The portable kernels with this tier's avg_rows (8-bit codes).
template <typename T>
TypedPoolKernels<T> typed() {
  TypedPoolKernels<T> k = pool_generic::typed<T>();
  k.avg_rows = &avg_rows<T>;
  return k;
}

}  // namespace

const PoolKernelTable& make_pool_table() {
  static const PoolKernelTable t{.isa = Isa::kAvx2,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>(),
                                 .s32 = pool_generic::typed<int32_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
