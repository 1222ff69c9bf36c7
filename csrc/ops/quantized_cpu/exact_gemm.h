// Exact integer GEMM with 64-bit accumulators, for the ops whose epilogue is not the u8
// requantization of kernels/gemm/qgemm.h (linear_leaky_relu / linear_tanh: an activation on the
// real-valued result; conv2d_add: a second quantized operand; matmul: u8 x u8 or s8 x s8, no
// packed weight). Integer math, so every QPLUGIN_CPU_ISA gives the same bytes; the kernels
// (kernels/gemm/exact_gemm.h, auto-vectorized per ISA) are simpler and slower than qgemm.h's.
// Changes with: exact_gemm.cpp, kernels/gemm/exact_gemm*; users: linear_kernel.cpp,
// conv_kernel.cpp (conv2d_add), matmul_kernel.cpp.
#pragma once
#include <cstdint>

namespace qplugin {
namespace ops {

// acc[m * ldc + n] = sum_k (A[m * lda + k] - za) * (B[n * ldb + k] - zb[n])   exact, int64
// A: M x K (TA = uint8_t or int8_t), B: N x K, i.e. the "weight" layout [out][in] (TB = uint8_t
// or int8_t), zb: [N] zero points of B's rows. Sums run in int32 over k-blocks that cannot
// overflow (|product| <= 255 * 255, 16384 of them < 2^31) and are added up in int64, so any K is
// exact. Threads: at::parallel_for over 16 x 64 output tiles.
template <class TA, class TB>
void exact_gemm_s64(const TA* a, int64_t lda, int64_t M, int64_t K, int32_t za, const TB* b,
                    int64_t ldb, int64_t N, const int32_t* zb, int64_t* acc, int64_t ldc);

}  // namespace ops
}  // namespace qplugin
