// A lean ns-3 simulator implementation for large tita simulations.
//
// Same semantics and the same event order as ns3::DefaultSimulatorImpl: events
// run by time stamp, events of equal time in the order they were scheduled, the
// same uids, contexts, Stop, destroy events, Cancel and Remove. What it leaves
// out is per-event overhead: the event queue is built in (no virtual Scheduler,
// no allocation per event, no tree node per event as in the default std::map),
// no EventId is built for events nobody can hold (ScheduleWithContext, the
// pre-event hook), no logging on the per-event path. Events are scheduled from
// the simulation thread only.
//
// The queue is a calendar: a ring of 8192 buckets of about 2 ns each (16 us
// ahead of the clock) holds nearly every event a packet network schedules
// (arrivals a link delay ahead, wires freeing, pacing). A bucket is 8 slots in
// one contiguous slab (more spill to a vector of its own), written on insertion
// and read once, when the clock reaches it: then its events are gathered into a
// small array, sorted by (time, uid), and run from there; events scheduled
// into the clock's bucket are inserted in order. Later events wait in a 4-ary
// heap and move into the ring as the clock comes near them. Insertion and
// removal cost O(1) on average, where ns-3's map and heap schedulers cost
// O(log n) with n in the thousands, and an insertion only writes memory.
//
// tita-sim selects it (SimulatorImplementationType = ns3::TitaSimulatorImpl);
// --SimulatorImplementationType=ns3::DefaultSimulatorImpl brings back ns-3's own,
// with --SchedulerType. SchedulerType does not apply to this one.
#pragma once

#include <cstdint>
#include <list>
#include <vector>

#include "ns3/event-id.h"
#include "ns3/event-impl.h"
#include "ns3/nstime.h"
#include "ns3/simulator-impl.h"
#include "ns3/simulator.h"

namespace ns3
{

/**
 * \ingroup tita
 * SimulatorImpl with a built-in calendar event queue.
 */
class TitaSimulatorImpl : public SimulatorImpl
{
  public:
    static TypeId GetTypeId();

    TitaSimulatorImpl();
    ~TitaSimulatorImpl() override;

