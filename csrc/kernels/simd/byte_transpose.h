// 16x16 byte transposes (the unpack network: bytes, words, dwords, qwords), shared by the kernel
// files of several families. Included INSIDE an ISA namespace (qplugin::kernels::<isa>, in its
// anonymous namespace) after <immintrin.h>, so each ISA gets its own copy compiled with its own
// flags and no inline function is shared across ISA objects (ODR). No include guard: one ISA per
// translation unit, and a file includes it once.
// Changes with: elementwise_{avx2,avx512vnni}.cpp, conv/dwconv_avx512vnni.cpp.

// r[k]: row k of 16 bytes (e.g. channel k, pixels 0..15) -> out[j]: column j (pixel j,
// channels 0..15). SSE2 only.
inline void transpose16x16(const __m128i* r, __m128i* out) {
  __m128i a[16], b[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  for (int m = 0; m < 4; ++m) {
    b[4 * m + 0] = _mm_unpacklo_epi16(a[4 * m], a[4 * m + 2]);
    b[4 * m + 1] = _mm_unpackhi_epi16(a[4 * m], a[4 * m + 2]);
    b[4 * m + 2] = _mm_unpacklo_epi16(a[4 * m + 1], a[4 * m + 3]);
    b[4 * m + 3] = _mm_unpackhi_epi16(a[4 * m + 1], a[4 * m + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    __m128i clo = _mm_unpacklo_epi32(b[q], b[4 + q]);
    __m128i chi = _mm_unpackhi_epi32(b[q], b[4 + q]);
    __m128i dlo = _mm_unpacklo_epi32(b[8 + q], b[12 + q]);
    __m128i dhi = _mm_unpackhi_epi32(b[8 + q], b[12 + q]);
    out[4 * q + 0] = _mm_unpacklo_epi64(clo, dlo);
    out[4 * q + 1] = _mm_unpackhi_epi64(clo, dlo);
    out[4 * q + 2] = _mm_unpacklo_epi64(chi, dhi);
    out[4 * q + 3] = _mm_unpackhi_epi64(chi, dhi);
  }
}

#ifdef __AVX512BW__
// The same network on four 128-bit lanes at once: in r[k] lane L = channel k, pixels
// 16L..16L+15; out[j] lane L = pixel 16L+j, channels 0..15.
inline void transpose16x16x4(const __m512i* r, __m512i* out) {
  __m512i a[16], b[16];
  for (int k = 0; k < 8; ++k) {
    a[2 * k] = _mm512_unpacklo_epi8(r[2 * k], r[2 * k + 1]);
    a[2 * k + 1] = _mm512_unpackhi_epi8(r[2 * k], r[2 * k + 1]);
  }
  for (int m = 0; m < 4; ++m) {
    b[4 * m + 0] = _mm512_unpacklo_epi16(a[4 * m], a[4 * m + 2]);
    b[4 * m + 1] = _mm512_unpackhi_epi16(a[4 * m], a[4 * m + 2]);
    b[4 * m + 2] = _mm512_unpacklo_epi16(a[4 * m + 1], a[4 * m + 3]);
    b[4 * m + 3] = _mm512_unpackhi_epi16(a[4 * m + 1], a[4 * m + 3]);
  }
  for (int q = 0; q < 4; ++q) {
    __m512i clo = _mm512_unpacklo_epi32(b[q], b[4 + q]);
    __m512i chi = _mm512_unpackhi_epi32(b[q], b[4 + q]);
    __m512i dlo = _mm512_unpacklo_epi32(b[8 + q], b[12 + q]);
    __m512i dhi = _mm512_unpackhi_epi32(b[8 + q], b[12 + q]);
    out[4 * q + 0] = _mm512_unpacklo_epi64(clo, dlo);
    out[4 * q + 1] = _mm512_unpackhi_epi64(clo, dlo);
    out[4 * q + 2] = _mm512_unpacklo_epi64(chi, dhi);
    out[4 * q + 3] = _mm512_unpackhi_epi64(chi, dhi);
  }
}
#endif  // __AVX512BW__
