// The plug-in registry and loader (plugin.h). Registration happens at load
// time, from the plug-in's static constructors, before any flow exists; the
// registry is read afterwards by Params::create and the hosts' listings.
#include <dlfcn.h>

#include <filesystem>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tita/cc/cc.h"

namespace tita::cc {
namespace {

std::vector<const PluginOps*>& registry() {
  static std::vector<const PluginOps*> r;
  return r;
}

bool name_taken(std::string_view name) {
  for (const AlgorithmInfo& a : algorithms())
    if (a.name == name) return true;
  for (const PluginOps* o : registry())
    if (o->info.name == name) return true;
  return false;
}

}  // namespace

int register_algorithm(const PluginOps& ops, std::string* err) {
  auto fail = [&](int rc, const std::string& msg) {
    if (err != nullptr) *err = "congestion control '" + std::string(ops.info.name) + "': " + msg;
    return rc;
  };
  if (ops.abi_version != kPluginAbiVersion)
    return fail(-EINVAL, "built for plug-in ABI " + std::to_string(ops.abi_version) + ", this tita has " +
                             std::to_string(kPluginAbiVersion));
  if (ops.info.name.empty()) return fail(-EINVAL, "no name");
  if (ops.state_bytes > kPluginStateBytes)
    return fail(-EINVAL, "per-flow state of " + std::to_string(ops.state_bytes) + " bytes, at most " +
                             std::to_string(kPluginStateBytes) + " allowed");
  if (ops.params_bytes > kPluginParamsBytes)
    return fail(-EINVAL, "parameters of " + std::to_string(ops.params_bytes) + " bytes, at most " +
                             std::to_string(kPluginParamsBytes) + " allowed");
  if (!ops.defaults || !ops.set_param || !ops.get_param || !ops.init || !ops.on_send || !ops.on_ack ||
      !ops.on_cnp || !ops.on_loss || !ops.on_timeout || !ops.on_timer)
    return fail(-EINVAL, "a hook of its PluginOps is missing");
  if (name_taken(ops.info.name)) return fail(-EEXIST, "the name is taken");
  registry().push_back(&ops);
  return 0;
}

std::span<const PluginOps* const> plugins() { return registry(); }

int load_plugin(std::string_view path, std::string* err) {
  const std::string file(path);
  auto fail = [&](int rc, const std::string& msg) {
    if (err != nullptr) *err = "--cc-plugin " + file + ": " + msg;
    return rc;
  };
  // A bare file name is the file of that name here, as on any command line;
  // dlopen() alone would look only on the library search path. A name that is
  // not here is looked for there (an installed plug-in).
  const bool bare = file.find('/') == std::string::npos;
  std::error_code ec;
  const std::string open_as = bare && std::filesystem::exists(file, ec) ? "./" + file : file;
  // RTLD_NOW: an undefined symbol is an error here, not a crash at first use.
  void* handle = dlopen(open_as.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* e = dlerror();
    if (bare && open_as == file && (e == nullptr || std::strstr(e, "No such file") != nullptr)) {
      return fail(-ENOENT, "no such file in the current directory or on the library search path (LD_LIBRARY_PATH, "
                           "ldconfig's directories); give its path, e.g. ./" + file + " or /path/to/" + file);
    }
    return fail(-ENOENT, e != nullptr ? e : "cannot load");
  }
  using Entry = const PluginOps* const* (*)(size_t*);
#define TITA_CC_STR2(x) #x
#define TITA_CC_STR(x) TITA_CC_STR2(x)
  const char* entry_name = TITA_CC_STR(TITA_CC_PLUGIN_ENTRY);
  auto entry = reinterpret_cast<Entry>(dlsym(handle, entry_name));
  if (entry == nullptr) {
    dlclose(handle);
    return fail(-EINVAL, std::string("no ") + entry_name + " in it (a plug-in names its algorithms with TITA_CC_PLUGIN)");
  }
  size_t n = 0;
  const PluginOps* const* list = entry(&n);
  const size_t before = registry().size();
  std::string why;
  int rc = n == 0 ? -EINVAL : 0;
  if (n == 0) why = "its TITA_CC_PLUGIN names no algorithm";
  for (size_t i = 0; i < n && rc == 0; ++i) rc = register_algorithm(*list[i], &why);
  if (rc != 0) {
    registry().resize(before);  // all or nothing
    dlclose(handle);
    return fail(rc, why);
  }
  return 0;  // stays loaded: its ops serve flows for the life of the process
}

}  // namespace tita::cc

namespace tita::cc {

std::string algorithms_help(const FlowConfig& link) {
  std::string out;
  auto one = [&](std::string_view name, std::string_view summary, bool plugin) {
    Params p;
    if (Params::create(name, link, &p, nullptr) != 0) return;
    Flow f;
    f.init(p, link, 0);
    // "[reads INT]": switches must add INT records (tita-doctor precheck reads it).
    out.append(name).append(plugin ? " (plug-in): " : ": ").append(summary);
    out.append(f.wants_int() ? " [reads INT]\n" : "\n");
    for (const ParamInfo& i : p.describe()) {
      double v = 0;
      p.get(i.name, &v);
      char line[512];
      std::snprintf(line, sizeof line, "    %-24s %-6s default %-12g [%g, %g]  %.*s\n", std::string(i.name).c_str(),
                    std::string(i.unit).c_str(), v, i.min, i.max, static_cast<int>(i.help.size()), i.help.data());
      out.append(line);
    }
  };
  for (const AlgorithmInfo& a : algorithms()) one(a.name, a.summary, false);
  for (const PluginOps* o : plugins()) one(o->info.name, o->info.summary, true);
  return out;
}

}  // namespace tita::cc
