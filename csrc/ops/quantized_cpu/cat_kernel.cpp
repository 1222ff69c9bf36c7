// QuantizedCPU (and CPU, for a clear error on float input) kernels of cat/cat_relu (+ out=).
// Schemas: ops/elementwise.cpp. In the output's memory order the result is `outer` rows, each the
// concatenation of every input's row; inputs whose qparams equal the output's are copied byte for
// byte (memcpy; relu: a clamp at the zero point), others go through an exact 256-entry
// requantization table (qint32: exact per element), computed instead of looked up (pw_affine8)
// where the tier has it and the plan reproduces the table on every code (unary_lut.h).
// Two doors (docs/pt2.md section 3): the core takes the inputs as QArg (common/qarg.h); cat /
// cat_relu wrap quantized tensors, cat.plain / cat_relu.plain (CPU key) wrap plain codes with
// their scales and zero points, and both call the same core (byte-identical on every ISA).
#include <ATen/ATen.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/binary/exact.h"
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/registration.h"
#include "ops/quantized_cpu/unary_lut.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

constexpr int64_t kGrain = 64 * 1024;

std::vector<int64_t> memory_order(int64_t nd, at::MemoryFormat fmt) {
  std::vector<int64_t> order;
  if (fmt == at::MemoryFormat::ChannelsLast || fmt == at::MemoryFormat::ChannelsLast3d) {
    order.push_back(0);
    for (int64_t d = 2; d < nd; ++d) order.push_back(d);
    order.push_back(1);
  } else {
    for (int64_t d = 0; d < nd; ++d) order.push_back(d);
  }
  return order;
}

struct Segment {
  const uint8_t* src;   // input data (contiguous in the output's memory format)
  int64_t width;        // elements of this input per output row
  int64_t offset;       // column offset in the output row
  int mode;             // 0 copy, 1 clamp (relu, same qparams), 2 table / requantize
  uint8_t table[256];
  bool computed = false;  // mode 2, 8-bit: `plan` gives the table's bytes (pw_affine8)
  kernels::PwAffine8 plan{};
  double scale;
  int64_t zp;
};

