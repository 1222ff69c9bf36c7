// CPU-key kernels of the dynamic linear ops (schemas: ops/linear_dynamic.cpp). The float input is
// quantized per call (kernels/dynamic/quant_act.h) with PyTorch's dynamic qparams
// (choose_qparams below), multiplied exactly with the packed int8 weight and written in float by
// the GEMM's float epilogue (LinearPackedParams::gemm_f32). Fake kernels: qplugin/_meta_dynamic.py.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/checks.h"
#include "kernels/dynamic/quant_act.h"
#include "driver/output_pool.h"
#include "common/non_differentiable.h"
#include "ops/cpu/linear_dynamic.h"
#include "packed/linear_fp16_packed_params.h"
#include "packed/linear_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

// Elements per parallel chunk of the min/max and quantize passes (memory-bound: large chunks).
constexpr int64_t kQuantGrain = int64_t{1} << 16;

struct ActQParams {
  double scale;
  int32_t zero_point;
};

// PyTorch's quant_utils::ChooseQuantizationParams (the one torch.ops.quantized.linear_dynamic
// uses; fbgemm's equals it) with preserve_sparsity = false, force_scale_power_of_two = false,
// qmin = 0, qmax = 255 (127 with reduce_range). Double arithmetic where PyTorch has it.
ActQParams choose_qparams(float min, float max, bool reduce_range) {
  int32_t qmin = 0, qmax = 255;
  if (reduce_range) {
    qmin = qmin / 2;
    qmax = qmax / 2;
  }
  min = std::min(min, 0.f);
  max = std::max(max, 0.f);
  double scale = (static_cast<double>(max) - min) / (qmax - qmin);
  if (static_cast<float>(scale) == 0.0f || std::isinf(1.0f / static_cast<float>(scale))) {
    scale = 0.1;
  }
  constexpr float kSmallScale = 6.1e-5f;  // PyTorch's SMALL_SCALE_THRESHOLD
  if (scale < kSmallScale) {
    const float org_scale = static_cast<float>(scale);
    scale = kSmallScale;
    if (min == 0.0f) {
      max = kSmallScale * (qmax - qmin);
    } else if (max == 0.0f) {
      min = -kSmallScale * (qmax - qmin);
    } else {
      const float amplifier = kSmallScale / org_scale;
      min *= amplifier;
      max *= amplifier;
    }
  }
  const double zp_from_min = qmin - min / scale;
  const double zp_from_max = qmax - max / scale;
  const double zp_from_min_error = std::abs(qmin) - std::abs(min / scale);
  const double zp_from_max_error = std::abs(qmax) - std::abs(max / scale);
  const double initial_zp = zp_from_min_error < zp_from_max_error ? zp_from_min : zp_from_max;
  int32_t zp;
  if (initial_zp < qmin) {
    zp = qmin;
  } else if (initial_zp > qmax) {
    zp = qmax;
  } else {
    zp = static_cast<int32_t>(std::nearbyint(initial_zp));
  }
  return {scale, zp};
}

void check_float_input(const char* op, const at::Tensor& x, int64_t K, int64_t N) {
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None",
              x.defined() && x.is_quantized() ? "; the dynamic ops take float input, dequantize "
                                                "it first or use qplugin::linear"
                                              : "");
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected input on the CPU, got ",
              x.device());
  checks::check_linear_input(op, x, N, K);
}

template <bool ReluFused>
at::Tensor linear_dynamic_cpu(const at::Tensor& x, const Packed& w, bool reduce_range) {
  const char* op = ReluFused ? "linear_relu_dynamic" : "linear_dynamic";
  TORCH_CHECK(w, "qplugin::", op, ": expected packed weights (qplugin.LinearPackedParams), got "
                 "None");
  const int64_t K = w->in_features(), N = w->out_features();
  check_float_input(op, x, K, N);
  std::vector<int64_t> out_sizes(x.sizes().begin(), x.sizes().end());
  out_sizes.back() = N;
  checks::check_numel(op, "an output (batch..., out_features)", out_sizes);
  // Large outputs from the pool of mapped buffers (driver/output_pool.h: no page faults).
  at::Tensor y = driver::empty_pooled_float(out_sizes);
  const int64_t M = c10::multiply_integers(x.sizes().slice(0, x.dim() - 1));
  if (M == 0 || N == 0) return y;
  const at::Tensor xc = x.contiguous();
  std::vector<uint8_t> scratch;
  linear_dynamic_into(op, xc.data_ptr<float>(), M, *w, reduce_range, ReluFused,
                      y.data_ptr<float>(), /*ldo=*/N, scratch);
  return y;
}

}  // namespace

