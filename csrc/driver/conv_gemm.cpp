// The conv compute drivers (conv_gemm.h): depthwise kernel rows, implicit GEMM over im2col row
// blocks and transposed conv by output phases, all threaded with at::parallel_for.
// Changes with: conv_gemm.h, packed/conv_packed_params.{h,cpp}, kernels/gemm/qgemm.h,
// kernels/conv/dwconv.h.
#include "driver/conv_gemm.h"

#include "kernels/dispatch.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace qplugin {
namespace driver {

namespace {

using kernels::gemm::QGemmEpilogue;
using kernels::gemm::QGemmKernels;
using Phase = ConvPlan::Phase;

int64_t div_up(int64_t a, int64_t b) { return (a + b - 1) / b; }

// dst[0, n) = src[0, n) for the short copies of im2col (a tap row: often 16..200 bytes), inline
// with fixed-size moves (overlapping at the tail) instead of a libc call per copy.
inline void copy_bytes(uint8_t* dst, const uint8_t* src, int64_t n) {
  if (n >= 256) {
    std::memcpy(dst, src, static_cast<size_t>(n));
  } else if (n >= 16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) std::memcpy(dst + i, src + i, 16);
    if (i < n) std::memcpy(dst + n - 16, src + n - 16, 16);
  } else if (n >= 8) {
    std::memcpy(dst, src, 8);
    std::memcpy(dst + n - 8, src + n - 8, 8);
  } else if (n >= 4) {
    std::memcpy(dst, src, 4);
    std::memcpy(dst + n - 4, src + n - 4, 4);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
  }
}

// Steps the output position (n, jd, jh, jw) to the next pixel of a P0 x P1 x P2 grid, row-major.
inline void next_pixel(int64_t P0, int64_t P1, int64_t P2, int64_t* n, int64_t* jd, int64_t* jh,
                       int64_t* jw) {
  if (++*jw == P2) {
    *jw = 0;
    if (++*jh == P1) {
      *jh = 0;
      if (++*jd == P0) {
        *jd = 0;
        ++*n;
      }
    }
  }
}

// Bytes of im2col rows a task keeps (L2-resident together with the B panels it streams).
constexpr int64_t kIm2colBytes = 96 * 1024;
// Packed-weight bytes of one column block of run_igemm_skip (the GEMM kernels' own chunk size).
constexpr int64_t kSkipBChunkBytes = 384 * 1024;
// Below this many multiply-adds a conv runs on the calling thread.
constexpr int64_t kMinParallelMacs = int64_t{1} << 16;

// Row-block height of a threaded M loop: at most about MB (a multiple of mr), with the blocks of
// equal height and, where M has enough row tiles, their count a multiple of the thread count, so
// that at::parallel_for's equal split of the block range gives every thread the same rows (a
// 1x1 conv on 14x14, M = 196 with MB = 192, was 192 + 4 rows: one thread did 98% of the work).
// The row multiple of a kernel's blocks: its register tile height, or 32 (two 16-row tiles) for
// the AMX form of the avx512vnni kernels, which computes whole tiles (a block of 162 rows cost
// 176: eleven tiles).
bool amx_form(const QGemmKernels& k) {
  return k.isa == kernels::Isa::kAvx512Vnni && kernels::amx_enabled();
}
int64_t row_align(const QGemmKernels& k) { return amx_form(k) ? 32 : k.mr; }

// Bytes of A rows (rows x K) an implicit-GEMM call takes: im2col-sized, or on AMX 768 KB (at
// most 512 rows, the AMX kernel's pass). AMX multiplies a 96 KB block (160 rows at K = 576, 32
// at K = 4608) so fast that the per-call work — the tile configuration, the run scan, the last
// block's epilogue, which no K loop hides — and, for weights beyond L2 (3x3 512 -> 512: 2.4 MB),
// the weights streamed once per call from L3 dominated. 1 thread, channels-last, ms, 96 KB ->
// 768 KB: 3x3 64 -> 64 56x56 batch 8 1.02-1.07 -> 0.82-0.93 (padding skipped), 512 -> 512 7x7
// batch 8 1.30-1.46 -> 0.95-1.06 (padded copy, rows staged); 14x14 256 -> 256 unchanged.
int64_t igemm_call_bytes(const QGemmKernels& k) {
  return amx_form(k) ? int64_t{768} * 1024 : kIm2colBytes;
}

int64_t balanced_rows(int64_t M, int64_t MB, int64_t mr, int64_t threads) {
  int64_t blocks = div_up(M, MB);
  const int64_t tiles = div_up(M, mr);
  if (threads > 1 && tiles >= threads) blocks = std::min(tiles, div_up(blocks, threads) * threads);
  return div_up(div_up(M, blocks), mr) * mr;
}

void run_depthwise(const ConvPlan& p, const uint8_t* x, int64_t N, const int64_t in[3],
                   uint8_t* y, const int64_t out[3], const ConvRequant& rq, bool x_nchw) {
  const int64_t C = p.Cout_, Cin = p.Cin_, m = C / Cin;
  const int64_t in_pix = in[0] * in[1] * in[2], out_pix = out[0] * out[1] * out[2];
  // Channel multiplier m > 1: repeat every input channel m times (output channel c reads input
  // channel c / m), so the kernel always pairs channel c with channel c.
  std::vector<uint8_t> xexp;
  if (m > 1) {
    xexp.resize(static_cast<size_t>(N * in_pix * C));
    at::parallel_for(0, N * in_pix, 1024, [&](int64_t b0, int64_t b1) {
      for (int64_t i = b0; i < b1; ++i) {
        const uint8_t* s = x + i * Cin;
        uint8_t* d = xexp.data() + i * C;
        for (int64_t c = 0; c < Cin; ++c)
          for (int64_t j = 0; j < m; ++j) d[c * m + j] = s[c];
      }
    });
    x = xexp.data();
  }
  std::vector<int32_t> acc_init(static_cast<size_t>(C));
  for (int64_t c = 0; c < C; ++c) acc_init[c] = -rq.in_zp * p.dw_wsum_[c];
  std::vector<uint8_t> zrow(static_cast<size_t>(C), static_cast<uint8_t>(rq.in_zp));
  kernels::conv::DwConvArgs a{};
  a.ID = in[0]; a.IH = in[1]; a.IW = in[2]; a.C = C;
  a.OD = out[0]; a.OH = out[1]; a.OW = out[2];
  a.KD = p.k_[0]; a.KH = p.k_[1]; a.KW = p.k_[2];
  a.sd = p.s_[0]; a.sh = p.s_[1]; a.sw = p.s_[2];
  a.pd = p.p_[0]; a.ph = p.p_[1]; a.pw = p.p_[2];
  a.dd = p.d_[0]; a.dh = p.d_[1]; a.dw = p.d_[2];
  a.zrow = zrow.data();
  a.w = p.dw_w_.data();
  a.acc_init = acc_init.data();
  a.bias_q = rq.bias_q;
  a.mult = rq.mult;
  a.lo = rq.lo; a.hi = rq.hi; a.out_zp = rq.out_zp;
  // Byte-lane (VPDPBUSD) order of the per-channel terms, padded to 64-channel blocks.
  const int64_t Cp = (C + 63) / 64 * 64;
  std::vector<int32_t> acc_p;
  std::vector<float> bq_p, mult_p;
  // (Only the avx512vnni kernel reads these forms: the per-channel reordering below is skipped
  // for the others, where it was a per-call cost of small-image layers.)
  if (!p.dw_w8_.empty() && p.dw_->isa == kernels::Isa::kAvx512Vnni) {
    acc_p.assign(static_cast<size_t>(Cp), 0);
    bq_p.assign(static_cast<size_t>(Cp), 0.f);
    mult_p.assign(static_cast<size_t>(Cp), 0.f);
    for (int64_t c = 0; c < C; ++c) {
      const int64_t idx = c / 64 * 64 + 16 * (c % 4) + (c % 64) / 4;
      acc_p[idx] = acc_init[c];
      bq_p[idx] = rq.bias_q[c];
      mult_p[idx] = rq.mult[c];
    }
    a.w8 = p.dw_w8_.data();
    if (!p.dw_w3_.empty()) a.w3 = p.dw_w3_.data();
    if (!p.dw_w5_.empty()) a.w5 = p.dw_w5_.data();
    a.acc_init_p = acc_p.data();
    a.bias_q_p = bq_p.data();
    a.mult_p = mult_p.data();
  }
  const auto& k = *p.dw_;
  const int64_t rows_per_img = out[0] * out[1];
  const int64_t macs = N * out_pix * C * a.KD * a.KH * a.KW;
  auto body = [&](int64_t b0, int64_t b1) {
    while (b0 < b1) {
      const int64_t n = b0 / rows_per_img, r0 = b0 % rows_per_img;
      const int64_t r1 = std::min(rows_per_img, r0 + (b1 - b0));
      kernels::conv::DwConvArgs ai = a;
      ai.x = x + n * in_pix * C;
      ai.y = y + n * out_pix * C;
      if (x_nchw) k.rows_nchw(ai, r0, r1);
      else k.rows(ai, r0, r1);
      b0 += r1 - r0;
    }
  };
  if (macs < kMinParallelMacs || at::in_parallel_region()) body(0, N * rows_per_img);
  else at::parallel_for(0, N * rows_per_img, 1, body);
}

// True when every one of the n bytes at p is <= 127 (the OR of all bytes has no top bit).
bool all_bytes_7bit(const uint8_t* p, int64_t n) {
  uint64_t acc = 0;
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t v;
    std::memcpy(&v, p + i, 8);
    acc |= v;
  }
  for (; i < n; ++i) acc |= p[i];
  return (acc & 0x8080808080808080ull) == 0;
}

