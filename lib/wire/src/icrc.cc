#include "tita/wire/icrc.h"

#include <isa-l/crc.h>

#include <cpuid.h>
#include <cstring>

#include "tita/wire/headers.h"

namespace tita::wire {

uint32_t crc32(uint32_t crc, const void* data, size_t len) {
  // crc32_gzip_refl takes and returns the finished (post-inverted) value, like zlib.
  return crc32_gzip_refl(crc, static_cast<const unsigned char*>(data), len);
}

std::string_view crc32_implementation() {
  // ISA-L picks its code path at first call by CPU features; report the same choice.
  unsigned eax, ebx, ecx, edx;
  bool pclmul = false, vpclmul = false, avx512 = false;
  if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) pclmul = ecx & bit_PCLMUL;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) {
    vpclmul = ecx & bit_VPCLMULQDQ;
    avx512 = (ebx & bit_AVX512F) && (ebx & bit_AVX512BW) && (ebx & bit_AVX512VL);
  }
  if (vpclmul && avx512) return "isa-l crc32_gzip_refl (vpclmulqdq/avx512)";
  if (pclmul) return "isa-l crc32_gzip_refl (pclmulqdq/sse)";
  return "isa-l crc32_gzip_refl (table)";
}

namespace {

// crc32(0, eight 0xFF bytes): the CRC state after the LRH stand-in (a test checks it).
constexpr uint32_t kLrhStandInCrc = 0x2144df1c;

// Copies the headers from IP through BTH into `out` with the variant fields set to
// ones; returns the number of bytes copied, 0 if `contiguous` is too short.
uint32_t masked_headers(const uint8_t* l3, uint32_t contiguous, uint8_t* out) {
  uint32_t ip_bytes;
  if ((l3[0] >> 4) == 6) {
    ip_bytes = sizeof(Ipv6Hdr);
  } else {
    ip_bytes = (l3[0] & 0x0fu) * 4u;
  }
  const uint32_t n = ip_bytes + sizeof(UdpHdr) + sizeof(Bth);
  if (contiguous < n || ip_bytes < sizeof(Ipv4Hdr)) return 0;
  std::memcpy(out, l3, n);
  if ((l3[0] >> 4) == 6) {
    auto* ip = reinterpret_cast<Ipv6Hdr*>(out);
    ip->version_tc_flow.set(0x6fffffff);
    ip->hop_limit = 0xff;
  } else {
    auto* ip = reinterpret_cast<Ipv4Hdr*>(out);
    ip->tos = 0xff;
    ip->ttl = 0xff;
    ip->checksum.set(0xffff);
  }
  auto* udp = reinterpret_cast<UdpHdr*>(out + ip_bytes);
  udp->checksum.set(0xffff);
  auto* bth = reinterpret_cast<Bth*>(out + ip_bytes + sizeof(UdpHdr));
  bth->fecn_becn = 0xff;
  return n;
}

}  // namespace

uint32_t icrc_compute(const uint8_t* l3, uint32_t contiguous, std::span<const Segment> more) {
  // Callers (parse, build) have checked that `contiguous` covers IP, UDP and BTH.
  uint8_t masked[60 + sizeof(UdpHdr) + sizeof(Bth)];  // largest IPv4 header (IHL 15) or IPv6
  const uint32_t n = masked_headers(l3, contiguous, masked);
  uint32_t crc = crc32(kLrhStandInCrc, masked, n);
  crc = crc32(crc, l3 + n, contiguous - n);
  for (const Segment& s : more) crc = crc32(crc, s.data, s.len);
  return crc;
}

}  // namespace tita::wire
