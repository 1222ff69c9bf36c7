// qplugin_register_all() (declared in register.h): references the registration anchor of every
// file that registers qplugin ops or classes, so that a static link keeps them all, then checks
// with the dispatcher that the ops are there. Adding a file with a TORCH_LIBRARY* block: end it
// with QPLUGIN_REGISTRATION_ANCHOR(<unit>) and add X(<unit>) below (tests/test_cpp_loader.py).
#include "register.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

// One entry per file with a TORCH_LIBRARY / _FRAGMENT / _IMPL block (unit = its path under csrc/).
#define QPLUGIN_REGISTRATION_UNITS(X) \
  X(library) \
  X(cpu_conv_dynamic_kernel) \
  X(cpu_embedding_kernel) \
  X(cpu_quantize_kernel) \
  X(cpu_linear_dynamic_kernel) \
  X(cpu_rnn_dynamic_kernel) \
  X(quantized_cpu_activation_kernel) \
  X(quantized_cpu_binary_kernel) \
  X(quantized_cpu_cat_kernel) \
  X(quantized_cpu_conv_kernel) \
  X(quantized_cpu_linear_kernel) \
  X(quantized_cpu_matmul_kernel) \
  X(quantized_cpu_batch_norm_kernel) \
  X(quantized_cpu_normalization_kernel) \
  X(quantized_cpu_pooling_kernel) \
  X(quantized_cpu_upsample_kernel)

#define QPLUGIN_DECLARE_ANCHOR(unit) int64_t qplugin_registration_anchor_##unit(void);
extern "C" {
QPLUGIN_REGISTRATION_UNITS(QPLUGIN_DECLARE_ANCHOR)
}
#undef QPLUGIN_DECLARE_ANCHOR

extern "C" int64_t qplugin_register_all(void) {
  int64_t units = 0;
#define QPLUGIN_CALL_ANCHOR(unit) units += qplugin_registration_anchor_##unit();
  QPLUGIN_REGISTRATION_UNITS(QPLUGIN_CALL_ANCHOR)
#undef QPLUGIN_CALL_ANCHOR
  // The static initialisers of the units above have run by now (before main, or when the
  // library was dlopen-ed); if the ops are still missing, the link dropped them.
  auto& dispatcher = c10::Dispatcher::singleton();
  const std::pair<const char*, const char*> probes[] = {
      {"qplugin::_cpu_isa", ""}, {"qplugin::conv2d", "new"}, {"qplugin::linear", ""}};
  for (const auto& op : probes) {
    TORCH_CHECK(dispatcher.findSchema({op.first, op.second}).has_value(),
                "qplugin_register_all: expected the op ", op.first,
                " to be registered after linking qplugin, got none; link every object file of "
                "the library (or the whole archive) and keep its static initialisers");
  }
  return units;
}
