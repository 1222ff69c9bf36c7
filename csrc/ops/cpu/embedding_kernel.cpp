// CPU-key impls of the embedding ops (plain uint8 fused tables and float weights; the packed
// forms take a qplugin.EmbeddingPackedParams): prepack/unpack to and from PyTorch's fused row
// layouts, and the lookups, which validate every offset, index and mapping value before any row
// is read, then reduce bags in parallel (at::parallel_for) with the kernels of
// kernels/embedding/embedding.h. Schemas: ops/embedding.cpp; class: packed/embedding_packed_params.h.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <unistd.h>

#include "common/non_differentiable.h"
#include "kernels/embedding/embedding.h"
#include "packed/embedding_packed_params.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using kernels::BagArgs;
using kernels::BagMode;
using kernels::EmbeddingKernelTable;
using Packed = c10::intrusive_ptr<EmbeddingPackedParams>;

// ---------------------------------------------------------------------------------------------
// Prepack / unpack of the fused row layouts.

// A new CPU tensor of t's shape but for the last dimension, `last` (a row of the other layout).
at::Tensor empty_rows_like(const at::Tensor& t, int64_t last, at::ScalarType dtype) {
  std::vector<int64_t> shape(t.sizes().begin(), t.sizes().end());
  shape.back() = last;
  return at::empty(shape, at::device(at::kCPU).dtype(dtype));
}

at::Tensor float_weight(const char* op, const at::Tensor& weight) {
  TORCH_CHECK(weight.defined() && !weight.is_quantized() &&
                  (weight.scalar_type() == at::kFloat || weight.scalar_type() == at::kHalf),
              "qplugin::", op, ": expected a float32 or float16 weight, got ",
              weight.defined() ? std::string(c10::toString(weight.scalar_type()))
                               : std::string("None"));
  TORCH_CHECK(weight.device().is_cpu(), "qplugin::", op, ": expected weight on the CPU, got ",
              weight.device());
  return weight.to(at::kFloat).contiguous();
}

// NaN compares false, so min/max alone would not see it: every element is checked.
void check_finite_row(const char* op, const float* x, int64_t n, int64_t row) {
  bool finite = true;
  for (int64_t c = 0; c < n; ++c) finite = finite && std::isfinite(x[c]);
  if (finite) return;
  for (int64_t c = 0; c < n; ++c) {
    TORCH_CHECK(std::isfinite(x[c]), "qplugin::", op, ": expected finite weights, got ", x[c],
                " at row ", row, ", column ", c);
  }
}

// 8-bit rows (FBGEMM's reference quantizer, as torch.ops.quantized.embedding_bag_byte_prepack):
// bias = min, scale = (max - min) / 255, q = lrintf((x - min) * (255 / (range + 1e-8))).
at::Tensor embedding_bag_byte_prepack_cpu(const at::Tensor& weight) {
  const char* op = "embedding_bag_byte_prepack";
  TORCH_CHECK(weight.defined() && weight.dim() >= 1, "qplugin::", op,
              ": expected a weight of rank >= 1 [..., embedding_dim], got ",
              weight.defined() ? weight.dim() : 0, "-D");
  const at::Tensor w = float_weight(op, weight);
  const int64_t cols = w.size(-1);
  TORCH_CHECK(cols >= 1, "qplugin::", op, ": expected embedding_dim >= 1, got ", cols);
  const int64_t rows = w.numel() / cols;
  at::Tensor out = empty_rows_like(w, cols + 8, at::kByte);
  const float* src = w.data_ptr<float>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / cols), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = src + r * cols;
      uint8_t* row = dst + r * (cols + 8);
      const float mn = *std::min_element(x, x + cols), mx = *std::max_element(x, x + cols);
      check_finite_row(op, x, cols, r);
      const float range = mx - mn;
      const float scale = range / 255.0f;
      const float inv = 255.0f / (range + 1e-8f);
      for (int64_t c = 0; c < cols; ++c) {
        row[c] = static_cast<uint8_t>(std::lrintf((x[c] - mn) * inv));
      }
      std::memcpy(row + cols, &scale, sizeof(float));
      std::memcpy(row + cols + 4, &mn, sizeof(float));
    }
  });
  return out;
}

