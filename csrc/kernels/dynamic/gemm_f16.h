// The fp16-weight GEMM of linear_dynamic_fp16 and the fp16 RNN cells (torch-free): float32
// activations times float16 weights, products and sums in float32, float32 output.
//
// Packed weight (pack_f16_panels): the [N][K] fp16 weight in panels of 16 output columns,
// panel p holding W[16p + j][k] at wp[(p * K + k) * 16 + j]; the last panel is zero-padded.
// One layout for every ISA (an AVX-512 vector is one panel row, an AVX2 vector half of one).
//
// Numerics, identical bits on every ISA: for each output,
//   s = +0; for k = 0 .. K-1 (in order): s = fma(a[m][k], float(w[n][k]), s)   (one rounding)
//   c[m][n] = bias ? s + bias[n] : s;   with relu: c = (c < 0 ? 0 : c)  (NaN stays NaN)
// Each vector lane runs this chain for one output column; the scalar tier uses std::fma.
// Changes with: gemm_f16_<isa>.cpp, kernels/dispatch.cpp (the ISA choice),
// packed/linear_fp16_packed_params.cpp (packing, threading).
#pragma once
#include <cstdint>
#include <cstring>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace dynamic {

constexpr int64_t kF16Panel = 16;

struct F16GemmKernels {
  Isa isa;
  // c[m][n] for m < M, n < N (the header's numerics). a: [M][K] with row stride lda; wp: the
  // panels of columns [0, N) (panel stride K * 16); bias: N floats or null; c: row stride ldc.
  void (*gemm)(const float* a, int64_t lda, int64_t M, int64_t K, const uint16_t* wp, int64_t N,
               const float* bias, bool relu, float* c, int64_t ldc);
  // From this many rows on (0: never), the kernel prefers a call's rows in one gemm call (it then
  // converts each column block's weights once for all of them; LinearPackedParamsFp16::gemm_into).
  int64_t tall_rows = 0;
};

// The kernels of current_isa().
const F16GemmKernels& f16_gemm_kernels();

QPLUGIN_ISA_TABLES(F16GemmKernels, f16_gemm_table);

// Packs w: [N][K] fp16 bit patterns (row stride K) into panels (the header's layout); wp holds
// ceil(N / 16) * K * 16 values.
inline void pack_f16_panels(const uint16_t* w, int64_t N, int64_t K, uint16_t* wp) {
  const int64_t panels = (N + kF16Panel - 1) / kF16Panel;
  for (int64_t p = 0; p < panels; ++p) {
    uint16_t* dst = wp + p * K * kF16Panel;
    for (int64_t k = 0; k < K; ++k) {
      for (int64_t j = 0; j < kF16Panel; ++j) {
        const int64_t n = p * kF16Panel + j;
        dst[k * kF16Panel + j] = n < N ? w[n * K + k] : uint16_t{0};
      }
    }
  }
}

// IEEE binary16 -> binary32, exact; a NaN keeps its payload and comes out quiet (as VCVTPH2PS).
inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1Fu;
  uint32_t man = h & 0x3FFu;
  uint32_t bits;
  if (exp == 0x1Fu) {
    bits = sign | 0x7F800000u | (man << 13) | (man ? 0x400000u : 0u);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign;
  } else {  // subnormal: normalize
    uint32_t e = 113;
    while (!(man & 0x400u)) {
      man <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((man & 0x3FFu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
