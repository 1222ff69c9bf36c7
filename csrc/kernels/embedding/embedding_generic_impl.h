// The embedding-bag loop (see embedding.h for the math), included by every
// kernels/embedding/embedding_<isa>.cpp inside its own namespace (QPLUGIN_ISA_NS), so code built
// with different flags never shares an inline definition (ODR). The loop is generic over the row
// operations (Ops): PortableOps here (std::fma per element), hand-vectorized ones in the ISA files;
// all do the same IEEE operations per element, so every ISA gives the scalar bytes.
// Lookups are DRAM-latency bound (random rows of a large table), so the loop prefetches the rows
// kPrefetch positions ahead, across bag boundaries. Changes with: embedding.h.
#ifndef QPLUGIN_ISA_NS
#error "define QPLUGIN_ISA_NS before including embedding_generic_impl.h"
#endif
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if defined(__F16C__)
#include <immintrin.h>
#endif

#include "common/inline.h"
#include "kernels/embedding/embedding.h"

namespace qplugin {
namespace kernels {
namespace QPLUGIN_ISA_NS {
namespace embedding_generic {

// IEEE half -> float (exact; subnormals, infinities and NaN included). With F16C (the avx2 and
// avx512vnni files) one vcvtph2ps; it returns a signaling NaN quieted, which changes no output:
// every use of a row's scale or bias is arithmetic (fma, *, +), which quiets it the same way.
inline float half_to_float(uint16_t h) {
#if defined(__F16C__)
  return _cvtsh_ss(h);
#else
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1fu) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {  // subnormal half: normalize
    uint32_t e = 113;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
#endif
}

// A row's scale and bias (embedding.h): fp32 after the codes of an 8-bit row, fp16 after those of
// a 4- or 2-bit row; code_bytes = the codes' length.
template <int Bits>
QPLUGIN_ALWAYS_INLINE void row_scale_bias(const uint8_t* row, int64_t code_bytes, float* s,
                                          float* b) {
  if constexpr (Bits == 8) {
    std::memcpy(s, row + code_bytes, sizeof(float));
    std::memcpy(b, row + code_bytes + sizeof(float), sizeof(float));
  } else {
#if defined(__F16C__)
    // Both halves by one 4-byte load and one vcvtph2ps (two vpinsrw, two conversions and a
    // zeroing before: ~8% of a 64-column 4-bit row on a Zen 5 held to avx2).
    uint32_t sb;
    std::memcpy(&sb, row + code_bytes, sizeof(sb));
    const __m128 f = _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(sb)));
    *s = _mm_cvtss_f32(f);
    *b = _mm_cvtss_f32(_mm_movehdup_ps(f));
#else
    uint16_t hs, hb;
    std::memcpy(&hs, row + code_bytes, sizeof(hs));
    std::memcpy(&hb, row + code_bytes + sizeof(hs), sizeof(hb));
    *s = half_to_float(hs);
    *b = half_to_float(hb);
#endif
  }
}

#if defined(__F16C__)
// A row's (scale, bias, 0, 0) as floats in one xmm, for the vector forms that add the pair whole
// into a bias accumulator (lane 1; the ISA files' pair_sum16).
template <int Bits>
QPLUGIN_ALWAYS_INLINE __m128 row_scale_bias_x4(const uint8_t* row, int64_t code_bytes) {
  if constexpr (Bits == 8) {
    return _mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + code_bytes)));
  } else {
    uint32_t h;
    std::memcpy(&h, row + code_bytes, sizeof(h));
    return _mm_cvtph_ps(_mm_cvtsi32_si128(static_cast<int>(h)));
  }
}
#endif

