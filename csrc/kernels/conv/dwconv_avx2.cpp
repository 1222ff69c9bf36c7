// Depthwise conv, AVX2: 8 channels per ymm, VPMOVZXBD + VPMADDWD (exact, dwconv.h) + VPADDD;
// 32 channels (4 accumulators) per step; 3x3 filters two taps per VPMADDWD. See dwconv.h.
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <type_traits>

#include "kernels/conv/dwconv_impl.h"

namespace qplugin {
namespace kernels {
namespace conv {
namespace avx2 {
namespace {

inline __m256i requant8(__m256i acc, const DwConvArgs& a, int64_t c) {
  __m256 f = _mm256_cvtepi32_ps(acc);
  f = _mm256_add_ps(f, _mm256_loadu_ps(a.bias_q + c));
  f = _mm256_mul_ps(f, _mm256_loadu_ps(a.mult + c));
  f = _mm256_max_ps(f, _mm256_set1_ps(a.lo));
  f = _mm256_min_ps(f, _mm256_set1_ps(a.hi));
  return _mm256_add_epi32(_mm256_cvtps_epi32(f), _mm256_set1_epi32(a.out_zp));
}

// 8 int32 in [0, 255] -> 8 bytes.
inline void store8(uint8_t* y, __m256i q) {
  const __m128i lo = _mm256_castsi256_si128(q), hi = _mm256_extracti128_si256(q, 1);
  const __m128i w = _mm_packus_epi32(lo, hi);
  _mm_storel_epi64(reinterpret_cast<__m128i*>(y), _mm_packus_epi16(w, w));
}

inline __m256i ld8(const uint8_t* p) {
  return _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}

struct PixelAvx2 {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    const int64_t ntaps = KV > 0 ? KV : ntaps_rt;
    const int64_t C = a.C;
    int64_t c = 0;
    for (; c + 32 <= C; c += 32) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      __m256i s1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 8));
      __m256i s2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 16));
      __m256i s3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 24));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        const uint8_t* x = taps[t] + c;
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(x), _mm256_loadu_si256(
                                                                  reinterpret_cast<const __m256i*>(w))));
        s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(ld8(x + 8), _mm256_loadu_si256(
                                                                      reinterpret_cast<const __m256i*>(w + 8))));
        s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(ld8(x + 16), _mm256_loadu_si256(
                                                                       reinterpret_cast<const __m256i*>(w + 16))));
        s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(ld8(x + 24), _mm256_loadu_si256(
                                                                       reinterpret_cast<const __m256i*>(w + 24))));
      }
      store8(y + c, requant8(s0, a, c));
      store8(y + c + 8, requant8(s1, a, c + 8));
      store8(y + c + 16, requant8(s2, a, c + 16));
      store8(y + c + 24, requant8(s3, a, c + 24));
    }
    for (; c + 8 <= C; c += 8) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < ntaps; ++t, w += C) {
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(taps[t] + c), _mm256_loadu_si256(
                                                                          reinterpret_cast<const __m256i*>(w))));
      }
      store8(y + c, requant8(s0, a, c));
    }
    if (c < C) dw_pixel_scalar(taps, ntaps, a, c, y);
  }
};

// 3x3 (9 taps) form: two taps per VPMADDWD. Codes of taps t and t+1 are zero-extended to 16 bits
// (VPMOVZXBW, 16 channels) and interleaved (VPUNPCKL/HWD), weights paired the same way at the
// start of the call: lane (x_t, x_t1) . (wz_t, wz_t1) = x_t * wz_t + x_t1 * wz_t1 exactly
// (|.| <= 2 * 255 * 255 < 2^31; wz in [-255, 255] fits int16). Tap 9 is a zero weight. The
// unpacks leave channels in lane order {0-3, 8-11} / {4-7, 12-15}; VPERM2I128 restores 0-7 /
// 8-15 before the requantization, so the sums (exact int32) and the bytes equal PixelAvx2's.
constexpr int64_t kPairMaxC = 1024;  // paired weights live on the stack: 5 * C int32

