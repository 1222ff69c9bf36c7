// CPU kernels of the dynamic RNN layer ops (schemas: ops/rnn_dynamic.cpp): PyTorch's LSTM / GRU
// cell math (aten/src/ATen/native/RNN.cpp, the same op order) over the dynamic linear step
// (ops/cpu/linear_dynamic.h). Packed sequences: rows [0, batch_sizes[t]) are active at step t;
// the other rows keep their state, which gives PyTorch's h_n for both directions. Also the
// one-step cell ops (quantized_{lstm,gru,rnn_tanh,rnn_relu}_cell_dynamic) on the same step.
#include <ATen/ATen.h>
#include <torch/library.h>

#include <vector>

#include "common/non_differentiable.h"
#include "ops/cpu/linear_dynamic.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using Packed = c10::intrusive_ptr<LinearPackedParams>;

struct Plan {
  int64_t T = 0, B = 0, I = 0, rows = 0;
  std::vector<int64_t> bs;   // active rows per step
  std::vector<int64_t> off;  // first row of step t in input/output
};

Plan plan(const char* op, const at::Tensor& x, const c10::optional<at::Tensor>& batch_sizes,
          const at::Tensor& h0, int64_t H, int64_t G, const Packed& w_ih, const Packed& w_hh) {
  TORCH_CHECK(w_ih && w_hh, "qplugin::", op, ": expected packed weights, got None");
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None");
  TORCH_CHECK(w_hh->in_features() == H && w_hh->out_features() == G, "qplugin::", op,
              ": expected w_hh of shape [", G, ", ", H, "] (gates x hidden_size), got [",
              w_hh->out_features(), ", ", w_hh->in_features(), "]");
  TORCH_CHECK(w_ih->out_features() == G, "qplugin::", op, ": expected w_ih with ", G,
              " output features (the gates), got ", w_ih->out_features());
  Plan p;
  p.I = w_ih->in_features();
  const bool packed = batch_sizes.has_value() && batch_sizes->defined();
  if (!packed) {
    TORCH_CHECK(x.dim() == 3, "qplugin::", op, ": expected input of shape [seq_len, batch, ",
                p.I, "], got ", x.sizes());
    p.T = x.size(0);
    p.B = x.size(1);
    p.bs.assign(static_cast<size_t>(p.T), p.B);
  } else {
    const at::Tensor b = batch_sizes->to(at::kLong).contiguous();
    TORCH_CHECK(x.dim() == 2, "qplugin::", op,
                ": expected packed input data of shape [sum(batch_sizes), ", p.I, "], got ",
                x.sizes());
    TORCH_CHECK(b.dim() == 1, "qplugin::", op, ": expected 1-D batch_sizes, got ", b.sizes());
    p.T = b.numel();
    const int64_t* bp = b.data_ptr<int64_t>();
    p.B = p.T > 0 ? bp[0] : 0;
    int64_t total = 0, prev = p.B;
    for (int64_t t = 0; t < p.T; ++t) {
      TORCH_CHECK(bp[t] > 0 && bp[t] <= prev, "qplugin::", op,
                  ": expected positive, non-increasing batch_sizes, got ", b);
      prev = bp[t];
      total += bp[t];
      p.bs.push_back(bp[t]);
    }
    TORCH_CHECK(total == x.size(0), "qplugin::", op, ": expected ", total,
                " rows of packed input (sum(batch_sizes)), got ", x.size(0));
  }
  TORCH_CHECK(x.size(-1) == p.I, "qplugin::", op, ": expected input_size ", p.I,
              " in the last dimension, got ", x.size(-1));
  TORCH_CHECK(h0.dim() == 2 && h0.size(0) == p.B && h0.size(1) == H, "qplugin::", op,
              ": expected hidden state of shape [", p.B, ", ", H, "], got ", h0.sizes());
  TORCH_CHECK(h0.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 hidden state, got ", c10::toString(h0.scalar_type()));
  int64_t o = 0;
  for (int64_t t = 0; t < p.T; ++t) {
    p.off.push_back(o);
    o += p.bs[t];
  }
  p.rows = o;
  return p;
}

template <bool Lstm>
std::vector<at::Tensor> rnn_layer(const char* op, const at::Tensor& x,
                                  const c10::optional<at::Tensor>& batch_sizes,
                                  const at::Tensor& h0, const at::Tensor* c0, const Packed& w_ih,
                                  const Packed& w_hh, bool reverse, bool reduce_range) {
  const int64_t H = w_hh ? w_hh->in_features() : 0;
  const int64_t ngates = Lstm ? 4 : 3;
  const int64_t G = ngates * H;
  const Plan p = plan(op, x, batch_sizes, h0, H, G, w_ih, w_hh);
  if (Lstm) {
    TORCH_CHECK(c0->sizes() == h0.sizes() && c0->scalar_type() == at::kFloat, "qplugin::", op,
                ": expected a float32 cell state of shape ", h0.sizes(), ", got ", c0->sizes());
  }
  const auto opts = x.options().dtype(at::kFloat);
  at::Tensor h = h0.contiguous().clone();
  at::Tensor c = Lstm ? c0->contiguous().clone() : at::Tensor();
  at::Tensor out = at::empty(batch_sizes.has_value() && batch_sizes->defined()
                                 ? std::vector<int64_t>{p.rows, H}
                                 : std::vector<int64_t>{p.T, p.B, H},
                             opts);
  if (p.rows == 0 || H == 0) {
    if (Lstm) return {out, h, c};
    return {out, h};
  }
  std::vector<uint8_t> scratch;
  // Input projection of every step at once (one quantization of the whole sequence).
  const at::Tensor xc = x.contiguous();
  at::Tensor ig = at::empty({p.rows, G}, opts);
  linear_dynamic_into(op, xc.data_ptr<float>(), p.rows, *w_ih, reduce_range, /*relu=*/false,
                      ig.data_ptr<float>(), G, scratch);
  at::Tensor hg_buf = at::empty({p.B, G}, opts);
  at::Tensor tanh_buf = Lstm ? at::empty({p.B, H}, opts) : at::Tensor();
  at::Tensor out2 = out.view({p.rows, H});
  for (int64_t s = 0; s < p.T; ++s) {
    const int64_t t = reverse ? p.T - 1 - s : s;
    const int64_t bs = p.bs[t];
    at::Tensor hb = h.narrow(0, 0, bs);
    at::Tensor hg = hg_buf.narrow(0, 0, bs);
    linear_dynamic_into(op, hb.data_ptr<float>(), bs, *w_hh, reduce_range, /*relu=*/false,
                        hg.data_ptr<float>(), G, scratch);
    at::Tensor igt = ig.narrow(0, p.off[t], bs);
    if (Lstm) {
      // PyTorch: gates = linear_hh(h) + igates; i, f, o = sigmoid; g = tanh;
      // c' = f * c + i * g; h' = o * tanh(c').
      hg.add_(igt);
      auto ch = hg.unsafe_chunk(4, 1);
      at::Tensor in_g = ch[0].sigmoid_(), f_g = ch[1].sigmoid_(), c_g = ch[2].tanh_(),
                 o_g = ch[3].sigmoid_();
      at::Tensor cb = c.narrow(0, 0, bs);
      f_g.mul_(cb);
      in_g.mul_(c_g);
      at::add_out(cb, f_g, in_g);
      at::Tensor tb = tanh_buf.narrow(0, 0, bs);
      at::tanh_out(tb, cb);
      at::mul_out(hb, o_g, tb);
    } else {
      // PyTorch: r = sigmoid(hh_r + ih_r); z = sigmoid(hh_z + ih_z);
      // n = tanh(ih_n + r * hh_n); h' = (h - n) * z + n.
      auto hc = hg.unsafe_chunk(3, 1);
      auto ic = igt.unsafe_chunk(3, 1);
      at::Tensor r = hc[0].add_(ic[0]).sigmoid_();
      at::Tensor z = hc[1].add_(ic[1]).sigmoid_();
      at::Tensor n = ic[2].add(hc[2].mul_(r)).tanh_();
      hb.copy_((hb - n).mul_(z).add_(n));
    }
    out2.narrow(0, p.off[t], bs).copy_(hb);
  }
  if (Lstm) return {out, h, c};
  return {out, h};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_layer_cpu(
    const at::Tensor& x, const c10::optional<at::Tensor>& batch_sizes, const at::Tensor& h0,
    const at::Tensor& c0, const Packed& w_ih, const Packed& w_hh, bool reverse,
    bool reduce_range) {
  auto r = rnn_layer<true>("quantized_lstm_layer_dynamic", x, batch_sizes, h0, &c0, w_ih, w_hh,
                           reverse, reduce_range);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor> gru_layer_cpu(const at::Tensor& x,
                                                 const c10::optional<at::Tensor>& batch_sizes,
                                                 const at::Tensor& h0, const Packed& w_ih,
                                                 const Packed& w_hh, bool reverse,
                                                 bool reduce_range) {
  auto r = rnn_layer<false>("quantized_gru_layer_dynamic", x, batch_sizes, h0, nullptr, w_ih,
                            w_hh, reverse, reduce_range);
  return {r[0], r[1]};
}

// ---- One-step cells (torch.ops.quantized.quantized_*_cell_dynamic) ----------------------------
// x: [B, I] float32, h (and c): [B, H] float32. ig = linear_dynamic(x, W_ih), hg =
// linear_dynamic(h, W_hh) ([B, G], biases from the packed weights, 7-bit activations as PyTorch's
// cells: reduce_range=true), each operand quantized as a whole. Then PyTorch's cell math
// (aten/src/ATen/native/RNN.cpp LSTMCell / GRUCell / SimpleCell) in the same op order, so the
// float results match op for op. b_ih / b_hh are not read: PyTorch's dynamic cells take the
// biases from the packed weights too.
enum class CellKind { Lstm, Gru, Tanh, Relu };

struct CellGates {
  at::Tensor ig, hg;  // [B, G] each
};

CellGates cell_gates(const char* op, const at::Tensor& x, const at::Tensor& h,
                     const c10::optional<at::Tensor>& c, int64_t ngates, const Packed& w_ih,
                     const Packed& w_hh) {
  TORCH_CHECK(w_ih && w_hh, "qplugin::", op, ": expected packed weights, got None");
  const int64_t H = w_hh->in_features();
  const int64_t G = ngates * H;
  TORCH_CHECK(w_hh->out_features() == G, "qplugin::", op, ": expected w_hh of shape [", G, ", ",
              H, "] (", ngates, " x hidden_size, hidden_size), got [", w_hh->out_features(),
              ", ", H, "]");
  TORCH_CHECK(w_ih->out_features() == G, "qplugin::", op, ": expected w_ih with ", G,
              " output features (", ngates, " x hidden_size), got ", w_ih->out_features());
  const int64_t I = w_ih->in_features();
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None",
              "; the dynamic ops take float input, dequantize it first");
  TORCH_CHECK(x.dim() == 2 && x.size(1) == I, "qplugin::", op,
              ": expected input of shape [batch, ", I, "], got ", x.sizes(),
              "; unsqueeze(0) an unbatched input");
  const int64_t B = x.size(0);
  auto check_state = [&](const at::Tensor& s, const char* what) {
    TORCH_CHECK(s.defined() && !s.is_quantized() && s.scalar_type() == at::kFloat, "qplugin::",
                op, ": expected a float32 ", what, ", got ",
                s.defined() ? c10::toString(s.scalar_type()) : "None");
    TORCH_CHECK(s.dim() == 2 && s.size(0) == B && s.size(1) == H, "qplugin::", op,
                ": expected ", what, " of shape [", B, ", ", H, "], got ", s.sizes());
  };
  check_state(h, "hidden state");
  if (c.has_value()) check_state(*c, "cell state");
  const auto opts = x.options().dtype(at::kFloat);
  CellGates g{at::empty({B, G}, opts), at::empty({B, G}, opts)};
  if (B == 0 || G == 0) {
    g.ig.zero_();
    g.hg.zero_();
    return g;
  }
  std::vector<uint8_t> scratch;
  const at::Tensor xc = x.contiguous();
  const at::Tensor hc = h.contiguous();
  linear_dynamic_into(op, xc.data_ptr<float>(), B, *w_ih, /*reduce_range=*/true,
                      /*relu=*/false, g.ig.data_ptr<float>(), G, scratch);
  linear_dynamic_into(op, hc.data_ptr<float>(), B, *w_hh, /*reduce_range=*/true,
                      /*relu=*/false, g.hg.data_ptr<float>(), G, scratch);
  return g;
}

std::tuple<at::Tensor, at::Tensor> lstm_cell_cpu(const at::Tensor& x, at::TensorList hx,
                                                 const Packed& w_ih, const Packed& w_hh,
                                                 const at::Tensor& /*bias_ih*/,
                                                 const at::Tensor& /*bias_hh*/) {
  const char* op = "quantized_lstm_cell_dynamic";
  TORCH_CHECK(hx.size() == 2, "qplugin::", op,
              ": expected hx = [h, c] (2 tensors), got ", hx.size(), " tensors");
  const at::Tensor& c = hx[1];
  CellGates g = cell_gates(op, x, hx[0], c, 4, w_ih, w_hh);
  // PyTorch: gates = linear_hh(h).add_(linear_ih(x)); i, f, o = sigmoid; g = tanh;
  // cy = (f * c).add_(i * g); hy = o * tanh(cy).
  at::Tensor gates = g.hg.add_(g.ig);
  auto ch = gates.unsafe_chunk(4, 1);
  at::Tensor in_g = ch[0].sigmoid_(), f_g = ch[1].sigmoid_(), c_g = ch[2].tanh_(),
             o_g = ch[3].sigmoid_();
  at::Tensor cy = (f_g * c).add_(in_g * c_g);
  at::Tensor hy = o_g * cy.tanh();
  return {hy, cy};
}

at::Tensor gru_cell_cpu(const at::Tensor& x, const at::Tensor& h, const Packed& w_ih,
                        const Packed& w_hh, const at::Tensor& /*b_ih*/,
                        const at::Tensor& /*b_hh*/) {
  CellGates g = cell_gates("quantized_gru_cell_dynamic", x, h, c10::nullopt, 3, w_ih, w_hh);
  // PyTorch: r = sigmoid(hh_r + ih_r); z = sigmoid(hh_z + ih_z); n = tanh(ih_n + hh_n * r);
  // h' = (h - n) * z + n.
  auto ic = g.ig.unsafe_chunk(3, 1);
  auto hc = g.hg.unsafe_chunk(3, 1);
  at::Tensor r = hc[0].add_(ic[0]).sigmoid_();
  at::Tensor z = hc[1].add_(ic[1]).sigmoid_();
  at::Tensor n = ic[2].add(hc[2].mul_(r)).tanh_();
  return (h - n).mul_(z).add_(n);
}

template <CellKind Kind>
at::Tensor simple_cell_cpu(const at::Tensor& x, const at::Tensor& h, const Packed& w_ih,
                           const Packed& w_hh, const at::Tensor& /*b_ih*/,
                           const at::Tensor& /*b_hh*/) {
  const char* op = Kind == CellKind::Tanh ? "quantized_rnn_tanh_cell_dynamic"
                                          : "quantized_rnn_relu_cell_dynamic";
  CellGates g = cell_gates(op, x, h, c10::nullopt, 1, w_ih, w_hh);
  // PyTorch: nonlinearity(linear_hh(h).add_(linear_ih(x))).
  at::Tensor pre = g.hg.add_(g.ig);
  return Kind == CellKind::Tanh ? pre.tanh() : pre.relu();
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  m.impl("quantized_lstm_layer_dynamic", TORCH_FN(qplugin::ops::lstm_layer_cpu));
  m.impl("quantized_gru_layer_dynamic", TORCH_FN(qplugin::ops::gru_layer_cpu));
  m.impl("quantized_lstm_cell_dynamic", TORCH_FN(qplugin::ops::lstm_cell_cpu));
  m.impl("quantized_gru_cell_dynamic", TORCH_FN(qplugin::ops::gru_cell_cpu));
  m.impl("quantized_rnn_tanh_cell_dynamic",
         TORCH_FN(qplugin::ops::simple_cell_cpu<qplugin::ops::CellKind::Tanh>));
  m.impl("quantized_rnn_relu_cell_dynamic",
         TORCH_FN(qplugin::ops::simple_cell_cpu<qplugin::ops::CellKind::Relu>));
}
// Inference only: outputs never require grad (common/non_differentiable.h says why).
TORCH_LIBRARY_IMPL(qplugin, Autograd, m) {
  for (const char* op : {"quantized_lstm_layer_dynamic", "quantized_gru_layer_dynamic",
                         "quantized_lstm_cell_dynamic", "quantized_gru_cell_dynamic",
                         "quantized_rnn_tanh_cell_dynamic", "quantized_rnn_relu_cell_dynamic"}) {
    m.impl(op, qplugin::non_differentiable());
  }
}
// A quantized input or state reaches the same kernels, which reject it with a clear message.
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  m.impl("quantized_lstm_cell_dynamic", TORCH_FN(qplugin::ops::lstm_cell_cpu));
  m.impl("quantized_gru_cell_dynamic", TORCH_FN(qplugin::ops::gru_cell_cpu));
  m.impl("quantized_rnn_tanh_cell_dynamic",
         TORCH_FN(qplugin::ops::simple_cell_cpu<qplugin::ops::CellKind::Tanh>));
  m.impl("quantized_rnn_relu_cell_dynamic",
         TORCH_FN(qplugin::ops::simple_cell_cpu<qplugin::ops::CellKind::Relu>));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_rnn_dynamic_kernel)