// Row operations, n elements: acc: o[d] = fma(a, q[d], o[d]); set: o[d] = fma(s, q[d], b);
// max: o[d] = max(fma(s, q[d], b), o[d]) (v > o ? v : o). The 4-bit forms read element 2k from
// the low nibble of byte k and element 2k+1 from its high nibble (n even).
struct PortableOps {
  static void acc8(float* o, const uint8_t* q, int64_t n, float a) {
    for (int64_t d = 0; d < n; ++d) o[d] = std::fma(a, static_cast<float>(q[d]), o[d]);
  }
  static void set8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    for (int64_t d = 0; d < n; ++d) o[d] = std::fma(s, static_cast<float>(q[d]), b);
  }
  static void max8(float* o, const uint8_t* q, int64_t n, float s, float b) {
    for (int64_t d = 0; d < n; ++d) {
      const float v = std::fma(s, static_cast<float>(q[d]), b);
      o[d] = v > o[d] ? v : o[d];
    }
  }
  static void acc4(float* o, const uint8_t* p, int64_t n, float a) {
    for (int64_t k = 0; 2 * k < n; ++k) {
      o[2 * k] = std::fma(a, static_cast<float>(p[k] & 15), o[2 * k]);
      o[2 * k + 1] = std::fma(a, static_cast<float>(p[k] >> 4), o[2 * k + 1]);
    }
  }
  static void set4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    for (int64_t k = 0; 2 * k < n; ++k) {
      o[2 * k] = std::fma(s, static_cast<float>(p[k] & 15), b);
      o[2 * k + 1] = std::fma(s, static_cast<float>(p[k] >> 4), b);
    }
  }
  static void max4(float* o, const uint8_t* p, int64_t n, float s, float b) {
    for (int64_t k = 0; 2 * k < n; ++k) {
      const float v0 = std::fma(s, static_cast<float>(p[k] & 15), b);
      const float v1 = std::fma(s, static_cast<float>(p[k] >> 4), b);
      o[2 * k] = v0 > o[2 * k] ? v0 : o[2 * k];
      o[2 * k + 1] = v1 > o[2 * k + 1] ? v1 : o[2 * k + 1];
    }
  }
  // 2-bit forms: element 4k + j is bits [2j, 2j + 2) of byte k (n a multiple of 4). Written per
  // byte, four independent lanes, which the compilers vectorize (per element with a shift by
  // (d % 4) * 2 they did not: 10x slower).
  static void acc2(float* o, const uint8_t* p, int64_t n, float a) {
    for (int64_t k = 0; 4 * k < n; ++k) {
      const unsigned v = p[k];
      o[4 * k] = std::fma(a, static_cast<float>(v & 3u), o[4 * k]);
      o[4 * k + 1] = std::fma(a, static_cast<float>((v >> 2) & 3u), o[4 * k + 1]);
      o[4 * k + 2] = std::fma(a, static_cast<float>((v >> 4) & 3u), o[4 * k + 2]);
      o[4 * k + 3] = std::fma(a, static_cast<float>(v >> 6), o[4 * k + 3]);
    }
  }
  static void set2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    for (int64_t k = 0; 4 * k < n; ++k) {
      const unsigned v = p[k];
      o[4 * k] = std::fma(s, static_cast<float>(v & 3u), b);
      o[4 * k + 1] = std::fma(s, static_cast<float>((v >> 2) & 3u), b);
      o[4 * k + 2] = std::fma(s, static_cast<float>((v >> 4) & 3u), b);
      o[4 * k + 3] = std::fma(s, static_cast<float>(v >> 6), b);
    }
  }
  static void max2(float* o, const uint8_t* p, int64_t n, float s, float b) {
    for (int64_t k = 0; 4 * k < n; ++k) {
      const unsigned v = p[k];
      for (int j = 0; j < 4; ++j) {
        const float x = std::fma(s, static_cast<float>((v >> (2 * j)) & 3u), b);
        o[4 * k + j] = x > o[4 * k + j] ? x : o[4 * k + j];
      }
    }
  }
};