DynamicQParams quantize_dynamic_into(const char* op, const float* xp, int64_t numel,
                                     bool reduce_range, uint8_t* ap) {
  const auto& qk = kernels::dynamic::quant_act_kernels();
  // Min and max over the whole input (as PyTorch's FindMinMax), per chunk, then combined.
  float mn = 0.0f, mx = 0.0f;
  if (numel > 0) {
    const int64_t chunks = (numel + kQuantGrain - 1) / kQuantGrain;
    float one_min, one_max, one_bad;
    std::vector<float> cmin, cmax, cbad;
    float *pmin = &one_min, *pmax = &one_max, *pbad = &one_bad;
    if (chunks > 1) {
      cmin.resize(chunks);
      cmax.resize(chunks);
      cbad.resize(chunks);
      pmin = cmin.data();
      pmax = cmax.data();
      pbad = cbad.data();
      at::parallel_for(0, chunks, 1, [&](int64_t c0, int64_t c1) {
        for (int64_t c = c0; c < c1; ++c) {
          const int64_t i0 = c * kQuantGrain, n = std::min(kQuantGrain, numel - i0);
          qk.minmax(xp + i0, n, &pmin[c], &pmax[c], &pbad[c]);
        }
      });
    } else {
      qk.minmax(xp, numel, pmin, pmax, pbad);
    }
    mn = pmin[0];
    mx = pmax[0];
    bool finite = true;
    for (int64_t c = 0; c < chunks; ++c) {
      mn = std::min(mn, pmin[c]);
      mx = std::max(mx, pmax[c]);
      finite = finite && pbad[c] == 0.0f;
    }
    TORCH_CHECK(finite, "qplugin::", op,
                ": expected a finite input (it is quantized per call from its min and max), got "
                "NaN or inf");
  }
  const ActQParams qp = choose_qparams(mn, mx, reduce_range);
  const float scale_f = static_cast<float>(qp.scale);
  const float inv_scale = 1.0f / scale_f;  // fbgemm multiplies by the float reciprocal
  const float top = reduce_range ? 127.0f : 255.0f;
  const float zp = static_cast<float>(qp.zero_point);
  if (numel > kQuantGrain) {
    at::parallel_for(0, numel, kQuantGrain, [&](int64_t i0, int64_t i1) {
      qk.quantize(xp + i0, i1 - i0, inv_scale, zp, top, ap + i0);
    });
  } else if (numel > 0) {
    qk.quantize(xp, numel, inv_scale, zp, top, ap);
  }
  return {qp.scale, qp.zero_point};
}

void linear_dynamic_into(const char* op, const float* xp, int64_t M, const LinearPackedParams& w,
                         bool reduce_range, bool relu, float* out, int64_t ldo,
                         std::vector<uint8_t>& scratch) {
  const int64_t K = w.in_features();
  const int64_t numel = M * K;
  if (static_cast<int64_t>(scratch.size()) < numel) scratch.resize(static_cast<size_t>(numel));
  uint8_t* ap = scratch.data();
  const DynamicQParams qp = quantize_dynamic_into(op, xp, numel, reduce_range, ap);
  w.gemm_f32(ap, /*lda=*/K, M, static_cast<float>(qp.scale), qp.zero_point, relu,
             /*a_7bit=*/reduce_range, out, ldo);
}

namespace {

c10::intrusive_ptr<LinearPackedParamsFp16> linear_prepack_fp16_cpu(
    const at::Tensor& w, const c10::optional<at::Tensor>& b) {
  return LinearPackedParamsFp16::prepack(w, b, "linear_prepack_fp16");
}

std::tuple<at::Tensor, c10::optional<at::Tensor>> linear_unpack_fp16(const PackedFp16& w) {
  TORCH_CHECK(w, "qplugin::linear_unpack_fp16: expected packed weights "
                 "(qplugin.LinearPackedParamsFp16), got None");
  return w->unpack();
}

template <bool ReluFused>
at::Tensor linear_dynamic_fp16_cpu(const at::Tensor& x, const PackedFp16& w) {
  TORCH_CHECK(w, "qplugin::", ReluFused ? "linear_relu_dynamic_fp16" : "linear_dynamic_fp16",
              ": expected packed weights (qplugin.LinearPackedParamsFp16), got None");
  return w->apply<ReluFused>(x);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  m.impl("linear_dynamic", TORCH_FN(qplugin::ops::linear_dynamic_cpu<false>));
  m.impl("linear_relu_dynamic", TORCH_FN(qplugin::ops::linear_dynamic_cpu<true>));
  m.impl("linear_prepack_fp16", TORCH_FN(qplugin::ops::linear_prepack_fp16_cpu));
  m.impl("linear_dynamic_fp16", TORCH_FN(qplugin::ops::linear_dynamic_fp16_cpu<false>));
  m.impl("linear_relu_dynamic_fp16", TORCH_FN(qplugin::ops::linear_dynamic_fp16_cpu<true>));
}
// A quantized input reaches the same kernel, which rejects it with a clear message.
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  m.impl("linear_dynamic", TORCH_FN(qplugin::ops::linear_dynamic_cpu<false>));
  m.impl("linear_relu_dynamic", TORCH_FN(qplugin::ops::linear_dynamic_cpu<true>));
  m.impl("linear_dynamic_fp16", TORCH_FN(qplugin::ops::linear_dynamic_fp16_cpu<false>));
  m.impl("linear_relu_dynamic_fp16", TORCH_FN(qplugin::ops::linear_dynamic_fp16_cpu<true>));
}
// Inference only: outputs never require grad (common/non_differentiable.h says why).
TORCH_LIBRARY_IMPL(qplugin, Autograd, m) {
  for (const char* op : {"linear_dynamic", "linear_relu_dynamic", "linear_dynamic_fp16",
                         "linear_relu_dynamic_fp16"}) {
    m.impl(op, qplugin::non_differentiable());
  }
}
// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  m.impl("linear_unpack_fp16", TORCH_FN(qplugin::ops::linear_unpack_fp16));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_linear_dynamic_kernel)
