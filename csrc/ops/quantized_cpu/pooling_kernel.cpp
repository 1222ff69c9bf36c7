// QuantizedCPU (and CPU, for a clear error on float input) kernels of the pooling ops: max,
// average and adaptive average pooling in 1, 2 and 3 dimensions, adaptive max pooling 2d.
// Schemas: ops/pooling.cpp. Microkernels: kernels/pool/* via kernels/pool/pool_dispatch.h.
// Every op is one N-d engine over (D, H, W) (1-d and 2-d inputs get unit leading dims):
//  - channels-last input: per output pixel, the window's input pixels are rows of C codes
//    (max_rows / avg_rows, vectorized over channels);
//  - contiguous (NCHW) input: per output row, a vertical pass over the window's input rows into
//    a padded row (max_rows / sum_rows), then a horizontal pass (hmax / havg / havg_win);
//    global averages (one output per plane) sum whole planes (plane_avg).
// Max pooling is exact; averages are clamp(zp + round_half_even(sum(x - zp) / divisor)), the
// exact float64 reference with the input qparams (which propagate to the output, as PyTorch's).
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <string>
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

using kernels::AvgQ;
using kernels::TypedPoolKernels;

enum class Kind { kMax, kAvg, kAdaptiveAvg, kAdaptiveMax };

// Per spatial dimension: for each output index o, the valid input taps (ascending) and the
// divisor component (window size with or without padding).
struct DimPlan {
  int64_t in = 1, out = 1;
  std::vector<int64_t> off;   // [out + 1] into taps
  std::vector<int64_t> taps;  // input indices
  std::vector<int64_t> div;   // [out]
  // Regular description of the horizontal pass (max / avg): padded-row index of tap k of output
  // o is o * stride + k * dilation, the row being padded by `pad` on the left.
  int64_t kernel = 1, stride = 1, pad = 0, dilation = 1;
};

struct PoolArgs {
  Kind kind;
  std::vector<int64_t> kernel, stride, padding, dilation, out_size;  // innermost-aligned, nd long
  bool ceil_mode = false;
  bool count_include_pad = true;
  c10::optional<int64_t> divisor_override;
};

std::string vec_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// Expands an int[] argument of 1 or nd values (empty: `dflt`) to nd values.
std::vector<int64_t> expand(const char* op, const char* name, at::IntArrayRef v, int64_t nd,
                            const std::vector<int64_t>& dflt) {
  if (v.empty() && !dflt.empty()) return dflt;
  TORCH_CHECK(v.size() == 1 || static_cast<int64_t>(v.size()) == nd, "qplugin::", op,
              ": expected ", name, " to be a single int or a list of ", nd, " ints, got ",
              v.size(), " values ", v);
  std::vector<int64_t> out(nd);
  for (int64_t i = 0; i < nd; ++i) out[i] = v.size() == 1 ? v[0] : v[i];
  return out;
}

int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t eff = d * (k - 1) + 1;
  const int64_t num = in + 2 * p - eff + (ceil_mode ? s - 1 : 0);
  int64_t o = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
  // The last window must start inside the input or the left padding (PyTorch's rule).
  if (ceil_mode && o > 0 && (o - 1) * s >= in + p) --o;
  return o;
}

DimPlan plan_window(const char* op, const PoolArgs& a, int64_t i, int64_t in) {
  DimPlan d;
  d.in = in;
  const int64_t k = a.kernel[i], s = a.stride[i], p = a.padding[i];
  const int64_t dil = a.kind == Kind::kMax ? a.dilation[i] : 1;
  d.kernel = k;
  d.stride = s;
  d.pad = p;
  d.dilation = dil;
  d.out = pooled_size(in, k, s, p, dil, a.ceil_mode);
  d.off.push_back(0);
  for (int64_t o = 0; o < d.out; ++o) {
    if (a.kind == Kind::kMax) {
      // Taps t in [0, k) with x = base + t * dil in [0, in), computed rather than scanned: a
      // kernel far larger than the input (allowed with padding up to half of it) stays cheap.
      const int64_t base = o * s - p;
      const int64_t t0 = base >= 0 ? 0 : (-base + dil - 1) / dil;
      const int64_t t1 = base > in - 1 ? 0 : std::min(k, (in - 1 - base) / dil + 1);
      for (int64_t t = t0; t < t1; ++t) d.taps.push_back(base + t * dil);
      d.div.push_back(1);
    } else {
      const int64_t start = o * s - p;
      const int64_t end = std::min(start + k, in + p);
      const int64_t lo = std::max<int64_t>(start, 0), hi = std::min(end, in);
      for (int64_t x = lo; x < hi; ++x) d.taps.push_back(x);
      d.div.push_back(a.count_include_pad ? end - start : hi - lo);
    }
    // A dilated max window can skip over the whole input (found by tests/fuzz; PyTorch's float
    // op gives -inf there, its quantized op qmin): user input, not an internal error.
    TORCH_CHECK(static_cast<int64_t>(d.taps.size()) > d.off.back(), "qplugin::", op,
                ": expected every pooling window to cover at least one input element, got "
                "window ", o, " of dim ", i, " in padding only (input size ", in, ", kernel ", k,
                ", stride ", s, ", padding ", p, ", dilation ", dil,
                "); use less padding or dilation");
    d.off.push_back(static_cast<int64_t>(d.taps.size()));
  }
  return d;
}

