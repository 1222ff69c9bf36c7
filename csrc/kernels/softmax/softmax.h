// Quantized softmax over one dimension of 8-bit codes (torch-free): the reference in double and
// the vector kernels' float fast path, which decides every lane it can prove equal to the
// reference and hands the rest to the reference.
// Changes with: softmax_generic_impl.h (the reference forms), softmax_{scalar,avx2,avx512vnni}.cpp,
// softmax_plan.cpp, ops/quantized_cpu/activation_kernel.cpp (softmax_core).
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace softmax {

// The reference, per row of D codes q_t (t = 0..D-1) with m = max q_t and k_t = m - q_t in
// [0, 255] (8-bit codes):
//   S   = etab[k_0] + etab[k_1] + ... + etab[k_{D-1}]      (double, in this order)
//   y_t = clamp(nearbyint((etab[k_t] / S) / os) + zp, qmin, qmax)   (double; half to even)
// with etab[k] = exp(-k * s) (s the input scale). Every ISA gives these bytes.
//
// The vector fast path computes, in float, e = etab[k] as a product of float factors (below), the
// sum S' of the e (as doubles, in the kernel's order) and r = e * float(1 / (S' * os)); it clamps r
// to [0, rcap] (rcap = qmax - zp + 1: every r above it gives qmax either way) and rounds. r is
// within thr's margin of the reference's quotient (softmax_plan.cpp), so a lane whose
// |r - nearbyint(r)| <= thr rounds as the reference does; the others are recomputed by the
// reference (with the reference's S).
struct Params {
  const double* etab;  // [256] exp(-k * s)
  double os;           // output scale (> 0)
  int32_t zp, qmin, qmax;
  // fast false: the vector kernels run the reference for every lane (qparams outside the fast
  // path's bounds: a huge output range, or 1 / os beyond float's comfortable range).
  bool fast;
  float rcap;
  float thr;
  // Float factors of etab[k] (each float(etab[j]) for the j named), looked up by in-register
  // permutes instead of gathers:
  //   avx512vnni: e = e_hi[k >> 5] * e_lo[k & 31]          e_hi[h] = etab[32h], e_lo[l] = etab[l]
  //   avx2:       e = (e_a[k >> 6] * e_b[(k >> 3) & 7]) * e_c[k & 7]
  //               e_a[a] = etab[64a], e_b[b] = etab[8b], e_c[c] = etab[c]
  alignas(64) float e_hi[16];  // 8 used
  alignas(64) float e_lo[32];
  alignas(32) float e_a[8];  // 4 used
  alignas(32) float e_b[8];
  alignas(32) float e_c[8];
};

// Params for rows of D codes (the bound depends on D through the summation order); etab must
// outlive the calls.
Params plan(const double* etab, double os, int64_t zp, int64_t qmin, int64_t qmax, int64_t D);

template <typename T>
struct TypedKernels {
  // Softmax along t of x[t * inner + j] for t in [0, D), for the columns j in [j0, j1) of one
  // [D][inner] slice (dim not innermost); y has the same layout.
  void (*cols)(const T* x, T* y, int64_t D, int64_t inner, int64_t j0, int64_t j1,
               const Params& p);
  // Softmax of `rows` contiguous rows of D codes (dim innermost).
  void (*rows)(const T* x, T* y, int64_t D, int64_t rows, const Params& p);
};

struct Table {
  TypedKernels<uint8_t> u8;
  TypedKernels<int8_t> s8;
};

// The table of kernels::current_isa().
const Table& table();

QPLUGIN_ISA_TABLES(Table, make_table);

}  // namespace softmax
}  // namespace kernels
}  // namespace qplugin
