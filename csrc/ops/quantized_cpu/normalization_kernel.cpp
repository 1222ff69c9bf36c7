// QuantizedCPU (and CPU, for a clear error on float input) kernels of layer_norm, group_norm and
// instance_norm. Schemas: ops/normalization.cpp. Microkernels: kernels/normalization/* (statistics,
// layer-norm rows, per-channel affine) and kernels/dispatch.h's lut8 (large NCHW planes).
// Numerics: exact int64 sums of the codes and of their squares give mean and variance of the
// dequantized values in double (n*sum(x^2) - sum(x)^2 is formed exactly in 128-bit integers, so a
// large reduction has no cancellation or ordering error, and any split of the sums across threads
// gives the same result). With rstd = s_in / sqrt(var_dq + eps) and mean in raw code units, the
// normalize step runs in float (kernels/normalization/normalization.h):
//   layer norm:   v = fma(x, rstd, -mean*rstd),  y = nearbyint(fma(v, gamma[j]/s_out,
//                 beta[j]/s_out + zp_out))
//   group/instance norm, per (n, c): alpha = rstd*gamma[c]/s_out,
//                 beta = (bias[c] - mean*rstd*gamma[c])/s_out + zp_out,
//                 y = nearbyint(fma(alpha, x, beta))
// clamped to the dtype, round half to even; per-row/per-channel constants are formed in double and
// rounded to float once. qint32 runs a scalar double path. Output layout as PyTorch's: layer_norm
// contiguous; group/instance norm keep a channels-last input's layout (also channels_last_3d,
// where PyTorch returns contiguous).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "kernels/normalization/normalization.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using kernels::ChannelAffineParams;
using kernels::RowNormParams;

// Work per parallel_for grain.
constexpr int64_t kGrainBytes = 32 * 1024;
// Fused (statistics then normalize, per row/group, while it is in cache) when there are at least
// this many rows/groups per thread; otherwise both passes split every row/group/plane into about
// that many pieces per thread (at least kMinPieceBytes each; a piece is one task), so batch 1
// uses every thread too. Integer sums are exact, so any split gives the same bytes.
constexpr int64_t kFusedUnitsPerThread = 4;
constexpr int64_t kMinPieceBytes = 4096;
// Where the kernel table says lookups are faster (NormKernelTable::plane_tables / row_tables),
// planes (NCHW) or images (channels last) of at least this many pixels normalize through 256-entry
// per-channel tables built with the affine kernel itself (byte-identical to the direct path).
constexpr int64_t kTablePixels = 1024;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool fused(int64_t units) { return units >= kFusedUnitsPerThread * at::get_num_threads(); }

// Piece length for splitting `units` ranges of `len` elements (see kFusedUnitsPerThread).
int64_t piece_len(int64_t units, int64_t len) {
  const int64_t per_unit = ceil_div(kFusedUnitsPerThread * at::get_num_threads(),
                                    std::max<int64_t>(1, units));
  const int64_t piece = std::max(kMinPieceBytes, ceil_div(len, per_unit));
  return std::min(len, ceil_div(piece, 64) * 64);
}

// Mean (raw code units) and rstd (multiplies x - mean to give the normalized value) of n codes
// from their exact sums.
struct Moments {
  double mean;
  double rstd;
};

Moments moments(int64_t n, int64_t s1, int64_t s2, double in_scale, double eps) {
  const __int128 num = static_cast<__int128>(n) * s2 - static_cast<__int128>(s1) * s1;  // n^2 var
  const double nd = static_cast<double>(n);
  const double var = static_cast<double>(num) / (nd * nd) * in_scale * in_scale;
  // A constant group (var == 0): x - mean is exactly 0, so the normalized value is 0 whatever
  // eps is; rstd = 0 says so without 0 * inf when eps is 0 or tiny (float gives NaN there).
  const double rstd = num > 0 ? in_scale / std::sqrt(var + eps) : 0.0;
  return {static_cast<double>(s1) / nd, rstd};
}

// The output dtype's range [lo, hi]: the kernels clamp to it before rounding (zero points are
// folded into their float biases).
struct OutRange {
  float lo;
  float hi;
};

