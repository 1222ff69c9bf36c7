// QuantizedCPU (and CPU, for a clear error on float input) kernels of the resampling ops:
// nearest, nearest-exact (1d/2d/3d) and linear/bilinear/trilinear upsampling.
// Schemas: ops/upsample.cpp. Microkernels: kernels/pool/* via kernels/pool/pool_dispatch.h.
// Source indices and weights are computed exactly as PyTorch's (aten/src/ATen/native/UpSample.h:
// float scales, the output == input and output == 2 * input shortcuts of nearest), so nearest
// modes are bit-identical to PyTorch. Linear modes interpolate raw codes separably in float:
// H = a0 * x[w0] + a1 * x[w1] per input row, then y = round_half_even(b0 * H[h0] + b1 * H[h1])
// (trilinear: one more level, c0 * (..d0..) + c1 * (..d1..)), PyTorch's op order; input qparams
// propagate to the output.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/pool/pool_dispatch.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using kernels::LerpQ;

float compute_scales_value(c10::optional<double> scale, int64_t in, int64_t out) {
  return (scale.has_value() && *scale > 0.) ? static_cast<float>(1.0 / *scale)
                                            : (static_cast<float>(in) / out);
}

// PyTorch's nearest_idx / nearest_exact_idx.
std::vector<int64_t> nearest_indices(int64_t in, int64_t out, c10::optional<double> scale,
                                     bool exact) {
  std::vector<int64_t> idx(out);
  if (!exact && out == in) {
    for (int64_t o = 0; o < out; ++o) idx[o] = o;
  } else if (!exact && out == 2 * in) {
    for (int64_t o = 0; o < out; ++o) idx[o] = o >> 1;
  } else {
    const float s = compute_scales_value(scale, in, out);
    for (int64_t o = 0; o < out; ++o) {
      // Clamped in float before the cast: a tiny scale factor makes s huge (or inf), and a
      // float -> int64 conversion out of range is undefined.
      const float f = exact ? std::floor(static_cast<float>((o + 0.5) * s))
                            : std::floor(o * s);
      // NaN (0 * inf) -> 0.
      idx[o] = !(f >= 0.f) ? 0 : f < static_cast<float>(in - 1) ? static_cast<int64_t>(f) : in - 1;
    }
  }
  return idx;
}

// PyTorch's area_pixel_compute_scale / area_pixel_compute_source_index (cubic = false).
struct LinearDim {
  std::vector<int32_t> i0, i1;
  std::vector<float> w0, w1;
};

LinearDim linear_weights(int64_t in, int64_t out, bool align_corners, c10::optional<double> scale) {
  LinearDim d;
  const float s = align_corners ? (out > 1 ? static_cast<float>(in - 1) / (out - 1) : 0.0f)
                                : compute_scales_value(scale, in, out);
  for (int64_t o = 0; o < out; ++o) {
    if (out == in) {
      // As PyTorch's compute_source_index_and_lambda: a dimension whose size does not change is
      // copied whatever scale is given (F.interpolate(scale_factor=1.04) on 8 pixels gives the
      // input; torch's quantized bilinear copies when both sizes match). Found by
      // QPLUGIN_FUZZ=long (resample seed 542).
      d.i0.push_back(static_cast<int32_t>(o));
      d.i1.push_back(static_cast<int32_t>(o));
      d.w0.push_back(1.0f);
      d.w1.push_back(0.0f);
      continue;
    }
    float src;
    if (align_corners) {
      src = s * o;
    } else {
      src = s * (o + 0.5f) - 0.5f;
      if (!(src >= 0.f)) src = 0.f;  // negative, or NaN from an infinite step
    }
    // Clamped in float first: an out-of-range float -> int64 conversion is undefined.
    int64_t i = src < static_cast<float>(in - 1) ? static_cast<int64_t>(src) : in - 1;
    const int64_t ip = i < in - 1 ? 1 : 0;
    // Clamped to [0, 1] as PyTorch's compute_source_index_and_lambda: src beyond the last
    // input (an extreme scales argument) reads the last input with weight 1.
    float l1 = std::min(std::max(src - static_cast<float>(i), 0.0f), 1.0f);
    const float l0 = 1.0f - l1;
    d.i0.push_back(static_cast<int32_t>(i));
    d.i1.push_back(static_cast<int32_t>(i + ip));
    d.w0.push_back(l0);
    d.w1.push_back(l1);
  }
  return d;
}

