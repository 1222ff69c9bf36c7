// AVX2 int8 multiply-add peak of one core (a benchmark, not a test): 12 independent accumulator
// chains of (a) VPMADDWD + VPADDD (16 MACs: qplugin's widened exact tile) and (b) VPMADDUBSW +
// VPMADDWD by ones + VPADDD (32 MACs: FBGEMM's tile and qplugin's 7-bit tile), registers only.
// CPU time of the calling thread, so other processes on a shared machine do not count.
//
//   g++ -O2 -mavx2 tools/bench/int8_peak_avx2.cpp -o /tmp/int8_peak && /tmp/int8_peak
#include <immintrin.h>
#include <time.h>

#include <cstdio>

static double now() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

template <bool UBSW>
double gmacs(long iters) {
  __m256i a = _mm256_set1_epi16(3), b = _mm256_set1_epi16(5), ones = _mm256_set1_epi16(1);
  __m256i c[12];
  for (int i = 0; i < 12; i++) c[i] = _mm256_set1_epi32(i);
  const double t0 = now();
  for (long it = 0; it < iters; it++) {
#define S(i)                                                                                   \
  {                                                                                            \
    __m256i t;                                                                                 \
    if (UBSW)                                                                                  \
      asm volatile("vpmaddubsw %[b],%[a],%[t]\n\tvpmaddwd %[o],%[t],%[t]\n\tvpaddd %[t],%[c],%[c]" \
                   : [c] "+x"(c[i]), [t] "=&x"(t) : [a] "x"(a), [b] "x"(b), [o] "x"(ones));   \
    else                                                                                       \
      asm volatile("vpmaddwd %[b],%[a],%[t]\n\tvpaddd %[t],%[c],%[c]"                         \
                   : [c] "+x"(c[i]), [t] "=&x"(t) : [a] "x"(a), [b] "x"(b));                  \
  }
    S(0) S(1) S(2) S(3) S(4) S(5) S(6) S(7) S(8) S(9) S(10) S(11)
#undef S
  }
  const double s = now() - t0;
  volatile int sink = _mm256_extract_epi32(c[0], 0) + _mm256_extract_epi32(c[11], 0);
  (void)sink;
  return double(iters) * 12 * (UBSW ? 32 : 16) / s / 1e9;
}

int main() {
  const long n = 100000000;
  double wd = 0, ub = 0;
  for (int r = 0; r < 3; r++) {  // best of 3
    const double x = gmacs<false>(n), y = gmacs<true>(n);
    wd = x > wd ? x : wd;
    ub = y > ub ? y : ub;
  }
  std::printf("VPMADDWD + VPADDD (exact for all u8 x s8):      %.1f GMAC/s = %.0f GOPS\n", wd,
              2 * wd);
  std::printf("VPMADDUBSW + VPMADDWD(1) + VPADDD (7-bit A):    %.1f GMAC/s = %.0f GOPS\n", ub,
              2 * ub);
}
