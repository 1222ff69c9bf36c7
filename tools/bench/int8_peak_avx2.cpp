// int8 multiply-add peak of one core (a benchmark, not a test), registers only:
//  (a) AVX2 VPMADDWD + VPADDD (16 MACs a ymm: qplugin's widened exact tile),
//  (b) AVX2 VPMADDUBSW + VPMADDWD by ones + VPADDD (32 MACs: FBGEMM's tile, qplugin's 7-bit tile),
//  (b') the pair step (qplugin's 7-bit tile where the weights allow it, docs/notes/avx2_gemm.md):
//      two VPMADDUBSW summed by VPADDW, one VPMADDWD by ones, one VPADDD (64 MACs, 3 multiplies),
//  (f) fp32 VFMADD231PS on ymm (8 MACs): what fp32 torch's GEMMs run at, for comparison,
//  (c) on AVX512-VNNI CPUs: VPDPBUSD on ymm (32 MACs) and on zmm (64 MACs),
// each over 12 (AVX2) or 24 (VNNI) independent accumulators, the whole loop in one asm block.
// Before 2026-12-05 the chains were separate asm statements on an array, and GCC stored every
// accumulator to the stack each iteration (12 stores an iteration). On a Zen 5 the AVX2 figures
// are the same either way (VPMADDWD 121.9 vs 123.5, VPMADDUBSW 143.6 both), but a VNNI loop
// written that way measured 188 instead of 574 GMAC/s (zmm): where stores are the narrower port
// (Zen 3: one 256-bit store a cycle), the AVX2 peaks quoted before that date (docs/benchmarks.md,
// Zen 3: 82 / 41 GMAC/s) may be the store port's; re-measure them with this version.
// CPU time of the calling thread, so other processes on a shared machine do not count.
//
//   g++ -O2 tools/bench/int8_peak_avx2.cpp -o /tmp/int8_peak && /tmp/int8_peak
#include <time.h>

#include <cstdio>

static double now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

#define QP_CLOBBER_YMM                                                                     \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", \
      "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"

// ymm0 = a, ymm1 = b, ymm2 = ones (words), ymm3 = the product (renamed every time), ymm4..15 the
// 12 accumulators.
#define QP_WD(r) "vpmaddwd %%ymm1, %%ymm0, %%ymm3\n\tvpaddd %%ymm3, %%ymm" #r ", %%ymm" #r "\n\t"
#define QP_UB(r)                                                                             \
  "vpmaddubsw %%ymm1, %%ymm0, %%ymm3\n\tvpmaddwd %%ymm2, %%ymm3, %%ymm3\n\t"                   \
  "vpaddd %%ymm3, %%ymm" #r ", %%ymm" #r "\n\t"
#define QP_12(X) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11) X(12) X(13) X(14) X(15)
#define QP_INIT                                                                              \
  "vpcmpeqw %%ymm2, %%ymm2, %%ymm2\n\tvpsrlw $15, %%ymm2, %%ymm2\n\t"                          \
  "vpxor %%ymm0, %%ymm0, %%ymm0\n\tvpxor %%ymm1, %%ymm1, %%ymm1\n\t"

double avx2_wd(long iters) {
  const double t0 = now();
  asm volatile(QP_INIT "1:\n\t" QP_12(QP_WD) "dec %0\n\tjnz 1b\n\tvzeroupper"
               : "+r"(iters)::"cc", QP_CLOBBER_YMM);
  return 12.0 * 16 / (now() - t0);
}

double avx2_ub(long iters) {
  const double t0 = now();
  asm volatile(QP_INIT "1:\n\t" QP_12(QP_UB) "dec %0\n\tjnz 1b\n\tvzeroupper"
               : "+r"(iters)::"cc", QP_CLOBBER_YMM);
  return 12.0 * 32 / (now() - t0);
}

// Pair step: ymm3 and ymm1 as the two products (b = ymm1 is rewritten; its value does not matter
// for timing), 12 accumulators.
#define QP_PAIR(r)                                                                           \
  "vpmaddubsw %%ymm0, %%ymm0, %%ymm3\n\tvpmaddubsw %%ymm2, %%ymm0, %%ymm1\n\t"               \
  "vpaddw %%ymm1, %%ymm3, %%ymm3\n\tvpmaddwd %%ymm2, %%ymm3, %%ymm3\n\t"                     \
  "vpaddd %%ymm3, %%ymm" #r ", %%ymm" #r "\n\t"

double avx2_pair(long iters) {
  const double t0 = now();
  asm volatile(QP_INIT "1:\n\t" QP_12(QP_PAIR) "dec %0\n\tjnz 1b\n\tvzeroupper"
               : "+r"(iters)::"cc", QP_CLOBBER_YMM);
  return 12.0 * 64 / (now() - t0);
}