struct PairedW {
  // w[(k * nb + cb) * 16 + j]: pair k, 16-channel block cb; j < 8 lanes {0-3, 8-11}, j >= 8
  // lanes {4-7, 12-15} of the block.
  int32_t w[5 * kPairMaxC];
};

inline int32_t pair_lane(const DwConvArgs& a, int64_t k, int64_t c) {
  const int32_t w0 = a.w[(2 * k) * a.C + c];
  const int32_t w1 = 2 * k + 1 < 9 ? a.w[(2 * k + 1) * a.C + c] : 0;
  return static_cast<int32_t>((static_cast<uint32_t>(w0) & 0xFFFFu) |
                              (static_cast<uint32_t>(w1) << 16));
}

void pair_weights(const DwConvArgs& a, PairedW* pw) {
  const int64_t nb = a.C / 16;
  for (int64_t k = 0; k < 5; ++k) {
    for (int64_t cb = 0; cb < nb; ++cb) {
      int32_t* d = pw->w + (k * nb + cb) * 16;
      for (int j = 0; j < 4; ++j) {
        d[j] = pair_lane(a, k, cb * 16 + j);
        d[4 + j] = pair_lane(a, k, cb * 16 + 8 + j);
        d[8 + j] = pair_lane(a, k, cb * 16 + 4 + j);
        d[12 + j] = pair_lane(a, k, cb * 16 + 12 + j);
      }
    }
  }
}

inline void pair_step(const uint8_t* x0, const uint8_t* x1, const int32_t* w, __m256i* lo,
                      __m256i* hi) {
  const __m256i a = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x0)));
  const __m256i b = _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x1)));
  *lo = _mm256_add_epi32(*lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(a, b),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
  *hi = _mm256_add_epi32(*hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(a, b),
                                                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 8))));
}

thread_local const PairedW* t_pw = nullptr;

struct PixelAvx2Pair {
  template <int KV>
  static void run(const uint8_t* const* taps, int64_t ntaps_rt, const DwConvArgs& a,
                  uint8_t* y) {
    static_assert(KV == 9, "PixelAvx2Pair: 3x3 filters only");
    (void)ntaps_rt;
    const int64_t C = a.C, nb = C / 16;
    const int32_t* pw = t_pw->w;
    for (int64_t cb = 0; cb < nb; ++cb) {
      const int64_t c = cb * 16;
      __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
      for (int k = 0; k < 4; ++k) {
        pair_step(taps[2 * k] + c, taps[2 * k + 1] + c, pw + (k * nb + cb) * 16, &lo, &hi);
      }
      // Tap 8 with a zero partner weight (x read twice; the second product is 0).
      pair_step(taps[8] + c, taps[8] + c, pw + (4 * nb + cb) * 16, &lo, &hi);
      __m256i s0 = _mm256_permute2x128_si256(lo, hi, 0x20);  // channels c + 0..7
      __m256i s1 = _mm256_permute2x128_si256(lo, hi, 0x31);  // channels c + 8..15
      s0 = _mm256_add_epi32(s0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c)));
      s1 = _mm256_add_epi32(s1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c + 8)));
      store8(y + c, requant8(s0, a, c));
      store8(y + c + 8, requant8(s1, a, c + 8));
    }
    int64_t c = nb * 16;
    for (; c + 8 <= C; c += 8) {
      __m256i s0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.acc_init + c));
      const int32_t* w = a.w + c;
      for (int64_t t = 0; t < 9; ++t, w += C) {
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(ld8(taps[t] + c), _mm256_loadu_si256(
                                                                          reinterpret_cast<const __m256i*>(w))));
      }
      store8(y + c, requant8(s0, a, c));
    }
    if (c < C) dw_pixel_scalar(taps, 9, a, c, y);
  }
};

