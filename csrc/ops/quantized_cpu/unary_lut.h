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
#include <cmath>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <limits>

#include "common/checks.h"
#include "common/qarg.h"
#include "common/quant_utils.h"
#include "kernels/dispatch.h"
#include "ops/quantized_cpu/path_counts.h"
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

// A computed form of an 8-bit table (kernels::PwAffine8) for tiers with pw_affine8: the op's map
// in code space as at most two affine pieces, y ~ a1 (q - c) + b1 for codes above a split and
// a2 (q - c) + b2 below it (two = false: piece 1 everywhere), clamped to the table's range; keep:
// piece 1 is the code itself and piece 2 the constant code b2 (a threshold). A hint, not a
// promise: plan_affine uses it only where it reproduces the exact table on every code.
struct AffineHint {
  double a1 = 0, b1 = 0, a2 = 0, b2 = 0;
  int64_t c = 0;
  bool two = false, keep = false;
};

// Below this many codes one lookup pass costs about what planning does.
constexpr int64_t kComputeMin = 4096;

// Searches a PwAffine8 that equals `table` (256 entries indexed by the raw byte) on all 256
// codes. Each piece's coefficients are tried rounded to float and one ulp either way (a double
// coefficient rounded to float can move a code that sits next to a rounding tie of the exact map;
// a neighbour often moves it back); piece 1 is fitted to the longest run of codes from the top,
// piece 2 from the bottom, and the two runs must cover every code. The cheapest combination that
// reproduces the whole table wins: the threshold form (keep, bytes only), one piece, the max or
// the min of the pieces, else the select at the split. Every candidate is judged by running
// kernel `k` itself over the codes, so a plan found gives the table's bytes.
inline bool plan_affine_c(const kernels::KernelTable& k, const uint8_t* table, bool is_signed,
                          const AffineHint& h, kernels::PwAffine8* out) {
  using P = kernels::PwAffine8;
  if (k.pw_affine8 == nullptr || h.c < -(1 << 20) || h.c > (1 << 20)) return false;
  uint8_t codes[256], want[256], got[256];
  int lo = 255, hi = -128;
  for (int i = 0; i < 256; ++i) {  // codes in value order
    const int v = is_signed ? i - 128 : i;
    codes[i] = static_cast<uint8_t>(v);
    want[i] = table[codes[i]];
    const int w = is_signed ? static_cast<int8_t>(want[i]) : want[i];
    lo = std::min(lo, w);
    hi = std::max(hi, w);
  }
  const double vmin = (is_signed ? -128.0 : 0.0) - static_cast<double>(h.c);
  const double vmax = (is_signed ? 127.0 : 255.0) - static_cast<double>(h.c);
  const double span = std::max(std::abs(vmin), std::abs(vmax));
  auto small = [&](double a, double b) { return std::abs(a) * span + std::abs(b) < 1073741824.0; };
  P p{};
  p.c = static_cast<int32_t>(h.c);
  p.lo = lo;
  p.hi = hi;
  p.is_signed = is_signed;
  p.mode = P::kOne;
  p.fclamp = !(small(h.a1, h.b1) && (!h.two || small(h.a2, h.b2)));
  auto matches = [&](const P& q) {
    k.pw_affine8(codes, got, 256, q);
    return std::memcmp(got, want, 256) == 0;
  };
  // The longest run of codes (from the top when `top`, else from the bottom) that piece (a, b)
  // alone reproduces, over the candidates; its coefficients in *fa, *fb.
  auto best = [&](double a, double b, bool top, float* fa, float* fb) {
    constexpr double kMax = std::numeric_limits<float>::max();
    if (!(std::abs(a) < kMax) || !(std::abs(b) < kMax)) return -1;  // no float (or NaN)
    const float a0 = static_cast<float>(a), b0 = static_cast<float>(b);
    const float inf = std::numeric_limits<float>::infinity();
    const float as[3] = {a0, std::nextafter(a0, inf), std::nextafter(a0, -inf)};
    const float bs[3] = {b0, std::nextafter(b0, inf), std::nextafter(b0, -inf)};
    int best_len = -1;
    P q = p;
    for (float ca : as) {
      for (float cb : bs) {
        q.a1 = ca;
        q.b1 = cb;
        k.pw_affine8(codes, got, 256, q);
        int len = 0;
        if (top) {
          while (len < 256 && got[255 - len] == want[255 - len]) ++len;
        } else {
          while (len < 256 && got[len] == want[len]) ++len;
        }
        if (len > best_len) {
          best_len = len;
          *fa = ca;
          *fb = cb;
        }
        if (len == 256) return len;
      }
    }
    return best_len;
  };
  const int top = best(h.a1, h.b1, /*top=*/true, &p.a1, &p.b1);
  if (top < 0) return false;
  p.a2 = p.a1;
  p.b2 = p.b1;
  const int bottom = h.two ? best(h.a2, h.b2, /*top=*/false, &p.a2, &p.b2) : -1;
  // Codes [0, bottom) in value order by piece 2, the rest by piece 1 (both match between).
  const bool split = bottom > 0 && bottom < 256 && top + bottom >= 256;
  const int32_t t = is_signed ? bottom - 1 - 128 : bottom - 1;
  if (split && h.keep && h.b2 >= lo && h.b2 <= hi) {  // bytes only: the cheapest form
    P q = p;
    q.mode = P::kKeep;
    q.t = t;
    q.k = static_cast<int32_t>(h.b2);
    q.fclamp = false;
    if (matches(q)) {
      *out = q;
      return true;
    }
  }
  for (int piece = 1; piece <= 2; ++piece) {  // one piece, if either alone is the table
    if ((piece == 1 ? top : bottom) != 256) continue;
    P q = p;
    if (piece == 2) {
      q.a1 = p.a2;
      q.b1 = p.b2;
    }
    q.a2 = q.a1;
    q.b2 = q.b1;
    if (matches(q)) {
      *out = q;
      return true;
    }
  }
  if (!split) return false;
  p.t = t;
  for (P::Mode m : {P::kMax, P::kMin, P::kSelect}) {
    p.mode = m;
    if (matches(p)) {
      *out = p;
      return true;
    }
  }
  return false;
}

