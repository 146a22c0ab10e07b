// tita-run: runs an unmodified libibverbs program over tita.
//
//   tita-run --vdev net_vhost0,iface=/tmp/v --ip 10.0.0.1 -- ib_write_bw -d tita0 -x 0
//   tita-run --config tita.json -- ibv_rc_pingpong -d tita0 -g 0 10.0.0.1
//
// The settings become TITA_* environment variables (what the library reads, so
// children the program starts see the same device) and libtita-verbs.so is
// preloaded. They are checked here first, with the library's own code, so a
// mistake is one line before the program starts, not an error deep inside it.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tita/verbs/config.h"

namespace {

namespace fs = std::filesystem;

// libtita-verbs.so: TITA_VERBS_LIB, else beside this binary in the build tree,
// else where `meson install` put it.
std::string find_library() {
  if (const char* p = std::getenv("TITA_VERBS_LIB"); p != nullptr && *p != '\0') return p;
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path built = self.parent_path().parent_path() / "lib" / "verbs" / "libtita-verbs.so";
    if (fs::exists(built)) return built;
  }
  const fs::path installed = fs::path(TITA_LIBDIR) / "libtita-verbs.so";
  if (fs::exists(installed)) return installed;
  return {};
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tita-run: run an unmodified libibverbs program (ibv_rc_pingpong, perftest, ...) over tita"};
  app.footer(
      "Every setting is also read from the environment (TITA_<SETTING>) and from a JSON config file\n"
      "(TITA_CONFIG), for programs that something else starts. Settings:\n" +
      [] {
        std::string s;
        for (const auto& st : tita::verbs::settings()) {
          s += "  " + std::string(st.env) + std::string(18 - std::min<size_t>(17, st.env.size()), ' ') +
               std::string(st.help) + "\n";
        }
        return s;
      }());
  std::string vdev, port, ip, eal, config, cc, mac, progress, recovery, log, device, rate, base_rtt;
  std::vector<std::string> cc_params, cc_plugins, neighbours;
  std::vector<std::string> program;
  app.add_option("--vdev", vdev, "DPDK vdev to create, as EAL's --vdev takes it");
  app.add_option("--port", port, "existing DPDK port: PCI address, name or number");
  app.add_option("--ip", ip, "IPv4 address of the device (its GID, RoCE v2)");
  app.add_option("--eal", eal, "extra EAL arguments");
  app.add_option("--config", config, "JSON file of settings (TITA_CONFIG)");
  app.add_option("--cc", cc, "congestion control of every QP");
  app.add_option("--cc-plugin", cc_plugins, "shared object with congestion-control plug-ins (repeatable)");
  app.add_option("--cc-param", cc_params, "name=value for the congestion control (repeatable)");
  app.add_option("--mac", mac, "source MAC (default: the port's)");
  app.add_option("--rate-gbps", rate, "line rate congestion control assumes (default: the port's speed)");
  app.add_option("--base-rtt-us", base_rtt, "unloaded RTT congestion control starts from (default 10)");
  app.add_option("--progress", progress, "busy (default) or adaptive");
  app.add_option("--recovery", recovery, "gbn (default) or sr");
  app.add_option("--neighbour", neighbours, "static ARP entry IP=MAC (repeatable)");
  app.add_option("--device", device, "device name (default tita0)");
  app.add_option("--log", log, "none, error (default), info or debug");
  app.add_option("program", program, "the program and its arguments, after --")->required();
  app.allow_extras(false);
  app.positionals_at_end(true);
  CLI11_PARSE(app, argc, argv);

  auto put = [](const char* env, const std::string& v) {
    if (!v.empty()) setenv(env, v.c_str(), 1);
  };
  put("TITA_VDEV", vdev);
  put("TITA_PORT", port);
  put("TITA_IP", ip);
  put("TITA_EAL", eal);
  put("TITA_CONFIG", config);
  put("TITA_CC", cc);
  put("TITA_MAC", mac);
  put("TITA_RATE_GBPS", rate);
  put("TITA_PROGRESS", progress);
  put("TITA_RECOVERY", recovery);
  put("TITA_DEVICE", device);
  put("TITA_LOG", log);
  put("TITA_BASE_RTT_US", base_rtt);
  auto join = [](const std::vector<std::string>& v, const char* sep) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
    return s;
  };
  put("TITA_CC_PARAMS", join(cc_params, " "));
  put("TITA_CC_PLUGIN", join(cc_plugins, " "));
  put("TITA_NEIGHBOURS", join(neighbours, ","));

  tita::verbs::Config c;
  std::string err;
  if (tita::verbs::load(&c, &err) != 0) {
    std::fprintf(stderr, "tita-run: %s\n", err.c_str());
    return 2;
  }
  const std::string lib = find_library();
  if (lib.empty()) {
    std::fprintf(stderr, "tita-run: libtita-verbs.so not found (set TITA_VERBS_LIB)\n");
    return 2;
  }
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old != nullptr && *old != '\0') preload += std::string(":") + old;
  setenv("LD_PRELOAD", preload.c_str(), 1);

  std::vector<char*> args;
  for (std::string& a : program) args.push_back(a.data());
  args.push_back(nullptr);
  execvp(args[0], args.data());
  std::fprintf(stderr, "tita-run: cannot run %s: %s\n", args[0], std::strerror(errno));
  return 127;
}