// PyTorch's greedy range search (at::choose_qparams_optimized, with its calculate_quant_loss),
// re-implemented operation for operation in float so that the bytes match:
//   loss(lo, hi) = sqrt(sum_i (x_i - fq(x_i))^2), fq with bias = fp16(lo), scale = fp16((hi -
//   bias) / qmax) (1 when hi == bias), q = clamp(nearbyint((x - bias) / scale as x * (1 /
//   scale)), 0, qmax), summed in order;
//   step = (max - min) / nbins; starting at [min, max], move whichever end lowers the loss more
//   by one step while lo + int(nbins * (1 - ratio)) * step < hi, keeping the best local optimum
//   (a range whose loss is below both neighbours' and every earlier optimum's).
// One addition: PyTorch loops forever when the step is below half an ulp of lo or hi (lo + step
// == lo: e.g. a row of values near 1000 spread over 1e-3); here the search stops when a move
// leaves the range unchanged, returning the best range found so far (PyTorch returns nothing).
float quant_loss(const float* x, int64_t n, float xmin, float xmax, int bits) {
  xmin = static_cast<float>(c10::Half(xmin));
  const float range = xmax - xmin;
  const float qmax = static_cast<float>((1 << bits) - 1);
  const float scale = range == 0 ? 1.0f : static_cast<float>(c10::Half(range / qmax));
  const float inv = scale == 0 ? 1.0f : 1.0f / scale;
  float norm = 0.0f;
  for (int64_t i = 0; i < n; ++i) {
    float q = std::max(0.0f, std::min(std::nearbyint((x[i] - xmin) * inv), qmax));
    q = q * scale + xmin;
    norm += (x[i] - q) * (x[i] - q);
  }
  return std::sqrt(norm);
}

void greedy_range(const float* x, int64_t n, int64_t nbins, double ratio, int bits, float* lo,
                  float* hi) {
  float xmin = *std::min_element(x, x + n), xmax = *std::max_element(x, x + n);
  const float step = (xmax - xmin) / static_cast<float>(nbins);
  // In double, as torch 2.13 computes it (nbins 1000, ratio 0.05: 950, not the 949 that a float
  // ratio would give; measured against torch.choose_qparams_optimized).
  const int min_bins = static_cast<int>(static_cast<double>(nbins) * (1.0 - ratio));
  float best = quant_loss(x, n, xmin, xmax, bits);
  float cur_min = xmin, cur_max = xmax, cur_loss = best;
  const float thr = static_cast<float>(min_bins) * step;
  while (cur_min + thr < cur_max) {
    const float loss1 = quant_loss(x, n, cur_min + step, cur_max, bits);  // raise the minimum
    const float loss2 = quant_loss(x, n, cur_min, cur_max - step, bits);  // lower the maximum
    if (cur_loss < loss1 && cur_loss < loss2 && cur_loss < best) {  // a local optimum
      best = cur_loss;
      xmin = cur_min;
      xmax = cur_max;
    }
    const float prev_min = cur_min, prev_max = cur_max;
    if (loss1 < loss2) {
      cur_min = cur_min + step;
      cur_loss = loss1;
    } else {
      cur_max = cur_max - step;
      cur_loss = loss2;
    }
    if (cur_min == prev_min && cur_max == prev_max) break;  // no progress (see above)
  }
  *lo = xmin;
  *hi = xmax;
}

