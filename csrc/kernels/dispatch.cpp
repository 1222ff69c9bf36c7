// CPU feature detection (once, at load) and the kernel table in use of each family.
// Changes with: dispatch.h, the family headers (QPLUGIN_ISA_TABLES), ops/misc.cpp (the _cpu_isa /
// _set_cpu_isa ops).
#include "kernels/dispatch.h"

#include "kernels/conv/dwconv.h"
#include "kernels/dynamic/gemm_f16.h"
#include "kernels/dynamic/quant_act.h"
#include "kernels/embedding/embedding.h"
#include "kernels/gemm/exact_gemm.h"
#include "kernels/gemm/qgemm.h"
#include "kernels/pool/pool_dispatch.h"

#include <atomic>
#include <cstdio>
#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif
#include <cstdlib>
#include <cstring>

namespace qplugin {
namespace kernels {

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar: return "scalar";
    case Isa::kAvx2: return "avx2";
    case Isa::kAvx512Vnni: return "avx512vnni";
  }
  return "unknown";
}

bool parse_isa(const char* s, Isa* out) {
  if (std::strcmp(s, "scalar") == 0) { *out = Isa::kScalar; return true; }
  if (std::strcmp(s, "avx2") == 0) { *out = Isa::kAvx2; return true; }
  if (std::strcmp(s, "avx512vnni") == 0) { *out = Isa::kAvx512Vnni; return true; }
  return false;
}

bool cpu_has_vbmi() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

namespace {

// __builtin_cpu_is(name) for a string literal name; false off x86.
#if defined(__x86_64__) || defined(__i386__)
#define QPLUGIN_CPU_IS(name) (__builtin_cpu_init(), __builtin_cpu_is(name))
#else
#define QPLUGIN_CPU_IS(name) false
#endif

// A load-time choice between two forms of a kernel: env `name` set to `yes` or `no` decides;
// otherwise `by_default`.
bool env_or(const char* name, const char* yes, const char* no, bool by_default) {
  const char* env = std::getenv(name);
  if (env != nullptr && std::strcmp(env, yes) == 0) return true;
  if (env != nullptr && std::strcmp(env, no) == 0) return false;
  return by_default;
}

}  // namespace

bool embedding_strided8() {
  // A 64-column row is 4 shifts/masks on one load (strided) or 4 vpmovzxbd (widen). Sum of
  // 81,920 rows from a 1.44 MB table (L1 prefetch): Zen 5 ~5 vs ~8 cycles a row for strided;
  // an Intel Xeon with AMX (Sapphire Rapids class) 0.274 vs 0.240 ms for widen.
  static const bool strided =
      env_or("QPLUGIN_EMBEDDING_ROW_FORM", "strided", "widen", !QPLUGIN_CPU_IS("intel"));
  return strided;
}

bool embedding_far_regs() {
  // 81,920 rows of 128 columns from the 1M-row table (tools/bench.py): on an Intel Xeon held to
  // avx2 the register form took 1.29-1.36 ms against the batches' 1.50-1.68; on a Zen 1 EPYC
  // (znver1, 128-bit vector units) it took 4.9-5.1 ms against 3.4-3.7 (torch.ao 4.3-4.6).
  // Zen 2 and later were not measured and keep the register form.
  static const bool regs =
      env_or("QPLUGIN_EMBEDDING_FAR_ROWS", "regs", "batch", !QPLUGIN_CPU_IS("znver1"));
  return regs;
}

bool byte_map_fixed() {
  // 802,816 codes on a Zen 1 EPYC held to avx2 (1 thread): leaky_relu (the max of two pieces)
  // 0.269 ms against the float pieces' 0.314, with the input's qparams 0.166 against 0.262;
  // hardsigmoid (one piece) 0.164 against 0.209.
  static const bool fixed = env_or("QPLUGIN_BYTE_MAP_FORM", "fixed", "float", true);
  return fixed;
}

namespace {

// CPUID.(7,0):EDX bits 24 (AMX-TILE) and 25 (AMX-INT8); XCR0 bits 17, 18 (the OS saves
// XTILECFG and XTILEDATA); then Linux's per-process permission for XTILEDATA (feature 18), without
// which the first tile instruction faults. Any failure: no AMX.
bool detect_amx() {
#if defined(__x86_64__)
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || (c & (1u << 27)) == 0) return false;  // OSXSAVE
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  if ((d & (1u << 24)) == 0 || (d & (1u << 25)) == 0) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  if ((lo & (3u << 17)) != (3u << 17)) return false;
#if defined(SYS_arch_prctl)
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
#else
  return false;
#endif
}

