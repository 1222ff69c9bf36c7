// Depthwise conv, AVX512-VNNI: 16 channels per zmm, VPMOVZXBD + VPDPWSSD (exact, dwconv.h);
// 64 channels (4 accumulators) per step, masked tail. See dwconv.h.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <type_traits>

#include <cstring>

#include "common/inline.h"
#include "kernels/conv/dwconv_impl.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace avx512vnni {
namespace {

inline __m512i requant16(__m512i acc, const DwConvArgs& a, int64_t c, __mmask16 m) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  f = _mm512_add_ps(f, _mm512_maskz_loadu_ps(m, a.bias_q + c));
  f = _mm512_mul_ps(f, _mm512_maskz_loadu_ps(m, a.mult + c));
  f = _mm512_max_ps(f, _mm512_set1_ps(a.lo));
  f = _mm512_min_ps(f, _mm512_set1_ps(a.hi));
  return _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(a.out_zp));
}

inline __m512i ld16(const uint8_t* p) {
  return _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

inline __m512i requant16p(__m512i acc, const DwConvArgs& a, int64_t idx) {
  __m512 f = _mm512_cvtepi32_ps(acc);
  f = _mm512_add_ps(f, _mm512_loadu_ps(a.bias_q_p + idx));
  f = _mm512_mul_ps(f, _mm512_loadu_ps(a.mult_p + idx));
  f = _mm512_max_ps(f, _mm512_set1_ps(a.lo));
  f = _mm512_min_ps(f, _mm512_set1_ps(a.hi));
  return _mm512_add_epi32(_mm512_cvtps_epi32(f), _mm512_set1_epi32(a.out_zp));
}

struct PixelAvx512 {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    const int64_t ntaps = KV > 0 ? KV : ntaps_rt;
    const int64_t C = a.C;
    int64_t c = 0;
    if (a.w8 != nullptr) {
      // Byte lanes: one 64-byte load of X per tap feeds four VPDPBUSD whose weights have a
      // single non-zero byte per dword, so each dword gets exactly one product (exact).
      // A last block of at most 32 channels goes to the 16-channel VPDPWSSD loop below instead
      // (same exact sums, a quarter of the VPDPBUSD work for 16 channels; e.g. C = 144).
      for (int64_t cb = 0; C - c > 32; c += 64, ++cb) {
        const int64_t n = C - c < 64 ? C - c : 64;
        const __mmask64 m = n == 64 ? ~__mmask64{0} : ((__mmask64{1} << n) - 1);
        __m512i s0 = _mm512_loadu_si512(a.acc_init_p + c);
        __m512i s1 = _mm512_loadu_si512(a.acc_init_p + c + 16);
        __m512i s2 = _mm512_loadu_si512(a.acc_init_p + c + 32);
        __m512i s3 = _mm512_loadu_si512(a.acc_init_p + c + 48);
        const int8_t* w = a.w8 + cb * ntaps * 256;
        for (int64_t t = 0; t < ntaps; ++t, w += 256) {
          const __m512i xv = _mm512_maskz_loadu_epi8(m, taps[t] + c);
          s0 = _mm512_dpbusd_epi32(s0, xv, _mm512_loadu_si512(w));
          s1 = _mm512_dpbusd_epi32(s1, xv, _mm512_loadu_si512(w + 64));
          s2 = _mm512_dpbusd_epi32(s2, xv, _mm512_loadu_si512(w + 128));
          s3 = _mm512_dpbusd_epi32(s3, xv, _mm512_loadu_si512(w + 192));
        }
        // q_j in [0, 255]: dword i of the output = bytes (4i, 4i+1, 4i+2, 4i+3) in order.
        __m512i q = requant16p(s0, a, c);
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s1, a, c + 16), 8));
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s2, a, c + 32), 16));
        q = _mm512_or_si512(q, _mm512_slli_epi32(requant16p(s3, a, c + 48), 24));
        _mm512_mask_storeu_epi8(y + c, m, q);
      }
    }
    for (; c + 64 <= C; c += 64) {
      __m512i s0 = _mm512_loadu_si512(a.acc_init + c);
      __m512i s1 = _mm512_loadu_si512(a.acc_init + c + 16);
      __m512i s2 = _mm512_loadu_si512(a.acc_init + c + 32);
      __m512i s3 = _mm512_loadu_si512(a.acc_init + c + 48);
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const uint8_t* x = taps[t] + c;
        s0 = _mm512_dpwssd_epi32(s0, ld16(x), _mm512_loadu_si512(w));
        s1 = _mm512_dpwssd_epi32(s1, ld16(x + 16), _mm512_loadu_si512(w + 16));
        s2 = _mm512_dpwssd_epi32(s2, ld16(x + 32), _mm512_loadu_si512(w + 32));
        s3 = _mm512_dpwssd_epi32(s3, ld16(x + 48), _mm512_loadu_si512(w + 48));
      }
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c),
                       _mm512_cvtepi32_epi8(requant16(s0, a, c, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 16),
                       _mm512_cvtepi32_epi8(requant16(s1, a, c + 16, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 32),
                       _mm512_cvtepi32_epi8(requant16(s2, a, c + 32, 0xFFFF)));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(y + c + 48),
                       _mm512_cvtepi32_epi8(requant16(s3, a, c + 48, 0xFFFF)));
    }
    for (; c < C; c += 16) {
      const int64_t n = C - c < 16 ? C - c : 16;
      const __mmask16 m = static_cast<__mmask16>((1u << n) - 1u);
      __m512i s0 = _mm512_maskz_loadu_epi32(m, a.acc_init + c);
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const __m512i xv = _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, taps[t] + c));
        s0 = _mm512_dpwssd_epi32(s0, xv, _mm512_maskz_loadu_epi32(m, w));
      }
      _mm_mask_storeu_epi8(y + c, m, _mm512_cvtepi32_epi8(requant16(s0, a, c, m)));
    }
  }
};

