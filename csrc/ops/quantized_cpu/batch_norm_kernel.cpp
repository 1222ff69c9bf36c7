// QuantizedCPU (and CPU, for a clear error on float input) kernels of the batch-norm ops.
// Schemas: ops/batch_norm.cpp. Microkernels: kernels/elementwise/* via kernels/dispatch.h.
// Numerics (as PyTorch's): alpha[c] = w/sqrt(var+eps) * s_in/s_out, beta[c] = (b - mean*w/
// sqrt(var+eps))/s_out; y = zp_out + nearbyint(alpha*(x - zp_in) + beta), clamped (ReLU: >= zp_out).
// Two doors (docs/pt2.md section 3): batch_norm_impl takes the input as QArg (common/qarg.h); the
// legacy ops wrap a quantized tensor, the `.plain` overloads (CPU key) plain codes with their
// scale and zero point, and both call the same core (byte-identical on every ISA).
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
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/pixel_blocks.h"
#include "ops/quantized_cpu/registration.h"
#include "register.h"

namespace qplugin {
namespace ops {
namespace {

using kernels::AffineParams;

constexpr int64_t kGrainBytes = 32 * 1024;

enum class Rank { kAny, k1d, k2d, k3d };

// 8-bit inputs with many pixels per channel: the affine map of channel c is a function of 256
// codes, so build tables[c][raw] once (exactly the kernels' math) and look bytes up instead.
// Worth it when there are at least kTablePixels pixels per channel to amortize 256 evaluations.
constexpr int64_t kTablePixels = 1024;

// The tables are built by the affine kernel itself (over the 256 codes), so they hold exactly
// the bytes the direct path would write (and every ISA's affine kernel equals the scalar one).
template <typename T>
std::vector<uint8_t> build_tables(const kernels::TypedKernels<T>& k, int64_t C,
                                  const AffineParams& p) {
  std::vector<uint8_t> t(static_cast<size_t>(C) * 256);
  uint8_t codes[256];
  for (int raw = 0; raw < 256; ++raw) codes[raw] = static_cast<uint8_t>(raw);
  for (int64_t c = 0; c < C; ++c) {
    k.affine_plane(reinterpret_cast<const T*>(codes), reinterpret_cast<T*>(t.data() + c * 256),
                   256, c, p);
  }
  return t;
}

// Fixed-point forms of the channels' maps (kernels::FixedAffine) where the tier has them: for
// channel c, with t its exact table (the float kernel's bytes, build_tables), k the smallest
// shift that keeps m = alpha * 2^(16 - k) within s16, and m that rounded, then 1 and 2 either
// side, until one fits: the b that the codes t does not clamp allow (t(x) * 2^16 <= (x << k) *
// m + b < (t(x) + 1) * 2^16, in int64), its middle taken, then the form run by the kernel itself
// on all 256 codes and kept only if it gives t. Channels without one keep the float form.
template <typename T>
std::vector<kernels::FixedAffine> plan_fixed(const kernels::TypedKernels<T>& k, int64_t C,
                                             const AffineParams& p) {
  std::vector<kernels::FixedAffine> out(static_cast<size_t>(C), kernels::FixedAffine{0, 0, 0, 0});
  const std::vector<uint8_t> tables = build_tables<T>(k, C, p);
  alignas(32) T codes[256];
  alignas(32) T got[256];
  for (int raw = 0; raw < 256; ++raw) codes[raw] = static_cast<T>(raw);
  const int32_t blo = static_cast<int32_t>(p.lo) + p.out_zp;
  const int32_t bhi = static_cast<int32_t>(p.hi) + p.out_zp;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  for (int64_t c = 0; c < C; ++c) {
    const T* t = reinterpret_cast<const T*>(tables.data() + c * 256);
    const double a = p.alpha[c];
    int kk = 0;
    while (kk <= 7 && std::abs(a) * std::ldexp(1.0, 16 - kk) > 32767.0) ++kk;
    if (kk > 7) continue;
    const int64_t m0 = std::llround(a * std::ldexp(1.0, 16 - kk));
    for (int64_t step = 0; step < 5 && !out[static_cast<size_t>(c)].ok; ++step) {
      const int64_t m = m0 + (step + 1) / 2 * (step % 2 == 1 ? 1 : -1);  // m0, +1, -1, +2, -2
      if (m < -32767 || m > 32767) continue;
      int64_t bmin = -kNone, bmax = kNone;
      for (int raw = 0; raw < 256; ++raw) {
        const int64_t ty = t[raw];
        if (ty <= blo || ty >= bhi) continue;  // clamped: the run below checks those
        const int64_t um = (static_cast<int64_t>(codes[raw]) << kk) * m;
        bmin = std::max(bmin, ty * 65536 - um);
        bmax = std::min(bmax, (ty + 1) * 65536 - 1 - um);
      }
      if (bmin > bmax) continue;
      const int64_t b = bmin == -kNone ? (bmax == kNone ? 0 : bmax)
                                       : (bmax == kNone ? bmin : bmin + (bmax - bmin) / 2);
      bool fits = std::abs(b) < (int64_t{1} << 30);
      for (int raw = 0; raw < 256 && fits; ++raw) {
        const int64_t v = (static_cast<int64_t>(codes[raw]) << kk) * m + b;
        fits = v > -(int64_t{1} << 31) && v < (int64_t{1} << 31);
      }
      if (!fits) continue;
      const kernels::FixedAffine f{static_cast<int32_t>(m), static_cast<int32_t>(b), kk, 1};
      k.fixed_plane(codes, got, 256, f, blo, bhi);
      if (std::memcmp(got, t, 256) == 0) out[static_cast<size_t>(c)] = f;
    }
  }
  return out;
}

// plan_fixed's results, kept per thread for the last few (tier, params) seen: a model calls each
// batch norm with the same alpha/beta every time, and planning (256 codes per channel, run twice)
// was ~3-7% of a batch_norm2d call. The key is everything plan_fixed reads.
template <typename T>
struct FixedPlanCache {
  struct Slot {
    const void* fn = nullptr;
    int32_t in_zp = 0, out_zp = 0;
    float lo = 0, hi = 0;
    std::vector<float> alpha, beta;
    std::vector<kernels::FixedAffine> plan;
  };
  static constexpr int kSlots = 4;
  Slot slots[kSlots];
  int next = 0;