// y: the output (either door) with qparams (so, zo) and quantized dtype st.
template <bool kRelu>
void cat_into(const char* op, const std::vector<QArg>& xs, int64_t dim, at::Tensor& y, double so,
              int64_t zo, at::ScalarType st) {
  const int64_t nd = y.dim();
  const auto fmt = y.is_contiguous() ? at::MemoryFormat::Contiguous : y.suggest_memory_format();
  const auto order = memory_order(nd, fmt);
  int64_t k = 0;
  while (order[k] != dim) ++k;
  int64_t outer = 1, tail = 1;
  for (int64_t j = 0; j < k; ++j) outer *= y.size(order[j]);
  for (int64_t j = k + 1; j < nd; ++j) tail *= y.size(order[j]);
  const size_t esize = st == at::kQInt32 ? 4 : 1;
  const auto r = qrange(st);
  const int64_t lo = kRelu ? std::max<int64_t>(r.first, zo) : r.first, hi = r.second;
  const bool is_signed = st == at::kQInt8;

  std::vector<at::Tensor> keep;
  std::vector<Segment> segs;
  int64_t total = 0;
  for (const auto& x : xs) {
    const int64_t width = x.size(dim) * tail;
    if (width == 0) continue;
    keep.push_back(x.tensor().contiguous(fmt));
    Segment s;
    s.src = reinterpret_cast<const uint8_t*>(keep.back().data_ptr());
    s.width = width;
    s.offset = total;
    s.scale = x.q_scale();
    s.zp = x.q_zero_point();
    const bool same = s.scale == so && s.zp == zo;
    s.mode = same ? (kRelu && lo > r.first ? 1 : 0) : 2;
    if (s.mode == 2 && st != at::kQInt32) {
      // The table, cached per thread under the requantization's parameters (256 exact ratios
      // cost ~10 us a call); with enough codes, its computed form: y = zo + (q - zp) * s / so,
      // rounded and clamped, confirmed on all 256 codes (plan_affine).
      unary::TableKey key;
      key.op = "cat";
      key.dtype = static_cast<int>(st);
      const double kv[6] = {s.scale, static_cast<double>(s.zp), so, static_cast<double>(zo),
                            static_cast<double>(lo), static_cast<double>(hi)};
      std::copy(kv, kv + 6, key.v);
      auto& cache = unary::table_cache();
      int slot = cache.find(key, s.table);
      if (slot < 0) {
        for (int raw = 0; raw < 256; ++raw) {
          const int64_t q = is_signed ? static_cast<int8_t>(raw) : raw;
          int64_t v = zo + kernels::exact::round_ratio(q - s.zp, s.scale, so);
          v = v < lo ? lo : (v > hi ? hi : v);
          s.table[raw] = static_cast<uint8_t>(v & 0xFF);
        }
        slot = cache.put(key, s.table);
      }
      const auto& kt = kernels::table();
      if (kt.pw_affine8 != nullptr && outer * width >= unary::kComputeMin) {
        unary::AffineHint h;
        h.a1 = s.scale / so;
        h.b1 = static_cast<double>(zo);
        h.c = s.zp;
        s.computed = cache.plan(slot, kt, is_signed, h, &s.plan);
      }
      unary::count_map(s.computed, s.plan);
    }
    segs.push_back(s);
    total += width;
  }
  if (total == 0 || outer == 0) return;
  uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
  const auto& kt = kernels::table();
  auto piece = [&](const Segment& s, int64_t row, int64_t c0, int64_t n) {
    const int64_t src_off = row * s.width + c0, dst_off = row * total + s.offset + c0;
    if (s.mode == 0) {
      std::memcpy(yp + dst_off * esize, s.src + src_off * esize, static_cast<size_t>(n) * esize);
      return;
    }
    if (st == at::kQInt32) {
      const int32_t* src = reinterpret_cast<const int32_t*>(s.src) + src_off;
      int32_t* dst = reinterpret_cast<int32_t*>(yp) + dst_off;
      for (int64_t i = 0; i < n; ++i) {
        int64_t v = s.mode == 1 ? src[i]
                                : zo + kernels::exact::round_ratio(src[i] - s.zp, s.scale, so);
        dst[i] = static_cast<int32_t>(v < lo ? lo : (v > hi ? hi : v));
      }
      return;
    }
    if (s.mode == 1) {
      if (is_signed) {
        kt.s8.clamp(reinterpret_cast<const int8_t*>(s.src) + src_off,
                    reinterpret_cast<int8_t*>(yp) + dst_off, n, static_cast<int8_t>(lo),
                    static_cast<int8_t>(hi));
      } else {
        kt.u8.clamp(s.src + src_off, yp + dst_off, n, static_cast<uint8_t>(lo),
                    static_cast<uint8_t>(hi));
      }
      return;
    }
    if (s.computed) {
      kt.pw_affine8(s.src + src_off, yp + dst_off, n, s.plan);
    } else {
      kt.lut8(s.src + src_off, yp + dst_off, n, s.table);
    }
  };
  const int64_t numel = outer * total;
  if (total >= kGrain / static_cast<int64_t>(esize) || outer == 1) {
    // Long rows: split the flat output range, pieces may start inside a segment.
    auto range = [&](int64_t begin, int64_t end) {
      int64_t p = begin;
      while (p < end) {
        const int64_t row = p / total, col = p % total;
        size_t i = 0;
        while (col >= segs[i].offset + segs[i].width) ++i;
        const int64_t c0 = col - segs[i].offset;
        const int64_t n = std::min(segs[i].width - c0, end - p);
        piece(segs[i], row, c0, n);
        p += n;
      }
    };
    if (numel * static_cast<int64_t>(esize) < kGrain) {
      range(0, numel);
    } else {
      at::parallel_for(0, numel, kGrain / static_cast<int64_t>(esize), range);
    }
    return;
  }
  // Short rows (e.g. channels-last cat on C): whole rows per task, no per-piece index math.
  // A task's block of rows goes segment by segment; a requantized 8-bit segment is looked up over
  // the whole block in one lut8_rows call, which loads its table once (a vector lookup per short
  // piece would rebuild the AVX2 table registers each time; before lut8_rows the AVX2 tier looked
  // each such input up whole into a scratch copy and then copied it). Same table, same bytes.
  // nrows rows of nb bytes from src (contiguous) to dst (row stride ys): 16-byte moves inline
  // (a libc memcpy call per short row cost about as much as the row), the row's last 16 bytes
  // again for the tail.
  auto copy_rows = [](const uint8_t* src, int64_t nb, uint8_t* dst, int64_t ys, int64_t nrows) {
    for (int64_t row = 0; row < nrows; ++row, src += nb, dst += ys) {
      if (nb < 16) {
        std::memcpy(dst, src, static_cast<size_t>(nb));
        continue;
      }
      int64_t i = 0;
      for (; i + 16 <= nb; i += 16) std::memcpy(dst + i, src + i, 16);
      if (i < nb) std::memcpy(dst + nb - 16, src + nb - 16, 16);
    }
  };
  auto rows = [&](int64_t r0, int64_t r1) {
    for (const auto& sg : segs) {
      if (sg.mode == 2 && st != at::kQInt32 && sg.computed) {
        // Computed: rows of the (contiguous) input in blocks of up to kBlock bytes, one
        // pw_affine8 call per block into an L1 buffer, then copied row by row. Against one call
        // per short row this measured 0.074 -> 0.072-0.073 ms on a channels-last cat of
        // 2 x 2 x 128 x 28 x 28 (Zen 1), i.e. within noise; it bounds the call count for
        // narrower rows.
        constexpr int64_t kBlock = 8192;
        alignas(64) uint8_t buf[kBlock];
        const int64_t per = std::max<int64_t>(1, kBlock / sg.width);
        for (int64_t row = r0; row < r1; row += per) {
          const int64_t nr = std::min(per, r1 - row);
          uint8_t* dst = yp + row * total + sg.offset;
          if (sg.width > kBlock) {
            kt.pw_affine8(sg.src + row * sg.width, dst, sg.width, sg.plan);
            continue;
          }
          kt.pw_affine8(sg.src + row * sg.width, buf, nr * sg.width, sg.plan);
          copy_rows(buf, sg.width, dst, total, nr);
        }
      } else if (sg.mode == 2 && st != at::kQInt32) {
        kt.lut8_rows(sg.src + r0 * sg.width, sg.width, yp + r0 * total + sg.offset, total,
                     sg.width, r1 - r0, sg.table);
      } else if (sg.mode == 0) {
        const int64_t nb = sg.width * static_cast<int64_t>(esize);
        copy_rows(sg.src + r0 * nb, nb, yp + (r0 * total + sg.offset) * static_cast<int64_t>(esize),
                  total * static_cast<int64_t>(esize), r1 - r0);
      } else {
        for (int64_t row = r0; row < r1; ++row) piece(sg, row, 0, sg.width);
      }
    }
  };
  const int64_t grain = std::max<int64_t>(1, kGrain / (total * static_cast<int64_t>(esize)));
  if (outer <= grain) {
    rows(0, outer);
  } else {
    at::parallel_for(0, outer, grain, rows);
  }
}