// 1x3x3, dilation 1, byte weights (DwConvArgs::w3): every input row the output rows need is
// rearranged once into R[cb][ow] = 64 bytes whose dword i is
// (X[iw][c], X[iw + 1][c], X[iw + 2][c], 0) with iw = ow * sw - pw, c = 16 cb + i (zero point
// outside the input), kept in a ring of 3 rows. An output pixel is then three VPDPBUSD per 16
// channels (one per kernel row) instead of nine taps.
inline __m512i zx16(const uint8_t* p, __mmask16 m) {
  return _mm512_cvtepu8_epi32(_mm_maskz_loadu_epi8(m, p));
}

// Entries of a rearranged row: one window per output for 3x3; for 5x5 also the 4 / sw windows
// past the last output, whose first byte is an output's fifth tap (rows_quads).
template <int K>
inline int64_t row_entries(const DwConvArgs& a) {
  return K == 3 ? a.OW : a.OW + 4 / a.sw;
}
// Entries per 16-channel block of a rearranged row (rounded up to 64: the NCHW stride-1
// rearrangement writes whole 64-pixel chunks).
template <int K = 3>
inline int64_t ow_stride(const DwConvArgs& a) { return (row_entries<K>(a) + 63) / 64 * 64; }

// The strided form of rearrange_block for full 16-channel blocks and outputs [ow0, ow1) whose
// T (3 or 4) input pixels lie inside the row: the T 16-byte channel runs in one zmm, then one
// VPERMB places byte i of run j at byte 4i + j (for T = 3 byte 3 of each dword zeroed by the
// mask). Four operations per output instead of nine (three zero-extending loads, two shifts, a
// merge).
template <int T>
__attribute__((target("avx512vbmi"))) void rearrange_strided_vbmi(
    const uint8_t* xrow, int64_t C, int64_t c, int64_t sw, int64_t pw, int64_t ow0, int64_t ow1,
    uint8_t* d) {
  alignas(64) uint8_t idx_b[64];
  for (int i = 0; i < 16; ++i) {
    for (int j = 0; j < 4; ++j) idx_b[4 * i + j] = static_cast<uint8_t>(j < T ? 16 * j + i : 0);
  }
  const __m512i idx = _mm512_load_si512(idx_b);
  // Bytes 0..T-1 of each dword.
  const __mmask64 keep = T == 3 ? 0x7777777777777777ull : ~0ull;
  for (int64_t ow = ow0; ow < ow1; ++ow) {
    const uint8_t* p = xrow + (ow * sw - pw) * C + c;
    __m512i v = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + C)), 1);
    v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 2 * C)), 2);
    if constexpr (T == 4) {
      v = _mm512_inserti32x4(v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 3 * C)), 3);
    }
    _mm512_storeu_si512(d + ow * 64, _mm512_maskz_permutexvar_epi8(keep, idx, v));
  }
}