OutRange out_range(at::ScalarType t) {
  const auto r = qrange(t);
  return {static_cast<float>(r.first), static_cast<float>(r.second)};
}

// ---------------------------------------------------------------------------------------------
// layer norm, 8-bit: M rows of N codes; g/b are gamma/s_out and beta/s_out + zp_out ([N]).

template <typename T>
void layer_norm_8bit(const kernels::TypedNormKernels<T>& k, const T* x, T* y, int64_t M,
                     int64_t N, const float* g, const float* b, double in_scale, double eps,
                     const OutRange& o) {
  auto params = [&](int64_t s1, int64_t s2) {
    const Moments mo = moments(N, s1, s2, in_scale, eps);
    return RowNormParams{static_cast<float>(mo.rstd), static_cast<float>(-mo.mean * mo.rstd), g,
                         b, o.lo, o.hi};
  };
  const int64_t piece = fused(M) ? N : piece_len(M, N);
  if (piece >= N) {
    at::parallel_for(0, M, std::max<int64_t>(1, kGrainBytes / N), [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) {
        int64_t s1 = 0, s2 = 0;
        k.row_stats(x + i * N, N, &s1, &s2);
        k.norm_row(x + i * N, y + i * N, N, params(s1, s2));
      }
    });
    return;
  }
  // Few long rows: both passes split into pieces.
  const int64_t nch = ceil_div(N, piece);
  std::vector<int64_t> part(2 * M * nch, 0);
  at::parallel_for(0, M * nch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i = t / nch, j0 = (t % nch) * piece;
      k.row_stats(x + i * N + j0, std::min(N - j0, piece), &part[2 * t], &part[2 * t + 1]);
    }
  });
  std::vector<RowNormParams> rows(M);
  for (int64_t i = 0; i < M; ++i) {
    int64_t s1 = 0, s2 = 0;
    for (int64_t c = 0; c < nch; ++c) {
      s1 += part[2 * (i * nch + c)];
      s2 += part[2 * (i * nch + c) + 1];
    }
    rows[i] = params(s1, s2);
  }
  at::parallel_for(0, M * nch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t i = t / nch, j0 = (t % nch) * piece;
      RowNormParams p = rows[i];
      p.g = g + j0;
      p.b = b + j0;
      k.norm_row(x + i * N + j0, y + i * N + j0, std::min(N - j0, piece), p);
    }
  });
}

// ---------------------------------------------------------------------------------------------
// group norm (instance norm is G == C), 8-bit. Per (n, c) alpha/beta for the affine kernels.

struct GroupShape {
  int64_t N, C, HW, G;
  int64_t D() const { return C / G; }
};

struct ChannelAffine {
  const float* gamma;  // [C] or null (1)
  const float* beta;   // [C] or null (0)
  double in_scale;
  double out_scale;
  double out_zp;
  double eps;
};

// alpha/beta of the D channels of group (n, g) from the group's exact sums.
void group_params(const GroupShape& s, const ChannelAffine& a, int64_t n, int64_t g, int64_t s1,
                  int64_t s2, float* alpha, float* beta) {
  const Moments mo = moments(s.D() * s.HW, s1, s2, a.in_scale, a.eps);
  for (int64_t c = g * s.D(); c < (g + 1) * s.D(); ++c) {
    const double gm = a.gamma ? a.gamma[c] : 1.0, bt = a.beta ? a.beta[c] : 0.0;
    const double r = mo.rstd * gm;
    alpha[n * s.C + c] = static_cast<float>(r / a.out_scale);
    beta[n * s.C + c] = static_cast<float>((bt - mo.mean * r) / a.out_scale + a.out_zp);
  }
}

// The 256-entry table of channel c: exactly the bytes the affine kernel writes for each code.
template <typename T>
void build_table(const kernels::TypedNormKernels<T>& nk, int64_t c, const ChannelAffineParams& p,
                 uint8_t* table) {
  alignas(64) uint8_t codes[256];
  for (int raw = 0; raw < 256; ++raw) codes[raw] = static_cast<uint8_t>(raw);
  nk.affine_plane(reinterpret_cast<const T*>(codes), reinterpret_cast<T*>(table), 256, c, p);
}

