// Picks the activation-quantization kernels of the dynamic ops for the ISA in use. See quant_act.h.
#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {

const QuantActKernels& quant_act_kernels() {
  static const QuantActKernels& s = scalar::quant_act_table();
  static const QuantActKernels& a2 = detected_isa() >= Isa::kAvx2 ? avx2::quant_act_table() : s;
  static const QuantActKernels& a512 =
      detected_isa() >= Isa::kAvx512Vnni ? avx512vnni::quant_act_table() : a2;
  switch (current_isa()) {
    case Isa::kAvx512Vnni: return a512;
    case Isa::kAvx2: return a2;
    default: return s;
  }
}

}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
