// Forced inlining for the small helpers hot kernels share (loop skeletons, vector shuffles), so
// that sharing them costs no call. Torch-free.
#pragma once

#define QPLUGIN_ALWAYS_INLINE inline __attribute__((always_inline))
// The same for a lambda (after its parameter list): [&](int x) QPLUGIN_LAMBDA_INLINE { ... }.
#define QPLUGIN_LAMBDA_INLINE __attribute__((always_inline))