// A zero-point-padded NDHWC copy of x (N images of in[0] x in[1] x in[2] pixels of C bytes):
// lo[i] pixels of padding before and hi[i] after along each dimension, plus 64 bytes of slack
// after the last row (a span's last k-group may read past it). Rows of (in[2] + lo[2] + hi[2]) * C
// bytes.
std::unique_ptr<uint8_t[]> padded_copy(const uint8_t* x, int64_t N, const int64_t in[3],
                                       const int64_t lo[3], const int64_t hi[3], int64_t C,
                                       uint8_t zp, bool serial) {
  const int64_t IDp = in[0] + lo[0] + hi[0], IHp = in[1] + lo[1] + hi[1];
  const int64_t rowb = (in[2] + lo[2] + hi[2]) * C, nrows = N * IDp * IHp;
  std::unique_ptr<uint8_t[]> xpad(new uint8_t[static_cast<size_t>(nrows * rowb + 64)]);
  uint8_t* xp = xpad.get();
  std::memset(xp + nrows * rowb, zp, 64);
  const int64_t lb = lo[2] * C, wb = in[2] * C;
  auto body = [&](int64_t r0, int64_t r1) {
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t ih = r % IHp - lo[1], q = r / IHp;
      const int64_t id = q % IDp - lo[0], n = q / IDp;
      uint8_t* d = xp + r * rowb;
      if (id < 0 || id >= in[0] || ih < 0 || ih >= in[1]) {
        std::memset(d, zp, static_cast<size_t>(rowb));
        continue;
      }
      std::memset(d, zp, static_cast<size_t>(lb));
      std::memcpy(d + lb, x + ((n * in[0] + id) * in[1] + ih) * wb, static_cast<size_t>(wb));
      std::memset(d + lb + wb, zp, static_cast<size_t>(rowb - lb - wb));
    }
  };
  if (serial) body(0, nrows);
  else at::parallel_for(0, nrows, 16, body);
  return xpad;
}

// Column offsets (qgemm.h) with every weight zero point 0: a_zp * colsum[n], wrapped to int32.
std::vector<int32_t> zp_col_offsets(int32_t a_zp, const std::vector<int32_t>& col_sums,
                                    int64_t Cout) {
  std::vector<int32_t> col_off(static_cast<size_t>(Cout));
  for (int64_t n = 0; n < Cout; ++n)
    col_off[n] = static_cast<int32_t>(static_cast<uint32_t>(
        static_cast<uint64_t>(static_cast<int64_t>(a_zp) * col_sums[n])));
  return col_off;
}

// QGemmEpilogue::a_7bit for an implicit GEMM over x (`bytes` bytes) and its zero-point padding:
// one scan of the input and the padding byte instead of one per row tile and segment, for a
// kernel with a 7-bit fast path.
int32_t input_7bit(const QGemmKernels& k, int32_t in_zp, const uint8_t* x, int64_t bytes) {
  return k.a_7bit_fast && in_zp >= 0 && in_zp <= 127 && all_bytes_7bit(x, bytes) ? 1 : 0;
}

// The tasks of an implicit GEMM of M rows, K deep, Cout columns: row blocks of MB rows (im2col
// -sized, balanced over the threads), each split into nblocks column blocks when there are too
// few row blocks for the threads. Task b covers rows [m0, m1) and columns [n0, n1) (empty when
// n1 <= n0).
struct IgemmTasks {
  int64_t MB = 0, mblocks = 0, panels = 0, nblocks = 1;
  IgemmTasks(const QGemmKernels& k, int64_t M, int64_t K, int64_t Cout, bool serial,
             int64_t threads) {
    MB = igemm_call_bytes(k) / std::max<int64_t>(K, 1);
    const int64_t ra = row_align(k);
    MB = std::max<int64_t>(ra, std::min<int64_t>(512, MB / ra * ra));
    panels = div_up(Cout, k.nr);
    if (!serial && M <= MB && M < Cout && panels >= threads) {
      // Fewer rows than columns, all in one block: split the columns only, so that each thread
      // reads its share of the weights once. Splitting the rows too made every thread stream all
      // the weights (3x3 512 -> 512 on 7x7, batch 1, 2 threads: 2.4 MB each, beyond L2).
      MB = div_up(M, ra) * ra;
      mblocks = 1;
      nblocks = std::min(panels, 2 * threads);
      return;
    }
    if (!serial) MB = balanced_rows(M, MB, ra, threads);
    mblocks = div_up(M, MB);
    if (!serial && mblocks < 2 * threads) nblocks = std::min(panels, div_up(2 * threads, mblocks));
  }
  int64_t count() const { return mblocks * nblocks; }
  void task(int64_t b, int64_t M, int64_t Cout, int64_t nr, int64_t* m0, int64_t* m1, int64_t* n0,
            int64_t* n1) const {
    const int64_t mb = b / nblocks, nb = b % nblocks;
    *m0 = mb * MB;
    *m1 = std::min(M, *m0 + MB);
    *n0 = nb * panels / nblocks * nr;
    *n1 = std::min(Cout, (nb + 1) * panels / nblocks * nr);
  }
};

