// Schema of quantized matmul (≙ torch.ops.quantized.matmul: same name, argument order and return
// name). Kernel: ops/quantized_cpu/matmul_kernel.cpp; pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "register.h"

TORCH_LIBRARY_FRAGMENT(qplugin, m) {
  m.def("matmul(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc");
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(ops_matmul)
