// EmbeddingPackedParams: validation, packing into the fused row layout, unpack and the pickled
// state. Changes with: embedding_packed_params.h, library.cpp.
#include "packed/embedding_packed_params.h"

#include <c10/util/Half.h>

#include <cmath>
#include <cstring>

#include "packed/serialization.h"

namespace qplugin {

namespace {
constexpr const char* kSetstate = "EmbeddingPackedParams.__setstate__";
}  // namespace

c10::intrusive_ptr<EmbeddingPackedParams> EmbeddingPackedParams::prepack(const at::Tensor& qweight,
                                                                          const char* op) {
  packed::check_quantized_weight(
      qweight, op, {at::kQUInt8, at::kQUInt4x2}, "torch.quint8 or torch.quint4x2",
      "a quantized weight of dtype torch.quint8 or torch.quint4x2",
      "quantize it with torch.quantize_per_channel (float qparams, axis 0) or use "
      "embedding_bag_byte_prepack / embedding_bag_4bit_prepack on the float weight");
  const auto st = qweight.scalar_type();
  TORCH_CHECK(qweight.dim() == 2, "qplugin::", op,
              ": expected 2-D weight [num_embeddings, embedding_dim], got ", qweight.dim(), "-D");
  TORCH_CHECK(qweight.qscheme() == at::kPerChannelAffineFloatQParams, "qplugin::", op,
              ": expected weight quantized with torch.per_channel_affine_float_qparams, got ",
              c10::toString(qweight.qscheme()),
              "; use torch.ao.quantization.float_qparams_weight_only_qconfig");
  TORCH_CHECK(qweight.q_per_channel_axis() == 0, "qplugin::", op,
              ": expected per-channel qparams along axis 0 (one per row), got axis ",
              qweight.q_per_channel_axis());
  const int64_t rows = qweight.size(0), dim = qweight.size(1);
  const int bits = st == at::kQUInt8 ? 8 : 4;
  // quint4x2 storage packs elements linearly over the whole tensor: with an odd row length rows
  // would not start on a byte boundary (and PyTorch's fused layout cannot describe them).
  TORCH_CHECK(bits == 8 || dim % 2 == 0, "qplugin::", op,
              ": expected an even embedding_dim for a torch.quint4x2 weight, got ", dim);

  const at::Tensor w = qweight.contiguous();
  return from_parts(bits, rows, dim, reinterpret_cast<const uint8_t*>(w.data_ptr()),
                    qweight.q_per_channel_scales(), qweight.q_per_channel_zero_points(), op);
}

c10::intrusive_ptr<EmbeddingPackedParams> EmbeddingPackedParams::from_parts(
    int64_t bits, int64_t rows, int64_t dim, const uint8_t* src, at::Tensor scales,
    at::Tensor zero_points, const char* op) {
  auto p = c10::make_intrusive<EmbeddingPackedParams>();
  p->bit_rate_ = bits;
  p->rows_ = rows;
  p->dim_ = dim;
  p->scales_ = scales.to(at::kFloat).contiguous().clone();
  p->zero_points_ = zero_points.to(at::kFloat).contiguous().clone();
  TORCH_CHECK(p->scales_.numel() == rows && p->zero_points_.numel() == rows, "qplugin::", op,
              ": expected ", rows, " scales and zero points (one per row), got ",
              p->scales_.numel(), " and ", p->zero_points_.numel());
  const float* sc = p->scales_.data_ptr<float>();
  const float* zp = p->zero_points_.data_ptr<float>();
  for (int64_t r = 0; r < rows; ++r) {
    TORCH_CHECK(std::isfinite(sc[r]) && std::isfinite(zp[r]), "qplugin::", op,
                ": expected finite scales and zero points, got scale ", sc[r], " and zero point ",
                zp[r], " at row ", r);
  }
  const int64_t code_bytes = bits == 8 ? dim : dim / 2;
  const int64_t row_bytes = code_bytes + (bits == 8 ? 8 : 4);
  p->table_ = at::empty({rows, row_bytes}, at::device(at::kCPU).dtype(at::kByte));
  uint8_t* dst = p->table_.data_ptr<uint8_t>();
  for (int64_t r = 0; r < rows; ++r) {
    uint8_t* row = dst + r * row_bytes;
    if (code_bytes > 0) std::memcpy(row, src + r * code_bytes, static_cast<size_t>(code_bytes));
    // As PyTorch's prepack: bias = zero_point * scale * -1 in float32.
    const float bias = zp[r] * sc[r] * -1.0f;
    if (bits == 8) {
      std::memcpy(row + code_bytes, &sc[r], sizeof(float));
      std::memcpy(row + code_bytes + sizeof(float), &bias, sizeof(float));
    } else {
      const c10::Half hs(sc[r]), hb(bias);  // round to nearest even
      std::memcpy(row + code_bytes, &hs, sizeof(hs));
      std::memcpy(row + code_bytes + sizeof(hs), &hb, sizeof(hb));
    }
  }
  p->kernels_ = &kernels::embedding_table();
  return p;
}

at::Tensor EmbeddingPackedParams::unpack() const {
  const auto dtype = bit_rate_ == 8 ? at::kQUInt8 : at::kQUInt4x2;
  at::Tensor w = at::_empty_per_channel_affine_quantized(
      {rows_, dim_}, scales_.clone(), zero_points_.clone(), /*axis=*/0,
      at::device(at::kCPU).dtype(dtype));
  const int64_t code_bytes = bit_rate_ == 8 ? dim_ : dim_ / 2;
  const int64_t row_bytes = table_.size(1);
  uint8_t* dst = reinterpret_cast<uint8_t*>(w.data_ptr());
  const uint8_t* src = table_.data_ptr<uint8_t>();
  for (int64_t r = 0; r < rows_; ++r) {
    if (code_bytes > 0) {
      std::memcpy(dst + r * code_bytes, src + r * row_bytes, static_cast<size_t>(code_bytes));
    }
  }
  return w;
}

EmbeddingPackedParams::State EmbeddingPackedParams::getstate() const {
  const int64_t code_bytes = bit_rate_ == 8 ? dim_ : dim_ / 2;
  at::Tensor codes = table_.narrow(1, 0, code_bytes).contiguous().clone();
  return {kStateVersion, bit_rate_, dim_, codes, scales_.clone(), zero_points_.clone()};
}

c10::intrusive_ptr<EmbeddingPackedParams> EmbeddingPackedParams::setstate(
    const c10::IValue& state) {
  const auto& el = packed::state_elements(
      state, kSetstate, "bit_rate, embedding_dim, codes, scales, zero_points", 6);
  TORCH_CHECK(el[1].isInt() && (el[1].toInt() == 8 || el[1].toInt() == 4), "qplugin::",
              kSetstate, ": expected bit_rate 8 or 4 as the second element, got ",
              el[1].isInt() ? std::to_string(el[1].toInt()) : std::string(el[1].tagKind()));
  const int64_t bits = el[1].toInt();
  TORCH_CHECK(el[2].isInt() && el[2].toInt() >= 0 && (bits == 8 || el[2].toInt() % 2 == 0),
              "qplugin::", kSetstate, ": expected a non-negative embedding_dim (even for 4-bit) "
              "as the third element, got ",
              el[2].isInt() ? std::to_string(el[2].toInt()) : std::string(el[2].tagKind()));
  const int64_t dim = el[2].toInt();
  for (size_t i = 3; i < 6; ++i) {
    TORCH_CHECK(el[i].isTensor(), "qplugin::", kSetstate, ": expected a tensor as element ", i,
                " of the state, got ", el[i].tagKind());
  }
  const at::Tensor codes = el[3].toTensor().contiguous();
  const int64_t code_bytes = bits == 8 ? dim : dim / 2;
  TORCH_CHECK(!codes.is_quantized() && codes.scalar_type() == at::kByte && codes.dim() == 2 &&
                  codes.size(1) == code_bytes && codes.device().is_cpu(),
              "qplugin::", kSetstate, ": expected codes of dtype torch.uint8 and shape [rows, ",
              code_bytes, "], got ", c10::toString(codes.scalar_type()), " of shape ",
              codes.sizes());
  const at::Tensor& s = el[4].toTensor();
  const at::Tensor& z = el[5].toTensor();
  TORCH_CHECK(!s.is_quantized() && !z.is_quantized() && s.scalar_type() == at::kFloat &&
                  z.scalar_type() == at::kFloat && s.dim() == 1 && z.dim() == 1,
              "qplugin::", kSetstate,
              ": expected 1-D float32 scales and zero_points, got ", c10::toString(s.scalar_type()),
              " ", s.sizes(), " and ", c10::toString(z.scalar_type()), " ", z.sizes());
  return from_parts(bits, codes.size(0), dim, codes.data_ptr<uint8_t>(), s, z, kSetstate);
}

}  // namespace qplugin