struct CatPlan {
  std::vector<QArg> xs;
  std::vector<int64_t> shape;
  int64_t dim;
  at::MemoryFormat fmt;
};

// Per-channel inputs: the message keeps PyTorch's wording ("Only per-tensor quantization is
// supported in 'cat'!") after qplugin's form, so tests matching PyTorch's regex pass.
void check_per_tensor(const char* op, const std::string& nm, const at::Tensor& x) {
  if (!x.is_quantized()) return;  // check_quantized_input names the non-quantized case
  TORCH_CHECK(x.qscheme() == at::kPerTensorAffine, "qplugin::", op, ": expected ", nm,
              " quantized per tensor (torch.per_tensor_affine), got ",
              c10::toString(x.qscheme()), "; only per-tensor quantization is supported in 'cat'");
}

void check_non_empty(const char* op, size_t n) {
  TORCH_CHECK(n > 0, "qplugin::", op, ": expected a non-empty list of tensors, got an empty list");
}

// The legacy door's inputs: per-tensor quantized tensors.
std::vector<QArg> legacy_inputs(const char* op, const c10::List<at::Tensor>& qxs) {
  check_non_empty(op, qxs.size());
  std::vector<QArg> xs;
  for (size_t i = 0; i < qxs.size(); ++i) {
    const std::string nm = "qx[" + std::to_string(i) + "]";
    const at::Tensor x = qxs.get(i);
    check_per_tensor(op, nm, x);
    xs.push_back(QArg::quantized(op, nm.c_str(), x, {at::kQUInt8, at::kQInt8, at::kQInt32}));
  }
  return xs;
}

