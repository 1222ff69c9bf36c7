// AMX-INT8 GEMM kernel qgemm_u8s8_32x32c4__amx: TDPBUSD on 2 x 2 tiles of 16 rows x 16 columns
// (a 32 x 32 int32 block per pass over K), A staged into 64-byte K steps, B read in place from the
// avx512vnni packing. Must equal the scalar kernel byte for byte (qgemm.h; qgemm_amx.h).
// Changes with: qgemm_amx.h, qgemm_u8s8_6x64c4_avx512vnni.cpp (same packing and epilogue).
#define QPLUGIN_ISA_NS amx
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "kernels/gemm/qgemm_amx.h"
#include "kernels/gemm/qgemm_generic.h"

namespace qplugin {
namespace kernels {
namespace gemm {
namespace amx {
namespace {

constexpr int64_t kNR = 64;  // avx512vnni panel width
constexpr int64_t kKR = 4;
// Packed B columns per pass over the row tiles: the chunk (Kp x nc bytes) stays in L2.
constexpr int64_t kBChunkBytes = 768 * 1024;
// Rows of A staged at once by gemm(): up to this many bytes (L2-resident while the chunks pass).
constexpr int64_t kStageBytes = 512 * 1024;
constexpr int64_t kMaxStageRows = 512;

// Tiles: 0..3 accumulators C[r][c] = tile 2r + c (16 x 16 int32); 4, 5 the two A row tiles
// (16 rows x ka bytes); 6, 7 the two B column tiles (ka / 4 k-groups x 16 columns x 4 bytes).
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Loads the tile shapes of a K step of ka bytes (64, or Kp when the whole K is shorter).
void configure(int ka) {
  TileConfig cfg;
  std::memset(&cfg, 0, sizeof cfg);
  cfg.palette_id = 1;
  for (int t = 0; t < 4; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = 64;
  }
  for (int t = 4; t < 6; ++t) {
    cfg.rows[t] = 16;
    cfg.colsb[t] = static_cast<uint16_t>(ka);
  }
  for (int t = 6; t < 8; ++t) {
    cfg.rows[t] = static_cast<uint8_t>(ka / 4);
    cfg.colsb[t] = 64;
  }
  _tile_loadconfig(&cfg);
}

// A 64-byte aligned scratch buffer per thread, grown on demand (the staged A rows).
uint8_t* scratch(int64_t bytes) {
  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  thread_local std::unique_ptr<uint8_t, Free> buf;
  thread_local int64_t cap = 0;
  if (bytes > cap) {
    const int64_t want = (bytes + 4095) / 4096 * 4096;
    buf.reset(static_cast<uint8_t*>(std::aligned_alloc(64, static_cast<size_t>(want))));
    if (!buf) std::abort();
    cap = want;
  }
  return buf.get();
}

// dst[0, len) = src[0, len) (no byte read past src + len).
inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t len) {
  int64_t i = 0;
  for (; i + 64 <= len; i += 64) _mm512_storeu_si512(dst + i, _mm512_loadu_si512(src + i));
  if (i < len) {
    const __mmask64 mk = (~0ULL) >> (64 - (len - i));
    _mm512_mask_storeu_epi8(dst + i, mk, _mm512_maskz_loadu_epi8(mk, src + i));
  }
}

// The K geometry of a call. Steps of ka bytes: ka = Kp when Kp <= 64 (one step), else 64 with
// S = ceil(Kp / 64) steps, the last one the window [Kp - 64, Kp) (so B is never read past its
// last k-group: packed B has only kPackSlack bytes after the last panel). A staged row holds
// K positions [0, 64 (S - 1)) in place, then that last window with its first sh = 64 S - Kp bytes
// zeroed (positions the step before already counted). Rows are Ks = 64 S bytes.
struct KSteps {
  int64_t S, Ks, sh, last_kg;
  int ka;
  explicit KSteps(int64_t Kp) {
    if (Kp <= 64) {
      S = 1, Ks = 64, sh = 0, last_kg = 0, ka = static_cast<int>(Kp);
    } else {
      S = (Kp + 63) / 64, Ks = 64 * S, sh = Ks - Kp, last_kg = (Kp - 64) / kKR, ka = 64;
    }
  }
  // A staged row holding K positions [0, Kp) in place (zeros to Ks) -> the step layout above.
  void finish_row(uint8_t* row) const {
    if (sh == 0) return;
    uint8_t* w = row + Ks - 64;
    const __mmask64 keep = (~0ULL) << sh;
    _mm512_storeu_si512(w, _mm512_maskz_loadu_epi8(keep, w - sh));
  }
};

// Accumulates one 32 x 32 block (R2: second row tile, C2: second column tile) over the K steps
// into tiles 0..3: A staged rows at `a` (row stride as), B columns at `b` (k-group stride bs).
template <bool R2, bool C2>
void block(const uint8_t* a, int64_t as, const int8_t* b, int64_t bs, const KSteps& ks) {
  _tile_zero(0);
  if (C2) _tile_zero(1);
  if (R2) {
    _tile_zero(2);
    if (C2) _tile_zero(3);
  }
  for (int64_t s = 0; s < ks.S; ++s) {
    const int8_t* bk = b + (s + 1 < ks.S ? 16 * s : ks.last_kg) * bs;
    _tile_loadd(4, a + s * 64, as);
    _tile_loadd(6, bk, bs);
    if (C2) _tile_loadd(7, bk + 64, bs);
    _tile_dpbusd(0, 4, 6);
    if (C2) _tile_dpbusd(1, 4, 7);
    if (R2) {
      _tile_loadd(5, a + 16 * as + s * 64, as);
      _tile_dpbusd(2, 5, 6);
      if (C2) _tile_dpbusd(3, 5, 7);
    }
  }
}

// Stores tiles 0..3 to cbuf[32][32] (int32).
template <bool R2, bool C2>
void store(int32_t* cbuf) {
  _tile_stored(0, cbuf, 128);
  if (C2) _tile_stored(1, cbuf + 16, 128);
  if (R2) {
    _tile_stored(2, cbuf + 16 * 32, 128);
    if (C2) _tile_stored(3, cbuf + 16 * 32 + 16, 128);
  }
}

using BlockFn = void (*)(const uint8_t*, int64_t, const int8_t*, int64_t, const KSteps&);
using StoreFn = void (*)(int32_t*);
constexpr BlockFn kBlocks[2][2] = {{&block<false, false>, &block<false, true>},
                                   {&block<true, false>, &block<true, true>}};
constexpr StoreFn kStores[2][2] = {{&store<false, false>, &store<false, true>},
                                   {&store<true, false>, &store<true, true>}};

// The epilogue of qgemm.h on rows [0, nrows) x columns [n, n + ncols) (ncols <= 32) of cbuf:
// the same operations, in the same order, as the avx512vnni tile's (byte-identical results).
// Row i is stored at out[i]; its row sum (when e.row_sums is set) is rs[i].
void epilogue(const int32_t* cbuf, int64_t nrows, int64_t n, int64_t ncols, const QGemmEpilogue& e,
              uint8_t* const* out, const int32_t* rs) {
  const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
  const __m512i out_zp = _mm512_set1_epi32(e.out_zp);
  const bool has_rs = e.row_sums != nullptr;
  const bool i32 = e.out_i32 != 0;
  const bool f32 = !i32 && e.out_f32 != 0, f32_relu = e.f32_relu != 0;
  for (int64_t j = 0; j < ncols; j += 16) {
    const int64_t w = ncols - j < 16 ? ncols - j : 16;
    const __mmask16 mk = static_cast<__mmask16>(w >= 16 ? 0xFFFFu : (1u << w) - 1u);
    const int64_t nj = n + j;
    const __m512i coff = _mm512_maskz_loadu_epi32(mk, e.col_offsets + nj);
    const __m512 bq = i32 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, e.bias_q + nj);
    const __m512 mult = i32 ? _mm512_setzero_ps() : _mm512_maskz_loadu_ps(mk, e.mult + nj);
    __m512i zw = _mm512_setzero_si512();
    if (has_rs) {
      zw = e.w_zp != nullptr ? _mm512_maskz_loadu_epi32(mk, e.w_zp + nj)
                             : _mm512_set1_epi32(e.w_zp_scalar);
    }
    for (int64_t i = 0; i < nrows; ++i) {
      __m512i v = _mm512_sub_epi32(_mm512_load_si512(cbuf + i * 32 + j), coff);
      if (has_rs) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zw, _mm512_set1_epi32(rs[i])));
      if (i32) {
        _mm512_mask_storeu_epi32(reinterpret_cast<int32_t*>(out[i]) + nj, mk, v);
      } else if (f32) {
        __m512 f = _mm512_fmadd_ps(_mm512_cvtepi32_ps(v), mult, bq);
        if (f32_relu) f = _mm512_max_ps(_mm512_setzero_ps(), f);
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(out[i]) + nj, mk, f);
      } else {
        __m512 f = _mm512_add_ps(_mm512_cvtepi32_ps(v), bq);
        f = _mm512_mul_ps(f, mult);
        f = _mm512_max_ps(f, lo);
        f = _mm512_min_ps(f, hi);
        const __m512i q = _mm512_add_epi32(_mm512_cvtps_epi32(f), out_zp);
        _mm_mask_storeu_epi8(out[i] + nj, mk, _mm512_cvtepi32_epi8(q));
      }
    }
  }
}