// One 16-channel block of one rearranged row: channel c of pixel w at xrow + w * C + c;
// m: the block's channels (the others read 0). Entry e gets the window of T (3 or 4) pixels
// from iw = e * sw - pw, E entries (row_entries).
template <int T>
void rearrange_block(const DwConvArgs& a, const uint8_t* xrow, int64_t C, int64_t c,
                     __mmask16 m, uint8_t* d, int64_t E) {
  const int64_t IW = a.IW;
  const __m512i zpv = _mm512_set1_epi32(a.zrow[0]);
  auto u = [&](int64_t iw) {
    if (iw < 0 || iw >= IW) return zpv;
    const uint8_t* p = xrow + iw * C + c;
    return m == 0xFFFF ? _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)))
                       : zx16(p, m);
  };
  // A window from its T zero-extended pixels: pixel kw in byte kw of each dword (one
  // three-input OR; the pixels as values: through an array the 5x5 stride-1 rows ran 25% slower).
  auto window = [](__m512i p0, __m512i p1, __m512i p2, __m512i p3) {
    const __m512i v = _mm512_ternarylogic_epi32(p0, _mm512_slli_epi32(p1, 8),
                                                _mm512_slli_epi32(p2, 16), 0xFE);
    return T == 3 ? v : _mm512_or_si512(v, _mm512_slli_epi32(p3, 24));
  };
  if (a.sw == 1) {
    // Stride 1: a sliding window of T zero-extended pixels, one new load per output.
    __m512i u0 = u(-a.pw), u1 = u(1 - a.pw), u2 = u(2 - a.pw);
    for (int64_t ow = 0; ow < E; ++ow) {
      const __m512i u3 = T == 4 ? u(ow + 3 - a.pw) : zpv;
      _mm512_storeu_si512(d + ow * 64, window(u0, u1, u2, u3));
      u0 = u1;
      u1 = u2;
      u2 = T == 4 ? u3 : u(ow + 3 - a.pw);
    }
    return;
  }
  // Outputs whose T pixels lie inside the row: [in0, in1).
  const int64_t in0 = (a.pw + a.sw - 1) / a.sw;
  const int64_t in1 = IW - T + a.pw >= 0 ? std::min(E, (IW - T + a.pw) / a.sw + 1) : 0;
  static const bool vbmi = cpu_has_vbmi();
  const bool fast = vbmi && m == 0xFFFF && in0 < in1;
  for (int64_t ow = 0; ow < E; ++ow) {
    if (fast && ow == in0) {
      rearrange_strided_vbmi<T>(xrow, C, c, a.sw, a.pw, in0, in1, d);
      ow = in1 - 1;
      continue;
    }
    const int64_t iw = ow * a.sw - a.pw;
    _mm512_storeu_si512(d + ow * 64, window(u(iw), u(iw + 1), u(iw + 2),
                                             T == 4 ? u(iw + 3) : zpv));
  }
}

inline __mmask16 block_mask(int64_t C, int64_t c) {
  const int64_t n = C - c < 16 ? C - c : 16;
  return static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
}

// NDHWC input row (IW pixels of C bytes), windows of T pixels for a KxK filter.
template <int K>
void rearrange_row(const DwConvArgs& a, const uint8_t* xrow, int64_t nb, uint8_t* dst,
                   uint8_t* /*tmp*/) {
  constexpr int T = K == 3 ? 3 : 4;
  for (int64_t cb = 0; cb < nb; ++cb)
    rearrange_block<T>(a, xrow, a.C, cb * 16, block_mask(a.C, cb * 16),
                       dst + cb * ow_stride<K>(a) * 64, row_entries<K>(a));
}

// transpose16x16 (on __m512i: four 128-bit lanes at once), unpack_quad, store_columns.
#include "kernels/simd/byte_transpose.h"  // inside this ISA namespace

