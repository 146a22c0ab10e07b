// The shared-buffer MMU: exact admission, dynamic-threshold and PFC hysteresis
// arithmetic on a small buffer. Every expected number is derived in a comment.
#include <gtest/gtest.h>

#include <vector>

#include "tita/fabric/mmu.h"

namespace tita::fabric {
namespace {

// 2 ports, 1 MB: shared = 1,000,000 - 2*8*1,000 (reserve) - 2*1*10,000 (headroom
// of the one lossless priority) = 964,000.
MmuConfig small(bool lossless3 = true) {
  MmuConfig c;
  c.buffer_bytes = 1'000'000;
  c.reserve_bytes = 1000;
  c.headroom_bytes = 10'000;
  c.lossless = lossless3 ? 1u << 3 : 0;
  c.egress_alpha = 1.0;
  c.pfc_alpha = 0.125;
  c.resume_offset_bytes = 3000;
  return c;
}

Mmu make(const MmuConfig& c, uint16_t ports = 2) {
  Mmu m;
  std::string err;
  EXPECT_EQ(m.init(c, ports, &err), 0) << err;
  return m;
}

TEST(Mmu, SharedIsBufferLessReserveAndHeadroom) {
  Mmu m = make(small());
  EXPECT_EQ(m.shared_bytes(), 964'000u);
  EXPECT_EQ(m.xoff_threshold(0), 120'500u);    // 0.125 * 964,000
  EXPECT_EQ(m.egress_threshold(), 964'000u);  // 1.0 * 964,000
  Mmu lossy = make(small(false));
  EXPECT_EQ(lossy.shared_bytes(), 984'000u);  // no headroom without lossless priorities
}

TEST(Mmu, PerPortHeadroomAndAlphaAsTheHpccSimulatorSizesThem) {
  // Port 0 a 100G host port (alpha 1/8, headroom 37,500 = 3 x 100 Gb/s x 1 us),
  // port 1 a 400G uplink (alpha 1/2, headroom 150,000).
  MmuConfig c = small();
  c.port_headroom_bytes = {37'500, 150'000};
  c.port_pfc_alpha = {0.125, 0.5};
  Mmu m = make(c);
  // shared = 1,000,000 - 16,000 (reserve) - 187,500 (headroom) = 796,500.
  EXPECT_EQ(m.shared_bytes(), 796'500u);
  EXPECT_EQ(m.headroom_bytes(0), 37'500u);
  EXPECT_EQ(m.xoff_threshold(0), 99'562u);   // 0.125 x 796,500
  EXPECT_EQ(m.xoff_threshold(1), 398'250u);  // 0.5 x 796,500
  // 200,000 B into port 0 (reserve 1,000): over its threshold, it pauses and
  // fills headroom up to 37,500, then drops; port 1 takes them in shared.
  uint64_t headroom = 0;
  bool dropped = false;
  for (int i = 0; i < 200; ++i) {
    const Admission a = m.admit(0, 1, 3, 1000);
    dropped |= !a.admitted;
    if (!a.admitted) {
      EXPECT_EQ(a.reason, DropReason::kHeadroomFull);
    }
  }
  headroom = m.headroom_used(0, 3);
  EXPECT_TRUE(m.paused(0, 3));
  EXPECT_TRUE(dropped);
  EXPECT_EQ(headroom, 37'000u);  // whole 1,000 B packets within 37,500
  for (int i = 0; i < 200; ++i) EXPECT_TRUE(m.admit(1, 0, 3, 1000).admitted);
  EXPECT_FALSE(m.paused(1, 3));
  // A per-port list of the wrong length is refused.
  c.port_pfc_alpha = {0.125};
  Mmu bad;
  std::string err;
  EXPECT_EQ(bad.init(c, 2, &err), -EINVAL);
  EXPECT_NE(err.find("one value per port"), std::string::npos) << err;
}

TEST(Mmu, BadConfigsAreRefused) {
  Mmu m;
  std::string err;
  MmuConfig c = small();
  EXPECT_EQ(m.init(c, 0, &err), -EINVAL);
  c.buffer_bytes = 36'000;  // exactly the reserves and headroom: no shared buffer
  EXPECT_EQ(m.init(c, 2, &err), -EINVAL);
  EXPECT_NE(err.find("no shared buffer"), std::string::npos) << err;
  c = small();
  c.pfc_dynamic = false;
  c.xoff_bytes = 10'000;
  c.xon_bytes = 10'000;
  EXPECT_EQ(m.init(c, 2, &err), -EINVAL);
  c = small();
  c.egress_alpha = 0;
  EXPECT_EQ(m.init(c, 2, &err), -EINVAL);
}

TEST(Mmu, BufferScalesWithTheRadixAtItsPerPortShare) {
  // 32 MiB for a 64-port switch: 512 KiB a port.
  constexpr uint64_t k32MiB = 32ull << 20;
  EXPECT_EQ(scaled_buffer_bytes(k32MiB, 64, 64), k32MiB);
  EXPECT_EQ(scaled_buffer_bytes(k32MiB, 8, 64), k32MiB);  // smaller switches keep it
  EXPECT_EQ(scaled_buffer_bytes(k32MiB, 128, 64), 64ull << 20);
  EXPECT_EQ(scaled_buffer_bytes(k32MiB, 256, 64), 128ull << 20);
  EXPECT_EQ(scaled_buffer_bytes(1000, 3, 2), 1500u);
  EXPECT_EQ(scaled_buffer_bytes(1001, 3, 2), 1501u);  // 3003 / 2, rounded down
  EXPECT_EQ(scaled_buffer_bytes(k32MiB, 256, 0), k32MiB);  // 0: no scaling
  EXPECT_EQ(scaled_buffer_bytes(UINT64_MAX, 4, 1), UINT64_MAX);  // saturates

  // The spine of an 8,192-GPU multi-rail cluster: 256 ports of 400 Gb/s on
  // 1 us links, headroom 3 x 50,000 B/us x 1 us + 2 x 9,216 = 168,432 B a port.
  // Reserve 256 x 8 x 4,096 = 8,388,608 and headroom 256 x 168,432 =
  // 43,118,592: 51,507,200 B, more than 32 MiB, which a 64-port switch keeps.
  MmuConfig c;
  c.reserve_bytes = 4096;
  c.lossless = 1u << 3;
  c.port_headroom_bytes.assign(256, 168'432);
  EXPECT_EQ(reserved_bytes(c, 256), 51'507'200u);
  Mmu m;
  std::string err;
  c.buffer_bytes = k32MiB;
  EXPECT_EQ(m.init(c, 256, &err), -EINVAL);
  EXPECT_EQ(err, "buffer_bytes 33554432 leaves no shared buffer after 51507200 bytes of reserve and headroom");
  // Scaled to its radix: 128 MiB, of which 134,217,728 - 51,507,200 shared.
  c.buffer_bytes = scaled_buffer_bytes(k32MiB, 256, 64);
  ASSERT_EQ(m.init(c, 256, &err), 0) << err;
  EXPECT_EQ(m.shared_bytes(), 82'710'528u);
  // The same share on the 64-port spine of 2,048 GPUs: 32 MiB, shared
  // 33,554,432 - 64 x (32,768 + 168,432) = 20,677,632.
  c.port_headroom_bytes.assign(64, 168'432);
  c.buffer_bytes = scaled_buffer_bytes(k32MiB, 64, 64);
  ASSERT_EQ(m.init(c, 64, &err), 0) << err;
  EXPECT_EQ(m.shared_bytes(), 20'677'632u);
}

TEST(Mmu, LossyDynamicThresholdAlphaOne) {
  // Queue q (bytes) from one ingress group: the first 1000 bytes sit in the
  // group's reserve, the rest in shared, so shared_used = q - 1000. A packet is
  // admitted while q + 1000 <= 964,000 - (q - 1000), i.e. q <= 482,000 before
  // it: 483 packets, then the threshold is 964,000 - 482,000 = 482,000.
  Mmu m = make(small());
  int admitted = 0;
  Admission a;
  while ((a = m.admit(0, 1, 0, 1000)).admitted) ++admitted;
  EXPECT_EQ(admitted, 483);
  EXPECT_EQ(a.reason, DropReason::kEgressThreshold);
  EXPECT_EQ(m.egress_bytes(1, 0), 483'000u);
  EXPECT_EQ(m.shared_used(), 482'000u);
  EXPECT_EQ(m.egress_threshold(), 482'000u);
  EXPECT_EQ(m.ingress_bytes(0, 0), 483'000u);
  EXPECT_FALSE(a.xoff);
}

TEST(Mmu, LossyDynamicThresholdAlphaHalf) {
  // q + 1000 <= 0.5 * (964,000 - (q - 1000))  <=>  1.5 q <= 481,500  <=>  q <= 321,000: 322 packets.
  MmuConfig c = small();
  c.egress_alpha = 0.5;
  Mmu m = make(c);
  int admitted = 0;
  while (m.admit(0, 1, 0, 1000).admitted) ++admitted;
  EXPECT_EQ(admitted, 322);
}

TEST(Mmu, DynamicThresholdShrinksAsOthersFillTheBuffer) {
  // Queue (1,0) holds 200 packets (shared_used 199,000). Queue (0,1), fed by
  // another ingress group, is admitted while q + 1000 <= 964,000 - 199,000 - (q - 1000)
  // <=> q <= 382,500: 383 packets, fewer than the 483 it would get alone.
  Mmu m = make(small());
  for (int i = 0; i < 200; ++i) ASSERT_TRUE(m.admit(0, 1, 0, 1000).admitted);
  int admitted = 0;
  while (m.admit(1, 0, 1, 1000).admitted) ++admitted;
  EXPECT_EQ(admitted, 383);
}

TEST(Mmu, PortLimitAndSharedPoolExhaustion) {
  Mmu m = make(small(false));
  m.set_port_limit(1, 5000);
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(m.admit(0, 1, 0, 1000).admitted);
  EXPECT_EQ(m.admit(0, 1, 0, 1000).reason, DropReason::kPortBuffer);

  // 40,000 bytes: shared = 40,000 - 2*8*1,000 = 24,000. With alpha 1000 the
  // dynamic threshold never binds: 1 reserve + 24 shared packets, then the pool is full.
  MmuConfig c = small(false);
  c.buffer_bytes = 40'000;
  c.egress_alpha = 1000;
  Mmu f = make(c);
  int admitted = 0;
  Admission a;
  while ((a = f.admit(0, 1, 0, 1000)).admitted) ++admitted;
  EXPECT_EQ(admitted, 25);
  EXPECT_EQ(a.reason, DropReason::kBufferFull);
  EXPECT_EQ(f.shared_used(), 24'000u);
  // Another ingress group still has its reserve.
  EXPECT_TRUE(f.admit(1, 1, 0, 1000).admitted);
}

TEST(Mmu, PfcDynamicXoffHeadroomAndXonHysteresis) {
  // Lossless priority 3, ingress 0 -> egress 1, 1000-byte packets.
  // Packet 1 fills the reserve. Then a packet goes to shared while
  // S + 1000 <= 0.125 * (964,000 - S)  <=>  S <= 106,222: 107 packets (S = 107,000).
  // Packet 109: 108,000 > T = 0.125 * 857,000 = 107,125 -> headroom -> XOFF.
  Mmu m = make(small());
  int first_xoff = 0;
  for (int k = 1; k <= 108; ++k) {
    const Admission a = m.admit(0, 1, 3, 1000);
    ASSERT_TRUE(a.admitted);
    ASSERT_FALSE(a.xoff) << "packet " << k;
  }
  EXPECT_EQ(m.group_shared(0, 3), 107'000u);
  EXPECT_EQ(m.headroom_used(0, 3), 0u);
  const Admission x = m.admit(0, 1, 3, 1000);
  ASSERT_TRUE(x.admitted);
  EXPECT_TRUE(x.xoff);
  first_xoff = 109;
  EXPECT_EQ(first_xoff, 109);
  EXPECT_EQ(m.headroom_used(0, 3), 1000u);
  EXPECT_EQ(m.xoff_threshold(0), 107'125u);
  EXPECT_TRUE(m.paused(0, 3));
  // Headroom holds 10 packets; the 11th is dropped. XOFF is reported once.
  for (int k = 0; k < 9; ++k) {
    const Admission a = m.admit(0, 1, 3, 1000);
    ASSERT_TRUE(a.admitted);
    EXPECT_FALSE(a.xoff);
  }
  EXPECT_EQ(m.headroom_used(0, 3), 10'000u);
  EXPECT_EQ(m.admit(0, 1, 3, 1000).reason, DropReason::kHeadroomFull);
  // Lossless queues have no egress threshold: far above alpha * free.
  EXPECT_EQ(m.egress_bytes(1, 3), 118'000u);

  // Release: headroom first (10 packets), then S falls by 1000 per packet while
  // T = 0.125 * (964,000 - S) rises by 125: XON once S + 3000 <= T, i.e.
  // 110,000 - 1000 j <= 107,125 + 125 j  <=>  j >= 2.56: the 13th release.
  for (int r = 1; r <= 12; ++r) {
    ASSERT_FALSE(m.release(0, 1, 3, 1000)) << "release " << r;
    if (r <= 10) {
      EXPECT_EQ(m.headroom_used(0, 3), 10'000u - 1000u * r);
    }
  }
  EXPECT_EQ(m.group_shared(0, 3), 105'000u);
  EXPECT_TRUE(m.release(0, 1, 3, 1000));
  EXPECT_EQ(m.group_shared(0, 3), 104'000u);
  EXPECT_EQ(m.xoff_threshold(0), 107'500u);
  EXPECT_FALSE(m.paused(0, 3));
  EXPECT_FALSE(m.release(0, 1, 3, 1000));  // XON once
}

TEST(Mmu, PfcStaticThresholds) {
  // XOFF when S >= 20,000, XON when S <= 10,000 (S: the group's bytes above its reserve).
  MmuConfig c = small();
  c.pfc_dynamic = false;
  c.xoff_bytes = 20'000;
  c.xon_bytes = 10'000;
  Mmu m = make(c);
  for (int k = 1; k <= 20; ++k) ASSERT_FALSE(m.admit(0, 1, 3, 1000).xoff) << k;
  EXPECT_TRUE(m.admit(0, 1, 3, 1000).xoff);  // packet 21: S = 20,000
  EXPECT_EQ(m.group_shared(0, 3), 20'000u);
  ASSERT_TRUE(m.admit(0, 1, 3, 1000).admitted);  // to headroom
  ASSERT_TRUE(m.admit(0, 1, 3, 1000).admitted);
  EXPECT_EQ(m.headroom_used(0, 3), 2000u);
  // 2 releases empty the headroom, 10 more bring S to 10,000: XON on the 12th.
  for (int r = 1; r <= 11; ++r) ASSERT_FALSE(m.release(0, 1, 3, 1000)) << r;
  EXPECT_TRUE(m.release(0, 1, 3, 1000));
  EXPECT_EQ(m.group_shared(0, 3), 10'000u);
}

TEST(Mmu, EverythingReleasedReturnsToZero) {
  Mmu m = make(small());
  std::vector<int> admitted;
  for (int i = 0; i < 3000; ++i) {
    if (m.admit(static_cast<uint16_t>(i % 2), static_cast<uint16_t>((i / 2) % 2), static_cast<uint8_t>(i % 8),
                static_cast<uint32_t>(64 + i % 1400))
            .admitted) {
      admitted.push_back(i);
    }
  }
  EXPECT_LT(admitted.size(), 3000u);  // some were refused
  for (int i : admitted) {
    m.release(static_cast<uint16_t>(i % 2), static_cast<uint16_t>((i / 2) % 2), static_cast<uint8_t>(i % 8),
              static_cast<uint32_t>(64 + i % 1400));
  }
  EXPECT_EQ(m.shared_used(), 0u);
  EXPECT_EQ(m.total_bytes(), 0u);
  for (uint16_t p = 0; p < 2; ++p) {
    EXPECT_EQ(m.port_bytes(p), 0u);
    for (uint8_t q = 0; q < 8; ++q) {
      EXPECT_EQ(m.ingress_bytes(p, q), 0u);
      EXPECT_EQ(m.headroom_used(p, q), 0u);
      EXPECT_FALSE(m.paused(p, q));
    }
  }
}

}  // namespace
}  // namespace tita::fabric