// Multiplies R staged rows (abuf, stride Ks) with packed-B columns [n0, n1) and runs the
// epilogue; row i of the result goes to out[i] (row sums rs[i] when e.row_sums is set).
// Software-pipelined: a block's epilogue (vector units) runs while the next block's TDPBUSDs
// (the AMX unit) are in flight, so two int32 buffers alternate.
void run_rows(const uint8_t* abuf, const KSteps& ks, int64_t R, int64_t Kp,
              const int8_t* packed_b, int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e,
              uint8_t* const* out, const int32_t* rs) {
  alignas(64) int32_t cbuf[2][32 * 32];
  struct Done {
    int64_t r = -1, nrows = 0, n = 0, cols = 0;
  } done[2];
  int cur = 0;
  auto finish = [&](int which) {
    const Done& d = done[which];
    if (d.r < 0) return;
    epilogue(cbuf[which], d.nrows, d.n, d.cols, e, out + d.r, rs != nullptr ? rs + d.r : nullptr);
  };
  int64_t chunk = kBChunkBytes / (Kp > 0 ? Kp : 1) / kNR * kNR;
  if (chunk < kNR) chunk = kNR;
  for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n1 ? c0 + chunk : n1;
    for (int64_t r = 0; r < R; r += 32) {
      const int64_t nrows = R - r < 32 ? R - r : 32;
      const uint8_t* a = abuf + r * ks.Ks;
      for (int64_t p0 = c0; p0 < c1; p0 += kNR) {
        const int64_t width = N - p0 < kNR ? N - p0 : kNR;
        const int8_t* panel = packed_b + p0 * Kp;
        const int64_t ntile = (width + 15) / 16;
        for (int64_t j = 0; j < ntile; j += 2) {
          const bool r2 = nrows > 16, c2 = j + 1 < ntile;
          kBlocks[r2][c2](a, ks.Ks, panel + j * 64, width * kKR, ks);
          finish(cur ^ 1);  // the previous block, while this one computes
          kStores[r2][c2](cbuf[cur]);
          done[cur] = {r, nrows, p0 + 16 * j, width - 16 * j < 32 ? width - 16 * j : 32};
          done[cur ^ 1].r = -1;
          cur ^= 1;
        }
      }
    }
  }
  finish(cur ^ 1);
}

