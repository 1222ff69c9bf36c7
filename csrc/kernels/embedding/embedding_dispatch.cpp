// Picks the embedding-bag kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: embedding.h.
#include "kernels/embedding/embedding.h"

namespace qplugin {
namespace kernels {

const EmbeddingKernelTable& embedding_table() {
  static const EmbeddingKernelTable& s = scalar::make_embedding_table();
  static const EmbeddingKernelTable& a2 =
      detected_isa() >= Isa::kAvx2 ? avx2::make_embedding_table() : s;
  static const EmbeddingKernelTable& a512 =
      detected_isa() >= Isa::kAvx512Vnni ? avx512vnni::make_embedding_table() : a2;
  switch (current_isa()) {
    case Isa::kAvx512Vnni: return a512;
    case Isa::kAvx2: return a2;
    default: return s;
  }
}

}  // namespace kernels
}  // namespace qplugin
