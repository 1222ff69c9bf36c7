// Threaded walk over the pixels of N images in blocks, for the per-image kernels that convert
// between NCHW and NHWC over a pixel range [p0, p1) (kernels/dispatch.h KernelTable). Used by
// unary_lut.h and batch_norm_kernel.cpp.
#pragma once
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>

namespace qplugin {
namespace ops {

// fn(n, p0, p1) for each image n < N and each block [p0, p1) of kPix of its HW pixels (the last
// block shorter), in parallel; a chunk of blocks holds about grain_bytes (kPix * C a block).
template <int64_t kPix, class F>
void for_pixel_blocks(int64_t N, int64_t C, int64_t HW, int64_t grain_bytes, const F& fn) {
  const int64_t nblk = (HW + kPix - 1) / kPix;
  at::parallel_for(0, N * nblk, std::max<int64_t>(1, grain_bytes / (kPix * C)),
                   [&](int64_t b, int64_t e) {
                     for (int64_t j = b; j < e; ++j) {
                       const int64_t n = j / nblk, p0 = (j % nblk) * kPix;
                       fn(n, p0, std::min(HW, p0 + kPix));
                     }
                   });
}

}  // namespace ops
}  // namespace qplugin