// 1xKHxKW filters (3x3 and 5x5) with dilation_w 1 (any stride, padding, dilation_h, C; NDHWC
// input, or NCDHW for 3x3): each input row the output rows need is rearranged once into a pair row
// H[cb][j] = 8 dwords, dword i = X[j - pw][c] | X[j - pw + 1][c] << 16 (c = 8 cb + i; the zero
// point outside the row), kept in a ring of KH rows. Output pixel ow of channel block cb is then,
// per kernel row and t < ceil(KW / 2), VPMADDWD of H[ow * sw + 2t] with the weight pair
// (wz[kh][2t], wz[kh][2t + 1]) (0 past KW). 3x3: six VPMADDWD + VPADDD for 8 channels, against
// five zero-extensions, unpacks, VPMADDWD and VPADDD per 16 channels in PixelAvx2Pair; 5x5:
// fifteen, against 25 zero-extending loads, VPMADDWD and VPADDD in PixelAvx2. Exact: each
// dword product pair is x0 * wz0 + x1 * wz1 with x in [0, 255] and wz in [-255, 255] (int16
// operands; |sum| <= 2 * 255 * 255 < 2^31), added to acc_init in int32 as the scalar kernel does.
// The tail block (C % 8 channels) reads the other lanes as 0 and stores only its channels.
constexpr int64_t kPb = 8;  // channels per block (one ymm of int32)

// Which j a pair row holds: entry e is H[e * bs] (bs = 2 for stride 2, whose pixels read even j
// only; 1 otherwise). Pixel ow reads entries ow * sw / bs and that + 2 / bs.
// np: weight pairs per kernel row (ceil(KW / 2)); pixel ow reads j = ow * sw + 2t, t < np.
struct PairGeom {
  int64_t nb, J, bs, E;
  PairGeom(const DwConvArgs& a, int64_t np)
      : nb((a.C + kPb - 1) / kPb),
        J((a.OW - 1) * a.sw + 2 * np - 1),
        bs(a.sw == 2 ? 2 : 1),
        E((J + bs - 1) / bs) {}
};

// The pair row of NDHWC input row xrow (pixel iw at xrow + iw * C) into d ([nb][E] entries of 32
// bytes).
void build_pairs(const DwConvArgs& a, const PairGeom& g, const uint8_t* xrow, uint8_t* d) {
  const int64_t C = a.C, IW = a.IW, pw = a.pw, J = g.J, step = g.bs;
  const __m256i zpv = _mm256_set1_epi32(a.zrow[0]);
  for (int64_t cb = 0; cb < g.nb; ++cb) {
    const int64_t c = cb * kPb, n = C - c < kPb ? C - c : kPb;
    auto u = [&](int64_t iw) {
      if (iw < 0 || iw >= IW) return zpv;
      const uint8_t* p = xrow + iw * C + c;
      if (n == kPb) return ld8(p);
      alignas(8) uint8_t t[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      std::memcpy(t, p, static_cast<size_t>(n));
      return ld8(t);
    };
    // Entries in order (j = 0, step, 2 step, ...), each to the next 32 bytes.
    uint8_t* q = d + cb * g.E * 32;
    auto put = [&](__m256i v0, __m256i v1) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(q),
                         _mm256_or_si256(v0, _mm256_slli_epi32(v1, 16)));
      q += 32;
    };
    // Entries whose two pixels lie inside the row, for a full block: [jlo, jhi), no branch.
    const int64_t jlo = n == kPb ? pw : J, jhi = n == kPb ? std::min(J, IW - 1 + pw) : J;
    int64_t j = 0;
    for (; j < J && j < jlo; j += step) put(u(j - pw), u(j + 1 - pw));
    if (j < jhi) {
      const uint8_t* p = xrow + (j - pw) * C + c;
      if (step == 1) {
        __m256i u0 = ld8(p);
        for (; j < jhi; ++j, p += C) {
          const __m256i u1 = ld8(p + C);
          put(u0, u1);
          u0 = u1;
        }
      } else {
        for (; j < jhi; j += 2, p += 2 * C) put(ld8(p), ld8(p + C));
      }
    }
    for (; j < J; j += step) put(u(j - pw), u(j + 1 - pw));
  }
}