// dst[0, len) = 0.
inline void zero_bytes(uint8_t* dst, int64_t len) {
  int64_t i = 0;
  for (; i + 64 <= len; i += 64) _mm512_storeu_si512(dst + i, _mm512_setzero_si512());
  if (i < len) _mm512_mask_storeu_epi8(dst + i, (~0ULL) >> (64 - (len - i)), _mm512_setzero_si512());
}

}  // namespace

void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b, int64_t N,
          int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int64_t Kp = generic::round_up(K, kKR);
  const KSteps ks(Kp);
  int64_t MB = kStageBytes / ks.Ks / 32 * 32;
  if (MB < 32) MB = 32;
  if (MB > kMaxStageRows) MB = kMaxStageRows;
  if (MB > M) MB = M;
  uint8_t* abuf = scratch((MB + 31) / 32 * 32 * ks.Ks);
  uint8_t* out[kMaxStageRows];
  configure(ks.ka);
  for (int64_t m0 = 0; m0 < M; m0 += MB) {
    const int64_t R = M - m0 < MB ? M - m0 : MB;
    // Stage rows [m0, m0 + R): K bytes, zeros to Ks (the padded rows of the last tile too).
    for (int64_t i = 0; i < (R + 31) / 32 * 32; ++i) {
      uint8_t* dst = abuf + i * ks.Ks;
      if (i < R) {
        copy_bytes(dst, a + (m0 + i) * lda, K);
        zero_bytes(dst + K, ks.Ks - K);
        ks.finish_row(dst);
        out[i] = c + (m0 + i) * ldc;
      } else {
        zero_bytes(dst, ks.Ks);  // rows of the last tile past M: computed, never stored
      }
    }
    run_rows(abuf, ks, R, Kp, packed_b, N, n0, n1, e, out,
             e.row_sums != nullptr ? e.row_sums + m0 : nullptr);
  }
  _tile_release();
}

