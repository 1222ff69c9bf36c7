// Shared tap walk of the depthwise kernels (dwconv.h), included by each dwconv_<isa>.cpp inside an
// anonymous namespace, so code built with different ISA flags never shares a definition.
// `Pixel` computes one output pixel from its tap pointers: Pixel::run<KV>(taps, ntaps, a, y).
// Changes with: dwconv.h, dwconv_<isa>.cpp.
#pragma once
#include <cmath>
#include <cstdint>
#include <xmmintrin.h>

#include "kernels/conv/dwconv.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace {

// The exact scalar requantization (qgemm_generic.h requant_one, without the GEMM offsets).
inline uint8_t dw_requant_one(int32_t acc, float bq, float m, float lo, float hi, int32_t zp) {
  float v = static_cast<float>(acc);
  v = v + bq;
  v = v * m;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  return static_cast<uint8_t>(static_cast<int32_t>(std::nearbyint(v)) + zp);
}

// The NDHWC input rows that output row r + 1 adds to a kernel's ring of rearranged rows (dh = 1:
// the rows past row r's last, sh of them), prefetched a share per channel block while row r
// computes. In a model they are the previous layer's output, mostly beyond L2: 3x3 stride 2 on
// 96 x 112 x 112 at batch 8 took 2.4 ms inside MobileNetV2 (forced AVX2) against 1.4 alone.
struct DwNextRowsPrefetch {
  const uint8_t* p = nullptr;
  int64_t lines = 0, per_block = 0;
  // Output row r (r = od * OH + oh, of the rows [r0, r1) of one call), id = od * sd - pd, kh_last
  // = (KH - 1) * dh, nb channel blocks.
  DwNextRowsPrefetch(const DwConvArgs& a, int64_t r, int64_t r1, int64_t oh, int64_t id,
                     int64_t kh_last, int64_t nb) {
    if (r + 1 >= r1 || oh + 1 >= a.OH || id < 0 || id >= a.ID || a.dh != 1 || nb <= 0) return;
    const int64_t last = oh * a.sh - a.ph + kh_last;
    const int64_t lo = last + 1 > 0 ? last + 1 : 0;
    const int64_t hi = last + a.sh < a.IH - 1 ? last + a.sh : a.IH - 1;
    if (lo > hi) return;
    p = a.x + (id * a.IH + lo) * a.IW * a.C;
    lines = ((hi - lo + 1) * a.IW * a.C + 63) / 64;
    per_block = (lines + nb - 1) / nb;
  }
  // One channel block's share.
  void step() {
    for (int64_t i = 0; i < per_block && lines > 0; ++i, --lines, p += 64)
      _mm_prefetch(reinterpret_cast<const char*>(p), _MM_HINT_T0);
  }
};

// Whether a kernel may leave the output clamp to saturating packs (kSat): [lo, hi] is the whole
// uint8 range and |v| stays far inside int32 for every channel, with |acc| <= |acc_init| +
// taps * max|x * w| (max_prod: 255 * 128 for u8 x s8 bytes, 255 * 255 for zero-point-shifted
// weights), then + |bias_q|, * |mult|; rounding then saturating equals clamping then rounding.
inline bool dw_pack_clamps(const DwConvArgs& a, int64_t taps, double max_prod) {
  if (a.lo != static_cast<float>(-a.out_zp) || a.hi != static_cast<float>(255 - a.out_zp))
    return false;
  for (int64_t c = 0; c < a.C; ++c) {
    const double v = (std::fabs(static_cast<double>(a.acc_init[c])) + taps * max_prod +
                      std::fabs(static_cast<double>(a.bias_q[c]))) *
                     std::fabs(static_cast<double>(a.mult[c]));
    if (!(v < 1e9)) return false;  // far inside int32 (2.1e9) after rounding and + out_zp
  }
  return true;
}

