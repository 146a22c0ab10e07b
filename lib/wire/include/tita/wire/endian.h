// Big-endian wire fields. Each is an array of bytes (alignment 1), so header
// structs built from them need no packing attribute and can overlay any buffer.
#pragma once

#include <cstdint>
#include <cstring>

namespace tita::wire {

template <int N, typename T>
struct BigEndian {
  static_assert(N >= 1 && N <= 8 && N <= static_cast<int>(sizeof(T)));
  uint8_t b[N];

  // Whole-word loads and stores with one byte swap for the natural widths; a
  // byte loop for 24 bits.
  T get() const {
    if constexpr (N == 2 || N == 4 || N == 8) {
      T v;
      std::memcpy(&v, b, N);
      return swap(v);
    } else {
      T v = 0;
      for (int i = 0; i < N; ++i) v = static_cast<T>((v << 8) | b[i]);
      return v;
    }
  }
  void set(T v) {
    if constexpr (N == 2 || N == 4 || N == 8) {
      v = swap(v);
      std::memcpy(b, &v, N);
    } else {
      for (int i = N - 1; i >= 0; --i) {
        b[i] = static_cast<uint8_t>(v & 0xff);
        v = static_cast<T>(v >> 8);
      }
    }
  }

 private:
  static T swap(T v) {
    if constexpr (N == 2) return static_cast<T>(__builtin_bswap16(static_cast<uint16_t>(v)));
    if constexpr (N == 4) return static_cast<T>(__builtin_bswap32(static_cast<uint32_t>(v)));
    if constexpr (N == 8) return static_cast<T>(__builtin_bswap64(static_cast<uint64_t>(v)));
    return v;
  }
};

using be16 = BigEndian<2, uint16_t>;
using be24 = BigEndian<3, uint32_t>;
using be32 = BigEndian<4, uint32_t>;
using be64 = BigEndian<8, uint64_t>;

static_assert(sizeof(be16) == 2 && alignof(be16) == 1);
static_assert(sizeof(be24) == 3 && alignof(be24) == 1);
static_assert(sizeof(be32) == 4 && alignof(be32) == 1);
static_assert(sizeof(be64) == 8 && alignof(be64) == 1);

// Loads and stores of little-endian words from unaligned bytes (the ICRC is
// stored least-significant byte first).
inline uint32_t load_le32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline void store_le32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tita assumes a little-endian host");

}  // namespace tita::wire
