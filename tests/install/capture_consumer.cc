// A program outside the tree that captures: writes one RoCEv2 ACK to a pcap
// file through libtita-capture and reads it back, byte for byte.
#include <tita/capture/pcap.h>
#include <tita/wire/frame.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  tita::wire::FrameFields f;
  f.opcode = tita::wire::Opcode::kAck;
  uint8_t buf[128];
  const int len = tita::wire::build_frame(f, {}, buf, sizeof buf);
  if (len <= 0) return 1;
  std::string err;
  tita::capture::PcapWriter w;
  if (w.open(argv[1], &err) != 0) {
    std::fprintf(stderr, "capture-consumer: %s\n", err.c_str());
    return 1;
  }
  w.write({buf, static_cast<size_t>(len)}, 1'000);
  w.close();
  int same = 0, frames = 0;
  const int rc = tita::capture::read_pcap(
      argv[1],
      [&](std::span<const uint8_t> frame, uint64_t) {
        ++frames;
        same += frame.size() == static_cast<size_t>(len) && std::memcmp(frame.data(), buf, frame.size()) == 0;
      },
      &err);
  if (rc != 0 || frames != 1 || same != 1) {
    std::fprintf(stderr, "capture-consumer: read back %d frames (%d intact): %s\n", frames, same, err.c_str());
    return 1;
  }
  std::printf("capture-consumer: a %d-byte ACK written to pcap and read back intact\n", len);
  return 0;
}
