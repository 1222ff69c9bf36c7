// What the conv schema files (ops/conv.cpp, ops/conv_dynamic.cpp) share: the packed-params class
// names and the six conv kinds, conv{1,2,3}d and conv_transpose{1,2,3}d. conv1d and
// conv_transpose1d/2d take Conv2dPackedParams (1-d runs as 2-d with H = 1, as in PyTorch), the 3-d
// ones Conv3dPackedParams. Changes with: packed/conv_packed_params.h, library.cpp (the classes).
#pragma once
#include <torch/library.h>

#include <string>

#define QP_C2 "__torch__.torch.classes.qplugin.Conv2dPackedParams"
#define QP_C3 "__torch__.torch.classes.qplugin.Conv3dPackedParams"

namespace qplugin {
namespace schemas {

// Defines "<kind><suffix>(<before><class><after>" for the six kinds in the order conv1d, conv2d,
// conv3d, conv_transpose1d, conv_transpose2d, conv_transpose3d; <class> is the kind's
// packed-params class.
inline void def_conv_kinds(torch::Library& m, const char* suffix, const char* before,
                           const char* after) {
  for (const char* kind : {"conv", "conv_transpose"}) {
    for (int d = 1; d <= 3; ++d) {
      const std::string schema = std::string(kind) + std::to_string(d) + "d" + suffix + "(" +
                                 before + (d == 3 ? QP_C3 : QP_C2) + after;
      m.def(schema.c_str());
    }
  }
}

}  // namespace schemas
}  // namespace qplugin
