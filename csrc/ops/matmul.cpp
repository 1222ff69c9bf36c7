// Schema of quantized matmul (≙ torch.ops.quantized.matmul: same name, argument order and return
// name). Kernel: ops/quantized_cpu/matmul_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_matmul(torch::Library& m) {
  m.def("matmul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc");
}

}  // namespace schemas
}  // namespace qplugin