// N-bit rows (N = 4 or 2; FBGEMM's reference quantizer, as
// torch.ops.quantized.embedding_bag_{4bit,2bit}_prepack): [lo, hi] = the row's min/max, or the
// greedy search's range with optimized_qparams; bias = fp16(lo); scale = fp16((hi - bias) /
// (2^N - 1)) (1 when that is 0 or its reciprocal is infinite); q = clamp(lrintf((x - bias) / scale
// as x * (1 / scale)), 0, 2^N - 1); element k in bits [N (k % (8/N)), ...) of byte k / (8/N).
template <int Bits>
at::Tensor nbit_prepack_cpu(const at::Tensor& weight, bool optimized_qparams, int64_t nbins,
                            double ratio) {
  const char* op = Bits == 4 ? "embedding_bag_4bit_prepack" : "embedding_bag_2bit_prepack";
  constexpr int64_t kPer = 8 / Bits;  // codes per byte
  constexpr int kQmax = (1 << Bits) - 1;
  TORCH_CHECK(weight.defined() && weight.dim() == 2, "qplugin::", op,
              ": expected 2-D weight [num_embeddings, embedding_dim], got ",
              weight.defined() ? weight.dim() : 0, "-D");
  if (optimized_qparams) {
    // PyTorch loops forever for nbins < 0 and leaves the range unsearched for nbins == 0 or
    // ratio < 0; a ratio above 1 lets the range cross itself; nbins past INT_MAX overflows its
    // int bin count. qplugin raises instead.
    TORCH_CHECK(nbins >= 1 && nbins <= std::numeric_limits<int>::max(), "qplugin::", op,
                ": expected nbins >= 1 with optimized_qparams=True (and <= 2^31 - 1), got ",
                nbins);
    TORCH_CHECK(std::isfinite(ratio) && ratio >= 0.0 && ratio <= 1.0, "qplugin::", op,
                ": expected a ratio in [0, 1] with optimized_qparams=True, got ", ratio);
  }
  const at::Tensor w = float_weight(op, weight);
  const int64_t rows = w.size(0), cols = w.size(1);
  TORCH_CHECK(cols >= kPer && cols % kPer == 0, "qplugin::", op,
              Bits == 4 ? ": expected an even embedding_dim >= 2 (two 4-bit codes per byte), got "
                        : ": expected an embedding_dim that is a multiple of 4 (four 2-bit codes "
                          "per byte), got ",
              cols);
  const int64_t cb = cols / kPer, rb = cb + 4;
  at::Tensor out = at::empty({rows, rb}, at::device(at::kCPU).dtype(at::kByte));
  const float* src = w.data_ptr<float>();
  uint8_t* dst = out.data_ptr<uint8_t>();
  const int64_t work = optimized_qparams ? cols * 4 * std::min<int64_t>(nbins, 1 << 20) : cols;
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / work), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const float* x = src + r * cols;
      uint8_t* row = dst + r * rb;
      check_finite_row(op, x, cols, r);
      float mn, mx;
      if (optimized_qparams) {
        greedy_range(x, cols, nbins, ratio, Bits, &mn, &mx);
      } else {
        mn = *std::min_element(x, x + cols);
        mx = *std::max_element(x, x + cols);
      }
      const c10::Half mn_h(mn);
      mn = static_cast<float>(mn_h);
      const float range = mx - mn;
      float scale = range == 0 ? 1.0f : range / static_cast<float>(kQmax);
      const c10::Half scale_h0(scale);
      scale = static_cast<float>(scale_h0);
      if (scale == 0) scale = 1.0f;
      float inv = 1.0f / scale;
      if (std::isinf(inv)) {
        scale = 1.0f;
        inv = 1.0f;
      }
      const c10::Half scale_h(scale);
      for (int64_t k = 0; k < cb; ++k) {
        uint8_t byte = 0;
        for (int64_t j = 0; j < kPer; ++j) {
          const long q = std::min(static_cast<long>(kQmax),
                                  std::max(0L, std::lrintf((x[k * kPer + j] - mn) * inv)));
          byte = static_cast<uint8_t>(byte | (q << (j * Bits)));
        }
        row[k] = byte;
      }
      std::memcpy(row + cb, &scale_h, sizeof(scale_h));
      std::memcpy(row + cb + 2, &mn_h, sizeof(mn_h));
    }
  });
  return out;
}

at::Tensor fused_table(const char* op, const at::Tensor& t, int64_t min_dim) {
  TORCH_CHECK(t.defined() && !t.is_quantized() && t.scalar_type() == at::kByte, "qplugin::", op,
              ": expected a torch.uint8 fused table (from embedding_bag_*_prepack), got ",
              t.defined() ? std::string(c10::toString(t.scalar_type())) : std::string("None"));
  TORCH_CHECK(t.device().is_cpu(), "qplugin::", op, ": expected the table on the CPU, got ",
              t.device());
  TORCH_CHECK(t.dim() >= min_dim, "qplugin::", op, ": expected a table of rank >= ", min_dim,
              ", got ", t.dim(), "-D");
  return t.contiguous();
}

// out = fma(q, scale, bias) in float (as FBGEMM's AVX2 dequantizer, which PyTorch runs).
at::Tensor embedding_bag_byte_unpack_cpu(const at::Tensor& packed) {
  const char* op = "embedding_bag_byte_unpack";
  const at::Tensor t = fused_table(op, packed, 1);
  const int64_t rb = t.size(-1);
  TORCH_CHECK(rb >= 8, "qplugin::", op,
              ": expected rows of >= 8 bytes (codes, fp32 scale, fp32 bias), got ", rb);
  const int64_t cols = rb - 8, rows = rb > 0 ? t.numel() / rb : 0;
  at::Tensor out = empty_rows_like(t, cols, at::kFloat);
  const uint8_t* src = t.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / rb), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = src + r * rb;
      float s, b;
      std::memcpy(&s, row + cols, 4);
      std::memcpy(&b, row + cols + 4, 4);
      for (int64_t c = 0; c < cols; ++c) dst[r * cols + c] = std::fma(static_cast<float>(row[c]), s, b);
    }
  });
  return out;
}

