// Quantized add/mul microkernels (torch-free) and their plan: float fast path that is provably
// exact except on lanes near a rounding tie, which an exact fixup decides.
// Changes with: binary_impl.h (scalar reference + tails), binary_{scalar,avx2,avx512vnni}.cpp,
// binary_plan.{h,cpp}, ops/quantized_cpu/binary_kernel.cpp. Included by the ISA files: no inline
// code with std templates here (ODR across differently-flagged files).
#pragma once
#include <cstdint>

#include "kernels/dispatch.h"

namespace qplugin {
namespace kernels {
namespace binary {

// Output code of raw input codes (a, b), exact; see Plan::fix.
using FixFn = int32_t (*)(const void* ctx, int32_t a, int32_t b);

// The rational form (Params::rat), for scales whose ratios are (nearly) fractions with a small
// common denominator Dn, i.e. tie-heavy decimal scales (mul 0.05*0.05/0.1 = 1/40; add
// 0.03/0.05 = 3/5 and 0.025/0.05 = 1/2). The exact value is x + e: x = X/Dn for an integer X
// (mul: P*N/Dn + zo, P = (a - za)(b - zb); add: (a*Na + b*Nb + Nc)/Dn) and e the small rest
// (mul: P*(sa*sb/so - N/Dn); add: (a - za)*(sa/so - Na/Dn) + (b - zb)*(sb/so - Nb/Dn)). After
// adding 1/2, x has a fractional part that is a multiple of 1/m (m = 2Dn), so
//   f = fma(float(P), c1, c0)                    (mul)      c1 = float(N/Dn)
//   f = fma(float(a), c1, fma(float(b), c1b, c0)) (add)      c1, c1b = float(Na/Dn), float(Nb/Dn)
//       c0 = float(x's constant + 1/2 + 1/(2m))
//   q = floor(f)                   = floor(x + 1/2): x rounded half up
//   half = f - q < h               h = float(1/m): x is a half-integer
//   y = clamp(q - (half && below), lo, hi), where below says the exact value lies under the
//       half-integer: mul by mode (+1: P < 0; -1: P > 0; 0: q - zo odd, half to even before
//       the zero point is added, as the exact result); add (mode 2) by
//       s = fma(float(a), da, fma(float(b), db, dc)) = e in float: s < 0, or s == 0 and q - zo
//       odd
// which is the exact result when |e| < 1/m and the float errors of f stay below 1/(2m). No proof
// is needed at run time: binary_plan.cpp uses a Rational only after checking that it gives the
// exact result on all 65536 code pairs (with these same float operations), so every ISA still
// gives the exact bytes. Float and integer operations only, no table lookups.
//
// The scaled form (mul, mode +1 or -1; scaled = 1 when it also holds on all 65536 pairs, checked
// the same way): y = clamp(zo + nearbyint(float(P) * c1s), lo, hi) with c1s = N/Dn moved by a
// relative 2^-k (k = 18..23) towards the exact ratio's side. The exact value's magnitude lies
// above a tie of P*N/Dn (mode +1) or below it (mode -1); so does float(P) * c1s when the move
// outweighs the float errors, while staying under the 1/m distance of the non-ties: then
// rounding to nearest gives the exact result with one multiply (no floor, fraction test or tie
// side per lane: the avx2 kernel's 15 vector operations per 8 lanes become 8).
struct Rational {
  float c1, c1b, c0, h;
  float da, db, dc;
  float lo, hi;
  int32_t mode;
  int32_t zpar;  // zo & 1: q - zo is odd iff q + zpar is
  float c1s;     // the scaled form's factor (mul, scaled = 1)
  int32_t zo;
  int32_t scaled;
};

// Per-lane math, in float, identical in every ISA (explicit FMAs, -ffp-contract=off):
//   add: v = fma(a, ra, fma(b, rb, c))           with c = zo - za*ra - zb*rb
//   mul: v = fma(float((a - za) * (b - zb)), ra, c) with c = zo, ra = sa*sb/so
//   v = min(max(v, lo - zadd), hi - zadd); y = nearbyint(v) + zadd   (round half to even)
// |v - exact| <= eps by the plan's error bound, so rounding v gives the exact result unless v
// lies within eps of a tie: lanes with |v - nearbyint(v)| > thr (= 0.5 - eps) are recomputed
// by fix(ctx, a, b). thr >= 0.5 means every float operation is exact (no check needed).
struct Params {
  float ra, rb, c;
  int32_t za, zb;
  float lo, hi;
  // Round half to even is not invariant under odd shifts: nearbyint(x) + zo != nearbyint(x + zo)
  // at exact ties when zo is odd. With thr >= 0.5 (exact float math, ties are real) c holds
  // zo - zadd (zadd = zo & 1) and zadd is added after rounding; otherwise ties are always
  // flagged and fixed, and zadd = 0.
  int32_t zadd;
  float thr;
  // |v| may reach 2^30: clamp in float before converting (otherwise the vector kernels round
  // first and saturate, which equals clamping first for integer bounds).
  bool clamp_float;
  // Second level for the undecided lanes (AVX-512 kernel): with h = floor(v) + 0.5 the nearest
  // tie, exact - h = [a*ra + b*rb + (c - h)]_hi + [a*ra_lo + b*rb_lo + c_lo] where the hi sum
  // (float constants, as doubles) is exact in double and the lo sum (the remainders of the
  // exact constants) is off by at most err: its sign decides the lane unless |sum| <= err, when
  // fix() does. mul uses a = (a - za)*(b - zb) and no b terms. two_level false: fix() only.
  bool two_level;
  double ra_lo, rb_lo, c_lo, err;
  FixFn fix;
  const void* ctx;
  // Told, once per kernel call that had any, how many lanes the first level left undecided.
  void (*note)(const void* ctx, int64_t undecided);
  // The exact results of all 65536 code pairs, table[(a & 0xFF) << 8 | (b & 0xFF)] (raw code
  // bytes; 65536 + 4 bytes, the vector kernels gather dwords), or nullptr. Set for qparams whose
  // calls leave more than 1 lane in 64 undecided (ExactCtx::after_call; tie-heavy scales such as
  // 0.05 * 0.05 -> 0.1): every output is then looked up, which costs less than the fast path
  // plus the exact work for that many lanes.
  const uint8_t* table;
  // Set with table when the rational form holds for these qparams: the vector kernels compute
  // every lane with it instead of gathering from the table.
  const Rational* rat;
};

// The table entry of raw codes a, b.
inline int table_key(int32_t a, int32_t b) { return ((a & 0xFF) << 8) | (b & 0xFF); }

// n output elements y[i] = op(a[i * a_step], b[i * b_step]); a_step, b_step are 1 or 0 (0: the
// operand is broadcast over the run). y may alias a or b exactly (in-place).
template <typename T>
using Kernel = void (*)(const T* a, int64_t a_step, const T* b, int64_t b_step, T* y, int64_t n,
                        const Params& p);

struct Table {
  Kernel<uint8_t> add_u8, mul_u8;
  Kernel<int8_t> add_s8, mul_s8;
};

// The table of kernels::current_isa().
const Table& table();

QPLUGIN_ISA_TABLES(Table, make_table);

}  // namespace binary
}  // namespace kernels
}  // namespace qplugin
