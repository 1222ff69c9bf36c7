// Exact rounding of quotients of doubles with 128-bit integers. A finite double is odd * 2^e
// exactly, so (A*sa + B*sb)/so = N * 2^E / D with integers N (signed) and D (odd, < 2^53):
// the quotient and remainder of N * 2^E by D decide round-half-to-even without any rounding.
// Changes with: exact.h.
#include "kernels/binary/exact.h"

#include <cmath>
#include <cstdlib>

namespace qplugin {
namespace kernels {
namespace exact {
namespace {

using i128 = __int128;
using u128 = unsigned __int128;

struct Dy {
  int64_t m;  // odd (or 0), signed
  int e;
};

Dy decompose(double x) {
  if (x == 0.0) return {0, 0};
  int k;
  const double f = std::frexp(x, &k);                       // x = f * 2^k, |f| in [0.5, 1)
  int64_t m = static_cast<int64_t>(std::ldexp(f, 53));      // exact: 53-bit integer
  int e = k - 53;
  const int tz = __builtin_ctzll(static_cast<uint64_t>(m < 0 ? -m : m));
  return {m >> tz, e + tz};
}

int bits(u128 v) {
  int b = 0;
  while (v != 0) {
    ++b;
    v >>= 1;
  }
  return b;
}

u128 uabs(i128 v) { return v < 0 ? static_cast<u128>(-v) : static_cast<u128>(v); }

int64_t saturate(i128 q) {
  if (q > kHuge) return kHuge;
  if (q < -kHuge) return -kHuge;
  return static_cast<int64_t>(q);
}

// round_half_even(N * 2^E / D), D odd positive. False if an intermediate needs > 126 bits.
bool round_scaled(i128 N, int E, int64_t D, int64_t* out) {
  if (N == 0) {
    *out = 0;
    return true;
  }
  const int bn = bits(uabs(N));
  const int bd = bits(static_cast<u128>(D));
  i128 den = D;
  if (E >= 0) {
    // |X| >= 2^(bn - 1 + E - bd): beyond 2^63 it saturates whatever the remaining digits.
    if (bn - 1 + E - bd > 63) {
      *out = N > 0 ? kHuge : -kHuge;
      return true;
    }
    if (bn + E > 125) return false;
    N = N << E;
  } else {
    // |X| < 2^(bn - (bd - 1) - (-E)): below 2^-1 it rounds to 0 (strictly below one half).
    if (bn - (bd - 1) + E < -1) {
      *out = 0;
      return true;
    }
    if (bd - E > 125) return false;
    den = den << (-E);
  }
  i128 q = N / den;  // truncates toward zero
  i128 r = N % den;  // sign of N
  const u128 r2 = uabs(r) * 2;
  const u128 d = static_cast<u128>(den);
  if (r2 > d || (r2 == d && (q & 1) != 0)) q += (N > 0 ? 1 : -1);
  *out = saturate(q);
  return true;
}

}  // namespace

int lsb_exponent(double x) { return decompose(x).e; }

bool round_lin(int64_t A, double sa, int64_t B, double sb, double so, int64_t* out) {
  const Dy a = decompose(sa), b = decompose(sb), o = decompose(so);
  const bool use_a = A != 0 && a.m != 0, use_b = B != 0 && b.m != 0;
  if (!use_a && !use_b) {
    *out = 0;
    return true;
  }
  int e;
  if (use_a && use_b) {
    e = a.e < b.e ? a.e : b.e;
  } else {
    e = use_a ? a.e : b.e;
  }
  i128 N = 0;
  if (use_a) {
    const int sh = a.e - e;
    const i128 t = static_cast<i128>(A) * a.m;
    if (bits(uabs(t)) + sh > 125) return false;
    N += t << sh;
  }
  if (use_b) {
    const int sh = b.e - e;
    const i128 t = static_cast<i128>(B) * b.m;
    if (bits(uabs(t)) + sh > 125) return false;
    N += t << sh;
  }
  // so = o.m * 2^o.e with o.m odd > 0.
  return round_scaled(N, e - o.e, o.m, out);
}

bool round_prod(int64_t P, double sa, double sb, double so, int64_t* out) {
  const Dy a = decompose(sa), b = decompose(sb), o = decompose(so);
  if (P == 0 || a.m == 0 || b.m == 0) {
    *out = 0;
    return true;
  }
  const u128 mab = uabs(static_cast<i128>(a.m) * b.m);  // < 2^106
  if (bits(mab) + bits(uabs(P)) > 125) return false;
  i128 N = static_cast<i128>(mab) * P;
  if ((a.m < 0) != (b.m < 0)) N = -N;
  return round_scaled(N, a.e + b.e - o.e, o.m, out);
}

bool prod_equal(double x, double y, double z, double w) {
  const Dy dx = decompose(x), dy = decompose(y), dz = decompose(z), dw = decompose(w);
  const bool l0 = dx.m == 0 || dy.m == 0, r0 = dz.m == 0 || dw.m == 0;
  if (l0 || r0) return l0 && r0;
  // Products of odd numbers are odd: equal iff the odd parts and the exponents are equal.
  return static_cast<i128>(dx.m) * dy.m == static_cast<i128>(dz.m) * dw.m &&
         dx.e + dy.e == dz.e + dw.e;
}

int64_t round_lin_wide(int64_t A, double sa, int64_t B, double sb, double so) {
  const long double ta = static_cast<long double>(A) * sa, tb = static_cast<long double>(B) * sb;
  const long double v = (ta + tb) / so;
  if (!(std::fabs(v) < 4.0e18L)) return v > 0 ? kHuge : -kHuge;
  const long double r = std::nearbyint(v);
  // Each long double operation is off by at most 2^-64 relative; 2^-58 covers all four.
  const long double err = (std::fabs(ta) + std::fabs(tb)) / so * 0x1p-58L + std::fabs(v) * 0x1p-58L;
  if (std::fabs(std::fabs(v - r) - 0.5L) > err) return static_cast<int64_t>(r);
  int64_t q;
  if (round_lin(A, sa, B, sb, so, &q)) return q;
  return static_cast<int64_t>(r);
}

int64_t round_prod_wide(int64_t A, int64_t B, double sa, double sb, double so) {
  // A*B of two int32 differences fits 64 bits; long double holds it exactly.
  const long double p = static_cast<long double>(A) * static_cast<long double>(B);
  const long double v = p * sa * sb / so;
  if (!(std::fabs(v) < 4.0e18L)) return v > 0 ? kHuge : -kHuge;
  const long double r = std::nearbyint(v);
  const long double err = std::fabs(v) * 0x1p-58L;
  if (std::fabs(std::fabs(v - r) - 0.5L) > err) return static_cast<int64_t>(r);
  const long double pl = p;
  if (std::fabs(pl) < 9.2e18L) {
    int64_t q;
    if (round_prod(static_cast<int64_t>(pl), sa, sb, so, &q)) return q;
  }
  return static_cast<int64_t>(r);
}

int64_t round_ratio(int64_t A, double si, double so) {
  const double v = static_cast<double>(A) * (si / so);  // two roundings: <= 2^-52 |v| off
  if (!(std::fabs(v) < 0x1p61)) return v > 0 ? kHuge : -kHuge;
  const double fl = std::floor(v), fr = v - fl;  // v - floor(v) is exact
  if (std::fabs(fr - 0.5) > 0x1p-45 * (std::fabs(v) + 1.0)) {
    return static_cast<int64_t>(fr < 0.5 ? fl : fl + 1.0);
  }
  int64_t q;
  if (round_lin(A, si, 0, 0.0, so, &q)) return q;
  return round_lin_wide(A, si, 0, 0.0, so);
}

}  // namespace exact
}  // namespace kernels
}  // namespace qplugin