DimPlan plan_adaptive(int64_t in, int64_t out) {
  DimPlan d;
  d.in = in;
  d.out = out;
  d.off.push_back(0);
  for (int64_t o = 0; o < out; ++o) {
    // In 128 bits: o * in can pass INT64_MAX for a large output_size on a large input.
    const int64_t lo = static_cast<int64_t>((static_cast<__int128>(o) * in) / out);
    const int64_t hi = static_cast<int64_t>(
        (static_cast<__int128>(o + 1) * in + out - 1) / out);
    for (int64_t x = lo; x < hi; ++x) d.taps.push_back(x);
    d.div.push_back(hi - lo);
    d.off.push_back(static_cast<int64_t>(d.taps.size()));
  }
  return d;
}

bool is_max(Kind k) { return k == Kind::kMax || k == Kind::kAdaptiveMax; }

// x: `planes` planes of [D][H][W] pixels of C codes each (NCHW: planes = N*C, C = 1;
// channels last: planes = N, C channels); y likewise with the output dims. Per output row
// (plane, od, oh): vertical pass over the window's input rows into a padded row, then the
// horizontal pass.
template <typename T>
void run_rows(const TypedPoolKernels<T>& K, Kind kind, const T* x, T* y, int64_t planes,
              int64_t C, const DimPlan& pd, const DimPlan& ph, const DimPlan& pw, const AvgQ& q,
              c10::optional<int64_t> divisor_override, bool regular) {
  using Acc = typename kernels::PoolAcc<T>::type;
  const int64_t D = pd.in, H = ph.in, W = pw.in, OD = pd.out, OH = ph.out, OW = pw.out;
  const int64_t in_plane = D * H * W * C, out_plane = OD * OH * OW * C;
  const bool maxk = is_max(kind);
  // NCHW global average: one window covering the whole plane.
  if (!maxk && C == 1 && out_plane == 1 && pd.off[1] == D && ph.off[1] == H && pw.off[1] == W) {
    const double div = divisor_override ? static_cast<double>(*divisor_override)
                                        : static_cast<double>(pd.div[0] * ph.div[0] * pw.div[0]);
    at::parallel_for(0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(1, in_plane)),
                     [&](int64_t b, int64_t e) { K.plane_avg(x + b * in_plane, y + b, e - b,
                                                             in_plane, div, q); });
    return;
  }
  // Padded row (in pixels): tap k of output o at o * stride + k * dilation (regular), or the
  // adaptive windows [ws, we) of the unpadded row.
  const int64_t padl = regular ? pw.pad : 0;
  const int64_t need = regular ? (OW - 1) * pw.stride + (pw.kernel - 1) * pw.dilation + 1 : W;
  const int64_t L = std::max(need, padl + W) + 1;
  std::vector<int64_t> ws, we;
  if (!regular) {
    for (int64_t o = 0; o < OW; ++o) {
      ws.push_back(pw.taps[pw.off[o]]);
      we.push_back(pw.taps[pw.off[o + 1] - 1] + 1);
    }
  }
  const int64_t rows_out = planes * OD * OH;
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, W * C * 4));
  at::parallel_for(0, rows_out, grain, [&](int64_t b, int64_t e) {
    std::vector<const T*> rows;
    std::vector<T> tmax;
    std::vector<Acc> tsum;
    std::vector<double> divs(OW);
    if (maxk) tmax.assign(L * C, std::numeric_limits<T>::lowest());
    else tsum.assign(L * C, 0);
    for (int64_t r = b; r < e; ++r) {
      const int64_t oh = r % OH, od = (r / OH) % OD, pl = r / (OH * OD);
      const T* xp = x + pl * in_plane;
      rows.clear();
      for (int64_t i = pd.off[od]; i < pd.off[od + 1]; ++i)
        for (int64_t j = ph.off[oh]; j < ph.off[oh + 1]; ++j)
          rows.push_back(xp + (pd.taps[i] * H + ph.taps[j]) * W * C);
      T* yp = y + r * OW * C;
      if (maxk) {
        K.max_rows(rows.data(), static_cast<int64_t>(rows.size()), tmax.data() + padl * C, W * C);
        if (regular) {
          K.hmax(tmax.data(), yp, OW, pw.kernel, pw.stride, pw.dilation, C);
        } else {
          for (int64_t o = 0; o < OW; ++o) {
            T* yo = yp + o * C;
            for (int64_t c = 0; c < C; ++c) yo[c] = tmax[ws[o] * C + c];
            for (int64_t t = ws[o] + 1; t < we[o]; ++t)
              for (int64_t c = 0; c < C; ++c) yo[c] = std::max(yo[c], tmax[t * C + c]);
          }
        }
      } else {
        K.sum_rows(rows.data(), static_cast<int64_t>(rows.size()), q.zp, tsum.data() + padl * C,
                   W * C);
        const int64_t dv = pd.div[od] * ph.div[oh];
        for (int64_t o = 0; o < OW; ++o)
          divs[o] = divisor_override ? static_cast<double>(*divisor_override)
                                     : static_cast<double>(dv * pw.div[o]);
        if (regular) K.havg(tsum.data(), yp, OW, pw.kernel, pw.stride, C, divs.data(), q);
        else K.havg_win(tsum.data(), yp, OW, C, ws.data(), we.data(), divs.data(), q);
      }
    }
  });
}

