// AMX: does the vector epilogue overlap with TDPBUSD? (a benchmark, not a test). Blocks of the
// AMX kernel's shape (kernels/gemm/qgemm_u8s8_32x32c4_amx.cpp: 2 x 2 tiles, T K steps of 64
// bytes, A and B tiles loaded from L1, four tile stores, the 32-column epilogue of the block before
// spread over the K steps), timed with parts switched on and off:
//   0 TDPBUSD only; 1 + tile loads; 2 + tile stores; 3 + epilogue (the kernel's loop);
//   4 epilogue only; 5 TDPBUSD + loads + epilogue (no stores); 6 everything but the TDPBUSDs.
//   g++ -O2 -mavx512f -mavx512bw -mavx512vl -mavx512vbmi -mamx-tile -mamx-int8
//       tools/bench/amx_overlap.cpp -o /tmp/amx_overlap && /tmp/amx_overlap 9 && /tmp/amx_overlap 4
// Intel Xeon with AMX (2026-12-06 14:27 session), ns a block: T = 9: 176, 214, 231, 240, 92, 214,
// 169 (the epilogue hides almost entirely behind the TDPBUSDs); T = 4: 78, 102, 139, 167, 84, 139,
// 130. In the kernel itself (docs/benchmarks.md, "AMX: a 32-byte epilogue store") they add up
// instead; its tile loads cost three times these (likely L2, not L1) and its per-call work is
// large.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

struct alignas(64) TileConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};
TileConfig cfg;  // not on the stack (tools/bench/amx_peak.cpp)

void configure() {
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
}

alignas(64) uint8_t buf[64 * 1024];
alignas(64) int32_t cbuf[2][1024];
alignas(64) uint8_t outb[1 << 20];
float bias[32], mult[32];

// The kernel's 32-column epilogue (requantize, clamp, low bytes by VPERMT2B, one 32-byte store)
// on rows [i0, i1) of the int32 block c.
__attribute__((noinline)) void epi_rows(const int32_t* c, uint8_t* out, int i0, int i1) {
  const __m512 lo = _mm512_set1_ps(-10.f), hi = _mm512_set1_ps(245.f);
  const __m512i zp = _mm512_set1_epi32(10);
  const __m512 b0 = _mm512_loadu_ps(bias), b1 = _mm512_loadu_ps(bias + 16);
  const __m512 m0 = _mm512_loadu_ps(mult), m1 = _mm512_loadu_ps(mult + 16);
  const __m512i idx = _mm512_set_epi8(
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
      0, 124, 120, 116, 112, 108, 104, 100, 96, 92, 88, 84, 80, 76, 72, 68, 64, 60, 56, 52, 48, 44,
      40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0);
  for (int i = i0; i < i1; ++i) {
    __m512 f0 = _mm512_add_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + i * 32)), b0);
    __m512 f1 = _mm512_add_ps(_mm512_cvtepi32_ps(_mm512_load_si512(c + i * 32 + 16)), b1);
    f0 = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(f0, m0), lo), hi);
    f1 = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(f1, m1), lo), hi);
    const __m512i q0 = _mm512_add_epi32(_mm512_cvtps_epi32(f0), zp);
    const __m512i q1 = _mm512_add_epi32(_mm512_cvtps_epi32(f1), zp);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i * 64),
                        _mm512_castsi512_si256(_mm512_permutex2var_epi8(q0, idx, q1)));
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0) {
    std::printf("no AMX tile data permission (CPU without AMX, or an old kernel)\n");
    return 1;
  }
  for (int i = 0; i < 64 * 1024; ++i) buf[i] = static_cast<uint8_t>(i * 7);
  for (int i = 0; i < 32; ++i) bias[i] = i * 0.5f, mult[i] = 0.01f;
  configure();
  const int T = argc > 1 ? std::atoi(argv[1]) : 9;  // K steps a block
  const long NB = 200000;
  for (int variant = 0; variant < 7; ++variant) {
    const bool mm = variant != 4 && variant != 6;
    const bool ld = variant != 0 && variant != 4;
    const bool st = variant == 2 || variant == 3 || variant == 6;
    const bool ep = variant >= 3;
    _tile_loadd(4, buf, 64);
    _tile_loadd(5, buf + 1024, 64);
    _tile_loadd(6, buf + 2048, 64);
    _tile_loadd(7, buf + 4096, 64);
    const auto t0 = std::chrono::steady_clock::now();
    const int32_t* pend = cbuf[1];
    uint8_t* pout = outb;
    for (long b = 0; b < NB; ++b) {
      const int cur = static_cast<int>(b & 1);
      if (mm || st) {
        _tile_zero(0);
        _tile_zero(1);
        _tile_zero(2);
        _tile_zero(3);
      }
      const int per = (32 + T - 1) / T;
      int done = 0;
      for (int t = 0; t < T; ++t) {
        const uint8_t* a = buf + ((b * 3 + t) & 15) * 1024;
        const uint8_t* bb = buf + 16384 + (t & 15) * 2048;
        if (ld) {
          _tile_loadd(4, a, 64);
          _tile_loadd(6, bb, 128);
          _tile_loadd(7, bb + 64, 128);
        }
        if (mm) {
          _tile_dpbusd(0, 4, 6);
          _tile_dpbusd(1, 4, 7);
        }
        if (ld) _tile_loadd(5, a + 64, 64);
        if (mm) {
          _tile_dpbusd(2, 5, 6);
          _tile_dpbusd(3, 5, 7);
        }
        if (ep && done < 32) {
          const int d1 = done + per < 32 ? done + per : 32;
          epi_rows(pend, pout, done, d1);
          done = d1;
        }
      }
      if (ep && done < 32) epi_rows(pend, pout, done, 32);
      if (st) {
        _tile_stored(0, cbuf[cur], 128);
        _tile_stored(1, cbuf[cur] + 16, 128);
        _tile_stored(2, cbuf[cur] + 512, 128);
        _tile_stored(3, cbuf[cur] + 528, 128);
      }
      pend = cbuf[st ? cur : 1];
      pout = outb + (b & 255) * 2048;
    }
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("T=%d variant %d: %.1f ns a block (%.2f ns a TDPBUSD slot)\n", T, variant,
                s / NB * 1e9, s / NB / (4.0 * T) * 1e9);
  }
  _tile_release();
  return 0;
}