// Implicit GEMM through QGemmKernels::igemm (Phase::nseg > 0): the input is copied once into a
// zero-point-padded NDHWC buffer, after which every output pixel's A row is nseg = KD * KH
// contiguous spans of KW * C_in bytes (kseg with the zero-weight pad) starting at one pointer
// per pixel; the GEMM reads them in place (no im2col).
void run_igemm(const ConvPlan& p, const Phase& ph, const uint8_t* x, int64_t N,
               const int64_t in[3], uint8_t* y, const int64_t out[3], const ConvRequant& rq) {
  const QGemmKernels& k = *p.gemm_;
  const int64_t C = p.Cin_, Cout = p.Cout_;
  const int64_t IDp = in[0] + 2 * p.p_[0], IHp = in[1] + 2 * p.p_[1], IWp = in[2] + 2 * p.p_[2];
  const int64_t pix = out[0] * out[1] * out[2], M = N * pix;
  if (M == 0) return;
  const int64_t threads = at::get_num_threads();
  const int64_t K = ph.nseg * ph.kseg;
  const bool serial = threads <= 1 || M * Cout * K < kMinParallelMacs || at::in_parallel_region();
  const uint8_t zp = static_cast<uint8_t>(rq.in_zp);
  // Padded copy (also when there is no padding but the last span's k-group reads past it).
  const bool need_pad = p.p_[0] > 0 || p.p_[1] > 0 || p.p_[2] > 0 || ph.kseg != p.k_[2] * C;
  std::unique_ptr<uint8_t[]> xpad;
  const uint8_t* xb = x;
  if (need_pad) {
    xpad = padded_copy(x, N, in, p.p_, p.p_, C, zp, serial);
    xb = xpad.get();
  }
  // One K range per (kd, kh) tap: the kseg bytes of its input row span, in packed-K order.
  std::vector<kernels::gemm::IgemmSeg> segs(static_cast<size_t>(ph.nseg));
  for (int64_t td = 0; td < p.k_[0]; ++td)
    for (int64_t th = 0; th < p.k_[1]; ++th) {
      const int64_t s = td * p.k_[1] + th;
      segs[s] = {(td * p.d_[0] * IHp + th * p.d_[1]) * IWp * C, s * ph.kseg, ph.kseg};
    }
  const std::vector<int32_t> col_off = zp_col_offsets(rq.in_zp, ph.col_sums, Cout);
  const int32_t a7 = input_7bit(k, rq.in_zp, x, N * in[0] * in[1] * in[2] * C);
  // Compact rows (AVX2): spans of taps_w * C_in bytes that are not whole k-groups (C_in = 3
  // stems: a 3x3's 3 spans of 9 bytes are read as 3 x 12, a 7x7's 7 x 21 as 7 x 24) are copied
  // per call into rows of Kc = nseg * span rounded up to kr bytes, multiplied with the
  // im2col-ordered `packed` (K = nseg * span) by the direct GEMM. The AVX2 kernel's multiplies
  // are the bound: a 3x3 s2 3 -> 32 stem multiplies 28 bytes a pixel instead of 36. Zen 1, one
  // thread, in-process A/B against the spans read in place: full-range input 0.89x (3 -> 32 and
  // 3 -> 16, batch 1 to 32: the widening of 3 spans per row also goes); 7-bit input 0.98x at
  // 3 -> 32 but 1.09-1.10x at 3 -> 16 (the VPMADDUBSW tile reads spans in place, so the copy is
  // all cost where two panels share it), which keeps the spans in place unless the pad's zero
  // products reach kIgemmPadMacs a pixel. The 7x7 s2 3 -> 64 stem, which went through
  // run_phase's im2col before: 7-bit 0.89x, full range 0.99x.
  constexpr int64_t kIgemmPadMacs = 1024;
  const int64_t span = p.k_[2] * C;
  const bool in_place = a7 == 1 && Cout < 32 && ph.nseg * (ph.kseg - span) * Cout < kIgemmPadMacs;
  const int64_t Kd = div_up(ph.K, k.kr) * k.kr;  // < K: some spans' pad can go (not nseg = 1)
  const bool compact = Kd < K && k.isa == kernels::Isa::kAvx2 && !in_place;
  const int64_t Kc = compact ? Kd : K;
  QGemmEpilogue e{col_off.data(), p.w_zp_i32_.data(), 0, nullptr, rq.bias_q, rq.mult,
                  rq.lo, rq.hi, rq.out_zp, a7};
  e.out_i32 = rq.out_i32;
  const int64_t es = rq.out_i32 ? 4 : 1;  // output element bytes

  const IgemmTasks tasks(k, M, Kc, Cout, serial, threads);
  const int8_t* pb = compact ? ph.packed.data_ptr<int8_t>() : ph.packed_ind.data_ptr<int8_t>();
  auto task_range = [&](int64_t b0, int64_t b1) {
    std::vector<const uint8_t*> rows(static_cast<size_t>(tasks.MB));
    // 16 bytes of slack: a span's last 16-byte move may run past its row's end (row order
    // rewrites those bytes; the last row's land in the slack).
    std::vector<uint8_t> cbuf(compact ? static_cast<size_t>(tasks.MB * Kc + 16) : 0);
    const int64_t P0 = out[0], P1 = out[1], P2 = out[2];
    const int64_t sd = p.s_[0] * IHp * IWp * C, sh = p.s_[1] * IWp * C, sw = p.s_[2] * C;
    const int64_t img = IDp * IHp * IWp * C;
    for (int64_t b = b0; b < b1; ++b) {
      int64_t m0, m1, n0, n1;
      tasks.task(b, M, Cout, k.nr, &m0, &m1, &n0, &n1);
      if (n1 <= n0) continue;
      int64_t n = m0 / pix, q = m0 % pix;
      int64_t jw = q % P2;
      q /= P2;
      int64_t jh = q % P1, jd = q / P1;
      for (int64_t m = m0; m < m1; ++m) {
        rows[m - m0] = xb + n * img + jd * sd + jh * sh + jw * sw;
        next_pixel(P0, P1, P2, &n, &jd, &jh, &jw);
      }
      if (compact) {
        // Row i: its nseg spans back to back, then zero-point bytes up to Kc (their weights are
        // 0; zp keeps e.a_7bit true of every byte). Each span moves as 16-byte chunks; the bytes
        // a chunk writes past the span are rewritten by the next span, the pad or the next row.
        // The reads stay inside the padded copy and its 64 bytes of slack (spans end inside it,
        // a chunk reads at most 15 bytes past one).
        const int64_t body = ph.nseg * span;
        for (int64_t i = 0; i < m1 - m0; ++i) {
          uint8_t* d = cbuf.data() + i * Kc;
          for (int64_t s = 0; s < ph.nseg; ++s) {
            const uint8_t* src = rows[i] + segs[s].a_off;
            uint8_t* dst = d + s * span;
            for (int64_t j = 0; j < span; j += 16) std::memcpy(dst + j, src + j, 16);
          }
          for (int64_t j = body; j < Kc; ++j) d[j] = zp;
        }
        k.gemm(cbuf.data(), Kc, m1 - m0, Kc, pb, Cout, n0, n1, e, y + m0 * Cout * es, Cout * es);
        continue;
      }
      k.igemm(rows.data(), nullptr, m1 - m0, segs.data(), ph.nseg, K, pb, Cout, n0, n1, e,
              y + m0 * Cout * es, Cout * es);
    }
  };
  if (serial) task_range(0, tasks.count());
  else at::parallel_for(0, tasks.count(), 1, task_range);
}

