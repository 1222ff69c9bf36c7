// QuantizedCPU (and CPU, for a clear error on float input) kernels of add/add_relu/mul/mul_relu
// in all of PyTorch's overloads (Tensor, out=, Scalar, Scalar2, Scalar_out) and the deprecated
// add_out/add_scalar* names. Schemas: ops/elementwise.cpp. Microkernels: kernels/binary/*.
// Tensor x Tensor: exact round-half-even of (qa - za)*sa (+|*) (qb - zb)*sb / so (PyTorch's float
// path is off by one on 5-10% of elements), broadcasting without materializing the inputs.
// Scalar forms: PyTorch's rules for the output qparams (they are not given), exact values.
// Two doors (docs/pt2.md section 3): the cores take QArg operands (common/qarg.h); the legacy
// overloads wrap quantized tensors, the `.plain` / `.<ov>_plain` overloads (CPU key) wrap plain
// codes with their qparams, and both call the same core (byte-identical on every ISA). On the
// PT2 door the scalar forms return codes only: their output qparams are computed by the route
// (qplugin/pt2/routes/elementwise.py) with the same rule as here.
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <ATen/quantized/Quantizer.h>
#include <torch/library.h>

#include <cmath>
#include <string>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/binary/binary_plan.h"
#include "kernels/binary/exact.h"
#include "kernels/dispatch.h"
#include "ops/binary_ops.h"
#include "ops/quantized_cpu/elementwise_iter.h"
#include "ops/quantized_cpu/path_counts.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kGrain = 32 * 1024;
// Calls this large judge (once per qparams) whether the tie check can be skipped.
constexpr int64_t kNoCheckMin = 65536;

