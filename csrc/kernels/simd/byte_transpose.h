// 16x16 byte transposes (the unpack network: bytes, words, dwords, qwords) and the NCHW -> NHWC
// block loop built on them, shared by the kernel files of several families. Included INSIDE an
// ISA namespace (qplugin::kernels::<isa>, in its anonymous namespace) after <immintrin.h>, so each
// ISA gets its own copy compiled with its own flags and no inline function is shared across ISA
// objects (ODR). No include guard: one ISA per translation unit, and a file includes it once.
// Changes with: elementwise_{avx2,avx512vnni}.cpp, conv/dwconv_avx512vnni.cpp.

// unpack<Bits, Hi>(a, b): the low (Hi false) or high halves of a and b interleaved in Bits-bit
// elements (per 128-bit lane), for __m128i (SSE2), __m256i (AVX2) and, with AVX-512 BW, __m512i.
#define QPLUGIN_UNPACK_FOR(V, P)                                                              \
  template <int Bits, bool Hi>                                                                \
  QPLUGIN_ALWAYS_INLINE V unpack(V a, V b) {                                                  \
    if constexpr (Bits == 8) return Hi ? P##_unpackhi_epi8(a, b) : P##_unpacklo_epi8(a, b);    \
    if constexpr (Bits == 16) return Hi ? P##_unpackhi_epi16(a, b) : P##_unpacklo_epi16(a, b); \
    if constexpr (Bits == 32) return Hi ? P##_unpackhi_epi32(a, b) : P##_unpacklo_epi32(a, b); \
    if constexpr (Bits == 64) return Hi ? P##_unpackhi_epi64(a, b) : P##_unpacklo_epi64(a, b); \
  }
QPLUGIN_UNPACK_FOR(__m128i, _mm)
#ifdef __AVX2__
QPLUGIN_UNPACK_FOR(__m256i, _mm256)
#endif
#ifdef __AVX512BW__
QPLUGIN_UNPACK_FOR(__m512i, _mm512)
#endif
#undef QPLUGIN_UNPACK_FOR

// Two rounds of the network on four rows x0..x3 of Bits-bit elements (then 2*Bits-bit ones):
//   o[0], o[1] = lo, hi of (lo(x0, x1), lo(x2, x3));
//   o[2], o[3] = lo, hi of (hi(x0, x1), hi(x2, x3)).
// E.g. Bits = 32 on four rows of four dwords per lane: o[e] holds dword e of x0, x1, x2, x3.
template <int Bits, class V>
QPLUGIN_ALWAYS_INLINE void unpack_quad(const V* x, V* o) {
  const V l01 = unpack<Bits, false>(x[0], x[1]), h01 = unpack<Bits, true>(x[0], x[1]);
  const V l23 = unpack<Bits, false>(x[2], x[3]), h23 = unpack<Bits, true>(x[2], x[3]);
  o[0] = unpack<2 * Bits, false>(l01, l23);
  o[1] = unpack<2 * Bits, true>(l01, l23);
  o[2] = unpack<2 * Bits, false>(h01, h23);
  o[3] = unpack<2 * Bits, true>(h01, h23);
}

// r[k]: row k of 16 bytes (e.g. channel k, pixels 0..15) -> out[j]: column j (pixel j,
// channels 0..15). On __m256i / __m512i the same on each 128-bit lane: in r[k] lane L =
// channel k, pixels 16L..16L+15; out[j] lane L = pixel 16L+j, channels 0..15. Bytes and words
// within each group of four rows, then dwords and qwords across the groups.
template <class V>
QPLUGIN_ALWAYS_INLINE void transpose16x16(const V* r, V* out) {
  V b[16];
  for (int m = 0; m < 4; ++m) unpack_quad<8>(r + 4 * m, b + 4 * m);
  for (int q = 0; q < 4; ++q) {
    const V x[4] = {b[q], b[4 + q], b[8 + q], b[12 + q]};
    unpack_quad<32>(x, out + 4 * q);
  }
}

// Stores the columns transpose16x16 wrote: pixel p's 16 bytes (out[p] for __m128i; lane L of
// out[j] is pixel 16L + j for __m512i) at y + p * ld.
QPLUGIN_ALWAYS_INLINE void store_columns(const __m128i* out, uint8_t* y, int64_t ld) {
  for (int j = 0; j < 16; ++j) _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j * ld), out[j]);
}
#ifdef __AVX2__
// __m256i: lane L of out[j] is pixel 16L + j (two 16x16 transposes side by side).
QPLUGIN_ALWAYS_INLINE void store_columns(const __m256i* out, uint8_t* y, int64_t ld) {
  for (int j = 0; j < 16; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j * ld), _mm256_castsi256_si128(out[j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (16 + j) * ld),
                     _mm256_extracti128_si256(out[j], 1));
  }
}
#endif  // __AVX2__
#ifdef __AVX512BW__
QPLUGIN_ALWAYS_INLINE void store_columns(const __m512i* out, uint8_t* y, int64_t ld) {
  for (int j = 0; j < 16; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + j * ld), _mm512_castsi512_si128(out[j]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (16 + j) * ld),
                     _mm512_extracti32x4_epi32(out[j], 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (32 + j) * ld),
                     _mm512_extracti32x4_epi32(out[j], 2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(y + (48 + j) * ld),
                     _mm512_extracti32x4_epi32(out[j], 3));
  }
}
#endif  // __AVX512BW__

// One image x [C][HW] -> y [HW][C] (bytes), pixels [p0, p1), in blocks of 16 channels x kPix
// pixels (kPix = sizeof(V): 16 for __m128i, 32 for __m256i, 64 for __m512i): row(c, p) returns
// channel c's kPix output bytes from pixel p, transposed and stored as 16-byte pixel rows; for
// the channels past the last multiple of 16, tail(c, p) writes pixels p..p+kPix-1 itself.
// Returns the first pixel left (fewer than kPix remain), for the caller's own tail.
template <class V, class Row, class Tail>
QPLUGIN_ALWAYS_INLINE int64_t nchw_to_nhwc_blocks(uint8_t* y, int64_t C, int64_t p0, int64_t p1,
                                                  Row row, Tail tail) {
  constexpr int64_t kPix = sizeof(V);
  const int64_t C16 = C - C % 16;
  int64_t pb = p0;
  for (; pb + kPix <= p1; pb += kPix) {
    for (int64_t c0 = 0; c0 < C16; c0 += 16) {
      V rows[16], cols[16];
      for (int k = 0; k < 16; ++k) rows[k] = row(c0 + k, pb);
      transpose16x16(rows, cols);
      store_columns(cols, y + pb * C + c0, C);
    }
    for (int64_t c = C16; c < C; ++c) tail(c, pb);
  }
  return pb;
}
