// Kernel tables and runtime ISA choice. Torch-free: raw pointers, sizes and qparams only.
// The ISA choice of every kernel family goes through for_isa / table_of_current_isa below.
// Changes with: dispatch.cpp (table filling), kernels/*/*_<isa>.cpp (the kernels), setup.py (flags).
#pragma once
#include <cstdint>

namespace qplugin {
namespace kernels {

enum class Isa : int { kScalar = 0, kAvx2 = 1, kAvx512Vnni = 2 };

const char* isa_name(Isa isa);
// Parses "scalar" | "avx2" | "avx512vnni"; returns false for anything else.
bool parse_isa(const char* s, Isa* out);

// Per-channel affine requantization, the batch-norm core:
//   y = out_zp + nearbyint(clamp(fma(alpha[c], x - in_zp, beta[c]), lo, hi))
// lo/hi are bounds relative to out_zp (qmin - out_zp, or max(0, ...) with ReLU fused), so the
// clamp commutes with rounding and every ISA gives identical bytes (round half to even).
// A channel's affine map in fixed point, where it equals the float one on every code (the op
// checks that on all 256 codes with TypedKernels::fixed_plane before it sets one): with x the
// code's value (u8, or s8), u = x << k as s16, y = (u * m + b) >> 16 (s32 arithmetic, the high
// half taken as s16), then saturated to T and clamped to [lo, hi] + out_zp as bytes. ok = 0:
// the channel keeps the float form.
struct FixedAffine {
  int32_t m;  // |m| <= 32767
  int32_t b;
  int32_t k;  // 0..7
  int32_t ok;
};

struct AffineParams {
  const float* alpha;  // [C]
  const float* beta;   // [C]
  int32_t in_zp;
  int32_t out_zp;
  float lo;
  float hi;
  // Set by the op when alpha and beta are finite and every |fma(alpha[c], x - in_zp, beta[c])|
  // is below 2^30: kernels may then round first and clamp in the integer domain (saturating
  // packs), which gives the same bytes.
  bool bounded = false;
  // [C] or null: channels with fixed[c].ok computed in fixed point (bounded kernels of tiers
  // with TypedKernels::fixed_plane; others ignore it, and so may every tier: same bytes).
  const FixedAffine* fixed = nullptr;
};

// A byte map computed instead of looked up (KernelTable::pw_affine8). With x the code's value (u8,
// or s8 when is_signed), v = x - c as a float (c an integer, so v is exact), p1 = fma(a1, v, b1)
// and p2 = fma(a2, v, b2):
//   kOne: r = p1;  kSelect: r = x > t ? p1 : p2;  kMax: r = max(p1, p2);  kMin: r = min(p1, p2);
//   y = clamp(nearbyint(r), lo, hi)   (round half to even; lo, hi code values)
//   kKeep: y = clamp(x > t ? x : k, lo, hi)   (no arithmetic: a threshold)
// fclamp: clamp r in float before rounding (needed when |r| may leave the int32 range; otherwise
// the conversion and saturating packs clamp exactly). Ops use a plan only after running it over
// all 256 codes and finding the op's exact table (ops/quantized_cpu/unary_lut.h), so its bytes
// are the table's whatever the float rounding.
// fixed (kOne, kSelect, kMax, kMin; tiers with pw_affine8): the pieces in fixed point instead of
// a1..b2 and c: p1 = (x << f1.k) * f1.m + f1.b and p2 = (x << f1.k) * f2.m + f2.b in int32
// (|f.m| <= 32767, |f.b| < 2^30, f1.k in 0..7: no overflow), combined as above on the int32
// values (kSelect on x > t), then y = clamp(floor(r / 2^16), lo, hi). f2.k is unused.
struct PwAffine8 {
  enum Mode : int32_t { kOne = 0, kSelect = 1, kMax = 2, kMin = 3, kKeep = 4 };
  float a1, b1, a2, b2;
  int32_t c, t, k, lo, hi;
  Mode mode;
  bool is_signed, fclamp;
  bool fixed = false;
  FixedAffine f1{0, 0, 0, 0}, f2{0, 0, 0, 0};
};

template <typename T>
struct TypedKernels {
  // x, y: [rows][C] (channels last); per-channel alpha/beta.
  void (*affine_rows)(const T* x, T* y, int64_t rows, int64_t C, const AffineParams& p);
  // x, y: n elements of one channel c (NCHW plane): alpha[c], beta[c] with c given.
  void (*affine_plane)(const T* x, T* y, int64_t n, int64_t c, const AffineParams& p);
  // One image: x [C][HW] (NCHW) -> y [HW][C] (NHWC), pixels [p0, p1) only.
  void (*affine_nchw_to_nhwc)(const T* x, T* y, int64_t C, int64_t HW, int64_t p0, int64_t p1,
                              const AffineParams& p);
  // y = min(max(x, lo), hi), n elements.
  void (*clamp)(const T* x, T* y, int64_t n, T lo, T hi);
  // n codes (a multiple of 32) by the fixed-point form f, bytes clamped to [blo, bhi] (the
  // AffineParams bounds + out_zp), or null on tiers without it.
  void (*fixed_plane)(const T* x, T* y, int64_t n, const FixedAffine& f, int32_t blo,
                      int32_t bhi) = nullptr;
};

struct KernelTable {
  Isa isa;
  // y[i] = table[x[i]] on raw 8-bit codes (u8 or the bit pattern of s8); table has 256 entries.
  void (*lut8)(const uint8_t* x, uint8_t* y, int64_t n, const uint8_t* table);
  // lut8 over `rows` rows of `width` codes: y[r * ys + i] = table[x[r * xs + i]]. The table is
  // loaded once for all rows (short rows, e.g. a channels-last cat's input pieces).
  void (*lut8_rows)(const uint8_t* x, int64_t xs, uint8_t* y, int64_t ys, int64_t width,
                    int64_t rows, const uint8_t* table);
  // One image of raw 8-bit codes: x [C][HW] -> y [HW][C] with y[p][c] = tables[c][x[c][p]],
  // pixels [p0, p1) only; tables is [C][256]. The per-channel-table form of the affine kernel,
  // used for large NCHW inputs (each table is built with the scalar affine math, so the result
  // is byte-identical to affine_nchw_to_nhwc).
  void (*lut8_nchw_to_nhwc)(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                            int64_t p1, const uint8_t* tables);
  // One image of raw 8-bit codes: x [HW][C] -> y [C][HW] with y[c][p] = table[x[p][c]] (one
  // 256-entry table), pixels [p0, p1) only. Channels-last input to a contiguous output.
  void (*lut8_nhwc_to_nchw)(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                            int64_t p1, const uint8_t* table);
  // One image of bytes: x [C][HW] -> y [HW][C] (a plain transposing copy), pixels [p0, p1) only.
  // Null when the ISA has no vector form (callers fall back to their own loop).
  void (*copy8_nchw_to_nhwc)(const uint8_t* x, uint8_t* y, int64_t C, int64_t HW, int64_t p0,
                             int64_t p1);
  // y[i] = the PwAffine8 map of x[i], n codes (x == y allowed). Null on tiers whose lut8 is at
  // least as fast (scalar: one load a byte; avx512vnni: VPERMI2B), set where a 256-entry lookup
  // costs dozens of shuffles per vector (avx2).
  void (*pw_affine8)(const uint8_t* x, uint8_t* y, int64_t n, const PwAffine8& p);
  // Whether computing an exact map beats a 256-entry lookup on this tier (avx2): ops then
  // prefer pw_affine8 and the affine kernels (AffineParams::bounded) over per-call tables.
  bool compute_over_lookup = false;
  TypedKernels<uint8_t> u8;
  TypedKernels<int8_t> s8;
};

// Highest ISA this CPU (and OS) supports.
Isa detected_isa();
// The ISA in use: detected_isa(), lowered by QPLUGIN_CPU_ISA at load.
Isa current_isa();
// The most the process may use: detected_isa() lowered by QPLUGIN_CPU_ISA (read once).
Isa ceiling_isa();
// Lowers (or restores up to ceiling_isa()) the ISA in use; returns the ISA actually set.
// For tests and benchmarks: never raises above the CPU or QPLUGIN_CPU_ISA.
Isa set_isa(Isa requested);
const KernelTable& table();
// Whether the CPU has AVX-512 VBMI (byte permutes), an option of some avx512vnni kernels.
bool cpu_has_vbmi();
// Whether 8-bit embedding rows of 64 columns take the strided form on the avx512vnni tier
// (kernels/embedding/embedding_avx512vnni.cpp kStrided): by default on every CPU but Intel's,
// where the vpmovzxbd form is faster; QPLUGIN_EMBEDDING_ROW_FORM=strided / widen at load sets it
// (tests run both; the bytes are the same).
bool embedding_strided8();
// Whether 4-bit embedding rows of 96 and 128 columns on the far (DRAM) walk reduce as they come,
// partly in memory accumulators (the avx2 tier's RegAcc), rather than in batches of 32 rows
// (BagArgs::far_regs): by default on every CPU but AMD's first Zen cores (GCC's znver1: Zen,
// Zen+), where the batched form is faster; QPLUGIN_EMBEDDING_FAR_ROWS=regs / batch at load sets
// it (tests run both; the bytes are the same).
bool embedding_far_regs();
// Whether computed byte maps (KernelTable::pw_affine8) are planned in fixed point first
// (PwAffine8::fixed; ops/quantized_cpu/unary_lut.h plan_fixed), falling back to the float pieces
// where no fixed form gives the table: by default yes; QPLUGIN_BYTE_MAP_FORM=fixed / float at
// load sets it (tests run both; the bytes are the same).
bool byte_map_fixed();
// Whether the CPU has AMX-INT8 and the OS lets this process use tile data (Linux asks for it with
// arch_prctl(ARCH_REQ_XCOMP_PERM), once, at load). An option of the avx512vnni tier, as VBMI is:
// the avx512vnni GEMM kernels hand large calls to their AMX form (kernels/gemm/qgemm_amx.h).
bool cpu_has_amx();
// Whether those kernels use AMX now: cpu_has_amx(), unless QPLUGIN_AMX=0 at load or the ISA
// ceiling (QPLUGIN_CPU_ISA) is below avx512vnni.
bool amx_enabled();
// Turns the AMX form off or back on (never on without amx ceiling); returns the state now. For
// tests and benchmarks; the results are the same bytes either way.
bool set_amx(bool on);
// isa, lowered to what this CPU supports (never above detected_isa()).
inline Isa supported_isa(Isa isa) {
  return static_cast<int>(isa) < static_cast<int>(detected_isa()) ? isa : detected_isa();
}

// The one ISA switch of every kernel family: calls the callable of `isa` and returns its result
// (a table reference). Only the chosen callable runs, so the other tiers' code (built with their
// own -m flags) is never entered. Use from non-ISA files only (kernels/dispatch.cpp).
template <class Scalar, class Avx2, class Avx512Vnni>
decltype(auto) for_isa(Isa isa, Scalar&& scalar, Avx2&& avx2, Avx512Vnni&& avx512vnni) {
  switch (isa) {
    case Isa::kAvx512Vnni: return avx512vnni();
    case Isa::kAvx2: return avx2();
    default: return scalar();
  }
}

// Declares a kernel family's per-tier tables, `const Table& fn()` in the family's scalar, avx2
// and avx512vnni namespaces (each defined in that tier's *_<isa>.cpp file), and `fn##_tiers`, the
// handle that table_for / table_of_current_isa below take. Use once, inside the family's
// namespace in its header; the family's choosing function calls one of the two templates.
#define QPLUGIN_ISA_TABLES(Table, fn)                                                         \
  namespace scalar { const Table& fn(); }                                                     \
  namespace avx2 { const Table& fn(); }                                                       \
  namespace avx512vnni { const Table& fn(); }                                                 \
  struct fn##_tiers {                                                                         \
    static const Table* scalar_table() { return &scalar::fn(); }                              \
    static const Table* avx2_table() { return &avx2::fn(); }                                  \
    static const Table* avx512vnni_table() { return &avx512vnni::fn(); }                      \
  }

// The table of `isa`, lowered to what the CPU supports, for a family declared with
// QPLUGIN_ISA_TABLES (the tier's own table function builds it once).
template <class Tiers>
const auto& table_for(Isa isa) {
  return *for_isa(supported_isa(isa), &Tiers::scalar_table, &Tiers::avx2_table,
                  &Tiers::avx512vnni_table);
}

// The table of the ISA in use (current_isa()) for a family declared with QPLUGIN_ISA_TABLES:
// each tier's table is fetched at most once, on first use, and only for the tiers this CPU has
// (a missing tier falls back to the one below). The static locals, one set per family (Tiers),
// are the family's cache.
template <class Tiers>
const auto& table_of_current_isa() {
  using TablePtr = decltype(Tiers::scalar_table());
  static const TablePtr s = Tiers::scalar_table();
  static const TablePtr a2 = detected_isa() >= Isa::kAvx2 ? Tiers::avx2_table() : s;
  static const TablePtr a512 =
      detected_isa() >= Isa::kAvx512Vnni ? Tiers::avx512vnni_table() : a2;
  return *for_isa(
      current_isa(), [] { return s; }, [] { return a2; }, [] { return a512; });
}

// Per-ISA tables of the elementwise family (KernelTable above), defined in the
// elementwise/elementwise_<isa>.cpp files.
QPLUGIN_ISA_TABLES(KernelTable, make_table);

}  // namespace kernels
}  // namespace qplugin
