// The only TORCH_LIBRARY(qplugin): opens the namespace and registers the packed-param classes
// (before any schema names them). Op schemas live in ops/<family>.cpp as TORCH_LIBRARY_FRAGMENTs.
#include <torch/custom_class.h>
#include <torch/library.h>

#include "packed/linear_packed_params.h"

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
}
