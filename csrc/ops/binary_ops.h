// The binary elementwise op names (≙ torch.ops.quantized add, add_relu, mul, mul_relu and the
// deprecated add_scalar[_relu], mul_scalar[_relu] that PyTorch still registers) as
// X(name, is_mul, relu_fused) lists, expanded by the schemas (ops/elementwise.cpp) and by the
// kernel registration (ops/quantized_cpu/binary_kernel.cpp).
#pragma once

#define QPLUGIN_BINARY_OPS(X) \
  X("add", false, false) X("add_relu", false, true) X("mul", true, false) X("mul_relu", true, true)
#define QPLUGIN_SCALAR_OPS(X)                                                               \
  X("add_scalar", false, false) X("add_scalar_relu", false, true) X("mul_scalar", true, false) \
  X("mul_scalar_relu", true, true)
