// tita-sim's and tita-dodge's command line (tita-command-line.h).
#include "tita-command-line.h"

#include "tita-units.h"
#include "tita/cli/contract.h"

#include "ns3/global-value.h"
#include "ns3/type-id.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace ns3
{
namespace
{

// ns-3's own options, handled by its CommandLine (help and listings; exit 0).
bool
IsHardOption(const std::string& name)
{
    static const char* const kHard[] = {"help",
                                        "PrintHelp",
                                        "PrintGlobals",
                                        "PrintGroups",
                                        "PrintGroup",
                                        "PrintTypeIds",
                                        "PrintAttributes",
                                        "PrintVersion",
                                        "version"};
    for (const char* h : kHard)
    {
        if (name == h)
        {
            return true;
        }
    }
    return false;
}

bool
IsBoolText(const std::string& v)
{
    return v == "true" || v == "false" || v == "1" || v == "0" || v == "t" || v == "f";
}

// An attribute's or global value's text, checked the way its checker reads it,
// but without ns-3's aborts: numbers, times and rates are read strictly first.
std::string
CheckAttributeText(const std::string& flag, Ptr<const AttributeChecker> checker, const std::string& text)
{
    const std::string type = checker->GetValueTypeName();
    const std::string bad = flag + ": '" + text + "' is not ";
    std::string why;
    uint64_t bps = 0;
    Time t;
    constexpr long double kBig = 1.8e19L;
    if ((type == "ns3::UintegerValue" && !TitaTextIsNumber(text, false, true, 0, kBig)) ||
        (type == "ns3::IntegerValue" && !TitaTextIsNumber(text, true, true, -kBig, kBig)))
    {
        return bad + "a whole number";
    }
    if (type == "ns3::DoubleValue" && !TitaTextIsNumber(text, true, false, -HUGE_VALL, HUGE_VALL))
    {
        return bad + "a number";
    }
    if (type == "ns3::BooleanValue" && !IsBoolText(text))
    {
        return bad + "true or false";
    }
    if (type == "ns3::TimeValue" && !TitaParseTime(text, "s", &t, &why))
    {
        return flag + ": " + why;
    }
    if (type == "ns3::DataRateValue" && !TitaParseRateWithUnit(text, &bps, &why))
    {
        return flag + ": " + why;
    }
    Ptr<AttributeValue> v = checker->Create();
    if (!v->DeserializeFromString(text, checker) || !checker->Check(*v))
    {
        return bad + "a valid " + type.substr(type.rfind(':') + 1) + " here" +
               (checker->HasUnderlyingTypeInformation() ? " (" + checker->GetUnderlyingTypeInformation() + ")"
                                                        : "");
    }
    return {};
}

} // namespace

bool
TitaTextIsNumber(const std::string& text, bool isSigned, bool isIntegral, long double lo, long double hi)
{
    if (text.empty() || std::isspace(static_cast<unsigned char>(text[0])) || (!isSigned && text[0] == '-'))
    {
        return false;
    }
    char* end = nullptr;
    errno = 0;
    const long double v = std::strtold(text.c_str(), &end);
    if (end != text.c_str() + text.size() || errno != 0 || std::isnan(v))
    {
        return false;
    }
    if (isIntegral && (v != std::floor(v) || text.find_first_of(".eEpPxX") != std::string::npos))
    {
        return false;
    }
    return v >= lo && v <= hi;
}

TitaCommandLine::TitaCommandLine(const std::string& tool, const std::string& file)
    : m_tool(tool),
      m_cmd(file)
{
}

void
TitaCommandLine::Usage(const std::string& usage)
{
    m_cmd.Usage(usage);
}

std::string
TitaCommandLine::Check(const std::string& name, const std::string& value, bool hasValue) const
{
    const std::string flag = "--" + name;
    if (const auto it = m_items.find(name); it != m_items.end())
    {
        const Item& item = it->second;
        if (!hasValue && !item.isBool)
        {
            return flag + " needs a value (" + flag + "=" + item.type + ")";
        }
        if (hasValue && !item.check(value))
        {
            return flag + ": '" + value + "' is not " + (item.isBool ? "true or false" : "a " + item.type);
        }
        return {};
    }
    const bool attribute = name.rfind("ns3::", 0) == 0;
    bool global = false;
    for (auto it = GlobalValue::Begin(); it != GlobalValue::End(); ++it)
    {
        global = global || (*it)->GetName() == name;
    }
    if (!hasValue)
    {
        return attribute || global ? flag + " needs a value (" + flag + "=VALUE)"
                                   : "unknown option " + flag + " (--help lists them)";
    }
    if (attribute)
    {
        const size_t split = name.rfind("::");
        const std::string typeName = name.substr(0, split);
        const std::string attribute = name.substr(split + 2);
        TypeId tid;
        if (split <= 3 || !TypeId::LookupByNameFailSafe(typeName, &tid))
        {
            return flag + ": no ns-3 type " + typeName + " (--PrintTypeIds lists them)";
        }
        TypeId::AttributeInformation info;
        if (!tid.LookupAttributeByName(attribute, &info))
        {
            return flag + ": " + typeName + " has no attribute '" + attribute + "' (--PrintAttributes=" + typeName +
                   " lists them)";
        }
        return CheckAttributeText(flag, info.checker, value);
    }
    for (auto it = GlobalValue::Begin(); it != GlobalValue::End(); ++it)
    {
        if ((*it)->GetName() == name)
        {
            return CheckAttributeText(flag, (*it)->GetChecker(), value);
        }
    }
    return "unknown option " + flag + " (--help lists them; ns-3 attributes are --ns3::Type::Attribute=VALUE)";
}

void
TitaCommandLine::Parse(int argc, char* argv[])
{
    m_args.assign(1, argc > 0 ? argv[0] : m_tool);
    for (int i = 1; i < argc; ++i)
    {
        std::string arg = argv[i];
        if (arg == "-h" || arg == "-help")
        {
            arg = "--help";
        }
        if (arg.size() < 2 || arg[0] != '-')
        {
            std::exit(tita::cli::usage_error(m_tool,
                                             "unexpected argument '" + arg +
                                                 "' (options are --name=VALUE; --help lists them)"));
        }
        const size_t start = arg[1] == '-' ? 2 : 1;
        const size_t eq = arg.find('=');
        const std::string name = arg.substr(start, eq == std::string::npos ? std::string::npos : eq - start);
        bool hasValue = eq != std::string::npos;
        std::string value = hasValue ? arg.substr(eq + 1) : "";
        if (IsHardOption(name))
        {
            m_args.push_back(arg);
            continue;
        }
        // "--name value": the next argument is the value of an option that takes one.
        const auto item = m_items.find(name);
        if (!hasValue && item != m_items.end() && !item->second.isBool && i + 1 < argc)
        {
            value = argv[++i];
            hasValue = true;
        }
        if (const std::string why = Check(name, value, hasValue); !why.empty())
        {
            std::exit(tita::cli::usage_error(m_tool, why));
        }
        m_args.push_back("--" + name + (hasValue ? "=" + value : ""));
    }
    std::vector<char*> args;
    for (std::string& a : m_args)
    {
        args.push_back(a.data());
    }
    m_cmd.Parse(static_cast<int>(args.size()), args.data());
}

const std::vector<std::string>&
TitaCommandLine::Arguments() const
{
    return m_args;
}

} // namespace ns3