// Pixels [p0, p1) of plane `plane` (= n*C + c) of an NCHW tensor; alpha/beta indexed by plane.
template <typename T>
void normalize_plane(const kernels::TypedNormKernels<T>& nk, const kernels::KernelTable& kt,
                     bool tables, const T* x, T* y, int64_t HW, int64_t plane, int64_t p0,
                     int64_t p1, const ChannelAffineParams& p) {
  const T* xp = x + plane * HW + p0;
  T* yp = y + plane * HW + p0;
  if (tables && p1 - p0 >= kTablePixels) {
    alignas(64) uint8_t table[256];
    build_table<T>(nk, plane, p, table);
    kt.lut8(reinterpret_cast<const uint8_t*>(xp), reinterpret_cast<uint8_t*>(yp), p1 - p0, table);
  } else {
    nk.affine_plane(xp, yp, p1 - p0, plane, p);
  }
}

// x, y: [N][C][HW] contiguous. A group (n, g) is the contiguous block of D*HW codes.
template <typename T>
void group_norm_nchw_8bit(const kernels::TypedNormKernels<T>& nk, bool tables, const T* x, T* y,
                          const GroupShape& s, const ChannelAffine& a, const OutRange& o) {
  const kernels::KernelTable& kt = kernels::table();
  const int64_t D = s.D(), L = D * s.HW, M = s.N * s.G;
  std::vector<float> alpha(s.N * s.C), beta(s.N * s.C);
  const ChannelAffineParams p{alpha.data(), beta.data(), o.lo, o.hi};
  if (fused(M)) {
    at::parallel_for(0, M, std::max<int64_t>(1, kGrainBytes / L), [&](int64_t begin, int64_t end) {
      for (int64_t m = begin; m < end; ++m) {
        int64_t s1 = 0, s2 = 0;
        nk.row_stats(x + m * L, L, &s1, &s2);
        group_params(s, a, m / s.G, m % s.G, s1, s2, alpha.data(), beta.data());
        for (int64_t plane = m * D; plane < (m + 1) * D; ++plane) {
          normalize_plane<T>(nk, kt, tables, x, y, s.HW, plane, 0, s.HW, p);
        }
      }
    });
    return;
  }
  // Statistics: every group split into pieces.
  const int64_t piece = piece_len(M, L), nch = ceil_div(L, piece);
  std::vector<int64_t> part(2 * M * nch, 0);
  at::parallel_for(0, M * nch, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t m = t / nch, j0 = (t % nch) * piece;
      nk.row_stats(x + m * L + j0, std::min(L - j0, piece), &part[2 * t], &part[2 * t + 1]);
    }
  });
  for (int64_t m = 0; m < M; ++m) {
    int64_t s1 = 0, s2 = 0;
    for (int64_t c = 0; c < nch; ++c) {
      s1 += part[2 * (m * nch + c)];
      s2 += part[2 * (m * nch + c) + 1];
    }
    group_params(s, a, m / s.G, m % s.G, s1, s2, alpha.data(), beta.data());
  }
  // Normalize: planes, each split into pieces.
  const int64_t ppiece = piece_len(s.N * s.C, s.HW), pch = ceil_div(s.HW, ppiece);
  const int64_t tasks = s.N * s.C * pch;
  at::parallel_for(0, tasks, std::max<int64_t>(1, kGrainBytes / ppiece),
                   [&](int64_t begin, int64_t end) {
                     for (int64_t t = begin; t < end; ++t) {
                       const int64_t plane = t / pch, p0 = (t % pch) * ppiece;
                       normalize_plane<T>(nk, kt, tables, x, y, s.HW, plane, p0,
                                          std::min(s.HW, p0 + ppiece), p);
                     }
                   });
}

// Per-channel sums of image n into g-group sums.
void reduce_groups(const GroupShape& s, const int64_t* c1, const int64_t* c2, int64_t g,
                   int64_t* s1, int64_t* s2) {
  for (int64_t c = g * s.D(); c < (g + 1) * s.D(); ++c) {
    *s1 += c1[c];
    *s2 += c2[c];
  }
}

