// The command-line contract (contract.h).
#include "tita/cli/contract.h"

#include <cstdio>

#include "tita/wire/text.h"

namespace tita::cli {
namespace {

volatile std::sig_atomic_t g_signal = 0;

void on_stop(int sig) { g_signal = sig; }

std::string quoted(std::string_view flag, std::string_view text) {
  return std::string(flag) + ": '" + std::string(text) + "' ";
}

}  // namespace

std::string one_line(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '\n') {
      while (!out.empty() && out.back() == ' ') out.pop_back();
      if (!out.empty() && out.back() != ';') out += "; ";
    } else if (c != '\r') {
      out += c;
    }
  }
  while (!out.empty() && (out.back() == ' ' || out.back() == ';')) out.pop_back();
  return out;
}

int usage_error(std::string_view tool, std::string_view msg) {
  std::fprintf(stderr, "%.*s: %s\n", static_cast<int>(tool.size()), tool.data(), one_line(msg).c_str());
  return kExitUsage;
}

std::string check_ipv4(std::string_view flag, std::string_view text) {
  uint32_t ip;
  return wire::parse_ipv4(text, &ip) ? std::string() : quoted(flag, text) + "is not an IPv4 address (a.b.c.d)";
}

std::string check_mac(std::string_view flag, std::string_view text) {
  uint8_t mac[6];
  return wire::parse_mac(text, mac) ? std::string() : quoted(flag, text) + "is not a MAC address (02:00:00:00:00:01)";
}

void install_stop_signals() {
  struct sigaction sa{};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

bool stop_requested() { return g_signal != 0; }

int stop_signal() { return g_signal; }

int stopped_exit_status() { return 128 + (g_signal != 0 ? g_signal : SIGTERM); }

}  // namespace tita::cli