// 8 x 8 int32 transpose: r[k] lane m -> o[m] lane k.
inline void transpose8x8_epi32(const __m256i* r, __m256i* o) {
  __m256i t[8], v[8];
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_epi32(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_epi32(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    v[k] = _mm256_unpacklo_epi64(t[k], t[k + 2]);
    v[k + 1] = _mm256_unpackhi_epi64(t[k], t[k + 2]);
    v[k + 2] = _mm256_unpacklo_epi64(t[k + 1], t[k + 3]);
    v[k + 3] = _mm256_unpackhi_epi64(t[k + 1], t[k + 3]);
  }
  // v[0..3]: lanes {m, m + 4} of rows 0..3 for m = 0..3; v[4..7] the same of rows 4..7.
  for (int m = 0; m < 4; ++m) {
    o[m] = _mm256_permute2x128_si256(v[m], v[4 + m], 0x20);
    o[m + 4] = _mm256_permute2x128_si256(v[m], v[4 + m], 0x31);
  }
}

// The pair row of NCDHW input row xrow (channel c's row at xrow + c * plane) into d. Entries
// whose two pixels lie inside the row go in groups: stride 2, 8 entries from one 16-byte load
// per channel (its zero-extended dwords are the pairs X[iw0 + 2k], X[iw0 + 2k + 1]); else 16
// entries from two loads 1 byte apart, interleaved (VPUNPCKL/HWD: entries 0-3 and 8-11, 4-7 and
// 12-15); then an 8 x 8 dword transpose per 8 entries. The last group ends at the last such entry
// (overlapping the one before: the same values again). The others (the padding's) one by one.
void build_pairs_nchw(const DwConvArgs& a, const PairGeom& g, const uint8_t* xrow, uint8_t* d) {
  const int64_t C = a.C, IW = a.IW, pw = a.pw, plane = a.ID * a.IH * a.IW, E = g.E, bs = g.bs;
  const bool s2 = bs == 2;
  const int64_t G = s2 ? 8 : 16;
  const int32_t zp = a.zrow[0];
  // Entries [in0, in1) have both pixels inside the row: 0 <= e * bs - pw and e * bs - pw + 1 < IW.
  const int64_t in0 = std::min(E, (pw + bs - 1) / bs);
  const int64_t in1 = IW - 2 + pw >= 0 ? std::max(in0, std::min(E, (IW - 2 + pw) / bs + 1)) : in0;
  const bool groups = in1 - in0 >= G;
  for (int64_t cb = 0; cb < g.nb; ++cb) {
    const int64_t c0 = cb * kPb, n = C - c0 < kPb ? C - c0 : kPb;
    const uint8_t* rows[kPb];
    // Lanes past C read channel c0's row (their weights are 0).
    for (int64_t k = 0; k < kPb; ++k) rows[k] = xrow + (c0 + (k < n ? k : 0)) * plane;
    // The next input row of these channels, usually the next one built: C planes are C streams,
    // more than the hardware prefetchers follow (stride 2, 96 channels: 0.180 -> 0.1xx ms).
    for (int64_t k = 0; k < n; ++k)
      for (int64_t off = 0; off < IW + 63; off += 64) _mm_prefetch(rows[k] + IW + off, _MM_HINT_T0);
    uint8_t* db = d + cb * E * 32;
    // The entry built in a register (VMOVD / VPINSRD): eight dword stores read back as one
    // 32-byte value miss store forwarding (perf put ~12% of 3x3 144 ch 56x56's samples on them,
    // 3 such entries of 58 a row; forced AVX2, batch 8: 1.76-1.83 -> 1.64-1.78 ms).
    auto one = [&](int64_t e) {
      const int64_t iw = e * bs - pw;
      const bool i0 = iw >= 0 && iw < IW, i1 = iw + 1 >= 0 && iw + 1 < IW;
      auto v = [&](int k) {
        return (i0 ? rows[k][iw] : zp) | (i1 ? rows[k][iw + 1] : zp) << 16;
      };
      _mm256_store_si256(reinterpret_cast<__m256i*>(db + e * 32),
                         _mm256_setr_epi32(v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7)));
    };
    if (!groups) {
      for (int64_t e = 0; e < E; ++e) one(e);
      continue;
    }
    for (int64_t e = 0; e < in0; ++e) one(e);
    for (int64_t e = in1; e < E; ++e) one(e);
    auto ld16 = [](const uint8_t* p) {
      return _mm256_cvtepu8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    };
    auto store = [&](int64_t e0, const __m256i* o, int lo_half) {
      // o[m] is entry e0 + m (stride 2) or e0 + (m < 4 ? m : m + 4) + 4 lo_half (stride 1).
      for (int m = 0; m < 8; ++m) {
        const int64_t e = s2 ? e0 + m : e0 + (m < 4 ? m : m + 4) + 4 * lo_half;
        _mm256_store_si256(reinterpret_cast<__m256i*>(db + e * 32), o[m]);
      }
    };
    for (int64_t e0 = in0;; e0 += G) {
      if (e0 + G > in1) e0 = in1 - G;
      const int64_t iw0 = e0 * bs - pw;
      __m256i r[kPb], o[kPb];
      if (s2) {
        for (int k = 0; k < kPb; ++k) r[k] = ld16(rows[k] + iw0);
        transpose8x8_epi32(r, o);
        store(e0, o, 0);
      } else {
        __m256i h[kPb];
        for (int k = 0; k < kPb; ++k) {
          const __m256i x0 = ld16(rows[k] + iw0), x1 = ld16(rows[k] + iw0 + 1);
          r[k] = _mm256_unpacklo_epi16(x0, x1);
          h[k] = _mm256_unpackhi_epi16(x0, x1);
        }
        transpose8x8_epi32(r, o);
        store(e0, o, 0);
        transpose8x8_epi32(h, o);
        store(e0, o, 1);
      }
      if (e0 + G >= in1) break;
    }
  }
}