// NCHW input row: channel c at xrow + c * plane. Each 16-channel block is transposed into tmp
// ([round_up(IW, 64)][16] bytes, channels past C zero) and rearranged from there.
// NCHW, stride_w 1: the window of output ow is the 4 bytes X[c][iw .. iw + 3] of each channel
// row (byte 3 meets a zero weight), iw = ow - pw. Per 64 outputs and shift s in 0..3: one load
// of 64 bytes per channel starting at iw(ow0 + s) (masked: bytes outside the row read the zero
// point), whose dword q is the window of output ow0 + 4q + s; a 16x16 dword transpose over the
// 16 channels then yields those 16 outputs' rearranged vectors.
void rearrange_row_nchw_s1(const DwConvArgs& a, const uint8_t* xrow, int64_t nb, uint8_t* dst) {
  const int64_t C = a.C, IW = a.IW, plane = a.ID * a.IH * a.IW, OWp = ow_stride(a);
  const __m512i zpb = _mm512_set1_epi8(static_cast<char>(a.zrow[0]));
  for (int64_t cb = 0; cb < nb; ++cb) {
    const int64_t c0 = cb * 16;
    uint8_t* d = dst + cb * OWp * 64;
    // The next input row of these channels (usually the next one rearranged): C planes are C
    // streams, more than the hardware prefetchers follow (as the avx2 build_pairs_nchw).
    for (int64_t k = 0; k < 16 && c0 + k < C; ++k)
      for (int64_t off = 0; off < IW + 63; off += 64)
        _mm_prefetch(reinterpret_cast<const char*>(xrow + (c0 + k) * plane + IW + off),
                     _MM_HINT_T0);
    for (int64_t ow0 = 0; ow0 < a.OW; ow0 += 64) {
      for (int s = 0; s < 4; ++s) {
        const int64_t b = ow0 + s - a.pw;  // input column of byte 0
        const int64_t lo = b < 0 ? -b : 0, hi = IW - b < 64 ? IW - b : 64;
        __mmask64 m = 0;
        if (hi > lo) {
          const __mmask64 below_hi = hi >= 64 ? ~__mmask64{0} : ((__mmask64{1} << hi) - 1);
          const __mmask64 below_lo = (__mmask64{1} << lo) - 1;
          m = below_hi & ~below_lo;
        }
        __m512i r[16];
        for (int k = 0; k < 16; ++k)
          r[k] = c0 + k < C ? _mm512_mask_loadu_epi8(zpb, m, xrow + (c0 + k) * plane + b)
                            : _mm512_setzero_si512();
        __m512i u[16];
        for (int i = 0; i < 4; ++i) unpack_quad<32>(r + 4 * i, u + 4 * i);
        // u[4i + e] lane L: channels 4i..4i+3 of window q = 4L + e.
        for (int e = 0; e < 4; ++e) {
          const __m512i a0 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0x44);
          const __m512i a1 = _mm512_shuffle_i32x4(u[e], u[4 + e], 0xEE);
          const __m512i b0 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0x44);
          const __m512i b1 = _mm512_shuffle_i32x4(u[8 + e], u[12 + e], 0xEE);
          const __m512i o[4] = {_mm512_shuffle_i32x4(a0, b0, 0x88),
                                _mm512_shuffle_i32x4(a0, b0, 0xDD),
                                _mm512_shuffle_i32x4(a1, b1, 0x88),
                                _mm512_shuffle_i32x4(a1, b1, 0xDD)};
          for (int L = 0; L < 4; ++L)
            _mm512_storeu_si512(d + (ow0 + 4 * (4 * L + e) + s) * 64, o[L]);
        }
      }
    }
  }
}

void rearrange_row_nchw(const DwConvArgs& a, const uint8_t* xrow, int64_t nb, uint8_t* dst,
                        uint8_t* tmp) {
  if (a.sw == 1) {
    rearrange_row_nchw_s1(a, xrow, nb, dst);
    return;
  }
  const int64_t C = a.C, IW = a.IW, plane = a.ID * a.IH * a.IW;
  for (int64_t cb = 0; cb < nb; ++cb) {
    const int64_t c0 = cb * 16;
    for (int64_t p0 = 0; p0 < IW; p0 += 64) {
      const int64_t np = IW - p0 < 64 ? IW - p0 : 64;
      const __mmask64 pm = np == 64 ? ~__mmask64{0} : ((__mmask64{1} << np) - 1);
      __m512i r[16], t[16];
      for (int k = 0; k < 16; ++k)
        r[k] = c0 + k < C ? _mm512_maskz_loadu_epi8(pm, xrow + (c0 + k) * plane + p0)
                          : _mm512_setzero_si512();
      transpose16x16(r, t);
      store_columns(t, tmp + p0 * 16, /*ld=*/16);
    }
    rearrange_block<3>(a, tmp, 16, 0, 0xFFFF, dst + cb * ow_stride(a) * 64, a.OW);
  }
}

