// AMX-INT8 multiply-add rate of one core (a benchmark, not a test): TDPBUSD (16 x 16 x K u8 x s8
// into s32) on four accumulator tiles, (a) registers only, with K = 64, 32 and 16 bytes a step,
// (b) with two A and two B tile loads from L1 per four TDPBUSD (the 2 x 2 block of
// kernels/gemm/qgemm_u8s8_32x32c4_amx.cpp). Needs Linux's permission for tile data
// (arch_prctl ARCH_REQ_XCOMP_PERM), asked for here as qplugin does at load.
//   g++ -O2 -mamx-tile -mamx-int8 tools/bench/amx_peak.cpp -o /tmp/amx_peak && /tmp/amx_peak
// Intel Xeon with AMX (2026-12-06): 4.8 ns a TDPBUSD whatever K: 3.3 TMAC/s at K = 64 (1.7 at 32),
// 2.7-2.8 TMAC/s with the loads.
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <initializer_list>

namespace {

struct alignas(64) TileConfig {
  uint8_t palette_id, start_row, reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

void configure(int ka) {
  static TileConfig cfg;  // not on the stack: GCC put it in the red zone, where LDTILECFG faulted
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 4; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  for (int t = 4; t < 6; ++t) cfg.rows[t] = 16, cfg.colsb[t] = static_cast<uint16_t>(ka);
  for (int t = 6; t < 8; ++t) cfg.rows[t] = static_cast<uint8_t>(ka / 4), cfg.colsb[t] = 64;
  _tile_loadconfig(&cfg);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main() {
  if (syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) != 0) {
    std::printf("no AMX tile data permission (CPU without AMX, or an old kernel)\n");
    return 1;
  }
  alignas(64) static uint8_t buf[64 * 1024];
  for (int i = 0; i < 64 * 1024; ++i) buf[i] = static_cast<uint8_t>(i * 7);
  const long n = 10000000;
  for (int ka : {64, 32, 16}) {
    configure(ka);
    _tile_loadd(4, buf, 64);
    _tile_loadd(5, buf + 1024, 64);
    _tile_loadd(6, buf + 2048, 64);
    _tile_loadd(7, buf + 4096, 64);
    _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < n; ++i) {
      _tile_dpbusd(0, 4, 6);
      _tile_dpbusd(1, 4, 7);
      _tile_dpbusd(2, 5, 6);
      _tile_dpbusd(3, 5, 7);
    }
    const double s = seconds_since(t0);
    std::printf("registers, K = %2d a step: %.2f ns a TDPBUSD, %.0f GMAC/s\n", ka, s / (4.0 * n) * 1e9,
                4.0 * n * 16 * 16 * ka / s / 1e9);
  }
  configure(64);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  const auto t0 = std::chrono::steady_clock::now();
  for (long i = 0; i < n / 4; ++i) {
    const uint8_t* a = buf + (i & 7) * 2048;
    const uint8_t* b = buf + 16384 + (i & 7) * 2048;
    _tile_loadd(4, a, 64);
    _tile_loadd(6, b, 64);
    _tile_loadd(7, b + 1024, 64);
    _tile_dpbusd(0, 4, 6);
    _tile_dpbusd(1, 4, 7);
    _tile_loadd(5, a + 1024, 64);
    _tile_dpbusd(2, 5, 6);
    _tile_dpbusd(3, 5, 7);
  }
  const double s = seconds_since(t0);
  std::printf("2 x 2 block, tile loads from L1: %.0f GMAC/s\n", 4.0 * (n / 4) * 16384 / s / 1e9);
  _tile_release();
  return 0;
}
