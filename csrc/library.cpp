// The only TORCH_LIBRARY(qplugin): registers the packed-params classes, then defines every op
// schema (ops/schemas.h; the definitions live in ops/<family>.cpp), in that order inside this one
// block, as PyTorch's quantized library does: the schemas that name a class never depend on the
// order of static initialisers across object files.
#include <torch/custom_class.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "packed/cell_params.h"
#include "packed/conv_packed_params.h"
#include "packed/embedding_packed_params.h"
#include "packed/linear_fp16_packed_params.h"
#include "packed/linear_packed_params.h"
#include "ops/schemas.h"
#include "register.h"

namespace {

// ---- PT2 door (docs/pt2.md section 2): __obj_flatten__ and __eq__ of every packed-params class.
// __obj_flatten__ returns the shape and config as (name, value) pairs, never the weights:
// torch.export turns it into the fake class's state (qplugin/pt2/fake/packed.py, which reads the
// same names; they differ from the method names, as a fake object's attributes and methods share
// one namespace) and Dynamo's guards call it on every compiled call, so it must be cheap (copying
// the weights there would cost a pass over them per call). __eq__ compares the pickled states
// (weights, bias, config): opcheck's checks compare torchbind arguments with ==.
using Str = std::string;
template <class V>
std::tuple<Str, V> kv(const char* k, V v) {
  return std::tuple<Str, V>(Str(k), std::move(v));
}

// __len__ raises TypeError ("has no len()"), as len() of any unsized Python object does: without
// it a torchbind object's len() raises NotImplementedError, which PyTorch's schema checker
// (SchemaCheckMode.clone_inputs, opcheck's test_schema) does not expect from a non-sequence.
template <class P>
int64_t no_len(const P&, const char* cls) {
  TORCH_CHECK_TYPE(false, "object of type qplugin.", cls, " has no len()");
  return 0;
}

bool state_tensor_equal(const at::Tensor& a, const at::Tensor& b) {
  if (a.defined() != b.defined()) return false;
  if (!a.defined()) return true;
  if (a.scalar_type() != b.scalar_type() || !a.sizes().equals(b.sizes())) return false;
  if (a.is_quantized()) {
    if (a.qscheme() != b.qscheme()) return false;
    if (a.qscheme() == at::kPerTensorAffine) {
      if (a.q_scale() != b.q_scale() || a.q_zero_point() != b.q_zero_point()) return false;
    } else if (a.q_per_channel_axis() != b.q_per_channel_axis() ||
               !at::equal(a.q_per_channel_scales(), b.q_per_channel_scales()) ||
               !at::equal(a.q_per_channel_zero_points(), b.q_per_channel_zero_points())) {
      return false;
    }
    return at::equal(a.int_repr(), b.int_repr());
  }
  return at::equal(a, b);
}

bool state_equal(const c10::IValue& a, const c10::IValue& b) {
  if (a.isTuple() && b.isTuple()) {
    const auto& x = a.toTupleRef().elements();
    const auto& y = b.toTupleRef().elements();
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!state_equal(x[i], y[i])) return false;
    }
    return true;
  }
  if (a.isTensor() && b.isTensor()) return state_tensor_equal(a.toTensor(), b.toTensor());
  if (a.isTensor() || b.isTensor() || a.isTuple() || b.isTuple()) return false;
  return a == b;
}

template <class T>
bool same_state(const c10::intrusive_ptr<T>& a, const c10::intrusive_ptr<T>& b) {
  if (a.get() == b.get()) return true;
  if (!a || !b) return false;
  return state_equal(c10::IValue(a->getstate()), c10::IValue(b->getstate()));
}

using qplugin::CellParams;
using qplugin::EmbeddingPackedParams;
using qplugin::LinearPackedParams;
using qplugin::LinearPackedParamsFp16;

// A torchbind method of class T that returns self->method() (a method of T or of a base class).
template <class T, class C, class R>
auto getter(R (C::*method)() const) {
  return [method](const c10::intrusive_ptr<T>& self) { return ((*self).*method)(); };
}

// What every packed-params class has: pickling as its versioned, unpacked state (__setstate__
// accepts Any so that it can parse every historical version and reject malformed states with a
// clear error), unpack(), __eq__ and __len__; and kernel() (the name of the kernel chosen at
// prepack) for the classes that choose one. The caller chains the class's own methods.
template <class T>
torch::class_<T> packed_class(torch::Library& m, const char* name) {
  using P = c10::intrusive_ptr<T>;
  auto c = m.class_<T>(name)
               .def_pickle([](const P& self) -> typename T::State { return self->getstate(); },
                           [](c10::IValue state) -> P { return T::setstate(state); })
               .def("unpack", getter<T>(&T::unpack))
               .def("__eq__", [](const P& self, const P& other) { return same_state(self, other); })
               .def("__len__", [name](const P& self) { return no_len(self, name); });
  if constexpr (requires(const T& t) { t.kernel_name(); }) {
    c.def("kernel", getter<T>(&T::kernel_name));
  }
  return c;
}

// packed_class plus what both linear classes have: bias(), in_features(), out_features().
template <class T>
torch::class_<T> linear_class(torch::Library& m, const char* name) {
  return packed_class<T>(m, name)
      .def("bias", getter<T>(&T::bias))
      .def("in_features", getter<T>(&T::in_features))
      .def("out_features", getter<T>(&T::out_features));
}

