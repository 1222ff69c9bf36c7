// Plans of the add/mul fast path (float constants, error bound, exactness detection), the exact
// per-pair fallback, and the table choice by ISA. Changes with: binary.h, exact.{h,cpp}.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <utility>
#include <vector>

#include "kernels/binary/binary_plan.h"
#include "kernels/binary/exact.h"

namespace qplugin {
namespace kernels {
namespace binary {
namespace {

constexpr double kU = 0x1p-24;  // unit roundoff of float (round to nearest)

// Largest |code - zp| over the 8-bit range (the integer operand of the fast path).
double max_code(bool is_signed) { return is_signed ? 128.0 : 255.0; }

// True iff the float `f` equals x*y/z exactly (i.e. f*z == x*y), all finite, z > 0.
bool float_is_exact(float f, double x, double y, double z) {
  return exact::prod_equal(static_cast<double>(f), z, x, y);
}

// Finalizes thr from the error bound eps (thr >= 0.5: the float math is exact).
float threshold(double eps, bool exact_mode) {
  if (exact_mode) return 1.0f;
  // Round the threshold down to float so the comparison can only flag more lanes.
  const double thr = 0.5 - eps;
  // Absurd ranges (eps >= 0.5): every lane goes to the exact path. The threshold must be
  // negative, not 0: a lane whose float v is integral (|v - nearbyint(v)| = 0, e.g. clamped, or
  // |v| >= 2^23) can still be several units off (found by tests/fuzz: add_relu with scales
  // 1e4 -> 0.08).
  if (thr <= 0.0) return -1.0f;
  return std::nextafter(static_cast<float>(thr), 0.0f);
}

// Whether values that are multiples of 2^g and bounded by m are all exact floats.
bool fits_float(int g, double m) { return m < std::ldexp(1.0, g + 24); }

int lsb_or(double x, int dflt) { return x != 0.0 ? exact::lsb_exponent(x) : dflt; }

// x - f as a double, for f a float approximation of the exact quotient x = n / d: the residual
// n - f*d is formed with one rounding (fma) and divided once, so it is off by <= 2^-51 relative.
double quotient_lo(double n, double d, float f) {
  return std::fma(-static_cast<double>(f), d, n) / d;
}

// The fields plan_add and plan_mul set alike: zero points, clamp bounds, the exact fallback.
Params finish(Params p, const ExactCtx& ctx, int64_t za, int64_t zb, int64_t lo, int64_t hi) {
  p.za = static_cast<int32_t>(za);
  p.zb = static_cast<int32_t>(zb);
  p.lo = static_cast<float>(lo);
  p.hi = static_cast<float>(hi);
  p.fix = &ExactCtx::fix;
  p.note = &ExactCtx::note;
  p.ctx = &ctx;
  return p;
}

}  // namespace

int64_t ExactCtx::compute(int64_t a, int64_t b) const {
  int64_t r;
  if (is_mul_) {
    const int64_t p = (a - za_) * (b - zb_);
    if (!exact::round_prod(p, sa_, sb_, so_, &r)) {
      r = exact::round_prod_wide(a - za_, b - zb_, sa_, sb_, so_);
    }
  } else {
    if (!exact::round_lin(a - za_, sa_, b - zb_, sb_, so_, &r)) {
      r = exact::round_lin_wide(a - za_, sa_, b - zb_, sb_, so_);
    }
  }
  r += zo_;
  return r < lo_ ? lo_ : (r > hi_ ? hi_ : r);
}

// Every entry of the cache and the table is a pure function of the registry key, so calls (and
// their threads) with the same key share them; cache entries are written with relaxed atomics
// (any writer stores the same value), the table once (call_once) and then only read.
struct SharedExact {
  std::unique_ptr<std::atomic<uint16_t>[]> cache;  // 65536 entries, bit 15: filled
  std::once_flag full_once;
  std::unique_ptr<uint8_t[]> full_storage;        // 65536 output bytes + 4 (gathers read dwords)
  std::atomic<const uint8_t*> full{nullptr};
  // Written before `full` is published (release), read after it is acquired.
  bool has_rational = false;
  Rational rational{};
  // ExactCtx::use_no_check's verdicts and constants (ra, rb, c), one slot per kernel (tier).
  std::mutex no_check_mu;
  const void* no_check_fn[3] = {nullptr, nullptr, nullptr};
  bool no_check[3] = {false, false, false};
  float no_check_k[3][3] = {};
  int no_check_next = 0;
};

namespace {

// Registry of SharedExact by (op, signedness, qparams, output bounds). Holds the last kSlots keys
// (3 MiB at most: a 128 KiB cache and a 64 KiB table each); older ones are dropped when their
// last call finishes.
struct CacheKey {
  bool is_mul, is_signed;
  double sa, sb, so;
  int64_t za, zb, zo, lo, hi;
  bool operator==(const CacheKey& o) const {
    return is_mul == o.is_mul && is_signed == o.is_signed && sa == o.sa && sb == o.sb &&
           so == o.so && za == o.za && zb == o.zb && zo == o.zo && lo == o.lo && hi == o.hi;
  }
};

constexpr int kSlots = 16;
std::mutex registry_mu;
CacheKey registry_keys[kSlots];
std::shared_ptr<SharedExact> registry[kSlots];
int registry_next = 0;

// The entry of key; created if `create`, else nullptr when there is none.
std::shared_ptr<SharedExact> lookup(const CacheKey& key, bool create) {
  std::lock_guard<std::mutex> lock(registry_mu);
  for (int i = 0; i < kSlots; ++i) {
    if (registry[i] && registry_keys[i] == key) return registry[i];
  }
  if (!create) return nullptr;
  auto e = std::make_shared<SharedExact>();
  e->cache.reset(new std::atomic<uint16_t>[65536]);
  for (int i = 0; i < 65536; ++i) e->cache[i].store(0, std::memory_order_relaxed);
  registry_keys[registry_next] = key;
  registry[registry_next] = e;
  registry_next = (registry_next + 1) % kSlots;
  return e;
}

}  // namespace

const std::shared_ptr<SharedExact>& ExactCtx::shared() const {
  std::call_once(once_, [this] {
    shared_ = lookup(CacheKey{is_mul_, is_signed_, sa_, sb_, so_, za_, zb_, zo_, lo_, hi_}, true);
  });
  return shared_;
}

int32_t ExactCtx::cached(int32_t a, int32_t b) const {
  const auto& e = shared();
  const int key = ((a & 0xFF) << 8) | (b & 0xFF);
  const uint16_t c = e->cache[key].load(std::memory_order_relaxed);
  if (c & 0x8000u) return is_signed_ ? static_cast<int8_t>(c & 0xFF) : (c & 0xFF);
  const int64_t v = compute(a, b);
  e->cache[key].store(static_cast<uint16_t>(0x8000u | (static_cast<uint16_t>(v) & 0xFF)),
                      std::memory_order_relaxed);
  return static_cast<int32_t>(v);
}

void ExactCtx::use_table(Params* p) const {
  // Held for the call: another thread may drop the entry from the registry meanwhile.
  table_owner_ =
      lookup(CacheKey{is_mul_, is_signed_, sa_, sb_, so_, za_, zb_, zo_, lo_, hi_}, false);
  p->table = table_owner_ ? table_owner_->full.load(std::memory_order_acquire) : nullptr;
  p->rat = p->table != nullptr && table_owner_->has_rational ? &table_owner_->rational : nullptr;
}

namespace {
void ignore_note(const void*, int64_t) {}
}  // namespace

template <typename T>
bool ExactCtx::use_no_check(Kernel<T> kern, Params* p) const {
  const auto& e = shared();
  const void* fn = reinterpret_cast<const void*>(kern);
  std::lock_guard<std::mutex> lock(e->no_check_mu);
  int slot = -1;
  for (int i = 0; i < 3; ++i) {
    if (e->no_check_fn[i] == fn) slot = i;
  }
  if (slot < 0) {
    std::vector<T> a(65536), b(65536), exact(65536), fast(65536);
    for (int k = 0; k < 65536; ++k) {
      a[k] = static_cast<T>(k >> 8);
      b[k] = static_cast<T>(k & 0xFF);
    }
    Params checked = *p;
    checked.table = nullptr;
    checked.rat = nullptr;
    checked.note = &ignore_note;  // this judgement is not the call's undecided lanes
    kern(a.data(), 1, b.data(), 1, exact.data(), 65536, checked);
    // Candidates: as planned; c up to four ulps either way; ra, rb one ulp either way, each
    // also with c one ulp either way (at most 21 runs of 65536 pairs, once per qparams).
    const float inf = std::numeric_limits<float>::infinity();
    auto step = [&](float x, int n) {
      for (; n > 0; --n) x = std::nextafter(x, inf);
      for (; n < 0; ++n) x = std::nextafter(x, -inf);
      return x;
    };
    const int moves[][3] = {{0, 0, 0},  {0, 0, 1},  {0, 0, -1}, {0, 0, 2},  {0, 0, -2},
                            {0, 0, 3},  {0, 0, -3}, {0, 0, 4},  {0, 0, -4}, {1, 0, 0},
                            {-1, 0, 0}, {0, 1, 0},  {0, -1, 0}, {1, 0, 1},  {1, 0, -1},
                            {-1, 0, 1}, {-1, 0, -1}, {0, 1, 1}, {0, 1, -1}, {0, -1, 1},
                            {0, -1, -1}};
    slot = e->no_check_next;
    e->no_check_next = (slot + 1) % 3;
    e->no_check_fn[slot] = fn;
    e->no_check[slot] = false;
    for (const auto& mv : moves) {
      if (is_mul_ && mv[1] != 0) continue;  // mul has no rb
      Params unchecked = checked;
      unchecked.thr = 1.0f;
      unchecked.ra = step(checked.ra, mv[0]);
      unchecked.rb = step(checked.rb, mv[1]);
      unchecked.c = step(checked.c, mv[2]);
      kern(a.data(), 1, b.data(), 1, fast.data(), 65536, unchecked);
      if (exact == fast) {
        e->no_check[slot] = true;
        e->no_check_k[slot][0] = unchecked.ra;
        e->no_check_k[slot][1] = unchecked.rb;
        e->no_check_k[slot][2] = unchecked.c;
        break;
      }
    }
  }
  if (!e->no_check[slot]) return false;
  p->thr = 1.0f;
  p->ra = e->no_check_k[slot][0];
  p->rb = e->no_check_k[slot][1];
  p->c = e->no_check_k[slot][2];
  return true;
}

template bool ExactCtx::use_no_check<uint8_t>(Kernel<uint8_t>, Params*) const;
template bool ExactCtx::use_no_check<int8_t>(Kernel<int8_t>, Params*) const;

namespace {

// Rational's output for codes a, b (binary.h), with the vector kernels' operations in the same
// order (fma as one rounding; -ffp-contract=off keeps the rest separate).
int32_t rational_code(int32_t a, int32_t b, int64_t za, int64_t zb, const Rational& r) {
  const float P = static_cast<float>((a - za) * (b - zb));
  const float fa = static_cast<float>(a), fb = static_cast<float>(b);
  const float f = r.mode == 2 ? std::fma(fa, r.c1, std::fma(fb, r.c1b, r.c0))
                              : std::fma(P, r.c1, r.c0);
  float q = std::floor(f);
  if (f - q < r.h) {
    const bool odd = std::fmod(q + static_cast<float>(r.zpar), 2.0f) != 0.0f;
    bool below;
    if (r.mode == 2) {
      const float e = std::fma(fa, r.da, std::fma(fb, r.db, r.dc));
      below = e < 0.0f || (e == 0.0f && odd);
    } else {
      below = r.mode > 0 ? P < 0.0f : r.mode < 0 ? P > 0.0f : odd;
    }
    if (below) q -= 1.0f;
  }
  q = q < r.lo ? r.lo : (q > r.hi ? r.hi : q);
  return static_cast<int32_t>(q);
}

// The scaled form's output for codes a, b (binary.h; mul, mode +1 or -1), with the avx2
// kernel's operations: one float multiply, rounded half to even.
int32_t rational_scaled_code(int32_t a, int32_t b, int64_t za, int64_t zb, const Rational& r) {
  const float P = static_cast<float>((a - za) * (b - zb));
  const float y = static_cast<float>(r.zo) + std::nearbyint(P * r.c1s);  // below 2^20: exact
  return static_cast<int32_t>(y < r.lo ? r.lo : (y > r.hi ? r.hi : y));
}

// Continued-fraction convergents (numerator, denominator <= 4096) of x > 0.
std::vector<std::pair<int64_t, int64_t>> convergents(double x) {
  std::vector<std::pair<int64_t, int64_t>> out;
  int64_t h0 = 0, h1 = 1, k0 = 1, k1 = 0;
  for (int it = 0; it < 40; ++it) {
    const double a = std::floor(x);
    if (!(a <= 1e9)) break;
    const int64_t ai = static_cast<int64_t>(a);
    const int64_t h2 = ai * h1 + h0, k2 = ai * k1 + k0;
    if (k2 > 4096) break;
    out.emplace_back(h2, k2);
    h0 = h1; h1 = h2; k0 = k1; k1 = k2;
    const double frac = x - a;
    if (frac < 1e-12) break;
    x = 1.0 / frac;
  }
  return out;
}

// x*y/z - n/d (d > 0, z > 0) to about a double's relative precision of the difference itself:
// (x*y*d - n*z) / (z*d) with the products split exactly (fma) before the cancellation.
double residual(double x, double y, double z, int64_t n, int64_t d) {
  const double xy = x * y, xy_lo = std::fma(x, y, -xy);
  const double nz = static_cast<double>(n) * z, nz_lo = std::fma(static_cast<double>(n), z, -nz);
  const double dd = static_cast<double>(d);
  const double num = std::fma(xy, dd, -nz) + (xy_lo * dd - nz_lo);
  return num / (z * dd);
}

// A Rational for these qparams that equals `exact` (the 65536 results, table_key order) on every
// code pair, if one exists with a denominator up to 4096 (from the convergents of the ratios);
// each candidate is checked on all pairs, so the kernels' result is exact by exhaustion.
bool find_rational(bool is_mul, bool is_signed, double sa, int64_t za, double sb, int64_t zb,
                   double so, int64_t zo, int64_t lo, int64_t hi, const uint8_t* exact,
                   Rational* out) {
  if (std::abs(zo) > 4096 || std::abs(za) > 4096 || std::abs(zb) > 4096) return false;
  const int first = is_signed ? -128 : 0;
  // max |a - za|, max |b - zb| over the codes.
  const int64_t da = std::max(std::abs(first - za), std::abs(first + 255 - za));
  const int64_t db = std::max(std::abs(first - zb), std::abs(first + 255 - zb));
  auto holds_with = [&](const Rational& c, auto code) {
    for (int ka = 0; ka < 256; ++ka) {
      for (int kb = 0; kb < 256; ++kb) {
        const int32_t av = is_signed ? static_cast<int8_t>(ka) : ka;
        const int32_t bv = is_signed ? static_cast<int8_t>(kb) : kb;
        const int32_t want = is_signed ? static_cast<int8_t>(exact[table_key(av, bv)])
                                       : exact[table_key(av, bv)];
        if (code(av, bv, za, zb, c) != want) return false;
      }
    }
    return true;
  };
  auto holds = [&](const Rational& c) { return holds_with(c, rational_code); };
  Rational c{};
  c.zpar = static_cast<int32_t>(zo & 1);
  c.zo = static_cast<int32_t>(zo);
  c.lo = static_cast<float>(lo);
  c.hi = static_cast<float>(hi);
  if (is_mul) {
    const double r = sa * sb / so;
    if (!(r > 0.0) || !(r < 4096.0)) return false;
    const int64_t pmax = da * db;
    if (pmax > (int64_t(1) << 20)) return false;
    for (const auto& nd : convergents(r)) {
      const int64_t N = nd.first, Dn = nd.second;
      const double q = static_cast<double>(N) / static_cast<double>(Dn), m = 2.0 * Dn;
      const double e = residual(sa, sb, so, N, Dn);
      // |e| * |P| below 1/m; f's float spacing well below 1/m.
      const double fmax = static_cast<double>(pmax) * q + std::abs(zo) + 1;
      if (N <= 0 || std::fabs(e) * static_cast<double>(pmax) * m >= 1.0 || fmax * m >= 0x1p20) {
        continue;
      }
      c.c1 = static_cast<float>(q);
      c.c0 = static_cast<float>(static_cast<double>(zo) + 0.5 + 0.5 / m);
      c.h = static_cast<float>(1.0 / m);
      // The side of N/Dn the exact ratio lies on; when the residual is too small to tell
      // (or 0), each mode is tried.
      const int side = std::fabs(e) > 0x1p-60 * q ? (e > 0 ? 1 : -1) : 0;
      for (int mode : {side, 1, -1}) {
        if (side != 0 && mode != side) continue;
        c.mode = mode;
        if (holds(c)) {
          for (int k : {20, 21, 19, 22, 18, 23}) {
            if (mode == 0) break;
            c.c1s = static_cast<float>(q * (1.0 + mode * std::ldexp(1.0, -k)));
            c.scaled = holds_with(c, rational_scaled_code) ? 1 : 0;
            if (c.scaled) break;
          }
          *out = c;
          return true;
        }
      }
    }
    return false;
  }
  const double ra = sa / so, rb = sb / so;
  if (!(ra > 0.0 && ra < 4096.0 && rb > 0.0 && rb < 4096.0)) return false;
  const auto ca = convergents(ra), cb = convergents(rb);
  int tries = 0;
  for (const auto& x : ca) {
    for (const auto& y : cb) {
      const int64_t Dn = std::lcm(x.second, y.second);
      if (Dn > 4096) continue;
      const int64_t Na = x.first * (Dn / x.second), Nb = y.first * (Dn / y.second);
      const double m = 2.0 * static_cast<double>(Dn);
      const double ea = residual(sa, 1.0, so, Na, Dn), eb = residual(sb, 1.0, so, Nb, Dn);
      const double qa = static_cast<double>(Na) / Dn, qb = static_cast<double>(Nb) / Dn;
      const double fmax = 255.0 * (qa + qb) + std::abs(zo) + (std::abs(za) * qa + std::abs(zb) * qb) + 1;
      if ((std::fabs(ea) * da + std::fabs(eb) * db) * m >= 1.0 || fmax * m >= 0x1p20) continue;
      // x's constant: zo - za*Na/Dn - zb*Nb/Dn (an integer over Dn).
      const int64_t Nc = zo * Dn - za * Na - zb * Nb;
      c.c1 = static_cast<float>(qa);
      c.c1b = static_cast<float>(qb);
      c.c0 = static_cast<float>(static_cast<double>(Nc) / Dn + 0.5 + 0.5 / m);
      c.h = static_cast<float>(1.0 / m);
      c.da = static_cast<float>(ea);
      c.db = static_cast<float>(eb);
      c.dc = static_cast<float>(-static_cast<double>(za) * ea - static_cast<double>(zb) * eb);
      c.mode = 2;
      if (holds(c)) {
        *out = c;
        return true;
      }
      if (++tries == 4) return false;  // each check costs 65536 evaluations
    }
  }
  return false;
}

}  // namespace

void ExactCtx::after_call(int64_t n) const {
  if (n < 4096 || undecided_.load(std::memory_order_relaxed) * 64 <= n) return;
  const auto& e = shared();
  std::call_once(e->full_once, [&] {
    std::unique_ptr<uint8_t[]> t(new uint8_t[65536 + 4]());
    for (int ka = 0; ka < 256; ++ka) {
      for (int kb = 0; kb < 256; ++kb) {
        const int32_t av = is_signed_ ? static_cast<int8_t>(ka) : ka;
        const int32_t bv = is_signed_ ? static_cast<int8_t>(kb) : kb;
        t[table_key(av, bv)] = static_cast<uint8_t>(cached(av, bv));
      }
    }
    e->has_rational = find_rational(is_mul_, is_signed_, sa_, za_, sb_, zb_, so_, zo_, lo_, hi_,
                                    t.get(), &e->rational);
    e->full.store(t.get(), std::memory_order_release);
    e->full_storage = std::move(t);
  });
}

Params plan_add(const ExactCtx& ctx, bool is_signed, double sa, int64_t za, double sb, int64_t zb,
                double so, int64_t zo, int64_t lo, int64_t hi) {
  Params p{};
  const double ra = sa / so, rb = sb / so;
  p.ra = static_cast<float>(ra);
  p.rb = static_cast<float>(rb);
  const double m = max_code(is_signed);
  bool exact_mode = float_is_exact(p.ra, sa, 1.0, so) && float_is_exact(p.rb, sb, 1.0, so);
  double c;
  // zadd (binary.h): only in exact mode, where ties are real and not flagged.
  p.zadd = exact_mode ? static_cast<int32_t>(zo & 1) : 0;
  if (exact_mode) {
    // ra, rb are floats: za*ra, zb*rb and the sum are exact in double.
    c = static_cast<double>(zo - p.zadd) - static_cast<double>(za) * p.ra -
        static_cast<double>(zb) * p.rb;
    p.c = static_cast<float>(c);
    exact_mode = static_cast<double>(p.c) == c;
    if (exact_mode) {
      int g = std::numeric_limits<int>::max();
      if (p.ra != 0.0f) g = std::min(g, exact::lsb_exponent(p.ra));
      if (p.rb != 0.0f) g = std::min(g, exact::lsb_exponent(p.rb));
      if (p.c != 0.0f) g = std::min(g, exact::lsb_exponent(p.c));
      const double bound = m * std::fabs(p.ra) + m * std::fabs(p.rb) + std::fabs(p.c);
      exact_mode = g == std::numeric_limits<int>::max() || fits_float(g, bound);
    }
  }
  if (!exact_mode) {
    p.zadd = 0;
    c = static_cast<double>(zo) - static_cast<double>(za) * ra - static_cast<double>(zb) * rb;
    p.c = static_cast<float>(c);
  }
  // Error bound of v = fma(a, ra_f, fma(b, rb_f, c_f)) against the exact a*ra + b*rb + c:
  // representation errors of ra, rb, c (float rounding after a double quotient) plus one
  // rounding per fma; 1.01 and the 2^-50 terms absorb the double-precision steps.
  const double Ma = m * std::fabs(ra), Mb = m * std::fabs(rb), Mc = std::fabs(c);
  const double T = Mb * (1 + kU) + Mc * (1 + kU);
  const double V = Ma * (1 + kU) + T * (1 + kU);
  // c's double evaluation may cancel: its error is relative to its terms, not to |c|.
  const double Cterms = std::fabs(static_cast<double>(zo)) +
                        std::fabs(static_cast<double>(za) * ra) +
                        std::fabs(static_cast<double>(zb) * rb);
  const double eps =
      1.01 * ((Ma + Mb + Mc) * (kU + 0x1p-50) + Cterms * 0x1p-50 + kU * T + kU * V) + 1e-30;
  p.thr = threshold(eps, exact_mode);
  p.clamp_float = !(V * (1 + 4 * kU) < 0x1p30);
  {
    // Second level: hi sum a*ra + b*rb + c - h exact in double when every term is a multiple of
    // 2^g and the partial sums stay below 2^(g + 53).
    const int g = std::min({lsb_or(p.ra, 0), lsb_or(p.rb, 0), lsb_or(p.c, 0), -1});
    const double span = m * std::fabs(p.ra) + m * std::fabs(p.rb) + std::fabs(p.c) + V + 2;
    p.ra_lo = quotient_lo(sa, so, p.ra);
    p.rb_lo = quotient_lo(sb, so, p.rb);
    // c_exact - c_f = (zo - za*ra_f - zb*rb_f - c_f) [exact in double] - za*ra_lo - zb*rb_lo.
    const double c_hi = static_cast<double>(zo) - static_cast<double>(za) * p.ra -
                        static_cast<double>(zb) * p.rb - static_cast<double>(p.c);
    p.c_lo = c_hi - static_cast<double>(za) * p.ra_lo - static_cast<double>(zb) * p.rb_lo;
    const double L = m * std::fabs(p.ra_lo) + m * std::fabs(p.rb_lo) + std::fabs(p.c_lo) +
                     Cterms * 0x1p-50;
    p.err = 0x1p-46 * (L + 4 * eps) + 0x1p-1000;
    // The second level decides between floor(v) and floor(v) + 1: only valid when v is within
    // 0.5 of the exact value (thr > 0); otherwise fix() decides every lane.
    p.two_level = !exact_mode && p.thr > 0.0f && span < std::ldexp(1.0, g + 52) &&
                  std::fabs(c_hi) < std::ldexp(1.0, g + 52);
  }
  return finish(p, ctx, za, zb, lo, hi);
}

Params plan_mul(const ExactCtx& ctx, bool is_signed, double sa, int64_t za, double sb, int64_t zb,
                double so, int64_t zo, int64_t lo, int64_t hi) {
  Params p{};
  // r = sa*sb/so with one rounding to double (then to float); its error is in the bound.
  const double r = sa * sb / so;
  p.ra = static_cast<float>(r);
  p.rb = 0.0f;
  // Largest |(a - za) * (b - zb)|: each difference is at most 255 in magnitude.
  const double ma = std::max(std::fabs(static_cast<double>(is_signed ? -128 : 0) - za),
                             std::fabs(static_cast<double>(is_signed ? 127 : 255) - za));
  const double mb = std::max(std::fabs(static_cast<double>(is_signed ? -128 : 0) - zb),
                             std::fabs(static_cast<double>(is_signed ? 127 : 255) - zb));
  const double mp = ma * mb;  // <= 65025 < 2^24: exact as float
  bool exact_mode = float_is_exact(p.ra, sa, sb, so);
  if (exact_mode) {
    int g = 0;  // zo is an integer
    if (p.ra != 0.0f) g = std::min(g, exact::lsb_exponent(p.ra));
    exact_mode = fits_float(g, mp * std::fabs(p.ra) + std::fabs(static_cast<double>(zo)));
  }
  p.zadd = exact_mode ? static_cast<int32_t>(zo & 1) : 0;
  p.c = static_cast<float>(zo - p.zadd);
  // v = fma(p, r_f, zo): |r_f - r_exact| <= (2^-24 + 2^-52)|r|, plus one rounding of v.
  const double Mv = mp * std::fabs(r) * (1 + 2 * kU) + std::fabs(static_cast<double>(zo));
  const double eps = 1.01 * (mp * std::fabs(r) * (kU + 0x1p-50) + kU * Mv) + 1e-30;
  p.thr = threshold(eps, exact_mode);
  p.clamp_float = !(Mv * (1 + 4 * kU) < 0x1p30);
  {
    // r_exact - r_f = (sa*sb - r_f*so) / so with sa*sb split exactly into hi + lo (fma).
    const double hi_ab = sa * sb, lo_ab = std::fma(sa, sb, -hi_ab);
    p.ra_lo = (std::fma(-static_cast<double>(p.ra), so, hi_ab) + lo_ab) / so;
    p.rb_lo = 0.0;
    p.c_lo = 0.0;
    const int g = std::min(lsb_or(p.ra, 0), -1);
    const double span = mp * std::fabs(p.ra) + 2 * std::fabs(static_cast<double>(zo)) + Mv + 2;
    p.err = 0x1p-46 * (mp * std::fabs(p.ra_lo) + 4 * eps) + 0x1p-1000;
    p.two_level = !exact_mode && p.thr > 0.0f && span < std::ldexp(1.0, g + 52);  // as add
  }
  return finish(p, ctx, za, zb, lo, hi);
}

const Table& table() {
  return table_of_current_isa<make_table_tiers>();
}

}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