// Channels-last averages: per output pixel, the window's input pixels are rows of C codes
// summed in registers (avg_rows): cheaper than int32 row buffers. x: [N][D][H][W][C].
template <typename T>
void run_cl(const TypedPoolKernels<T>& K, Kind kind, const T* x, T* y, int64_t N, int64_t C,
            const DimPlan& pd, const DimPlan& ph, const DimPlan& pw, const AvgQ& q,
            c10::optional<int64_t> divisor_override) {
  const int64_t D = pd.in, H = ph.in, W = pw.in, OD = pd.out, OH = ph.out, OW = pw.out;
  const bool maxk = is_max(kind);
  const int64_t rows_out = N * OD * OH;
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, OW * C));
  at::parallel_for(0, rows_out, grain, [&](int64_t b, int64_t e) {
    std::vector<const T*> rows;
    std::vector<int64_t> base;  // row offsets of the (d, h) taps
    for (int64_t r = b; r < e; ++r) {
      const int64_t oh = r % OH, od = (r / OH) % OD, n = r / (OH * OD);
      base.clear();
      for (int64_t i = pd.off[od]; i < pd.off[od + 1]; ++i)
        for (int64_t j = ph.off[oh]; j < ph.off[oh + 1]; ++j)
          base.push_back(((n * D + pd.taps[i]) * H + ph.taps[j]) * W);
      const int64_t dv = pd.div[od] * ph.div[oh];
      for (int64_t ow = 0; ow < OW; ++ow) {
        rows.clear();
        for (int64_t bo : base)
          for (int64_t t = pw.off[ow]; t < pw.off[ow + 1]; ++t)
            rows.push_back(x + (bo + pw.taps[t]) * C);
        T* yp = y + (r * OW + ow) * C;
        if (maxk) {
          K.max_rows(rows.data(), static_cast<int64_t>(rows.size()), yp, C);
        } else {
          const double div = divisor_override ? static_cast<double>(*divisor_override)
                                              : static_cast<double>(dv * pw.div[ow]);
          K.avg_rows(rows.data(), static_cast<int64_t>(rows.size()), yp, C, div, q);
        }
      }
    }
  });
}

