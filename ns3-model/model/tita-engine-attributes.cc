// The engine's settings as ns-3 attributes (tita-engine-attributes.h).
#include "tita-engine-attributes.h"

#include "ns3/abort.h"
#include "ns3/boolean.h"
#include "ns3/data-rate.h"
#include "ns3/enum.h"
#include "ns3/nstime.h"
#include "ns3/uinteger.h"

#include <cctype>
#include <string>

namespace ns3
{

namespace eng = ::tita::engine;

namespace
{

/// The ns-3 form of an engine setting's value: Boolean, Uinteger, Time (ns),
/// Enum (a choice's number) or DataRate (b/s), as the row's kind says.
Ptr<AttributeValue>
SettingValue(const eng::Setting& s, uint64_t v)
{
    switch (s.kind)
    {
    case eng::SettingKind::kBool:
        return Create<BooleanValue>(v != 0);
    case eng::SettingKind::kCount:
        return Create<UintegerValue>(v);
    case eng::SettingKind::kTime:
        return Create<TimeValue>(NanoSeconds(v));
    case eng::SettingKind::kChoice:
        return Create<EnumValue>(static_cast<int>(v));
    case eng::SettingKind::kRate:
        return Create<DataRateValue>(DataRate(v));
    }
    return nullptr;
}

/// The checker of a row's range (choices: every name the row's parser takes).
Ptr<const AttributeChecker>
SettingChecker(const eng::Setting& s)
{
    switch (s.kind)
    {
    case eng::SettingKind::kBool:
        return MakeBooleanChecker();
    case eng::SettingKind::kCount:
        return MakeUintegerChecker<uint64_t>(s.min, s.max);
    case eng::SettingKind::kTime:
        return MakeTimeChecker(NanoSeconds(s.min), NanoSeconds(s.max));
    case eng::SettingKind::kChoice: {
        Ptr<EnumChecker> c = Create<EnumChecker>();
        for (std::string_view name : s.choice_names())
        {
            std::string why;
            uint64_t v = 0;
            NS_ABORT_MSG_IF(s.parse(name, &v, &why) != 0, s.name << ": " << name << ": " << why);
            c->Add(static_cast<int>(v), std::string(name));
        }
        return c;
    }
    case eng::SettingKind::kRate:
        return MakeDataRateChecker();
    }
    return nullptr;
}

/// Reads and writes one engine setting in the EngineConfig an object keeps:
/// the accessor of each attribute made from the engine's settings table.
class EngineSettingAccessor : public AttributeAccessor
{
  public:
    EngineSettingAccessor(const eng::Setting& s, EngineSettingsOf settingsOf)
        : m_row(s),
          m_settingsOf(settingsOf)
    {
    }

    bool Set(ObjectBase* object, const AttributeValue& value) const override
    {
        eng::EngineConfig* c = m_settingsOf(object);
        uint64_t v = 0;
        if (c == nullptr || !Read(value, &v))
        {
            return false;
        }
        m_row.set(c, v);
        return true;
    }

    bool Get(const ObjectBase* object, AttributeValue& value) const override
    {
        // The function finds the config; reading it changes nothing.
        const eng::EngineConfig* c = m_settingsOf(const_cast<ObjectBase*>(object));
        if (c == nullptr)
        {
            return false;
        }
        const uint64_t v = m_row.get(*c);
        switch (m_row.kind)
        {
        case eng::SettingKind::kBool:
            return Put<BooleanValue>(value, v != 0);
        case eng::SettingKind::kCount:
            return Put<UintegerValue>(value, v);
        case eng::SettingKind::kTime:
            return Put<TimeValue>(value, NanoSeconds(v));
        case eng::SettingKind::kChoice:
            return Put<EnumValue>(value, static_cast<int>(v));
        case eng::SettingKind::kRate:
            return Put<DataRateValue>(value, DataRate(v));
        }
        return false;
    }

    bool HasGetter() const override
    {
        return true;
    }

    bool HasSetter() const override
    {
        return true;
    }

  private:
    template <class V, class T>
    static bool Put(AttributeValue& value, const T& v)
    {
        auto* out = dynamic_cast<V*>(&value);
        if (out != nullptr)
        {
            out->Set(v);
        }
        return out != nullptr;
    }

    // A value the checker let through, in the field's unit.
    bool Read(const AttributeValue& value, uint64_t* v) const
    {
        if (const auto* b = dynamic_cast<const BooleanValue*>(&value))
        {
            *v = b->Get() ? 1 : 0;
        }
        else if (const auto* u = dynamic_cast<const UintegerValue*>(&value))
        {
            *v = u->Get();
        }
        else if (const auto* t = dynamic_cast<const TimeValue*>(&value))
        {
            *v = static_cast<uint64_t>(t->Get().GetNanoSeconds());
        }
        else if (const auto* e = dynamic_cast<const EnumValue*>(&value))
        {
            *v = static_cast<uint64_t>(e->Get());
        }
        else if (const auto* r = dynamic_cast<const DataRateValue*>(&value))
        {
            *v = r->Get().GetBitRate();
        }
        else
        {
            return false;
        }
        return true;
    }

    const eng::Setting& m_row;
    EngineSettingsOf m_settingsOf;
};

} // namespace

TypeId
AddEngineAttributes(TypeId tid, EngineSettingsOf settingsOf)
{
    for (const eng::Setting& s : eng::settings())
    {
        if (s.attribute.empty())
        {
            continue;
        }
        std::string help(s.help);
        help[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(help[0])));
        tid.AddAttribute(std::string(s.attribute),
                         help,
                         *SettingValue(s, s.default_for(eng::FrontEnd::kNs3)),
                         Create<EngineSettingAccessor>(s, settingsOf),
                         SettingChecker(s));
    }
    return tid;
}

} // namespace ns3
