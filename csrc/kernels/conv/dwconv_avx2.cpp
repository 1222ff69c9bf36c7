// Depthwise conv, AVX2: 8 channels per ymm, VPMOVZXBD + VPMADDWD (exact, dwconv.h) + VPADDD;
// 32 channels (4 accumulators) per step; 3x3 filters two taps per VPMADDWD. See dwconv.h.
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

// 3x3 (9 taps) form: two taps per VPMADDWD. Codes of taps t and t+1 are zero-extended to 16 bits
// (VPMOVZXBW, 16 channels) and interleaved (VPUNPCKL/HWD), weights paired the same way at the
// start of the call: lane (x_t, x_t1) . (wz_t, wz_t1) = x_t * wz_t + x_t1 * wz_t1 exactly
// (|.| <= 2 * 255 * 255 < 2^31; wz in [-255, 255] fits int16). Tap 9 is a zero weight. The
// unpacks leave channels in lane order {0-3, 8-11} / {4-7, 12-15}; VPERM2I128 restores 0-7 /
// 8-15 before the requantization, so the sums (exact int32) and the bytes equal PixelAvx2's.
constexpr int64_t kPairMaxC = 1024;  // paired weights live on the stack: 5 * C int32

struct PairedW {
  // w[(k * nb + cb) * 16 + j]: pair k, 16-channel block cb; j < 8 lanes {0-3, 8-11}, j >= 8
  // lanes {4-7, 12-15} of the block.
  int32_t w[5 * kPairMaxC];
};

inline int32_t pair_lane(const DwConvArgs& a, int64_t k, int64_t c) {
  const int32_t w0 = a.w[(2 * k) * a.C + c];
  const int32_t w1 = 2 * k + 1 < 9 ? a.w[(2 * k + 1) * a.C + c] : 0;
  return static_cast<int32_t>((static_cast<uint32_t>(w0) & 0xFFFFu) |
                              (static_cast<uint32_t>(w1) << 16));
}

void pair_weights(const DwConvArgs& a, PairedW* pw) {
  const int64_t nb = a.C / 16;
  for (int64_t k = 0; k < 5; ++k) {
    for (int64_t cb = 0; cb < nb; ++cb) {
      int32_t* d = pw->w + (k * nb + cb) * 16;
      for (int j = 0; j < 4; ++j) {
        d[j] = pair_lane(a, k, cb * 16 + j);
        d[4 + j] = pair_lane(a, k, cb * 16 + 8 + j);
        d[8 + j] = pair_lane(a, k, cb * 16 + 4 + j);
        d[12 + j] = pair_lane(a, k, cb * 16 + 12 + j);
      }
    }
  }
}

inline void pair_step(const uint8_t* x0, const uint8_t* x1, const int32_t* w, __m256i* lo,
                      __m256i* hi) {
  const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x0)));
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x1)));
  *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
  *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8))));
}

thread_local const PairedW* t_pw = nullptr;

struct PixelAvx2Pair {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    static_assert(KV == 9, "PixelAvx2Pair: 3x3 filters only");
    (void)ntaps_rt;
    const int64_t C = a.C, nb = C / 16;
    const int32_t* pw = t_pw->w;
    for (int64_t cb = 0; cb < nb; ++cb) {
      const int64_t c = cb * 16;
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) {
        pair_step(taps[2 * k] + c, taps[2 * k + 1] + c, pw + (k * nb + cb) * 16, &lo, &hi);
      }
      // Tap 8 with a zero partner weight (x read twice; the second product is 0).
      pair_step(taps[8] + c, taps[8] + c, pw + (4 * nb + cb) * 16, &lo, &hi);
      __m256i s0 = _mm256_permute2x128_si256(lo, hi, 0x20);  // channels c + 0..7
      __m256i s1 = _mm256_permute2x128_si256(lo, hi, 0x31);  // channels c + 8..15
      s0 = _mm256_add_epi32(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c)));
      s1 = _mm256_add_epi32(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 8)));
      store8(y + c, requant8(s0, a, c));
      store8(y + c + 8, requant8(s1, a, c + 8));
    }
    int64_t c = nb * 16;
    for (; c + 8 <= C; c += 8) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < 9; ++t, w += C) {
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(taps[t] + c), _mm256_loadu_si256(
                                                                          reinterpret_cast<const __m256i*>(w))));
      }
      store8(y + c, requant8(s0, a, c));
    }
    if (c < C) dw_pixel_scalar(taps, 9, a, c, y);
  }
};

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) {
  if (a.KD * a.KH * a.KW == 9 && a.C >= 16 && a.C <= kPairMaxC) {
    PairedW pw;
    pair_weights(a, &pw);
    t_pw = &pw;
    dw_rows_impl<PixelAvx2Pair, 9>(a, r0, r1);
    t_pw = nullptr;
    return;
  }
  dw_rows<PixelAvx2>(a, r0, r1);
}

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kAvx2, "dwconv_u8s8_c32__avx2", &rows};
  return t;
}

}  // namespace avx2
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