// Padding-skipping implicit GEMM through QGemmKernels::igemm (Phase::tap_col_sums set, i.e.
// C_in a multiple of kr). Along each dimension the taps of an output position j that land inside
// the input form one range [t0, t1) (the input index j * s - p + t * d grows with t), and both
// ends fall as j grows, so the positions sharing a range are one run [j0, j1). Output pixels are
// grouped by their three runs (a 3x3 pad-1 conv: the interior, four edges, four corners); each
// group's A rows read only its taps, in place in the input (no padded copy, no multiplications by
// the padding), with the zero-point term a_zp * (the group's tap column sums). Equal to run_igemm's
// result: there a padded tap adds (A - a_zp) * w = 0.
void run_igemm_skip(const ConvPlan& p, const Phase& ph, const uint8_t* x, int64_t N,
                    const int64_t in[3], uint8_t* y, const int64_t out[3], const ConvRequant& rq) {
  using kernels::gemm::IgemmSeg;
  const QGemmKernels& k = *p.gemm_;
  const int64_t C = p.Cin_, Cout = p.Cout_;
  if (N * out[0] * out[1] * out[2] == 0) return;
  const int64_t K = ph.nseg * ph.kseg;
  const int64_t threads = at::get_num_threads();
  const bool serial = threads <= 1 || N * out[0] * out[1] * out[2] * Cout * K < kMinParallelMacs ||
                      at::in_parallel_region();
  struct Run {
    int64_t j0, j1, t0, t1;  // positions [j0, j1) read taps [t0, t1) (t0 = t1: none)
  };
  std::vector<Run> runs[3];
  for (int i = 0; i < 3; ++i) {
    for (int64_t j = 0; j < out[i]; ++j) {
      int64_t t0 = 0, t1 = 0;
      for (int64_t t = 0; t < p.k_[i]; ++t) {
        const int64_t ix = j * p.s_[i] - p.p_[i] + t * p.d_[i];
        if (ix < 0 || ix >= in[i]) continue;
        if (t1 == t0) t0 = t;
        t1 = t + 1;
      }
      if (!runs[i].empty() && runs[i].back().t0 == t0 && runs[i].back().t1 == t1) {
        runs[i].back().j1 = j + 1;
      } else {
        runs[i].push_back({j, j + 1, t0, t1});
      }
    }
  }
  const int64_t nh = static_cast<int64_t>(runs[1].size()), nw = static_cast<int64_t>(runs[2].size());
  const int64_t ngroups = static_cast<int64_t>(runs[0].size()) * nh * nw;
  const int64_t row_b = in[2] * C, plane_b = in[1] * row_b, img = in[0] * plane_b;
  // Per group: its K ranges (one per (kd, kh) tap, holding the kw taps [t0, t1) of the span) and
  // its column offsets a_zp * sum of the tap column sums (int32, wrapping as qgemm.h's).
  std::vector<std::vector<IgemmSeg>> segs(static_cast<size_t>(ngroups));
  std::vector<std::vector<int32_t>> col_off(static_cast<size_t>(ngroups));
  std::vector<int64_t> sums(static_cast<size_t>(Cout));
  for (int64_t q = 0; q < ngroups; ++q) {
    const Run& rd = runs[0][q / (nh * nw)];
    const Run& rh = runs[1][q / nw % nh];
    const Run& rw = runs[2][q % nw];
    std::fill(sums.begin(), sums.end(), 0);
    if (rd.t1 > rd.t0 && rh.t1 > rh.t0 && rw.t1 > rw.t0) {
      for (int64_t td = rd.t0; td < rd.t1; ++td) {
        for (int64_t th = rh.t0; th < rh.t1; ++th) {
          segs[q].push_back({(td - rd.t0) * p.d_[0] * plane_b + (th - rh.t0) * p.d_[1] * row_b,
                             (td * p.k_[1] + th) * ph.kseg + rw.t0 * C, (rw.t1 - rw.t0) * C});
          for (int64_t tw = rw.t0; tw < rw.t1; ++tw) {
            const int32_t* ts =
                ph.tap_col_sums.data() + ((td * p.k_[1] + th) * p.k_[2] + tw) * Cout;
            for (int64_t n = 0; n < Cout; ++n) sums[n] += ts[n];
          }
        }
      }
    }
    col_off[q].resize(static_cast<size_t>(Cout));
    for (int64_t n = 0; n < Cout; ++n)
      col_off[q][n] = static_cast<int32_t>(static_cast<uint32_t>(
          static_cast<uint64_t>(static_cast<int64_t>(rq.in_zp) * sums[n])));
  }
  // The input's bytes all <= 127 (for a kernel with a 7-bit fast path; no padding byte is read).
  const int32_t a7 = k.a_7bit_fast && all_bytes_7bit(x, N * in[0] * in[1] * in[2] * C) ? 1 : 0;
  const int64_t es = rq.out_i32 ? 4 : 1;  // output element bytes
  int64_t MB = igemm_call_bytes(k) / std::max<int64_t>(K, 1);
  const int64_t ra = row_align(k);
  MB = std::max<int64_t>(ra, std::min<int64_t>(512, MB / ra * ra));
  // Threaded: blocks of equal height over all the pixels (768 KB blocks left a 28x28 plane, batch
  // 1, in two blocks of the interior group, one of 512 rows: one thread did most of it).
  if (!serial) MB = balanced_rows(N * out[0] * out[1] * out[2], MB, ra, threads);
  // Row blocks: up to MB pixels of one group, in (n, jd, jh, jw) order within the group's box.
  std::vector<int64_t> blk_q, blk_i;
  for (int64_t q = 0; q < ngroups; ++q) {
    const Run& rd = runs[0][q / (nh * nw)];
    const Run& rh = runs[1][q / nw % nh];
    const Run& rw = runs[2][q % nw];
    const int64_t size = N * (rd.j1 - rd.j0) * (rh.j1 - rh.j0) * (rw.j1 - rw.j0);
    for (int64_t i = 0; i < size; i += MB) {
      blk_q.push_back(q);
      blk_i.push_back(i);
    }
  }
  const int64_t mblocks = static_cast<int64_t>(blk_q.size());
  const int64_t panels = div_up(Cout, k.nr);
  // Column blocks outer, row blocks inner: one column block of the packed weights (at most
  // kSkipBChunkBytes, L2-resident) serves every row block of every group before the next is
  // read, so weights larger than L2 (3x3x512x512: 2.4 MB) stream from L3 once, not once per row
  // block and group.
  int64_t nblocks = std::min(panels, std::max<int64_t>(1, div_up(Cout * K, kSkipBChunkBytes)));
  if (!serial && mblocks * nblocks < 2 * threads)
    nblocks = std::min(panels, div_up(2 * threads, mblocks));
  const int8_t* pb = ph.packed_ind.data_ptr<int8_t>();
  const int64_t pix = out[0] * out[1] * out[2];
  auto task_range = [&](int64_t b0, int64_t b1) {
    std::vector<const uint8_t*> rows(static_cast<size_t>(MB));
    std::vector<int64_t> crow(static_cast<size_t>(MB));
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t nb = b / mblocks, mb = b % mblocks;
      const int64_t pn0 = nb * panels / nblocks, pn1 = (nb + 1) * panels / nblocks;
      const int64_t n0 = pn0 * k.nr, n1 = std::min(Cout, pn1 * k.nr);
      if (n1 <= n0) continue;
      const int64_t q = blk_q[mb];
      const Run& rd = runs[0][q / (nh * nw)];
      const Run& rh = runs[1][q / nw % nh];
      const Run& rw = runs[2][q % nw];
      const int64_t Ld = rd.j1 - rd.j0, Lh = rh.j1 - rh.j0, Lw = rw.j1 - rw.j0;
      const int64_t cnt = std::min(MB, N * Ld * Lh * Lw - blk_i[mb]);
      // The block's first pixel, then stepped through the box.
      int64_t r = blk_i[mb];
      int64_t jw = r % Lw;
      r /= Lw;
      int64_t jh = r % Lh;
      r /= Lh;
      int64_t jd = r % Ld, n = r / Ld;
      const bool empty = segs[q].empty();
      // Along a row of the box (jw = 0 .. Lw) the A pointer steps by sw and the output row by 1.
      const int64_t sw = p.s_[2] * C;
      const int64_t xw0 = (rw.j0 * p.s_[2] - p.p_[2] + rw.t0) * C;
      for (int64_t i = 0; i < cnt;) {
        const int64_t od = rd.j0 + jd, oh = rh.j0 + jh;
        const int64_t c0 = n * pix + (od * out[1] + oh) * out[2] + rw.j0 + jw;
        const uint8_t* x0 =
            empty ? x
                  : x + n * img + (od * p.s_[0] - p.p_[0] + rd.t0 * p.d_[0]) * plane_b +
                        (oh * p.s_[1] - p.p_[1] + rh.t0 * p.d_[1]) * row_b + xw0 + jw * sw;
        const int64_t run = std::min(Lw - jw, cnt - i);
        const int64_t step = empty ? 0 : sw;
        for (int64_t j = 0; j < run; ++j) {
          crow[i + j] = c0 + j;
          rows[i + j] = x0 + j * step;
        }
        i += run;
        jw = 0;
        if (++jh == Lh) {
          jh = 0;
          if (++jd == Ld) {
            jd = 0;
            ++n;
          }
        }
      }
      QGemmEpilogue e{col_off[q].data(), p.w_zp_i32_.data(), 0, nullptr, rq.bias_q, rq.mult,
                      rq.lo, rq.hi, rq.out_zp, a7};
      e.out_i32 = rq.out_i32;
      k.igemm(rows.data(), crow.data(), cnt, segs[q].data(),
                   static_cast<int64_t>(segs[q].size()), K, pb, Cout, n0, n1, e, y, Cout * es);
    }
  };
  const int64_t ntasks = mblocks * nblocks;
  if (serial) {
    task_range(0, ntasks);
    return;
  }
  // The groups' blocks differ in height (a corner's block is one pixel), so the tasks go to the
  // threads by their work, not their count: slot i takes the tasks whose work's midpoint lies in
  // [i, i + 1) / slots of the total. (By where a task's work starts, a 3x3 on 28x28 at batch 1,
  // 2 threads, gave one thread 474 of the 784 rows: the interior block starting at row 390 of
  // 392 went with the first; AVX2 1.10x FBGEMM's time there against 0.89x at 1 thread.)
  std::vector<int64_t> cum(static_cast<size_t>(ntasks) + 1, 0);
  for (int64_t b = 0; b < ntasks; ++b) {
    const int64_t nb = b / mblocks, mb = b % mblocks, q = blk_q[mb];
    const Run& rd = runs[0][q / (nh * nw)];
    const Run& rh = runs[1][q / nw % nh];
    const Run& rw = runs[2][q % nw];
    const int64_t size = N * (rd.j1 - rd.j0) * (rh.j1 - rh.j0) * (rw.j1 - rw.j0);
    const int64_t np = (nb + 1) * panels / nblocks - nb * panels / nblocks;
    cum[b + 1] = cum[b] + std::min(MB, size - blk_i[mb]) * np;
  }
  const int64_t total = cum[ntasks], slots = std::min(threads, ntasks);
  at::parallel_for(0, slots, 1, [&](int64_t s0, int64_t s1) {
    for (int64_t sl = s0; sl < s1; ++sl) {
      const auto first = [&](int64_t v) {  // the first task whose midpoint is >= v
        int64_t b = 0;
        while (b < ntasks && cum[b] + (cum[b + 1] - cum[b]) / 2 < v) ++b;
        return b;
      };
      task_range(first(sl * total / slots), sl + 1 == slots ? ntasks : first((sl + 1) * total / slots));
    }
  });
}

