// AMX-INT8 GEMM kernel qgemm_u8s8_32x32c4__amx: TDPBUSD on 2 x 2 tiles of 16 rows x 16 columns
// (a 32 x 32 int32 block per pass over K), A rows read in place where they allow it and staged
// into K steps where not, B read in place from the avx512vnni packing. Must equal the scalar
// kernel byte for byte (qgemm.h; qgemm_amx.h).
// Changes with: qgemm_amx.h, qgemm_u8s8_6x64c4_avx512vnni.cpp (same packing and epilogue).
#define QPLUGIN_ISA_NS amx
#include <immintrin.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
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
// Shortest run of equally spaced conv rows read in place as a partial tile (igemm). 4 since
// 2026-12-07 (was 8; staging is what the shorter runs took): with 768 KB calls
// (driver/conv_gemm.cpp, igemm_call_bytes) a 3x3 conv on a 56-pixel plane leaves runs of 6 (54 =
// 3 x 16 + 6), and staging them cost more than the idle rows of a tile, most with the input not
// in the caches (convs of 16-64 channels run one after another in one process: 15-30% faster;
// each alone, warm: conv3d 16 -> 16 ~5%, others within the noise).
constexpr int64_t kMinRun = 4;

// Tiles: 0..3 accumulators C[r][c] = tile 2r + c (16 x 16 int32); 4, 5 the two A row tiles
// (16 rows x ka bytes); 6, 7 the two B column tiles (ka / 4 k-groups x 16 columns x 4 bytes).
// Narrow calls (at most 16 columns): accumulators 0..3 are four row tiles of one column tile, A
// tiles 4, 5, 7 (and 4 again), B tile 6.
struct alignas(64) TileConfig {
  uint8_t palette_id;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

// Loads the tile shapes of a K step of ka bytes (a multiple of 4, at most 64: Steps::ka). Narrow
// calls (one 16-column tile: narrow_block) use tile 7 as a third A tile instead of a B tile.
void configure(int ka, bool narrow) {
  // Not on the stack: a standalone copy of this function (tools/bench/amx_peak.cpp) had GCC put
  // the struct in the red zone, where LDTILECFG faulted.
  thread_local TileConfig cfg;
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
  if (narrow) {
    cfg.rows[7] = 16;
    cfg.colsb[7] = static_cast<uint16_t>(ka);
  }
  _tile_loadconfig(&cfg);
}

// Whether a call is one 16-column tile, handled by narrow_block: at most 16 columns, a whole panel
// (callers pass whole panels: [n0, n1) starts at a panel and ends at one or at N).
inline bool narrow_call(int64_t N, int64_t n0, int64_t n1) {
  return n1 - n0 <= 16 && n1 == N && n0 % kNR == 0;
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
    // Out of memory: an exception (the op reports it as PyTorch does), never an abort. Callers
    // take the buffer before LDTILECFG, so no tile state is left behind.
    if (!buf) throw std::bad_alloc();
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

// The K steps of a call: step t multiplies ka A bytes (64; Kp when K is shorter; 32 or a segment
// length for igemm, igemm_step) read at (a row tile's row pointer + off[t]) with the packed-B
// k-groups [kg[t], kg[t] + ka / 4). A row tile is read in place when its rows are equally spaced
// in memory and every step lies inside one contiguous K range of A (`direct` offsets), otherwise
// from rows staged into a buffer of Ks bytes a row (`staged` offsets).
// gemm() and igemm() keep one in a thread_local and refill it every call: no heap allocation
// once its vectors have grown (a conv makes a call per block of rows; allocating there cost 25%
// of a small 1x1 conv).
struct Steps {
  std::vector<int64_t> direct, staged, kg;
  int64_t Ks = 64;
  int64_t sh = 0;  // staged rows built in place: bytes to shift the last window by (below)
  int ka = 64;
  int64_t count() const { return static_cast<int64_t>(kg.size()); }
  void clear() {
    direct.clear();
    staged.clear();
    kg.clear();
    Ks = 64;
    sh = 0;
    ka = 64;
  }
};

// Steps over K positions [0, Kp) in order, for rows staged in place: ka = Kp when Kp <= 64 (one
// step), else 64 with S = ceil(Kp / 64) steps, the last one the window [Kp - 64, Kp) (so B is
// never read past its last k-group: packed B has only kPackSlack bytes after the last panel).
// A staged row holds K positions [0, 64 (S - 1)) in place, then that last window with its first
// sh = 64 S - Kp bytes zeroed (positions the step before counted): StagePlan.
void linear_steps(int64_t Kp, Steps& st) {
  st.clear();
  if (Kp <= 64) {
    st.ka = static_cast<int>(Kp);
    st.staged.push_back(0);
    st.direct.push_back(0);
    st.kg.push_back(0);
    return;
  }
  const int64_t S = (Kp + 63) / 64;
  st.Ks = 64 * S;
  st.sh = st.Ks - Kp;
  for (int64_t s = 0; s < S; ++s) {
    st.staged.push_back(64 * s);
    st.direct.push_back(64 * s);
    st.kg.push_back(s + 1 < S ? 16 * s : (Kp - 64) / kKR);
  }
}

// How a row is staged in the layout of linear_steps, from K ranges of A (a gemm row: one range;
// an igemm row: its segments): copies (A offset -> staged offset, length) and the staged ranges to
// zero. Position k < 64 (S - 1) stays at k; k >= 64 (S - 1) moves by sh into the last window; the
// window's first sh bytes, K positions no range names and [K, Kp) are zeros. Written in one pass
// (no read-back of the row: a load over the masked stores just made waits for them to retire,
// measured as 40% of the staging).
struct StagePlan {
  std::vector<int64_t> src, dst, len;  // copies
  std::vector<int64_t> zdst, zlen;     // zeros

  std::vector<uint8_t> named;

  // Refills the plan (a thread_local, like Steps).
  void build(const Steps& st, const IgemmSeg* segs, int64_t nseg) {
    src.clear(), dst.clear(), len.clear(), zdst.clear(), zlen.clear();
    const int64_t B = st.sh == 0 ? st.Ks : st.Ks - 64;
    named.assign(static_cast<size_t>(st.Ks), 0);
    auto add = [&](int64_t a, int64_t d, int64_t n) {
      if (n <= 0) return;
      src.push_back(a);
      dst.push_back(d);
      len.push_back(n);
      std::memset(named.data() + d, 1, static_cast<size_t>(n));
    };
    for (int64_t s = 0; s < nseg; ++s) {
      const int64_t k0 = segs[s].k, k1 = segs[s].k + segs[s].len;
      const int64_t mid = k1 < B ? k1 : (k0 > B ? k0 : B);
      add(segs[s].a_off, k0, mid - k0);                         // below the last window
      add(segs[s].a_off + (mid - k0), mid + st.sh, k1 - mid);  // in it
    }
    for (int64_t k = 0; k < st.Ks;) {
      int64_t k1 = k;
      while (k1 < st.Ks && named[k1] == named[k]) ++k1;
      if (!named[k]) {
        zdst.push_back(k);
        zlen.push_back(k1 - k);
      }
      k = k1;
    }
  }
  void stage(uint8_t* row, const uint8_t* a) const;
};

// 16 rows of A: row r at base + r * stride; step t reads base + off[t] (+ r * stride).
struct ATile {
  const uint8_t* base;
  int64_t stride;
  const int64_t* off;
};

// The epilogue of qgemm.h on columns [n, n + ncols) (ncols <= 32) of cbuf[32][32]: the same
// operations, in the same order, as the avx512vnni tile's (byte-identical results). Row i is
// stored at out[i]; its row sum (when e.row_sums is set) is rs[i]. rows(i0, i1) does rows
// [i0, i1), so that block() can spread a block's epilogue over the next block's K steps.
struct Epi {
  const int32_t* cbuf;
  int64_t nrows, n, ncols;
  const QGemmEpilogue* ep;
  uint8_t* const* out;
  const int32_t* rs;

  void rows(int64_t i0, int64_t i1) const {
    const QGemmEpilogue& e = *ep;
    const __m512 lo = _mm512_set1_ps(e.lo), hi = _mm512_set1_ps(e.hi);
    const __m512i out_zp = _mm512_set1_epi32(e.out_zp);
    const bool has_rs = e.row_sums != nullptr;
    const bool i32 = e.out_i32 != 0;
    const bool f32 = !i32 && e.out_f32 != 0, f32_relu = e.f32_relu != 0;
    if (ncols == 32 && !i32 && !f32) {
      // Both halves of a row at once, its 32 bytes in one store: the low byte of each lane of
      // q0 and q1 (what vpmovdb keeps) by one VPERMT2B, instead of two VPMOVDB stores (measured
      // 3-8% faster on 3x3 and 1x1 convs: docs/benchmarks.md, "AMX: a 32-byte epilogue store").
      const __m512i coff0 = _mm512_loadu_si512(e.col_offsets + n);
      const __m512i coff1 = _mm512_loadu_si512(e.col_offsets + n + 16);
      const __m512 bq0 = _mm512_loadu_ps(e.bias_q + n), bq1 = _mm512_loadu_ps(e.bias_q + n + 16);
      const __m512 mu0 = _mm512_loadu_ps(e.mult + n), mu1 = _mm512_loadu_ps(e.mult + n + 16);
      __m512i zw0 = _mm512_setzero_si512(), zw1 = _mm512_setzero_si512();
      if (has_rs) {
        zw0 = e.w_zp != nullptr ? _mm512_loadu_si512(e.w_zp + n)
                                : _mm512_set1_epi32(e.w_zp_scalar);
        zw1 = e.w_zp != nullptr ? _mm512_loadu_si512(e.w_zp + n + 16) : zw0;
      }
      const __m512i low_bytes = _mm512_set_epi8(
          0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
          0, 0, 124, 120, 116, 112, 108, 104, 100, 96, 92, 88, 84, 80, 76, 72, 68, 64, 60, 56, 52,
          48, 44, 40, 36, 32, 28, 24, 20, 16, 12, 8, 4, 0);
      auto quant = [&](__m512i v, __m512i coff, __m512i zw, __m512 bq, __m512 mu, int64_t i) {
        v = _mm512_sub_epi32(v, coff);
        if (has_rs) v = _mm512_sub_epi32(v, _mm512_mullo_epi32(zw, _mm512_set1_epi32(rs[i])));
        __m512 f = _mm512_add_ps(_mm512_cvtepi32_ps(v), bq);
        f = _mm512_mul_ps(f, mu);
        f = _mm512_max_ps(f, lo);
        f = _mm512_min_ps(f, hi);
        return _mm512_add_epi32(_mm512_cvtps_epi32(f), out_zp);
      };
      for (int64_t i = i0; i < i1; ++i) {
        if (out[i] == nullptr) continue;  // a row of a partial tile (igemm)
        const __m512i q0 = quant(_mm512_load_si512(cbuf + i * 32), coff0, zw0, bq0, mu0, i);
        const __m512i q1 = quant(_mm512_load_si512(cbuf + i * 32 + 16), coff1, zw1, bq1, mu1, i);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(out[i] + n),
                            _mm512_castsi512_si256(_mm512_permutex2var_epi8(q0, low_bytes, q1)));
      }
      return;
    }
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
      for (int64_t i = i0; i < i1; ++i) {
        if (out[i] == nullptr) continue;  // a row of a partial tile (igemm)
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
};

// Accumulates one 32 x 32 block (R2: second row tile a1, C2: second column tile) over the steps
// into tiles 0..3; B columns at `b` (k-group stride bs bytes). `pend` (may be null): the previous
// block's epilogue, a few rows after each step, so that its vector work runs while the AMX unit
// multiplies (out of order; issued after the whole loop it mostly waited for it).
template <bool R2, bool C2>
void block(const ATile& a0, const ATile& a1, const int8_t* b, int64_t bs, const int64_t* kg,
           int64_t T, const Epi* pend) {
  const int64_t pn = pend != nullptr ? pend->nrows : 0;
  const int64_t per = T > 0 ? (pn + T - 1) / T : pn;
  int64_t done = 0;
  _tile_zero(0);
  if (C2) _tile_zero(1);
  if (R2) {
    _tile_zero(2);
    if (C2) _tile_zero(3);
  }
  for (int64_t t = 0; t < T; ++t) {
    const int8_t* bk = b + kg[t] * bs;
    _tile_loadd(4, a0.base + a0.off[t], a0.stride);
    _tile_loadd(6, bk, bs);
    if (C2) _tile_loadd(7, bk + 64, bs);
    _tile_dpbusd(0, 4, 6);
    if (C2) _tile_dpbusd(1, 4, 7);
    if (R2) {
      _tile_loadd(5, a1.base + a1.off[t], a1.stride);
      _tile_dpbusd(2, 5, 6);
      if (C2) _tile_dpbusd(3, 5, 7);
    }
    if (done < pn) {
      const int64_t d1 = done + per < pn ? done + per : pn;
      pend->rows(done, d1);
      done = d1;
    }
  }
  if (done < pn) pend->rows(done, pn);
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

using BlockFn = void (*)(const ATile&, const ATile&, const int8_t*, int64_t, const int64_t*,
                         int64_t, const Epi*);
using StoreFn = void (*)(int32_t*);
constexpr BlockFn kBlocks[2][2] = {{&block<false, false>, &block<false, true>},
                                   {&block<true, false>, &block<true, true>}};
constexpr StoreFn kStores[2][2] = {{&store<false, false>, &store<false, true>},
                                   {&store<true, false>, &store<true, true>}};

// Accumulates up to four row tiles (NT) of one 16-column tile: 64 x 16 int32 per pass over K,
// five tile loads per four TDPBUSD (the 2 x 1 form of block() takes three per two). The fourth
// row tile reuses tile 4, whose TDPBUSD was issued three instructions before.
template <int NT>
void narrow_block(const ATile* a, const int8_t* b, int64_t bs, const int64_t* kg, int64_t T,
                  const Epi* pend) {
  const int64_t pn = pend != nullptr ? pend->nrows : 0;
  const int64_t per = T > 0 ? (pn + T - 1) / T : pn;
  int64_t done = 0;
  _tile_zero(0);
  if (NT > 1) _tile_zero(1);
  if (NT > 2) _tile_zero(2);
  if (NT > 3) _tile_zero(3);
  for (int64_t t = 0; t < T; ++t) {
    _tile_loadd(6, b + kg[t] * bs, bs);
    _tile_loadd(4, a[0].base + a[0].off[t], a[0].stride);
    _tile_dpbusd(0, 4, 6);
    if (NT > 1) {
      _tile_loadd(5, a[1].base + a[1].off[t], a[1].stride);
      _tile_dpbusd(1, 5, 6);
    }
    if (NT > 2) {
      _tile_loadd(7, a[2].base + a[2].off[t], a[2].stride);
      _tile_dpbusd(2, 7, 6);
    }
    if (NT > 3) {
      _tile_loadd(4, a[3].base + a[3].off[t], a[3].stride);
      _tile_dpbusd(3, 4, 6);
    }
    if (done < pn) {
      const int64_t d1 = done + per < pn ? done + per : pn;
      pend->rows(done, d1);
      done = d1;
    }
  }
  if (done < pn) pend->rows(done, pn);
}

// Stores narrow_block's NT tiles to rows [16 q, 16 q + 16) of cbuf[64][32] (int32).
template <int NT>
void narrow_store(int32_t* cbuf) {
  _tile_stored(0, cbuf, 128);
  if (NT > 1) _tile_stored(1, cbuf + 16 * 32, 128);
  if (NT > 2) _tile_stored(2, cbuf + 32 * 32, 128);
  if (NT > 3) _tile_stored(3, cbuf + 48 * 32, 128);
}

using NarrowFn = void (*)(const ATile*, const int8_t*, int64_t, const int64_t*, int64_t,
                          const Epi*);
constexpr NarrowFn kNarrow[4] = {&narrow_block<1>, &narrow_block<2>, &narrow_block<3>,
                                 &narrow_block<4>};
constexpr StoreFn kNarrowStores[4] = {&narrow_store<1>, &narrow_store<2>, &narrow_store<3>,
                                      &narrow_store<4>};

// Multiplies R rows of A (row tile q: tiles[q], 16 rows) with packed-B columns [n0, n1) and
// runs the epilogue; row i of the result goes to out[i] (row sums rs[i] when e.row_sums is set).
// Software-pipelined: a block's epilogue (vector units) runs inside the next block's K loop
// (block(), `pend`), so two int32 buffers alternate. (Two blocks behind, with three buffers,
// measured no faster.)
void run_rows(const ATile* tiles, const Steps& st, int64_t R, int64_t Kp, const int8_t* packed_b,
              int64_t N, int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* const* out,
              const int32_t* rs) {
  Epi pend{};
  bool has_pend = false;
  int cur = 0;
  const int64_t T = st.count();
  const int64_t* kg = st.kg.data();
  if (narrow_call(N, n0, n1)) {
    alignas(64) int32_t nbuf[2][64 * 32];
    const int64_t width = n1 - n0;
    const int8_t* panel = packed_b + n0 * Kp;
    for (int64_t r = 0; r < R; r += 64) {
      const int64_t nrows = R - r < 64 ? R - r : 64;
      const int64_t nt = (nrows + 15) / 16;
      kNarrow[nt - 1](tiles + r / 16, panel, width * kKR, kg, T, has_pend ? &pend : nullptr);
      kNarrowStores[nt - 1](nbuf[cur]);
      pend = {nbuf[cur], nrows, n0, width, &e, out + r, rs != nullptr ? rs + r : nullptr};
      has_pend = true;
      cur ^= 1;
    }
    if (has_pend) pend.rows(0, pend.nrows);
    return;
  }
  alignas(64) int32_t cbuf[2][32 * 32];
  int64_t chunk = kBChunkBytes / (Kp > 0 ? Kp : 1) / kNR * kNR;
  if (chunk < kNR) chunk = kNR;
  for (int64_t c0 = n0; c0 < n1; c0 += chunk) {
    const int64_t c1 = c0 + chunk < n1 ? c0 + chunk : n1;
    for (int64_t r = 0; r < R; r += 32) {
      const int64_t nrows = R - r < 32 ? R - r : 32;
      const bool r2 = nrows > 16;
      const ATile& a0 = tiles[r / 16];
      const ATile& a1 = r2 ? tiles[r / 16 + 1] : a0;
      for (int64_t p0 = c0; p0 < c1; p0 += kNR) {
        const int64_t width = N - p0 < kNR ? N - p0 : kNR;
        const int8_t* panel = packed_b + p0 * Kp;
        const int64_t ntile = (width + 15) / 16;
        for (int64_t j = 0; j < ntile; j += 2) {
          const bool c2 = j + 1 < ntile;
          kBlocks[r2][c2](a0, a1, panel + j * 64, width * kKR, kg, T, has_pend ? &pend : nullptr);
          kStores[r2][c2](cbuf[cur]);
          pend = {cbuf[cur], nrows, p0 + 16 * j, width - 16 * j < 32 ? width - 16 * j : 32, &e,
                  out + r, rs != nullptr ? rs + r : nullptr};
          has_pend = true;
          cur ^= 1;
        }
      }
    }
  }
  if (has_pend) pend.rows(0, pend.nrows);
}

// dst[0, len) = 0.
inline void zero_bytes(uint8_t* dst, int64_t len) {
  int64_t i = 0;
  for (; i + 64 <= len; i += 64) _mm512_storeu_si512(dst + i, _mm512_setzero_si512());
  if (i < len) {
    _mm512_mask_storeu_epi8(dst + i, (~0ULL) >> (64 - (len - i)), _mm512_setzero_si512());
  }
}

void StagePlan::stage(uint8_t* row, const uint8_t* a) const {
  for (size_t i = 0; i < zdst.size(); ++i) zero_bytes(row + zdst[i], zlen[i]);
  for (size_t i = 0; i < src.size(); ++i) copy_bytes(row + dst[i], a + src[i], len[i]);
}

}  // namespace

void gemm(const uint8_t* a, int64_t lda, int64_t M, int64_t K, const int8_t* packed_b, int64_t N,
          int64_t n0, int64_t n1, const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  const int64_t Kp = generic::round_up(K, kKR);
  thread_local Steps st;
  linear_steps(Kp, st);
  // K a multiple of 64: every full 16-row tile is read in place (rows lda apart); otherwise,
  // and for the last rows, tiles are staged.
  const bool in_place = K % 64 == 0;
  const int64_t MB = kMaxStageRows;
  const int64_t mb = M < MB ? M : MB;
  uint8_t* abuf = scratch((in_place ? 16 : (mb + 15) / 16 * 16) * st.Ks);
  uint8_t* out[kMaxStageRows];
  ATile tiles[kMaxStageRows / 16];
  const IgemmSeg whole{0, 0, K};
  thread_local StagePlan plan;
  plan.build(st, &whole, 1);
  configure(st.ka, narrow_call(N, n0, n1));
  for (int64_t m0 = 0; m0 < M; m0 += MB) {
    const int64_t R = M - m0 < MB ? M - m0 : MB;
    for (int64_t q = 0; q < (R + 15) / 16; ++q) {
      const int64_t i0 = 16 * q, rows = R - i0 < 16 ? R - i0 : 16;
      if (in_place && rows == 16) {
        tiles[q] = {a + (m0 + i0) * lda, lda, st.direct.data()};
      } else {
        uint8_t* tb = abuf + (in_place ? 0 : i0 * st.Ks);
        for (int64_t i = 0; i < 16; ++i) {
          uint8_t* dst = tb + i * st.Ks;
          if (i < rows) {
            plan.stage(dst, a + (m0 + i0 + i) * lda);
          } else {
            zero_bytes(dst, st.Ks);  // rows of the last tile past M: computed, never stored
          }
        }
        tiles[q] = {tb, st.Ks, st.staged.data()};
      }
    }
    for (int64_t i = 0; i < R; ++i) out[i] = c + (m0 + i) * ldc;
    run_rows(tiles, st, R, Kp, packed_b, N, n0, n1, e, out,
             e.row_sums != nullptr ? e.row_sums + m0 : nullptr);
  }
  _tile_release();
}

// The step size: 64 when every segment is whole 64-byte steps (C_in % 64 = 0), else 32 when they
// are whole 32-byte steps (C_in = 32, 96, 160, ...: TDPBUSD costs the same for 32 bytes of K as
// for 64, so this doubles the multiplications of the K it covers, but reads A in place; measured
// faster than staging up to 128 columns (32 -> 64 on 32x32: 1.42 -> 1.06 ms), slower at 256),
// else 0: linear staging.
int64_t igemm_step(const IgemmSeg* segs, int64_t nseg, int64_t ncols) {
  auto all_multiple = [&](int64_t g) {
    bool ok = nseg > 0;
    for (int64_t s = 0; s < nseg; ++s) ok = ok && segs[s].k % g == 0 && segs[s].len % g == 0;
    return ok;
  };
  if (all_multiple(64)) return 64;
  if (ncols <= 128 && all_multiple(32)) return 32;
  // Segments of one length L < 64 at multiples of L (run_igemm's padded spans, C_in = 3: 7x7
  // stem 24 bytes, 3x3 12; the padding-skipping interior of C_in = 16: 48): a step per segment,
  // ka = L, A in place. A TDPBUSD on L bytes of K costs as much as on 64, but no byte is copied:
  // 3 -> 64 7x7 stride 2 on 8x3x224x224: zmm 4.40 ms, this 2.78 (byte staging: no faster than
  // zmm); 16 -> 64 3x3 on 8x16x56x56: 0.88 -> 0.52.
  const int64_t L = nseg > 0 ? segs[0].len : 0;
  bool same = L > 0 && L < 64 && L % kKR == 0;
  for (int64_t s = 0; s < nseg && same; ++s) same = segs[s].len == L && segs[s].k % L == 0;
  return same ? L : 0;
}

bool igemm_prefers_amx(const IgemmSeg* segs, int64_t nseg, int64_t Kp, int64_t ncols) {
  // Never Kp = 0: ka = 0 is a tile configuration LDTILECFG rejects (gemm_prefers_amx).
  return Kp > 0 && (igemm_step(segs, nseg, ncols) > 0 || (ncols >= 128 && Kp >= 128));
}

void igemm(const uint8_t* const* rows, const int64_t* c_rows, int64_t M, const IgemmSeg* segs,
           int64_t nseg, int64_t Kp, const int8_t* packed_b, int64_t N, int64_t n0, int64_t n1,
           const QGemmEpilogue& e, uint8_t* c, int64_t ldc) {
  // With a step size g (igemm_step), steps follow the segments: rows are read in place where they
  // are equally spaced, and staged rows hold just the segments' bytes, back to back (K positions
  // no segment names are skipped, not multiplied by zeros). Otherwise linear staging.
  const int64_t g = igemm_step(segs, nseg, n1 - n0);
  const bool by_segs = g > 0;
  thread_local Steps st;
  st.clear();
  if (by_segs) {
    st.ka = static_cast<int>(g);
    for (int64_t s = 0; s < nseg; ++s)
      for (int64_t u = 0; u < segs[s].len; u += g) {
        st.direct.push_back(segs[s].a_off + u);
        st.staged.push_back(g * st.count());
        st.kg.push_back((segs[s].k + u) / kKR);
      }
    st.Ks = g * st.count();
  } else {
    linear_steps(Kp, st);
  }
  thread_local StagePlan plan;
  if (!by_segs) plan.build(st, segs, nseg);  // by segments, rows are staged segment by segment
  const int64_t MB = kMaxStageRows;
  uint8_t* abuf = scratch((M < MB ? (M + 15) / 16 * 16 : MB) * st.Ks);
  // Partial in-place tiles (>= kMinRun rows) can make more tiles than R / 16.
  constexpr int64_t kMaxTiles = kMaxStageRows / kMinRun + 1;
  uint8_t* out[16 * kMaxTiles];
  ATile tiles[kMaxTiles];
  configure(st.ka, narrow_call(N, n0, n1));
  for (int64_t m0 = 0; m0 < M; m0 += MB) {
    const int64_t R = M - m0 < MB ? M - m0 : MB;
    const uint8_t* const* rw = rows + m0;
    auto out_row = [&](int64_t i) {
      return c + (c_rows != nullptr ? c_rows[m0 + i] : m0 + i) * ldc;
    };
    // Tiles read in place first: up to 16 equally spaced rows from row i on (a conv's rows come
    // in runs along an output row). A run of r < 16 rows (an output row of 14 pixels) is a tile
    // too when it has at least kMinRun rows, its 16 rows stay below the call's highest row
    // pointer, and the call has at most 64 columns: rows r..15 then read bytes inside the buffer
    // the call reads (between two rows it reads legitimately; every row of a call points into one
    // input buffer) and are computed but not stored (out = null). Worth it where staging costs
    // most against the multiplications, i.e. few columns (measured: 64 columns gain, 128 and 256
    // lose the idle rows' share). The rows left over are staged 16 at a time after them.
    const bool partial_ok = n1 - n0 <= 64;
    const uint8_t* top = rw[0];
    for (int64_t i = 1; i < R; ++i) top = rw[i] > top ? rw[i] : top;
    int64_t nt = 0, nleft = 0;
    int64_t left[kMaxStageRows];
    for (int64_t i = 0; i < R;) {
      if (by_segs && i + 1 < R) {
        const int64_t d = rw[i + 1] - rw[i];
        int64_t r = 2;
        while (r < 16 && i + r < R && rw[i + r] - rw[i + r - 1] == d) ++r;
        if (d > 0 && (r == 16 || (partial_ok && r >= kMinRun && rw[i] + 15 * d <= top))) {
          tiles[nt] = {rw[i], d, st.direct.data()};
          for (int64_t k = 0; k < 16; ++k) out[16 * nt + k] = k < r ? out_row(i + k) : nullptr;
          ++nt;
          i += r;
          continue;
        }
      }
      left[nleft++] = i++;
    }
    for (int64_t l0 = 0; l0 < nleft; l0 += 16, ++nt) {
      uint8_t* tb = abuf + l0 * st.Ks;
      for (int64_t k = 0; k < 16; ++k) {
        uint8_t* dst = tb + k * st.Ks;
        if (l0 + k >= nleft) {
          zero_bytes(dst, st.Ks);  // rows of the last tile past M: computed, never stored
          out[16 * nt + k] = nullptr;
          continue;
        }
        const int64_t i = left[l0 + k];
        out[16 * nt + k] = out_row(i);
        const uint8_t* src = rw[i];
        if (by_segs) {
          for (int64_t s = 0, t = 0; s < nseg; t += segs[s].len, ++s)
            copy_bytes(dst + t, src + segs[s].a_off, segs[s].len);
        } else {
          plan.stage(dst, src);
        }
      }
      tiles[nt] = {tb, st.Ks, st.staged.data()};
    }
    run_rows(tiles, st, 16 * nt, Kp, packed_b, N, n0, n1, e, out, nullptr);
  }
  _tile_release();
}

}  // namespace amx
}  // namespace gemm
}  // namespace kernels
}  // namespace qplugin