// Runs the plan on 5-D views (N, C, D, H, W) of x and y (y allocated by the caller).
template <typename T>
void run(Kind kind, const at::Tensor& x5, at::Tensor& y5, bool cl, const DimPlan& pd,
         const DimPlan& ph, const DimPlan& pw, const AvgQ& q, c10::optional<int64_t> dov,
         bool regular) {
  const auto& K = kernels::pool_table().of<T>();
  const int64_t N = x5.size(0), C = x5.size(1);
  const T* xp = reinterpret_cast<const T*>(x5.data_ptr());
  T* yp = reinterpret_cast<T*>(y5.data_ptr());
  if (cl && !is_max(kind)) run_cl<T>(K, kind, xp, yp, N, C, pd, ph, pw, q, dov);
  else if (cl) run_rows<T>(K, kind, xp, yp, N, C, pd, ph, pw, q, dov, regular);
  else run_rows<T>(K, kind, xp, yp, N * C, 1, pd, ph, pw, q, dov, regular);
}

// nd: pooled dims (1, 2, 3). Accepts (C, *) unbatched or (N, C, *) input.
// `qa` comes through either door (common/qarg.h): both call this with the same bytes.
at::Tensor pool_impl_unguarded(const char* op, int64_t nd, const QArg& qa, PoolArgs a,
                               bool force_cl3d_out) {
  const at::Tensor& qx = qa.tensor();
  const int64_t dim = qx.dim();
  TORCH_CHECK(dim == nd + 1 || dim == nd + 2, "qplugin::", op, ": expected a ", nd + 1, "-D (C, ",
              nd == 1 ? "L" : nd == 2 ? "H, W" : "D, H, W", ") or ", nd + 2, "-D (N, C, ",
              nd == 1 ? "L" : nd == 2 ? "H, W" : "D, H, W", ") input, got ", dim, "-D");
  const bool unbatched = dim == nd + 1;
  at::Tensor xb = unbatched ? qx.unsqueeze(0) : qx;
  // Spatial sizes, padded to 3 with leading 1s.
  std::vector<int64_t> sp(3, 1);
  for (int64_t i = 0; i < nd; ++i) sp[3 - nd + i] = xb.size(2 + i);
  const bool adaptive = a.kind == Kind::kAdaptiveAvg || a.kind == Kind::kAdaptiveMax;
  DimPlan plans[3];
  if (adaptive) {
    for (int64_t i = 0; i < nd; ++i) {
      TORCH_CHECK(a.out_size[i] > 0, "qplugin::", op, ": expected positive output sizes, got ",
                  vec_str(a.out_size));
      TORCH_CHECK(xb.size(2 + i) > 0, "qplugin::", op,
                  ": expected non-empty spatial dimensions, got input of shape ", qx.sizes());
    }
    std::vector<int64_t> out_shape{xb.size(0), xb.size(1)};
    out_shape.insert(out_shape.end(), a.out_size.begin(), a.out_size.end());
    checks::check_numel(op, "an output", out_shape);
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t j = i - (3 - nd);
      plans[i] = plan_adaptive(sp[i], j >= 0 ? a.out_size[j] : 1);
    }
  } else {
    for (int64_t i = 0; i < nd; ++i) {
      // Hostile sizes (checks.h): each argument at most 2^40, the dilated kernel in int64; then
      // the padded extent in + 2 * padding + stride and the plans' arithmetic cannot overflow.
      checks::check_extent(op, "kernel_size", a.kernel[i]);
      checks::check_extent(op, "stride", a.stride[i]);
      checks::check_extent(op, "padding", a.padding[i]);
      if (a.kind == Kind::kMax) {
        checks::check_extent(op, "dilation", a.dilation[i]);
        if (a.kernel[i] > 0 && a.dilation[i] > 0) {
          checks::check_extent(op, "the dilated kernel dilation * (kernel_size - 1) + 1",
                               checks::mul_size(op, "the dilated kernel", a.dilation[i],
                                                a.kernel[i] - 1) + 1);
        }
      }
      TORCH_CHECK(a.kernel[i] > 0, "qplugin::", op, ": expected kernel_size of positive values, got ",
                  vec_str(a.kernel));
      TORCH_CHECK(a.stride[i] > 0, "qplugin::", op, ": expected stride of positive values, got ",
                  vec_str(a.stride));
      TORCH_CHECK(a.padding[i] >= 0, "qplugin::", op,
                  ": expected padding of non-negative values, got ", vec_str(a.padding));
      if (a.kind == Kind::kMax) {
        TORCH_CHECK(a.dilation[i] > 0, "qplugin::", op,
                    ": expected dilation of positive values, got ", vec_str(a.dilation));
        const int64_t eff = a.dilation[i] * (a.kernel[i] - 1) + 1;
        TORCH_CHECK(a.padding[i] <= eff / 2, "qplugin::", op,
                    ": expected padding at most half of the effective kernel size "
                    "(dilation * (kernel_size - 1) + 1), got padding ", vec_str(a.padding),
                    ", kernel_size ", vec_str(a.kernel), " and dilation ", vec_str(a.dilation));
      } else {
        TORCH_CHECK(a.padding[i] <= a.kernel[i] / 2, "qplugin::", op,
                    ": expected padding at most half of the kernel size, got padding ",
                    vec_str(a.padding), " and kernel_size ", vec_str(a.kernel));
      }
    }
    if (a.divisor_override) {
      TORCH_CHECK(*a.divisor_override != 0, "qplugin::", op,
                  ": expected a non-zero divisor_override, got 0");
      TORCH_CHECK(*a.divisor_override > 0, "qplugin::", op,
                  ": expected a positive divisor_override, got ", *a.divisor_override);
    }
    std::vector<int64_t> outs;
    for (int64_t i = 0; i < nd; ++i) {
      const int64_t dil = a.kind == Kind::kMax ? a.dilation[i] : 1;
      outs.push_back(pooled_size(xb.size(2 + i), a.kernel[i], a.stride[i], a.padding[i], dil,
                                 a.ceil_mode));
    }
    for (int64_t i = 0; i < nd; ++i) {
      std::vector<int64_t> in_sp(xb.sizes().begin() + 2, xb.sizes().end());
      TORCH_CHECK(outs[i] > 0, "qplugin::", op, ": expected an output size of at least 1, got ",
                  vec_str(outs), " for input spatial size ", vec_str(in_sp), ", kernel_size ",
                  vec_str(a.kernel), ", stride ", vec_str(a.stride), " and padding ",
                  vec_str(a.padding), "; the kernel is larger than the padded input");
    }
    {
      std::vector<int64_t> out_shape{xb.size(0), xb.size(1)};
      out_shape.insert(out_shape.end(), outs.begin(), outs.end());
      checks::check_numel(op, "an output", out_shape);
      // run_rows' per-thread padded row: W + 2 * padding (+ stride for ceil_mode) x C codes.
      checks::check_numel(op, "a padded input row (W + 2 * padding + stride, C)",
                          {xb.size(1 + nd) + 2 * a.padding[nd - 1] + a.stride[nd - 1],
                           xb.size(1)});
    }
    // Pad the argument lists to 3 dims with identity pooling.
    auto pad3 = [nd](std::vector<int64_t> v, int64_t one) {
      std::vector<int64_t> r(3 - nd, one);
      r.insert(r.end(), v.begin(), v.end());
      return r;
    };
    PoolArgs a3 = a;
    a3.kernel = pad3(a.kernel, 1);
    a3.stride = pad3(a.stride, 1);
    a3.padding = pad3(a.padding, 0);
    a3.dilation = pad3(a.kind == Kind::kMax ? a.dilation : std::vector<int64_t>(nd, 1), 1);
    for (int64_t i = 0; i < 3; ++i) plans[i] = plan_window(op, a3, i, sp[i]);
  }
  const int64_t N = xb.size(0), C = xb.size(1);
  std::vector<int64_t> out_shape{N, C};
  for (int64_t i = 3 - nd; i < 3; ++i) out_shape.push_back(plans[i].out);

  // Layout: channels-last in -> channels-last out (PyTorch's suggest_memory_format rule); the
  // aten avg_pool3d QuantizedCPU kernel always returns channels_last_3d (force_cl3d_out).
  const auto cl_fmt = nd == 3 ? at::MemoryFormat::ChannelsLast3d : at::MemoryFormat::ChannelsLast;
  const bool can_cl = nd >= 2 && !unbatched;
  const bool cl = can_cl && xb.suggest_memory_format() == cl_fmt;
  const bool cl_out = cl || (force_cl3d_out && !unbatched);
  at::Tensor y = new_output(qa, out_shape, qa.scalar_type(), qa.q_scale(), qa.q_zero_point(),
                            cl_out ? cl_fmt : at::MemoryFormat::Contiguous);
  if (y.numel() == 0 || xb.numel() == 0) {
    TORCH_CHECK(xb.numel() > 0 || y.numel() == 0, "qplugin::", op,
                ": expected non-empty input, got shape ", qx.sizes());
    return unbatched ? y.squeeze(0) : y;
  }
  at::Tensor x = cl ? xb.contiguous(cl_fmt) : xb.contiguous();
  // The kernels need a dense buffer in the order they read: NCHW output for NCHW input, except
  // for the forced channels-last 3d output (computed contiguous, then converted).
  at::Tensor yk = (cl_out && !cl) ? new_output(qa, out_shape, qa.scalar_type(), qa.q_scale(),
                                               qa.q_zero_point())
                                  : y;
  const auto r = qrange(qa.scalar_type());
  AvgQ q{static_cast<int32_t>(qa.q_zero_point()), static_cast<int32_t>(r.first),
         static_cast<int32_t>(r.second)};
  const bool regular = !adaptive;
  // Exactness of the 8-bit average kernels needs |sum| < 2^23 (pool_dispatch.h): windows over
  // 32768 codes run the qint32 kernels (int64 sums, double quotient) on widened codes.
  int64_t max_window = 1;
  for (int i = 0; i < 3; ++i) {
    int64_t m = 0;
    for (int64_t o = 0; o < plans[i].out; ++o) m = std::max(m, plans[i].off[o + 1] - plans[i].off[o]);
    max_window *= m;
  }
  const bool widen = !is_max(a.kind) && qa.scalar_type() != at::kQInt32 && max_window > 32768;
  if (widen) {
    at::Tensor xi = (qa.is_plain() ? x : x.int_repr()).to(at::kInt);
    at::Tensor yi = at::empty(yk.sizes(), xi.options().memory_format(
                                              cl ? cl_fmt : at::MemoryFormat::Contiguous));
    run<int32_t>(a.kind, xi, yi, cl, plans[0], plans[1], plans[2], q, a.divisor_override, regular);
    at::Tensor yc = yi.to(qa.scalar_type() == at::kQUInt8 ? at::kByte : at::kChar);
    std::memcpy(yk.data_ptr(), yc.data_ptr(), yc.numel());
  } else {
    switch (qa.scalar_type()) {
      case at::kQUInt8:
        run<uint8_t>(a.kind, x, yk, cl, plans[0], plans[1], plans[2], q, a.divisor_override, regular);
        break;
      case at::kQInt8:
        run<int8_t>(a.kind, x, yk, cl, plans[0], plans[1], plans[2], q, a.divisor_override, regular);
        break;
      default:
        run<int32_t>(a.kind, x, yk, cl, plans[0], plans[1], plans[2], q, a.divisor_override, regular);
        break;
    }
  }
  if (!yk.is_same(y)) y.copy_(yk);
  return unbatched ? y.squeeze(0) : y;
}

