// Picks the embedding-bag kernel table for the ISA in use (kernels::current_isa(), which
// QPLUGIN_CPU_ISA and the _set_cpu_isa test hook lower). Changes with: embedding.h.
#include "kernels/embedding/embedding.h"

namespace qplugin {
namespace kernels {

const EmbeddingKernelTable& embedding_table() {
  return table_of_current_isa([] { return &scalar::make_embedding_table(); },
                              [] { return &avx2::make_embedding_table(); },
                              [] { return &avx512vnni::make_embedding_table(); });
}

}  // namespace kernels
}  // namespace qplugin
