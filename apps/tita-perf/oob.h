// Out-of-band connection setup over TCP, as perftest does: one JSON object per
// line. The server listens, the client connects; each side tells the other its
// QPNs, PSNs, GID, MAC and the buffer it exposes (address, rkey, length).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tita::perf {

class Oob {
 public:
  Oob() = default;
  ~Oob();
  Oob(const Oob&) = delete;
  Oob& operator=(const Oob&) = delete;

  // Server: waits for one client on `port`. Client: connects to host:port,
  // retrying for up to `timeout_s` while the server starts. 0, or -1 with *err.
  int listen_and_accept(uint16_t port, int timeout_s, std::string* err);
  int connect_to(const std::string& host, uint16_t port, int timeout_s, std::string* err);

  int send(const nlohmann::json& msg, std::string* err);
  // Blocks for the next message. -1 with *err on EOF or a malformed line.
  int recv(nlohmann::json* msg, std::string* err);
  // Returns 1 and the message if one is waiting, 0 if none, -1 on error.
  int poll(nlohmann::json* msg, std::string* err);

 private:
  int take_line(nlohmann::json* msg, std::string* err);
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace tita::perf