// Shared front: validation and output allocation. nd spatial dims; returns 5-D-ready sizes.
struct Prep {
  at::Tensor x;  // dense input in the chosen layout
  at::Tensor y;
  bool cl;
  at::ScalarType qtype;  // the quantized dtype (either door, common/qarg.h)
  int64_t zp;
  int64_t N, C;
  int64_t in[3], out[3];  // (D, H, W), leading 1s
};

Prep prepare(const char* op, int64_t nd, const QArg& qa, at::IntArrayRef output_size) {
  const at::Tensor& qx = qa.tensor();
  TORCH_CHECK(qx.dim() == nd + 2, "qplugin::", op, ": expected a ", nd + 2, "-D (N, C, ",
              nd == 1 ? "L" : nd == 2 ? "H, W" : "D, H, W", ") input, got ", qx.dim(), "-D");
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd, "qplugin::", op,
              ": expected output_size of ", nd, " ints, got ", output_size.size(), " values ",
              output_size);
  Prep p;
  p.qtype = qa.scalar_type();
  p.zp = qa.q_zero_point();
  p.N = qx.size(0);
  p.C = qx.size(1);
  for (int i = 0; i < 3; ++i) p.in[i] = p.out[i] = 1;
  for (int64_t i = 0; i < nd; ++i) {
    TORCH_CHECK(output_size[i] > 0, "qplugin::", op, ": expected positive output sizes, got ",
                output_size);
    TORCH_CHECK(qx.size(2 + i) > 0, "qplugin::", op,
                ": expected non-empty spatial dimensions, got input of shape ", qx.sizes());
    p.in[3 - nd + i] = qx.size(2 + i);
    p.out[3 - nd + i] = output_size[i];
  }
  std::vector<int64_t> shape{p.N, p.C};
  for (int64_t i = 0; i < nd; ++i) shape.push_back(output_size[i]);
  checks::check_numel(op, "an output", shape);  // hostile output sizes (checks.h)
  const auto cl_fmt = nd == 3 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
  p.cl = nd >= 2 && qx.suggest_memory_format() == cl_fmt;
  p.y = new_output(qa, shape, qa.scalar_type(), qa.q_scale(), qa.q_zero_point(),
                   p.cl ? cl_fmt : at::MemoryFormat::Contiguous);
  p.x = p.cl ? qx.contiguous(cl_fmt) : qx.contiguous();
  return p;
}

// Channels-last nearest x2 along W (iw[o] = o / 2) of one input row of W pixels of P bytes:
// each pixel to two adjacent output pixels of y0 and, with Two, of y1 (the next output row, when
// it has the same source row: one pass writes both, instead of a memcpy call per pixel and then
// a copy of the row). 16-byte moves for P a multiple of 16 (one load, 2 or 4 stores). On a Xeon:
// 1x64x112x112 -> 224x224 0.244 -> 0.207 ms (PyTorch 0.28-0.29); 1x128x56x56 stays at PyTorch's
// time (~0.08-0.10 ms, store-bound either way).
template <bool Two>
void dup2_pixels_cl(const uint8_t* x, int64_t W, int64_t P, uint8_t* y0, uint8_t* y1) {
  if (P % 16 == 0) {
    for (int64_t w = 0; w < W; ++w) {
      const uint8_t* s = x + w * P;
      uint8_t* d0 = y0 + 2 * w * P;
      uint8_t* d1 = Two ? y1 + 2 * w * P : nullptr;
      for (int64_t off = 0; off < P; off += 16) {
        uint8_t v[16];
        std::memcpy(v, s + off, 16);
        std::memcpy(d0 + off, v, 16);
        std::memcpy(d0 + P + off, v, 16);
        if (Two) {
          std::memcpy(d1 + off, v, 16);
          std::memcpy(d1 + P + off, v, 16);
        }
      }
    }
    return;
  }
  for (int64_t w = 0; w < W; ++w) {
    std::memcpy(y0 + 2 * w * P, x + w * P, P);
    std::memcpy(y0 + (2 * w + 1) * P, x + w * P, P);
  }
  if (Two) std::memcpy(y1, y0, 2 * W * P);
}

