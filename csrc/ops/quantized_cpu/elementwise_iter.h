// Broadcasting iteration of binary elementwise ops without materializing broadcast inputs:
// dims are ordered by the (dense) output's memory order, size-1 dims dropped and adjacent dims
// merged where all three tensors allow it, so the innermost run is as long as possible; inputs
// step 1 (dense) or 0 (broadcast) along it. Used by binary_kernel.cpp.
#pragma once
#include <ATen/ATen.h>

#include <algorithm>
#include <array>
#include <numeric>
#include <vector>

namespace qplugin {
namespace ops {

class BinaryIter {
 public:
  static constexpr int kMaxDims = 16;

  // y: the output (non-overlapping and dense: some permutation of its dims is contiguous);
  // a, b: views expanded to y's shape (stride 0 on broadcast dims). Strides in elements.
  BinaryIter(const at::Tensor& y, const at::Tensor& a, const at::Tensor& b) {
    const int64_t nd = y.dim();
    TORCH_CHECK_NOT_IMPLEMENTED(nd <= kMaxDims, "qplugin: elementwise ops support tensors of up ",
                                "to ", kMaxDims, " dimensions, got ", nd);
    std::vector<int64_t> perm;
    for (int64_t d = 0; d < nd; ++d) {
      if (y.size(d) != 1) perm.push_back(d);
    }
    // Outermost first: decreasing output stride (dense output: strides are distinct).
    std::stable_sort(perm.begin(), perm.end(),
                     [&](int64_t p, int64_t q) { return y.stride(p) > y.stride(q); });
    ndim_ = 0;
    for (int64_t d : perm) {
      const int64_t sz = y.size(d), sy = y.stride(d), sa = a.stride(d), sb = b.stride(d);
      if (ndim_ > 0) {
        const int k = ndim_ - 1;
        // Merge into the previous (outer) dim when it steps exactly over this one.
        if (sy_[k] == sy * sz && sa_[k] == sa * sz && sb_[k] == sb * sz) {
          size_[k] *= sz;
          sy_[k] = sy;
          sa_[k] = sa;
          sb_[k] = sb;
          continue;
        }
      }
      size_[ndim_] = sz;
      sy_[ndim_] = sy;
      sa_[ndim_] = sa;
      sb_[ndim_] = sb;
      ++ndim_;
    }
    if (ndim_ == 0) {
      size_[0] = 1;
      sy_[0] = sa_[0] = sb_[0] = 1;
      ndim_ = 1;
    }
    numel_ = 1;
    for (int k = 0; k < ndim_; ++k) numel_ *= size_[k];
  }

  int64_t numel() const { return numel_; }
  int64_t inner() const { return size_[ndim_ - 1]; }
  int64_t inner_a_step() const { return size_[ndim_ - 1] == 1 ? 1 : sa_[ndim_ - 1]; }
  int64_t inner_b_step() const { return size_[ndim_ - 1] == 1 ? 1 : sb_[ndim_ - 1]; }
  // The kernels need a dense output run and inputs stepping 0 or 1 along it.
  bool a_ok() const { return inner_a_step() == 0 || inner_a_step() == 1; }
  bool b_ok() const { return inner_b_step() == 0 || inner_b_step() == 1; }
  bool y_ok() const { return size_[ndim_ - 1] == 1 || sy_[ndim_ - 1] == 1; }

  // Calls f(y_off, a_off, b_off, n) for consecutive runs covering the flat (memory-order)
  // output range [begin, end); offsets in elements, steps along a run are inner_*_step().
  template <typename F>
  void for_range(int64_t begin, int64_t end, F f) const {
    const int64_t n_in = inner();
    std::array<int64_t, kMaxDims> idx{};
    int64_t o = begin / n_in, j = begin % n_in;
    for (int k = ndim_ - 2; k >= 0; --k) {
      idx[k] = o % size_[k];
      o /= size_[k];
    }
    int64_t pos = begin;
    const int64_t ia = inner_a_step(), ib = inner_b_step();
    while (pos < end) {
      int64_t yo = 0, ao = 0, bo = 0;
      for (int k = 0; k < ndim_ - 1; ++k) {
        yo += idx[k] * sy_[k];
        ao += idx[k] * sa_[k];
        bo += idx[k] * sb_[k];
      }
      const int64_t n = std::min(n_in - j, end - pos);
      f(yo + j, ao + j * ia, bo + j * ib, n);
      pos += n;
      j = 0;
      for (int k = ndim_ - 2; k >= 0; --k) {
        if (++idx[k] < size_[k]) break;
        idx[k] = 0;
      }
    }
  }

 private:
  int ndim_ = 0;
  int64_t numel_ = 1;
  std::array<int64_t, kMaxDims> size_{}, sy_{}, sa_{}, sb_{};
};

}  // namespace ops
}  // namespace qplugin
