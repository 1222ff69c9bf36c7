// Schemas of the dynamic RNN layer ops (qplugin extension; the loop that torch.quantized_lstm /
// torch.quantized_gru run per layer and direction, on qplugin's packed int8 weights). The module
// (qplugin/nn/dynamic/rnn.py) stacks layers and directions, handles batch_first, hx and
// PackedSequence. Also the one-step cell ops (torch.ops.quantized's quantized_*_cell_dynamic).
// Kernels: ops/cpu/rnn_dynamic_kernel.cpp; fake kernels: qplugin/_meta_dynamic.py.
#include <torch/library.h>

#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_rnn_dynamic(torch::Library& m) {
  // input: [T, B, I] (batch_sizes None) or PackedSequence data [sum(batch_sizes), I];
  // h0/c0: [B, H] (B = batch_sizes[0] when packed). Gates: linear_dynamic(x, W_ih) +
  // linear_dynamic(h, W_hh) (biases inside the packed weights), the input projection computed for
  // all steps at once (as PyTorch's CPU path). Returns the outputs and the last h (and c).
  m.def("quantized_lstm_layer_dynamic(Tensor input, Tensor? batch_sizes, Tensor h0, Tensor c0, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, bool reverse=False, "
        "bool reduce_range=True) -> (Tensor output, Tensor h_n, Tensor c_n)");
  m.def("quantized_gru_layer_dynamic(Tensor input, Tensor? batch_sizes, Tensor h0, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, bool reverse=False, "
        "bool reduce_range=True) -> (Tensor output, Tensor h_n)");
  // One step (torch.ops.quantized's dynamic cell ops, same names, arguments and returns, on
  // qplugin's class): input [B, I], hidden [B, H] float32; gates = linear_dynamic(x, W_ih) +
  // linear_dynamic(h, W_hh) with 7-bit activations (reduce_range, as PyTorch's cells). As in
  // PyTorch, the biases come from the packed weights; bias_ih / bias_hh (b_ih / b_hh) are
  // accepted for the schema's sake and not read (None is fine).
  m.def("quantized_lstm_cell_dynamic(Tensor input, Tensor[] hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor bias_ih, "
        "Tensor bias_hh) -> (Tensor, Tensor)");
  m.def("quantized_gru_cell_dynamic(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
  m.def("quantized_rnn_tanh_cell_dynamic(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
  m.def("quantized_rnn_relu_cell_dynamic(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
