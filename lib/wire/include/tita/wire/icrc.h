// The RoCEv2 invariant CRC (ICRC).
//
// CRC-32 (IEEE 802.3: reflected polynomial 0x04C11DB7, init and final xor
// 0xFFFFFFFF) over eight 0xFF bytes standing in for the absent LRH, then the IP
// header, UDP header, BTH, extension headers, payload and pad, with the fields a
// router may change replaced by ones: IPv4 TOS, TTL and checksum; IPv6 traffic
// class, flow label and hop limit; the UDP checksum; BTH byte 4 (FECN, BECN,
// reserved). The result is stored least-significant byte first.
//
// The CRC is seedable, so headers and any number of payload segments are summed
// in place, without gathering them first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

namespace tita::wire {

// A piece of payload that is not contiguous with the headers.
struct Segment {
  const void* data;
  uint32_t len;
};

// CRC-32 of data, continuing from a previous result (0 to start): crc32(crc32(0, a), b)
// equals crc32(0, a followed by b). Equal to zlib's crc32().
uint32_t crc32(uint32_t crc, const void* data, size_t len);

// Which CRC code path runs on this CPU, e.g. "isa-l crc32_gzip_refl (vpclmulqdq/avx512)".
std::string_view crc32_implementation();

// Copies len bytes from src to dst (not overlapping) and returns crc32(crc, src,
// len), reading each byte once: on CPUs with VPCLMULQDQ and AVX-512 the CRC is
// folded from the copy's own loads (1 KB and more); elsewhere, and for fewer
// bytes, memcpy, then crc32() over the bytes just copied.
uint32_t crc32_copy(void* dst, const void* src, size_t len, uint32_t crc);

// Which of the two crc32_copy() runs on this CPU.
std::string_view crc32_copy_implementation();

// ICRC of a RoCEv2 packet. `l3` points at the IP header; `contiguous` bytes from
// there are in one buffer and must reach at least the end of the BTH; `more`
// continues the packet (payload segments, pad) up to, not including, the ICRC.
// The IP version is taken from the first nibble.
uint32_t icrc_compute(const uint8_t* l3, uint32_t contiguous, std::span<const Segment> more = {});

}  // namespace tita::wire
