// Depthwise convolution kernels (torch-free): NDHWC u8 activations, one filter per channel
// (a channel multiplier m > 1 is handled by the caller, which repeats every input channel m times
// so that output channel c always reads input channel c). Vectorized over channels.
// Changes with: kernels/dispatch.cpp (table), dwconv_{scalar,avx2,avx512vnni}.cpp (kernels),
// dwconv_impl.h (shared tap walk), driver/conv_gemm.cpp (the caller).
//
// Math (every ISA, byte-identical; the same requantization as the GEMM epilogue, qgemm.h):
//   wz[t][c] = W[c][t] - w_zp[c]                         int32, in [-255, 255], packed at prepack
//   acc[c]   = acc_init[c] + sum_t X[tap t][c] * wz[t][c]   exact int32
//     acc_init[c] = -x_zp * sum_t wz[t][c]; a tap outside the padded input reads x_zp (zrow), so
//     acc[c] = sum_t (X - x_zp) * (W - w_zp) exactly. |acc| <= 255 * 255 * taps < 2^31.
//   v = (float(acc) + bias_q[c]) * mult[c];  y = out_zp + nearbyint(min(max(v, lo), hi))
// The u8 X is zero-extended to 32-bit lanes whose upper half is 0, so VPMADDWD / VPDPWSSD with
// wz (sign-extended int32) give exactly X * wz per lane (the upper halves multiply to 0).
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace conv {

// Most taps (KD*KH*KW) the depthwise kernels take; larger filters go through the GEMM path.
constexpr int64_t kMaxDwTaps = 512;

struct DwConvArgs {
  // Input image (one batch element) NDHWC with channel count C (after channel expansion).
  const uint8_t* x;
  int64_t ID, IH, IW, C;
  int64_t OD, OH, OW;
  int64_t KD, KH, KW;
  int64_t sd, sh, sw;   // stride
  int64_t pd, ph, pw;   // padding
  int64_t dd, dh, dw;   // dilation
  const uint8_t* zrow;  // [C] bytes equal to x_zp (read for taps in the padding)
  const int32_t* w;     // [KD*KH*KW][C] weight minus zero point
  const int32_t* acc_init;  // [C]
  const float* bias_q;  // [C]
  const float* mult;    // [C]
  float lo, hi;         // relative to out_zp (ReLU: lo = max(0, qmin - out_zp))
  int32_t out_zp;
  uint8_t* y;           // output image NDHWC [OD][OH][OW][C]
  // Optional byte-lane form (every weight zero point 0, so wz fits int8), used by the AVX512
  // kernel with VPDPBUSD: 64-channel blocks cb, w8[((cb * taps + t) * 4 + j) * 64 + 4 * i + j] =
  // wz[t][cb * 64 + 4 * i + j] (other bytes 0), so accumulator j, lane i holds channel
  // cb * 64 + 4 * i + j. The *_p arrays are acc_init / bias_q / mult in that order, padded to
  // whole blocks: index cb * 64 + 16 * j + i. Null when not available.
  const int8_t* w8;
  const int32_t* acc_init_p;
  const float* bias_q_p;
  const float* mult_p;
  // Optional 1x3x3 form (every weight zero point 0, KD = 1, KH = KW = 3), used by the AVX512
  // kernel for dilation 1: 16-channel blocks cb, kernel row kh:
  // w3[(cb * 3 + kh) * 64 + 4 * i + kw] = W[cb * 16 + i][kh][kw], byte 3 of each dword 0. Input
  // rows are rearranged so that dword i holds X[iw + 0..2][c] (one VPDPBUSD per kernel row, exact:
  // four u8 x s8 products summed into s32). Null when not available.
  const int8_t* w3;
  // Optional 1x5x5 form (every weight zero point 0, KD = 1, KH = KW = 5), used by the AVX512
  // kernel for dilation 1 and stride_w 1 or 2: per 16-channel block cb and kernel row kh two
  // vectors, w5[((cb * 5 + kh) * 2 + 0) * 64 + 4 * i + kw] = W[cb * 16 + i][kh][kw] for kw < 4
  // and w5[((cb * 5 + kh) * 2 + 1) * 64 + 4 * i] = W[cb * 16 + i][kh][4], every other byte 0.
  // Null when not available.
  const int8_t* w5;
};

struct DwConvKernels {
  Isa isa;
  const char* name;  // e.g. "dwconv_u8s8_c64__avx512vnni"
  // Output rows r in [r0, r1), r = od * OH + oh, every ow and every channel.
  void (*rows)(const DwConvArgs& a, int64_t r0, int64_t r1);
  // The same for an NCHW (NCDHW) image x (C planes of ID*IH*IW bytes, channel multiplier 1),
  // only with the w3 form and dilation 1 unless nchw_any_w_zp; null when the ISA has none (the
  // caller then converts the input to NDHWC first).
  void (*rows_nchw)(const DwConvArgs& a, int64_t r0, int64_t r1) = nullptr;
  // rows_nchw also takes weight zero points other than 0 and any dilation_h (1x3x3 filters,
  // dilation_w 1, multiplier 1; the avx2 pair rows); otherwise it needs the w3 form.
  bool nchw_any_w_zp = false;
};

// The kernels of `isa` (never above the CPU's).
const DwConvKernels& dwconv_kernels_for(Isa isa);

QPLUGIN_ISA_TABLES(DwConvKernels, dwconv_table);

}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