// out = scale * q + bias in float (as PyTorch's nbit unpack), element k from bits
// [N (k % (8/N)), ...) of byte k / (8/N).
template <int Bits>
at::Tensor nbit_unpack_cpu(const at::Tensor& packed) {
  const char* op = Bits == 4 ? "embedding_bag_4bit_unpack" : "embedding_bag_2bit_unpack";
  constexpr int64_t kPer = 8 / Bits;
  const at::Tensor t = fused_table(op, packed, 2);
  TORCH_CHECK(t.dim() == 2, "qplugin::", op, ": expected a 2-D table, got ", t.dim(), "-D");
  const int64_t rows = t.size(0), rb = t.size(1);
  TORCH_CHECK(rb >= 4, "qplugin::", op,
              ": expected rows of >= 4 bytes (codes, fp16 scale, fp16 bias), got ", rb);
  const int64_t cb = rb - 4, cols = cb * kPer;
  at::Tensor out = at::empty({rows, cols}, at::device(at::kCPU).dtype(at::kFloat));
  const uint8_t* src = t.data_ptr<uint8_t>();
  float* dst = out.data_ptr<float>();
  at::parallel_for(0, rows, std::max<int64_t>(1, 16384 / rb), [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const uint8_t* row = src + r * rb;
      c10::Half hs, hb;
      std::memcpy(&hs, row + cb, 2);
      std::memcpy(&hb, row + cb + 2, 2);
      const float s = static_cast<float>(hs), b = static_cast<float>(hb);
      for (int64_t c = 0; c < cols; ++c) {
        const int q = (row[c / kPer] >> ((c % kPer) * Bits)) & ((1 << Bits) - 1);
        dst[r * cols + c] = s * static_cast<float>(q) + b;
      }
    }
  });
  return out;
}

// ---------------------------------------------------------------------------------------------
// Lookups.

at::Tensor index_tensor(const char* op, const char* arg, const at::Tensor& t) {
  TORCH_CHECK(!t.is_quantized() && (t.scalar_type() == at::kInt || t.scalar_type() == at::kLong),
              "qplugin::", op, ": expected ", arg, " of dtype torch.int32 or torch.int64, got ",
              c10::toString(t.scalar_type()));
  TORCH_CHECK(t.device().is_cpu(), "qplugin::", op, ": expected ", arg, " on the CPU, got ",
              t.device());
  return t.contiguous();
}

// The first m values of a contiguous int32 / int64 tensor into out. The pointer is taken once:
// data_ptr<T>() checks the tensor's storage and dtype on every call (~8 ns; per bag, that was
// most of the cost of small bags).
void read_indices(const at::Tensor& t, int64_t m, int64_t* out) {
  if (t.scalar_type() == at::kLong) {
    const int64_t* p = t.data_ptr<int64_t>();
    for (int64_t i = 0; i < m; ++i) out[i] = p[i];
  } else {
    const int32_t* p = t.data_ptr<int32_t>();
    for (int64_t i = 0; i < m; ++i) out[i] = static_cast<int64_t>(p[i]);
  }
}

struct Table {
  const uint8_t* data;
  int64_t rows;
  int64_t row_bytes;
  int64_t dim;
};

Table rowwise_table(const char* op, const at::Tensor& t, int bits, at::Tensor* keep) {
  *keep = fused_table(op, t, 2);
  TORCH_CHECK(keep->dim() == 2, "qplugin::", op,
              ": expected a 2-D fused table [num_embeddings, row_bytes], got ", keep->dim(), "-D");
  const int64_t rb = keep->size(1), extra = bits == 8 ? 8 : 4;
  TORCH_CHECK(rb >= extra, "qplugin::", op, ": expected rows of >= ", extra,
              " bytes (codes, then ", bits == 8 ? "fp32" : "fp16", " scale and bias), got ", rb);
  const int64_t dim = bits == 8 ? rb - 8 : (rb - 4) * (8 / bits);
  return {keep->data_ptr<uint8_t>(), keep->size(0), rb, dim};
}

