// tita-run: runs an unmodified libibverbs program over tita.
//
//   tita-run --vdev net_vhost0,iface=/tmp/v --ip 10.0.0.1 -- ib_write_bw -d tita0 -x 0
//   tita-run --config tita.json -- ibv_rc_pingpong -d tita0 -g 0 10.0.0.1
//
// The settings become TITA_* environment variables (what the library reads, so
// children the program starts see the same device) and libtita-verbs.so is
// preloaded. As root, the program runs in a mount namespace of its own where
// tita0 has the device node and sysfs entries middleware looks for (view.h). They are checked here first, with the library's own code, so a
// mistake is one line before the program starts, not an error deep inside it.
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "tita/cli/cli11.h"
#include "tita/verbs/config.h"
#include "view.h"

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
  // One flag per setting, named after it (rate_gbps: --rate-gbps); the lists are
  // repeatable flags of one item each (--cc-param, --cc-plugin, --neighbour).
  struct Flag {
    std::string env;
    std::string name;  // the flag
    std::string key;   // the setting
    const char* sep;  // items of a repeatable flag joined by this; nullptr: one value
    std::vector<std::string> values;
    CLI::Option* option = nullptr;
  };
  std::vector<Flag> flags;
  flags.reserve(tita::verbs::settings().size());
  for (const auto& st : tita::verbs::settings()) {
    std::string name = "--" + std::string(st.key);
    std::replace(name.begin(), name.end(), '_', '-');
    const char* sep = nullptr;
    if (st.key == "cc_params") name = "--cc-param", sep = " ";
    if (st.key == "cc_plugin") sep = " ";
    if (st.key == "neighbours") name = "--neighbour", sep = ",";
    Flag& f = flags.emplace_back(Flag{std::string(st.env), name, std::string(st.key), sep, {}});
    std::string help(st.help);
    if (sep != nullptr) help += " (repeatable, one item each)";
    f.option = app.add_option(name, f.values, help)->type_name(st.type);
    if (sep == nullptr) f.option->expected(1);
    if (st.key == "hugepages" || st.key == "pace") f.option->expected(0, 1);  // a bare --pace is --pace true
  }
  std::string config;
  std::vector<std::string> program;
  app.add_option("--config", config, "JSON file of settings (TITA_CONFIG)")->type_name("FILE");
  // Not required() here: CLI11 would report a missing program before an unknown flag.
  app.add_option("program", program, "the program and its arguments, after --")->type_name("PROGRAM");
  app.allow_extras(false);
  app.positionals_at_end(true);
  if (const int rc = tita::cli::parse(app, "tita-run", argc, argv); rc >= 0) return rc;
  if (program.empty()) return tita::cli::usage_error("tita-run", "give the program to run after --");

  for (const Flag& f : flags) {
    if (f.option->count() == 0) continue;
    std::string v;
    for (const auto& x : f.values) v += (v.empty() || f.sep == nullptr ? "" : f.sep) + x;
    if (v.empty() && f.option->get_expected_min() == 0) v = "true";  // a bare --pace
    setenv(f.env.c_str(), v.c_str(), 1);
  }
  if (!config.empty()) setenv("TITA_CONFIG", config.c_str(), 1);

  tita::verbs::Config c;
  std::string err;
  if (tita::verbs::load(&c, &err) != 0) {
    // A value from a flag: the message names the flag, not its variable.
    for (const Flag& f : flags) {
      if (f.option->count() == 0 || err.rfind(f.env + ": ", 0) != 0) continue;
      std::string rest = err.substr(f.env.size() + 2);
      if (rest.rfind(f.key + ": ", 0) == 0) rest = rest.substr(f.key.size() + 2);
      err = f.name + ": " + rest;
    }
    return tita::cli::usage_error("tita-run", err);
  }
  const std::string lib = find_library();
  if (lib.empty()) {
    return tita::cli::usage_error("tita-run", "libtita-verbs.so not found (set TITA_VERBS_LIB)");
  }
  // The device node and sysfs entries that middleware (UCX, Open MPI) checks
  // before it uses a device, in a mount namespace of the program's own
  // (view.h). Without them libibverbs programs still run; say so, once.
  if (std::string why; tita::run::make_device_view(c, &why) != 0) {
    std::fprintf(stderr,
                 "tita-run: no /dev/infiniband or sysfs view of %s (%s): UCX and Open MPI will not list it; "
                 "libibverbs programs are unaffected\n",
                 c.device.c_str(), why.c_str());
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
