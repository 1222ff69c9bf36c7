// Schemas of the dynamic conv ops (≙ torch.ops.quantized.conv{1,2,3}d_dynamic and
// conv_transpose{1,2,3}d_dynamic: same names, argument names, order and defaults; float input
// and output) on qplugin's conv packed-params classes (conv1d / conv_transpose1d/2d use
// Conv2dPackedParams, the 3-d ones Conv3dPackedParams, as PyTorch does).
// Kernels: ops/cpu/conv_dynamic_kernel.cpp; fake kernels: qplugin/_meta_dynamic.py;
// pinned in tests/test_schemas.py.
#include <torch/library.h>

#include "ops/conv_schemas.h"
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_conv_dynamic(torch::Library& m) {
  // y = dequant(conv(quant(qx))) requantized with the input's own qparams, as PyTorch's
  // apply_dynamic: qx (float32) quantized per call to quint8 from its min/max (reduce_range:
  // 7 bits), exact int32 conv, float32 output (channels-last for 2-d/3-d, like PyTorch's).
  def_conv_kinds(m, "_dynamic", "Tensor qx, ",
                 " packed_weight, bool reduce_range=False) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
