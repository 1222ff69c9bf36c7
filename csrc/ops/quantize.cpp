// Schemas of the PT2 door's graph-boundary ops (docs/pt2.md section 3): float -> codes and codes
// -> float with explicit qparams, numerically equal to torch.quantize_per_tensor / dequantize bit
// for bit (there is no quantized-tensor overload: on the legacy door those are PyTorch's own).
// Kernels: ops/cpu/quantize_kernel.cpp; pinned in tests/pt2/schemas/quantize.txt.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_quantize(torch::Library& m) {
  m.def("quantize_per_tensor.plain(Tensor self, float scale, int zero_point, ScalarType dtype) "
        "-> Tensor");
  m.def("dequantize.plain(Tensor self, float scale, int zero_point) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
