// Exact (infinitely precise) round-half-to-even of quotients of doubles, for the lanes the float
// fast paths of add/mul cannot decide and for building exact requantization tables. Torch-free.
// Changes with: exact.cpp, binary_plan.cpp (its callers).
#pragma once
#include <cstdint>

namespace qplugin {
namespace kernels {
namespace exact {

// Results are saturated to +-kHuge, far outside every quantized range, so callers just clamp.
constexpr int64_t kHuge = int64_t(1) << 62;

// *out = round_half_even((A*sa + B*sb) / so), treating the doubles as the exact dyadic rationals
// they are. sa, sb finite (B or sb may be 0); so finite, > 0. Returns false (and leaves *out
// alone) only when the integers needed exceed 128 bits (|A|,|B| >= 2^31 with the exponents of
// sa and sb more than ~40 apart); callers then fall back to long double.
bool round_lin(int64_t A, double sa, int64_t B, double sb, double so, int64_t* out);

// *out = round_half_even(P * sa * sb / so) exactly; false when |P| * mantissas exceed 128 bits
// (possible only for qint32 products).
bool round_prod(int64_t P, double sa, double sb, double so, int64_t* out);

// True iff x*y == z*w exactly (finite doubles).
bool prod_equal(double x, double y, double z, double w);

// Exponent of the least significant set bit of a finite nonzero double or float value
// (x = odd * 2^lsb_exponent(x)).
int lsb_exponent(double x);

// round_half_even((A*sa + B*sb) / so) for wide (qint32) operands: a long double estimate, made
// exact with round_lin when it lies near a tie (long double estimate if round_lin cannot).
int64_t round_lin_wide(int64_t A, double sa, int64_t B, double sb, double so);
// round_half_even(P * sa * sb / so), the same way.
int64_t round_prod_wide(int64_t A, int64_t B, double sa, double sb, double so);

// round_half_even(A * si / so), exact: a double estimate, made exact with round_lin near ties.
// A few ns; for requantization tables and per-element qint32 requantization.
int64_t round_ratio(int64_t A, double si, double so);

}  // namespace exact
}  // namespace kernels
}  // namespace qplugin
