// The binary elementwise op names (≙ torch.ops.quantized add, add_relu, mul, mul_relu and the
// deprecated add_scalar[_relu], mul_scalar[_relu] that PyTorch still registers) as
// X(name, is_mul, relu_fused) lists, expanded by the schemas (ops/elementwise.cpp) and by the
// kernel registration (ops/quantized_cpu/binary_kernel.cpp), and the Tensor x Scalar forms both
// kinds of name share.
#pragma once

#define QPLUGIN_BINARY_OPS(X) \
  X("add", false, false) X("add_relu", false, true) X("mul", true, false) X("mul_relu", true, true)
#define QPLUGIN_SCALAR_OPS(X)                                                               \
  X("add_scalar", false, false) X("add_scalar_relu", false, true) X("mul_scalar", true, false) \
  X("mul_scalar_relu", true, true)

// The Tensor x Scalar forms, the same schema and kernels under two spellings: <op>.Scalar,
// .Scalar_out, .Scalar_plain of the binary names and <op>, _out, .plain of the deprecated scalar
// names. Output qparams follow from the input's (PyTorch's rules); the PT2 form returns codes
// only. The schemas after the name (each family defines them in PyTorch's overload order, which
// torch.ops.<op>.overloads() reports), then the kernels' registration, inside a function or block
// with `torch::Library& m` (MUL, RELU: the kernel templates' flags).
#define QPLUGIN_SCALAR_SCHEMA "(Tensor qa, Scalar b) -> Tensor qc"
#define QPLUGIN_SCALAR_OUT_SCHEMA "(Tensor qa, Scalar b, Tensor(a!) out) -> Tensor(a!) out"
#define QPLUGIN_SCALAR_PLAIN_SCHEMA \
  "(Tensor qa, float qa_scale, int qa_zero_point, Scalar b) -> Tensor qc"
#define QPLUGIN_IMPL_SCALAR_FORMS(NAME, MUL, RELU, SCALAR, SCALAR_OUT, PLAIN)                  \
  m.impl(NAME SCALAR, TORCH_FN((qplugin::ops::scalar_op<MUL, RELU>)));                        \
  m.impl(NAME SCALAR_OUT, TORCH_FN((qplugin::ops::scalar_out_op<MUL, RELU>)));                \
  m.impl(NAME PLAIN, TORCH_FN((qplugin::ops::scalar_plain<MUL, RELU>)));
