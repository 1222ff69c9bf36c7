// Schema of quantized matmul (≙ torch.ops.quantized.matmul: same name, argument order and return
// name; plus the PT2 door's `.plain`). Kernel: ops/quantized_cpu/matmul_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_matmul(torch::Library& m) {
  m.def("matmul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc");
  // PT2 door (docs/pt2.md section 3): uint8/int8 codes with explicit qparams.
  m.def("matmul.plain(Tensor qa, float qa_scale, int qa_zero_point, Tensor qb, float qb_scale, "
        "int qb_zero_point, float scale, int zero_point) -> Tensor qc");
}

}  // namespace schemas
}  // namespace qplugin
