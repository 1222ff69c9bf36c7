// LinearPackedParamsFp16 (torchbind class qplugin.LinearPackedParamsFp16): a Linear weight stored
// as float16 (saturated to +-65504 like PyTorch's linear_prepack_fp16) and its fp32 bias, for
// linear_dynamic_fp16. The products are computed in fp32 by qplugin's fp16-weight GEMM
// (kernels/dynamic/gemm_f16.h: weights converted in the inner loop, so a call reads half the
// bytes of an fp32 GEMM; the same bits on every ISA and thread count).
// Changes with: linear_fp16_packed_params.cpp, ops/linear_dynamic.cpp (class registration,
// schemas), ops/cpu/linear_dynamic_kernel.cpp, qplugin/nn/dynamic/linear.py.
//
// Pickled state (repacked on load):
//   version 1: (1, weight: float32 [out, in] holding fp16 values, bias: float32 [out] or None)
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <tuple>

#include "packed/linear_params_base.h"

namespace qplugin {

struct LinearPackedParamsFp16 : LinearParamsBase<LinearPackedParamsFp16> {
  static Ptr prepack(const at::Tensor& weight, const c10::optional<at::Tensor>& bias,
                     const char* op);
  // y = x @ W^T + b (fp32 products of fp16-rounded weights), max(0, y) when ReluFused.
  template <bool ReluFused>
  at::Tensor apply(const at::Tensor& x) const;
  // c[m][:] = a[m][:] @ W^T + b (max(0, .) when relu), m < M: a M x K float32 contiguous, c row
  // stride ldc; threaded with at::parallel_for, the same bits for any thread count.
  void gemm_into(const float* a, int64_t M, bool relu, float* c, int64_t ldc) const;
  // The fp16-rounded weight as float32 [out, in] (a copy) and the bias.
  // getstate, in_features/out_features/bias: LinearParamsBase.
  std::tuple<at::Tensor, c10::optional<at::Tensor>> unpack() const;
  static Ptr setstate(const c10::IValue& state) {
    return setstate_as(state, "LinearPackedParamsFp16.__setstate__", "a float32 weight tensor");
  }

 private:
  at::Tensor w_half_;   // float16 [out, in], contiguous
  at::Tensor w_panels_;  // float16: w_half_ in the fp16 GEMM's panels (kernels/dynamic/gemm_f16.h)
};

}  // namespace qplugin
