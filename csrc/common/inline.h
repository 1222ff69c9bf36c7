// Forced inlining for the small helpers hot kernels share (loop skeletons, vector shuffles, the
// lambdas they take), so that sharing them costs no call. Torch-free.
#pragma once

// Before a function: `QPLUGIN_ALWAYS_INLINE void f(...)`.
#define QPLUGIN_ALWAYS_INLINE inline __attribute__((always_inline))
// After a lambda's parameter list: `[&](int64_t i) QPLUGIN_LAMBDA_INLINE { ... }`.
#define QPLUGIN_LAMBDA_INLINE __attribute__((always_inline))
