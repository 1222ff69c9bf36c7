// EmbeddingPackedParams (torchbind class qplugin.EmbeddingPackedParams): a row-wise quantized
// embedding table (quint8 or quint4x2, per-channel float qparams along axis 0) in PyTorch's fused
// row layout (8-bit: codes, fp32 scale, fp32 bias; 4-bit: packed nibbles, fp16 scale, fp16 bias;
// bias = -zero_point * scale), plus the scales and zero points as given for a bit-exact unpack.
// Changes with: embedding_packed_params.cpp, library.cpp (class registration and pickling),
// ops/embedding.cpp (schemas), ops/cpu/embedding_kernel.cpp (the lookups),
// qplugin/nn/modules/embedding_ops.py.
//
// Pickled state (never the fused bytes or the ISA; repacked on load). Plain tensors only: a
// quint4x2 tensor inside a TorchScript archive does not load in torch 2.13 (its storage is
// restored at half the size the tensor needs), and plain tensors outlive the quantized dtypes.
//   version 1: (1, bit_rate: 8 or 4, embedding_dim,
//               codes: uint8 [num_embeddings, embedding_dim * bit_rate / 8] (4-bit: element 2k
//                      in the low nibble of byte k),
//               scales: float32 [num_embeddings], zero_points: float32 [num_embeddings])
#pragma once
#include <ATen/ATen.h>
#include <torch/custom_class.h>

#include <string>
#include <tuple>

#include "kernels/embedding/embedding.h"

namespace qplugin {

struct EmbeddingPackedParams : torch::CustomClassHolder {
  using State = std::tuple<int64_t, int64_t, int64_t, at::Tensor, at::Tensor, at::Tensor>;
  static constexpr int64_t kStateVersion = 1;

  // Validates and packs (op names the caller in error messages). Kernels of the current ISA.
  static c10::intrusive_ptr<EmbeddingPackedParams> prepack(const at::Tensor& qweight,
                                                            const char* op);
  // The weight as given (same codes, scales, zero points, dtype and qscheme).
  at::Tensor unpack() const;

  State getstate() const;
  // Accepts every historical state version; raises a clear error for anything else.
  static c10::intrusive_ptr<EmbeddingPackedParams> setstate(const c10::IValue& state);

  int64_t bit_rate() const { return bit_rate_; }
  int64_t version() const { return kStateVersion; }
  int64_t num_embeddings() const { return rows_; }
  int64_t embedding_dim() const { return dim_; }
  // uint8 [num_embeddings, row_bytes] in the fused layout.
  const at::Tensor& table() const { return table_; }
  // The lookup kernels chosen at prepack.
  const kernels::EmbeddingKernelTable& kernels() const { return *kernels_; }
  std::string kernel_name() const {
    return bit_rate_ == 8 ? kernels_->name_8bit : kernels_->name_4bit;
  }

 private:
  // Builds the fused table from validated parts (codes: [rows, code_bytes] uint8, contiguous).
  static c10::intrusive_ptr<EmbeddingPackedParams> from_parts(int64_t bits, int64_t rows,
                                                               int64_t dim, const uint8_t* codes,
                                                               at::Tensor scales,
                                                               at::Tensor zero_points,
                                                               const char* op);
  int64_t bit_rate_ = 8;
  int64_t rows_ = 0;
  int64_t dim_ = 0;
  at::Tensor table_;
  at::Tensor scales_;       // float32 [rows], as given
  at::Tensor zero_points_;  // float32 [rows], as given
  const kernels::EmbeddingKernelTable* kernels_ = nullptr;
};

}  // namespace qplugin
