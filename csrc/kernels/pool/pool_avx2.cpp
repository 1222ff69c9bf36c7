// avx2 pooling/resampling kernels: the portable forms of pool_generic_impl.h compiled with this
// tier's flags (setup.py). Must equal the scalar kernels byte for byte.
// Changes with: pool_generic_impl.h, pool_dispatch.h.
#define QPLUGIN_ISA_NS avx2
#include <immintrin.h>

#include "kernels/pool/pool_generic_impl.h"

namespace qplugin::kernels::QPLUGIN_ISA_NS {
namespace {

// Channels-last average of one output pixel (avg_rows), 32 channels at a time: u16 sums over
// groups of up to 256 rows (vpmovzxbw + vpaddw, int8 codes flipped to unsigned, x + 128,
// corrected in the bias; exact, 256 * 255 < 2^16), each group's added into int32 (global averages
// of 784 rows took the portable kernel), then pool_generic::avg_one's rounding lane by lane:
// int32 s = sum + bias, float(s) / div (vdivps), round half to even (vcvtps2dq, default MXCSR
// mode), + zp, clamp, saturating packs that never saturate (values are clamped). With C >= 32 the
// last block is [C - 32, C), overlapping the one before (those channels get the same bytes
// twice); below 32 channels avg_one per channel. Same bytes as the scalar kernel.
inline __m256i avg_finish8(__m256i sum32, __m256 d, __m256i bias, __m256i zp, __m256i qmin,
                           __m256i qmax) {
  const __m256i s = _mm256_add_epi32(sum32, bias);
  const __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(_mm256_div_ps(_mm256_cvtepi32_ps(s), d)), zp);
  return _mm256_min_epi32(_mm256_max_epi32(r, qmin), qmax);
}

template <typename T>
void avg_rows(const T* const* rows, int64_t nrows, T* out, int64_t C, double div, const AvgQ& q) {
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
  const int64_t full = C >= 32 ? C : 0;  // channels the vector blocks cover
  for (int64_t c1 = 0; c1 < full; c1 += 32) {
    const int64_t c0 = c1 + 32 <= C ? c1 : C - 32;  // the last block overlaps
    __m256i t0 = _mm256_setzero_si256(), t1 = t0, t2 = t0, t3 = t0;  // int32 sums
    for (int64_t g = 0; g < nrows; g += 256) {
      const int64_t g1 = nrows - g < 256 ? nrows : g + 256;
      __m256i a0 = _mm256_setzero_si256(), a1 = _mm256_setzero_si256();  // u16 sums
      for (int64_t r = g; r < g1; ++r) {
        const __m256i v = _mm256_xor_si256(
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(rows[r] + c0)), flip);
        a0 = _mm256_add_epi16(a0, _mm256_cvtepu8_epi16(_mm256_castsi256_si128(v)));
        a1 = _mm256_add_epi16(a1, _mm256_cvtepu8_epi16(_mm256_extracti128_si256(v, 1)));
      }
      t0 = _mm256_add_epi32(t0, _mm256_cvtepu16_epi32(_mm256_castsi256_si128(a0)));
      t1 = _mm256_add_epi32(t1, _mm256_cvtepu16_epi32(_mm256_extracti128_si256(a0, 1)));
      t2 = _mm256_add_epi32(t2, _mm256_cvtepu16_epi32(_mm256_castsi256_si128(a1)));
      t3 = _mm256_add_epi32(t3, _mm256_cvtepu16_epi32(_mm256_extracti128_si256(a1, 1)));
    }
    const __m256i r0 = avg_finish8(t0, d, bias, zp, qmin, qmax);
    const __m256i r1 = avg_finish8(t1, d, bias, zp, qmin, qmax);
    const __m256i r2 = avg_finish8(t2, d, bias, zp, qmin, qmax);
    const __m256i r3 = avg_finish8(t3, d, bias, zp, qmin, qmax);
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

// Global average of 8-bit planes (NCHW adaptive_avg_pool to 1x1), 8 planes at a time. A plane's
// sum: VPSADBW of its 32-byte chunks; the last 1..31 bytes of a plane of 32 or more as the 32
// bytes ending at the plane's end with the bytes already summed masked off (no read outside the
// plane); planes under 32 bytes bytewise. int8 codes flipped to unsigned (x + 128, corrected in
// the bias). The 8 sums then take avg_one's rounding lane by lane: int32 s = sum + bias,
// float(s) / div (vdivps), round half to even (vcvtps2dq, default MXCSR mode), + zp, clamp, packs
// that never saturate. Same bytes as the scalar kernel. (The portable loop was 0.55 ms for
// 32 x 2048 planes of 7x7, as slow as fp32's 4x larger read: a scalar division per plane.)
template <typename T>
void plane_avg(const T* xt, T* out, int64_t P, int64_t HW, double div, const AvgQ& q) {
  constexpr bool kSigned = std::is_signed<T>::value;
  const uint8_t* x = reinterpret_cast<const uint8_t*>(xt);
  const uint8_t flipb = kSigned ? 0x80 : 0;
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(flipb));
  const __m256i zero = _mm256_setzero_si256();
  const int64_t bias = -(static_cast<int64_t>(q.zp) + (kSigned ? 128 : 0)) * HW;
  const float df = static_cast<float>(div);
  const int64_t full = HW / 32 * 32, rest = HW - full;
  alignas(32) uint8_t tail_mask[32];
  for (int j = 0; j < 32; ++j) tail_mask[j] = j >= 32 - rest ? 0xFF : 0;
  const __m256i tmask = _mm256_load_si256(reinterpret_cast<const __m256i*>(tail_mask));
  auto sum = [&](const uint8_t* a) -> int32_t {  // sum of the plane's codes - zp
    int64_t t = 0;
    if (HW < 32) {
      for (int64_t i = 0; i < HW; ++i) t += static_cast<uint8_t>(a[i] ^ flipb);
    } else {
      __m256i acc = zero;
      for (int64_t i = 0; i < full; i += 32) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
        acc = _mm256_add_epi64(acc, _mm256_sad_epu8(_mm256_xor_si256(v, flip), zero));
      }
      if (rest != 0) {
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + HW - 32));
        acc = _mm256_add_epi64(
            acc, _mm256_sad_epu8(_mm256_and_si256(_mm256_xor_si256(v, flip), tmask), zero));
      }
      const __m128i h =
          _mm_add_epi64(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
      t = _mm_cvtsi128_si64(h) + _mm_extract_epi64(h, 1);
    }
    return static_cast<int32_t>(t + bias);
  };
  const __m256 d = _mm256_set1_ps(df);
  const __m256i zp = _mm256_set1_epi32(q.zp);
  const __m256i qmin = _mm256_set1_epi32(q.qmin);
  const __m256i qmax = _mm256_set1_epi32(q.qmax);
  int64_t p = 0;
  alignas(32) int32_t s[8];
  for (; p + 8 <= P; p += 8) {
    for (int j = 0; j < 8; ++j) s[j] = sum(x + (p + j) * HW);
    const __m256 f = _mm256_div_ps(
        _mm256_cvtepi32_ps(_mm256_load_si256(reinterpret_cast<const __m256i*>(s))), d);
    __m256i r = _mm256_add_epi32(_mm256_cvtps_epi32(f), zp);
    r = _mm256_min_epi32(_mm256_max_epi32(r, qmin), qmax);
    const __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1));
    const __m128i b = kSigned ? _mm_packs_epi16(w, w) : _mm_packus_epi16(w, w);
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + p), b);
  }
  for (; p < P; ++p) out[p] = pool_generic::avg_one<T>(sum(x + p * HW), df, q);
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
  static const PoolKernelTable t{.isa = Isa::kAvx2,
                                 .u8 = typed<uint8_t>(),
                                 .s8 = typed<int8_t>(),
                                 .s32 = pool_generic::typed<int32_t>()};
  return t;
}

}  // namespace qplugin::kernels::QPLUGIN_ISA_NS
