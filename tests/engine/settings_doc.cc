// Writes the engine's settings table (tita/engine/settings.h) into a page
// between its markers, or prints it:
//   build/tests/engine/settings_doc doc/settings.md
// The engine tests (Settings.DocIsCurrent) fail while the page is stale.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "tita/engine/settings.h"

int main(int argc, char** argv) {
  const std::string table = tita::engine::settings_markdown();
  if (argc < 2) {
    std::fputs(table.c_str(), stdout);
    return 0;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  std::string doc = text.str();
  const std::string begin = "<!-- settings table: begin -->\n", end = "<!-- settings table: end -->";
  const size_t b = doc.find(begin), e = doc.find(end);
  if (!in || b == std::string::npos || e == std::string::npos || e < b) {
    std::fprintf(stderr, "settings_doc: %s: no '%s' ... '%s' markers\n", argv[1], begin.substr(0, begin.size() - 1).c_str(),
                 end.c_str());
    return 1;
  }
  doc.replace(b + begin.size(), e - b - begin.size(), table);
  std::ofstream(argv[1]) << doc;
  return 0;
}