// One row's operation at `Bits`: Ops' forms (the ISA files vectorize all three widths).
template <int Bits, class Ops>
inline void row_acc(float* o, const uint8_t* q, int64_t n, float a) {
  if constexpr (Bits == 8) Ops::acc8(o, q, n, a);
  else if constexpr (Bits == 4) Ops::acc4(o, q, n, a);
  else Ops::acc2(o, q, n, a);
}
template <int Bits, class Ops>
inline void row_set(float* o, const uint8_t* q, int64_t n, float s, float b) {
  if constexpr (Bits == 8) Ops::set8(o, q, n, s, b);
  else if constexpr (Bits == 4) Ops::set4(o, q, n, s, b);
  else Ops::set2(o, q, n, s, b);
}
template <int Bits, class Ops>
inline void row_max(float* o, const uint8_t* q, int64_t n, float s, float b) {
  if constexpr (Bits == 8) Ops::max8(o, q, n, s, b);
  else if constexpr (Bits == 4) Ops::max4(o, q, n, s, b);
  else Ops::max2(o, q, n, s, b);
}

// Sum of a batch of n rows into o (dim elements): o[d] = fma(a[n-1], q_{n-1}[d], ... fma(a[0],
// q_0[d], init ? 0 : o[d])); row by row with Ops' single-row forms. The ISA files replace it with
// register-blocked forms (accumulators stay in registers across the rows): same bytes.
template <int Bits, class Ops>
void sum_rows_by_row(float* o, const uint8_t* const* rows, const float* a, int64_t n, int64_t dim,
                     bool init) {
  if (init) std::memset(o, 0, static_cast<size_t>(dim) * sizeof(float));
  for (int64_t r = 0; r < n; ++r) row_acc<Bits, Ops>(o, rows[r], dim, a[r]);
}

// Max of a batch of n >= 1 rows into o: with init the first row sets
// o[d] = fma(s[0], q_0[d], b[0]), then each row r: o[d] = max(fma(s[r], q_r[d], b[r]), o[d]) (v > o ? v : o, so a NaN value
// does not replace o and a NaN o stays). Row by row with Ops' single-row forms; the ISA files
// replace it with register-blocked forms: same bytes.
template <int Bits, class Ops>
void max_rows_by_row(float* o, const uint8_t* const* rows, const float* s, const float* b,
                     int64_t n, int64_t dim, bool init) {
  int64_t r = 0;
  if (init) {
    row_set<Bits, Ops>(o, rows[0], dim, s[0], b[0]);
    r = 1;
  }
  for (; r < n; ++r) row_max<Bits, Ops>(o, rows[r], dim, s[r], b[r]);
}

struct PortableBatchOps : PortableOps {
  static constexpr int64_t kRegCols = 0;  // no register-resident bag accumulator
  template <int Bits, bool Max>
  static void reduce_rows(float* o, const uint8_t* const* rows, const float* a, const float* b,
                          int64_t n, int64_t dim, bool init) {
    if constexpr (Max) {
      max_rows_by_row<Bits, PortableOps>(o, rows, a, b, n, dim, init);
    } else {
      sum_rows_by_row<Bits, PortableOps>(o, rows, a, n, dim, init);
    }
  }
};


// One cache line into L2 (prefetch_line, prefetcht2) or L1 (prefetch_line<true>, prefetcht0).
// An asm statement, not __builtin_prefetch: GCC 12 deleted the builtin's calls from this loop at
// -O1 and above (no prefetch in the object file).
// - L2 for the DRAM-bound walk: a prefetch into L1 holds one of its few miss buffers until the
//   line arrives, which capped the rows in flight; into L2 the 1M x 128 bench ran 0.63-0.75x
//   PyTorch's time instead of ~1.0x (measured on Zen 4, prefetcht0 / t1 / t2 / nta compared).
// - L1 for the lean walk over tables the caches hold (<= 16 MB): their lines arrive from L2/L3 in
//   tens of cycles, so a miss buffer is not held long, and the row's loads then hit L1. On Zen 5
//   (1 MB L2), 8-bit rows of a 1.44 MB table: 64 columns 0.189 -> 0.165 ms, 128 columns 0.30 ->
//   0.236 ms for 81,920 rows (distances 8-32 alike either way).
template <bool kL1 = false>
inline void prefetch_line(const char* p) {
#if defined(__x86_64__) || defined(__i386__)
  if (kL1) {
    asm volatile("prefetcht0 %0" : : "m"(*p));
  } else {
    asm volatile("prefetcht2 %0" : : "m"(*p));
  }
#else
  __builtin_prefetch(p, 0, 3);
#endif
}