// A fixed-point piece's fit (plan_fixed): the run of codes it reproduces and the interval of
// intercepts b that do.
struct FixedRun {
  int len = -1;
  int32_t m = 0;
  int64_t bmin = 0, bmax = 0;
};

// The fixed-point form of the map (PwAffine8::fixed: pieces (x << k) * m + b, the result the
// high 16 bits), where the kernel has one, the hint is one or two pieces (not keep: bytes only
// is cheaper) and kernels::byte_map_fixed() allows it. k is the smallest
// shift that keeps the steeper slope's m = a * 2^(16 - k) within s16 (with room for the +-2
// below). Per piece, m that rounded, then 1 and 2 either side: codes are taken from the top
// (piece 1) or the bottom (piece 2) of the value order while one b still gives each its table
// value w, w * 2^16 <= (x << k) m + b < (w + 1) * 2^16 (the lower bound dropped where w is the
// table's least value and the upper where it is the greatest: the byte clamp gives those), in
// int64; the longest run wins (piece 1 in a split: the first m whose run meets piece 2's).
// The combinations then follow plan_affine_c's order (one piece;
// max, min, select at the split), each b taken where the other piece needs it least (max: the
// lowest b of its interval, min: the highest, else the middle), and each candidate is run
// through the kernel on all 256 codes: a plan found gives the table's bytes.
inline bool plan_fixed(const kernels::KernelTable& k, const uint8_t* table, bool is_signed,
                       const AffineHint& h, kernels::PwAffine8* out) {
  using P = kernels::PwAffine8;
  if (k.pw_affine8 == nullptr || h.keep || !kernels::byte_map_fixed()) return false;
  const double amax = std::max(std::abs(h.a1), h.two ? std::abs(h.a2) : 0.0);
  if (!(amax < 32765.0)) return false;  // NaN, infinite or too steep at any k
  int kk = 0;
  while (kk <= 7 && amax * std::ldexp(1.0, 16 - kk) > 32765.0) ++kk;
  if (kk > 7) return false;
  uint8_t codes[256], want[256], got[256];
  int32_t vals[256], wv[256];
  int lo = 255, hi = -128;
  for (int i = 0; i < 256; ++i) {  // codes in value order
    vals[i] = is_signed ? i - 128 : i;
    codes[i] = static_cast<uint8_t>(vals[i]);
    want[i] = table[codes[i]];
    wv[i] = is_signed ? static_cast<int8_t>(want[i]) : want[i];
    lo = std::min(lo, wv[i]);
    hi = std::max(hi, wv[i]);
  }
  constexpr int64_t kNone = int64_t{1} << 40;
  auto run = [&](double a, bool top, int need) {
    FixedRun best;
    const int64_t m0 = std::llround(a * std::ldexp(1.0, 16 - kk));
    for (int step = 0; step < 5; ++step) {
      const int64_t m = m0 + (step + 1) / 2 * (step % 2 == 1 ? 1 : -1);  // m0, +1, -1, +2, -2
      if (m < -32767 || m > 32767) continue;
      int64_t bmin = -kNone, bmax = kNone;
      int len = 0;
      for (; len < 256; ++len) {
        const int i = top ? 255 - len : len;
        const int64_t um = (static_cast<int64_t>(vals[i]) << kk) * m;
        const int64_t w = wv[i];
        const int64_t nmin = w == lo ? bmin : std::max(bmin, w * 65536 - um);
        const int64_t nmax = w == hi ? bmax : std::min(bmax, (w + 1) * 65536 - 1 - um);
        if (nmin > nmax) break;
        bmin = nmin;
        bmax = nmax;
      }
      if (len > best.len) {
        best.len = len;
        best.m = static_cast<int32_t>(m);
        // Unbounded ends (every code clamped) kept within |b| < 2^30 where the kernel needs b.
        best.bmin = std::max(bmin, -(int64_t{1} << 30) + 1);
        best.bmax = std::min(bmax, (int64_t{1} << 30) - 1);
      }
      if (len >= need) break;  // the first m that covers `need` codes, m0 first
    }
    return best;
  };
  auto piece = [&](const FixedRun& r, int how) {  // how: -1 lowest b, 1 highest, 0 middle
    const int64_t b = how < 0 ? r.bmin : (how > 0 ? r.bmax : r.bmin + (r.bmax - r.bmin) / 2);
    return kernels::FixedAffine{r.m, static_cast<int32_t>(b), kk, 1};
  };
  P p{};
  p.lo = lo;
  p.hi = hi;
  p.is_signed = is_signed;
  p.fixed = true;
  auto fits = [&](P::Mode m, const FixedRun& r1, const FixedRun& r2, int how1, int how2) {
    if (r1.bmin > r1.bmax || r2.bmin > r2.bmax) return false;
    p.mode = m;
    p.f1 = piece(r1, how1);
    p.f2 = piece(r2, how2);
    k.pw_affine8(codes, got, 256, p);
    if (std::memcmp(got, want, 256) != 0) return false;
    *out = p;
    return true;
  };
  const FixedRun one = run(h.a1, /*top=*/true, 256);
  if (one.len == 256 && fits(P::kOne, one, one, 0, 0)) return true;
  if (!h.two) return false;
  const FixedRun bottom = run(h.a2, /*top=*/false, 256);
  if (bottom.len == 256 && fits(P::kOne, bottom, bottom, 0, 0)) return true;
  if (bottom.len <= 0 || bottom.len >= 256 || one.len + bottom.len < 256) return false;
  // Piece 1 needs only the codes above piece 2's run: the first m that covers them (m0 when it
  // can: a slope of exactly 1 then keeps its m, the kernel's multiply-free case).
  const FixedRun top = run(h.a1, /*top=*/true, 256 - bottom.len);
  p.t = vals[bottom.len - 1];  // codes above it by piece 1
  return fits(P::kMax, top, bottom, -1, -1) || fits(P::kMin, top, bottom, 1, 1) ||
         fits(P::kSelect, top, bottom, 0, 0);
}

