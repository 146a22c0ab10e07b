// A program outside the tree that uses the installed headers and libtita.pc:
// builds a frame, parses it, and runs an engine and a congestion control.
#include <tita/cc/cc.h>
#include <tita/engine/engine.h>
#include <tita/wire/frame.h>

#include <cstdio>

struct NoIo : tita::engine::PacketIo {
  uint32_t tx_space() override { return 0; }
  void transmit_burst(uint64_t, const tita::engine::TxFrame*, uint32_t) override {}
};

int main() {
  tita::wire::FrameFields f;
  f.opcode = tita::wire::Opcode::kAck;
  uint8_t buf[128];
  const int len = tita::wire::build_frame(f, {}, buf, sizeof buf);
  tita::wire::Packet p;
  if (len <= 0 || tita::wire::parse(buf, static_cast<uint32_t>(len), &p) != tita::wire::ParseError::kOk) return 1;
  NoIo io;
  tita::engine::Engine eng(tita::engine::EngineConfig{}, &io);
  uint32_t cq;
  if (eng.create_cq(16, &cq) != 0) return 1;
  tita::cc::Params params;
  std::string err;
  if (tita::cc::Params::create("hpcc", {}, &params, &err) != 0) return 1;
  std::printf("consumer: %d-byte ACK parsed, engine and %s ready\n", len, std::string(params.algorithm()).c_str());
  return 0;
}
