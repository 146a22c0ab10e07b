#include "tita-output-writer.h"

#include <filesystem>
#include <fstream>
#include <system_error>

namespace ns3
{

bool
TitaOutputWriter::SetDirectory(const std::string& dir, std::string* err)
{
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec)
    {
        *err = "--out: cannot create " + dir + ": " + ec.message();
        return false;
    }
    m_dir = dir;
    return true;
}

std::ostream&
TitaOutputWriter::File(const std::string& name, const std::string& header)
{
    auto& f = m_files[name];
    if (!f)
    {
        f = std::make_unique<std::ofstream>(Path(name));
        *f << header;
    }
    return *f;
}

void
TitaOutputWriter::Flush()
{
    for (auto& [name, f] : m_files)
    {
        f->flush();
    }
}

std::ostream&
TitaSummaryJson::Key(const char* key)
{
    m_body << (m_first ? "{\n  \"" : ",\n  \"") << key << "\": ";
    m_first = false;
    return m_body;
}

TitaSummaryJson&
TitaSummaryJson::Str(const char* key, const std::string& value)
{
    Key(key) << '"' << value << '"';
    return *this;
}

TitaSummaryJson&
TitaSummaryJson::Bool(const char* key, bool value)
{
    Key(key) << (value ? "true" : "false");
    return *this;
}

TitaSummaryJson&
TitaSummaryJson::Counts(const char* key, const std::vector<std::pair<std::string, uint64_t>>& counts)
{
    std::ostream& o = Key(key);
    o << '{';
    const char* sep = "";
    for (const auto& [name, n] : counts)
    {
        o << sep << '"' << name << "\": " << n;
        sep = ", ";
    }
    o << '}';
    return *this;
}

} // namespace ns3