// Nearest resampling (index tables per dimension).
template <typename T>
void resample_run(const Prep& p, const std::vector<int64_t>& id, const std::vector<int64_t>& ih,
                  const std::vector<int64_t>& iw) {
  const auto& K = kernels::pool_table().of<T>();
  const int64_t D = p.in[0], H = p.in[1], W = p.in[2];
  const int64_t OD = p.out[0], OH = p.out[1], OW = p.out[2];
  const T* x = reinterpret_cast<const T*>(p.x.data_ptr());
  T* y = reinterpret_cast<T*>(p.y.data_ptr());
  std::vector<int32_t> iw32(iw.begin(), iw.end());
  bool dup = OW == 2 * W, ident = OW == W;
  for (int64_t o = 0; o < OW; ++o) {
    dup = dup && iw[o] == (o >> 1);
    ident = ident && iw[o] == o;
  }
  if (p.cl) {
    const int64_t C = p.C;
    const int64_t rows = p.N * OD * OH;
    at::parallel_for(0, rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, OW * C)),
                     [&](int64_t b, int64_t e) {
      for (int64_t r = b; r < e; ++r) {
        const int64_t oh = r % OH, od = (r / OH) % OD, n = r / (OH * OD);
        T* yr = y + r * OW * C;
        // Same source row as the previous output row: copy that row.
        if (r > b && oh > 0 && ih[oh] == ih[oh - 1]) {
          std::memcpy(yr, yr - OW * C, OW * C * sizeof(T));
          continue;
        }
        // Same source plane as the previous output plane: copy that plane -- only if this chunk
        // wrote all of it (r - OH >= b); another thread's rows may not be written yet (a race
        // found by tests/fuzz: garbage planes in 3-d nearest(-exact) channels-last output).
        if (oh == 0 && od > 0 && r - OH >= b && id[od] == id[od - 1]) {
          std::memcpy(yr, yr - OH * OW * C, OW * C * sizeof(T));
          continue;
        }
        const T* xr = x + ((n * D + id[od]) * H + ih[oh]) * W * C;
        if (ident) {
          std::memcpy(yr, xr, W * C * sizeof(T));
        } else if (dup) {
          const auto* xb = reinterpret_cast<const uint8_t*>(xr);
          auto* yb = reinterpret_cast<uint8_t*>(yr);
          const int64_t P = C * static_cast<int64_t>(sizeof(T));
          // The next output row too, when it is this chunk's and has the same source row; the
          // loop then skips that row (++r).
          if (r + 1 < e && oh + 1 < OH && ih[oh + 1] == ih[oh]) {
            dup2_pixels_cl<true>(xb, W, P, yb, yb + OW * P);
            ++r;
          } else {
            dup2_pixels_cl<false>(xb, W, P, yb, nullptr);
          }
        } else {
          for (int64_t o = 0; o < OW; ++o)
            std::memcpy(yr + o * C, xr + iw[o] * C, C * sizeof(T));
        }
      }
    });
    return;
  }
  const int64_t rows = p.N * p.C * OD * OH;
  at::parallel_for(0, rows, std::max<int64_t>(1, 65536 / std::max<int64_t>(1, OW)),
                   [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) {
      const int64_t oh = r % OH, od = (r / OH) % OD, pl = r / (OH * OD);
      T* yr = y + r * OW;
      if (r > b && oh > 0 && ih[oh] == ih[oh - 1]) {
        std::memcpy(yr, yr - OW, OW * sizeof(T));
        continue;
      }
      const T* xr = x + ((pl * D + id[od]) * H + ih[oh]) * W;
      if (ident) std::memcpy(yr, xr, W * sizeof(T));
      else if (dup) K.dup2(xr, yr, W);
      else K.gather(xr, yr, OW, iw32.data());
    }
  });
}

// A thread's cache of horizontal rows (element type E) keyed by input row id, 4 slots. `keep`:
// a row fetched just before and still needed, never evicted by this fetch; fill(dst) computes
// a missing row.
template <typename E>
class HRowCache {
 public:
  explicit HRowCache(int64_t rowlen) : buf_(static_cast<size_t>(4 * rowlen)), rowlen_(rowlen) {}
  template <class Fill>
  const E* get(int64_t k, const E* keep, Fill fill) {
    for (int s = 0; s < 4; ++s)
      if (key_[s] == k) return buf_.data() + s * rowlen_;
    int s = next_;
    if (buf_.data() + s * rowlen_ == keep) s = (s + 1) & 3;
    next_ = (s + 1) & 3;
    key_[s] = k;
    E* dst = buf_.data() + s * rowlen_;
    fill(dst);
    return dst;
  }

