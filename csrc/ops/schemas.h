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

void define_activation(torch::Library& m);
void define_conv(torch::Library& m);
void define_conv_dynamic(torch::Library& m);
void define_elementwise(torch::Library& m);
void define_embedding(torch::Library& m);
void define_linear(torch::Library& m);
void define_linear_dynamic(torch::Library& m);
void define_matmul(torch::Library& m);
void define_misc(torch::Library& m);
void define_batch_norm(torch::Library& m);
void define_normalization(torch::Library& m);
void define_pooling(torch::Library& m);
void define_quantize(torch::Library& m);  // PT2 door: quantize_per_tensor.plain, dequantize.plain
void define_rnn_dynamic(torch::Library& m);
void define_upsample(torch::Library& m);

}  // namespace schemas
}  // namespace qplugin