std::string shape_str(at::IntArrayRef s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

std::vector<int64_t> broadcast_shape(const char* op, at::IntArrayRef a, at::IntArrayRef b) {
  const size_t nd = std::max(a.size(), b.size());
  std::vector<int64_t> out(nd);
  for (size_t i = 0; i < nd; ++i) {
    const int64_t da = i < nd - a.size() ? 1 : a[i - (nd - a.size())];
    const int64_t db = i < nd - b.size() ? 1 : b[i - (nd - b.size())];
    TORCH_CHECK(da == db || da == 1 || db == 1, "qplugin::", op,
                ": expected broadcastable shapes, got qa ", shape_str(a), " and qb ", shape_str(b),
                " (dimension ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

QArg legacy_in(const char* op, const char* arg, const at::Tensor& qx) {
  return QArg::quantized(op, arg, qx, {at::kQUInt8, at::kQInt8, at::kQInt32});
}
QArg plain_in(const char* op, const char* arg, const at::Tensor& x, double scale, int64_t zp) {
  return QArg::plain(op, arg, x, scale, zp, {at::kQUInt8, at::kQInt8, at::kQInt32});
}

void check_pair(const char* op, const QArg& qa, const QArg& qb) {
  TORCH_CHECK(qa.scalar_type() == qb.scalar_type(), "qplugin::", op,
              ": expected qb of dtype ", c10::toString(qa.scalar_type()),
              " (the dtype of qa), got ", c10::toString(qb.scalar_type()));
}

// Dense: some permutation of the dims is contiguous (then BinaryIter gives a stride-1 run).
bool is_dense(const at::Tensor& t) {
  return t.is_contiguous() || (t.dim() == 4 && t.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
         (t.dim() == 5 && t.is_contiguous(at::MemoryFormat::ChannelsLast3d));
}

// PyTorch's rule for the output of quantized add/mul: the input's suggested memory format.
at::MemoryFormat format_of(const at::Tensor& t) { return t.suggest_memory_format(); }
at::MemoryFormat format_of(const QArg& t) { return t.suggest_memory_format(); }

// An input made iterable against y: expanded view when its run steps 0 or 1, else a compact copy
// in y's memory format (mixed layouts; PyTorch copies there too).
at::Tensor iterable_input(const at::Tensor& x, const at::Tensor& y, bool is_a) {
  // Common case, no view needed: same shape and strides as the (dense) output.
  if (x.sizes() == y.sizes() && x.strides() == y.strides()) return x;
  at::Tensor e = x.expand(y.sizes());
  BinaryIter it(y, e, e);
  if (is_a ? it.a_ok() : it.b_ok()) return e;
  const auto fmt = format_of(y);
  at::Tensor c = x.dim() == y.dim() ? x.contiguous(fmt) : x.contiguous();
  e = c.expand(y.sizes());
  BinaryIter it2(y, e, e);
  if (it2.a_ok()) return e;
  return e.contiguous(fmt);  // broadcast and mixed layout: materialize (rare)
}

// y: the output (either door), with qparams (so, zo) and quantized dtype qtype.
template <bool kMul, bool kRelu>
void run_binary(const char* op, const QArg& qa, const QArg& qb, const at::Tensor& y, double so,
                int64_t zo, at::ScalarType qtype) {
  const int64_t numel = y.numel();
  if (numel == 0) return;
  const at::Tensor a = iterable_input(qa.tensor(), y, true),
                   b = iterable_input(qb.tensor(), y, false);
  const BinaryIter it(y, a, b);
  TORCH_INTERNAL_ASSERT(it.y_ok() && it.a_ok() && it.b_ok(), "qplugin::", op,
                        ": internal iteration error");
  const double sa = qa.q_scale(), sb = qb.q_scale();
  const int64_t za = qa.q_zero_point(), zb = qb.q_zero_point();
  const auto r = qrange(qtype);
  const int64_t lo = kRelu ? std::max<int64_t>(r.first, zo) : r.first, hi = r.second;
  const int64_t as = it.inner_a_step(), bs = it.inner_b_step();
  if (qtype == at::kQInt32) {
    const int32_t* ap = reinterpret_cast<const int32_t*>(a.data_ptr());
    const int32_t* bp = reinterpret_cast<const int32_t*>(b.data_ptr());
    int32_t* yp = reinterpret_cast<int32_t*>(y.data_ptr());
    at::parallel_for(0, numel, kGrain / 8, [&](int64_t begin, int64_t end) {
      it.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t n) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t A = static_cast<int64_t>(ap[ao + i * as]) - za;
          const int64_t B = static_cast<int64_t>(bp[bo + i * bs]) - zb;
          int64_t q = kMul ? kernels::exact::round_prod_wide(A, B, sa, sb, so)
                           : kernels::exact::round_lin_wide(A, sa, B, sb, so);
          q += zo;
          yp[yo + i] = static_cast<int32_t>(q < lo ? lo : (q > hi ? hi : q));
        }
      });
    });
    return;
  }
  const bool is_signed = qtype == at::kQInt8;
  namespace kb = kernels::binary;
  const kb::ExactCtx ctx(kMul, is_signed, sa, za, sb, zb, so, zo, lo, hi);
  kb::Params p = kMul ? kb::plan_mul(ctx, is_signed, sa, za, sb, zb, so, zo, lo, hi)
                      : kb::plan_add(ctx, is_signed, sa, za, sb, zb, so, zo, lo, hi);
  // Qparams whose earlier calls left many lanes undecided: table lookups (ExactCtx).
  bool check = p.thr < 0.5f;
  if (check) ctx.use_table(&p);
  const auto& t = kb::table();
  // Large calls: skip the per-lane tie check where it never fires wrongly for these qparams
  // (ExactCtx::use_no_check: judged once per qparams, ~65536-pair runs of the kernel).
  if (check && p.table == nullptr && numel >= kNoCheckMin &&
      (is_signed ? ctx.use_no_check<int8_t>(kMul ? t.mul_s8 : t.add_s8, &p)
                 : ctx.use_no_check<uint8_t>(kMul ? t.mul_u8 : t.add_u8, &p))) {
    check = false;
  }
  if (p.table == nullptr) count_path(check ? kBinaryChecked : kBinaryUnchecked);
  // The vector kernels take the scaled rational form whenever the plan found it (binary.h).
  if (kMul && p.table != nullptr && p.rat != nullptr && p.rat->scaled != 0 &&
      kernels::current_isa() != kernels::Isa::kScalar) {
    count_path(kBinaryRationalScaled);
  }
  auto body = [&](auto* ap, auto* bp, auto* yp, auto kern) {
    at::parallel_for(0, numel, kGrain, [&](int64_t begin, int64_t end) {
      it.for_range(begin, end, [&](int64_t yo, int64_t ao, int64_t bo, int64_t n) {
        kern(ap + ao, as, bp + bo, bs, yp + yo, n, p);
      });
    });
  };
  if (is_signed) {
    body(reinterpret_cast<const int8_t*>(a.data_ptr()),
         reinterpret_cast<const int8_t*>(b.data_ptr()), reinterpret_cast<int8_t*>(y.data_ptr()),
         kMul ? t.mul_s8 : t.add_s8);
  } else {
    body(reinterpret_cast<const uint8_t*>(a.data_ptr()),
         reinterpret_cast<const uint8_t*>(b.data_ptr()), reinterpret_cast<uint8_t*>(y.data_ptr()),
         kMul ? t.mul_u8 : t.add_u8);
  }
  if (check && p.table == nullptr) ctx.after_call(numel);
}

template <bool kMul, bool kRelu>
const char* name() {
  return kMul ? (kRelu ? "mul_relu" : "mul") : (kRelu ? "add_relu" : "add");
}

template <bool kMul, bool kRelu>
at::Tensor binary_core(const QArg& qa, const QArg& qb, double scale, int64_t zero_point) {
  const char* op = name<kMul, kRelu>();
  check_pair(op, qa, qb);
  checks::check_output_qparams(op, scale, zero_point, qa.scalar_type());
  const auto shape = broadcast_shape(op, qa.sizes(), qb.sizes());
  checks::check_numel(op, "a broadcast output", shape);  // expanded inputs (checks.h)
  // Output memory format: qa's (as PyTorch's quantized add/mul), when qa has the output's rank.
  const auto fmt = static_cast<size_t>(qa.dim()) == shape.size() ? format_of(qa)
                                                                 : at::MemoryFormat::Contiguous;
  at::Tensor y = new_output(qa, shape, qa.scalar_type(), scale, zero_point, fmt);
  run_binary<kMul, kRelu>(op, qa, qb, y, scale, zero_point, qa.scalar_type());
  return y;
}

template <bool kMul, bool kRelu>
at::Tensor binary(const at::Tensor& qa, const at::Tensor& qb, double scale, int64_t zero_point) {
  const char* op = name<kMul, kRelu>();
  return binary_core<kMul, kRelu>(legacy_in(op, "qa", qa), legacy_in(op, "qb", qb), scale,
                                  zero_point);
}

template <bool kMul, bool kRelu>
at::Tensor binary_plain(const at::Tensor& qa, double qa_scale, int64_t qa_zero_point,
                        const at::Tensor& qb, double qb_scale, int64_t qb_zero_point,
                        double scale, int64_t zero_point) {
  const char* op = name<kMul, kRelu>();
  return binary_core<kMul, kRelu>(plain_in(op, "qa", qa, qa_scale, qa_zero_point),
                                  plain_in(op, "qb", qb, qb_scale, qb_zero_point), scale,
                                  zero_point);
}

// out=: out's own qparams; out must have the broadcast shape. Writes in place when out is dense
// and aliases an input exactly or not at all; otherwise through a temporary.
template <bool kMul, bool kRelu>
at::Tensor binary_out(const at::Tensor& qa, const at::Tensor& qb, at::Tensor out) {
  const char* op =
      kMul ? (kRelu ? "mul_relu.out" : "mul.out") : (kRelu ? "add_relu.out" : "add.out");
  const QArg a = legacy_in(op, "qa", qa), b = legacy_in(op, "qb", qb);
  check_pair(op, a, b);
  checks::check_out(op, out, qa.scalar_type());
  const auto shape = broadcast_shape(op, qa.sizes(), qb.sizes());
  TORCH_CHECK(out.sizes().vec() == shape, "qplugin::", op, ": expected out of shape ",
              shape_str(shape), " (the broadcast shape of qa and qb), got ",
              shape_str(out.sizes()));
  checks::check_output_qparams(op, out.q_scale(), out.q_zero_point(), out.scalar_type());
  at::assert_no_internal_overlap(out);
  bool direct = is_dense(out);
  for (const at::Tensor* in : {&qa, &qb}) {
    const auto st = at::get_overlap_status(out, *in);
    if (st == at::MemOverlapStatus::Partial ||
        (st == at::MemOverlapStatus::Full && in->sizes() != out.sizes())) {
      direct = false;
    }
  }
  if (direct) {
    run_binary<kMul, kRelu>(op, a, b, out, out.q_scale(), out.q_zero_point(), out.scalar_type());
    return out;
  }
  at::Tensor tmp = at::_empty_affine_quantized(
      out.sizes(), out.options(), out.q_scale(),
      out.q_zero_point(), out.suggest_memory_format());
  run_binary<kMul, kRelu>(op, a, b, tmp, out.q_scale(), out.q_zero_point(), out.scalar_type());
  out.copy_(tmp);
  return out;
}

// ---- Tensor x Scalar ------------------------------------------------------------------------

// y = g(x) code by code into a new tensor of qa's dtype with qparams (scale, zero_point), over a
// dense copy of x in its memory format: 8-bit codes through a 256-entry table of g (raw byte ->
// raw byte, codes read in qa's dtype), qint32 codes through g itself.
template <typename G>
at::Tensor map_codes(const QArg& qa, double scale, int64_t zero_point, G g) {
  const auto fmt = format_of(qa);
  const at::Tensor x = qa.tensor().contiguous(fmt);
  at::Tensor y = new_output(qa, qa.sizes(), qa.scalar_type(), scale, zero_point, fmt);
  const int64_t n = x.numel();
  if (n == 0) return y;
  if (qa.scalar_type() == at::kQInt32) {
    const int32_t* xp = reinterpret_cast<const int32_t*>(x.data_ptr());
    int32_t* yp = reinterpret_cast<int32_t*>(y.data_ptr());
    at::parallel_for(0, n, kGrain / 8, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) yp[i] = static_cast<int32_t>(g(xp[i]));
    });
    return y;
  }
  const bool is_signed = qa.scalar_type() == at::kQInt8;
  uint8_t table[256];
  for (int raw = 0; raw < 256; ++raw) {
    const int64_t q = is_signed ? static_cast<int8_t>(raw) : raw;
    table[raw] = static_cast<uint8_t>(g(q) & 0xFF);
  }
  const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());
  uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
  const auto& k = kernels::table();
  at::parallel_for(0, n, 2 * kGrain,
                   [&](int64_t b, int64_t e) { k.lut8(xp + b, yp + b, e - b, table); });
  return y;
}