// Rows prefetched ahead of the one being reduced (its first line; the other lines at half the
// distance): ~DRAM latency / time per row. Measured on the 1M x 128 bench: 8-bit rows best at
// 64-96, 4-bit rows (2 lines, less work per row) at ~40; a 1.4 MB table at 16.
constexpr int64_t kPrefetchRows = 64;
constexpr int64_t kPrefetchRows4 = 40;
constexpr int64_t kNearBytes = 16 << 20;

// This core's L2 size (sysconf; 512 KiB, Zen 3's, when it does not say).
int64_t l2_bytes() {
  static const int64_t bytes = [] {
    const long v = sysconf(_SC_LEVEL2_CACHE_SIZE);
    return v > 0 ? static_cast<int64_t>(v) : int64_t(512) << 10;
  }();
  return bytes;
}

// The shared lookup: bags of rows of `table`, reduced by `mode`. Validates everything first.
at::Tensor lookup(const char* op, int bits, const Table& tab, const EmbeddingKernelTable& k,
                  const at::Tensor& indices_in, const c10::optional<at::Tensor>& offsets_in,
                  int64_t mode, bool pruned_weights,
                  const c10::optional<at::Tensor>& per_sample_weights,
                  const c10::optional<at::Tensor>& mapping_in, bool include_last_offset) {
  TORCH_CHECK(mode == 0 || mode == 1 || mode == 2, "qplugin::", op,
              ": expected mode 0 (sum), 1 (mean) or 2 (max), got ", mode);
  TORCH_CHECK(indices_in.defined(), "qplugin::", op, ": expected an indices tensor, got None");
  const at::Tensor indices = index_tensor(op, "indices", indices_in);
  const int64_t n = indices.numel();

  // Bag bounds: nbags + 1 non-decreasing positions into indices.
  std::vector<int64_t> bounds;
  if (offsets_in.has_value() && offsets_in->defined()) {
    TORCH_CHECK(indices.dim() == 1, "qplugin::", op,
                ": expected 1-D indices when offsets are given, got ", indices.dim(),
                "-D indices; pass 2-D indices [bags, bag_size] without offsets");
    const at::Tensor offsets = index_tensor(op, "offsets", *offsets_in);
    TORCH_CHECK(offsets.dim() == 1, "qplugin::", op, ": expected 1-D offsets, got ",
                offsets.dim(), "-D");
    const int64_t m = offsets.numel();
    TORCH_CHECK(!include_last_offset || m >= 1, "qplugin::", op,
                ": expected at least one offset with include_last_offset=True, got none");
    bounds.resize(static_cast<size_t>(include_last_offset ? m : m + 1));
    read_indices(offsets, m, bounds.data());
    if (!include_last_offset) bounds[m] = n;
  } else {
    TORCH_CHECK(indices.dim() == 2, "qplugin::", op,
                ": expected offsets for 1-D indices (or 2-D indices [bags, bag_size] without "
                "offsets), got ", indices.dim(), "-D indices and no offsets");
    const int64_t B = indices.size(0), L = indices.size(1);
    bounds.resize(static_cast<size_t>(B + 1));
    for (int64_t b = 0; b <= B; ++b) bounds[b] = b * L;
  }
  const int64_t nbags = static_cast<int64_t>(bounds.size()) - 1;
  TORCH_CHECK(nbags == 0 || bounds[0] >= 0, "qplugin::", op,
              ": expected offsets >= 0, got ", bounds[0], " at position 0");
  for (int64_t b = 0; b < nbags; ++b) {
    TORCH_CHECK(bounds[b + 1] >= bounds[b], "qplugin::", op,
                ": expected non-decreasing offsets, got ", bounds[b + 1], " after ", bounds[b],
                " at position ", b + 1);
  }
  TORCH_CHECK(nbags == 0 || bounds[nbags] <= n, "qplugin::", op,
              ": expected offsets <= the number of indices (", n, "), got ", bounds[nbags]);

  at::Tensor weights;
  if (per_sample_weights.has_value() && per_sample_weights->defined()) {
    const at::Tensor& w = *per_sample_weights;
    TORCH_CHECK(mode == 0, "qplugin::", op,
                ": expected per_sample_weights only with mode 0 (sum), got mode ", mode,
                " (as torch.nn.functional.embedding_bag)");
    TORCH_CHECK(!w.is_quantized() && (w.scalar_type() == at::kFloat || w.scalar_type() == at::kHalf),
                "qplugin::", op, ": expected per_sample_weights of dtype torch.float32 or "
                "torch.float16, got ", c10::toString(w.scalar_type()));
    TORCH_CHECK(w.device().is_cpu(), "qplugin::", op,
                ": expected per_sample_weights on the CPU, got ", w.device());
    TORCH_CHECK(w.numel() == n && (w.dim() == 1 || w.sizes() == indices.sizes()), "qplugin::",
                op, ": expected per_sample_weights of the shape of indices ", indices.sizes(),
                ", got ", w.sizes());
    weights = w.to(at::kFloat).contiguous();
  }

  at::Tensor mapping;
  if (pruned_weights) {
    TORCH_CHECK(mapping_in.has_value() && mapping_in->defined(), "qplugin::", op,
                ": expected compressed_indices_mapping with pruned_weights=True, got None");
    mapping = *mapping_in;
    TORCH_CHECK(!mapping.is_quantized() && mapping.scalar_type() == at::kInt && mapping.dim() == 1,
                "qplugin::", op, ": expected a 1-D torch.int32 compressed_indices_mapping, got ",
                mapping.dim(), "-D ", c10::toString(mapping.scalar_type()));
    TORCH_CHECK(mapping.device().is_cpu(), "qplugin::", op,
                ": expected compressed_indices_mapping on the CPU, got ", mapping.device());
    mapping = mapping.contiguous();
    // As PyTorch: the mapping [0] marks a table that was not pruned after all.
    if (mapping.numel() == 1 && mapping.data_ptr<int32_t>()[0] == 0) mapping = at::Tensor();
  }
  const int32_t* map = mapping.defined() ? mapping.data_ptr<int32_t>() : nullptr;
  const int64_t limit = map != nullptr ? mapping.numel() : tab.rows;

  at::Tensor out = at::empty({nbags, tab.dim}, at::device(at::kCPU).dtype(at::kFloat));
  if (nbags == 0 || tab.dim == 0) return out.zero_();

  BagArgs a{};
  a.table = tab.data;
  a.row_bytes = tab.row_bytes;
  a.dim = tab.dim;
  a.indices = indices.data_ptr();
  a.indices_64 = indices.scalar_type() == at::kLong;
  a.offsets = bounds.data();
  a.mapping = map;
  a.weights = weights.defined() ? weights.data_ptr<float>() : nullptr;
  a.mode = static_cast<BagMode>(mode);
  a.out = out.data_ptr<float>();
  auto run = bits == 8 ? k.bag_8bit : bits == 4 ? k.bag_4bit : k.bag_2bit;
  // Tables within the caches' reach (<= kNearBytes) get a short distance: their rows arrive in
  // tens of ns, and rows prefetched far ahead would only compete for the cache (kNearPrefetch:
  // without mapping or weights, the lean row walk). Small tables within this core's L2 get none:
  // prefetching cost more than it saved there (Zen 4, 81,920 rows of 16 columns from a 0.5 MB
  // table: 0.22 ms without, 0.31 with). "Small": at most a quarter of L2 (512 KB at least), or
  // rows under 32 columns, whose work per row is less than the prefetch's. A larger table
  // within a large L2 still gains: an Intel Xeon with a 2 MB L2, 81,920 rows, none -> L1
  // prefetch: 64 columns 8-bit (1.44 MB) 0.36 -> 0.27 ms, 4-bit (0.8 MB) 0.31 -> 0.28; 32
  // columns 4-bit (1.44 MB) 0.29 -> 0.23; but 16 columns 8-bit (1.44 MB) 0.14 -> 0.17. A table
  // filling most of L2 does not stay there beside the indices and output: a Zen 1 (512 KB L2),
  // 16 columns 8-bit (0.48 MB), none -> L1 prefetch 0.351 -> 0.307 ms (torch.ao 0.341); so
  // "within L2" is at most three quarters of it (the Xeon's 1.44 MB of 2 MB stays quiet).
  const int64_t table_bytes = tab.rows * tab.row_bytes;
  const bool quiet = table_bytes <= l2_bytes() / 4 * 3 &&
                     (tab.dim < 32 || table_bytes <= std::max<int64_t>(l2_bytes() / 4, 512 << 10));
  a.prefetch = quiet                         ? 0
               : table_bytes <= kNearBytes   ? kernels::kNearPrefetch
               : bits == 8                   ? kPrefetchRows
                                             : kPrefetchRows4;
  a.far_regs = kernels::embedding_far_regs();

  const int64_t used = bounds[nbags] - bounds[0];
  const int64_t avg = std::max<int64_t>(1, used / nbags);
  const int64_t grain = std::max<int64_t>(1, 32768 / (avg * std::max<int64_t>(tab.dim, 16)));
  at::parallel_for(0, nbags, grain, [&](int64_t b0, int64_t b1) {
    // Validate this chunk's positions before any of its rows is read: one vectorized scan;
    // only when it fails (or with a mapping, whose values need checking too) the loop that
    // names the first bad position.
    const bool fast_ok = map == nullptr &&
                         k.indices_in_range(a.indices, a.indices_64, bounds[b0], bounds[b1], limit);
    for (int64_t i = fast_ok ? bounds[b1] : bounds[b0]; i < bounds[b1]; ++i) {
      const int64_t ix = a.indices_64 ? static_cast<const int64_t*>(a.indices)[i]
                                      : static_cast<const int32_t*>(a.indices)[i];
      TORCH_CHECK(ix >= 0 && ix < limit, "qplugin::", op, ": expected indices in [0, ", limit,
                  map != nullptr ? ") (the length of compressed_indices_mapping)"
                                 : ") (num_embeddings)",
                  ", got ", ix, " at position ", i);
      if (map != nullptr) {
        TORCH_CHECK(map[ix] >= -1 && map[ix] < tab.rows, "qplugin::", op,
                    ": expected compressed_indices_mapping values in [-1, ", tab.rows,
                    ") (-1: pruned; else a row of the table), got ", map[ix], " at mapping[",
                    ix, "]");
      }
    }
    run(a, b0, b1);
  });
  return out;
}

