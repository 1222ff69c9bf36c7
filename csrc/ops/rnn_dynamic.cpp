// Schemas of the dynamic RNN layer ops (qplugin extension; the loop that torch.quantized_lstm /
// torch.quantized_gru run per layer and direction, on qplugin's packed int8 weights). The module
// (qplugin/nn/dynamic/rnn.py) stacks layers and directions, handles batch_first, hx and
// PackedSequence. Also the one-step cell ops (torch.ops.quantized's quantized_*_cell_dynamic, and
// their float16 forms), the CellParams makers (torch.ops.quantized.make_quantized_cell_params*)
// and the stacked-layer ops that take CellParams (torch.quantized_lstm / torch.quantized_gru).
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
  // The same layers on float16 packed weights (the products of linear_dynamic_fp16: fp32 sums of
  // the fp16-rounded weights, no activation rounding); the float16 LSTM / GRU modules run them.
  m.def("quantized_lstm_layer_dynamic_fp16(Tensor input, Tensor? batch_sizes, Tensor h0, "
        "Tensor c0, __torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, bool reverse=False) -> "
        "(Tensor output, Tensor h_n, Tensor c_n)");
  m.def("quantized_gru_layer_dynamic_fp16(Tensor input, Tensor? batch_sizes, Tensor h0, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, bool reverse=False) -> "
        "(Tensor output, Tensor h_n)");
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
  // The same cells on float16 packed weights (PyTorch's cell ops take either weight type through
  // one base class; qplugin's fp16 weights are a separate class and an overload is not chosen
  // by class in eager Python, hence the _fp16 names, as linear_dynamic_fp16). Products in fp32
  // of the fp16-rounded weights (linear_dynamic_fp16), then the same cell math.
  m.def("quantized_lstm_cell_dynamic_fp16(Tensor input, Tensor[] hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor bias_ih, "
        "Tensor bias_hh) -> (Tensor, Tensor)");
  m.def("quantized_gru_cell_dynamic_fp16(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
  m.def("quantized_rnn_tanh_cell_dynamic_fp16(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
  m.def("quantized_rnn_relu_cell_dynamic_fp16(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh, Tensor b_ih, Tensor b_hh) "
        "-> Tensor");
  // CellParams makers (torch.ops.quantized's names and arguments; qplugin.CellParams for
  // PyTorch's rnn.CellParamsBase). _dynamic: int8 packed weights, activations quantized per call
  // (reduce_range: 7 bits); bias_ih / bias_hh are accepted and not read, the biases live in the
  // packed weights (as PyTorch's). _fp16: float16 packed weights. The plain form takes float32
  // weights and quantizes each per tensor to qint8 from its min/max (PyTorch's
  // fbgemm_linear_quantize_weight: ChooseQuantizationParams over [-128, 127]), the biases go into
  // the packed weights, activations 8-bit (reduce_range off), as PyTorch's legacy cell params.
  m.def("make_quantized_cell_params(Tensor w_ih, Tensor w_hh, Tensor b_ih, Tensor b_hh) -> "
        "__torch__.torch.classes.qplugin.CellParams");
  m.def("make_quantized_cell_params_dynamic("
        "__torch__.torch.classes.qplugin.LinearPackedParams w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParams w_hh, Tensor bias_ih, "
        "Tensor bias_hh, bool reduce_range=False) -> __torch__.torch.classes.qplugin.CellParams");
  m.def("make_quantized_cell_params_fp16("
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_ih, "
        "__torch__.torch.classes.qplugin.LinearPackedParamsFp16 w_hh) -> "
        "__torch__.torch.classes.qplugin.CellParams");
  // Stacked layers (≙ torch.quantized_lstm / torch.quantized_gru, aten's .input / .data
  // overloads): params holds num_layers x num_directions CellParams (layer-major), each run by
  // the layer loop above with its own weight type and reduce_range; hx: [h0, c0] (LSTM) or h0,
  // [num_layers * num_directions, batch, hidden]. Inference only: dropout with train=True is
  // rejected. dtype / use_dynamic are checked as PyTorch's and otherwise unused (the params know
  // their weight type).
  m.def("quantized_lstm.input(Tensor input, Tensor[] hx, "
        "__torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, "
        "float dropout, bool train, bool bidirectional, bool batch_first, *, "
        "ScalarType? dtype=None, bool use_dynamic=False) -> (Tensor, Tensor, Tensor)");
  m.def("quantized_lstm.data(Tensor data, Tensor batch_sizes, Tensor[] hx, "
        "__torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, "
        "float dropout, bool train, bool bidirectional, *, ScalarType? dtype=None, "
        "bool use_dynamic=False) -> (Tensor, Tensor, Tensor)");
  m.def("quantized_gru.input(Tensor input, Tensor hx, "
        "__torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, "
        "float dropout, bool train, bool bidirectional, bool batch_first) -> (Tensor, Tensor)");
  m.def("quantized_gru.data(Tensor data, Tensor batch_sizes, Tensor hx, "
        "__torch__.torch.classes.qplugin.CellParams[] params, bool has_biases, int num_layers, "
        "float dropout, bool train, bool bidirectional) -> (Tensor, Tensor)");
}

}  // namespace schemas
}  // namespace qplugin
