// Input-validation helpers shared by the QuantizedCPU kernels. Every message has the form
// "qplugin::<op>: expected <what>, got <actual>[; <fix>]" (STYLE.md section 7).
#pragma once
#include <ATen/ATen.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <string>
#include <utility>

#include "common/quant_utils.h"

namespace qplugin {
namespace checks {

inline std::string dtype_list(std::initializer_list<at::ScalarType> types) {
  std::string s;
  size_t i = 0;
  for (auto t : types) {
    if (i > 0) s += (i + 1 == types.size()) ? " or " : ", ";
    s += c10::toString(t);
    ++i;
  }
  return s;
}

// A per-tensor affine quantized CPU tensor of one of `types`.
inline void check_quantized_input(const char* op, const char* arg, const at::Tensor& x,
                                  std::initializer_list<at::ScalarType> types) {
  TORCH_CHECK(x.is_quantized(), "qplugin::", op, ": expected ", arg, " to be a quantized tensor (",
              dtype_list(types), "), got a ", c10::toString(x.scalar_type()),
              " tensor; quantize it first (torch.quantize_per_tensor or qplugin.nn.Quantize)");
  bool ok = false;
  for (auto t : types) ok = ok || x.scalar_type() == t;
  TORCH_CHECK(ok, "qplugin::", op, ": expected ", arg, " of dtype ", dtype_list(types), ", got ",
              c10::toString(x.scalar_type()));
  TORCH_CHECK(x.qscheme() == at::kPerTensorAffine, "qplugin::", op, ": expected ", arg,
              " quantized per tensor (torch.per_tensor_affine), got ",
              c10::toString(x.qscheme()));
  TORCH_CHECK(x.device().is_cpu(), "qplugin::", op, ": expected ", arg, " on the CPU, got ",
              x.device());
}

// Output quantization parameters: finite positive scale (whose reciprocal is finite too) and a
// zero point inside the output dtype's range.
inline void check_output_qparams(const char* op, double scale, int64_t zero_point,
                                 at::ScalarType qtype) {
  TORCH_CHECK(std::isfinite(scale) && scale > 0.0 &&
                  std::isfinite(1.0f / static_cast<float>(scale)) &&
                  static_cast<float>(scale) > 0.0f,
              "qplugin::", op, ": expected a finite, positive output_scale, got ", scale);
  const auto r = qrange(qtype);
  TORCH_CHECK(zero_point >= r.first && zero_point <= r.second, "qplugin::", op,
              ": expected output_zero_point in [", r.first, ", ", r.second, "] for ",
              c10::toString(qtype), ", got ", zero_point);
}

// The out= tensor of an op on quantized inputs of `dtype`: per-tensor quantized, of that dtype, on
// the CPU.
inline void check_out(const char* op, const at::Tensor& out, at::ScalarType dtype) {
  TORCH_CHECK(out.is_quantized() && out.qscheme() == at::kPerTensorAffine, "qplugin::", op,
              ": expected out to be a per-tensor quantized tensor (", c10::toString(dtype),
              "), got a ", c10::toString(out.scalar_type()), " tensor");
  TORCH_CHECK(out.scalar_type() == dtype, "qplugin::", op, ": expected out of dtype ",
              c10::toString(dtype), " (the dtype of the inputs), got ",
              c10::toString(out.scalar_type()));
  TORCH_CHECK(out.device().is_cpu(), "qplugin::", op, ": expected out on the CPU, got ",
              out.device());
}

// The input x (an at::Tensor or a QArg) of a linear op whose weight is [N, K]: rank >= 2, K
// (in_features) in its last dimension.
template <class X>
void check_linear_input(const char* op, const X& x, int64_t N, int64_t K) {
  TORCH_CHECK(x.dim() >= 2, "qplugin::", op,
              ": expected input of rank >= 2 (batch, ..., in_features), got ", x.dim(),
              "-D; unsqueeze a 1-D input to (1, in_features)");
  TORCH_CHECK(x.size(-1) == K, "qplugin::", op, ": expected input with in_features = ", K,
              " in its last dimension (weight is [", N, ", ", K, "]), got ", x.size(-1),
              " (input shape ", x.sizes(), ")");
}

// A 1-D floating-point tensor of `n` elements, returned as contiguous float32.
inline at::Tensor float_vector(const char* op, const char* arg, const at::Tensor& t, int64_t n) {
  TORCH_CHECK(!t.is_quantized() && at::isFloatingType(t.scalar_type()), "qplugin::", op,
              ": expected ", arg, " to be a floating-point tensor, got ",
              c10::toString(t.scalar_type()));
  TORCH_CHECK(t.dim() == 1 && t.numel() == n, "qplugin::", op, ": expected ", arg,
              " of shape [", n, "] (one value per channel), got shape ", t.sizes());
  TORCH_CHECK(t.device().is_cpu(), "qplugin::", op, ": expected ", arg, " on the CPU, got ",
              t.device());
  return t.to(at::kFloat).contiguous();
}

// ---- Sizes ------------------------------------------------------------------------------------
// Every size an op derives from user arguments (output extents, element counts, padded extents,
// scratch buffers, packed phases) goes through these before anything is allocated or indexed, so
// hostile arguments raise "qplugin::<op>: ..." instead of wrapping int64 (UB), segfaulting or
// surfacing as std::bad_alloc.
//
// kMaxElements = 2^40 elements per tensor or buffer. Why this number: (1) it is far above any real
// int8 activation, weight or embedding table (2^40 bytes = 1 TiB for one tensor, more than the
// memory of the hosts qplugin targets), so it only rejects arguments that are mistakes or attacks;
// (2) it leaves 2^23 of headroom below INT64_MAX, so once a count passes, the arithmetic the
// kernels do with it (bytes of int32/int64/double scratch, tile round-ups, offsets plus one
// window) cannot overflow int64. Sizes below the limit that the machine cannot hold fail in the
// allocator (c10's RuntimeError), or through guard_alloc below, not by wrapping.
constexpr int64_t kMaxElements = int64_t{1} << 40;

// a + b and a * b of non-negative int64 sizes; raises naming `op`, `what` and the operands.
inline int64_t add_size(const char* op, const char* what, int64_t a, int64_t b) {
  int64_t r = 0;
  TORCH_CHECK(!__builtin_add_overflow(a, b, &r), "qplugin::", op, ": expected ", what,
              " to fit in int64, got ", a, " + ", b, " (overflow); use smaller sizes");
  return r;
}
inline int64_t mul_size(const char* op, const char* what, int64_t a, int64_t b) {
  int64_t r = 0;
  TORCH_CHECK(!__builtin_mul_overflow(a, b, &r), "qplugin::", op, ": expected ", what,
              " to fit in int64, got ", a, " * ", b, " (overflow); use smaller sizes");
  return r;
}
inline int64_t sub_size(const char* op, const char* what, int64_t a, int64_t b) {
  int64_t r = 0;
  TORCH_CHECK(!__builtin_sub_overflow(a, b, &r), "qplugin::", op, ": expected ", what,
              " to fit in int64, got ", a, " - ", b, " (overflow); use smaller sizes");
  return r;
}

// A size (extent) of at most kMaxElements: checked before it sizes a loop or a buffer.
inline int64_t check_extent(const char* op, const char* what, int64_t n) {
  TORCH_CHECK(n <= kMaxElements, "qplugin::", op, ": expected ", what, " of at most 2^40 = ",
              kMaxElements, " (qplugin's per-tensor element limit), got ", n,
              "; check the sizes, strides, paddings and scale factors");
  return n;
}

// The element count of `sizes` (each >= 0), at most kMaxElements; raises naming the shape.
inline int64_t check_numel(const char* op, const char* what, c10::IntArrayRef sizes) {
  int64_t n = 1;
  bool overflow = false;
  for (int64_t s : sizes) {
    TORCH_CHECK(s >= 0, "qplugin::", op, ": expected non-negative sizes for ", what, ", got ",
                sizes);
    overflow = overflow || __builtin_mul_overflow(n, s, &n);
  }
  if (!overflow) {
    for (int64_t s : sizes) {
      if (s == 0) return 0;
    }
  }
  TORCH_CHECK(!overflow && n <= kMaxElements, "qplugin::", op, ": expected ", what,
              " of at most 2^40 = ", kMaxElements,
              " elements (qplugin's per-tensor element limit), got shape ", sizes, " (",
              overflow ? std::string("more than INT64_MAX") : std::to_string(n),
              " elements); check the sizes, strides, paddings and scale factors");
  return n;
}

// Runs f(); an allocation failure in it (scratch std::vector / new[], possibly on a worker thread
// of at::parallel_for, which rethrows) becomes a RuntimeError naming the op instead of Python's
// bare "MemoryError: std::bad_alloc".
template <class F>
auto guard_alloc(const char* op, F&& f) -> decltype(f()) {
  try {
    return std::forward<F>(f)();
  } catch (const std::bad_alloc&) {
    TORCH_CHECK(false, "qplugin::", op,
                ": expected buffers that fit in memory, got an allocation failure "
                "(std::bad_alloc); use smaller inputs, paddings or kernel sizes");
    throw;  // not reached
  } catch (const c10::OutOfMemoryError& e) {
    TORCH_CHECK(false, "qplugin::", op, ": expected buffers that fit in memory, got ",
                e.what_without_backtrace(), "; use smaller inputs, paddings or kernel sizes");
    throw;  // not reached
  }
}

}  // namespace checks
}  // namespace qplugin