// The PT2 door's inputs: plain codes with one scale and zero point each.
std::vector<QArg> plain_inputs(const char* op, const c10::List<at::Tensor>& xs_,
                               at::ArrayRef<double> scales, at::IntArrayRef zero_points) {
  check_non_empty(op, xs_.size());
  TORCH_CHECK(scales.size() == xs_.size() && zero_points.size() == xs_.size(), "qplugin::", op,
              ".plain: expected one qx_scales and qx_zero_points entry per tensor (", xs_.size(),
              "), got ", scales.size(), " scales and ", zero_points.size(), " zero points");
  std::vector<QArg> xs;
  for (size_t i = 0; i < xs_.size(); ++i) {
    const std::string nm = "qx[" + std::to_string(i) + "]";
    // Mixed code dtypes are named as such before the qparams are checked against the dtype.
    const at::Tensor& xi = xs_.get(i);
    const at::Tensor& x0 = xs_.get(0);
    TORCH_CHECK(i == 0 || xi.is_quantized() || x0.is_quantized() ||
                    xi.scalar_type() == x0.scalar_type(),
                "qplugin::", op, ".plain: expected ", nm, " of dtype ",
                c10::toString(x0.scalar_type()), " (the dtype of qx[0]; codes of one dtype), got ",
                c10::toString(xi.scalar_type()));
    xs.push_back(QArg::plain(op, nm.c_str(), xs_.get(i), scales[i], zero_points[i],
                             {at::kQUInt8, at::kQInt8, at::kQInt32}));
  }
  return xs;
}

CatPlan plan_cat(const char* op, std::vector<QArg> xs, int64_t dim) {
  CatPlan p;
  p.xs = std::move(xs);
  const auto& x0 = p.xs[0];
  const int64_t nd = x0.dim();
  TORCH_CHECK(nd > 0, "qplugin::", op, ": expected tensors with at least one dimension, got a "
              "0-dimensional qx[0]");
  TORCH_CHECK(dim >= -nd && dim < nd, "qplugin::", op, ": expected dim in [", -nd, ", ", nd - 1,
              "] (qx[0] has ", nd, " dimensions), got ", dim);
  p.dim = dim < 0 ? dim + nd : dim;
  p.shape = x0.sizes().vec();
  p.shape[p.dim] = 0;
  auto fmt0 = x0.suggest_memory_format();
  bool same_fmt = true;
  for (size_t i = 0; i < p.xs.size(); ++i) {
    const auto& x = p.xs[i];
    const std::string nm = "qx[" + std::to_string(i) + "]";
    TORCH_CHECK(x.scalar_type() == x0.scalar_type(), "qplugin::", op, ": expected ", nm,
                " of dtype ", c10::toString(x0.scalar_type()), " (the dtype of qx[0]), got ",
                c10::toString(x.scalar_type()));
    TORCH_CHECK(x.dim() == nd, "qplugin::", op, ": expected ", nm, " with ", nd,
                " dimensions (like qx[0]), got ", x.dim());
    for (int64_t d = 0; d < nd; ++d) {
      if (d == p.dim) continue;
      TORCH_CHECK(x.size(d) == x0.size(d), "qplugin::", op, ": expected ", nm, " of size ",
                  x0.size(d), " at dimension ", d, " (like qx[0]; only dimension ", p.dim,
                  " may differ), got ", x.size(d));
    }
    // Checked (checks.h): expanded (stride-0) inputs can carry sizes near INT64_MAX.
    p.shape[p.dim] = checks::add_size(op, "the concatenated size", p.shape[p.dim], x.size(p.dim));
    same_fmt = same_fmt && x.suggest_memory_format() == fmt0;
  }
  // PyTorch's cat rule: the inputs' common suggested memory format, else contiguous.
  p.fmt = same_fmt ? fmt0 : at::MemoryFormat::Contiguous;
  checks::check_numel(op, "an output", p.shape);
  return p;
}