double scalar_value(const char* op, const c10::Scalar& b) {
  const double c = b.toDouble();
  TORCH_CHECK(std::isfinite(c), "qplugin::", op, ": expected a finite scalar, got ", c);
  return c;
}

// y = qa + c (kMul false) or qa * c (kMul true) with PyTorch's rules for the output qparams, ReLU
// fused when kRelu.
template <bool kMul, bool kRelu>
at::Tensor scalar_impl(const char* op, const QArg& qa, const c10::Scalar& other) {
  const double c = scalar_value(op, other);
  const double s = qa.q_scale();
  const int64_t z = qa.q_zero_point();
  const auto r = qrange(qa.scalar_type());
  const int64_t qmin = r.first, qmax = r.second;
  if constexpr (!kMul) {
    // PyTorch's add_scalar rule: c_q = round(c / s); if z - c_q fits the dtype, the codes are
    // kept and the zero point becomes z - c_q; otherwise the range is rescaled so that it still
    // fits:
    //   z - c_q < qmin: s' = (qmax - (z - c_q)) / (qmax - qmin) * s, z' = qmin
    //   z - c_q > qmax: s' = ((z - c_q) - qmin) / (qmax - qmin) * s, z' = qmax
    // and y = z' + round((q - z + c_q) * s / s') (exact here; PyTorch rounds in float).
    const double cq_d = std::nearbyint(c / s);
    TORCH_CHECK(std::fabs(cq_d) < 9.0e18, "qplugin::", op,
                ": expected a scalar of magnitude below ", "2^63 * scale, got ", c);
    const int64_t c_q = static_cast<int64_t>(cq_d);
    double s2;
    int64_t z2;
    bool requant = true;
    if (qmin > z - c_q) {
      s2 = (static_cast<double>(qmax) - (z - c_q)) / (static_cast<double>(qmax) - qmin) * s;
      z2 = qmin;
    } else if (qmax < z - c_q) {
      s2 = (static_cast<double>(z - c_q) - qmin) / (static_cast<double>(qmax) - qmin) * s;
      z2 = qmax;
    } else {
      s2 = s;
      z2 = z - c_q;
      requant = false;
    }
    const int64_t lo = kRelu ? z2 : qmin;
    return map_codes(qa, s2, z2, [&](int64_t q) -> int64_t {
      int64_t v = q;
      if (requant) {
        v = z2 + kernels::exact::round_ratio(q - z + c_q, s, s2);
      }
      return v < lo ? lo : (v > qmax ? qmax : v);
    });
  } else {
    // PyTorch's mul_scalar rule (no arithmetic on the codes): c > 0: codes kept, s' = c*s;
    // c == 0: all codes 0 with (1.0, 0); c < 0: q' = qmax + qmin - q, s' = |c|*s,
    // z' = qmax + qmin - z.
    double s2;
    int64_t z2;
    int mode;  // 1 keep, 0 zero, -1 negate
    if (c > 0.0) {
      s2 = c * s;
      z2 = z;
      mode = 1;
    } else if (c == 0.0) {
      s2 = 1.0;
      z2 = 0;
      mode = 0;
    } else {
      s2 = std::fabs(c) * s;
      z2 = qmax - (z - qmin);
      mode = -1;
    }
    TORCH_CHECK(std::isfinite(s2) && s2 > 0.0, "qplugin::", op,
                ": expected the output scale |scalar| * scale to be finite and positive, got ", s2,
                " (scalar ", c, ", scale ", s, ")");
    const int64_t lo = kRelu ? z2 : qmin;
    return map_codes(qa, s2, z2, [&](int64_t q) -> int64_t {
      int64_t v = mode == 1 ? q : (mode == 0 ? 0 : qmax + qmin - q);
      if (kRelu && mode != 0) v = std::max(v, lo);
      return v;
    });
  }
}