// Implicit GEMM for one output phase of a transposed conv (Phase::nseg > 0 on a transposed plan;
// packing: conv_packed_params.cpp). Phase position j (output o = r + j * s) reads, for tap kk,
// input i = j + c(kk) with c(kk) = (r + p - kk * d) / s. The input is copied once into a
// zero-point-padded NDHWC buffer (lo[i] before, hi[i] after, enough for every tap of the phase);
// then the A row of j is nseg = taps_d * taps_h spans of taps_w * C_in bytes (the W taps in
// descending order read consecutive pixels, dilation_w being 1), read in place, and the output
// rows are the phase's strided pixels (igemm's c_rows). Equal to run_phase's im2col result:
// the same products, with the padding's (A - a_zp) * w = 0.
void run_igemm_transposed(const ConvPlan& p, const Phase& ph, const uint8_t* x, int64_t N,
                          const int64_t in[3], uint8_t* y, const int64_t out[3],
                          const ConvRequant& rq) {
  const QGemmKernels& k = *p.gemm_;
  const int64_t C = p.Cin_, Cout = p.Cout_;
  int64_t P[3], cmin[3], cmax[3], lo[3], hi[3], ip[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t s = p.s_[i];
    P[i] = out[i] > ph.r[i] ? div_up(out[i] - ph.r[i], s) : 0;
    cmin[i] = INT64_MAX;
    cmax[i] = INT64_MIN;
    for (const int64_t kk : ph.taps[i]) {
      const int64_t v = ph.r[i] + p.p_[i] - kk * p.d_[i];  // divisible by s (the phase's taps)
      const int64_t c = v >= 0 ? v / s : -((-v) / s);
      cmin[i] = std::min(cmin[i], c);
      cmax[i] = std::max(cmax[i], c);
    }
    lo[i] = std::max<int64_t>(0, -cmin[i]);
    hi[i] = std::max<int64_t>(0, (P[i] - 1 + cmax[i]) - (in[i] - 1));
    ip[i] = in[i] + lo[i] + hi[i];
  }
  const int64_t pix = P[0] * P[1] * P[2], M = N * pix;
  if (M == 0) return;
  const int64_t Tw = static_cast<int64_t>(ph.taps[2].size());
  TORCH_INTERNAL_ASSERT(cmax[2] - cmin[2] == Tw - 1, "qplugin: transposed igemm W taps");
  const int64_t threads = at::get_num_threads();
  const int64_t K = ph.nseg * ph.kseg;
  const bool serial = threads <= 1 || M * Cout * K < kMinParallelMacs || at::in_parallel_region();
  const uint8_t zp = static_cast<uint8_t>(rq.in_zp);
  // The padded copy (rows of ip[2] * C bytes).
  const int64_t rowb = ip[2] * C;
  const std::unique_ptr<uint8_t[]> xpad = padded_copy(x, N, in, lo, hi, C, zp, serial);
  const uint8_t* xp = xpad.get();
  // One K range per (kd, kh) tap pair, relative to the pixel (j_d, j_h, j_w + c_w) of the
  // padded input, c_w the first (largest) W tap's offset.
  std::vector<kernels::gemm::IgemmSeg> segs(static_cast<size_t>(ph.nseg));
  {
    int64_t sg = 0;
    for (const int64_t td : ph.taps[0])
      for (const int64_t th : ph.taps[1]) {
        const int64_t cd = (ph.r[0] + p.p_[0] - td * p.d_[0]) / p.s_[0];
        const int64_t ch = (ph.r[1] + p.p_[1] - th * p.d_[1]) / p.s_[1];
        segs[sg] = {((cd + lo[0]) * ip[1] + (ch + lo[1])) * rowb + (cmin[2] + lo[2]) * C,
                    sg * ph.kseg, ph.kseg};
        ++sg;
      }
  }
  const std::vector<int32_t> col_off = zp_col_offsets(rq.in_zp, ph.col_sums, Cout);
  const int32_t a7 = input_7bit(k, rq.in_zp, x, N * in[0] * in[1] * in[2] * C);
  QGemmEpilogue e{col_off.data(), p.w_zp_i32_.data(), 0, nullptr, rq.bias_q, rq.mult,
                  rq.lo, rq.hi, rq.out_zp, a7};
  const IgemmTasks tasks(k, M, K, Cout, serial, threads);
  const int8_t* pb = ph.packed_ind.data_ptr<int8_t>();
  const int64_t img = ip[0] * ip[1] * rowb;
  const int64_t out_pix = out[0] * out[1] * out[2];
  auto task_range = [&](int64_t b0, int64_t b1) {
    std::vector<const uint8_t*> rows(static_cast<size_t>(tasks.MB));
    std::vector<int64_t> crows(static_cast<size_t>(tasks.MB));
    for (int64_t b = b0; b < b1; ++b) {
      int64_t m0, m1, n0, n1;
      tasks.task(b, M, Cout, k.nr, &m0, &m1, &n0, &n1);
      if (n1 <= n0) continue;
      int64_t n = m0 / pix, q = m0 % pix;
      int64_t jw = q % P[2];
      q /= P[2];
      int64_t jh = q % P[1], jd = q / P[1];
      for (int64_t m = m0; m < m1; ++m) {
        rows[m - m0] = xp + n * img + (jd * ip[1] + jh) * rowb + jw * C;
        crows[m - m0] = n * out_pix +
                        ((ph.r[0] + jd * p.s_[0]) * out[1] + (ph.r[1] + jh * p.s_[1])) * out[2] +
                        ph.r[2] + jw * p.s_[2];
        next_pixel(P[0], P[1], P[2], &n, &jd, &jh, &jw);
      }
      k.igemm(rows.data(), crows.data(), m1 - m0, segs.data(), ph.nseg, K, pb, Cout, n0, n1, e,
              y, Cout);
    }
  };
  if (serial) task_range(0, tasks.count());
  else at::parallel_for(0, tasks.count(), 1, task_range);
}

