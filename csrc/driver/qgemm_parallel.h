// Threaded driver of the int8 GEMM engine (kernels/gemm/qgemm.h): splits C into M x N blocks
// for at::parallel_for. Used by linear (packed/linear_packed_params.cpp) and conv.
// Changes with: qgemm_parallel.cpp, kernels/gemm/qgemm.h.
#pragma once
#include <cstdint>

#include "kernels/gemm/qgemm.h"

namespace qplugin {
namespace driver {

// C[m][n] = requant(sum_k A[m][k] * B[k][n]) for m < M, n < N (qgemm.h has the math).
// A: M x K u8, row stride lda; packed_b: packed by k.pack_b; C: M x N u8, row stride ldc.
// e.row_sums is ignored: pass need_row_sums = true when any weight zero point is non-zero and
// the driver computes the row sums of the rows each block needs.
// Threads: at::parallel_for over blocks of whole panels of N (preferred: every thread then reads
// only its share of the weights, also at M = 1) and, when there are too few panels or A is the
// larger operand, blocks of rows of M.
void qgemm_parallel(const kernels::gemm::QGemmKernels& k, const uint8_t* a, int64_t lda,
                    int64_t M, int64_t K, const int8_t* packed_b, int64_t N,
                    const kernels::gemm::QGemmEpilogue& e, bool need_row_sums, uint8_t* c,
                    int64_t ldc);

}  // namespace driver
}  // namespace qplugin