template <bool kMul, bool kRelu>
const char* scalar_name() {
  return kMul ? (kRelu ? "mul_relu.Scalar" : "mul.Scalar")
              : (kRelu ? "add_relu.Scalar" : "add.Scalar");
}

template <bool kMul, bool kRelu>
at::Tensor scalar_core(const char* op, const QArg& qa, const c10::Scalar& b) {
  return scalar_impl<kMul, kRelu>(op, qa, b);
}

template <bool kMul, bool kRelu>
at::Tensor scalar_op(const at::Tensor& qa, const c10::Scalar& b) {
  const char* op = scalar_name<kMul, kRelu>();
  return scalar_core<kMul, kRelu>(op, legacy_in(op, "qa", qa), b);
}

template <bool kMul, bool kRelu>
at::Tensor scalar2_op(const c10::Scalar& b, const at::Tensor& qa) {
  return scalar_op<kMul, kRelu>(qa, b);
}

// PT2 door of .Scalar / .Scalar2 / <base>_scalar[_relu]: codes only (the route computes the
// output qparams with the same rule).
template <bool kMul, bool kRelu>
at::Tensor scalar_plain(const at::Tensor& qa, double qa_scale, int64_t qa_zero_point,
                        const c10::Scalar& b) {
  const char* op = scalar_name<kMul, kRelu>();
  return scalar_core<kMul, kRelu>(op, plain_in(op, "qa", qa, qa_scale, qa_zero_point), b);
}