// One GEMM phase (the direct conv, or one output phase of a transposed conv).
void run_phase(const ConvPlan& p, const Phase& ph, const uint8_t* x, int64_t N,
               const int64_t in[3], uint8_t* y, const int64_t out[3], const ConvRequant& rq) {
  const bool transposed = p.kind_ == ConvPlan::Kind::kTransposed;
  const QGemmKernels& k = *p.gemm_;
  const int64_t G = p.groups_, Cin = p.Cin_, Cout = p.Cout_;
  const int64_t Cin_g = Cin / G, Cout_g = Cout / G, K = ph.K;
  // Phase grid: output o = r + j * s (transposed) or o = j (direct), j in [0, P).
  int64_t P[3], T[3];
  std::vector<int64_t> tab[3];  // tab[i][j * T + t] = input index of tap t, or -1 (padding)
  for (int i = 0; i < 3; ++i) {
    const int64_t s = p.s_[i];
    P[i] = transposed ? (out[i] > ph.r[i] ? div_up(out[i] - ph.r[i], s) : 0) : out[i];
    T[i] = static_cast<int64_t>(ph.taps[i].size());
    tab[i].resize(static_cast<size_t>(std::max<int64_t>(1, P[i] * T[i])));
    for (int64_t j = 0; j < P[i]; ++j)
      for (int64_t t = 0; t < T[i]; ++t) {
        const int64_t kk = ph.taps[i][t];
        int64_t ii;
        if (transposed) {
          const int64_t v = ph.r[i] + j * s + p.p_[i] - kk * p.d_[i];  // divisible by s
          ii = v >= 0 ? v / s : -1;
        } else {
          ii = j * s - p.p_[i] + kk * p.d_[i];
        }
        tab[i][j * T[i] + t] = ii >= 0 && ii < in[i] ? ii : -1;
      }
  }
  const int64_t pix = P[0] * P[1] * P[2];
  const int64_t M = N * pix;
  if (M == 0) return;
  const int64_t in_pix = in[0] * in[1] * in[2];
  const int64_t out_pix = out[0] * out[1] * out[2];
  // 1x1, stride 1, no padding: the NDHWC input is A itself (lda = C_in), no im2col.
  bool direct_a = !transposed && p.k_[0] * p.k_[1] * p.k_[2] == 1 && p.s_[0] == 1 &&
                        p.s_[1] == 1 && p.s_[2] == 1 && p.p_[0] == 0 && p.p_[1] == 0 &&
                        p.p_[2] == 0;
  // A transposed-conv phase with one tap per dimension whose grid is the input grid itself
  // (e.g. kernel 2, stride 2, no padding): A is the input too.
  if (transposed) {
    bool ident = true;
    for (int i = 0; i < 3 && ident; ++i) {
      ident = T[i] == 1 && P[i] == in[i];
      for (int64_t j = 0; j < P[i] && ident; ++j) ident = tab[i][j] == j;
    }
    direct_a = ident;
  }
  // A whole row of W taps is one contiguous input span when groups == 1 and dilation_w == 1.
  const bool span_w = !transposed && G == 1 && p.d_[2] == 1 && T[2] > 1;

  // Per-call column offsets (qgemm.h): a_zp * colsum[n] - K * a_zp * w_zp[n], wrapped.
  std::vector<int32_t> col_off(static_cast<size_t>(Cout));
  for (int64_t n = 0; n < Cout; ++n) {
    const int64_t v = static_cast<int64_t>(rq.in_zp) * ph.col_sums[n] -
                      K * rq.in_zp * static_cast<int64_t>(p.w_zp_i32_[n]);
    col_off[n] = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(v)));
  }

  const int64_t Kb = std::max<int64_t>(K, 1);
  int64_t MB = direct_a ? 192 : kIm2colBytes / Kb;
  const int64_t ra = row_align(k);
  MB = std::max<int64_t>(ra, std::min<int64_t>(512, MB / ra * ra));
  const int64_t panels = div_up(Cout_g, k.nr);
  const int64_t threads = at::get_num_threads();
  const int64_t macs = M * Cout * Kb;
  const bool serial = threads <= 1 || macs < kMinParallelMacs || at::in_parallel_region();
  int64_t mblocks, nblocks = 1;
  if (!serial && M <= MB && M < Cout_g && panels >= threads) {
    // Fewer rows than columns, all in one block: the columns split only (IgemmTasks).
    MB = div_up(M, ra) * ra;
    mblocks = 1;
    nblocks = std::min(panels, 2 * threads);
  } else {
    if (!serial) MB = balanced_rows(M, MB, ra, threads);
    mblocks = div_up(M, MB);
    if (!serial && mblocks < 2 * threads) nblocks = std::min(panels, div_up(2 * threads, mblocks));
  }
  const uint8_t zp = static_cast<uint8_t>(rq.in_zp);

  auto task_range = [&](int64_t b0, int64_t b1) {
    std::vector<uint8_t> abuf(direct_a ? 0 : static_cast<size_t>(MB * Kb));
    std::vector<int32_t> rs(p.any_w_zp_ ? static_cast<size_t>(MB) : 0);
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t mb = b / nblocks, nb = b % nblocks;
      const int64_t m0 = mb * MB, m1 = std::min(M, m0 + MB), rows = m1 - m0;
      const int64_t pn0 = nb * panels / nblocks, pn1 = (nb + 1) * panels / nblocks;
      const int64_t n0 = pn0 * k.nr, n1 = std::min(Cout_g, pn1 * k.nr);
      if (n1 <= n0) continue;
      for (int64_t g = 0; g < G; ++g) {
        const uint8_t* a;
        int64_t lda;
        if (direct_a) {
          a = x + m0 * Cin + g * Cin_g;
          lda = Cin;
        } else {
          // im2col of rows [m0, m1), group g: row = (tap d, tap h, tap w, c) over C_in/g.
          // The pixel index (n, jd, jh, jw) of row m advances like an odometer (no divisions).
          uint8_t* dst = abuf.data();
          // Locals, not captures: the byte stores below may alias anything the lambda reads
          // through a reference, which would reload every one of them per copy.
          const int64_t T0 = T[0], T1 = T[1], T2 = T[2], P0 = P[0], P1 = P[1], P2 = P[2];
          const int64_t IH = in[1], IWC = in[2] * Cin, Cg = Cin_g, CinL = Cin;
          const int64_t* const tab0 = tab[0].data();
          const int64_t* const tab1 = tab[1].data();
          const int64_t* const tab2 = tab[2].data();
          const bool spanw = span_w;
          int64_t n = m0 / pix, jw, jh, jd;
          {
            int64_t q = m0 % pix;
            jw = q % P2;
            q /= P2;
            jh = q % P1;
            jd = q / P1;
          }
          const int64_t wbytes = T2 * Cg;
          for (int64_t m = m0; m < m1; ++m) {
            const uint8_t* img = x + n * in_pix * CinL + g * Cg;
            const int64_t* tw = tab2 + jw * T2;
            const bool w_inside = spanw && tw[0] >= 0 && tw[T2 - 1] >= 0;
            const int64_t* tdp = tab0 + jd * T0;
            const int64_t* thp = tab1 + jh * T1;
            for (int64_t td = 0; td < T0; ++td) {
              const int64_t id = tdp[td];
              for (int64_t th = 0; th < T1; ++th) {
                const int64_t ih = thp[th];
                if (id < 0 || ih < 0) {
                  std::memset(dst, zp, static_cast<size_t>(wbytes));
                  dst += wbytes;
                  continue;
                }
                const uint8_t* rowp = img + (id * IH + ih) * IWC;
                if (w_inside) {
                  copy_bytes(dst, rowp + tw[0] * CinL, wbytes);
                  dst += wbytes;
                  continue;
                }
                for (int64_t t = 0; t < T2; ++t, dst += Cg) {
                  if (tw[t] < 0) std::memset(dst, zp, static_cast<size_t>(Cg));
                  else copy_bytes(dst, rowp + tw[t] * CinL, Cg);
                }
              }
            }
            next_pixel(P0, P1, P2, &n, &jd, &jh, &jw);
          }
          a = abuf.data();
          lda = Kb;
        }
        QGemmEpilogue e{col_off.data() + g * Cout_g,
                        p.w_zp_i32_.data() + g * Cout_g,
                        0,
                        nullptr,
                        rq.bias_q + g * Cout_g,
                        rq.mult + g * Cout_g,
                        rq.lo,
                        rq.hi,
                        rq.out_zp};
        e.out_i32 = rq.out_i32;
        if (p.any_w_zp_) {
          k.row_sums(a, lda, rows, K, rs.data());
          e.row_sums = rs.data();
        }
        const int8_t* pb = ph.packed.data_ptr<int8_t>() + g * ph.group_bytes;
        if (transposed) {
          // Straight into the output, one GEMM per run of phase rows along W: their output
          // pixels are s_w pixels apart (C row stride s_w * C_out).
          int64_t n = m0 / pix, q = m0 % pix;
          int64_t jw = q % P[2];
          q /= P[2];
          int64_t jh = q % P[1], jd = q / P[1];
          for (int64_t m = m0; m < m1;) {
            const int64_t len = std::min(m1 - m, P[2] - jw);
            const int64_t od = ph.r[0] + jd * p.s_[0], oh = ph.r[1] + jh * p.s_[1],
                          ow = ph.r[2] + jw * p.s_[2];
            uint8_t* drow = y + (n * out_pix + (od * out[1] + oh) * out[2] + ow) * Cout;
            QGemmEpilogue es = e;
            if (p.any_w_zp_) es.row_sums = rs.data() + (m - m0);
            k.gemm(a + (m - m0) * lda, lda, len, K, pb, Cout_g, n0, n1, es, drow + g * Cout_g,
                   p.s_[2] * Cout);
            m += len;
            jw = 0;
            if (++jh == P[1]) {
              jh = 0;
              if (++jd == P[0]) {
                jd = 0;
                ++n;
              }
            }
          }
        } else {
          const int64_t es = rq.out_i32 ? 4 : 1;  // output element bytes
          k.gemm(a, lda, rows, K, pb, Cout_g, n0, n1, e, y + (m0 * Cout + g * Cout_g) * es,
                 Cout * es);
        }
      }
    }
  };
  if (serial) task_range(0, mblocks * nblocks);
  else at::parallel_for(0, mblocks * nblocks, 1, task_range);
}

