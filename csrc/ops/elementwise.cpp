// Schemas of the binary elementwise ops and cat (≙ torch.ops.quantized, every overload and the
// deprecated names PyTorch still registers). Kernels: ops/quantized_cpu/binary_kernel.cpp,
// ops/quantized_cpu/cat_kernel.cpp; pinned in tests/elementwise/test_schemas_elementwise.py.
#include <torch/library.h>
#include "ops/binary_ops.h"
#include "ops/schemas.h"

namespace qplugin {
namespace schemas {

void define_elementwise(torch::Library& m) {
  // Per name: Tensor x Tensor (broadcasting; output qparams given), out= (out's qparams), Tensor x
  // Scalar (output qparams derived from the input's, PyTorch's rules), for add/add_relu/mul/
  // mul_relu; then the deprecated names kept by PyTorch (QFunctional.add_scalar/mul_scalar call
  // these; .Tensor takes a one-element tensor: torch.jit.trace records Scalars as tensors).
  // Each with its PT2 door (docs/pt2.md section 3): plain uint8/int8/int32 codes, each quantized
  // operand followed by its scale and zero point, optional output qparams required; no out= forms.
  // The scalar forms return codes only: their output qparams follow PyTorch's rule, computed by
  // the route (qplugin/pt2/routes/elementwise.py). Pinned in tests/pt2/schemas/elementwise.txt.
#define QPLUGIN_DEF_BINARY(NAME, MUL, RELU)                                                    \
  m.def(NAME "(Tensor qa, Tensor qb, float scale, int zero_point) -> Tensor qc");             \
  m.def(NAME ".out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out");                 \
  m.def(NAME ".Scalar" QPLUGIN_SCALAR_SCHEMA);                                                \
  m.def(NAME ".Scalar2(Scalar b, Tensor qa) -> Tensor qc");                                   \
  m.def(NAME ".Scalar_out" QPLUGIN_SCALAR_OUT_SCHEMA);                                        \
  m.def(NAME "_out(Tensor qa, Tensor qb, Tensor(a!) out) -> Tensor(a!) out");                 \
  m.def(NAME ".plain(Tensor qa, float qa_scale, int qa_zero_point, Tensor qb, float qb_scale, " \
        "int qb_zero_point, float scale, int zero_point) -> Tensor qc");                       \
  m.def(NAME ".Scalar_plain" QPLUGIN_SCALAR_PLAIN_SCHEMA);                                    \
  m.def(NAME ".Scalar2_plain(Scalar b, Tensor qa, float qa_scale, int qa_zero_point) "          \
        "-> Tensor qc");
#define QPLUGIN_DEF_SCALAR(NAME, MUL, RELU)                                                    \
  m.def(NAME QPLUGIN_SCALAR_SCHEMA);                                                          \
  m.def(NAME ".Tensor(Tensor qa, Tensor b) -> Tensor qc");                                    \
  m.def(NAME "_out" QPLUGIN_SCALAR_OUT_SCHEMA);                                               \
  m.def(NAME "_out.Tensor(Tensor qa, Tensor b, Tensor(a!) out) -> Tensor(a!) out");           \
  m.def(NAME ".plain" QPLUGIN_SCALAR_PLAIN_SCHEMA);                                           \
  m.def(NAME ".Tensor_plain(Tensor qa, float qa_scale, int qa_zero_point, Tensor b) "           \
        "-> Tensor qc");
  QPLUGIN_BINARY_OPS(QPLUGIN_DEF_BINARY)
  QPLUGIN_SCALAR_OPS(QPLUGIN_DEF_SCALAR)
#undef QPLUGIN_DEF_BINARY
#undef QPLUGIN_DEF_SCALAR

  // Concatenation; output qparams default to qx[0]'s. Equal qparams: a pure copy.
  m.def("cat(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor");
  m.def("cat_relu(Tensor[] qx, int dim, float? scale, int? zero_point) -> Tensor");
  m.def("cat_out(Tensor[] qx, int dim, Tensor(a!) out) -> Tensor(a!)");
  m.def("cat_relu_out(Tensor[] qx, int dim, Tensor(a!) out) -> Tensor(a!)");

  // The PT2 door of cat.
  m.def("cat.plain(Tensor[] qx, float[] qx_scales, int[] qx_zero_points, int dim, float scale, "
        "int zero_point) -> Tensor");
  m.def("cat_relu.plain(Tensor[] qx, float[] qx_scales, int[] qx_zero_points, int dim, "
        "float scale, int zero_point) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin
