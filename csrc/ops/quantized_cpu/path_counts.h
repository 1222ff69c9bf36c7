// Which path some 8-bit kernels took, counted per call since load; read by the private op
// _kernel_path_counts (ops/misc.cpp), so tests can tell a computed map from a looked-up one and
// a checked add/mul from an unchecked one or from the scaled rational form.
// Changes with: unary_lut.h, cat_kernel.cpp, binary_kernel.cpp, misc.cpp, tests/test_schemas.txt.
#pragma once
#include <atomic>
#include <cstdint>

namespace qplugin {
namespace ops {

enum PathCount : int {
  kUnaryLookup = 0,  // 8-bit unary map (or cat's requantized input) looked up (lut8 / _rows /
                     // lut8_nhwc_to_nchw)
  kUnaryComputed,    // + kernels::PwAffine8::Mode: computed by pw_affine8 in that form (5 forms)
  kBinaryChecked = kUnaryComputed + 5,  // add/mul fast path with the per-lane tie check
  kBinaryUnchecked,  // add/mul fast path without it, as judged exact for the qparams
  kBinaryRationalScaled,  // mul by the scaled rational form (binary.h; the vector kernels)
  kUnaryFixed,  // a computed map (counted above by form) whose plan is in fixed point
                // (PwAffine8::fixed); last, so the indices above stay
  kNumPathCounts
};

inline std::atomic<int64_t>* path_counts() {
  static std::atomic<int64_t> n[kNumPathCounts] = {};
  return n;
}

inline void count_path(int i) { path_counts()[i].fetch_add(1, std::memory_order_relaxed); }

}  // namespace ops
}  // namespace qplugin
