// The command-line contract every tita program keeps (doc/cli.md), in one place:
//
//   - a usage error (an unknown flag, a bad value, a missing one) is one line on
//     stderr, "<tool>: <what>", naming the flag; nothing on stdout; exit status 2;
//   - values are checked before EAL or ns-3 start, so a mistake costs nothing;
//   - --help prints on stdout, with each value's type, unit and default; exit 0;
//   - SIGINT and SIGTERM end the program promptly; stopped before its work was
//     done it exits 128 + the signal's number, as a shell reports a killed one.
//
// Pure C++ (no CLI11, no DPDK, no ns-3): the CLI11 programs use it through
// tita/cli/cli11.h, tita-sim and tita-dodge through their ns-3 command line.
#pragma once

#include <csignal>
#include <cstdint>
#include <string>
#include <string_view>

namespace tita::cli {

inline constexpr int kExitFailure = 1;  // the work failed (a peer, a port, a test)
inline constexpr int kExitUsage = 2;    // what was asked for is wrong: nothing was started

// `text` on one line: line breaks become "; ", trailing space goes.
std::string one_line(std::string_view text);

// Prints "<tool>: <msg>" (on one line) on stderr; returns kExitUsage, for
// `return usage_error("tita-perf", "--ip: ...")`.
int usage_error(std::string_view tool, std::string_view msg);

// Value checks shared by every program. Each returns "" when `text` is good,
// otherwise why not, starting with the flag ("--ip: 'banana' is not an IPv4
// address (a.b.c.d)").
std::string check_ipv4(std::string_view flag, std::string_view text);
std::string check_mac(std::string_view flag, std::string_view text);

// SIGINT and SIGTERM set a flag instead of killing the process (SIGPIPE is
// ignored, so a peer that went away is an error return, not a death). Install
// before anything slow starts (EAL). The flag and the signal's number:
void install_stop_signals();
bool stop_requested();
int stop_signal();  // 0 until a signal came
// The exit status for a program stopped by a signal: 128 + its number.
int stopped_exit_status();

}  // namespace tita::cli