Isa detect() {
#if defined(__x86_64__) || defined(__i386__)
  // __builtin_cpu_supports also checks that the OS saves the YMM/ZMM state (XGETBV).
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("fma")) {
    return Isa::kAvx512Vnni;
  }
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("bmi2") && __builtin_cpu_supports("f16c")) {
    return Isa::kAvx2;
  }
#endif
  return Isa::kScalar;
}

Isa initial_isa() {
  Isa best = detect();
  const char* env = std::getenv("QPLUGIN_CPU_ISA");
  if (env == nullptr || env[0] == '\0' || std::strcmp(env, "auto") == 0) return best;
  Isa want;
  if (!parse_isa(env, &want)) {
    std::fprintf(stderr,
                 "qplugin: ignoring QPLUGIN_CPU_ISA=%s: expected scalar, avx2, avx512vnni or "
                 "auto; using %s\n", env, isa_name(best));
    return best;
  }
  // The variable may only lower the choice.
  return static_cast<int>(want) < static_cast<int>(best) ? want : best;
}

std::atomic<int>& current() {
  static std::atomic<int> isa{static_cast<int>(ceiling_isa())};
  return isa;
}

}  // namespace

Isa detected_isa() {
  static const Isa isa = detect();
  return isa;
}

Isa current_isa() { return static_cast<Isa>(current().load()); }

// QPLUGIN_CPU_ISA is a ceiling for the whole process: set_isa cannot raise above it either, so a
// scalar-only run (QPLUGIN_CPU_ISA=scalar) really runs only scalar kernels.
Isa ceiling_isa() {
  static const Isa isa = initial_isa();
  return isa;
}

bool cpu_has_amx() {
  // The AMX kernel also uses VBMI (a byte permute in its epilogue), which every AMX CPU has.
  static const bool has = detected_isa() == Isa::kAvx512Vnni && cpu_has_vbmi() && detect_amx();
  return has;
}

namespace {
bool amx_ceiling() {
  static const bool on = [] {
    if (ceiling_isa() != Isa::kAvx512Vnni || !cpu_has_amx()) return false;
    const char* env = std::getenv("QPLUGIN_AMX");
    return env == nullptr || std::strcmp(env, "0") != 0;
  }();
  return on;
}
std::atomic<bool>& amx_current() {
  static std::atomic<bool> on{amx_ceiling()};
  return on;
}
}  // namespace

bool amx_enabled() { return amx_current().load(std::memory_order_relaxed); }

bool set_amx(bool on) {
  const bool v = on && amx_ceiling();
  amx_current().store(v);
  return v;
}

Isa set_isa(Isa requested) {
  Isa best = ceiling_isa();
  Isa chosen = static_cast<int>(requested) < static_cast<int>(best) ? requested : best;
  current().store(static_cast<int>(chosen));
  return chosen;
}

namespace {
// Read QPLUGIN_CPU_ISA and detect the CPU when the library is loaded, not at the first op call.
[[maybe_unused]] const bool kIsaChosenAtLoad = (current(), ceiling_isa(), amx_current(), true);
}  // namespace

// The table choice of every kernel family (declared in its header with QPLUGIN_ISA_TABLES), in
// this one non-ISA file; normalization's and binary's are in normalization_dispatch.cpp and
// binary_plan.cpp, next to the scalar helpers and plans those families share across tiers.
const KernelTable& table() { return table_of_current_isa<make_table_tiers>(); }
const EmbeddingKernelTable& embedding_table() {
  return table_of_current_isa<make_embedding_table_tiers>();
}
const PoolKernelTable& pool_table() { return table_of_current_isa<make_pool_table_tiers>(); }

namespace dynamic {
const QuantActKernels& quant_act_kernels() { return table_of_current_isa<quant_act_table_tiers>(); }
const F16GemmKernels& f16_gemm_kernels() { return table_of_current_isa<f16_gemm_table_tiers>(); }
}  // namespace dynamic

// The families a packed object binds at prepack: the table of the ISA asked for.
namespace conv {
const DwConvKernels& dwconv_kernels_for(Isa isa) { return table_for<dwconv_table_tiers>(isa); }
}  // namespace conv

namespace gemm {
const QGemmKernels& qgemm_kernels_for(Isa isa) { return table_for<qgemm_table_tiers>(isa); }
const ExactGemmKernels& exact_gemm_kernels_for(Isa isa) {
  return table_for<exact_gemm_table_tiers>(isa);
}
}  // namespace gemm

}  // namespace kernels
}  // namespace qplugin
