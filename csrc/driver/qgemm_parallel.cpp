// Threaded driver of the int8 GEMM engine. See qgemm_parallel.h.
#include "driver/qgemm_parallel.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

namespace qplugin {
namespace driver {

namespace {

using kernels::gemm::QGemmEpilogue;
using kernels::gemm::QGemmKernels;

// Below this many multiply-adds a GEMM runs on the calling thread (thread wake-up costs more).
constexpr int64_t kMinParallelMacs = int64_t{1} << 18;

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Rows [m0, m1) x panels [p0, p1) of C (panel index * nr = column).
void run_block(const QGemmKernels& k, const uint8_t* a, int64_t lda, int64_t m0, int64_t m1,
               int64_t K, const int8_t* packed_b, int64_t N, int64_t p0, int64_t p1,
               const QGemmEpilogue& e, bool need_row_sums, uint8_t* c, int64_t ldc) {
  const int64_t rows = m1 - m0;
  if (rows <= 0 || p1 <= p0) return;
  const int64_t n0 = p0 * k.nr;
  const int64_t n1 = std::min<int64_t>(N, p1 * k.nr);
  QGemmEpilogue eb = e;
  std::vector<int32_t> rs;
  if (need_row_sums) {
    rs.resize(static_cast<size_t>(rows));
    k.row_sums(a + m0 * lda, lda, rows, K, rs.data());
    eb.row_sums = rs.data();
  } else {
    eb.row_sums = nullptr;
  }
  k.gemm(a + m0 * lda, lda, rows, K, packed_b, N, n0, n1, eb, c + m0 * ldc, ldc);
}

}  // namespace

void qgemm_parallel(const QGemmKernels& k, const uint8_t* a, int64_t lda, int64_t M, int64_t K,
                    const int8_t* packed_b, int64_t N, const QGemmEpilogue& e,
                    bool need_row_sums, uint8_t* c, int64_t ldc) {
  if (M <= 0 || N <= 0) return;
  const int64_t panels = div_up(N, k.nr);
  const int64_t tiles = div_up(M, k.mr);
  const int64_t threads = at::get_num_threads();
  const int64_t macs = M * N * std::max<int64_t>(K, 1);
  if (threads <= 1 || macs < kMinParallelMacs || at::in_parallel_region()) {
    run_block(k, a, lda, 0, M, K, packed_b, N, 0, panels, e, need_row_sums, c, ldc);
    return;
  }
  // Blocks: split N into nparts (whole panels), M into mparts (whole row tiles), with
  // nparts * mparts a multiple of the thread count when the sizes allow it.
  int64_t nparts, mparts;
  const bool a_larger = M > N;  // A is M x K, B is K x N
  if (!a_larger && panels >= threads) {
    nparts = threads;
    mparts = 1;
  } else if (tiles >= threads) {
    mparts = threads;
    nparts = 1;
  } else {
    nparts = std::min(panels, threads);
    mparts = std::min(tiles, div_up(threads, nparts));
  }
  const int64_t blocks = nparts * mparts;
  at::parallel_for(0, blocks, 1, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t ni = b / mparts, mi = b % mparts;
      // Balanced split: part i gets [i * total / parts, (i + 1) * total / parts).
      const int64_t p0 = ni * panels / nparts, p1 = (ni + 1) * panels / nparts;
      const int64_t t0 = mi * tiles / mparts, t1 = (mi + 1) * tiles / mparts;
      run_block(k, a, lda, t0 * k.mr, std::min(M, t1 * k.mr), K, packed_b, N, p0, p1, e,
                need_row_sums, c, ldc);
    }
  });
}

}  // namespace driver
}  // namespace qplugin