template <bool kMul, bool kRelu>
at::Tensor scalar2_plain(const c10::Scalar& b, const at::Tensor& qa, double qa_scale,
                         int64_t qa_zero_point) {
  return scalar_plain<kMul, kRelu>(qa, qa_scale, qa_zero_point, b);
}

// out= of the scalar forms: like PyTorch, out takes the computed qparams.
template <bool kMul, bool kRelu>
at::Tensor scalar_out_op(const at::Tensor& qa, const c10::Scalar& b, at::Tensor out) {
  const char* op = kMul ? (kRelu ? "mul_relu.Scalar_out" : "mul.Scalar_out")
                        : (kRelu ? "add_relu.Scalar_out" : "add.Scalar_out");
  const QArg a = legacy_in(op, "qa", qa);
  checks::check_out(op, out, qa.scalar_type());
  TORCH_CHECK(out.sizes() == qa.sizes(), "qplugin::", op, ": expected out of shape ",
              shape_str(qa.sizes()), " (the shape of qa), got ", shape_str(out.sizes()));
  at::Tensor res = scalar_impl<kMul, kRelu>(op, a, b);
  out.copy_(res);  // quantized copy_ also takes res's qparams
  return out;
}

c10::Scalar scalar_of(const char* op, const at::Tensor& b) {
  TORCH_CHECK(!b.is_quantized() && b.numel() == 1, "qplugin::", op,
              ": expected b to be a one-element (non-quantized) tensor, got ",
              b.is_quantized() ? "a quantized tensor" : "a tensor", " of shape ",
              shape_str(b.sizes()));
  return b.item();
}

