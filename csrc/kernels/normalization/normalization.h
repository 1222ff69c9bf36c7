// Kernel table of the layer/group/instance-norm statistics and layer-norm rows. Torch-free: raw
// pointers, sizes and parameters only. The normalize step of group/instance norm has its own
// per-channel affine kernels (below): batch norm's (kernels/dispatch.h TypedKernels::affine_*)
// subtract the input zero point in int32 and clamp NaN to lo, these fold both zero points into
// beta and clamp NaN to hi, so the two give different bytes on non-finite parameters.
// Changes with: normalization_dispatch.cpp (table choice), normalization_generic_impl.h (reference forms),
// normalization_{scalar,avx2,avx512vnni}.cpp (the kernels), ops/quantized_cpu/normalization_kernel.cpp.
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {

// All normalize kernels map a code x (as float, exact) through fused multiply-adds, clamp with
// (v < hi ? v : hi) then (v > lo ? v : lo) to the dtype's range [lo, hi] = [qmin, qmax] (NaN and
// +overflow -> hi, -overflow -> lo), and round half to even; the zero points are folded into the
// bias, and lo/hi are integers, so clamping before rounding equals clamping after. (The vector
// kernels clamp the top in float and let saturating packs clamp the bottom: the same bytes.)
// Every step is one float rounding in the order written, so every ISA gives the scalar bytes.

// Layer-norm row:  v = fma(x, rstd, shift);  y[j] = nearbyint(clamp(fma(v, g[j], b[j])))
// with rstd = s_in / sqrt(var + eps), shift = -mean * rstd (mean of the raw codes),
// g = gamma / s_out, b = beta / s_out + zp_out.
struct RowNormParams {
  float rstd;
  float shift;
  const float* g;  // [n]
  const float* b;  // [n]
  float lo;
  float hi;
};

// Per-channel affine: y = nearbyint(clamp(fma(alpha[c], x, beta[c]))), beta including both
// zero points (group/instance norm once the statistics are known).
struct ChannelAffineParams {
  const float* alpha;  // [C]
  const float* beta;   // [C]
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
  // x, y: [rows][C] (channels last), channel c uses alpha[c], beta[c].
  void (*affine_rows)(const T* x, T* y, int64_t rows, int64_t C, const ChannelAffineParams& p);
  // n codes of one channel c (an NCHW plane): alpha[c], beta[c].
  void (*affine_plane)(const T* x, T* y, int64_t n, int64_t c, const ChannelAffineParams& p);
};

// Raw 8-bit codes x, y: [rows][C] (channels last); y[r][c] = tables[c][x[r][c]], tables [C][256].
// (The ops build each table with affine_plane over the 256 codes, so it equals the direct path.)
void lut_rows_scalar(const uint8_t* x, uint8_t* y, int64_t rows, int64_t C, const uint8_t* tables);

struct NormKernelTable {
  Isa isa;
  // Policy: whether 256-entry per-channel tables beat the arithmetic kernels on large inputs.
  // plane_tables: NCHW planes through kernels::table().lut8 (VBMI's VPERMI2B, or the scalar path
  // where each element would otherwise cost two libm fma calls); row_tables: channels-last rows
  // through lut_rows_scalar (scalar only: gathers never beat AVX2/AVX-512 arithmetic).
  bool plane_tables;
  bool row_tables;
  TypedNormKernels<uint8_t> u8;
  TypedNormKernels<int8_t> s8;
};

// The table of kernels::current_isa() (QPLUGIN_CPU_ISA / _set_cpu_isa apply as for table()).
const NormKernelTable& norm_table();

QPLUGIN_ISA_TABLES(NormKernelTable, make_norm_table);

}  // namespace kernels
}  // namespace qplugin
