#include "oob.h"

#include "tita/cli/contract.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

namespace tita::perf {

Oob::~Oob() {
  if (fd_ >= 0) ::close(fd_);
}

OobListener::~OobListener() {
  if (fd_ >= 0) ::close(fd_);
}

int OobListener::listen(uint16_t port, std::string* err) {
  fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
  const int one = 1;
  ::setsockopt(fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd_, 64) != 0) {
    const int e = errno;
    *err = "out-of-band: cannot listen on TCP port " + std::to_string(port) + " (--tcp-port): " + std::strerror(e);
    if (e == EADDRINUSE) *err += "; another server has it: give this one another --tcp-port, and its clients too";
    return -1;
  }
  port_ = port;
  return 0;
}

int OobListener::accept(Oob* out, int timeout_s, std::string* err) {
  // Some PMDs (net_tap) deliver SIGIO to this process: poll through EINTR.
  pollfd p{fd_, POLLIN, 0};
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int ready = 0;
  while (ready <= 0 && std::chrono::steady_clock::now() < deadline && !cli::stop_requested()) {
    ready = ::poll(&p, 1, 200);
    if (ready < 0 && errno != EINTR) break;
  }
  if (ready <= 0 && cli::stop_requested()) {
    *err = "out-of-band: stopped by signal " + std::to_string(cli::stop_signal()) + " while waiting for a client";
    return -1;
  }
  if (ready <= 0) {
    *err = "out-of-band: no client connected to TCP port " + std::to_string(port_) + " within " +
           std::to_string(timeout_s) + " s";
    return -1;
  }
  int fd;
  do {
    fd = ::accept(fd_, nullptr, nullptr);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) {
    *err = std::string("out-of-band: accept: ") + std::strerror(errno);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  out->fd_ = fd;
  return 0;
}

int Oob::connect_to(const std::string& host, uint16_t port, int timeout_s, std::string* err) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res); rc != 0) {
    *err = "out-of-band: " + host + ": " + gai_strerror(rc);
    return -1;
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int rc;
    do {
      rc = ::connect(fd_, res->ai_addr, res->ai_addrlen);
    } while (rc != 0 && errno == EINTR);
    if (rc == 0) break;
    ::close(fd_);
    fd_ = -1;
    if (std::chrono::steady_clock::now() > deadline || cli::stop_requested()) {
      *err = cli::stop_requested()
                 ? "out-of-band: stopped by signal " + std::to_string(cli::stop_signal()) + " while connecting"
                 : "out-of-band: cannot connect to " + host + ":" + std::to_string(port) + " (--client, --tcp-port): " +
                       std::strerror(errno);
      ::freeaddrinfo(res);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ::freeaddrinfo(res);
  const int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return 0;
}

int Oob::send(const nlohmann::json& msg, std::string* err) {
  const std::string line = msg.dump() + "\n";
  size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::send(fd_, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = std::string("out-of-band: send: ") + std::strerror(errno);
      return -1;
    }
    off += static_cast<size_t>(n);
  }
  return 0;
}

int Oob::take_line(nlohmann::json* msg, std::string* err) {
  const size_t nl = buffer_.find('\n');
  if (nl == std::string::npos) return 0;
  const std::string line = buffer_.substr(0, nl);
  buffer_.erase(0, nl + 1);
  *msg = nlohmann::json::parse(line, nullptr, false);
  if (msg->is_discarded()) {
    *err = "out-of-band: malformed message from the peer: " + line.substr(0, 80);
    return -1;
  }
  return 1;
}

int Oob::recv(nlohmann::json* msg, std::string* err) {
  for (;;) {
    if (int rc = take_line(msg, err); rc != 0) return rc > 0 ? 0 : -1;
    char buf[4096];
    const ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n < 0 && errno == EINTR && cli::stop_requested()) {
      *err = "out-of-band: stopped by signal " + std::to_string(cli::stop_signal());
      return -1;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      *err = "out-of-band: the peer closed the connection";
      return -1;
    }
    buffer_.append(buf, static_cast<size_t>(n));
  }
}

int Oob::poll(nlohmann::json* msg, std::string* err) {
  if (int rc = take_line(msg, err); rc != 0) return rc;
  char buf[4096];
  const ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
  if (n == 0) {
    *err = "out-of-band: the peer closed the connection";
    return -1;
  }
  if (n < 0) return (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) ? 0 : -1;
  buffer_.append(buf, static_cast<size_t>(n));
  return take_line(msg, err);
}

}  // namespace tita::perf