// x, y: [N][HW][C] (channels last). Statistics per channel (column sums), then per group.
template <typename T>
void group_norm_nhwc_8bit(const kernels::TypedNormKernels<T>& nk, bool tables, const T* x, T* y,
                          const GroupShape& s, const ChannelAffine& a, const OutRange& o) {
  const int64_t C = s.C, HW = s.HW;
  std::vector<float> alpha(s.N * C), beta(s.N * C);
  // Per-image tables [N][C][256] when lookups pay off (scalar ISA), built with the params.
  const bool use_tables = tables && HW >= kTablePixels;
  std::vector<uint8_t> lut(use_tables ? s.N * C * 256 : 0);
  auto build_tables = [&](int64_t n) {
    const ChannelAffineParams p{alpha.data() + n * C, beta.data() + n * C, o.lo, o.hi};
    for (int64_t c = 0; c < C; ++c) build_table<T>(nk, c, p, lut.data() + (n * C + c) * 256);
  };
  auto normalize_rows = [&](int64_t n, int64_t r0, int64_t nr) {
    const int64_t off = (n * HW + r0) * C;
    if (use_tables) {
      kernels::lut_rows_scalar(reinterpret_cast<const uint8_t*>(x) + off,
                               reinterpret_cast<uint8_t*>(y) + off, nr, C,
                               lut.data() + n * C * 256);
    } else {
      const ChannelAffineParams p{alpha.data() + n * C, beta.data() + n * C, o.lo, o.hi};
      nk.affine_rows(x + off, y + off, nr, C, p);
    }
  };
  auto image_params = [&](int64_t n, const int64_t* c1, const int64_t* c2) {
    for (int64_t g = 0; g < s.G; ++g) {
      int64_t s1 = 0, s2 = 0;
      reduce_groups(s, c1, c2, g, &s1, &s2);
      group_params(s, a, n, g, s1, s2, alpha.data(), beta.data());
    }
  };
  if (fused(s.N)) {
    at::parallel_for(0, s.N, std::max<int64_t>(1, kGrainBytes / (HW * C)),
                     [&](int64_t begin, int64_t end) {
                       std::vector<int64_t> c1(C), c2(C);
                       for (int64_t n = begin; n < end; ++n) {
                         std::fill(c1.begin(), c1.end(), 0);
                         std::fill(c2.begin(), c2.end(), 0);
                         nk.col_stats(x + n * HW * C, HW, C, c1.data(), c2.data());
                         image_params(n, c1.data(), c2.data());
                         if (use_tables) build_tables(n);
                         normalize_rows(n, 0, HW);
                       }
                     });
    return;
  }
  // Both passes over blocks of pixels (rows of C codes): pieces as for planes, which also bounds
  // the partial sums (2 x C per block) to kFusedUnitsPerThread blocks per thread.
  const int64_t rows = ceil_div(piece_len(s.N, HW * C), C);
  const int64_t nblk = ceil_div(HW, rows), tasks = s.N * nblk;
  std::vector<int64_t> part(2 * tasks * C, 0);
  at::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / nblk, r0 = (t % nblk) * rows;
      nk.col_stats(x + (n * HW + r0) * C, std::min(HW - r0, rows), C, &part[2 * t * C],
                   &part[(2 * t + 1) * C]);
    }
  });
  std::vector<int64_t> c1(C), c2(C);
  for (int64_t n = 0; n < s.N; ++n) {
    std::fill(c1.begin(), c1.end(), 0);
    std::fill(c2.begin(), c2.end(), 0);
    for (int64_t b = 0; b < nblk; ++b) {
      const int64_t t = n * nblk + b;
      for (int64_t c = 0; c < C; ++c) {
        c1[c] += part[2 * t * C + c];
        c2[c] += part[(2 * t + 1) * C + c];
      }
    }
    image_params(n, c1.data(), c2.data());
    if (use_tables) build_tables(n);
  }
  at::parallel_for(0, tasks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t n = t / nblk, r0 = (t % nblk) * rows;
      normalize_rows(n, r0, std::min(HW - r0, rows));
    }
  });
}