  const std::vector<kernels::FixedAffine>& get(const kernels::TypedKernels<T>& k, int64_t C,
                                               const AffineParams& p) {
    const void* fn = reinterpret_cast<const void*>(k.fixed_plane);
    const size_t bytes = static_cast<size_t>(C) * sizeof(float);
    for (Slot& s : slots) {
      if (s.fn == fn && s.in_zp == p.in_zp && s.out_zp == p.out_zp &&
          std::memcmp(&s.lo, &p.lo, sizeof(float)) == 0 &&
          std::memcmp(&s.hi, &p.hi, sizeof(float)) == 0 &&
          s.alpha.size() == static_cast<size_t>(C) &&
          std::memcmp(s.alpha.data(), p.alpha, bytes) == 0 &&
          std::memcmp(s.beta.data(), p.beta, bytes) == 0) {
        return s.plan;
      }
    }
    Slot& s = slots[next];
    next = (next + 1) % kSlots;
    s.fn = nullptr;  // invalid until filled (plan_fixed may throw on allocation)
    s.plan = plan_fixed<T>(k, C, p);
    s.alpha.assign(p.alpha, p.alpha + C);
    s.beta.assign(p.beta, p.beta + C);
    s.in_zp = p.in_zp;
    s.out_zp = p.out_zp;
    s.lo = p.lo;
    s.hi = p.hi;
    s.fn = fn;
    return s.plan;
  }
};

template <typename T>
FixedPlanCache<T>& fixed_plan_cache() {
  static thread_local FixedPlanCache<T> cache;
  return cache;
}

template <typename T>
void run_affine(const kernels::TypedKernels<T>& k, const at::Tensor& x, at::Tensor& y,
                int64_t N, int64_t C, int64_t HW, bool channels_last_in, bool planes_out,
                const AffineParams& p_in) {
  // Bounded NCHW inputs of many pixels per channel: the channels' fixed-point forms (on a Zen 1,
  // 1 x 64 x 112 x 112 to channels-last, 0.42-0.43 -> 0.39-0.41 ms; the input's channel runs
  // then bound it).
  AffineParams p = p_in;
  if (p.bounded && k.fixed_plane != nullptr && !channels_last_in && HW > 1 &&
      N * HW >= kTablePixels) {
    // A reference into this thread's cache: valid until this thread plans again (not before
    // this call returns; the parallel workers only read it).
    p.fixed = fixed_plan_cache<T>().get(k, C, p).data();
  }
  const T* xp = reinterpret_cast<const T*>(x.data_ptr());
  T* yp = reinterpret_cast<T*>(y.data_ptr());
  const auto& kt = kernels::table();
  // Not where the tier computes faster than it looks up (avx2, with bounded coefficients).
  const bool use_tables = !channels_last_in && HW > 1 && N * HW >= kTablePixels &&
                          !(kt.compute_over_lookup && p.bounded);
  if (use_tables) {
    const std::vector<uint8_t> tables = build_tables<T>(k, C, p);
    const uint8_t* tp = tables.data();
    const uint8_t* xb = reinterpret_cast<const uint8_t*>(xp);
    uint8_t* yb = reinterpret_cast<uint8_t*>(yp);
    if (planes_out) {
      at::parallel_for(0, N * C, std::max<int64_t>(1, kGrainBytes / HW), [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i) kt.lut8(xb + i * HW, yb + i * HW, HW, tp + (i % C) * 256);
      });
    } else {
      for_pixel_blocks</*kPix=*/256>(N, C, HW, kGrainBytes, [&](int64_t n, int64_t p0, int64_t p1) {
        kt.lut8_nchw_to_nhwc(xb + n * C * HW, yb + n * C * HW, C, HW, p0, p1, tp);
      });
    }
    return;
  }
  if (channels_last_in || HW == 1) {
    // Rows of C: the input already is in the output's (channels-last) order.
    const int64_t rows = N * HW;
    at::parallel_for(0, rows, std::max<int64_t>(1, kGrainBytes / C), [&](int64_t b, int64_t e) {
      k.affine_rows(xp + b * C, yp + b * C, e - b, C, p);
    });
  } else if (planes_out) {
    // (N, C, L) contiguous in and out: one alpha/beta per plane.
    at::parallel_for(0, N * C, std::max<int64_t>(1, kGrainBytes / HW), [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) k.affine_plane(xp + i * HW, yp + i * HW, HW, i % C, p);
    });
  } else {
    // NCHW in, NHWC out: transpose fused into the requantization, in 64-pixel blocks.
    for_pixel_blocks</*kPix=*/64>(N, C, HW, kGrainBytes, [&](int64_t n, int64_t p0, int64_t p1) {
      k.affine_nchw_to_nhwc(xp + n * C * HW, yp + n * C * HW, C, HW, p0, p1, p);
    });
  }
}

// Output element i (in the output's own order, NHWC when nhwc_out): its channel *c and the index
// *src of the input element it reads (the input NHWC when channels_last_in, else NCHW).
inline void channel_and_source(int64_t i, int64_t C, int64_t HW, bool channels_last_in,
                               bool nhwc_out, int64_t* c, int64_t* src) {
  if (nhwc_out) {
    *c = i % C;
    const int64_t pix = i / C, n = pix / HW, hw = pix % HW;
    *src = channels_last_in ? i : (n * C + *c) * HW + hw;
  } else {
    *c = (i / HW) % C;
    *src = i;
  }
}

// qint32: no vector kernel (8-bit activations are the product); exact clamping in double so the
// float->int conversion never overflows.
void run_affine_i32(const at::Tensor& x, at::Tensor& y, int64_t N, int64_t C, int64_t HW,
                    bool channels_last_in, bool nhwc_out, const AffineParams& p, bool relu) {
  const int32_t* xp = reinterpret_cast<const int32_t*>(x.data_ptr());
  int32_t* yp = reinterpret_cast<int32_t*>(y.data_ptr());
  const double lo = relu ? std::max<double>(p.out_zp, INT32_MIN) : INT32_MIN;
  const double hi = INT32_MAX;
  at::parallel_for(0, N * C * HW, kGrainBytes / 4, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t c, src;
      channel_and_source(i, C, HW, channels_last_in, nhwc_out, &c, &src);
      float v = std::fma(p.alpha[c], static_cast<float>(static_cast<int64_t>(xp[src]) - p.in_zp),
                         p.beta[c]);
      double r = std::nearbyint(static_cast<double>(v)) + p.out_zp;
      r = std::isnan(r) ? lo : std::min(std::max(r, lo), hi);
      yp[i] = static_cast<int32_t>(r);
    }
  });
}

