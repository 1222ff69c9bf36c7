// The Autograd-key kernel of qplugin's inference-only ops on float tensors (the dynamic family:
// linear*_dynamic*, conv*_dynamic, the RNN cells and layers; the embedding bags, whose
// per_sample_weights are float): it runs the op below autograd, so
// its outputs never require grad, PyTorch's rule for a non-differentiable op (and what
// torch.library.opcheck's test_autograd_registration checks; tests/pt2/test_opcheck_coverage.py).
// Why: without an Autograd kernel, PyTorch's autograd fallback runs the CPU kernel with autograd
// still on, so the ATen calls inside it (the fp16 GEMM's matmul, the RNN gates' sigmoid/tanh)
// recorded part of a graph and backward returned wrong gradients; with the default ("warn")
// fallback the outputs got a grad_fn that only warns (and torch.compile / AOT autograd built a
// joint forward-backward graph around the op). Registered at the bottom of
// ops/cpu/{linear,conv,rnn}_dynamic_kernel.cpp and ops/cpu/embedding_kernel.cpp.
#pragma once

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

namespace qplugin {

inline void non_differentiable_boxed(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                                     torch::jit::Stack* stack) {
  at::AutoDispatchBelowADInplaceOrView guard;
  op.redispatchBoxed(keys & c10::after_ADInplaceOrView_keyset, stack);
}

inline torch::CppFunction non_differentiable() {
  return torch::CppFunction::makeFromBoxedFunction<&non_differentiable_boxed>();
}

}  // namespace qplugin