// ---------------------------------------------------------------------------------------------
// qint32: no vector kernel (8-bit activations are the product). Units of n contiguous values;
// exact 128-bit sum for the mean, a second pass in double for the variance, the normalize step in
// double with exact clamping, so nothing overflows.
// x, y: M units of L values; the affine index of element j of unit m is aff(m, j) (or none).
template <typename AffIdx>
void normalize_i32(const int32_t* x, int32_t* y, int64_t M, int64_t L, const float* gamma,
                   const float* beta, double in_scale, double out_scale,
                   int64_t out_zp, double eps, AffIdx aff) {
  at::parallel_for(0, M, std::max<int64_t>(1, kGrainBytes / (4 * L)), [&](int64_t begin,
                                                                           int64_t end) {
    for (int64_t m = begin; m < end; ++m) {
      const int32_t* xm = x + m * L;
      int32_t* ym = y + m * L;
      __int128 sum = 0;
      for (int64_t j = 0; j < L; ++j) sum += xm[j];
      const double mean = static_cast<double>(sum) / static_cast<double>(L);
      double ss = 0;
      for (int64_t j = 0; j < L; ++j) {
        const double d = xm[j] - mean;
        ss += d * d;
      }
      const double var = ss / static_cast<double>(L) * in_scale * in_scale;
      const double rstd = ss > 0 ? in_scale / std::sqrt(var + eps) : 0.0;
      for (int64_t j = 0; j < L; ++j) {
        const int64_t a = aff(m, j);
        const double gm = gamma ? gamma[a] : 1.0, bt = beta ? beta[a] : 0.0;
        const double v = ((xm[j] - mean) * rstd * gm + bt) / out_scale;
        double r = std::nearbyint(v) + static_cast<double>(out_zp);
        r = std::isnan(r) ? static_cast<double>(out_zp)
                          : std::min(std::max(r, static_cast<double>(INT32_MIN)),
                                     static_cast<double>(INT32_MAX));
        ym[j] = static_cast<int32_t>(r);
      }
    }
  });
}

// ---------------------------------------------------------------------------------------------
// Validation helpers.

// `qx` comes through either door (common/qarg.h, validated there).
void check_common(const char* op, const QArg& qx, double eps, double output_scale,
                  int64_t output_zero_point) {
  TORCH_CHECK(std::isfinite(eps) && eps >= 0, "qplugin::", op,
              ": expected a finite, non-negative eps, got ", eps);
  checks::check_output_qparams(op, output_scale, output_zero_point, qx.scalar_type());
}

at::Tensor optional_vector(const char* op, const char* arg, const c10::optional<at::Tensor>& t,
                           int64_t C) {
  return t.has_value() && t->defined() ? checks::float_vector(op, arg, *t, C) : at::Tensor();
}

const float* ptr_or_null(const at::Tensor& t) {
  return t.defined() ? t.data_ptr<float>() : nullptr;
}

// ---------------------------------------------------------------------------------------------
// layer_norm