// A scratch allocation that fails (hostile sizes below the element limit) names the op.
at::Tensor pool_impl_q(const char* op, int64_t nd, const QArg& qa, PoolArgs a,
                       bool force_cl3d_out = false) {
  return checks::guard_alloc(op, [&] { return pool_impl_unguarded(op, nd, qa, a, force_cl3d_out); });
}

// Legacy door: a quantized tensor.
at::Tensor pool_impl(const char* op, int64_t nd, const at::Tensor& qx, PoolArgs a,
                     bool force_cl3d_out = false) {
  return pool_impl_q(op, nd,
                     QArg::quantized(op, "input", qx, {at::kQUInt8, at::kQInt8, at::kQInt32}), a,
                     force_cl3d_out);
}

// PT2 door: plain codes + qparams; errors name "<op>.plain".
struct PlainX {
  const at::Tensor& x;
  double scale;
  int64_t zp;
};

at::Tensor pool_plain(const char* op, const char* plain_op, const char* arg, int64_t nd,
                      const PlainX& px, PoolArgs a, bool force_cl3d_out = false) {
  return pool_impl_q(plain_op, nd,
                     QArg::plain(op, arg, px.x, px.scale, px.zp,
                                 {at::kQUInt8, at::kQInt8, at::kQInt32}),
                     a, force_cl3d_out);
}

