// crc32_copy(): the payload copied and its CRC summed in one pass over the bytes.
//
// CRC-32 by folding (Gopal et al., "Fast CRC Computation for Generic
// Polynomials Using PCLMULQDQ", Intel 2009), with the loads that feed the fold
// stored to the destination as they are made. Four 512-bit accumulators
// (sixteen 128-bit lanes) take 256 bytes a round: a copy's bandwidth, not the
// CRC's latency, sets the pace. The folded 128-bit remainder and the last
// bytes under 16 are finished by ISA-L, so no reduction step is written here.
//
// Reflected domain: bit i of a little-endian 128-bit lane is the coefficient of
// x^(127-i). For a 64-bit half L (the high-order half sits in the low qword)
// and a constant c placed reflected in 64 bits, clmul gives L*c*x in 128 bits;
// the constants are therefore x^(n-1) mod P where the fold needs x^n mod P.
// They are computed at compile time from the polynomial, not tabulated.
// GCC 12 warns of the pass-through operand (_mm512_undefined_epi32) inside
// its own AVX-512 intrinsics.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#include <isa-l/crc.h>

#include <cpuid.h>
#include <cstring>

#include "tita/wire/icrc.h"

namespace tita::wire {
namespace {

constexpr uint64_t kPolynomial = 0x104C11DB7;  // CRC-32 (IEEE 802.3), x^32 included

constexpr uint32_t x_pow_mod(uint32_t n) {
  uint64_t r = 1;
  for (uint32_t i = 0; i < n; ++i) {
    r <<= 1;
    if (r >> 32) r ^= kPolynomial;
  }
  return static_cast<uint32_t>(r);
}

// x^(n-1) mod P, bit-reflected into the top half of a qword.
constexpr uint64_t reflected_constant(uint32_t n) {
  const uint32_t c = x_pow_mod(n - 1);
  uint64_t r = 0;
  for (int d = 0; d < 32; ++d) {
    if ((c >> d) & 1u) r |= uint64_t{1} << (63 - d);
  }
  return r;
}

// Multiplies a 128-bit lane by x^bits mod P: low qword by x^(bits+64), high by x^bits.
struct Fold {
  uint64_t low, high;
};
constexpr Fold fold_by(uint32_t bits) { return {reflected_constant(bits + 64), reflected_constant(bits)}; }

constexpr Fold k128 = fold_by(128), k256 = fold_by(256), k384 = fold_by(384), k512 = fold_by(512),
               k2048 = fold_by(2048);

#define TITA_FOLD_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul")))

TITA_FOLD_TARGET inline __m128i lane(Fold k) {
  return _mm_set_epi64x(static_cast<long long>(k.high), static_cast<long long>(k.low));
}

TITA_FOLD_TARGET inline __m128i fold(__m128i a, Fold k) {
  const __m128i c = lane(k);
  return _mm_xor_si128(_mm_clmulepi64_si128(a, c, 0x00), _mm_clmulepi64_si128(a, c, 0x11));
}

// a folded forward by k, plus next: four lanes at once.
TITA_FOLD_TARGET inline __m512i fold(__m512i a, __m512i k, __m512i next) {
  return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, k, 0x00), _mm512_clmulepi64_epi128(a, k, 0x11), next,
                                   0x96);  // a ^ b ^ c
}

TITA_FOLD_TARGET inline __m512i copy64(uint8_t* dst, const uint8_t* src) {
  const __m512i v = _mm512_loadu_si512(src);
  _mm512_storeu_si512(dst, v);
  return v;
}

// len >= 256 (the four accumulators' first loads); used from kFoldMinBytes up.
TITA_FOLD_TARGET uint32_t crc32_copy_vpclmul(uint8_t* dst, const uint8_t* src, size_t len, uint32_t crc) {
  __m512i x0 = copy64(dst, src), x1 = copy64(dst + 64, src + 64), x2 = copy64(dst + 128, src + 128),
          x3 = copy64(dst + 192, src + 192);
  // The running CRC's register enters as the first 32 message bits.
  x0 = _mm512_xor_si512(x0, _mm512_maskz_set1_epi32(1, static_cast<int>(~crc)));
  size_t at = 256;
  const __m512i by2048 = _mm512_broadcast_i32x4(lane(k2048));
  for (; at + 256 <= len; at += 256) {
    x0 = fold(x0, by2048, copy64(dst + at, src + at));
    x1 = fold(x1, by2048, copy64(dst + at + 64, src + at + 64));
    x2 = fold(x2, by2048, copy64(dst + at + 128, src + at + 128));
    x3 = fold(x3, by2048, copy64(dst + at + 192, src + at + 192));
  }
  const __m512i by512 = _mm512_broadcast_i32x4(lane(k512));
  __m512i y = fold(fold(fold(x0, by512, x1), by512, x2), by512, x3);
  for (; at + 64 <= len; at += 64) y = fold(y, by512, copy64(dst + at, src + at));
  __m128i r = _mm_ternarylogic_epi64(fold(_mm512_extracti32x4_epi32(y, 0), k384),
                                     fold(_mm512_extracti32x4_epi32(y, 1), k256),
                                     fold(_mm512_extracti32x4_epi32(y, 2), k128), 0x96);
  r = _mm_xor_si128(r, _mm512_extracti32x4_epi32(y, 3));
  for (; at + 16 <= len; at += 16) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + at));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + at), v);
    r = _mm_xor_si128(fold(r, k128), v);
  }
  // r is congruent to everything so far: its CRC from a zero register is theirs.
  alignas(16) uint8_t rest[16];
  _mm_store_si128(reinterpret_cast<__m128i*>(rest), r);
  uint32_t out = crc32_gzip_refl(~0u, rest, sizeof rest);
  if (at < len) {
    std::memcpy(dst + at, src + at, len - at);
    out = crc32_gzip_refl(out, src + at, len - at);
  }
  return out;
}

#undef TITA_FOLD_TARGET

bool cpu_folds() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx) || !(ecx & bit_PCLMUL) || !(ecx & bit_OSXSAVE)) return false;
  // The OS must save the AVX-512 registers (XCR0: SSE, AVX, opmask, ZMM).
  unsigned xcr0_low, xcr0_high;
  __asm__("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
  if ((xcr0_low & 0xe6) != 0xe6) return false;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  return (ecx & bit_VPCLMULQDQ) && (ebx & bit_AVX512F) && (ebx & bit_AVX512VL);
}

const bool kFolds = cpu_folds();

// Below this the fold's set-up and reduction cost more than a second pass over
// bytes still in L1 (bench/wire: BM_Crc32Copy against BM_CopyThenCrc32, even
// at about 1 KB on a Zen 5).
constexpr size_t kFoldMinBytes = 1024;

}  // namespace

uint32_t crc32_copy(void* dst, const void* src, size_t len, uint32_t crc) {
  if (kFolds && len >= kFoldMinBytes) {
    return crc32_copy_vpclmul(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), len, crc);
  }
  std::memcpy(dst, src, len);
  return crc32(crc, src, len);
}

std::string_view crc32_copy_implementation() {
  return kFolds ? "fused copy + vpclmulqdq fold (avx512)" : "memcpy then isa-l crc32_gzip_refl";
}

}  // namespace tita::wire