at::Tensor layer_norm_core(const char* op, const QArg& qa, at::IntArrayRef normalized_shape,
                           const c10::optional<at::Tensor>& weight,
                           const c10::optional<at::Tensor>& bias, double eps,
                           double output_scale, int64_t output_zero_point) {
  check_common(op, qa, eps, output_scale, output_zero_point);
  const at::Tensor& qx = qa.tensor();
  const int64_t nd = static_cast<int64_t>(normalized_shape.size()), dim = qx.dim();
  TORCH_CHECK(nd >= 1, "qplugin::", op, ": expected a non-empty normalized_shape, got ",
              normalized_shape);
  TORCH_CHECK(nd <= dim && qx.sizes().slice(dim - nd).equals(normalized_shape),
              "qplugin::", op, ": expected an input whose trailing dimensions match "
              "normalized_shape ", normalized_shape, ", got an input of shape ", qx.sizes());
  auto affine = [&](const char* arg, const c10::optional<at::Tensor>& t) {
    if (!t.has_value() || !t->defined()) return at::Tensor();
    TORCH_CHECK(!t->is_quantized() && at::isFloatingType(t->scalar_type()),
                "qplugin::", op, ": expected ", arg, " to be a floating-point tensor, got ",
                c10::toString(t->scalar_type()));
    TORCH_CHECK(t->sizes().equals(normalized_shape), "qplugin::", op, ": expected ", arg,
                " of shape ", normalized_shape, " (normalized_shape), got shape ", t->sizes());
    TORCH_CHECK(t->device().is_cpu(), "qplugin::", op, ": expected ", arg,
                " on the CPU, got ", t->device());
    return t->to(at::kFloat).contiguous().view({-1});
  };
  const at::Tensor w = affine("weight", weight), b = affine("bias", bias);

  checks::check_numel("layer_norm", "an output", qx.sizes());  // expanded inputs (checks.h)
  at::Tensor y = new_output(qa, qx.sizes(), qa.scalar_type(), output_scale, output_zero_point,
                            at::MemoryFormat::Contiguous);
  if (qx.numel() == 0) return y;
  const at::Tensor x = qx.contiguous();
  const int64_t N = c10::multiply_integers(normalized_shape);
  const int64_t M = qx.numel() / N;
  const double in_scale = qa.q_scale();

  if (qa.scalar_type() == at::kQInt32) {
    normalize_i32(reinterpret_cast<const int32_t*>(x.data_ptr()),
                  reinterpret_cast<int32_t*>(y.data_ptr()), M, N, ptr_or_null(w), ptr_or_null(b),
                  in_scale, output_scale, output_zero_point, eps,
                  [](int64_t, int64_t j) { return j; });
    return y;
  }
  // g = gamma / s_out, b = beta / s_out (computed in double, rounded once).
  std::vector<float> g(N), bb(N);
  const float* wp = ptr_or_null(w);
  const float* bp = ptr_or_null(b);
  for (int64_t j = 0; j < N; ++j) {
    g[j] = static_cast<float>((wp ? wp[j] : 1.0) / output_scale);
    bb[j] = static_cast<float>((bp ? bp[j] : 0.0) / output_scale + output_zero_point);
  }
  const OutRange o = out_range(qa.scalar_type());
  const auto& nk = kernels::norm_table();
  if (qa.scalar_type() == at::kQUInt8) {
    layer_norm_8bit<uint8_t>(nk.u8, reinterpret_cast<const uint8_t*>(x.data_ptr()),
                             reinterpret_cast<uint8_t*>(y.data_ptr()), M, N, g.data(), bb.data(),
                             in_scale, eps, o);
  } else {
    layer_norm_8bit<int8_t>(nk.s8, reinterpret_cast<const int8_t*>(x.data_ptr()),
                            reinterpret_cast<int8_t*>(y.data_ptr()), M, N, g.data(), bb.data(),
                            in_scale, eps, o);
  }
  return y;
}

// ---------------------------------------------------------------------------------------------
// group_norm / instance_norm