 private:
  std::vector<E> buf_;
  int64_t rowlen_;
  int64_t key_[4] = {-1, -1, -1, -1};
  int next_ = 0;
};

// The weights times 8 when every one of them is a multiple of 1/8 (scale factors 2 and 4 without
// align_corners), else empty: the dyadic passes (pool_dispatch.h, lerp_h8 / lerp_v8).
std::vector<int16_t> dyadic8(const std::vector<float>& w) {
  std::vector<int16_t> out;
  out.reserve(w.size());
  for (float f : w) {
    const float e = f * 8.0f;  // exact: a power-of-two scaling of a weight in [0, 1]
    if (!(e == std::floor(e))) return {};
    out.push_back(static_cast<int16_t>(e));
  }
  return out;
}

// Bilinear / linear resampling of 8-bit codes with dyadic weights (dyadic8 of both tables): the
// float passes' numbers computed exactly in int16 (pool_dispatch.h), the same bytes. H rows are
// cached as in resample_run.
template <typename T>
void resample_run_dyadic(const Prep& p, const LinearDim& lh, const LinearDim& lw,
                         const std::vector<int16_t>& bh0, const std::vector<int16_t>& bh1,
                         const std::vector<int16_t>& aw0, const std::vector<int16_t>& aw1) {
  const auto& K = kernels::pool_table().of<T>();
  const int64_t H = p.in[1], W = p.in[2];
  const int64_t OH = p.out[1], OW = p.out[2];
  const int64_t C = p.cl ? p.C : 1;
  const int64_t planes = p.cl ? p.N : p.N * p.C;
  const T* x = reinterpret_cast<const T*>(p.x.data_ptr());
  T* y = reinterpret_cast<T*>(p.y.data_ptr());
  const auto r = qrange(p.qtype);
  const kernels::AvgQ q{static_cast<int32_t>(p.zp), static_cast<int32_t>(r.first),
                        static_cast<int32_t>(r.second)};
  const int64_t rowlen = OW * C;
  const int64_t rows = planes * OH;
  at::parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, rowlen)),
                   [&](int64_t b, int64_t e) {
    HRowCache<int16_t> cache(rowlen);
    auto hrow = [&](int64_t pl, int64_t h, const int16_t* keep) {
      const int64_t k = pl * H + h;
      return cache.get(k, keep, [&](int16_t* dst) {
        K.lerp_h8(x + k * W * C, dst, OW, C, lw.i0.data(), lw.i1.data(), aw0.data(),
                  aw1.data());
      });
    };
    for (int64_t rr = b; rr < e; ++rr) {
      const int64_t oh = rr % OH, pl = rr / OH;
      const int16_t* A = hrow(pl, lh.i0[oh], nullptr);
      const int16_t* B = hrow(pl, lh.i1[oh], A);
      K.lerp_v8(A, B, y + rr * rowlen, rowlen, bh0[oh], bh1[oh], q);
    }
  });
}