// Whether Ops has the two-bag 16-column sum (Ops::pair_sum16, flagged by Ops::kPairSum16).
template <class T, class = void>
struct HasPairSum16 : std::false_type {};
template <class T>
struct HasPairSum16<T, std::void_t<decltype(T::kPairSum16)>> : std::true_type {};

template <int Bits, class Ops, typename I>
void bag_loop(const BagArgs& a, int64_t b0, int64_t b1) {
  const I* __restrict idx = static_cast<const I*>(a.indices);
  const int32_t* __restrict map = a.mapping;
  const uint8_t* __restrict table = a.table;
  const int64_t dim = a.dim, rb = a.row_bytes;
  const int64_t code_bytes = Bits == 8 ? dim : Bits == 4 ? dim / 2 : dim / 4;
  const int64_t pend = a.offsets[b1];
  const int64_t kPrefetch = a.prefetch;
  auto row_of = [&](int64_t i) QPLUGIN_LAMBDA_INLINE -> int64_t {
    const int64_t r = static_cast<int64_t>(idx[i]);
    return map != nullptr ? static_cast<int64_t>(map[r]) : r;
  };
  // Two stages per row: kPrefetch positions ahead only its first line (one page walk per row:
  // random rows of a large table miss the TLB, and several prefetches into one unmapped page
  // start several walks), kPrefetch / 2 ahead the rest of its lines (the translation is cached
  // by then; 8-bit rows of 136 bytes span up to 4 lines).
  auto prefetch = [&](int64_t i) QPLUGIN_LAMBDA_INLINE {
    if (kPrefetch == 0) return;  // a table the caches hold
    const int64_t j = i - kPrefetch / 2;
    if (j < pend && j >= a.offsets[b0]) {
      const int64_t r = row_of(j);
      if (r >= 0) {
        const char* p = reinterpret_cast<const char*>(table + r * rb);
        for (int64_t off = 64; off < rb; off += 64) prefetch_line(p + off);
        prefetch_line(p + rb - 1);
      }
    }
    if (i >= pend) return;
    const int64_t r = row_of(i);
    if (r < 0) return;
    prefetch_line(reinterpret_cast<const char*>(table + r * rb));
  };
  auto scale_bias = [&](const uint8_t* row, float* s, float* b) QPLUGIN_LAMBDA_INLINE {
    row_scale_bias<Bits>(row, code_bytes, s, b);
  };
  // Warm-up: every line of the first kPrefetch rows.
  for (int64_t i = a.offsets[b0]; i < a.offsets[b0] + kPrefetch && i < pend; ++i) {
    const int64_t r = row_of(i);
    if (r < 0) continue;
    const char* p = reinterpret_cast<const char*>(table + r * rb);
    for (int64_t off = 0; off < rb; off += 64) prefetch_line(p + off);
    prefetch_line(p + rb - 1);
  }
  // The rows of positions [s0, s1) in order: add(row, scale, bias) for each row not pruned (scale
  // and bias times the sample's weight when there are weights). Returns how many. Lean: a call
  // without mapping or weights on a table the caches hold (prefetch <= kNearPrefetch), where the
  // checks per row cost more than the row (16 columns: 2.4x the time): one prefetch stage, every
  // line of the row kPrefetch positions ahead (none for tables within L2).
  const bool lean = map == nullptr && a.weights == nullptr && kPrefetch <= kNearPrefetch;
  const float* __restrict w = a.weights;
  auto walk = [&](int64_t s0, int64_t s1, auto lean_tag, auto&& add) QPLUGIN_LAMBDA_INLINE
      -> int64_t {
    if constexpr (decltype(lean_tag)::value) {
      auto take = [&](int64_t i) QPLUGIN_LAMBDA_INLINE {
        const uint8_t* row = table + static_cast<int64_t>(idx[i]) * rb;
        float sc, bi;
        scale_bias(row, &sc, &bi);
        add(row, sc, bi);
      };
      if (kPrefetch == 0) {  // the test out of the loop: 10% of a 16-column row's time
        for (int64_t i = s0; i < s1; ++i) take(i);
        return s1 - s0;
      }
      for (int64_t i = s0; i < s1; ++i) {
        if (i + kPrefetch < pend) {
          const char* p =
              reinterpret_cast<const char*>(table + static_cast<int64_t>(idx[i + kPrefetch]) * rb);
          // The row's first and last lines; the ones between only for rows over 129 bytes
          // (a shorter row spans a third line only at some alignments, and the loop cost more
          // than those misses: 8-bit rows of 64 columns 0.144 -> 0.131 ms, Zen 5).
          prefetch_line<true>(p);
          prefetch_line<true>(p + rb - 1);
          if (rb > 129) {
            for (int64_t off = 64; off < rb - 1; off += 64) prefetch_line<true>(p + off);
          }
        }
        take(i);
      }
      return s1 - s0;
    } else {
      int64_t count = 0;
      for (int64_t i = s0; i < s1; ++i) {
        prefetch(i + kPrefetch);
        const int64_t r = row_of(i);
        if (r < 0) continue;
        ++count;
        const uint8_t* row = table + r * rb;
        float sc, bi;
        scale_bias(row, &sc, &bi);
        if (w != nullptr) {
          sc = w[i] * sc;
          bi = w[i] * bi;
        }
        add(row, sc, bi);
      }
      return count;
    }
  };
  // Sum and mean: o holds the sum of the rows' scale * q terms; add the biases' sum (or the mean).
  auto finish_sum = [&](float* __restrict o, int64_t count, float bsum) QPLUGIN_LAMBDA_INLINE {
    if (a.mode == BagMode::kMean && count > 0) {
      const float n = static_cast<float>(count);
      for (int64_t d = 0; d < dim; ++d) o[d] = (o[d] + bsum) / n;
    } else {
      for (int64_t d = 0; d < dim; ++d) o[d] = o[d] + bsum;
    }
  };
  // Rows up to Ops::kRegCols wide (of the widths Ops::with_reg_shape takes) reduce as they
  // come, in registers (Ops::RegAcc<Bits, Max, S>, its shape S from with_reg_shape:
  // a max bag's first row sets, the others take the max; a sum is acc = fma(a, q, acc) from 0,
  // rows in order). Wider rows are collected kBatch at a time and reduced by the mode's
  // register-blocked batch form, Ops::reduce_rows<Bits, Max> (the same bytes).
  constexpr int64_t kBatch = 32;
  const uint8_t* rows[kBatch];
  float mult[kBatch];
  float bias[kBatch];
  const bool is_max = a.mode == BagMode::kMax;
  // The register accumulators' view of a row (its column masks), once per call.
  const auto shape = [&] {
    if constexpr (Ops::kRegCols > 0) {
      return typename Ops::RowShape(dim);
    } else {
      return 0;
    }
  }();

  int64_t bag_start = b0;
  if constexpr (HasPairSum16<Ops>::value && Bits != 2) {
    // 16-column sum / mean bags, a table within L2, no mapping or weights (Ops::pair_sum16).
    if (lean && kPrefetch == 0 && dim == 16 && !is_max) {
      bag_start = Ops::template pair_sum16<Bits, I>(a, b0, b1);
    }
  }
  for (int64_t bag = bag_start; bag < b1; ++bag) {
    float* __restrict o = a.out + bag * dim;
    const int64_t s0 = a.offsets[bag], s1 = a.offsets[bag + 1];
    float bsum = 0.0f;
    if constexpr (Ops::kRegCols > 0) {
      if (dim <= Ops::kRegCols) {
        auto in_regs = [&](auto max_tag, auto ng_tag, auto lean_tag) QPLUGIN_LAMBDA_INLINE {
          constexpr bool kMax = decltype(max_tag)::value;
          typename Ops::template RegAcc<Bits, kMax, decltype(ng_tag)> acc(shape);
          const int64_t count = walk(s0, s1, lean_tag, [&](const uint8_t* row, float sc, float bi)
                                                           QPLUGIN_LAMBDA_INLINE {
            acc.add(row, sc, bi);
            bsum += bi;
          });
          if (!kMax) {  // finish_sum in registers (zeros for an empty bag)
            const bool mean = a.mode == BagMode::kMean && count > 0;
            acc.store_sum(o, bsum, mean ? static_cast<float>(count) : 0.0f);
          } else if (count == 0) {  // an empty bag, or all its rows pruned
            std::memset(o, 0, static_cast<size_t>(dim) * sizeof(float));
          } else {
            acc.store(o);
          }
        };
        auto dispatch = [&](auto ng_tag) QPLUGIN_LAMBDA_INLINE {
          if (is_max) {
            in_regs(std::true_type{}, ng_tag, std::false_type{});
          } else if (lean) {
            in_regs(std::false_type{}, ng_tag, std::true_type{});
          } else {
            in_regs(std::false_type{}, ng_tag, std::false_type{});
          }
        };
        const bool far = kPrefetch > kNearPrefetch && a.far_regs;
        if (Ops::template with_reg_shape<Bits>(dim, far, dispatch)) {
          continue;
        }
      }
    }
    int64_t nb = 0;
    bool init = true;  // no row reduced into o yet
    auto flush = [&]() {
      if (is_max) {
        Ops::template reduce_rows<Bits, true>(o, rows, mult, bias, nb, dim, init);
      } else {
        Ops::template reduce_rows<Bits, false>(o, rows, mult, bias, nb, dim, init);
      }
      init = false;
      nb = 0;
    };
    auto collect = [&](const uint8_t* row, float sc, float bi) QPLUGIN_LAMBDA_INLINE {
      rows[nb] = row;
      mult[nb] = sc;
      bias[nb] = bi;
      ++nb;
      bsum += bi;
      if (nb == kBatch) flush();
    };
    const int64_t count = lean ? walk(s0, s1, std::true_type{}, collect)
                               : walk(s0, s1, std::false_type{}, collect);
    if (nb > 0) flush();
    if (init) {  // an empty bag, or all its rows pruned: zeros in every mode
      std::memset(o, 0, static_cast<size_t>(dim) * sizeof(float));
      continue;
    }
    if (!is_max) finish_sum(o, count, bsum);
  }
}