// plan_fixed first (its kernels are the cheaper ones), then plan_affine_c with the offset folded
// into the intercepts (c = 0: the kernel skips a subtraction; b - a c rounded to float may lose a
// tie the exact offset keeps), then as hinted.
inline bool plan_affine(const kernels::KernelTable& k, const uint8_t* table, bool is_signed,
                        const AffineHint& h, kernels::PwAffine8* out) {
  if (plan_fixed(k, table, is_signed, h, out)) return true;
  if (h.c != 0) {
    AffineHint h0 = h;
    h0.c = 0;
    h0.b1 = h.b1 - h.a1 * static_cast<double>(h.c);
    h0.b2 = h.keep ? h.b2 : h.b2 - h.a2 * static_cast<double>(h.c);
    if (plan_affine_c(k, table, is_signed, h0, out)) return true;
  }
  return plan_affine_c(k, table, is_signed, h, out);
}

// Counts an 8-bit map's path: looked up, or computed in plan's form (and in fixed point).
inline void count_map(bool computed, const kernels::PwAffine8& plan) {
  count_path(computed ? kUnaryComputed + static_cast<int>(plan.mode) : kUnaryLookup);
  if (computed && plan.fixed) count_path(kUnaryFixed);
}

struct TableCache {
  static constexpr int kSlots = 8;
  TableKey keys[kSlots];
  uint8_t tables[kSlots][256];
  // plan_affine's verdict per slot: 0 not tried, 1 found (plans[i], made with plan_fn[i]), -1 none.
  int8_t plan_state[kSlots] = {};
  kernels::PwAffine8 plans[kSlots];
  const void* plan_fn[kSlots] = {};
  int next = 0;
  // The slot holding key k (its table copied to out), or -1.
  int find(const TableKey& k, uint8_t* out) const {
    for (int i = 0; i < kSlots; ++i) {
      if (keys[i].op != nullptr && keys[i] == k) {
        std::memcpy(out, tables[i], 256);
        return i;
      }
    }
    return -1;
  }
  int put(const TableKey& k, const uint8_t* t) {
    const int i = next;
    keys[i] = k;
    std::memcpy(tables[i], t, 256);
    plan_state[i] = 0;
    next = (next + 1) % kSlots;
    return i;
  }
  // plan_affine for slot i, remembered per kernel (a tier switch plans again).
  bool plan(int i, const kernels::KernelTable& k, bool is_signed, const AffineHint& h,
            kernels::PwAffine8* out) {
    const void* fn = reinterpret_cast<const void*>(k.pw_affine8);
    if (plan_state[i] == 0 || plan_fn[i] != fn) {
      plan_state[i] = plan_affine(k, tables[i], is_signed, h, &plans[i]) ? 1 : -1;
      plan_fn[i] = fn;
    }
    *out = plans[i];
    return plan_state[i] == 1;
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
// hint: the map as affine pieces (AffineHint), computed instead of looked up where the tier
// has pw_affine8 and plan_affine confirms it on every code.
template <typename G>
at::Tensor map_codes(const char* op, const QArg& qx, double out_scale, int64_t out_zp,
                     at::MemoryFormat fmt, G g, bool inplace = false,
                     const TableKey* key = nullptr, const AffineHint* hint = nullptr) {
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
      int slot = key == nullptr ? -1 : table_cache().find(*key, table);
      if (slot < 0) {
        for (int raw = 0; raw < 256; ++raw) {
          const int64_t q = is_signed ? static_cast<int8_t>(raw) : raw;
          table[raw] = static_cast<uint8_t>(g(q) & 0xFF);
        }
        if (key != nullptr) slot = table_cache().put(*key, table);
      }
      const uint8_t* xp = reinterpret_cast<const uint8_t*>(x.data_ptr());
      uint8_t* yp = reinterpret_cast<uint8_t*>(y.data_ptr());
      const auto& k = kernels::table();
      kernels::PwAffine8 plan;
      const bool computed =
          hint != nullptr && k.pw_affine8 != nullptr && !cl_to_nchw && n >= kComputeMin &&
          (slot >= 0 ? table_cache().plan(slot, k, is_signed, *hint, &plan)
                     : plan_affine(k, table, is_signed, *hint, &plan));
      count_map(computed, plan);
      if (computed) {
        at::parallel_for(0, n, kGrain, [&](int64_t b, int64_t e) {
          k.pw_affine8(xp + b, yp + b, e - b, plan);
        });
      } else if (cl_to_nchw) {
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
                     const TableKey* key = nullptr, const AffineHint* hint = nullptr) {
  const double in_scale = qx.q_scale();
  const int64_t in_zp = qx.q_zero_point();
  const auto r = qrange(qx.scalar_type());
  return map_codes(
      op, qx, out_scale, out_zp, fmt,
      [&](int64_t q) {
        const double v = f((static_cast<double>(q) - in_zp) * in_scale);
        return quantize_exact(v, out_scale, out_zp, r.first, r.second);
      },
      inplace, key, hint);
}

// map_unary with the 8-bit table cached per thread under (op, dtype, qparams, params): `params`
// must list every value f depends on besides the qparams (e.g. {alpha}); `op` must name one f.
template <typename F>
at::Tensor map_unary_cached(const char* op, const QArg& qx, double out_scale,
                            int64_t out_zp, at::MemoryFormat fmt, F f,
                            std::initializer_list<double> params, bool inplace = false,
                            const AffineHint* hint = nullptr) {
  const TableKey key = make_key(op, qx, out_scale, out_zp, params);
  return map_unary(op, qx, out_scale, out_zp, fmt, f, inplace, &key, hint);
}

}  // namespace unary
}  // namespace ops
}  // namespace qplugin