// Scalar tail: channels [c0, C) of one pixel.
inline void dw_pixel_scalar(const uint8_t* const* taps, int64_t ntaps, const DwConvArgs& a,
                            int64_t c0, uint8_t* y) {
  const int64_t C = a.C;
  for (int64_t c = c0; c < C; ++c) {
    int32_t acc = a.acc_init[c];
    for (int64_t t = 0; t < ntaps; ++t) acc += static_cast<int32_t>(taps[t][c]) * a.w[t * C + c];
    y[c] = dw_requant_one(acc, a.bias_q[c], a.mult[c], a.lo, a.hi, a.out_zp);
  }
}

// Output rows [r0, r1) (r = od * OH + oh). Interior pixels (every tap inside the input) take tap
// pointers from precomputed offsets; border pixels point padded taps at zrow.
template <class Pixel, int KV>
void dw_rows_impl(const DwConvArgs& a, int64_t r0, int64_t r1) {
  const int64_t ntaps = KV > 0 ? KV : a.KD * a.KH * a.KW;
  const int64_t C = a.C;
  // Fixed arrays, not std::vector: no std template is instantiated under ISA flags (the ODR
  // hazard of aten/src/ATen/native/quantized/cpu/kernels/README.md). kMaxDwTaps bounds ntaps.
  int64_t off[kMaxDwTaps];
  const uint8_t* taps[kMaxDwTaps];
  {
    int64_t t = 0;
    for (int64_t kd = 0; kd < a.KD; ++kd)
      for (int64_t kh = 0; kh < a.KH; ++kh)
        for (int64_t kw = 0; kw < a.KW; ++kw)
          off[t++] = ((kd * a.dd * a.IH + kh * a.dh) * a.IW + kw * a.dw) * C;
  }
  const int64_t span_d = (a.KD - 1) * a.dd, span_h = (a.KH - 1) * a.dh, span_w = (a.KW - 1) * a.dw;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t od = r / a.OH, oh = r % a.OH;
    const int64_t id0 = od * a.sd - a.pd, ih0 = oh * a.sh - a.ph;
    const bool rows_in = id0 >= 0 && id0 + span_d < a.ID && ih0 >= 0 && ih0 + span_h < a.IH;
    uint8_t* yrow = a.y + r * a.OW * C;
    for (int64_t ow = 0; ow < a.OW; ++ow) {
      const int64_t iw0 = ow * a.sw - a.pw;
      if (rows_in && iw0 >= 0 && iw0 + span_w < a.IW) {
        const uint8_t* p0 = a.x + ((id0 * a.IH + ih0) * a.IW + iw0) * C;
        for (int64_t t = 0; t < ntaps; ++t) taps[t] = p0 + off[t];
      } else {
        int64_t t = 0;
        for (int64_t kd = 0; kd < a.KD; ++kd) {
          const int64_t id = id0 + kd * a.dd;
          for (int64_t kh = 0; kh < a.KH; ++kh) {
            const int64_t ih = ih0 + kh * a.dh;
            const bool in_dh = id >= 0 && id < a.ID && ih >= 0 && ih < a.IH;
            for (int64_t kw = 0; kw < a.KW; ++kw) {
              const int64_t iw = iw0 + kw * a.dw;
              taps[t++] = in_dh && iw >= 0 && iw < a.IW
                              ? a.x + ((id * a.IH + ih) * a.IW + iw) * C
                              : a.zrow;
            }
          }
        }
      }
      Pixel::template run<KV>(taps, ntaps, a, yrow + ow * C);
    }
  }
}

template <class Pixel>
void dw_rows(const DwConvArgs& a, int64_t r0, int64_t r1) {
  const int64_t ntaps = a.KD * a.KH * a.KW;
  if (ntaps == 9) return dw_rows_impl<Pixel, 9>(a, r0, r1);
  if (ntaps == 25) return dw_rows_impl<Pixel, 25>(a, r0, r1);
  return dw_rows_impl<Pixel, 0>(a, r0, r1);
}

}  // namespace
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
