// Exact unary maps on quantized tensors, shared by the activation kernels
// (activation_kernel.cpp): on 8-bit inputs a 256-entry table computed
// per call (y = clamp(nearbyint(f((q - zp_in) * s_in) / s_out) + zp_out), f in double), applied
// in one vector lookup pass; on qint32 the same double math per element. The input is a QArg
// (common/qarg.h): a quantized tensor (legacy door) or plain codes with their qparams (the
// `.plain` overloads); the output is made with new_output on the same door, so both doors run
// the same code on the same bytes.
#pragma once
#include <ATen/ATen.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/pixel_blocks.h"

namespace qplugin {
namespace ops {
namespace unary {

constexpr int64_t kGrain = 64 * 1024;

// Output memory format rule of PyTorch's elementwise quantized ops:
// qx.contiguous(qx.suggest_memory_format()).
inline at::MemoryFormat keep_format(const at::Tensor& x) { return x.suggest_memory_format(); }
inline at::MemoryFormat keep_format(const QArg& x) { return x.suggest_memory_format(); }

// Identity of an 8-bit table: the op (its name literal), the input dtype and qparams, the output
// qparams and every other parameter the map depends on (extra). Building a table evaluates the
// function 256 times in double (~5 us for exp-based maps); models call each op with the same
// parameters every time, so each thread keeps its last few tables.
struct TableKey {
  const char* op = nullptr;
  int dtype = 0;
  double v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  bool operator==(const TableKey& o) const {
    return op == o.op && dtype == o.dtype && std::memcmp(v, o.v, sizeof(v)) == 0;
  }
};

struct TableCache {
  static constexpr int kSlots = 8;
  TableKey keys[kSlots];
  uint8_t tables[kSlots][256];
  int next = 0;
  bool find(const TableKey& k, uint8_t* out) const {
    for (int i = 0; i < kSlots; ++i) {
      if (keys[i].op != nullptr && keys[i] == k) {
        std::memcpy(out, tables[i], 256);
        return true;
      }
    }
    return false;
  }
  void put(const TableKey& k, const uint8_t* t) {
    keys[next] = k;
    std::memcpy(tables[next], t, 256);
    next = (next + 1) % kSlots;
  }
};

inline TableCache& table_cache() {
  static thread_local TableCache cache;
  return cache;
}

// Key of map_unary(op, qx, out_scale, out_zp, ...) with up to 4 extra parameters.
inline TableKey make_key(const char* op, const QArg& qx, double out_scale, int64_t out_zp,
                         std::initializer_list<double> extra) {
  TableKey k;
  k.op = op;
  k.dtype = static_cast<int>(qx.scalar_type());
  k.v[0] = qx.q_scale();
  k.v[1] = static_cast<double>(qx.q_zero_point());
  k.v[2] = out_scale;
  k.v[3] = static_cast<double>(out_zp);
  int i = 4;
  for (double e : extra) {
    TORCH_INTERNAL_ASSERT(i < 8, "qplugin: TableKey holds at most 4 extra parameters");
    k.v[i++] = e;
  }
  return k;
}

// y = g(q) for every code q of qx, g(q) the output code (in range). The output has the given
// qparams and memory format. inplace: write into qx (whose qparams must be the output's) and
// return it. key: cache the 8-bit table under it (it must capture everything g depends on).
template <typename G>
at::Tensor map_codes(const char* op, const QArg& qx, double out_scale, int64_t out_zp,
                     at::MemoryFormat fmt, G g, bool inplace = false,
                     const TableKey* key = nullptr) {
  checks::check_output_qparams(op, out_scale, out_zp, qx.scalar_type());
  if (inplace) {
    TORCH_INTERNAL_ASSERT(!qx.is_plain(), "qplugin::", op, ": in-place map on the PT2 door");
    TORCH_INTERNAL_ASSERT(qx.q_scale() == out_scale && qx.q_zero_point() == out_zp,
                          "qplugin::", op, ": in-place map with new qparams");
    fmt = keep_format(qx);
  }
  // Channels-last 8-bit input to a contiguous output: look up and transpose in one pass.
  const bool cl_to_nchw = !inplace && fmt == at::MemoryFormat::Contiguous && !qx.is_contiguous() &&
                          qx.scalar_type() != at::kQInt32 &&
                          ((qx.dim() == 4 && qx.is_contiguous(at::MemoryFormat::ChannelsLast)) ||
                           (qx.dim() == 5 && qx.is_contiguous(at::MemoryFormat::ChannelsLast3d)));
  const bool dense_in_place = inplace && qx.is_contiguous(fmt);
  at::Tensor x = (cl_to_nchw || dense_in_place) ? qx.tensor() : qx.tensor().contiguous(fmt);
  at::Tensor y = dense_in_place ? qx.tensor()
                                : new_output(qx, qx.sizes(), qx.scalar_type(), out_scale, out_zp,
                                             fmt);
  const int64_t n = x.numel();
  if (n > 0) {
    if (qx.scalar_type() == at::kQInt32) {
      const int32_t* xp = reinterpret_cast<const int32_t*>(x.data_ptr());
      int32_t* yp = reinterpret_cast<int32_t*>(y.data_ptr());
      at::parallel_for(0, n, kGrain / 16, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) {
          yp[i] = static_cast<int32_t>(g(static_cast<int64_t>(xp[i])));
        }
      });
    } else {
      // 8-bit: table indexed by the raw byte (the two's-complement pattern for qint8).
      const bool is_signed = qx.scalar_type() == at::kQInt8;
      uint8_t table[256];
      if (key == nullptr || !table_cache().find(*key, table)) {
        for (int raw = 0; raw < 256; ++raw) {
          const int64_t q = is_signed ? static_cast<int8_t>(raw) : raw;
          table[raw] = static_cast<uint8_t>(g(q) & 0xFF);
        }
        if (key != nullptr) table_cache().put(*key, table);
      }
      const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());
      uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
      const auto& k = kernels::table();
      if (cl_to_nchw) {
        const int64_t N = x.size(0), C = x.size(1), HW = n / (N * C);
        for_pixel_blocks</*kPix=*/256>(N, C, HW, kGrain, [&](int64_t img, int64_t p0, int64_t p1) {
          k.lut8_nhwc_to_nchw(xp + img * C * HW, yp + img * C * HW, C, HW, p0, p1, table);
        });
      } else {
        at::parallel_for(0, n, kGrain,
                         [&](int64_t b, int64_t e) { k.lut8(xp + b, yp + b, e - b, table); });
      }
    }
  }
  if (inplace && !dense_in_place) {
    qx.tensor().copy_(y);  // strided in-place: write back through qx's own strides
    return qx.tensor();
  }
  return y;
}

