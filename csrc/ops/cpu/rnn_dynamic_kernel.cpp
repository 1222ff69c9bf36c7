// CPU kernels of the dynamic RNN layer ops (schemas: ops/rnn_dynamic.cpp): PyTorch's LSTM / GRU
// cell math (aten/src/ATen/native/RNN.cpp, the same op order) over the dynamic linear step
// (ops/cpu/linear_dynamic.h). Packed sequences: rows [0, batch_sizes[t]) are active at step t;
// the other rows keep their state, which gives PyTorch's h_n for both directions. Also the
// one-step cell ops (quantized_{lstm,gru,rnn_tanh,rnn_relu}_cell_dynamic, and _fp16) on the same
// step, the CellParams makers (make_quantized_cell_params*) and the stacked-layer ops over
// CellParams (quantized_lstm / quantized_gru). Every projection is a Proj: int8 packed weights
// (linear_dynamic_into) or float16 ones (fp32 products, LinearPackedParamsFp16::apply).
#include <ATen/ATen.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "driver/output_pool.h"
#include "common/non_differentiable.h"
#include "ops/cpu/linear_dynamic.h"
#include "packed/cell_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using Cell = c10::intrusive_ptr<CellParams>;

// One projection (W_ih or W_hh, bias inside): int8 (activations quantized per call, 7 bits with
// reduce_range) or float16 (fp32 products of the fp16-rounded weight, no activation rounding).
struct Proj {
  const LinearPackedParams* q = nullptr;
  const LinearPackedParamsFp16* f = nullptr;
  bool reduce_range = true;

  explicit operator bool() const { return q != nullptr || f != nullptr; }
  int64_t in_features() const { return q ? q->in_features() : f->in_features(); }
  int64_t out_features() const { return q ? q->out_features() : f->out_features(); }
  // out (contiguous [M, N]) = x (contiguous float32 [M, K]) @ W^T + b.
  void run(const char* op, const at::Tensor& x, int64_t M, at::Tensor& out,
           std::vector<uint8_t>& scratch) const {
    if (q) {
      linear_dynamic_into(op, x.data_ptr<float>(), M, *q, reduce_range, /*relu=*/false,
                          out.data_ptr<float>(), /*ldo=*/out_features(), scratch);
    } else {
      f->gemm_into(x.data_ptr<float>(), M, /*relu=*/false, out.data_ptr<float>(),
                   /*ldc=*/out_features());
    }
  }
};

Proj proj(const Packed& p, bool reduce_range) { return Proj{p.get(), nullptr, reduce_range}; }
Proj proj(const PackedFp16& p) { return Proj{nullptr, p.get(), false}; }
Proj proj_ih(const CellParams& c) { return Proj{c.ih(), c.ih16(), c.reduce_range()}; }
Proj proj_hh(const CellParams& c) { return Proj{c.hh(), c.hh16(), c.reduce_range()}; }

struct Plan {
  int64_t T = 0, B = 0, I = 0, rows = 0;
  std::vector<int64_t> bs;   // active rows per step
  std::vector<int64_t> off;  // first row of step t in input/output
};

