// Depthwise conv, AVX2: 8 channels per ymm, VPMOVZXBD + VPMADDWD (exact, dwconv.h) + VPADDD;
// 32 channels (4 accumulators) per step. See dwconv.h.
#include <immintrin.h>

#include "kernels/conv/dwconv_impl.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace avx2 {
namespace {

inline __m256i requant8(__m256i acc, const DwConvArgs& a, int64_t c) {
  __m256 f = _mm256_cvtepi32_ps(acc);
  f = _mm256_add_ps(f, _mm256_loadu_ps(a.bias_q + c));
  f = _mm256_mul_ps(f, _mm256_loadu_ps(a.mult + c));
  f = _mm256_max_ps(f, _mm256_set1_ps(a.lo));
  f = _mm256_min_ps(f, _mm256_set1_ps(a.hi));
  return _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(a.out_zp));
}

// 8 int32 in [0, 255] -> 8 bytes.
inline void store8(uint8_t* y, __m256i q) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  const __m128i w = _mm_packus_epi32(lo, hi);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y), _mm_packus_epi16(w, w));
}

inline __m256i ld8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

struct PixelAvx2 {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    const int64_t ntaps = KV > 0 ? KV : ntaps_rt;
    const int64_t C = a.C;
    int64_t c = 0;
    for (; c + 32 <= C; c += 32) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 8));
      __m256i s2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 16));
      __m256i s3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 24));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const uint8_t* x = taps[t] + c;
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(x), _mm256_loadu_si256(
                                                                  reinterpret_cast<const __m256i*>(w))));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(ld8(x + 8), _mm256_loadu_si256(
                                                                      reinterpret_cast<const __m256i*>(w + 8))));
        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(ld8(x + 16), _mm256_loadu_si256(
                                                                       reinterpret_cast<const __m256i*>(w + 16))));
        s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(ld8(x + 24), _mm256_loadu_si256(
                                                                       reinterpret_cast<const __m256i*>(w + 24))));
      }
      store8(y + c, requant8(s0, a, c));
      store8(y + c + 8, requant8(s1, a, c + 8));
      store8(y + c + 16, requant8(s2, a, c + 16));
      store8(y + c + 24, requant8(s3, a, c + 24));
    }
    for (; c + 8 <= C; c += 8) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(taps[t] + c), _mm256_loadu_si256(
                                                                          reinterpret_cast<const __m256i*>(w))));
      }
      store8(y + c, requant8(s0, a, c));
    }
    if (c < C) dw_pixel_scalar(taps, ntaps, a, c, y);
  }
};

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) { dw_rows<PixelAvx2>(a, r0, r1); }

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kAvx2, "dwconv_u8s8_c32__avx2", &rows};
  return t;
}

}  // namespace avx2
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