// 8x8 byte transpose in registers: r[i] holds bytes x[i][0..7] (little endian) on entry and
// x[0..7][i] on exit. Three rounds of swapping halves, quarters and bytes (exact: a copy).
inline void transpose8x8_u8(uint64_t r[8]) {
  for (int i = 0; i < 4; ++i) {
    const uint64_t t = ((r[i] >> 32) ^ r[i + 4]) & 0x00000000FFFFFFFFull;
    r[i] ^= t << 32;
    r[i + 4] ^= t;
  }
  for (int i : {0, 1, 4, 5}) {
    const uint64_t t = ((r[i] >> 16) ^ r[i + 2]) & 0x0000FFFF0000FFFFull;
    r[i] ^= t << 16;
    r[i + 2] ^= t;
  }
  for (int i : {0, 2, 4, 6}) {
    const uint64_t t = ((r[i] >> 8) ^ r[i + 1]) & 0x00FF00FF00FF00FFull;
    r[i] ^= t << 8;
    r[i + 1] ^= t;
  }
}

}  // namespace

namespace {

// Pixels [p0, p1) of one image with C (a compile-time 1..4, e.g. an RGB stem) channels: the
// channel loop unrolls, one load and one store per byte (no 8x8 transposes of mostly empty
// blocks; ~5x faster for C = 3 than the general path).
template <int C>
void nchw_to_nhwc_few(const uint8_t* xs, uint8_t* yd, int64_t HW, int64_t p0, int64_t p1) {
  for (int64_t p = p0; p < p1; ++p) {
#pragma GCC unroll 4
    for (int c = 0; c < C; ++c) yd[p * C + c] = xs[c * HW + p];
  }
}

}  // namespace