// Exact fallback for channels whose float32 scale factors overflow (e.g. a tiny output scale):
// the affine map in double, clamped before rounding, element by element. Never taken by sane
// models; it exists so such inputs saturate like the float reference instead of turning
// inf * 0 into NaN.
template <typename T>
void run_affine_double(const at::Tensor& x, at::Tensor& y, int64_t N, int64_t C, int64_t HW,
                       bool channels_last_in, bool nhwc_out, const std::vector<double>& alpha,
                       const std::vector<double>& beta, int64_t in_zp, int64_t out_zp, double lo,
                       double hi) {
  const T* xp = reinterpret_cast<const T*>(x.data_ptr());
  T* yp = reinterpret_cast<T*>(y.data_ptr());
  at::parallel_for(0, N * C * HW, kGrainBytes, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      int64_t c, src;
      channel_and_source(i, C, HW, channels_last_in, nhwc_out, &c, &src);
      const double d = static_cast<double>(static_cast<int64_t>(xp[src]) - in_zp);
      // alpha * 0 is 0 even for huge alpha: only a nonzero offset moves off beta.
      double v = d == 0 ? beta[c] : alpha[c] * d + beta[c];
      v = std::isnan(v) ? lo : std::min(std::max(v, lo), hi);
      yp[i] = static_cast<T>(static_cast<int64_t>(std::nearbyint(v)) + out_zp);
    }
  });
}

