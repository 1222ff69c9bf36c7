// scalar embedding-bag kernels: the portable row operations of embedding_generic_impl.h.
// Changes with: embedding_generic_impl.h, embedding.h.
#define QPLUGIN_ISA_NS scalar
#include "kernels/embedding/embedding_generic_impl.h"

namespace qplugin {
namespace kernels {
namespace scalar {

const EmbeddingKernelTable& make_embedding_table() {
  static const EmbeddingKernelTable t =
      embedding_generic::make<embedding_generic::PortableBatchOps>(
          Isa::kScalar, "embedding_bag_8bit__scalar", "embedding_bag_4bit__scalar",
          "embedding_bag_2bit__scalar");
  return t;
}

}  // namespace scalar
}  // namespace kernels
}  // namespace qplugin
