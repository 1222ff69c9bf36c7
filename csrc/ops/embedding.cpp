// Schemas of the embedding ops (≙ torch.ops.quantized.embedding*, same names, argument order and
// defaults). Kernels: ops/cpu/embedding_kernel.cpp; class: packed/embedding_packed_params.h
// (registered in library.cpp, whose TORCH_LIBRARY runs first); pinned in tests/test_schemas.py.
#include <torch/library.h>
#include "register.h"

#define QPLUGIN_BAG_ARGS                                                                        \
  "Tensor indices, Tensor? offsets=None, bool scale_grad_by_freq=False, int mode=0, "           \
  "bool pruned_weights=False, Tensor? per_sample_weights=None, "                                \
  "Tensor? compressed_indices_mapping=None, bool include_last_offset=False) -> Tensor"
#define QPLUGIN_EMB_PACKED "__torch__.torch.classes.qplugin.EmbeddingPackedParams"

TORCH_LIBRARY_FRAGMENT(qplugin, m) {
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

#undef QPLUGIN_BAG_ARGS
#undef QPLUGIN_EMB_PACKED

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(ops_embedding)
