// One quantized operand, whichever front door it came through (docs/pt2.md section 3).
//
//   legacy door  a quint8/qint8/qint32 tensor (QuantizedCPU key): qparams read from the tensor
//   PT2 door     plain uint8/int8/int32 codes (CPU key) + explicit scale and zero point
//
// An op's impl is written once against QArg (validate, read qparams, allocate the output with
// new_output, call the kernel on raw pointers); the QuantizedCPU impl wraps its tensors with
// QArg::quantized, the `.plain` overload with QArg::plain, and both call the same core. The
// bytes the kernel sees and writes are the same on both doors (quint8 <-> uint8, qint8 <-> int8,
// qint32 <-> int32 share their storage layout), so the two doors are byte-identical by
// construction, on every ISA.
//
// The accessors mirror at::Tensor's quantized API (q_scale, q_zero_point, scalar_type returning
// the *quantized* dtype), so converting an impl is mostly replacing `const at::Tensor& qx` by
// `const QArg& qx` and `at::_empty_affine_quantized(...)` by `new_output(qx, ...)`.
// Changes with: docs/pt2.md, tests/pt2 (the byte-identity tests across doors).
#pragma once
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>

#include "common/checks.h"
#include "common/quant_utils.h"

namespace qplugin {

// Quantized dtype <-> plain code dtype.
inline at::ScalarType plain_dtype_of(at::ScalarType qtype) {
  switch (qtype) {
    case at::kQUInt8: return at::kByte;
    case at::kQInt8: return at::kChar;
    case at::kQInt32: return at::kInt;
    default: TORCH_INTERNAL_ASSERT(false, "qplugin: plain_dtype_of a non-quantized dtype ", qtype);
  }
  return at::kByte;
}

// The quantized dtype plain codes of `dtype` stand for; Undefined when there is none.
inline at::ScalarType qtype_of_plain(at::ScalarType dtype) {
  switch (dtype) {
    case at::kByte: return at::kQUInt8;
    case at::kChar: return at::kQInt8;
    case at::kInt: return at::kQInt32;
    default: return at::ScalarType::Undefined;
  }
}

class QArg {
 public:
  // Legacy door: a per-tensor affine quantized CPU tensor of one of `types` (validated).
  static QArg quantized(const char* op, const char* arg, const at::Tensor& qx,
                        std::initializer_list<at::ScalarType> types) {
    checks::check_quantized_input(op, arg, qx, types);
    return QArg(qx, qx.q_scale(), qx.q_zero_point(), qx.scalar_type(), /*plain=*/false);
  }

  // PT2 door: plain codes whose dtype stands for one of the quantized `types` (uint8 for quint8,
  // int8 for qint8, int32 for qint32), with their scale and zero point (validated: finite
  // positive scale with a finite float reciprocal, zero point in the dtype's range).
  static QArg plain(const char* op, const char* arg, const at::Tensor& x, double scale,
                    int64_t zero_point, std::initializer_list<at::ScalarType> types) {
    std::string want;
    for (auto t : types) {
      if (!want.empty()) want += " or ";
      want += c10::toString(plain_dtype_of(t));
    }
    TORCH_CHECK(!x.is_quantized(), "qplugin::", op, ".plain: expected ", arg,
                " to be a plain tensor of codes (", want, "), got a quantized ",
                c10::toString(x.scalar_type()), " tensor; use qplugin::", op,
                " for quantized tensors, or pass x.int_repr() with its qparams");
    const at::ScalarType qt = qtype_of_plain(x.scalar_type());
    bool ok = false;
    for (auto t : types) ok = ok || t == qt;
    TORCH_CHECK(ok, "qplugin::", op, ".plain: expected ", arg, " of dtype ", want,
                " (quantized codes), got ", c10::toString(x.scalar_type()),
                x.is_floating_point() ? "; quantize it first (qplugin.pt2.QTensor / "
                                        "torch.ops.qplugin.quantize_per_tensor.plain)"
                                      : "");
    TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ".plain: expected ", arg,
                " on the CPU, got ", x.device());
    TORCH_CHECK(std::isfinite(scale) && scale > 0.0 &&
                    std::isfinite(1.0f / static_cast<float>(scale)) &&
                    static_cast<float>(scale) > 0.0f,
                "qplugin::", op, ".plain: expected a finite, positive ", arg, "_scale, got ",
                scale);
    const auto r = qrange(qt);
    TORCH_CHECK(zero_point >= r.first && zero_point <= r.second, "qplugin::", op,
                ".plain: expected ", arg, "_zero_point in [", r.first, ", ", r.second, "] for ",
                c10::toString(x.scalar_type()), " codes, got ", zero_point);
    return QArg(x, scale, zero_point, qt, /*plain=*/true);
  }

  const at::Tensor& tensor() const { return t_; }
  bool is_plain() const { return plain_; }
  double q_scale() const { return scale_; }
  int64_t q_zero_point() const { return zp_; }
  at::ScalarType scalar_type() const { return qtype_; }  // the quantized dtype
  at::IntArrayRef sizes() const { return t_.sizes(); }
  at::IntArrayRef strides() const { return t_.strides(); }
  int64_t size(int64_t d) const { return t_.size(d); }
  int64_t stride(int64_t d) const { return t_.stride(d); }
  int64_t dim() const { return t_.dim(); }
  int64_t numel() const { return t_.numel(); }
  at::MemoryFormat suggest_memory_format() const { return t_.suggest_memory_format(); }
  bool is_contiguous(at::MemoryFormat f = at::MemoryFormat::Contiguous) const {
    return t_.is_contiguous(f);
  }
  // The same operand with dense storage in `f` (no copy when it already is).
  QArg contiguous(at::MemoryFormat f = at::MemoryFormat::Contiguous) const {
    return QArg(t_.contiguous(f), scale_, zp_, qtype_, plain_);
  }
  const void* data_ptr() const { return t_.data_ptr(); }

 private:
  QArg(at::Tensor t, double scale, int64_t zp, at::ScalarType qtype, bool plain)
      : t_(std::move(t)), scale_(scale), zp_(zp), qtype_(qtype), plain_(plain) {}
  at::Tensor t_;
  double scale_;
  int64_t zp_;
  at::ScalarType qtype_;
  bool plain_;
};

// An output on the door `like` came through: a quantized tensor with (scale, zero_point) on the
// legacy door, plain codes of qtype's plain dtype on the PT2 door (whose qparams the caller
// passed in and so already knows).
inline at::Tensor new_output(const QArg& like, at::IntArrayRef sizes, at::ScalarType qtype,
                             double scale, int64_t zero_point,
                             at::MemoryFormat fmt = at::MemoryFormat::Contiguous) {
  if (like.is_plain()) {
    return at::empty(sizes, like.tensor().options().dtype(plain_dtype_of(qtype)),
                     fmt);
  }
  return at::_empty_affine_quantized(sizes, like.tensor().options().dtype(qtype), scale,
                                     zero_point, fmt);
}

// Mutable raw bytes of an output made by new_output (either door).
inline void* out_ptr(at::Tensor& y) { return y.data_ptr(); }

}  // namespace qplugin
