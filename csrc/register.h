// qplugin_register_all(): the explicit registration entry point for C++ programs that link
// qplugin's op library directly (shared or static) instead of dlopen-ing it. Plain C, no torch
// headers, so any translation unit can include it. Definition: csrc/register.cpp; every file with
// a TORCH_LIBRARY* block ends with QPLUGIN_REGISTRATION_ANCHOR(<unit>) (tests/test_cpp_loader.py
// checks that each one is listed in register.cpp). Docs: docs/deployment.md.
#pragma once

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// Forces every object file that registers qplugin ops or classes into the link (each one defines
// an anchor function that this calls), checks that the ops are registered with the dispatcher,
// and returns the number of registration units linked. Idempotent; registration itself happens
// in the static initialisers of those object files, so calling it after they ran is harmless.
// Throws c10::Error if the ops are missing (a broken link).
__attribute__((visibility("default"))) int64_t qplugin_register_all(void);

#ifdef __cplusplus
}
#endif

// Placed once at the bottom of each file holding a TORCH_LIBRARY / TORCH_LIBRARY_FRAGMENT /
// TORCH_LIBRARY_IMPL block: an external symbol that qplugin_register_all() references, so that a
// static link keeps the file's registration object (nothing else refers to it).
#define QPLUGIN_REGISTRATION_ANCHOR(unit) \
  extern "C" int64_t qplugin_registration_anchor_##unit(void) { return 1; }
