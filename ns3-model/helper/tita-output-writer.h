// Where a run's outputs go: the files of an output directory, each opened once
// with its CSV header, and summary.json's flat JSON object. Every row a runner
// writes goes through one TitaOutputWriter, so that a run split over several
// logical processes can give each its own streams and merge them in one place.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * The files of one output directory.
 *
 *   TitaOutputWriter out;
 *   if (!out.SetDirectory("out/run", &err)) ...
 *   std::ostream& fct = out.File("fct.csv", "id,src,dst\n");
 */
class TitaOutputWriter
{
  public:
    /// Creates `dir` (and its parents). False with a message if it cannot.
    bool SetDirectory(const std::string& dir, std::string* err);
    const std::string& GetDirectory() const { return m_dir; }
    /// "<dir>/<name>", for files others write (pcap prefixes).
    std::string Path(const std::string& name) const { return m_dir + "/" + name; }

    /// The stream of <dir>/<name>, created with `header` the first time it is
    /// asked for; the same stream after that. It stays valid as long as the writer.
    std::ostream& File(const std::string& name, const std::string& header = "");
    /// Flushes every file.
    void Flush();

  private:
    std::string m_dir;
    std::map<std::string, std::unique_ptr<std::ostream>> m_files;
};

/**
 * \ingroup tita
 * A flat JSON object written one key per line, as the runners' summary.json:
 *
 *   {
 *     "cc": "hpcc",
 *     "flows": 12
 *   }
 *
 * Numbers are written as an ostream writes them (6 significant digits for
 * doubles); strings are written as they are, unescaped.
 */
class TitaSummaryJson
{
  public:
    TitaSummaryJson& Str(const char* key, const std::string& value);
    TitaSummaryJson& Bool(const char* key, bool value);
    template <typename T>
    TitaSummaryJson& Num(const char* key, T value)
    {
        Key(key) << value;
        return *this;
    }
    /// "key": {"a": 1, "b": 2} with the pairs in the order given.
    TitaSummaryJson& Counts(const char* key, const std::vector<std::pair<std::string, uint64_t>>& counts);
    /// The object, ending in a newline.
    std::string Text() const { return (m_first ? std::string("{") : m_body.str()) + "\n}\n"; }

  private:
    std::ostream& Key(const char* key);

    std::ostringstream m_body;
    bool m_first = true;
};

} // namespace ns3
