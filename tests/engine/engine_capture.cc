// Writes a pcap of two engines exchanging every verb over a lossy in-memory link
// (for tests/interop/engine_tshark.py and tests/fuzz/make_seeds.py):
//   engine_capture OUT.pcap [--selective-repeat]
// With --selective-repeat the QPs recover selectively (NAKs carry SACKs) and
// atomics are exchanged too.
#include <cstdio>
#include <string>

#include "sim_net.h"

using namespace tita::engine;
using namespace tita::test;

int main(int argc, char** argv) {
  const bool sr = argc == 3 && std::string(argv[2]) == "--selective-repeat";
  if (argc != 2 && !sr) {
    std::fprintf(stderr, "usage: engine_capture OUT.pcap [--selective-repeat]\n");
    return 2;
  }
  SimNet net(2, 25'000'000'000, 2'000, 3);
  std::string err;
  if (net.capture(argv[1], &err) != 0) {
    std::fprintf(stderr, "engine_capture: %s\n", err.c_str());
    return 1;
  }
  net.set_faults(0, 1, {.loss = 0.02});
  std::vector<uint8_t> mem[2];
  MrInfo mr[2];
  uint32_t qp[2], cq[2];
  for (int i = 0; i < 2; ++i) {
    Engine& e = net.engine(i);
    const uint32_t pd = e.alloc_pd();
    mem[i].assign(1 << 20, static_cast<uint8_t>(i));
    e.reg_mr(pd, mem[i].data(), mem[i].size(),
             kAccessLocalWrite | kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic, &mr[i]);
    e.create_cq(4096, &cq[i]);
    e.create_qp(pd, {.send_cq = cq[i], .recv_cq = cq[i]}, &qp[i]);
  }
  QpAttr attr;
  attr.timeout = 8;
  if (sr) attr.recovery = Recovery::kSelectiveRepeat;
  connect(net, 0, qp[0], 1, qp[1], attr, kAccessRemoteWrite | kAccessRemoteRead | kAccessRemoteAtomic);
  const std::vector<WrOpcode> ops =
      sr ? std::vector{WrOpcode::kSend, WrOpcode::kSendWithImm, WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm,
                       WrOpcode::kRdmaRead, WrOpcode::kAtomicFetchAndAdd, WrOpcode::kAtomicCmpAndSwp}
         : std::vector{WrOpcode::kSend, WrOpcode::kSendWithImm, WrOpcode::kRdmaWrite, WrOpcode::kRdmaWriteWithImm,
                       WrOpcode::kRdmaRead};
  int expected = 0, receives = 0;
  for (int round = 0; round < 20; ++round) {
    for (WrOpcode op : ops) {
      const bool atomic = op == WrOpcode::kAtomicFetchAndAdd || op == WrOpcode::kAtomicCmpAndSwp;
      const uint32_t len = atomic ? 8 : round % 2 ? 3000 : 100;
      Sge sge{mr[0].addr, len, mr[0].lkey};
      if (op == WrOpcode::kSend || op == WrOpcode::kSendWithImm || op == WrOpcode::kRdmaWriteWithImm) {
        Sge rs{mr[1].addr, 4096, mr[1].lkey};
        RecvWr r;
        r.sg_list = &rs;
        r.num_sge = 1;
        net.engine(1).post_recv(qp[1], &r, nullptr);
        ++receives;
      }
      SendWr wr;
      wr.opcode = op;
      wr.sg_list = &sge;
      wr.num_sge = 1;
      wr.rdma.remote_addr = mr[1].addr + 8192;
      wr.rdma.rkey = mr[1].rkey;
      wr.atomic.remote_addr = mr[1].addr + 64;
      wr.atomic.rkey = mr[1].rkey;
      wr.atomic.compare_add = 1;
      net.engine(0).post_send(qp[0], &wr, nullptr);
      ++expected;
    }
  }
  int done[2] = {0, 0};
  const bool ok = net.run_until(
      [&] {
        WorkCompletion wc[32];
        for (int i = 0; i < 2; ++i) done[i] += net.engine(i).poll_cq(cq[i], 32, wc);
        return done[0] >= expected && done[1] >= receives;
      },
      10'000'000'000);
  std::printf("engine_capture: %llu frames, %d/%d sends and %d/%d receives completed\n",
              static_cast<unsigned long long>(net.stats().frames), done[0], expected, done[1], receives);
  return ok ? 0 : 1;
}
