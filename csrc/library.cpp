// The only TORCH_LIBRARY(qplugin): registers the packed-params classes, then defines every op
// schema (ops/schemas.h; the definitions live in ops/<family>.cpp), in that order inside this one
// block, as PyTorch's quantized library does: the schemas that name a class never depend on the
// order of static initialisers across object files.
#include <torch/custom_class.h>
#include <torch/library.h>

#include "packed/conv_packed_params.h"
#include "packed/embedding_packed_params.h"
#include "packed/linear_fp16_packed_params.h"
#include "packed/linear_packed_params.h"
#include "ops/schemas.h"
#include "register.h"

namespace {

// Conv2dPackedParams / Conv3dPackedParams: the same methods as PyTorch's Conv{2,3}dPackedParamsBase
// (stride, padding, output_padding, dilation, groups, transpose, unpack) plus kernel(); pickled as a
// versioned, unpacked state (conv_packed_params.h).
template <class T>
void register_conv_class(torch::Library& m, const char* name) {
  using P = c10::intrusive_ptr<T>;
  m.class_<T>(name)
      .def_pickle([](const P& self) -> qplugin::ConvPackedParamsBase::State { return self->getstate(); },
                  [](c10::IValue state) -> P { return T::setstate(state); })
      .def("unpack", [](const P& self) { return self->unpack(); })
      .def("stride", [](const P& self) { return self->stride(); })
      .def("padding", [](const P& self) { return self->padding(); })
      .def("output_padding", [](const P& self) { return self->output_padding(); })
      .def("dilation", [](const P& self) { return self->dilation(); })
      .def("groups", [](const P& self) { return self->groups(); })
      .def("transpose", [](const P& self) { return self->transpose(); })
      .def("kernel", [](const P& self) { return self->kernel_name(); });
}

}  // namespace

TORCH_LIBRARY(qplugin, m) {
  using qplugin::LinearPackedParams;
  // Pickled as a versioned, unpacked state (linear_packed_params.h); __setstate__ accepts Any so
  // that it can parse every historical version and reject malformed states with a clear error.
  m.class_<LinearPackedParams>("LinearPackedParams")
      .def_pickle(
          [](const c10::intrusive_ptr<LinearPackedParams>& self) -> LinearPackedParams::State {
            return self->getstate();
          },
          [](c10::IValue state) -> c10::intrusive_ptr<LinearPackedParams> {
            return LinearPackedParams::setstate(state);
          })
      .def("unpack",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) { return self->unpack(); })
      .def("bias",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) { return self->bias(); })
      .def("in_features",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) { return self->in_features(); })
      .def("out_features",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) {
             return self->out_features();
           })
      .def("packed_size_bytes",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) {
             return self->packed_size_bytes();
           })
      .def("packed_weight_bytes",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) {
             return self->packed_weight_bytes();
           })
      .def("kernel",
           [](const c10::intrusive_ptr<LinearPackedParams>& self) { return self->kernel_name(); });
  // LinearPackedParamsFp16 (dynamic fp16 linear, #17): pickled as a versioned, unpacked state
  // (linear_fp16_packed_params.h).
  using qplugin::LinearPackedParamsFp16;
  using PF = c10::intrusive_ptr<LinearPackedParamsFp16>;
  m.class_<LinearPackedParamsFp16>("LinearPackedParamsFp16")
      .def_pickle([](const PF& self) -> LinearPackedParamsFp16::State { return self->getstate(); },
                  [](c10::IValue state) -> PF { return LinearPackedParamsFp16::setstate(state); })
      .def("unpack", [](const PF& self) { return self->unpack(); })
      .def("bias", [](const PF& self) { return self->bias(); })
      .def("in_features", [](const PF& self) { return self->in_features(); })
      .def("out_features", [](const PF& self) { return self->out_features(); });
  register_conv_class<qplugin::Conv2dPackedParams>(m, "Conv2dPackedParams");
  register_conv_class<qplugin::Conv3dPackedParams>(m, "Conv3dPackedParams");
  // EmbeddingPackedParams: PyTorch's EmbeddingPackedParamsBase methods (bit_rate, version, unpack)
  // plus kernel(); pickled as a versioned, unpacked state (embedding_packed_params.h).
  using qplugin::EmbeddingPackedParams;
  using EP = c10::intrusive_ptr<EmbeddingPackedParams>;
  m.class_<EmbeddingPackedParams>("EmbeddingPackedParams")
      .def_pickle([](const EP& self) -> EmbeddingPackedParams::State { return self->getstate(); },
                  [](c10::IValue state) -> EP { return EmbeddingPackedParams::setstate(state); })
      .def("unpack", [](const EP& self) { return self->unpack(); })
      .def("bit_rate", [](const EP& self) { return self->bit_rate(); })
      .def("version", [](const EP& self) { return self->version(); })
      .def("kernel", [](const EP& self) { return self->kernel_name(); });

  // The schemas, after the classes they name.
  namespace s = qplugin::schemas;
  s::define_misc(m);
  s::define_linear(m);
  s::define_linear_dynamic(m);
  s::define_rnn_dynamic(m);
  s::define_conv(m);
  s::define_conv_dynamic(m);
  s::define_embedding(m);
  s::define_matmul(m);
  s::define_activation(m);
  s::define_elementwise(m);
  s::define_batch_norm(m);
  s::define_normalization(m);
  s::define_pooling(m);
  s::define_upsample(m);
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(library)