template <int Bits>
at::Tensor rowwise_offsets_cpu(const at::Tensor& weight, const at::Tensor& indices,
                               const c10::optional<at::Tensor>& offsets, bool /*scale_grad_by_freq*/,
                               int64_t mode, bool pruned_weights,
                               const c10::optional<at::Tensor>& per_sample_weights,
                               const c10::optional<at::Tensor>& compressed_indices_mapping,
                               bool include_last_offset) {
  const char* op = Bits == 8   ? "embedding_bag_byte_rowwise_offsets"
                   : Bits == 4 ? "embedding_bag_4bit_rowwise_offsets"
                               : "embedding_bag_2bit_rowwise_offsets";
  at::Tensor keep;
  const Table tab = rowwise_table(op, weight, Bits, &keep);
  return lookup(op, Bits, tab, kernels::embedding_table(), indices, offsets, mode,
                pruned_weights, per_sample_weights, compressed_indices_mapping,
                include_last_offset);
}

Table packed_table(const char* op, const Packed& p, int bits) {
  TORCH_CHECK(p, "qplugin::", op,
              ": expected packed weights (qplugin.EmbeddingPackedParams), got None");
  TORCH_CHECK(p->bit_rate() == bits, "qplugin::", op, ": expected a ", bits,
              "-bit packed table (", bits == 8 ? "torch.quint8" : "torch.quint4x2",
              " weight), got a ", p->bit_rate(), "-bit one; use ",
              p->bit_rate() == 8 ? "the _byte op" : "the _4bit op");
  return {p->table().data_ptr<uint8_t>(), p->num_embeddings(), p->table().size(1),
          p->embedding_dim()};
}

