// Simulator events that allocate nothing when scheduled.
//
// Simulator::Schedule(delay, &T::Fn, obj) makes a new EventImpl (a heap block)
// per call, and a Cancel()ed event still costs its place in the scheduler. The
// model's per-packet events (a frame's arrival at the end of a link, the wire
// becoming free, an engine wakeup) instead reuse one EventImpl each: the
// simulator takes a reference per scheduling and drops it after the call, so the
// same object may be pending several times at once. These events are never
// cancelled: the callee checks whether it still has something to do.
#pragma once

#include <cstdint>

#include "tita-simulator-impl.h"

#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/ptr.h"
#include "ns3/simulator.h"

namespace ns3
{

/**
 * \ingroup tita
 * A reusable event calling (obj->*Fn)().
 */
template <class T, void (T::*Fn)()>
class TitaEvent : public EventImpl
{
  public:
    explicit TitaEvent(T* obj)
        : m_obj(obj)
    {
    }

    /// Calls obj->Fn() `delay` from now, in the current context.
    void Schedule(const Time& delay)
    {
        Ref(); // the simulator's reference, dropped after Notify()
        TitaSimulatorImpl::ScheduleWithContextFast(TitaSimulatorImpl::ContextFast(), delay, this);
    }

    /// Calls obj->Fn() `delay` from now, in `context` (a node id); `hint` is
    /// memory the call reads first (prefetched just before).
    void ScheduleWithContext(uint32_t context, const Time& delay, const void* hint = nullptr)
    {
        Ref();
        TitaSimulatorImpl::ScheduleWithContextFast(context, delay, this, hint);
    }

    /// The owner is going away: pending calls do nothing.
    void Detach()
    {
        m_obj = nullptr;
    }

  protected:
    void Notify() override
    {
        if (m_obj != nullptr)
        {
            (m_obj->*Fn)();
        }
    }

  private:
    T* m_obj;
};

} // namespace ns3
