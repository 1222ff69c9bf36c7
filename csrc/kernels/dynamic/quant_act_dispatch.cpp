// Picks the kernels of the dynamic ops for the ISA in use: activation quantization (quant_act.h)
// and the fp16-weight GEMM (gemm_f16.h).
#include "kernels/dynamic/gemm_f16.h"
#include "kernels/dynamic/quant_act.h"

namespace qplugin {
namespace kernels {
namespace dynamic {

const QuantActKernels& quant_act_kernels() {
  return table_of_current_isa([] { return &scalar::quant_act_table(); },
                              [] { return &avx2::quant_act_table(); },
                              [] { return &avx512vnni::quant_act_table(); });
}

const F16GemmKernels& f16_gemm_kernels() {
  return table_of_current_isa([] { return &scalar::f16_gemm_table(); },
                              [] { return &avx2::f16_gemm_table(); },
                              [] { return &avx512vnni::f16_gemm_table(); });
}

}  // namespace dynamic
}  // namespace kernels
}  // namespace qplugin