// 1x3x3 (w3) and 1x5x5 (w5, channels-last, stride_w 1 or 2) filters, dilation 1. A 5x5 kernel
// row is two VPDPBUSD: taps 0..3 on the window of output ow (4 pixels from iw = ow * sw - pw),
// tap 4 on the window 4 / sw entries further (its first byte is pixel iw + 4; the weights of
// its other three bytes are 0), so one rearranged row serves both.
template <bool NCHW, int K>
void rows_quads(const DwConvArgs& a, int64_t r0, int64_t r1) {
  static_assert(K == 3 || (K == 5 && !NCHW), "rows_quads: 3x3, or 5x5 channels-last");
  constexpr int NWK = K == 3 ? 1 : 2;  // weight vectors per kernel row
  const int64_t C = a.C, nb = (C + 15) / 16, OW = a.OW;
  const int64_t es = ow_stride<K>(a);  // entries per block of a rearranged row
  const int64_t row_bytes = es * nb * 64;
  const int64_t t4 = K == 5 ? 4 / a.sw : 0;  // entry offset of a 5x5 row's fifth tap
  // K ring slots + one row of zero-point bytes (input rows in the padding).
  const int64_t tmp_bytes = NCHW ? (a.IW + 63) / 64 * 64 * 16 : 0;
  uint8_t* buf = new uint8_t[static_cast<size_t>((K + 1) * row_bytes + tmp_bytes)];
  uint8_t* tmp = buf + (K + 1) * row_bytes;
  uint8_t* zrow = buf + K * row_bytes;
  std::memset(zrow, a.zrow[0], static_cast<size_t>(row_bytes));
  int64_t slot_key[K];
  for (int k = 0; k < K; ++k) slot_key[k] = -1;
  const __m512 lo = _mm512_set1_ps(a.lo), hi = _mm512_set1_ps(a.hi);
  const __m512i ozp = _mm512_set1_epi32(a.out_zp);
  // u8 x s8 byte products (the w3 / w5 forms): |x * w| <= 255 * 128.
  const bool pack_clamps = dw_pack_clamps(a, K * K, 255.0 * 128);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t od = r / a.OH, oh = r % a.OH;
    const int64_t id = od * a.sd - a.pd;
    const bool plane_in = id >= 0 && id < a.ID;
    const uint8_t* rr[K];
    for (int64_t kh = 0; kh < K; ++kh) {
      const int64_t ih = oh * a.sh - a.ph + kh;
      if (!plane_in || ih < 0 || ih >= a.IH) {
        rr[kh] = zrow;
        continue;
      }
      const int64_t key = id * a.IH + ih, slot = ih % K;
      uint8_t* dst = buf + slot * row_bytes;
      if (slot_key[slot] != key) {
        if constexpr (NCHW) rearrange_row_nchw(a, a.x + key * a.IW, nb, dst, tmp);
        else rearrange_row<K>(a, a.x + key * a.IW * C, nb, dst, tmp);
        slot_key[slot] = key;
      }
      rr[kh] = dst;
    }
    // NDHWC: the rows the next output row adds, prefetched over this row's blocks (NCHW rows
    // prefetch per channel in rearrange_row_nchw_s1).
    DwNextRowsPrefetch next(a, r, NCHW ? r : r1, oh, id, K - 1, nb);
    uint8_t* yrow = a.y + r * OW * C;
    for (int64_t cb = 0; cb < nb; ++cb) {
      next.step();
      const int64_t c = cb * 16;
      const int64_t n = C - c < 16 ? C - c : 16;
      const __mmask16 m = static_cast<__mmask16>(n >= 16 ? 0xFFFFu : (1u << n) - 1u);
      // Weight vector j of kernel row kh: wv[kh * NWK + j] (w3 / w5 forms, dwconv.h).
      __m512i wv[K * NWK];
      const int8_t* wsrc = K == 3 ? a.w3 : a.w5;
      for (int j = 0; j < K * NWK; ++j) wv[j] = _mm512_loadu_si512(wsrc + (cb * K * NWK + j) * 64);
      const __m512i init = _mm512_maskz_loadu_epi32(m, a.acc_init + c);
      const __m512 bq = _mm512_maskz_loadu_ps(m, a.bias_q + c);
      const __m512 mu = _mm512_maskz_loadu_ps(m, a.mult + c);
      const uint8_t* pr[K];
      for (int kh = 0; kh < K; ++kh) pr[kh] = rr[kh] + cb * es * 64;
      uint8_t* yc = yrow + c;
      // kSat: the clamp is left to the saturating packs below (pack_clamps: [lo, hi] is the
      // whole uint8 range and |v| stays far inside int32, so rounding then saturating equals
      // clamping then rounding).
      auto q32 = [&](int64_t ow, auto sat) {
        const int64_t o = ow * 64;
        __m512i acc = init;
        for (int kh = 0; kh < K; ++kh) {
          acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(pr[kh] + o), wv[kh * NWK]);
          if constexpr (K == 5) {
            acc = _mm512_dpbusd_epi32(acc, _mm512_loadu_si512(pr[kh] + o + t4 * 64),
                                      wv[kh * NWK + 1]);
          }
        }
        __m512 f = _mm512_add_ps(_mm512_cvtepi32_ps(acc), bq);
        f = _mm512_mul_ps(f, mu);
        if constexpr (!decltype(sat)::value) f = _mm512_min_ps(_mm512_max_ps(f, lo), hi);
        return _mm512_add_epi32(_mm512_cvtps_epi32(f), ozp);  // in [0, 255] unless sat
      };
      int64_t ow = 0;
      auto quads = [&](auto sat) {
        // Four pixels at a time narrowed by VPACKSSDW / VPACKUSWB (exact: values in [0, 255],
        // or saturated to it) and a dword transpose, one 16-byte store per pixel. Signed first:
        // VPACKUSDW kept a kSat value in [32768, 65535] as a u16 that VPACKUSWB then read as
        // negative (0 instead of 255; found by tests/conv/test_depthwise_pair_rows.py).
        const __m512i perm =
            _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
        for (; ow + 4 <= OW; ow += 4) {
          const __m512i w01 = _mm512_packs_epi32(q32(ow, sat), q32(ow + 1, sat));
          const __m512i w23 = _mm512_packs_epi32(q32(ow + 2, sat), q32(ow + 3, sat));
          const __m512i b = _mm512_permutexvar_epi32(perm, _mm512_packus_epi16(w01, w23));
          uint8_t* d = yc + ow * C;
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm512_castsi512_si128(b));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + C), _mm512_extracti32x4_epi32(b, 1));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 2 * C),
                           _mm512_extracti32x4_epi32(b, 2));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(d + 3 * C),
                           _mm512_extracti32x4_epi32(b, 3));
        }
      };
      if (n == 16) {
        if (pack_clamps) quads(std::true_type{}); else quads(std::false_type{});
      }
      for (; ow < OW; ++ow) {
        __m128i q = _mm512_cvtepi32_epi8(q32(ow, std::false_type{}));
        // Register-form VPMOVDB, then a plain store: the memory-destination form is several
        // times slower on some cores (measured on Zen 4: a third of this loop).
        asm("" : "+v"(q));
        if (n == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(yc + ow * C), q);
        else _mm_mask_storeu_epi8(yc + ow * C, m, q);
      }
    }
  }
  delete[] buf;
}

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) {
  if (a.w3 != nullptr && a.KD == 1 && a.KH == 3 && a.KW == 3 && a.dh == 1 && a.dw == 1) {
    rows_quads<false, 3>(a, r0, r1);
    return;
  }
  if (a.w5 != nullptr && a.KD == 1 && a.KH == 5 && a.KW == 5 && a.dh == 1 && a.dw == 1 &&
      (a.sw == 1 || a.sw == 2)) {
    rows_quads<false, 5>(a, r0, r1);
    return;
  }
  dw_rows<PixelAvx512>(a, r0, r1);
}

// NCHW input: only the w3 form (the caller checks DwConvKernels::rows_nchw's conditions).
void rows_nchw(const DwConvArgs& a, int64_t r0, int64_t r1) { rows_quads<true, 3>(a, r0, r1); }

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kAvx512Vnni, "dwconv_u8s8_c64__avx512vnni", &rows,
                               &rows_nchw};
  return t;
}

}  // namespace avx512vnni
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