at::Tensor group_norm_impl(const char* op, const QArg& qa, int64_t num_groups,
                           const c10::optional<at::Tensor>& weight,
                           const c10::optional<at::Tensor>& bias, double eps, double output_scale,
                           int64_t output_zero_point) {
  const at::Tensor& qx = qa.tensor();
  const int64_t dim = qx.dim();
  const int64_t C = qx.size(1);
  const at::Tensor w = optional_vector(op, "weight", weight, C);
  const at::Tensor b = optional_vector(op, "bias", bias, C);

  // Layout: NCHW-contiguous input normalizes planes; a channels-last input (4-D or 5-D) is
  // normalized in place of its layout and the output keeps it (no transposes either way).
  const auto cl_fmt = dim == 4   ? at::MemoryFormat::ChannelsLast
                      : dim == 5 ? at::MemoryFormat::ChannelsLast3d
                                 : at::MemoryFormat::Contiguous;
  const bool nhwc = (dim == 4 || dim == 5) && !qx.is_contiguous() && qx.is_contiguous(cl_fmt);
  const auto out_fmt = nhwc ? cl_fmt : at::MemoryFormat::Contiguous;
  checks::check_numel(op, "an output", qx.sizes());  // expanded inputs (checks.h)
  at::Tensor y = new_output(qa, qx.sizes(), qa.scalar_type(), output_scale, output_zero_point,
                            out_fmt);
  if (qx.numel() == 0) return y;
  const at::Tensor x = nhwc ? qx : qx.contiguous();
  const GroupShape s{qx.size(0), C, qx.numel() / (qx.size(0) * C), num_groups};
  const ChannelAffine a{ptr_or_null(w), ptr_or_null(b), qa.q_scale(), output_scale,
                        static_cast<double>(output_zero_point), eps};

  if (qa.scalar_type() == at::kQInt32) {
    // Scalar double path on the NCHW-contiguous form.
    const at::Tensor xc = x.contiguous();
    at::Tensor yc = nhwc ? new_output(qa, qx.sizes(), qa.scalar_type(), output_scale,
                                      output_zero_point)
                         : y;
    const int64_t D = s.D(), HW = s.HW;
    normalize_i32(reinterpret_cast<const int32_t*>(xc.data_ptr()),
                  reinterpret_cast<int32_t*>(yc.data_ptr()), s.N * s.G, D * HW, a.gamma, a.beta,
                  a.in_scale, output_scale, output_zero_point, eps,
                  [&](int64_t m, int64_t j) { return (m % s.G) * D + j / HW; });
    if (nhwc) y.copy_(yc);
    return y;
  }
  const OutRange o = out_range(qa.scalar_type());
  const auto& nk = kernels::norm_table();
  // The 8-bit code type T (a value of it as the tag) with its typed kernels k.
  auto run_8bit = [&](auto tag, const auto& k) {
    using T = decltype(tag);
    const auto* xp = reinterpret_cast<const T*>(x.data_ptr());
    auto* yp = reinterpret_cast<T*>(y.data_ptr());
    if (nhwc) {
      group_norm_nhwc_8bit<T>(k, nk.row_tables, xp, yp, s, a, o);
    } else {
      group_norm_nchw_8bit<T>(k, nk.plane_tables, xp, yp, s, a, o);
    }
  };
  if (qa.scalar_type() == at::kQUInt8) {
    run_8bit(uint8_t{}, nk.u8);
  } else {
    run_8bit(int8_t{}, nk.s8);
  }
  return y;
}

// group_norm (num_groups given) and instance_norm (none: one channel per group).
at::Tensor group_norm_core(const char* op, const QArg& qa, c10::optional<int64_t> num_groups,
                           const c10::optional<at::Tensor>& weight,
                           const c10::optional<at::Tensor>& bias, double eps,
                           double output_scale, int64_t output_zero_point) {
  check_common(op, qa, eps, output_scale, output_zero_point);
  const at::Tensor& qx = qa.tensor();
  if (!num_groups.has_value()) {
    TORCH_CHECK(qx.dim() >= 3, "qplugin::", op, ": expected an input of at least 3 "
                "dimensions (N, C, L, ...), got ", qx.dim(), "-D",
                qx.dim() == 2 ? "; add the batch dimension with unsqueeze(0)" : "");
    // Instance norm is group norm with one channel per group.
    return group_norm_impl(op, qa, std::max<int64_t>(1, qx.size(1)), weight, bias, eps,
                           output_scale, output_zero_point);
  }
  // 2-D (N, C) is accepted as float group_norm does (PyTorch's quantized op requires >= 3-D).
  TORCH_CHECK(qx.dim() >= 2, "qplugin::", op, ": expected an input of at least 2 dimensions "
              "(N, C, *), got ", qx.dim(), "-D");
  TORCH_CHECK(*num_groups > 0, "qplugin::", op, ": expected a positive num_groups, got ",
              *num_groups);
  TORCH_CHECK(qx.size(1) % *num_groups == 0, "qplugin::", op, ": expected the number of "
              "channels to be divisible by num_groups (", *num_groups, "), got ", qx.size(1),
              " channels");
  return group_norm_impl(op, qa, *num_groups, weight, bias, eps, output_scale,
                         output_zero_point);
}

