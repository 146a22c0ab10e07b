// Out-of-band connection setup over TCP, as perftest does: one JSON object per
// line. The server listens, the client connects; each side tells the other its
// QPNs, PSNs, GID, MAC and the buffer it exposes (address, rkey, length).
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace tita::perf {

class Oob;

// A listening TCP socket that hands out one Oob per client.
class OobListener {
 public:
  OobListener() = default;
  ~OobListener();
  OobListener(const OobListener&) = delete;
  OobListener& operator=(const OobListener&) = delete;
  int listen(uint16_t port, std::string* err);
  // Waits up to timeout_s for the next client. 0, or -1 with *err.
  int accept(Oob* out, int timeout_s, std::string* err);

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

class Oob {
 public:
  Oob() = default;
  ~Oob();
  Oob(const Oob&) = delete;
  Oob& operator=(const Oob&) = delete;

  // Connects to host:port, retrying for up to `timeout_s` while the server
  // starts. 0, or -1 with *err. (Servers get their Oob from an OobListener.)
  int connect_to(const std::string& host, uint16_t port, int timeout_s, std::string* err);

  int send(const nlohmann::json& msg, std::string* err);
  // Blocks for the next message. -1 with *err on EOF or a malformed line.
  int recv(nlohmann::json* msg, std::string* err);
  // Returns 1 and the message if one is waiting, 0 if none, -1 on error.
  int poll(nlohmann::json* msg, std::string* err);

 private:
  friend class OobListener;
  int take_line(nlohmann::json* msg, std::string* err);
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace tita::perf