    void Destroy() override;
    bool IsFinished() const override;
    void Stop() override;
    void Stop(const Time& delay) override;
    EventId Schedule(const Time& delay, EventImpl* event) override;
    void ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event) override;
    EventId ScheduleNow(EventImpl* event) override;
    EventId ScheduleDestroy(EventImpl* event) override;
    void Remove(const EventId& id) override;
    void Cancel(const EventId& id) override;
    bool IsExpired(const EventId& id) const override;
    void Run() override;
    Time Now() const override;
    Time GetDelayLeft(const EventId& id) const override;
    Time GetMaximumSimulationTime() const override;
    /// The queue is built in; the factory is ignored.
    void SetScheduler(ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override;
    uint32_t GetContext() const override;
    uint64_t GetEventCount() const override;

    // ---- fast paths for the model's per-packet code (same results as
    // Simulator::Now() and Simulator::ScheduleWithContext(), without the
    // virtual calls, the checks and the logging on the way)

    /// The TitaSimulatorImpl in use, nullptr if the simulator runs another one.
    static TitaSimulatorImpl* Active()
    {
        return s_active;
    }
    /// Simulator::Now().GetNanoSeconds().
    static uint64_t NowNs()
    {
        return s_active != nullptr ? s_active->m_currentTs / s_active->m_stepsPerNs
                                   : static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
    }
    /// Simulator::Now().
    static Time NowTime()
    {
        return s_active != nullptr ? TimeStep(s_active->m_currentTs) : Simulator::Now();
    }
    /// Simulator::ScheduleWithContext(context, delay, event): the simulator takes
    /// over one reference to event. `hint`: memory the event will read first (a
    /// packet), fetched into the cache while the event before it runs.
    static void ScheduleWithContextFast(uint32_t context,
                                        const Time& delay,
                                        EventImpl* event,
                                        const void* hint = nullptr)
    {
        if (s_active != nullptr)
        {
            s_active->Insert(s_active->m_currentTs + static_cast<uint64_t>(delay.GetTimeStep()),
                             context,
                             event,
                             hint);
        }
        else
        {
            Simulator::ScheduleWithContext(context, delay, event);
        }
    }
    /// Deferred scheduling, for event streams that fire in the order they are
    /// scheduled (the arrivals on one link direction): ReserveUid() takes the
    /// uid Simulator::Schedule would give now, and InsertReserved() queues the
    /// event later (once the one before it in the stream has run) with that uid
    /// and its original time stamp, so that it runs exactly where it would have.
    /// Only with Active() != nullptr.
    uint64_t ReserveUid(uint64_t delaySteps, uint64_t* ts)
    {
        *ts = m_currentTs + delaySteps;
        return m_seq++;
    }
    void InsertReserved(uint64_t ts, uint64_t uid, uint32_t context, EventImpl* event, const void* hint)
    {
        Place({ts, uid, event, hint, context});
        ++m_size;
    }

    /// Simulator::GetContext().
    static uint32_t ContextFast()
    {
        return s_active != nullptr ? s_active->m_currentContext : Simulator::GetContext();
    }

  private:
    static TitaSimulatorImpl* s_active;

    void DoDispose() override;

    struct Entry
    {
        uint64_t ts;  // time stamp (time steps)
        uint64_t seq; // scheduling order; the uid is its low 32 bits, as ns-3's
        EventImpl* impl;
        const void* hint; // prefetched (4 cache lines) before the event runs; may be null
        uint32_t context;
    };
    static bool Before(const Entry& a, const Entry& b)
    {
        return a.ts < b.ts || (a.ts == b.ts && a.seq < b.seq);
    }
    static constexpr uint32_t kBuckets = 8192; // a power of two
    static constexpr uint32_t kSlots = 8;      // per bucket in the slab

    void Insert(uint64_t ts, uint32_t context, EventImpl* event, const void* hint = nullptr);
    void Place(const Entry& e);
    Entry PopMin();
    /// Moves the cursor to the next bucket holding events (pulling far events
    /// into the ring as it goes) and gathers it into m_cur; false if no event
    /// is left.
    bool Advance();
    /// Moves bucket `slot`'s events to m_cur, sorted.
    void Gather(uint32_t slot);
    void FarPush(const Entry& e);
    Entry FarPop();
    void FarSiftDown(std::size_t i);
    /// Finds, unlinks and returns the event of id; nullptr if it is not queued.
    EventImpl* Unlink(const EventId& id);

    uint32_t m_shift = 0;  // bucket width: 2^shift time steps
    uint64_t m_cursor = 0; // absolute bucket number of the clock's bucket
    // Bucket b (b in (cursor, cursor + kBuckets)) at slot b % kBuckets: its
    // first kSlots events in m_slab, the rest in m_spill.
    std::vector<Entry> m_slab;
    std::vector<uint16_t> m_count;
    std::vector<std::vector<Entry>> m_spill;
    std::vector<uint64_t> m_occupied; // a bit per slot: holds events
    // The clock's bucket, sorted: events [m_curHead, size) are still to run.
    std::vector<Entry> m_cur;
    std::size_t m_curHead = 0;
    std::vector<Entry> m_far; // 4-ary heap of events beyond the ring
    std::size_t m_size = 0;   // events queued

    std::list<EventId> m_destroyEvents;
    bool m_stop = false;
    uint64_t m_seq = 4; // uids 0-3 are reserved (invalid, now, destroy)
    uint32_t m_currentUid = 0;
    uint64_t m_currentTs = 0;
    uint32_t m_currentContext;
    uint64_t m_eventCount = 0;
    uint64_t m_stepsPerNs = 1;
};

} // namespace ns3