void nchw_to_nhwc_u8(const uint8_t* x, int64_t N, int64_t C, int64_t HW, uint8_t* y) {
  constexpr int64_t kTile = 64;  // pixels per task: whole cache lines of every channel row
  const int64_t pblocks = div_up(HW, kTile);
  // The ISA's transposing copy (16 x 64 byte blocks in zmm registers) when it has one.
  const auto copy8 = C >= 16 ? kernels::table().copy8_nchw_to_nhwc : nullptr;
  auto body = [&](int64_t b0, int64_t b1) {
    if (copy8 != nullptr) {
      for (int64_t b = b0; b < b1; ++b) {
        const int64_t n = b / pblocks, p0 = (b % pblocks) * kTile;
        copy8(x + n * C * HW, y + n * C * HW, C, HW, p0, std::min(HW, p0 + kTile));
      }
      return;
    }
    for (int64_t b = b0; b < b1; ++b) {
      const int64_t n = b / pblocks, p0 = (b % pblocks) * kTile;
      const int64_t p1 = std::min(HW, p0 + kTile);
      const uint8_t* xs = x + n * C * HW;
      uint8_t* yd = y + n * C * HW;
      switch (C) {
        case 1: std::memcpy(yd + p0, xs + p0, static_cast<size_t>(p1 - p0)); continue;
        case 2: nchw_to_nhwc_few<2>(xs, yd, HW, p0, p1); continue;
        case 3: nchw_to_nhwc_few<3>(xs, yd, HW, p0, p1); continue;
        case 4: nchw_to_nhwc_few<4>(xs, yd, HW, p0, p1); continue;
        default: break;
      }
      const int64_t c8 = C / 8 * 8;
      int64_t p = p0;
      // 8 pixels x 8 channels at a time (8-byte loads and stores), then the edges bytewise.
      for (; p + 8 <= p1; p += 8) {
        if (C < 8) {
          // Fewer than 8 channels (e.g. an RGB stem): the 8 pixels are 8 * C contiguous bytes;
          // assemble them in a staging buffer (each 8-byte store overlaps the next pixel's
          // bytes, which that pixel rewrites) and copy it out in 8-byte moves.
          uint64_t r[8] = {0, 0, 0, 0, 0, 0, 0, 0};
          for (int64_t i = 0; i < C; ++i) std::memcpy(&r[i], xs + i * HW + p, 8);
          transpose8x8_u8(r);
          uint8_t st[72];
          for (int i = 0; i < 8; ++i) std::memcpy(st + i * C, &r[i], 8);
          for (int64_t b = 0; b < 8 * C; b += 8) std::memcpy(yd + p * C + b, st + b, 8);
          continue;
        }
        for (int64_t c = 0; c < c8; c += 8) {
          uint64_t r[8];
          for (int i = 0; i < 8; ++i) std::memcpy(&r[i], xs + (c + i) * HW + p, 8);
          transpose8x8_u8(r);
          for (int i = 0; i < 8; ++i) std::memcpy(yd + (p + i) * C + c, &r[i], 8);
        }
        for (int64_t q = p; q < p + 8; ++q)
          for (int64_t c = c8; c < C; ++c) yd[q * C + c] = xs[c * HW + q];
      }
      for (; p < p1; ++p)
        for (int64_t c = 0; c < C; ++c) yd[p * C + c] = xs[c * HW + p];
    }
  };
  if (N * C * HW < (int64_t{1} << 16) || at::in_parallel_region()) body(0, N * pblocks);
  else at::parallel_for(0, N * pblocks, 8, body);
}

bool conv_reads_nchw(const ConvPlan& p) {
  if (p.kind_ != ConvPlan::Kind::kDepthwise || p.dw_->rows_nchw == nullptr || p.Cout_ != p.Cin_)
    return false;
  if (p.dw_->nchw_any_w_zp)  // 1x3x3, dilation_w 1 (dwconv.h)
    return p.k_[0] == 1 && p.k_[1] == 3 && p.k_[2] == 3 && p.d_[2] == 1;
  return !p.dw_w3_.empty() && p.d_[1] == 1 && p.d_[2] == 1;
}

// Whether a conv that could skip its padding (run_igemm_skip) takes the padded copy (run_igemm)
// instead: on AMX, for output planes of at most 196 pixels (ResNet's 14x14 and 7x7 stages). There
// the skipping groups are small (a 7x7 plane's edges are runs of 5 pixels, under the 16 rows of
// an AMX tile, so they run on the zmm kernel and each group reads all the weights again), while
// the padded copy is a few KB. 3x3, 1 thread, AMX, skip -> padded: 512 -> 512 on 7x7 batch 1
// 0.269 -> 0.205 ms, 256 -> 256 on 14x14 batch 1 0.150 -> 0.114, batch 8 0.84 -> 0.76; 28x28
// equal, 56x56 0.142 -> 0.163 (the zmm kernel: skipping is faster at every size).
namespace {
bool padded_on_amx(const ConvPlan& p, const int64_t out[3]) {
  return p.gemm_->isa == kernels::Isa::kAvx512Vnni && kernels::amx_enabled() &&
         out[0] * out[1] * out[2] <= 196;
}
}  // namespace

void conv_forward(const ConvPlan& p, const uint8_t* x, int64_t N, const int64_t in[3],
                  uint8_t* y, const int64_t out[3], const ConvRequant& rq, bool x_nchw) {
  TORCH_CHECK(!x_nchw || conv_reads_nchw(p), "qplugin: internal error: NCHW conv input");
  TORCH_CHECK(!rq.out_i32 || p.kind_ == ConvPlan::Kind::kGemm,
              "qplugin: internal error: int32 conv output on a non-GEMM plan");
  if (p.kind_ == ConvPlan::Kind::kDepthwise) {
    run_depthwise(p, x, N, in, y, out, rq, x_nchw);
    return;
  }
  for (const auto& ph : p.phases_) {
    // Phase::nseg > 0 only where the plan's kernels have igemm (conv_packed_params.cpp).
    if (ph.nseg > 0 && p.kind_ == ConvPlan::Kind::kTransposed)
      run_igemm_transposed(p, ph, x, N, in, y, out, rq);
    else if (ph.nseg > 0 && !ph.tap_col_sums.empty() && !padded_on_amx(p, out))
      run_igemm_skip(p, ph, x, N, in, y, out, rq);
    else if (ph.nseg > 0) run_igemm(p, ph, x, N, in, y, out, rq);
    else run_phase(p, ph, x, N, in, y, out, rq);
  }
}

}  // namespace driver
}  // namespace qplugin