template <int Bits>
at::Tensor embedding_bag_packed_cpu(const Packed& p, const at::Tensor& indices,
                                    const c10::optional<at::Tensor>& offsets,
                                    bool /*scale_grad_by_freq*/, int64_t mode, bool pruned_weights,
                                    const c10::optional<at::Tensor>& per_sample_weights,
                                    const c10::optional<at::Tensor>& compressed_indices_mapping,
                                    bool include_last_offset) {
  const char* op = Bits == 8 ? "embedding_bag_byte" : "embedding_bag_4bit";
  const Table tab = packed_table(op, p, Bits);
  return lookup(op, Bits, tab, p->kernels(), indices, offsets, mode, pruned_weights,
                per_sample_weights, compressed_indices_mapping, include_last_offset);
}

// embedding_byte / embedding_4bit: one row per index, output indices.shape + [embedding_dim].
template <int Bits>
at::Tensor embedding_packed_cpu(const Packed& p, const at::Tensor& indices_in,
                                bool pruned_weights) {
  const char* op = Bits == 8 ? "embedding_byte" : "embedding_4bit";
  const Table tab = packed_table(op, p, Bits);
  TORCH_CHECK(!pruned_weights, "qplugin::", op,
              ": expected pruned_weights=False (this op takes no compressed_indices_mapping), "
              "got True; use embedding_bag_", Bits == 8 ? "byte" : "4bit",
              " with a compressed_indices_mapping");
  TORCH_CHECK(indices_in.defined(), "qplugin::", op, ": expected an indices tensor, got None");
  const at::Tensor indices = index_tensor(op, "indices", indices_in);
  const at::Tensor flat = indices.reshape({indices.numel(), 1});
  at::Tensor out = lookup(op, Bits, tab, p->kernels(), flat, c10::nullopt, /*mode=*/0,
                          /*pruned_weights=*/false, c10::nullopt, c10::nullopt,
                          /*include_last_offset=*/false);
  std::vector<int64_t> shape(indices.sizes().begin(), indices.sizes().end());
  shape.push_back(tab.dim);
  return out.view(shape);
}