Plan plan(const char* op, const at::Tensor& x, const c10::optional<at::Tensor>& batch_sizes,
          const at::Tensor& h0, int64_t H, int64_t G, const Proj& w_ih, const Proj& w_hh) {
  TORCH_CHECK(w_ih && w_hh, "qplugin::", op, ": expected packed weights, got None");
  TORCH_CHECK(x.defined() && !x.is_quantized() && x.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 input, got ",
              x.defined() ? c10::toString(x.scalar_type()) : "None");
  TORCH_CHECK(w_hh.in_features() == H && w_hh.out_features() == G, "qplugin::", op,
              ": expected w_hh of shape [", G, ", ", H, "] (gates x hidden_size), got [",
              w_hh.out_features(), ", ", w_hh.in_features(), "]");
  TORCH_CHECK(w_ih.out_features() == G, "qplugin::", op, ": expected w_ih with ", G,
              " output features (the gates), got ", w_ih.out_features());
  Plan p;
  p.I = w_ih.in_features();
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
                                  const at::Tensor& h0, const at::Tensor* c0, const Proj& w_ih,
                                  const Proj& w_hh, bool reverse) {
  const int64_t H = w_hh ? w_hh.in_features() : 0;
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
  at::Tensor out = driver::empty_pooled_float(batch_sizes.has_value() && batch_sizes->defined()
                                                 ? std::vector<int64_t>{p.rows, H}
                                                 : std::vector<int64_t>{p.T, p.B, H});
  if (p.rows == 0 || H == 0) {
    if (Lstm) return {out, h, c};
    return {out, h};
  }
  std::vector<uint8_t> scratch;
  // Input projection of every step at once (one quantization of the whole sequence).
  const at::Tensor xc = x.contiguous();
  at::Tensor ig = driver::empty_pooled_float({p.rows, G});
  w_ih.run(op, xc.view({p.rows, p.I}), p.rows, ig, scratch);
  at::Tensor hg_buf = at::empty({p.B, G}, opts);
  at::Tensor tanh_buf = Lstm ? at::empty({p.B, H}, opts) : at::Tensor();
  at::Tensor out2 = out.view({p.rows, H});
  for (int64_t s = 0; s < p.T; ++s) {
    const int64_t t = reverse ? p.T - 1 - s : s;
    const int64_t bs = p.bs[t];
    at::Tensor hb = h.narrow(0, 0, bs);
    at::Tensor hg = hg_buf.narrow(0, 0, bs);
    w_hh.run(op, hb, bs, hg, scratch);
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
  auto r = rnn_layer<true>("quantized_lstm_layer_dynamic", x, batch_sizes, h0, &c0,
                           proj(w_ih, reduce_range), proj(w_hh, reduce_range), reverse);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor> gru_layer_cpu(const at::Tensor& x,
                                                 const c10::optional<at::Tensor>& batch_sizes,
                                                 const at::Tensor& h0, const Packed& w_ih,
                                                 const Packed& w_hh, bool reverse,
                                                 bool reduce_range) {
  auto r = rnn_layer<false>("quantized_gru_layer_dynamic", x, batch_sizes, h0, nullptr,
                            proj(w_ih, reduce_range), proj(w_hh, reduce_range), reverse);
  return {r[0], r[1]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> lstm_layer_fp16_cpu(
    const at::Tensor& x, const c10::optional<at::Tensor>& batch_sizes, const at::Tensor& h0,
    const at::Tensor& c0, const PackedFp16& w_ih, const PackedFp16& w_hh, bool reverse) {
  auto r = rnn_layer<true>("quantized_lstm_layer_dynamic_fp16", x, batch_sizes, h0, &c0,
                           proj(w_ih), proj(w_hh), reverse);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor> gru_layer_fp16_cpu(
    const at::Tensor& x, const c10::optional<at::Tensor>& batch_sizes, const at::Tensor& h0,
    const PackedFp16& w_ih, const PackedFp16& w_hh, bool reverse) {
  auto r = rnn_layer<false>("quantized_gru_layer_dynamic_fp16", x, batch_sizes, h0, nullptr,
                            proj(w_ih), proj(w_hh), reverse);
  return {r[0], r[1]};
}

// ---- One-step cells (torch.ops.quantized.quantized_*_cell_dynamic) ----------------------------
// x: [B, I] float32, h (and c): [B, H] float32. ig = x @ W_ih^T + b_ih, hg = h @ W_hh^T + b_hh
// ([B, G], biases from the packed weights): int8 weights through the dynamic linear with 7-bit
// activations (as PyTorch's cells: reduce_range=true), each operand quantized as a whole; float16
// weights (the _fp16 ops) in fp32. Then PyTorch's cell math (aten/src/ATen/native/RNN.cpp
// LSTMCell / GRUCell / SimpleCell) in the same op order, so the float results match op for op.
// b_ih / b_hh are not read: PyTorch's dynamic cells take the biases from the packed weights too.
enum class CellKind { Lstm, Gru, Tanh, Relu };

struct CellGates {
  at::Tensor ig, hg;  // [B, G] each
};

CellGates cell_gates(const char* op, const at::Tensor& x, const at::Tensor& h,
                     const c10::optional<at::Tensor>& c, int64_t ngates, const Proj& w_ih,
                     const Proj& w_hh) {
  TORCH_CHECK(w_ih && w_hh, "qplugin::", op, ": expected packed weights, got None");
  const int64_t H = w_hh.in_features();
  const int64_t G = ngates * H;
  TORCH_CHECK(w_hh.out_features() == G, "qplugin::", op, ": expected w_hh of shape [", G, ", ",
              H, "] (", ngates, " x hidden_size, hidden_size), got [", w_hh.out_features(),
              ", ", H, "]");
  TORCH_CHECK(w_ih.out_features() == G, "qplugin::", op, ": expected w_ih with ", G,
              " output features (", ngates, " x hidden_size), got ", w_ih.out_features());
  const int64_t I = w_ih.in_features();
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
  w_ih.run(op, x.contiguous(), B, g.ig, scratch);
  w_hh.run(op, h.contiguous(), B, g.hg, scratch);
  return g;
}

std::tuple<at::Tensor, at::Tensor> lstm_cell(const char* op, const at::Tensor& x,
                                             at::TensorList hx, const Proj& w_ih,
                                             const Proj& w_hh) {
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

at::Tensor gru_cell(const char* op, const at::Tensor& x, const at::Tensor& h, const Proj& w_ih,
                    const Proj& w_hh) {
  CellGates g = cell_gates(op, x, h, c10::nullopt, 3, w_ih, w_hh);
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
at::Tensor simple_cell(const char* op, const at::Tensor& x, const at::Tensor& h, const Proj& w_ih,
                       const Proj& w_hh) {
  CellGates g = cell_gates(op, x, h, c10::nullopt, 1, w_ih, w_hh);
  // PyTorch: nonlinearity(linear_hh(h).add_(linear_ih(x))).
  at::Tensor pre = g.hg.add_(g.ig);
  return Kind == CellKind::Tanh ? pre.tanh() : pre.relu();
}

// The registered forms, one template on the weight type W: int8 packed weights (Packed;
// reduce_range on, as PyTorch's cells) or float16 (PackedFp16, the _fp16 ops). The bias arguments
// are not read (see above).
Proj cell_proj(const Packed& p) { return proj(p, /*reduce_range=*/true); }
Proj cell_proj(const PackedFp16& p) { return proj(p); }
template <class W>
const char* cell_op(const char* int8_name, const char* fp16_name) {
  return std::is_same_v<W, PackedFp16> ? fp16_name : int8_name;
}

template <class W>
std::tuple<at::Tensor, at::Tensor> lstm_cell_cpu(const at::Tensor& x, at::TensorList hx,
                                                 const W& w_ih, const W& w_hh,
                                                 const at::Tensor& /*bias_ih*/,
                                                 const at::Tensor& /*bias_hh*/) {
  return lstm_cell(cell_op<W>("quantized_lstm_cell_dynamic", "quantized_lstm_cell_dynamic_fp16"),
                   x, hx, cell_proj(w_ih), cell_proj(w_hh));
}

template <class W>
at::Tensor gru_cell_cpu(const at::Tensor& x, const at::Tensor& h, const W& w_ih, const W& w_hh,
                        const at::Tensor& /*b_ih*/, const at::Tensor& /*b_hh*/) {
  return gru_cell(cell_op<W>("quantized_gru_cell_dynamic", "quantized_gru_cell_dynamic_fp16"), x,
                  h, cell_proj(w_ih), cell_proj(w_hh));
}

template <CellKind Kind, class W>
at::Tensor simple_cell_cpu(const at::Tensor& x, const at::Tensor& h, const W& w_ih, const W& w_hh,
                           const at::Tensor& /*b_ih*/, const at::Tensor& /*b_hh*/) {
  const char* op = Kind == CellKind::Tanh
                       ? cell_op<W>("quantized_rnn_tanh_cell_dynamic",
                                    "quantized_rnn_tanh_cell_dynamic_fp16")
                       : cell_op<W>("quantized_rnn_relu_cell_dynamic",
                                    "quantized_rnn_relu_cell_dynamic_fp16");
  return simple_cell<Kind>(op, x, h, cell_proj(w_ih), cell_proj(w_hh));
}

// ---- CellParams makers (torch.ops.quantized.make_quantized_cell_params*) ----------------------

// PyTorch's legacy weight quantization (fbgemm_linear_quantize_weight): per tensor, qparams from
// fbgemm::ChooseQuantizationParams(min, max, -128, 127) (float scale; min/max extended to 0;
// scale 0.1 for an all-zero weight), codes nearbyint(w * (1 / scale)) + zp clamped to
// [-128, 127] (fbgemm's AVX2 Quantize).
at::Tensor quantize_weight_legacy(const char* op, const char* what, const at::Tensor& w) {
  TORCH_CHECK(w.defined() && !w.is_quantized() && w.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 ", what, ", got ",
              w.defined() ? c10::toString(w.scalar_type()) : "None",
              "; this op quantizes float weights (use make_quantized_cell_params_dynamic for "
              "packed int8 ones)");
  TORCH_CHECK(w.device().is_cpu(), "qplugin::", op, ": expected ", what, " on the CPU, got ",
              w.device());
  TORCH_CHECK(w.dim() == 2, "qplugin::", op, ": expected a 2-D ", what,
              " [gates x hidden_size, in_features], got ", w.dim(), "-D");
  const at::Tensor wc = w.contiguous();
  const float* p = wc.data_ptr<float>();
  const int64_t n = wc.numel();
  float mn = 0.f, mx = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(std::isfinite(p[i]), "qplugin::", op, ": expected a finite ", what,
                ", got ", p[i], " at flat index ", i);
    mn = std::min(mn, p[i]);
    mx = std::max(mx, p[i]);
  }
  constexpr int32_t qmin = -128, qmax = 127;
  float scale = static_cast<float>((static_cast<double>(mx) - mn) / (qmax - qmin));
  if (scale == 0.0f || std::isinf(1.0f / scale)) scale = 0.1f;
  const double zp_from_min = qmin - mn / static_cast<double>(scale);
  const double zp_from_max = qmax - mx / static_cast<double>(scale);
  const double zp_from_min_error = std::abs(qmin) - std::abs(mn / static_cast<double>(scale));
  const double zp_from_max_error = std::abs(qmax) - std::abs(mx / static_cast<double>(scale));
  const double initial_zp = zp_from_min_error < zp_from_max_error ? zp_from_min : zp_from_max;
  int32_t zp = initial_zp < qmin   ? qmin
               : initial_zp > qmax ? qmax
                                   : static_cast<int32_t>(std::nearbyint(initial_zp));
  at::Tensor codes = at::empty(wc.sizes(), wc.options().dtype(at::kChar));
  int8_t* q = codes.data_ptr<int8_t>();
  const float inv = 1.0f / scale;
  for (int64_t i = 0; i < n; ++i) {
    const float v = std::nearbyint(p[i] * inv) + static_cast<float>(zp);
    q[i] = static_cast<int8_t>(std::min(std::max(v, static_cast<float>(qmin)),
                                        static_cast<float>(qmax)));
  }
  return at::_make_per_tensor_quantized_tensor(codes, scale, zp);
}

c10::optional<at::Tensor> legacy_bias(const char* op, const char* what, const at::Tensor& b,
                                      int64_t G) {
  TORCH_CHECK(b.defined() && !b.is_quantized() && b.scalar_type() == at::kFloat, "qplugin::", op,
              ": expected a float32 ", what, ", got ",
              b.defined() ? c10::toString(b.scalar_type()) : "None",
              "; PyTorch's quantized cell params require biases");
  TORCH_CHECK(b.dim() == 1 && b.size(0) == G, "qplugin::", op, ": expected ", what,
              " of shape [", G, "] (gates x hidden_size), got ", b.sizes());
  return b;
}

Cell make_cell_params_cpu(const at::Tensor& w_ih, const at::Tensor& w_hh, const at::Tensor& b_ih,
                          const at::Tensor& b_hh) {
  const char* op = "make_quantized_cell_params";
  at::Tensor q_ih = quantize_weight_legacy(op, "w_ih", w_ih);
  at::Tensor q_hh = quantize_weight_legacy(op, "w_hh", w_hh);
  auto bi = legacy_bias(op, "b_ih", b_ih, w_ih.size(0));
  auto bh = legacy_bias(op, "b_hh", b_hh, w_hh.size(0));
  return CellParams::make_int8(LinearPackedParams::prepack(q_ih, bi, op),
                               LinearPackedParams::prepack(q_hh, bh, op),
                               /*reduce_range=*/false, op);
}

Cell make_cell_params_dynamic_cpu(const Packed& w_ih, const Packed& w_hh,
                                  const at::Tensor& /*bias_ih*/, const at::Tensor& /*bias_hh*/,
                                  bool reduce_range) {
  return CellParams::make_int8(w_ih, w_hh, reduce_range, "make_quantized_cell_params_dynamic");
}

Cell make_cell_params_fp16_cpu(const PackedFp16& w_ih, const PackedFp16& w_hh) {
  return CellParams::make_fp16(w_ih, w_hh, "make_quantized_cell_params_fp16");
}

// ---- Stacked layers over CellParams (torch.quantized_lstm / torch.quantized_gru) -------------
// Layer l, direction d runs params[l * D + d] through rnn_layer (reverse for d = 1) on the
// previous layer's output (both directions concatenated along the last dimension), as
// aten/src/ATen/native/RNN.cpp's _rnn_impl; h_n / c_n stack the last states in the same order.
template <bool Lstm>
std::vector<at::Tensor> stacked(const char* op, const at::Tensor& x,
                                const c10::optional<at::Tensor>& batch_sizes,
                                const at::Tensor& h0s, const at::Tensor* c0s,
                                const c10::List<Cell>& params, bool has_biases,
                                int64_t num_layers, double dropout, bool train,
                                bool bidirectional) {
  TORCH_CHECK(has_biases, "qplugin::", op,
              ": expected has_biases=True, got False; the quantized RNN ops require biases (as "
              "PyTorch's)");
  TORCH_CHECK(num_layers >= 1, "qplugin::", op, ": expected num_layers >= 1, got ", num_layers);
  TORCH_CHECK_NOT_IMPLEMENTED(!(train && dropout > 0 && num_layers > 1), "qplugin::", op,
                              ": dropout in training mode is not supported (inference only), "
                              "got train=True and dropout=", dropout, "; pass train=False");
  const int64_t D = bidirectional ? 2 : 1;
  const int64_t L = num_layers * D;
  TORCH_CHECK(static_cast<int64_t>(params.size()) == L, "qplugin::", op, ": expected ", L,
              " CellParams (num_layers x num_directions), got ", params.size());
  auto check_states = [&](const at::Tensor& s, const char* what) {
    TORCH_CHECK(s.defined() && s.dim() == 3 && s.size(0) == L, "qplugin::", op, ": expected ",
                what, " of shape [", L, ", batch, hidden_size] (num_layers x num_directions "
                "first), got ", s.defined() ? s.sizes() : at::IntArrayRef{});
  };
  check_states(h0s, "h0");
  if (Lstm) {
    check_states(*c0s, "c0");
    TORCH_CHECK(c0s->sizes() == h0s.sizes(), "qplugin::", op,
                ": expected c0 of the shape of h0 ", h0s.sizes(), ", got ", c0s->sizes(),
                " (no projections)");
  }
  at::Tensor layer_in = x;
  std::vector<at::Tensor> hn, cn;
  for (int64_t l = 0; l < num_layers; ++l) {
    std::vector<at::Tensor> outs;
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = l * D + d;
      const Cell p = params.get(i);
      TORCH_CHECK(p, "qplugin::", op, ": expected CellParams at index ", i, ", got None");
      at::Tensor c0 = Lstm ? c0s->select(0, i) : at::Tensor();
      auto r = rnn_layer<Lstm>(op, layer_in, batch_sizes, h0s.select(0, i), Lstm ? &c0 : nullptr,
                               proj_ih(*p), proj_hh(*p), /*reverse=*/d == 1);
      outs.push_back(r[0]);
      hn.push_back(r[1]);
      if (Lstm) cn.push_back(r[2]);
    }
    layer_in = D == 1 ? outs[0] : at::cat(outs, -1);
  }
  std::vector<at::Tensor> res{layer_in, at::stack(hn, 0)};
  if (Lstm) res.push_back(at::stack(cn, 0));
  return res;
}

void check_lstm_dtype(const char* op, const c10::optional<at::ScalarType>& dtype) {
  // As PyTorch: the dtype argument may name the weight type; the params decide what runs.
  TORCH_CHECK(!dtype.has_value() || *dtype == at::kChar || *dtype == at::kQInt8 ||
                  *dtype == at::kHalf,
              "qplugin::", op, ": expected dtype None, torch.int8, torch.qint8 or torch.float16, "
              "got ", dtype.has_value() ? c10::toString(*dtype) : "None");
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantized_lstm_input_cpu(
    const at::Tensor& input, at::TensorList hx, const c10::List<Cell>& params, bool has_biases,
    int64_t num_layers, double dropout, bool train, bool bidirectional, bool batch_first,
    c10::optional<at::ScalarType> dtype, bool /*use_dynamic*/) {
  const char* op = "quantized_lstm";
  check_lstm_dtype(op, dtype);
  TORCH_CHECK(hx.size() == 2, "qplugin::", op, ": expected hx = [h0, c0] (2 tensors), got ",
              hx.size(), " tensors");
  TORCH_CHECK(input.dim() == 3, "qplugin::", op, ": expected a 3-D input [",
              batch_first ? "batch, seq_len" : "seq_len, batch", ", input_size], got ",
              input.dim(), "-D");
  const at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  auto r = stacked<true>(op, x, c10::nullopt, hx[0], &hx[1], params, has_biases, num_layers,
                         dropout, train, bidirectional);
  if (batch_first) r[0] = r[0].transpose(0, 1);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> quantized_lstm_data_cpu(
    const at::Tensor& data, const at::Tensor& batch_sizes, at::TensorList hx,
    const c10::List<Cell>& params, bool has_biases, int64_t num_layers, double dropout,
    bool train, bool bidirectional, c10::optional<at::ScalarType> dtype, bool /*use_dynamic*/) {
  const char* op = "quantized_lstm";
  check_lstm_dtype(op, dtype);
  TORCH_CHECK(hx.size() == 2, "qplugin::", op, ": expected hx = [h0, c0] (2 tensors), got ",
              hx.size(), " tensors");
  auto r = stacked<true>(op, data, batch_sizes, hx[0], &hx[1], params, has_biases, num_layers,
                         dropout, train, bidirectional);
  return {r[0], r[1], r[2]};
}

std::tuple<at::Tensor, at::Tensor> quantized_gru_input_cpu(
    const at::Tensor& input, const at::Tensor& hx, const c10::List<Cell>& params,
    bool has_biases, int64_t num_layers, double dropout, bool train, bool bidirectional,
    bool batch_first) {
  const char* op = "quantized_gru";
  TORCH_CHECK(input.dim() == 3, "qplugin::", op, ": expected a 3-D input [",
              batch_first ? "batch, seq_len" : "seq_len, batch", ", input_size], got ",
              input.dim(), "-D");
  const at::Tensor x = batch_first ? input.transpose(0, 1) : input;
  auto r = stacked<false>(op, x, c10::nullopt, hx, nullptr, params, has_biases, num_layers,
                          dropout, train, bidirectional);
  if (batch_first) r[0] = r[0].transpose(0, 1);
  return {r[0], r[1]};
}

std::tuple<at::Tensor, at::Tensor> quantized_gru_data_cpu(
    const at::Tensor& data, const at::Tensor& batch_sizes, const at::Tensor& hx,
    const c10::List<Cell>& params, bool has_biases, int64_t num_layers, double dropout,
    bool train, bool bidirectional) {
  auto r = stacked<false>("quantized_gru", data, batch_sizes, hx, nullptr, params, has_biases,
                          num_layers, dropout, train, bidirectional);
  return {r[0], r[1]};
}

// The cell ops and the int8 cell-params maker: registered for CPU and, as a quantized input or
// state reaches the same kernels (which reject it with a clear message), for QuantizedCPU.
void register_cells(torch::Library& m) {
  m.impl("quantized_lstm_cell_dynamic", TORCH_FN(lstm_cell_cpu<Packed>));
  m.impl("quantized_gru_cell_dynamic", TORCH_FN(gru_cell_cpu<Packed>));
  m.impl("quantized_rnn_tanh_cell_dynamic", TORCH_FN((simple_cell_cpu<CellKind::Tanh, Packed>)));
  m.impl("quantized_rnn_relu_cell_dynamic", TORCH_FN((simple_cell_cpu<CellKind::Relu, Packed>)));
  m.impl("quantized_lstm_cell_dynamic_fp16", TORCH_FN(lstm_cell_cpu<PackedFp16>));
  m.impl("quantized_gru_cell_dynamic_fp16", TORCH_FN(gru_cell_cpu<PackedFp16>));
  m.impl("quantized_rnn_tanh_cell_dynamic_fp16",
         TORCH_FN((simple_cell_cpu<CellKind::Tanh, PackedFp16>)));
  m.impl("quantized_rnn_relu_cell_dynamic_fp16",
         TORCH_FN((simple_cell_cpu<CellKind::Relu, PackedFp16>)));
  m.impl("make_quantized_cell_params", TORCH_FN(make_cell_params_cpu));
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  using namespace qplugin::ops;
  register_cells(m);
  m.impl("quantized_lstm_layer_dynamic", TORCH_FN(lstm_layer_cpu));
  m.impl("quantized_gru_layer_dynamic", TORCH_FN(gru_layer_cpu));
  m.impl("quantized_lstm_layer_dynamic_fp16", TORCH_FN(lstm_layer_fp16_cpu));
  m.impl("quantized_gru_layer_dynamic_fp16", TORCH_FN(gru_layer_fp16_cpu));
  m.impl("quantized_lstm.input", TORCH_FN(quantized_lstm_input_cpu));
  m.impl("quantized_lstm.data", TORCH_FN(quantized_lstm_data_cpu));
  m.impl("quantized_gru.input", TORCH_FN(quantized_gru_input_cpu));
  m.impl("quantized_gru.data", TORCH_FN(quantized_gru_data_cpu));
}
// Inference only: outputs never require grad (common/non_differentiable.h says why).
TORCH_LIBRARY_IMPL(qplugin, Autograd, m) {
  for (const char* op : {"quantized_lstm_layer_dynamic", "quantized_gru_layer_dynamic",
                         "quantized_lstm_layer_dynamic_fp16", "quantized_gru_layer_dynamic_fp16",
                         "quantized_lstm_cell_dynamic", "quantized_gru_cell_dynamic",
                         "quantized_rnn_tanh_cell_dynamic", "quantized_rnn_relu_cell_dynamic",
                         "quantized_lstm_cell_dynamic_fp16", "quantized_gru_cell_dynamic_fp16",
                         "quantized_rnn_tanh_cell_dynamic_fp16",
                         "quantized_rnn_relu_cell_dynamic_fp16", "quantized_lstm.input",
                         "quantized_lstm.data", "quantized_gru.input", "quantized_gru.data"}) {
    m.impl(op, qplugin::non_differentiable());
  }
}
// A quantized input or state reaches the same cell kernels, which reject it with a clear message.
TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { qplugin::ops::register_cells(m); }
// The makers that take no tensor (or only unused ones) dispatch on nothing: CatchAll.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  using namespace qplugin::ops;
  m.impl("make_quantized_cell_params_dynamic", TORCH_FN(make_cell_params_dynamic_cpu));
  m.impl("make_quantized_cell_params_fp16", TORCH_FN(make_cell_params_fp16_cpu));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_rnn_dynamic_kernel)
