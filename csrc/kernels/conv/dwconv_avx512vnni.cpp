// Depthwise conv, AVX512-VNNI: 16 channels per zmm, VPMOVZXBD + VPDPWSSD (exact, dwconv.h);
// 64 channels (4 accumulators) per step, masked tail. See dwconv.h.
#include <immintrin.h>

#include "kernels/conv/dwconv_impl.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace avx512vnni {
namespace {

inline __m512i requant16(__m512i acc, const DwConvArgs& a, int64_t c, __mmask16 m) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, a.bias_q + c));
  f = _mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, a.mult + c));
  f = _mm512_max_ps(f, _mm512_set1_ps(a.lo));
  f = _mm512_min_ps(f, _mm512_set1_ps(a.hi));
  return _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(a.out_zp));
}

inline __m512i ld16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m512i requant16p(__m512i acc, const DwConvArgs& a, int64_t idx) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  f = _mm512_add_ps(f, _mm512_loadu_ps(a.bias_q_p + idx));
  f = _mm512_mul_ps(f, _mm512_loadu_ps(a.mult_p + idx));
  f = _mm512_max_ps(f, _mm512_set1_ps(a.lo));
  f = _mm512_min_ps(f, _mm512_set1_ps(a.hi));
  return _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(a.out_zp));
}

struct PixelAvx512 {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    const int64_t ntaps = KV > 0 ? KV : ntaps_rt;
    const int64_t C = a.C;
    int64_t c = 0;
    if (a.w8 != nullptr) {
      // Byte lanes: one 64-byte load of X per tap feeds four VPDPBUSD whose weights have a
      // single non-zero byte per dword, so each dword gets exactly one product (exact).
      // A last block of at most 32 channels goes to the 16-channel VPDPWSSD loop below instead
      // (same exact sums, a quarter of the VPDPBUSD work for 16 channels; e.g. C = 144).
      for (int64_t cb = 0; C - c > 32; c += 64, ++cb) {
        const int64_t n = C - c < 64 ? C - c : 64;
        const __mmask64 m = n == 64 ? ~__mmask64{0} : ((__mmask64{1} << n) - 1);
        __m512i s0 = _mm512_loadu_si512(a.acc_init_p + c);
        __m512i s1 = _mm512_loadu_si512(a.acc_init_p + c + 16);
        __m512i s2 = _mm512_loadu_si512(a.acc_init_p + c + 32);
        __m512i s3 = _mm512_loadu_si512(a.acc_init_p + c + 48);
        const int8_t* w = a.w8 + cb * ntaps * 256;
        for (int64_t t = 0; t < ntaps; ++t, w += 256) {
          const __m512i xv = _mm512_maskz_loadu_epi8(m, taps[t] + c);
          s0 = _mm512_dpbusd_epi32(s0, xv, _mm512_loadu_si512(w));
          s1 = _mm512_dpbusd_epi32(s1, xv, _mm512_loadu_si512(w + 64));
          s2 = _mm512_dpbusd_epi32(s2, xv, _mm512_loadu_si512(w + 128));
          s3 = _mm512_dpbusd_epi32(s3, xv, _mm512_loadu_si512(w + 192));
        }
        // q_j in [0, 255]: dword i of the output = bytes (4i, 4i+1, 4i+2, 4i+3) in order.
        __m512i q = requant16p(s0, a, c);
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s1, a, c + 16), 8));
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s2, a, c + 32), 16));
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s3, a, c + 48), 24));
        _mm512_mask_storeu_epi8(y + c, m, q);
      }
    }
    for (; c + 64 <= C; c += 64) {
      __m512i s0 = _mm512_loadu_si512(a.acc_init + c);
      __m512i s1 = _mm512_loadu_si512(a.acc_init + c + 16);
      __m512i s2 = _mm512_loadu_si512(a.acc_init + c + 32);
      __m512i s3 = _mm512_loadu_si512(a.acc_init + c + 48);
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const uint8_t* x = taps[t] + c;
        s0 = _mm512_dpwssd_epi32(s0, ld16(x), _mm512_loadu_si512(w));
        s1 = _mm512_dpwssd_epi32(s1, ld16(x + 16), _mm512_loadu_si512(w + 16));
        s2 = _mm512_dpwssd_epi32(s2, ld16(x + 32), _mm512_loadu_si512(w + 32));
        s3 = _mm512_dpwssd_epi32(s3, ld16(x + 48), _mm512_loadu_si512(w + 48));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c),
                       _mm512_cvtepi32_epi8(requant16(s0, a, c, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 16),
                       _mm512_cvtepi32_epi8(requant16(s1, a, c + 16, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 32),
                       _mm512_cvtepi32_epi8(requant16(s2, a, c + 32, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 48),
                       _mm512_cvtepi32_epi8(requant16(s3, a, c + 48, 0xFFFF)));
    }
    for (; c < C; c += 16) {
      const int64_t n = C - c < 16 ? C - c : 16;
      const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
      __m512i s0 = _mm512_maskz_loadu_epi32(m, a.acc_init + c);
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const __m512i xv = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, taps[t] + c));
        s0 = _mm512_dpwssd_epi32(s0, xv, _mm512_maskz_loadu_epi32(m, w));
      }
      _mm_mask_storeu_epi8(y + c, m, _mm512_cvtepi32_epi8(requant16(s0, a, c, m)));
    }
  }
};

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) { dw_rows<PixelAvx512>(a, r0, r1); }

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kAvx512Vnni, "dwconv_u8s8_c64__avx512vnni", &rows};
  return t;
}

}  // namespace avx512vnni
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
