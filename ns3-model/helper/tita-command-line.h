// tita-sim's and tita-dodge's command line under the contract every tita
// program keeps (tita/cli/contract.h, doc/cli.md): ns-3's CommandLine, with
// every argument checked first, so an unknown option or a bad value is one line
// and exit status 2 instead of ns-3's whole usage and exit 1 (or an abort, for
// an attribute value ns-3's parser cannot read).
#pragma once

#include "ns3/command-line.h"

#include <functional>
#include <limits>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * ns-3's CommandLine behind a check of every argument: the program's options
 * (their names and value types, recorded as they are added), "--ns3::Type::Attr"
 * attributes and global values (looked up, their values parsed as their checker
 * would, safely) and ns-3's own --Print* options. Both "--name=value" and
 * "--name value" are taken. Help shows each option's type.
 */
class TitaCommandLine
{
  public:
    /// `tool` prefixes messages ("tita-sim"); `file` is ns-3's (__FILE__).
    TitaCommandLine(const std::string& tool, const std::string& file);

    void Usage(const std::string& usage);

    /// An option bound to `value`; `type` names its kind and unit for help
    /// ("TIME", "RATE"); empty: from T (UINT, INT, REAL, BOOL, TEXT).
    template <typename T>
    void AddValue(const std::string& name, const std::string& help, T& value, const std::string& type = "");

    /// Checks every argument, then hands them to ns-3's CommandLine. A mistake
    /// exits with status 2 and one line on stderr; --help exits 0.
    void Parse(int argc, char* argv[]);

    /// The arguments as ns-3 read them ("--name=value" each), after Parse.
    const std::vector<std::string>& Arguments() const;

  private:
    struct Item
    {
        bool isBool;
        std::function<bool(const std::string&)> check; ///< whether the text is a value of its type
        std::string type;
    };

    /// "" when `arg` (one argument, "--name=value") is good, or why not.
    std::string Check(const std::string& name, const std::string& value, bool hasValue) const;

    template <typename T>
    static std::string TypeOf();

    std::string m_tool;
    CommandLine m_cmd;
    std::map<std::string, Item> m_items;
    std::vector<std::string> m_args;
};

/// Whether `text` is all of a number in [lo, hi] (a strict reading: no trailing
/// text, no sign on an unsigned number, no fraction on an integral one).
bool TitaTextIsNumber(const std::string& text, bool isSigned, bool isIntegral, long double lo, long double hi);

template <typename T>
std::string
TitaCommandLine::TypeOf()
{
    if constexpr (std::is_same_v<T, bool>)
    {
        return "BOOL";
    }
    else if constexpr (std::is_integral_v<T>)
    {
        return std::is_signed_v<T> ? "INT" : "UINT";
    }
    else if constexpr (std::is_floating_point_v<T>)
    {
        return "REAL";
    }
    else
    {
        return "TEXT";
    }
}

template <typename T>
void
TitaCommandLine::AddValue(const std::string& name, const std::string& help, T& value, const std::string& type)
{
    const std::string kind = type.empty() ? TypeOf<T>() : type;
    m_cmd.AddValue(name, kind + ": " + help, value);
    std::function<bool(const std::string&)> check = [](const std::string&) { return true; };
    if constexpr (std::is_same_v<T, bool>)
    {
        check = [](const std::string& v) {
            return v == "true" || v == "false" || v == "1" || v == "0" || v == "t" || v == "f";
        };
    }
    else if constexpr (std::is_arithmetic_v<T>)
    {
        check = [](const std::string& v) {
            return TitaTextIsNumber(v,
                                    std::is_signed_v<T>,
                                    std::is_integral_v<T>,
                                    static_cast<long double>(std::numeric_limits<T>::lowest()),
                                    static_cast<long double>(std::numeric_limits<T>::max()));
        };
    }
    m_items[name] = Item{std::is_same_v<T, bool>, check, kind};
}

} // namespace ns3