// __obj_flatten__'s weight_shape of a linear class: [out_features, in_features].
template <class T>
std::tuple<Str, std::vector<int64_t>> linear_weight_shape(const c10::intrusive_ptr<T>& self) {
  return kv("weight_shape", std::vector<int64_t>{self->out_features(), self->in_features()});
}

Str qscheme_name(bool per_channel) {
  return per_channel ? "per_channel_affine" : "per_tensor_affine";
}

template <class T>
auto conv_obj_flatten(const c10::intrusive_ptr<T>& self) {
  return std::make_tuple(kv("weight_shape", self->weight_shape()),
                         kv("qscheme", qscheme_name(self->weight_per_channel())),
                         kv("has_bias", self->bias_.has_value()), kv("strides", self->stride()),
                         kv("paddings", self->padding()),
                         kv("output_paddings", self->output_padding()),
                         kv("dilations", self->dilation()), kv("n_groups", self->groups()),
                         kv("transposed", self->transpose()));
}

auto linear_obj_flatten(const c10::intrusive_ptr<LinearPackedParams>& self) {
  return std::make_tuple(linear_weight_shape(self),
                         kv("qscheme", qscheme_name(self->per_channel())),
                         kv("has_bias", self->bias().has_value()));
}

auto linear_fp16_obj_flatten(const c10::intrusive_ptr<LinearPackedParamsFp16>& self) {
  return std::make_tuple(linear_weight_shape(self), kv("has_bias", self->bias().has_value()));
}

auto cell_obj_flatten(const c10::intrusive_ptr<CellParams>& self) {
  return std::make_tuple(kv("weight_dtype", self->dtype()), kv("w_ih_shape", self->w_ih_shape()),
                         kv("w_hh_shape", self->w_hh_shape()),
                         kv("reduce_range_", self->reduce_range()));
}

auto embedding_obj_flatten(const c10::intrusive_ptr<EmbeddingPackedParams>& self) {
  return std::make_tuple(kv("bits", self->bit_rate()), kv("num_embeddings", self->num_embeddings()),
                         kv("embedding_dim", self->embedding_dim()));
}

// Conv2dPackedParams / Conv3dPackedParams: the same methods as PyTorch's Conv{2,3}dPackedParamsBase
// (stride, padding, output_padding, dilation, groups, transpose, unpack) plus kernel(); pickled as a
// versioned, unpacked state (conv_packed_params.h).
template <class T>
void register_conv_class(torch::Library& m, const char* name) {
  packed_class<T>(m, name)
      .def("stride", getter<T>(&T::stride))
      .def("padding", getter<T>(&T::padding))
      .def("output_padding", getter<T>(&T::output_padding))
      .def("dilation", getter<T>(&T::dilation))
      .def("groups", getter<T>(&T::groups))
      .def("transpose", getter<T>(&T::transpose))
      .def("__obj_flatten__", &conv_obj_flatten<T>);
}

}  // namespace

TORCH_LIBRARY(qplugin, m) {
  // LinearPackedParams: pickled as a versioned, unpacked state (linear_packed_params.h).
  linear_class<LinearPackedParams>(m, "LinearPackedParams")
      .def("packed_size_bytes", getter<LinearPackedParams>(&LinearPackedParams::packed_size_bytes))
      .def("packed_weight_bytes",
           getter<LinearPackedParams>(&LinearPackedParams::packed_weight_bytes))
      .def("__obj_flatten__", &linear_obj_flatten);
  // LinearPackedParamsFp16 (dynamic fp16 linear, #17): pickled as a versioned, unpacked state
  // (linear_fp16_packed_params.h).
  linear_class<LinearPackedParamsFp16>(m, "LinearPackedParamsFp16")
      .def("__obj_flatten__", &linear_fp16_obj_flatten);
  // CellParams (dynamic RNN layer / cell weights, #17): the two packed projections, int8 or
  // float16; pickled as a versioned, unpacked state (cell_params.h).
  packed_class<CellParams>(m, "CellParams")
      .def("dtype", getter<CellParams>(&CellParams::dtype))
      .def("reduce_range", getter<CellParams>(&CellParams::reduce_range))
      .def("__obj_flatten__", &cell_obj_flatten);
  register_conv_class<qplugin::Conv2dPackedParams>(m, "Conv2dPackedParams");
  register_conv_class<qplugin::Conv3dPackedParams>(m, "Conv3dPackedParams");
  // EmbeddingPackedParams: PyTorch's EmbeddingPackedParamsBase methods (bit_rate, version, unpack)
  // plus kernel(); pickled as a versioned, unpacked state (embedding_packed_params.h).
  packed_class<EmbeddingPackedParams>(m, "EmbeddingPackedParams")
      .def("bit_rate", getter<EmbeddingPackedParams>(&EmbeddingPackedParams::bit_rate))
      .def("version", getter<EmbeddingPackedParams>(&EmbeddingPackedParams::version))
      .def("__obj_flatten__", &embedding_obj_flatten);

  // The schemas, after the classes they name.
#define QPLUGIN_DEFINE_SCHEMAS(family) qplugin::schemas::define_##family(m);
  QPLUGIN_SCHEMA_FAMILIES(QPLUGIN_DEFINE_SCHEMAS)
#undef QPLUGIN_DEFINE_SCHEMAS
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(library)