Packed embedding_bag_prepack_quantized_cpu(const at::Tensor& weight) {
  return EmbeddingPackedParams::prepack(weight, "embedding_bag_prepack");
}

at::Tensor embedding_bag_unpack(const Packed& p) {
  TORCH_CHECK(p, "qplugin::embedding_bag_unpack: expected packed weights "
                 "(qplugin.EmbeddingPackedParams), got None");
  return p->unpack();
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

TORCH_LIBRARY_IMPL(qplugin, CPU, m) {
  using namespace qplugin::ops;
  m.impl("embedding_bag_byte_prepack", TORCH_FN(embedding_bag_byte_prepack_cpu));
  m.impl("embedding_bag_4bit_prepack", TORCH_FN(nbit_prepack_cpu<4>));
  m.impl("embedding_bag_2bit_prepack", TORCH_FN(nbit_prepack_cpu<2>));
  m.impl("embedding_bag_byte_unpack", TORCH_FN(embedding_bag_byte_unpack_cpu));
  m.impl("embedding_bag_4bit_unpack", TORCH_FN(nbit_unpack_cpu<4>));
  m.impl("embedding_bag_2bit_unpack", TORCH_FN(nbit_unpack_cpu<2>));
  m.impl("embedding_bag_byte_rowwise_offsets", TORCH_FN(rowwise_offsets_cpu<8>));
  m.impl("embedding_bag_4bit_rowwise_offsets", TORCH_FN(rowwise_offsets_cpu<4>));
  m.impl("embedding_bag_2bit_rowwise_offsets", TORCH_FN(rowwise_offsets_cpu<2>));
  m.impl("embedding_bag_byte", TORCH_FN(embedding_bag_packed_cpu<8>));
  m.impl("embedding_bag_4bit", TORCH_FN(embedding_bag_packed_cpu<4>));
  m.impl("embedding_byte", TORCH_FN(embedding_packed_cpu<8>));
  m.impl("embedding_4bit", TORCH_FN(embedding_packed_cpu<4>));
  // A plain tensor reaches the packed prepack too, for its clear "expected a quantized weight".
  m.impl("embedding_bag_prepack", TORCH_FN(embedding_bag_prepack_quantized_cpu));
}

// Inference only (the bags' float per_sample_weights): outputs never require grad
// (common/non_differentiable.h says why).
TORCH_LIBRARY_IMPL(qplugin, Autograd, m) {
  for (const char* op : {"embedding_bag_byte_rowwise_offsets", "embedding_bag_4bit_rowwise_offsets",
                         "embedding_bag_2bit_rowwise_offsets", "embedding_bag_byte",
                         "embedding_bag_4bit"}) {
    m.impl(op, qplugin::non_differentiable());
  }
}

TORCH_LIBRARY_IMPL(qplugin, QuantizedCPU, m) {
  m.impl("embedding_bag_prepack", TORCH_FN(qplugin::ops::embedding_bag_prepack_quantized_cpu));
}

// No tensor argument to dispatch on: one kernel for every key.
TORCH_LIBRARY_IMPL(qplugin, CatchAll, m) {
  m.impl("embedding_bag_unpack", TORCH_FN(qplugin::ops::embedding_bag_unpack));
}

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(cpu_embedding_kernel)