void igemm(const uint8_t* const* rows, const int64_t* c_rows, int64_t M, const IgemmSeg* segs,
           int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N, int64_t n0, int64_t n1,
           const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const KSteps ks(Kp);
  const int64_t MB = kMaxStageRows;
  uint8_t* abuf = scratch((MB < M ? MB : (M + 31) / 32 * 32) * ks.Ks);
  uint8_t* out[kMaxStageRows];
  // The K positions of [0, Ks) no segment names: zero in every staged row (the padding-skipping
  // conv leaves them out of the sum; [Kp, Ks) pads the last step).
  std::vector<uint8_t> named(static_cast<size_t>(ks.Ks), 0);
  for (int64_t s = 0; s < nseg; ++s)
    std::memset(named.data() + segs[s].k, 1, static_cast<size_t>(segs[s].len));
  std::vector<int64_t> gaps;  // [begin, end) pairs
  for (int64_t k = 0; k < ks.Ks;) {
    if (named[k]) { ++k; continue; }
    int64_t k1 = k;
    while (k1 < ks.Ks && !named[k1]) ++k1;
    gaps.push_back(k);
    gaps.push_back(k1);
    k = k1;
  }
  configure(ks.ka);
  for (int64_t m0 = 0; m0 < M; m0 += MB) {
    const int64_t R = M - m0 < MB ? M - m0 : MB;
    for (int64_t i = 0; i < (R + 31) / 32 * 32; ++i) {
      uint8_t* dst = abuf + i * ks.Ks;
      if (i < R) {
        const uint8_t* src = rows[m0 + i];
        for (size_t g = 0; g < gaps.size(); g += 2) zero_bytes(dst + gaps[g], gaps[g + 1] - gaps[g]);
        for (int64_t s = 0; s < nseg; ++s)
          copy_bytes(dst + segs[s].k, src + segs[s].a_off, segs[s].len);
        ks.finish_row(dst);
        out[i] = c + (c_rows != nullptr ? c_rows[m0 + i] : m0 + i) * ldc;
      } else {
        zero_bytes(dst, ks.Ks);  // rows of the last tile past M: computed, never stored
      }
    }
    run_rows(abuf, ks, R, Kp, packed_b, N, n0, n1, e, out, nullptr);
  }
  _tile_release();
}

}  // namespace amx
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
