// Schemas of the embedding ops (≙ torch.ops.quantized.embedding*, same names, argument order and
// defaults). Kernels: ops/cpu/embedding_kernel.cpp; class: packed/embedding_packed_params.h
// (library.cpp registers it before it calls define_embedding, see ops/schemas.h); pinned in
// tests/test_schemas.py.
#include <torch/library.h>
#include "ops/schemas.h"

#define QPLUGIN_BAG_ARGS                                                                        \
  "Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, "           \
  "bool pruned_weights=False, Tensor? per_sample_weights=None, "                                \
  "Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor"
#define QPLUGIN_EMB_PACKED "__torch__.torch.classes.qplugin.EmbeddingPackedParams"

namespace qplugin {
namespace schemas {

void define_embedding(torch::Library& m) {
  m.def("embedding_bag_byte_prepack(Tensor weight) -> Tensor");
  m.def("embedding_bag_4bit_prepack(Tensor weight, bool optimized_qparams=False, int nbins=200, "
        "float ratio=0.16) -> Tensor");
  m.def("embedding_bag_2bit_prepack(Tensor weight, bool optimized_qparams=False, int nbins=200, "
        "float ratio=0.16) -> Tensor");
  m.def("embedding_bag_byte_unpack(Tensor weight) -> Tensor");
  m.def("embedding_bag_4bit_unpack(Tensor weight) -> Tensor");
  m.def("embedding_bag_2bit_unpack(Tensor weight) -> Tensor");
  m.def("embedding_bag_prepack(Tensor weight) -> " QPLUGIN_EMB_PACKED " W_prepack");
  m.def("embedding_bag_unpack(" QPLUGIN_EMB_PACKED " W_prepack) -> Tensor W_origin");
  m.def("embedding_bag_byte_rowwise_offsets(Tensor weight, " QPLUGIN_BAG_ARGS);
  m.def("embedding_bag_4bit_rowwise_offsets(Tensor weight, " QPLUGIN_BAG_ARGS);
  m.def("embedding_bag_2bit_rowwise_offsets(Tensor weight, " QPLUGIN_BAG_ARGS);
  m.def("embedding_bag_byte(" QPLUGIN_EMB_PACKED " weight, " QPLUGIN_BAG_ARGS);
  m.def("embedding_bag_4bit(" QPLUGIN_EMB_PACKED " weight, " QPLUGIN_BAG_ARGS);
  m.def("embedding_byte(" QPLUGIN_EMB_PACKED " weight, Tensor indices, "
        "bool pruned_weights=False) -> Tensor");
  m.def("embedding_4bit(" QPLUGIN_EMB_PACKED " weight, Tensor indices, "
        "bool pruned_weights=False) -> Tensor");
}

}  // namespace schemas
}  // namespace qplugin

#undef QPLUGIN_BAG_ARGS
#undef QPLUGIN_EMB_PACKED
