// Widening 8-bit codes to 32-bit lanes, sign- or zero-extended by the code type T (int8_t /
// uint8_t), and their bytewise max, shared by the kernel files of several families. Included INSIDE an ISA namespace (in
// its anonymous namespace) after <immintrin.h> and <type_traits>, so each ISA gets its own copy
// compiled with its own flags and no inline function is shared across ISA objects (ODR). No
// include guard: one ISA per translation unit, and a file includes it once.
// Changes with: binary/binary_{avx2,avx512vnni}.cpp, softmax/softmax_{avx2,avx512vnni}.cpp.

// Bytewise max of 16 codes of type T (SSE4.1).
template <typename T>
inline __m128i max16(__m128i a, __m128i b) {
  return std::is_signed<T>::value ? _mm_max_epi8(a, b) : _mm_max_epu8(a, b);
}

#ifdef __AVX2__
// 8 codes at x (an 8-byte load) -> 8 int32 lanes.
template <typename T>
inline __m256i widen8(const T* x) {
  const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(x));
  return std::is_signed<T>::value ? _mm256_cvtepi8_epi32(v) : _mm256_cvtepu8_epi32(v);
}
#endif

#ifdef __AVX512F__
// 16 codes in v -> 16 int32 lanes.
template <typename T>
inline __m512i widen(__m128i v) {
  return std::is_signed<T>::value ? _mm512_cvtepi8_epi32(v) : _mm512_cvtepu8_epi32(v);
}
#endif