template <bool ReluFused>
at::Tensor batch_norm_impl(const char* op, Rank rank, const QArg& qx,
                           const c10::optional<at::Tensor>& weight,
                           const c10::optional<at::Tensor>& bias, const at::Tensor& mean,
                           const at::Tensor& var, double eps, double output_scale,
                           int64_t output_zero_point) {
  const int64_t dim = qx.dim();
  switch (rank) {
    case Rank::k1d:
      TORCH_CHECK(dim == 2 || dim == 3, "qplugin::", op,
                  ": expected a 2-D (N, C) or 3-D (N, C, L) input, got ", dim, "-D");
      break;
    case Rank::k2d:
      TORCH_CHECK(dim == 4, "qplugin::", op, ": expected a 4-D (N, C, H, W) input, got ", dim, "-D");
      break;
    case Rank::k3d:
      TORCH_CHECK(dim == 5, "qplugin::", op, ": expected a 5-D (N, C, D, H, W) input, got ", dim,
                  "-D");
      break;
    case Rank::kAny:
      TORCH_CHECK(dim >= 2 && dim <= 5, "qplugin::", op,
                  ": expected a 2-D, 3-D, 4-D or 5-D input (N, C, ...), got ", dim, "-D");
  }
  TORCH_CHECK(std::isfinite(eps) && eps >= 0, "qplugin::", op,
              ": expected a finite, non-negative eps, got ", eps);
  checks::check_output_qparams(op, output_scale, output_zero_point, qx.scalar_type());
  const int64_t N = qx.size(0), C = qx.size(1);
  at::Tensor m = checks::float_vector(op, "mean", mean, C);
  at::Tensor v = checks::float_vector(op, "var", var, C);
  // weight/bias None means 1/0 (as float batch_norm; PyTorch's quantized op rejects None).
  at::Tensor w = weight.has_value() && weight->defined()
                     ? checks::float_vector(op, "weight", *weight, C)
                     : at::Tensor();
  at::Tensor b = bias.has_value() && bias->defined() ? checks::float_vector(op, "bias", *bias, C)
                                                     : at::Tensor();

  const float* mp = m.data_ptr<float>();
  const float* vp = v.data_ptr<float>();
  const float* wp = w.defined() ? w.data_ptr<float>() : nullptr;
  const float* bp = b.defined() ? b.data_ptr<float>() : nullptr;
  const double in_scale = qx.q_scale();
  std::vector<float> alpha(C), beta(C);
  std::vector<double> alpha_d(C), beta_d(C);
  bool finite = true;
  for (int64_t c = 0; c < C; ++c) {
    const float denom = vp[c] + static_cast<float>(eps);
    TORCH_CHECK(denom > 0 && std::isfinite(denom) && std::isfinite(mp[c]), "qplugin::", op,
                ": expected finite mean and var + eps > 0 for every channel, got mean ", mp[c],
                " and var ", vp[c], " at channel ", c, " (eps ", eps, ")");
    const float inv_sigma = 1.0 / std::sqrt(denom);
    const float wv = wp ? wp[c] : 1.0f, bv = bp ? bp[c] : 0.0f;
    alpha[c] = inv_sigma * wv * (in_scale / output_scale);
    beta[c] = (bv - mp[c] * inv_sigma * wv) / output_scale;
    const double inv_sigma_d = 1.0 / std::sqrt(static_cast<double>(denom));
    alpha_d[c] = inv_sigma_d * wv * (in_scale / output_scale);
    beta_d[c] = (bv - static_cast<double>(mp[c]) * inv_sigma_d * wv) / output_scale;
    finite = finite && std::isfinite(alpha[c]) && std::isfinite(beta[c]);
  }

  // Output memory format as PyTorch's: channels-last for 4-D/5-D, contiguous otherwise.
  const bool nhwc_out = dim >= 4;
  const auto out_fmt = dim == 4   ? at::MemoryFormat::ChannelsLast
                       : dim == 5 ? at::MemoryFormat::ChannelsLast3d
                                  : at::MemoryFormat::Contiguous;
  checks::check_numel(op, "an output", qx.sizes());  // expanded inputs (checks.h)
  at::Tensor y = new_output(qx, qx.sizes(), qx.scalar_type(), output_scale, output_zero_point,
                            out_fmt);
  if (qx.numel() == 0) return y;
  const bool cl_in = nhwc_out && qx.is_contiguous(out_fmt);
  at::Tensor x = cl_in ? qx.tensor() : qx.tensor().contiguous();
  const int64_t HW = qx.numel() / (N * C);

  const auto r = qrange(qx.scalar_type());
  const int64_t out_zp = output_zero_point;
  AffineParams p{alpha.data(), beta.data(), static_cast<int32_t>(qx.q_zero_point()),
                 static_cast<int32_t>(out_zp),
                 static_cast<float>((ReluFused ? std::max<int64_t>(r.first, out_zp) : r.first) -
                                    out_zp),
                 static_cast<float>(r.second - out_zp)};
  if (finite) {
    // AffineParams::bounded: |alpha| * max|x - in_zp| + |beta| < 2^30 for every channel.
    const double span = static_cast<double>(
        std::max(std::abs(r.first - p.in_zp), std::abs(r.second - p.in_zp)));
    p.bounded = true;
    for (int64_t c = 0; c < C && p.bounded; ++c) {
      const double a = alpha[c], b = beta[c];
      p.bounded = std::isfinite(a) && std::isfinite(b) && std::abs(a) * span + std::abs(b) < 1e9;
    }
  }
  if (!finite) {
    const double lo = static_cast<double>(p.lo), hi = static_cast<double>(p.hi);
    switch (qx.scalar_type()) {
      case at::kQUInt8:
        run_affine_double<uint8_t>(x, y, N, C, HW, cl_in, nhwc_out, alpha_d, beta_d, p.in_zp,
                                   out_zp, lo, hi);
        break;
      case at::kQInt8:
        run_affine_double<int8_t>(x, y, N, C, HW, cl_in, nhwc_out, alpha_d, beta_d, p.in_zp,
                                  out_zp, lo, hi);
        break;
      default:
        run_affine_double<int32_t>(x, y, N, C, HW, cl_in, nhwc_out, alpha_d, beta_d, p.in_zp,
                                   out_zp, static_cast<double>(ReluFused ? std::max<int64_t>(r.first, out_zp) : r.first) - out_zp,
                                   static_cast<double>(r.second - out_zp));
        break;
    }
    return y;
  }
  const auto& k = kernels::table();
  switch (qx.scalar_type()) {
    case at::kQUInt8: run_affine<uint8_t>(k.u8, x, y, N, C, HW, cl_in, !nhwc_out, p); break;
    case at::kQInt8: run_affine<int8_t>(k.s8, x, y, N, C, HW, cl_in, !nhwc_out, p); break;
    default: run_affine_i32(x, y, N, C, HW, cl_in, nhwc_out, p, ReluFused); break;
  }
  return y;
}