// fp32 FMA: 12 independent accumulators (FMA latency 4-5 cycles, two pipes).
#define QP_FMA(r) "vfmadd231ps %%ymm1, %%ymm0, %%ymm" #r "\n\t"
__attribute__((target("avx2,fma"))) double fma_ps(long iters) {
  const double t0 = now();
  asm volatile("vxorps %%ymm0, %%ymm0, %%ymm0\n\tvxorps %%ymm1, %%ymm1, %%ymm1\n\t"
               QP_INIT "1:\n\t" QP_12(QP_FMA) "dec %0\n\tjnz 1b\n\tvzeroupper"
               : "+r"(iters)::"cc", QP_CLOBBER_YMM);
  return 12.0 * 8 / (now() - t0);
}

// VPDPBUSD: a = ymm0/zmm0, b = 1, accumulators 2..25.
#define QP_DP(R, r) "vpdpbusd %%" R "1, %%" R "0, %%" R #r "\n\t"
#define QP_24(X, R)                                                                          \
  X(R, 2) X(R, 3) X(R, 4) X(R, 5) X(R, 6) X(R, 7) X(R, 8) X(R, 9) X(R, 10) X(R, 11) X(R, 12)  \
  X(R, 13) X(R, 14) X(R, 15) X(R, 16) X(R, 17) X(R, 18) X(R, 19) X(R, 20) X(R, 21) X(R, 22)   \
  X(R, 23) X(R, 24) X(R, 25)
#define QP_CLOBBER_ZMM                                                                        \
  QP_CLOBBER_YMM, "xmm16", "xmm17", "xmm18", "xmm19", "xmm20", "xmm21", "xmm22", "xmm23",     \
      "xmm24", "xmm25"

// One loop of 24 VPDPBUSD on register kind R ("ymm" or "zmm", W MACs each).
#define QP_VNNI_LOOP(NAME, R, W)                                                               \
  __attribute__((target("avx512f,avx512vl,avx512vnni"))) double NAME(long iters) {             \
    const double t0 = now();                                                                   \
    asm volatile("vpxord %%zmm0, %%zmm0, %%zmm0\n\tvpxord %%zmm1, %%zmm1, %%zmm1\n\t1:\n\t"     \
                 QP_24(QP_DP, R) "dec %0\n\tjnz 1b\n\tvzeroupper"                                \
                 : "+r"(iters)::"cc", QP_CLOBBER_ZMM);                                         \
    return 24.0 * W / (now() - t0);                                                            \
  }
QP_VNNI_LOOP(vnni_ymm, "ymm", 32)
QP_VNNI_LOOP(vnni_zmm, "zmm", 64)

template <class F>
double best_gmacs(F f, long iters) {
  double best = 0;
  for (int r = 0; r < 3; r++) {
    const double x = f(iters) * iters / 1e9;
    best = x > best ? x : best;
  }
  return best;
}

int main() {
  __builtin_cpu_init();
  if (!__builtin_cpu_supports("avx2")) {
    std::printf("no AVX2 on this CPU\n");
    return 0;
  }
  const long n = 50000000;
  const double wd = best_gmacs(avx2_wd, n), ub = best_gmacs(avx2_ub, n);
  std::printf("AVX2 VPMADDWD + VPADDD (exact for all u8 x s8):   %6.1f GMAC/s = %4.0f GOPS\n", wd,
              2 * wd);
  std::printf("AVX2 VPMADDUBSW + VPMADDWD(1) + VPADDD (7-bit A): %6.1f GMAC/s = %4.0f GOPS\n", ub,
              2 * ub);
  const double pr = best_gmacs(avx2_pair, n);
  std::printf("AVX2 pair step (2 VPMADDUBSW, VPADDW, VPMADDWD):  %6.1f GMAC/s = %4.0f GOPS\n", pr,
              2 * pr);
  if (__builtin_cpu_supports("fma")) {
    const double f = best_gmacs(fma_ps, n);
    std::printf("fp32 VFMADD231PS ymm (for comparison):            %6.1f GMAC/s = %4.0f GFLOPS\n",
                f, 2 * f);
  }
  if (__builtin_cpu_supports("avx512vnni") && __builtin_cpu_supports("avx512vl")) {
    const double y = best_gmacs(vnni_ymm, n), z = best_gmacs(vnni_zmm, n);
    std::printf("AVX512-VNNI VPDPBUSD ymm:                         %6.1f GMAC/s = %4.0f GOPS\n", y,
                2 * y);
    std::printf("AVX512-VNNI VPDPBUSD zmm:                         %6.1f GMAC/s = %4.0f GOPS\n", z,
                2 * z);
  }
}
