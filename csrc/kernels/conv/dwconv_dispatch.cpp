// The depthwise-conv kernel table of each ISA (a family table of its own, like gemm_dispatch.cpp:
// kernels/dispatch.h is not edited). Changes with: dwconv.h, dwconv_<isa>.cpp.
#include "kernels/conv/dwconv.h"

namespace qplugin {
namespace kernels {
namespace conv {

const DwConvKernels& dwconv_kernels_for(Isa isa) {
  const Isa best = detected_isa();
  const int want = static_cast<int>(isa) < static_cast<int>(best) ? static_cast<int>(isa)
                                                                  : static_cast<int>(best);
  switch (static_cast<Isa>(want)) {
    case Isa::kAvx512Vnni: return avx512vnni::dwconv_table();
    case Isa::kAvx2: return avx2::dwconv_table();
    default: return scalar::dwconv_table();
  }
}

}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