// dw_pack_clamps (dwconv_impl.h) four channels at a time, the same double arithmetic: whether
// every channel's |acc_init| + taps * max_prod + |bias_q|, times |mult|, stays below 1e9 (a NaN
// fails the compare, as there). (The scalar loop was ~3% of a 7x7 x 960-channel layer.)
bool pack_clamps_avx2(const DwConvArgs& a, int64_t taps, double max_prod) {
  if (a.lo != static_cast<float>(-a.out_zp) || a.hi != static_cast<float>(255 - a.out_zp))
    return false;
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d tp = _mm256_set1_pd(static_cast<double>(taps) * max_prod);
  const __m256d lim = _mm256_set1_pd(1e9);
  int64_t c = 0;
  for (; c + 4 <= a.C; c += 4) {
    const __m256d ai =
        _mm256_cvtepi32_pd(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a.acc_init + c)));
    const __m256d bq = _mm256_cvtps_pd(_mm_loadu_ps(a.bias_q + c));
    const __m256d mu = _mm256_cvtps_pd(_mm_loadu_ps(a.mult + c));
    const __m256d v = _mm256_mul_pd(
        _mm256_add_pd(_mm256_add_pd(_mm256_and_pd(ai, absmask), tp), _mm256_and_pd(bq, absmask)),
        _mm256_and_pd(mu, absmask));
    if (_mm256_movemask_pd(_mm256_cmp_pd(v, lim, _CMP_LT_OQ)) != 0xF) return false;
  }
  for (; c < a.C; ++c) {
    const double v = (std::fabs(static_cast<double>(a.acc_init[c])) + taps * max_prod +
                      std::fabs(static_cast<double>(a.bias_q[c]))) *
                     std::fabs(static_cast<double>(a.mult[c]));
    if (!(v < 1e9)) return false;
  }
  return true;
}