// The ops: name, input rank, ReLU fused, the input's name in the `.plain` schema.
#define QPLUGIN_BN_OPS(X)                                   \
  X(quantized_batch_norm, Rank::kAny, false, "input")       \
  X(batch_norm, Rank::kAny, false, "qx")                    \
  X(batch_norm1d, Rank::k1d, false, "qx")                   \
  X(batch_norm2d, Rank::k2d, false, "qx")                   \
  X(batch_norm3d, Rank::k3d, false, "qx")                   \
  X(batch_norm_relu, Rank::kAny, true, "qx")                \
  X(batch_norm1d_relu, Rank::k1d, true, "qx")               \
  X(batch_norm2d_relu, Rank::k2d, true, "qx")               \
  X(batch_norm3d_relu, Rank::k3d, true, "qx")

// Each op's two doors: NAME_quantized_cpu (legacy, quantized input) and NAME_plain (plain codes +
// qparams; `arg` names the input in its schema).
#define QPLUGIN_BN_OP(NAME, rank, relu, arg)                                                   \
  at::Tensor NAME##_quantized_cpu(const at::Tensor& qx, const c10::optional<at::Tensor>& weight, \
                                  const c10::optional<at::Tensor>& bias, const at::Tensor& mean, \
                                  const at::Tensor& var, double eps, double output_scale,      \
                                  int64_t output_zp) {                                         \
    return batch_norm_impl<relu>(                                                              \
        #NAME, rank,                                                                           \
        QArg::quantized(#NAME, "input", qx, {at::kQUInt8, at::kQInt8, at::kQInt32}),           \
        weight, bias, mean, var, eps, output_scale, output_zp);                                \
  }                                                                                            \
  at::Tensor NAME##_plain(const at::Tensor& qx, double qx_scale, int64_t qx_zero_point,        \
                          const c10::optional<at::Tensor>& weight,                            \
                          const c10::optional<at::Tensor>& bias, const at::Tensor& mean,      \
                          const at::Tensor& var, double eps, double output_scale,             \
                          int64_t output_zp) {                                                \
    return batch_norm_impl<relu>(                                                              \
        #NAME, rank,                                                                           \
        QArg::plain(#NAME, arg, qx, qx_scale, qx_zero_point,                                   \
                    {at::kQUInt8, at::kQInt8, at::kQInt32}),                                   \
        weight, bias, mean, var, eps, output_scale, output_zp);                                \
  }
QPLUGIN_BN_OPS(QPLUGIN_BN_OP)
#undef QPLUGIN_BN_OP

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Each op and its `.plain` overload (PT2 door), registered for QuantizedCPU and CPU: on a float
// tensor the op itself raises a clear "expected a quantized tensor" instead of the dispatcher's
// "could not run ... CPU backend", and a quantized tensor passed to a `.plain` overload gets
// QArg::plain's "expected a plain tensor of codes".
#define QPLUGIN_BN_IMPL(NAME, rank, relu, arg) QPLUGIN_IMPL_WITH_PLAIN(NAME)
QPLUGIN_IMPL_QUANTIZED_AND_CPU(QPLUGIN_BN_OPS(QPLUGIN_BN_IMPL))

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_batch_norm_kernel)