// Separable linear interpolation. Each thread walks output rows (n/plane, od, oh), computing the
// horizontal pass H of the (up to 4) input rows it needs, cached by (plane, d, h).
template <typename T>
void resample_run(const Prep& p, const LinearDim& ld, const LinearDim& lh, const LinearDim& lw) {
  const auto& K = kernels::pool_table().of<T>();
  if constexpr (sizeof(T) == 1) {
    // Dyadic weights (scale factors 2 and 4): the exact int16 passes, when the zero point is a
    // code (the PT2 door's plain zero points can be any integer; the int16 bounds need a code).
    const auto r = qrange(p.qtype);
    if (p.in[0] == 1 && p.out[0] == 1 && p.zp >= r.first && p.zp <= r.second &&
        K.lerp_h8 != nullptr) {
      const auto bh0 = dyadic8(lh.w0), bh1 = dyadic8(lh.w1);
      const auto aw0 = dyadic8(lw.w0), aw1 = dyadic8(lw.w1);
      if (!bh0.empty() && !bh1.empty() && !aw0.empty() && !aw1.empty()) {
        resample_run_dyadic<T>(p, lh, lw, bh0, bh1, aw0, aw1);
        return;
      }
    }
  }
  const int64_t D = p.in[0], H = p.in[1], W = p.in[2];
  const int64_t OD = p.out[0], OH = p.out[1], OW = p.out[2];
  const int64_t C = p.cl ? p.C : 1;
  const int64_t planes = p.cl ? p.N : p.N * p.C;
  const T* x = reinterpret_cast<const T*>(p.x.data_ptr());
  T* y = reinterpret_cast<T*>(p.y.data_ptr());
  const auto r = qrange(p.qtype);
  // qint32: keep the float clamp bounds representable in int32.
  LerpQ q{static_cast<float>(r.first),
          p.qtype == at::kQInt32 ? 2147483520.0f : static_cast<float>(r.second),
          static_cast<float>(p.zp)};
  const int64_t rowlen = OW * C;
  const int64_t rows = planes * OD * OH;
  at::parallel_for(0, rows, std::max<int64_t>(1, 32768 / std::max<int64_t>(1, rowlen)),
                   [&](int64_t b, int64_t e) {
    // Cache of horizontal rows keyed by input row id (plane, d, h).
    HRowCache<float> cache(rowlen);
    std::vector<float> tmp0, tmp1;
    if (D > 1 || OD > 1) {
      tmp0.resize(rowlen);
      tmp1.resize(rowlen);
    }
    auto hrow = [&](int64_t pl, int64_t d, int64_t h, const float* keep) {
      const int64_t k = (pl * D + d) * H + h;
      return cache.get(k, keep, [&](float* dst) {
        K.lerp_h(x + k * W * C, dst, OW, C, lw.i0.data(), lw.i1.data(), lw.w0.data(),
                 lw.w1.data());
      });
    };
    for (int64_t rr = b; rr < e; ++rr) {
      const int64_t oh = rr % OH, od = (rr / OH) % OD, pl = rr / (OH * OD);
      T* yr = y + rr * rowlen;
      const int64_t h0 = lh.i0[oh], h1 = lh.i1[oh];
      if (D == 1 && OD == 1) {
        const float* A = hrow(pl, 0, h0, nullptr);
        const float* B = hrow(pl, 0, h1, A);
        K.lerp_v(A, B, yr, rowlen, lh.w0[oh], lh.w1[oh], q);
      } else {
        // Trilinear: c0 * (b0 * H[d0][h0] + b1 * H[d0][h1]) + c1 * (b0 * H[d1][h0] + b1 * H[d1][h1]).
        const int64_t d0 = ld.i0[od], d1 = ld.i1[od];
        const float b0 = lh.w0[oh], b1 = lh.w1[oh], c0 = ld.w0[od], c1 = ld.w1[od];
        // out = b0 * H[d][h0] + b1 * H[d][h1] (two roundings, then the sum's).
        auto lerp_h_rows = [&](int64_t d, float* out) {
          const float* A = hrow(pl, d, h0, nullptr);
          const float* B = hrow(pl, d, h1, A);
          for (int64_t j = 0; j < rowlen; ++j) {
            const float u = b0 * A[j];
            const float v = b1 * B[j];
            out[j] = u + v;
          }
        };
        lerp_h_rows(d0, tmp0.data());
        lerp_h_rows(d1, tmp1.data());
        K.lerp_v(tmp0.data(), tmp1.data(), yr, rowlen, c0, c1, q);
      }
    }
  });
}

// What nearest and linear resampling share: the prepared input/output, one table per dimension
// (make(in, out, scale) for depth, height, width) and resample_run<T> for the code type T.
// Scratch (index tables, rows) that fails to allocate names the op (checks.h).
template <class MakeDim>
at::Tensor resample(const char* op, int64_t nd, const QArg& qx, at::IntArrayRef output_size,
                    c10::optional<double> sd, c10::optional<double> sh,
                    c10::optional<double> sw, MakeDim make) {
  return checks::guard_alloc(op, [&]() -> at::Tensor {
    Prep p = prepare(op, nd, qx, output_size);
    if (p.y.numel() == 0) return p.y;
    const auto td = make(p.in[0], p.out[0], sd);
    const auto th = make(p.in[1], p.out[1], sh);
    const auto tw = make(p.in[2], p.out[2], sw);
    switch (p.qtype) {
      case at::kQUInt8: resample_run<uint8_t>(p, td, th, tw); break;
      case at::kQInt8: resample_run<int8_t>(p, td, th, tw); break;
      default: resample_run<int32_t>(p, td, th, tw); break;
    }
    return p.y;
  });
}

