// The command-line contract (contract.h) for the programs that read their
// flags with CLI11: one call that parses and maps CLI11's own exit codes (105,
// 106, 109, ...) onto the contract's, and validators for the shared value kinds.
// Header-only: CLI11 is a header library and only the programs include it.
#pragma once

#include <CLI/CLI.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "tita/cli/contract.h"

namespace tita::cli {

// Makes `app` keep the contract's help: every option shows its default.
inline void contract_help(CLI::App& app) { app.option_defaults()->always_capture_default(); }

// Parses `args` (argv[0] first). -1 to go on; otherwise the exit status to
// return: 0 after --help (printed on stdout), kExitUsage after a usage error
// (one line on stderr, "<tool>: <CLI11's message>", which names the flag).
inline int parse(CLI::App& app, std::string_view tool, int argc, char** argv) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);
    return usage_error(tool, e.what());
  }
  return -1;
}

inline int parse(CLI::App& app, std::string_view tool, std::vector<char*>& args) {
  return parse(app, tool, static_cast<int>(args.size()), args.data());
}

// Validators: each names its type in --help and rejects a bad value with a
// message that parse() prefixes with the flag.
inline CLI::Validator ipv4() {
  return CLI::Validator(
      [](const std::string& v) {
        const std::string why = check_ipv4("", v);
        return why.empty() ? std::string() : why.substr(2);  // drop the empty flag's ": "
      },
      "IPv4");
}

inline CLI::Validator mac() {
  return CLI::Validator(
      [](const std::string& v) {
        const std::string why = check_mac("", v);
        return why.empty() ? std::string() : why.substr(2);
      },
      "MAC");
}

}  // namespace tita::cli