// KH x KW filters (KD = 1, dilation_w 1; instantiated for 3x3 and 5x5): KH ring rows, NP =
// ceil(KW / 2) weight pairs per kernel row, the last (w[KW - 1], 0) when KW is odd.
template <bool NCHW, int KH, int KW>
void rows_pairs(const DwConvArgs& a, int64_t r0, int64_t r1) {
  constexpr int NP = (KW + 1) / 2, NW = KH * NP;  // weight vectors per block
  const int64_t C = a.C, OW = a.OW;
  const PairGeom g(a, NP);
  const int64_t nb = g.nb, E = g.E;
  const int64_t mul = a.sw / g.bs, e2 = 2 / g.bs;  // pixel ow reads entries ow * mul + t * e2
  const int64_t row_bytes = nb * E * 32;
  // KH ring rows + one zero-point row, then per block: NW weight vectors, acc_init, bias_q,
  // mult (the tail block's other lanes 0).
  constexpr int64_t kPar = NW + 3;
  const int64_t par_bytes = nb * kPar * 32;
  uint8_t* raw = new uint8_t[static_cast<size_t>((KH + 1) * row_bytes + par_bytes + 32)];
  uint8_t* buf = raw + ((32 - reinterpret_cast<uintptr_t>(raw) % 32) % 32);
  uint8_t* zrow = buf + KH * row_bytes;
  int32_t* par = reinterpret_cast<int32_t*>(buf + (KH + 1) * row_bytes);
  {
    // Per call (the weights' pairs, acc_init, bias_q and mult of every block): whole blocks with
    // vector loads from the [tap][C] arrays, the tail block's channels one by one. (A loop over
    // channels with scattered scalar reads was ~20% of a 7x7 x 960-channel layer's time.)
    const uint32_t zp = a.zrow[0];
    const __m256i zv = _mm256_set1_epi32(static_cast<int32_t>(zp | zp << 16));
    for (int64_t i = 0; i < row_bytes; i += 32)
      _mm256_store_si256(reinterpret_cast<__m256i*>(zrow + i), zv);
    const int64_t nbf = C / kPb;  // whole blocks
    const __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    for (int64_t kh = 0; kh < KH; ++kh) {
      for (int64_t t = 0; t < NP; ++t) {
        const int32_t* w0 = a.w + (kh * KW + 2 * t) * C;
        const int32_t* w1 = 2 * t + 1 < KW ? a.w + (kh * KW + 2 * t + 1) * C : nullptr;
        for (int64_t cb = 0; cb < nbf; ++cb) {
          const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w0 + cb * kPb));
          const __m256i v1 =
              w1 != nullptr
                  ? _mm256_slli_epi32(
                        _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w1 + cb * kPb)), 16)
                  : _mm256_setzero_si256();
          _mm256_store_si256(
              reinterpret_cast<__m256i*>(par + (cb * kPar + kh * NP + t) * kPb),
              _mm256_or_si256(_mm256_and_si256(v0, lo16), v1));
        }
      }
    }
    for (int64_t cb = 0; cb < nbf; ++cb) {
      int32_t* pb = par + cb * kPar * kPb;
      std::memcpy(pb + NW * kPb, a.acc_init + cb * kPb, 4 * kPb);
      std::memcpy(pb + (NW + 1) * kPb, a.bias_q + cb * kPb, 4 * kPb);
      std::memcpy(pb + (NW + 2) * kPb, a.mult + cb * kPb, 4 * kPb);
    }
    if (nbf < nb) {  // the tail block: its channels, the other lanes 0
      int32_t* pb = par + nbf * kPar * kPb;
      std::memset(pb, 0, static_cast<size_t>(kPar * kPb * 4));
      for (int64_t c = nbf * kPb; c < C; ++c) {
        const int64_t i = c % kPb;
        for (int64_t kh = 0; kh < KH; ++kh) {
          for (int64_t t = 0; t < NP; ++t) {
            const uint32_t w0 = static_cast<uint32_t>(a.w[(kh * KW + 2 * t) * C + c]);
            const uint32_t w1 =
                2 * t + 1 < KW ? static_cast<uint32_t>(a.w[(kh * KW + 2 * t + 1) * C + c])
                               : 0u;
            pb[(kh * NP + t) * kPb + i] = static_cast<int32_t>((w0 & 0xFFFFu) | (w1 << 16));
          }
        }
        pb[NW * kPb + i] = a.acc_init[c];
        std::memcpy(pb + (NW + 1) * kPb + i, a.bias_q + c, 4);
        std::memcpy(pb + (NW + 2) * kPb + i, a.mult + c, 4);
      }
    }
  }
  int64_t slot_key[KH];
  for (int k = 0; k < KH; ++k) slot_key[k] = -1;
  // A slot per key modulo KH as long as the KH rows of an output row (ih + kh * dh) have
  // distinct slots, i.e. dh and KH coprime; otherwise the slot is kh (rebuilt every row).
  const bool mod_slots = std::gcd(static_cast<int64_t>(a.dh), static_cast<int64_t>(KH)) == 1;
  const __m256 lo = _mm256_set1_ps(a.lo), hi = _mm256_set1_ps(a.hi);
  const __m128i zp16 = _mm_set1_epi16(static_cast<int16_t>(a.out_zp));
  // kSat as in the avx512vnni rows3x3: [lo, hi] is the whole uint8 range and |v| stays far
  // inside int32, so the saturating packs (and VPADDSW of out_zp) clamp exactly as min/max would.
  const bool pack_clamps = pack_clamps_avx2(a, KH * KW, 255.0 * 255);
  const __m128i order = _mm_setr_epi8(0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 12, 13, 14, 15);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t od = r / a.OH, oh = r % a.OH;
    const int64_t id = od * a.sd - a.pd;
    const bool plane_in = id >= 0 && id < a.ID;
    const uint8_t* rr[KH];
    for (int64_t kh = 0; kh < KH; ++kh) {
      const int64_t ih = oh * a.sh - a.ph + kh * a.dh;
      if (!plane_in || ih < 0 || ih >= a.IH) {
        rr[kh] = zrow;
        continue;
      }
      const int64_t key = id * a.IH + ih;
      const int64_t slot = mod_slots ? ih % KH : kh;
      uint8_t* dst = buf + slot * row_bytes;
      if (slot_key[slot] != key) {
        if constexpr (NCHW) build_pairs_nchw(a, g, a.x + key * a.IW, dst);
        else build_pairs(a, g, a.x + key * a.IW * C, dst);
        slot_key[slot] = key;
      }
      rr[kh] = dst;
    }
    // NDHWC: the rows the next output row adds, prefetched over this row's blocks.
    DwNextRowsPrefetch next(a, r, NCHW ? r : r1, oh, id, (KH - 1) * a.dh, nb);
    uint8_t* yrow = a.y + r * OW * C;
    for (int64_t cb = 0; cb < nb; ++cb) {
      const int64_t c = cb * kPb, n = C - c < kPb ? C - c : kPb;
      const int32_t* pb = par + cb * kPar * kPb;
      next.step();
      auto ldw = [&](int k) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(pb + k * kPb));
      };
      const __m256i init = ldw(NW);
      const __m256 bq = _mm256_load_ps(reinterpret_cast<const float*>(pb + (NW + 1) * kPb));
      const __m256 mu = _mm256_load_ps(reinterpret_cast<const float*>(pb + (NW + 2) * kPb));
      const uint8_t* h[KH];
      for (int kh = 0; kh < KH; ++kh) h[kh] = rr[kh] + cb * E * 32;
      auto hv = [](const uint8_t* h, int64_t j) {
        return _mm256_load_si256(reinterpret_cast<const __m256i*>(h + j * 32));
      };
      auto acc = [&](int64_t ow) {
        const int64_t j = ow * mul;
        // The weights as memory operands (L1): in registers they spilled with the epilogue's.
        __m256i s = init;
#pragma GCC unroll 8
        for (int kh = 0; kh < KH; ++kh) {
#pragma GCC unroll 4
          for (int t = 0; t < NP; ++t)
            s = _mm256_add_epi32(s, _mm256_madd_epi16(hv(h[kh], j + t * e2), ldw(kh * NP + t)));
        }
        return s;
      };
      auto rq = [&](__m256i v, auto sat) {
        __m256 f = _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(v), bq), mu);
        if constexpr (!decltype(sat)::value) f = _mm256_min_ps(_mm256_max_ps(f, lo), hi);
        return _mm256_cvtps_epi32(f);
      };
      // Two pixels' rounded values to 16 bytes (pixel ow's 8 channels, then ow + 1's): the
      // packs saturate only in the kSat case; without it the values lie in [lo, hi].
      auto narrow = [&](__m256i q0, __m256i q1) {
        const __m256i w16 = _mm256_packs_epi32(q0, q1);
        const __m128i l = _mm_adds_epi16(_mm256_castsi256_si128(w16), zp16);
        const __m128i h = _mm_adds_epi16(_mm256_extracti128_si256(w16, 1), zp16);
        return _mm_shuffle_epi8(_mm_packus_epi16(l, h), order);
      };
      uint8_t* yc = yrow + c;
      auto run = [&](auto sat) {
        int64_t ow = 0;
        for (; ow + 2 <= OW; ow += 2) {
          const __m128i b = narrow(rq(acc(ow), sat), rq(acc(ow + 1), sat));
          if (n == kPb) {
            _mm_storel_epi64(reinterpret_cast<__m128i*>(yc + ow * C), b);
            // (VMOVHPD through a double* would be a misaligned double store: UB, UBSan.)
            _mm_storel_epi64(reinterpret_cast<__m128i*>(yc + (ow + 1) * C),
                             _mm_unpackhi_epi64(b, b));
          } else {
            alignas(16) uint8_t t[16];
            _mm_store_si128(reinterpret_cast<__m128i*>(t), b);
            std::memcpy(yc + ow * C, t, static_cast<size_t>(n));
            std::memcpy(yc + (ow + 1) * C, t + 8, static_cast<size_t>(n));
          }
        }
        if (ow < OW) {
          const __m256i q = rq(acc(ow), sat);
          const __m128i b = narrow(q, q);
          alignas(16) uint8_t t[16];
          _mm_store_si128(reinterpret_cast<__m128i*>(t), b);
          std::memcpy(yc + ow * C, t, static_cast<size_t>(n));
        }
      };
      if (pack_clamps) run(std::true_type{});
      else run(std::false_type{});
    }
  }
  delete[] raw;
}