at::Tensor nearest_impl(const char* op, int64_t nd, bool exact, const QArg& qx,
                        at::IntArrayRef output_size, c10::optional<double> sd,
                        c10::optional<double> sh, c10::optional<double> sw) {
  return resample(op, nd, qx, output_size, sd, sh, sw,
                  [exact](int64_t in, int64_t out, c10::optional<double> s) {
                    return nearest_indices(in, out, s, exact);
                  });
}

at::Tensor linear_impl(const char* op, int64_t nd, const QArg& qx,
                       at::IntArrayRef output_size, bool align_corners, c10::optional<double> sd,
                       c10::optional<double> sh, c10::optional<double> sw) {
  return resample(op, nd, qx, output_size, sd, sh, sw,
                  [align_corners](int64_t in, int64_t out, c10::optional<double> s) {
                    return linear_weights(in, out, align_corners, s);
                  });
}

using OptD = c10::optional<double>;

// The two doors (common/qarg.h): Q wraps a legacy quantized tensor, P plain codes + qparams
// (errors then name "<op>.plain").
QArg Q(const char* op, const at::Tensor& x) {
  return QArg::quantized(op, "input", x, {at::kQUInt8, at::kQInt8, at::kQInt32});
}
QArg P(const char* op, const at::Tensor& x, double s, int64_t z) {
  return QArg::plain(op, "self", x, s, z, {at::kQUInt8, at::kQInt8, at::kQInt32});
}

at::Tensor upsample_nearest1d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, OptD s) {
  return nearest_impl("upsample_nearest1d", 1, false, Q("upsample_nearest1d", x), os, c10::nullopt, c10::nullopt, s);
}
at::Tensor upsample_nearest2d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, OptD sh,
                                            OptD sw) {
  return nearest_impl("upsample_nearest2d", 2, false, Q("upsample_nearest2d", x), os, c10::nullopt, sh, sw);
}
at::Tensor upsample_nearest3d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, OptD sd,
                                            OptD sh, OptD sw) {
  return nearest_impl("upsample_nearest3d", 3, false, Q("upsample_nearest3d", x), os, sd, sh, sw);
}
at::Tensor _upsample_nearest_exact1d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, OptD s) {
  return nearest_impl("_upsample_nearest_exact1d", 1, true, Q("_upsample_nearest_exact1d", x), os, c10::nullopt, c10::nullopt, s);
}
at::Tensor _upsample_nearest_exact2d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os,
                                                  OptD sh, OptD sw) {
  return nearest_impl("_upsample_nearest_exact2d", 2, true, Q("_upsample_nearest_exact2d", x), os, c10::nullopt, sh, sw);
}
at::Tensor _upsample_nearest_exact3d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os,
                                                  OptD sd, OptD sh, OptD sw) {
  return nearest_impl("_upsample_nearest_exact3d", 3, true, Q("_upsample_nearest_exact3d", x), os, sd, sh, sw);
}
at::Tensor upsample_linear1d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, bool ac,
                                           OptD s) {
  return linear_impl("upsample_linear1d", 1, Q("upsample_linear1d", x), os, ac, c10::nullopt, c10::nullopt, s);
}
at::Tensor upsample_bilinear2d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, bool ac,
                                             OptD sh, OptD sw) {
  return linear_impl("upsample_bilinear2d", 2, Q("upsample_bilinear2d", x), os, ac, c10::nullopt, sh, sw);
}
at::Tensor upsample_trilinear3d_quantized_cpu(const at::Tensor& x, at::IntArrayRef os, bool ac,
                                              OptD sd, OptD sh, OptD sw) {
  return linear_impl("upsample_trilinear3d", 3, Q("upsample_trilinear3d", x), os, ac, sd, sh, sw);
}