// y = quantize(f(dequantize(q))) with f evaluated in double and exact rounding; no table cache.
template <typename F>
at::Tensor map_unary(const char* op, const QArg& qx, double out_scale, int64_t out_zp,
                     at::MemoryFormat fmt, F f, bool inplace = false,
                     const TableKey* key = nullptr) {
  const double in_scale = qx.q_scale();
  const int64_t in_zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  return map_codes(
      op, qx, out_scale, out_zp, fmt,
      [&](int64_t q) {
        const double v = f((static_cast<double>(q) - in_zp) * in_scale);
        return quantize_exact(v, out_scale, out_zp, r.first, r.second);
      },
      inplace, key);
}

// map_unary with the 8-bit table cached per thread under (op, dtype, qparams, params): `params`
// must list every value f depends on besides the qparams (e.g. {alpha}); `op` must name one f.
template <typename F>
at::Tensor map_unary_cached(const char* op, const QArg& qx, double out_scale,
                            int64_t out_zp, at::MemoryFormat fmt, F f,
                            std::initializer_list<double> params, bool inplace = false) {
  const TableKey key = make_key(op, qx, out_scale, out_zp, params);
  return map_unary(op, qx, out_scale, out_zp, fmt, f, inplace, &key);
}

}  // namespace unary
}  // namespace ops
}  // namespace qplugin