template <bool kRelu>
at::Tensor cat_core(const char* op, std::vector<QArg> xs, int64_t dim,
                    std::optional<double> scale, std::optional<int64_t> zero_point) {
  CatPlan p = plan_cat(op, std::move(xs), dim);
  const double s = scale.has_value() ? *scale : p.xs[0].q_scale();
  const int64_t z = zero_point.has_value() ? *zero_point : p.xs[0].q_zero_point();
  const auto qtype = p.xs[0].scalar_type();
  checks::check_output_qparams(op, s, z, qtype);
  at::Tensor y = new_output(p.xs[0], p.shape, qtype, s, z, p.fmt);
  cat_into<kRelu>(op, p.xs, p.dim, y, s, z, qtype);
  return y;
}

template <bool kRelu>
at::Tensor cat_op(const c10::List<at::Tensor>& qxs, int64_t dim, std::optional<double> scale,
                  std::optional<int64_t> zero_point) {
  const char* op = kRelu ? "cat_relu" : "cat";
  return cat_core<kRelu>(op, legacy_inputs(op, qxs), dim, scale, zero_point);
}

template <bool kRelu>
at::Tensor cat_plain(const c10::List<at::Tensor>& qx, at::ArrayRef<double> qx_scales,
                     at::IntArrayRef qx_zero_points, int64_t dim, double scale,
                     int64_t zero_point) {
  const char* op = kRelu ? "cat_relu" : "cat";
  return cat_core<kRelu>(op, plain_inputs(op, qx, qx_scales, qx_zero_points), dim, scale,
                         zero_point);
}

template <bool kRelu>
at::Tensor cat_out_op(const c10::List<at::Tensor>& qxs, int64_t dim, at::Tensor out) {
  const char* op = kRelu ? "cat_relu_out" : "cat_out";
  CatPlan p = plan_cat(op, legacy_inputs(op, qxs), dim);
  const auto dtype = p.xs[0].scalar_type();
  checks::check_out(op, out, dtype);
  TORCH_CHECK(out.sizes().vec() == p.shape, "qplugin::", op, ": expected out of shape ",
              at::IntArrayRef(p.shape), ", got ", out.sizes());
  checks::check_output_qparams(op, out.q_scale(), out.q_zero_point(), dtype);
  bool direct = out.is_contiguous() ||
                (out.dim() == 4 && out.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
                (out.dim() == 5 && out.is_contiguous(at::MemoryFormat::ChannelsLast3d));
  for (const auto& x : p.xs) {
    if (at::get_overlap_status(out, x.tensor()) != at::MemOverlapStatus::No) direct = false;
  }
  if (direct) {
    cat_into<kRelu>(op, p.xs, p.dim, out, out.q_scale(), out.q_zero_point(), dtype);
    return out;
  }
  at::Tensor y = at::_empty_affine_quantized(p.shape, out.options(), out.q_scale(),
                                             out.q_zero_point(), p.fmt);
  cat_into<kRelu>(op, p.xs, p.dim, y, out.q_scale(), out.q_zero_point(), dtype);
  out.copy_(y);
  return out;
}

// The ops, then (plain_too) their PT2 doors (`.plain`, plain codes).
void register_cat(torch::Library& m, bool plain_too) {
  QPLUGIN_IMPL_RELU_PAIR("cat", "", cat_op)
  QPLUGIN_IMPL_RELU_PAIR("cat", "_out", cat_out_op)
  if (!plain_too) return;
  QPLUGIN_IMPL_RELU_PAIR("cat", ".plain", cat_plain)
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

// QuantizedCPU gets the PT2 door too, so that a quantized tensor passed to it gets QArg::plain's
// "expected a plain tensor of codes" rather than the dispatcher's error.
QPLUGIN_IMPL_QUANTIZED_AND_CPU(qplugin::ops::register_cat(m, /*plain_too=*/true);)
// An empty list has no tensor to dispatch on: this kernel gives it the op's own error.
TORCH_LIBRARY_IMPL(qplugin, CompositeExplicitAutograd, m) {
  qplugin::ops::register_cat(m, /*plain_too=*/false);
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_cat_kernel)
