// The op schemas, one function per family (ops/<family>.cpp), all called from the one
// TORCH_LIBRARY(qplugin) block in library.cpp right after the packed-params classes are
// registered, as PyTorch's quantized library.cpp does: a schema naming a class always finds it,
// whatever the order of the object files in the link. Kernels are registered separately
// (TORCH_LIBRARY_IMPL in ops/quantized_cpu/*, ops/cpu/*). Schemas are pinned in
// tests/test_schemas.py.
// Changes with: library.cpp (the calls), ops/<family>.cpp (the definitions).
#pragma once
#include <torch/library.h>

namespace qplugin {
namespace schemas {

// The families, in the order library.cpp defines them: X(family) for each
// define_<family>(torch::Library&) of ops/<family>.cpp. The last, quantize, is the PT2 door
// (quantize_per_tensor.plain, dequantize.plain; docs/pt2.md section 3).
#define QPLUGIN_SCHEMA_FAMILIES(X)                                                            \
  X(misc) X(linear) X(linear_dynamic) X(rnn_dynamic) X(conv) X(conv_dynamic) X(embedding)     \
  X(matmul) X(activation) X(elementwise) X(batch_norm) X(normalization) X(pooling) X(upsample) \
  X(quantize)

#define QPLUGIN_DECLARE_SCHEMAS(family) void define_##family(torch::Library& m);
QPLUGIN_SCHEMA_FAMILIES(QPLUGIN_DECLARE_SCHEMAS)
#undef QPLUGIN_DECLARE_SCHEMAS

}  // namespace schemas
}  // namespace qplugin