template <bool kMul, bool kRelu>
at::Tensor scalar_tensor_op(const at::Tensor& qa, const at::Tensor& b) {
  const char* op = kMul ? (kRelu ? "mul_scalar_relu.Tensor" : "mul_scalar.Tensor")
                        : (kRelu ? "add_scalar_relu.Tensor" : "add_scalar.Tensor");
  return scalar_op<kMul, kRelu>(qa, scalar_of(op, b));
}

template <bool kMul, bool kRelu>
at::Tensor scalar_tensor_plain(const at::Tensor& qa, double qa_scale, int64_t qa_zero_point,
                               const at::Tensor& b) {
  const char* op = kMul ? (kRelu ? "mul_scalar_relu.Tensor" : "mul_scalar.Tensor")
                        : (kRelu ? "add_scalar_relu.Tensor" : "add_scalar.Tensor");
  const QArg a = plain_in(op, "qa", qa, qa_scale, qa_zero_point);
  return scalar_core<kMul, kRelu>(scalar_name<kMul, kRelu>(), a, scalar_of(op, b));
}

template <bool kMul, bool kRelu>
at::Tensor scalar_tensor_out_op(const at::Tensor& qa, const at::Tensor& b, at::Tensor out) {
  const char* op = kMul ? (kRelu ? "mul_scalar_relu_out.Tensor" : "mul_scalar_out.Tensor")
                        : (kRelu ? "add_scalar_relu_out.Tensor" : "add_scalar_out.Tensor");
  return scalar_out_op<kMul, kRelu>(qa, scalar_of(op, b), out);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Registration: each op name with PyTorch's overloads (see ops/elementwise.cpp) and its PT2
// door: <op>.plain, <op>.Scalar_plain, <op>.Scalar2_plain; the Tensor x Scalar forms (.Scalar,
// .Scalar_out, .Scalar_plain) through QPLUGIN_IMPL_SCALAR_FORMS (ops/binary_ops.h).
#define QPLUGIN_BINARY_FAMILY(NAME, MUL, RELU)                                      \
  m.impl(NAME, TORCH_FN((qplugin::ops::binary<MUL, RELU>)));                       \
  m.impl(NAME ".out", TORCH_FN((qplugin::ops::binary_out<MUL, RELU>)));            \
  m.impl(NAME "_out", TORCH_FN((qplugin::ops::binary_out<MUL, RELU>)));            \
  m.impl(NAME ".Scalar2", TORCH_FN((qplugin::ops::scalar2_op<MUL, RELU>)));        \
  QPLUGIN_IMPL_SCALAR_FORMS(NAME, MUL, RELU, ".Scalar", ".Scalar_out", ".Scalar_plain") \
  m.impl(NAME ".plain", TORCH_FN((qplugin::ops::binary_plain<MUL, RELU>)));        \
  m.impl(NAME ".Scalar2_plain", TORCH_FN((qplugin::ops::scalar2_plain<MUL, RELU>)));

// The deprecated scalar names: <base>_scalar[_relu][_out][.Tensor] and the PT2 door:
// <base>_scalar[_relu].plain and .Tensor_plain (the plain names: QPLUGIN_IMPL_SCALAR_FORMS).
#define QPLUGIN_SCALAR_FAMILY(NAME, MUL, RELU)                                             \
  QPLUGIN_IMPL_SCALAR_FORMS(NAME, MUL, RELU, "", "_out", ".plain")                         \
  m.impl(NAME ".Tensor", TORCH_FN((qplugin::ops::scalar_tensor_op<MUL, RELU>)));          \
  m.impl(NAME "_out.Tensor", TORCH_FN((qplugin::ops::scalar_tensor_out_op<MUL, RELU>)));  \
  m.impl(NAME ".Tensor_plain", TORCH_FN((qplugin::ops::scalar_tensor_plain<MUL, RELU>)));

namespace {
void register_binary(torch::Library& m) {
  QPLUGIN_BINARY_OPS(QPLUGIN_BINARY_FAMILY)
  QPLUGIN_SCALAR_OPS(QPLUGIN_SCALAR_FAMILY)
}
}  // namespace

// The plain overloads are registered for QuantizedCPU too: a quantized tensor passed to one gets
// QArg::plain's "expected a plain tensor of codes" rather than the dispatcher's error.
QPLUGIN_IMPL_QUANTIZED_AND_CPU(register_binary(m);)

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_binary_kernel)