// ---- The two doors (common/qarg.h): legacy quantized tensors and `.plain` codes + qparams
// (errors then name "<op>.plain"); both call the cores above.
constexpr std::initializer_list<at::ScalarType> kNormTypes = {at::kQUInt8, at::kQInt8,
                                                              at::kQInt32};

at::Tensor layer_norm_quantized_cpu(const at::Tensor& qx, at::IntArrayRef normalized_shape,
                                    const c10::optional<at::Tensor>& weight,
                                    const c10::optional<at::Tensor>& bias, double eps,
                                    double output_scale, int64_t output_zero_point) {
  return layer_norm_core("layer_norm", QArg::quantized("layer_norm", "input", qx, kNormTypes),
                         normalized_shape, weight, bias, eps, output_scale, output_zero_point);
}
at::Tensor group_norm_quantized_cpu(const at::Tensor& qx, int64_t num_groups,
                                    const c10::optional<at::Tensor>& weight,
                                    const c10::optional<at::Tensor>& bias, double eps,
                                    double output_scale, int64_t output_zero_point) {
  return group_norm_core("group_norm", QArg::quantized("group_norm", "input", qx, kNormTypes),
                         num_groups, weight, bias, eps, output_scale, output_zero_point);
}
at::Tensor instance_norm_quantized_cpu(const at::Tensor& qx,
                                       const c10::optional<at::Tensor>& weight,
                                       const c10::optional<at::Tensor>& bias, double eps,
                                       double output_scale, int64_t output_zero_point) {
  return group_norm_core("instance_norm",
                         QArg::quantized("instance_norm", "input", qx, kNormTypes),
                         /*num_groups=*/c10::nullopt, weight, bias, eps, output_scale,
                         output_zero_point);
}
at::Tensor layer_norm_plain(const at::Tensor& x, double xs, int64_t xz,
                            at::IntArrayRef normalized_shape,
                            const c10::optional<at::Tensor>& weight,
                            const c10::optional<at::Tensor>& bias, double eps,
                            double output_scale, int64_t output_zero_point) {
  return layer_norm_core("layer_norm.plain",
                         QArg::plain("layer_norm", "input", x, xs, xz, kNormTypes),
                         normalized_shape, weight, bias, eps, output_scale, output_zero_point);
}
at::Tensor group_norm_plain(const at::Tensor& x, double xs, int64_t xz, int64_t num_groups,
                            const c10::optional<at::Tensor>& weight,
                            const c10::optional<at::Tensor>& bias, double eps,
                            double output_scale, int64_t output_zero_point) {
  return group_norm_core("group_norm.plain",
                         QArg::plain("group_norm", "input", x, xs, xz, kNormTypes), num_groups,
                         weight, bias, eps, output_scale, output_zero_point);
}
at::Tensor instance_norm_plain(const at::Tensor& x, double xs, int64_t xz,
                               const c10::optional<at::Tensor>& weight,
                               const c10::optional<at::Tensor>& bias, double eps,
                               double output_scale, int64_t output_zero_point) {
  return group_norm_core("instance_norm.plain",
                         QArg::plain("instance_norm", "input", x, xs, xz, kNormTypes),
                         /*num_groups=*/c10::nullopt, weight, bias, eps, output_scale,
                         output_zero_point);
}

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Registered for QuantizedCPU and CPU: on a float tensor the op itself raises a clear
// "expected a quantized tensor" instead of the dispatcher's "could not run ... CPU backend".
// Each op and its `.plain` overload (PT2 door), registered for QuantizedCPU and CPU: on a float
// tensor the op itself raises a clear "expected a quantized tensor", and a quantized tensor passed
// to a `.plain` overload gets QArg::plain's "expected a plain tensor of codes".
#define QPLUGIN_NORM_OPS(X) X(layer_norm) X(group_norm) X(instance_norm)

QPLUGIN_IMPL_QUANTIZED_AND_CPU(QPLUGIN_NORM_OPS(QPLUGIN_IMPL_WITH_PLAIN))

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_normalization_kernel)