// The window of max and avg pooling: kernel_size (required), stride (default: the kernel),
// padding (default 0), each 1 or nd ints.
PoolArgs window_args(const char* op, int64_t nd, Kind kind, at::IntArrayRef kernel_size,
                     at::IntArrayRef stride, at::IntArrayRef padding, bool ceil_mode) {
  PoolArgs a;
  a.kind = kind;
  TORCH_CHECK(!kernel_size.empty(), "qplugin::", op, ": expected kernel_size of 1 or ", nd,
              " ints, got an empty list");
  a.kernel = expand(op, "kernel_size", kernel_size, nd, {});
  a.stride = expand(op, "stride", stride, nd, a.kernel);
  a.padding = expand(op, "padding", padding, nd, std::vector<int64_t>(nd, 0));
  a.ceil_mode = ceil_mode;
  return a;
}

PoolArgs max_args(const char* op, int64_t nd, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                  at::IntArrayRef padding, at::IntArrayRef dilation, bool ceil_mode) {
  PoolArgs a = window_args(op, nd, Kind::kMax, kernel_size, stride, padding, ceil_mode);
  a.dilation = expand(op, "dilation", dilation, nd, std::vector<int64_t>(nd, 1));
  return a;
}

// Each max-pool op's two doors: NAME_quantized_cpu (quantized input) and NAME_plain (plain codes,
// the PT2 door; ARG names its input in the `.plain` schema).
#define QPLUGIN_MAX_POOL_OP(NAME, RANK, ARG)                                                    \
  at::Tensor NAME##_quantized_cpu(const at::Tensor& qx, at::IntArrayRef kernel_size,            \
                                  at::IntArrayRef stride, at::IntArrayRef padding,              \
                                  at::IntArrayRef dilation, bool ceil_mode) {                   \
    return pool_impl(#NAME, RANK, qx,                                                           \
                     max_args(#NAME, RANK, kernel_size, stride, padding, dilation, ceil_mode)); \
  }                                                                                             \
  at::Tensor NAME##_plain(const at::Tensor& x, double xs, int64_t xz, at::IntArrayRef k,        \
                          at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d, bool cm) {   \
    return pool_plain(#NAME, #NAME ".plain", ARG, RANK, {x, xs, xz},                            \
                      max_args(#NAME ".plain", RANK, k, s, p, d, cm));                          \
  }
QPLUGIN_MAX_POOL_OP(max_pool1d, 1, "qx")
QPLUGIN_MAX_POOL_OP(max_pool2d, 2, "qx")
QPLUGIN_MAX_POOL_OP(max_pool3d, 3, "self")
#undef QPLUGIN_MAX_POOL_OP

PoolArgs avg_args(const char* op, int64_t nd, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                  at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                  c10::optional<int64_t> divisor_override) {
  PoolArgs a = window_args(op, nd, Kind::kAvg, kernel_size, stride, padding, ceil_mode);
  a.count_include_pad = count_include_pad;
  a.divisor_override = divisor_override;
  return a;
}

// avg_pool1d (no divisor_override), both doors.
at::Tensor avg_pool1d_quantized_cpu(const at::Tensor& qx, at::IntArrayRef kernel_size,
                                    at::IntArrayRef stride, at::IntArrayRef padding,
                                    bool ceil_mode, bool count_include_pad) {
  return pool_impl("avg_pool1d", 1, qx,
                   avg_args("avg_pool1d", 1, kernel_size, stride, padding, ceil_mode,
                            count_include_pad, c10::nullopt));
}
at::Tensor avg_pool1d_plain(const at::Tensor& x, double xs, int64_t xz, at::IntArrayRef k,
                            at::IntArrayRef s, at::IntArrayRef p, bool cm, bool cip) {
  return pool_plain("avg_pool1d", "avg_pool1d.plain", "self", 1, {x, xs, xz},
                    avg_args("avg_pool1d.plain", 1, k, s, p, cm, cip, c10::nullopt));
}

// avg_pool2d / avg_pool3d, both doors (as QPLUGIN_MAX_POOL_OP). PyTorch's QuantizedCPU avg_pool3d
// returns channels_last_3d for any input layout (CL3D).
#define QPLUGIN_AVG_POOL_OP(NAME, RANK, CL3D)                                                   \
  at::Tensor NAME##_quantized_cpu(const at::Tensor& qx, at::IntArrayRef kernel_size,            \
                                  at::IntArrayRef stride, at::IntArrayRef padding,              \
                                  bool ceil_mode, bool count_include_pad,                       \
                                  c10::optional<int64_t> divisor_override) {                    \
    return pool_impl(#NAME, RANK, qx,                                                           \
                     avg_args(#NAME, RANK, kernel_size, stride, padding, ceil_mode,             \
                              count_include_pad, divisor_override),                             \
                     /*force_cl3d_out=*/CL3D);                                                  \
  }                                                                                             \
  at::Tensor NAME##_plain(const at::Tensor& x, double xs, int64_t xz, at::IntArrayRef k,        \
                          at::IntArrayRef s, at::IntArrayRef p, bool cm, bool cip,              \
                          c10::optional<int64_t> dov) {                                         \
    return pool_plain(#NAME, #NAME ".plain", "self", RANK, {x, xs, xz},                         \
                      avg_args(#NAME ".plain", RANK, k, s, p, cm, cip, dov),                    \
                      /*force_cl3d_out=*/CL3D);                                                 \
  }
QPLUGIN_AVG_POOL_OP(avg_pool2d, 2, false)
QPLUGIN_AVG_POOL_OP(avg_pool3d, 3, true)
#undef QPLUGIN_AVG_POOL_OP

PoolArgs adaptive_args(const char* op, int64_t nd, at::IntArrayRef output_size, Kind kind) {
  PoolArgs a;
  a.kind = kind;
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == nd, "qplugin::", op,
              ": expected output_size of ", nd, " ints, got ", output_size.size(), " values ",
              output_size);
  a.out_size = output_size.vec();
  return a;
}

// Each adaptive op's two doors: NAME_quantized_cpu (quantized input) and NAME_plain (plain codes,
// the PT2 door; the same core).
#define QPLUGIN_ADAPTIVE_OP(NAME, RANK, KIND)                                                   \
  at::Tensor NAME##_quantized_cpu(const at::Tensor& qx, at::IntArrayRef output_size) {         \
    return pool_impl(#NAME, RANK, qx, adaptive_args(#NAME, RANK, output_size, KIND));          \
  }                                                                                             \
  at::Tensor NAME##_plain(const at::Tensor& x, double xs, int64_t xz, at::IntArrayRef os) {    \
    return pool_plain(#NAME, #NAME ".plain", "self", RANK, {x, xs, xz},                        \
                      adaptive_args(#NAME ".plain", RANK, os, KIND));                          \
  }
QPLUGIN_ADAPTIVE_OP(adaptive_avg_pool1d, 1, Kind::kAdaptiveAvg)
QPLUGIN_ADAPTIVE_OP(adaptive_avg_pool2d, 2, Kind::kAdaptiveAvg)
QPLUGIN_ADAPTIVE_OP(adaptive_avg_pool3d, 3, Kind::kAdaptiveAvg)
QPLUGIN_ADAPTIVE_OP(adaptive_max_pool2d, 2, Kind::kAdaptiveMax)
#undef QPLUGIN_ADAPTIVE_OP

}  // namespace
}  // namespace ops
}  // namespace qplugin

// Each op and its `.plain` overload (PT2 door), registered for QuantizedCPU and CPU: on a float
// tensor the op itself raises a clear "expected a quantized tensor" instead of the dispatcher's
// "could not run ... CPU backend", and a quantized tensor passed to a `.plain` overload gets
// QArg::plain's "expected a plain tensor of codes".
#define QPLUGIN_POOLING_OPS(X)                                                             \
  X(max_pool1d) X(max_pool2d) X(max_pool3d) X(avg_pool1d) X(avg_pool2d) X(avg_pool3d)      \
  X(adaptive_avg_pool1d) X(adaptive_avg_pool2d) X(adaptive_avg_pool3d) X(adaptive_max_pool2d)

QPLUGIN_IMPL_QUANTIZED_AND_CPU(QPLUGIN_POOLING_OPS(QPLUGIN_IMPL_WITH_PLAIN))

// Keeps this file in static links: qplugin_register_all() (csrc/register.cpp) calls it.
QPLUGIN_REGISTRATION_ANCHOR(quantized_cpu_pooling_kernel)
