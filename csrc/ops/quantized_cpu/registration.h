// Registration helpers of the ops/quantized_cpu/<family>_kernel.cpp files: an op with its PT2 door
// (`.plain`, plain codes + qparams) from one name, and an op with its `_relu` form from one
// template. Changes with: those files' registration blocks (tests/test_schemas.py pins the names).
#pragma once
#include <torch/library.h>

// Inside a TORCH_LIBRARY_IMPL block (library `m`): op NAME -> qplugin::ops::NAME##_quantized_cpu
// and NAME.plain -> qplugin::ops::NAME##_plain. A family lists its ops once, as
// QPLUGIN_<FAMILY>_OPS(X), and registers them with QPLUGIN_<FAMILY>_OPS(QPLUGIN_IMPL_WITH_PLAIN)
// under each key that serves them.
#define QPLUGIN_IMPL_WITH_PLAIN(NAME)                             \
  m.impl(#NAME, TORCH_FN(qplugin::ops::NAME##_quantized_cpu));   \
  m.impl(#NAME ".plain", TORCH_FN(qplugin::ops::NAME##_plain));

// Inside a TORCH_LIBRARY_IMPL block or a function taking `torch::Library& m`, for a kernel
// template on `bool ReluFused` (fusion is a template flag, STYLE.md): NAME -> FN<false> and
// NAME_relu -> FN<true>, both names followed by OVERLOAD ("", ".new", ".plain", "_out", ...).
#define QPLUGIN_IMPL_RELU_PAIR(NAME, OVERLOAD, FN)     \
  m.impl(NAME OVERLOAD, TORCH_FN(FN<false>));          \
  m.impl(NAME "_relu" OVERLOAD, TORCH_FN(FN<true>));

// A family's registration BODY (statements using the library `m`) under both dispatch keys:
// QuantizedCPU (the legacy door; a quantized tensor passed to a `.plain` overload then gets
// QArg::plain's "expected a plain tensor of codes" instead of the dispatcher's "could not run")
// and CPU (the PT2 door's plain tensors). Use once per kernel file, at file scope.
#define QPLUGIN_IMPL_QUANTIZED_AND_CPU(...)                    \
  TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) { __VA_ARGS__ } \
  TORCH_LIBRARY_IMPL(qplugin, CPU, m) { __VA_ARGS__ }