// ---- PT2 door (`.plain` overloads, CPU key): the same cores on plain codes. ----
#define QPLUGIN_P(name) P(name, x, xs, xz)
at::Tensor upsample_nearest1d_plain(const at::Tensor& x, double xs, int64_t xz,
                                    at::IntArrayRef os, OptD s) {
  return nearest_impl("upsample_nearest1d.plain", 1, false, QPLUGIN_P("upsample_nearest1d"), os,
                      c10::nullopt, c10::nullopt, s);
}
at::Tensor upsample_nearest2d_plain(const at::Tensor& x, double xs, int64_t xz,
                                    at::IntArrayRef os, OptD sh, OptD sw) {
  return nearest_impl("upsample_nearest2d.plain", 2, false, QPLUGIN_P("upsample_nearest2d"), os,
                      c10::nullopt, sh, sw);
}
at::Tensor upsample_nearest3d_plain(const at::Tensor& x, double xs, int64_t xz,
                                    at::IntArrayRef os, OptD sd, OptD sh, OptD sw) {
  return nearest_impl("upsample_nearest3d.plain", 3, false, QPLUGIN_P("upsample_nearest3d"), os,
                      sd, sh, sw);
}
at::Tensor _upsample_nearest_exact1d_plain(const at::Tensor& x, double xs, int64_t xz,
                                          at::IntArrayRef os, OptD s) {
  return nearest_impl("_upsample_nearest_exact1d.plain", 1, true,
                      QPLUGIN_P("_upsample_nearest_exact1d"), os, c10::nullopt, c10::nullopt, s);
}
at::Tensor _upsample_nearest_exact2d_plain(const at::Tensor& x, double xs, int64_t xz,
                                          at::IntArrayRef os, OptD sh, OptD sw) {
  return nearest_impl("_upsample_nearest_exact2d.plain", 2, true,
                      QPLUGIN_P("_upsample_nearest_exact2d"), os, c10::nullopt, sh, sw);
}
at::Tensor _upsample_nearest_exact3d_plain(const at::Tensor& x, double xs, int64_t xz,
                                          at::IntArrayRef os, OptD sd, OptD sh, OptD sw) {
  return nearest_impl("_upsample_nearest_exact3d.plain", 3, true,
                      QPLUGIN_P("_upsample_nearest_exact3d"), os, sd, sh, sw);
}
at::Tensor upsample_linear1d_plain(const at::Tensor& x, double xs, int64_t xz,
                                   at::IntArrayRef os, bool ac, OptD s) {
  return linear_impl("upsample_linear1d.plain", 1, QPLUGIN_P("upsample_linear1d"), os, ac,
                     c10::nullopt, c10::nullopt, s);
}
at::Tensor upsample_bilinear2d_plain(const at::Tensor& x, double xs, int64_t xz,
                                     at::IntArrayRef os, bool ac, OptD sh, OptD sw) {
  return linear_impl("upsample_bilinear2d.plain", 2, QPLUGIN_P("upsample_bilinear2d"), os, ac,
                     c10::nullopt, sh, sw);
}
at::Tensor upsample_trilinear3d_plain(const at::Tensor& x, double xs, int64_t xz,
                                      at::IntArrayRef os, bool ac, OptD sd, OptD sh, OptD sw) {
  return linear_impl("upsample_trilinear3d.plain", 3, QPLUGIN_P("upsample_trilinear3d"), os, ac,
                     sd, sh, sw);
}
#undef QPLUGIN_P

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Each op and its `.plain` overload (PT2 door), registered for QuantizedCPU and CPU: on a float
// tensor the op itself raises a clear "expected a quantized tensor" instead of the dispatcher's
// "could not run ... CPU backend", and a quantized tensor passed to a `.plain` overload gets
// QArg::plain's "expected a plain tensor of codes".
#define QPLUGIN_UPSAMPLE_OPS(X)                                                            \
  X(upsample_nearest1d) X(upsample_nearest2d) X(upsample_nearest3d)                        \
  X(_upsample_nearest_exact1d) X(_upsample_nearest_exact2d) X(_upsample_nearest_exact3d)   \
  X(upsample_linear1d) X(upsample_bilinear2d) X(upsample_trilinear3d)

QPLUGIN_IMPL_QUANTIZED_AND_CPU(QPLUGIN_UPSAMPLE_OPS(QPLUGIN_IMPL_WITH_PLAIN))

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_upsample_kernel)
