// Trace sources that tell their owner when someone connects.
//
// A TracedCallback with no sink still costs a look at its list on every call,
// and per-packet traces sit in objects the packet path would otherwise not
// touch. A source made with MakeNotifyingTraceSourceAccessor() calls
// (owner->*Notify)() the first time a sink is connected to it (through Config,
// TraceConnect or TraceConnectWithoutContext alike), so the owner keeps one
// flag and skips building and firing traces nobody listens to.
#pragma once

#include <string>

#include "ns3/trace-source-accessor.h"

namespace ns3
{

/**
 * \ingroup tita
 * A TraceSourceAccessor that forwards to another and notifies the traced object
 * when a sink is connected.
 */
template <class T>
class TitaNotifyingAccessor : public TraceSourceAccessor
{
  public:
    TitaNotifyingAccessor(Ptr<const TraceSourceAccessor> inner, void (T::*notify)())
        : m_inner(inner),
          m_notify(notify)
    {
    }

    bool ConnectWithoutContext(ObjectBase* obj, const CallbackBase& cb) const override
    {
        const bool ok = m_inner->ConnectWithoutContext(obj, cb);
        Notify(obj, ok);
        return ok;
    }

    bool Connect(ObjectBase* obj, std::string context, const CallbackBase& cb) const override
    {
        const bool ok = m_inner->Connect(obj, context, cb);
        Notify(obj, ok);
        return ok;
    }

    bool DisconnectWithoutContext(ObjectBase* obj, const CallbackBase& cb) const override
    {
        return m_inner->DisconnectWithoutContext(obj, cb);
    }

    bool Disconnect(ObjectBase* obj, std::string context, const CallbackBase& cb) const override
    {
        return m_inner->Disconnect(obj, context, cb);
    }

  private:
    void Notify(ObjectBase* obj, bool ok) const
    {
        if (!ok)
        {
            return;
        }
        if (T* t = dynamic_cast<T*>(obj))
        {
            (t->*m_notify)();
        }
    }

    Ptr<const TraceSourceAccessor> m_inner;
    void (T::*m_notify)();
};

/// MakeTraceSourceAccessor(member), and (owner->*notify)() on every connection.
template <class T, class U>
Ptr<const TraceSourceAccessor>
MakeNotifyingTraceSourceAccessor(U T::*member, void (T::*notify)())
{
    return Ptr<const TraceSourceAccessor>(
        new TitaNotifyingAccessor<T>(MakeTraceSourceAccessor(member), notify),
        false);
}

} // namespace ns3