// Output widths below this take the 3x3 pixel form (PixelAvx2Pair) rather than the pair rows,
// whose per-input-row rearrangement does not pay off on narrow images: forced AVX2 on an AMX
// Xeon, 1 thread, us, pair rows vs pixel form: 960 ch 7x7 47-48 vs 38-41, 672 ch 14x14 stride 2
// 39-42 vs 29-33, 480 ch 14x14 60 vs 60-64, 120 ch 28x28 54-55 vs 65-72, 144 ch 56x56 194-197 vs
// 255-265. (FBGEMM: 37-39, 29-32, 59-65, 111-125, 363-389.)
constexpr int64_t kPairRowsMinOW = 9;

void rows(const DwConvArgs& a, int64_t r0, int64_t r1) {
  const bool pixel3 = a.KD * a.KH * a.KW == 9 && a.C >= 16 && a.C <= kPairMaxC;
  if (a.KD == 1 && a.KH == 3 && a.KW == 3 && a.dw == 1 && !(pixel3 && a.OW < kPairRowsMinOW)) {
    rows_pairs<false, 3, 3>(a, r0, r1);
    return;
  }
  if (a.KD == 1 && a.KH == 5 && a.KW == 5 && a.dw == 1) {
    rows_pairs<false, 5, 5>(a, r0, r1);
    return;
  }
  if (pixel3) {
    PairedW pw;
    pair_weights(a, &pw);
    t_pw = &pw;
    dw_rows_impl<PixelAvx2Pair, 9>(a, r0, r1);
    t_pw = nullptr;
    return;
  }
  dw_rows<PixelAvx2>(a, r0, r1);
}

// NCDHW input (the caller checks DwConvKernels::rows_nchw's conditions: 1x3x3, dilation_w 1,
// channel multiplier 1).
void rows_nchw(const DwConvArgs& a, int64_t r0, int64_t r1) {
  rows_pairs<true, 3, 3>(a, r0, r1);
}

}  // namespace

const DwConvKernels& dwconv_table() {
  static const DwConvKernels t{Isa::kAvx2, "dwconv_u8s8_c32__avx2", &rows, &rows_nchw,
                               /*nchw_any_w_zp=*/true};
  return t;
}

}  // namespace avx2
}  // namespace conv
}  // namespace kernels
}  // namespace qplugin
