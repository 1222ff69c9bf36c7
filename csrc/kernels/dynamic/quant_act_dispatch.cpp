// Picks the activation-quantization kernels of the dynamic ops for the ISA in use. See quant_act.h.
#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {

const QuantActKernels& quant_act_kernels() {
  return table_of_current_isa([] { return &scalar::quant_act_table(); },
                              [] { return &avx2::quant_act_table(); },
                              [] { return &avx512vnni::quant_act_table(); });
}

}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