template <int Bits, class Ops>
void bag(const BagArgs& a, int64_t b0, int64_t b1) {
  if (b1 <= b0) return;
  if (a.indices_64) {
    bag_loop<Bits, Ops, int64_t>(a, b0, b1);
  } else {
    bag_loop<Bits, Ops, int32_t>(a, b0, b1);
  }
}

template <typename I>
bool in_range(const I* __restrict p, int64_t i0, int64_t i1, int64_t limit) {
  if (i1 <= i0) return true;
  I mn = p[i0], mx = p[i0];
  for (int64_t i = i0 + 1; i < i1; ++i) {
    mn = p[i] < mn ? p[i] : mn;
    mx = p[i] > mx ? p[i] : mx;
  }
  return mn >= 0 && static_cast<int64_t>(mx) < limit;
}

inline bool indices_in_range(const void* indices, bool indices_64, int64_t i0, int64_t i1,
                             int64_t limit) {
  return indices_64 ? in_range(static_cast<const int64_t*>(indices), i0, i1, limit)
                    : in_range(static_cast<const int32_t*>(indices), i0, i1, limit);
}

template <class Ops>
EmbeddingKernelTable make(Isa isa, const char* name8, const char* name4, const char* name2) {
  EmbeddingKernelTable t{};
  t.isa = isa;
  t.bag_8bit = &bag<8, Ops>;
  t.bag_4bit = &bag<4, Ops>;
  t.bag_2bit = &bag<2, Ops>;
  t.indices_in_range = &indices_in_range;
  t.name_8bit = name8;
  t.name_4bit = name4;
  t.name_2bit = name2;
  return t;
}

}  // namespace embedding_generic
}  // namespace QPLUGIN_ISA_NS
}  // namespace kernels
}  // namespace qplugin
