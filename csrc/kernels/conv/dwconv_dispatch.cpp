// The depthwise-conv kernel table of each ISA (a family table of its own, like gemm_dispatch.cpp,
// chosen through kernels/dispatch.h for_isa). Changes with: dwconv.h, dwconv_<isa>.cpp.
#include "kernels/conv/dwconv.h"

namespace qplugin {
namespace kernels {
namespace conv {

const DwConvKernels& dwconv_kernels_for(Isa isa) {
  return *for_isa(supported_isa(isa), [] { return &scalar::dwconv_table(); },
                  [] { return &avx2::dwconv_table(); }, [] { return &avx512vnni::dwconv_table(); });
}

}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
