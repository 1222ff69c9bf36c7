// Kernel table of the layer/group/instance-norm statistics and layer-norm rows. Torch-free: raw
// pointers, sizes and parameters only. The normalize step of group/instance norm reuses the
// per-channel affine kernels of kernels/dispatch.h (TypedKernels::affine_plane / affine_rows).
// Changes with: norm_dispatch.cpp (table choice), norm_generic_impl.h (reference forms),
// norm_{scalar,avx2,avx512vnni}.cpp (the kernels), ops/quantized_cpu/normalization_kernel.cpp.
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {

// Layer-norm row: y[j] = out_zp + nearbyint(clamp(fma((x[j] - mean) * rstd, g[j], b[j]), lo, hi)),
// every step rounded to float in that order (sub, mul, fma), clamped with (v > lo ? v : lo) and
// (v < hi ? v : hi) (MAXPS/MINPS: NaN -> lo), round half to even. mean is the row mean of the raw
// codes, rstd = in_scale / sqrt(var + eps), g = gamma / out_scale, b = beta / out_scale; lo/hi are
// the output range relative to out_zp (qmin - out_zp, qmax - out_zp), so clamping before rounding
// equals clamping after.
struct RowNormParams {
  float mean;
  float rstd;
  const float* g;  // [n]
  const float* b;  // [n]
  int32_t out_zp;
  float lo;
  float hi;
};

template <typename T>
struct TypedNormKernels {
  // Exact sums over n contiguous codes (raw values, signed for int8): *s1 += sum x,
  // *s2 += sum x*x. Any n (the kernels widen before their 32-bit lanes could overflow).
  void (*row_stats)(const T* x, int64_t n, int64_t* s1, int64_t* s2);
  // Exact per-column sums over `rows` rows of C contiguous codes (channels-last pixels):
  // s1[c] += sum_r x[r][c], s2[c] += sum_r x[r][c]^2, for c in [0, C).
  void (*col_stats)(const T* x, int64_t rows, int64_t C, int64_t* s1, int64_t* s2);
  // One layer-norm row of n codes (see RowNormParams).
  void (*norm_row)(const T* x, T* y, int64_t n, const RowNormParams& p);
};

struct NormKernelTable {
  Isa isa;
  TypedNormKernels<uint8_t> u8;
  TypedNormKernels<int8_t> s8;
};

// The table of kernels::current_isa() (QPLUGIN_CPU_ISA / _set_cpu_isa apply as for table()).
const NormKernelTable& norm_table();

namespace scalar { const NormKernelTable& make_norm_table(); }
namespace avx2 { const NormKernelTable& make_norm_table(); }
namespace avx512vnni { const NormKernelTable& make_norm_table(); }

}  // namespace kernels
}  // namespace qplugin
