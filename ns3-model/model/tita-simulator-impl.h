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
//
// It is also the event queue of one logical process (LP) of
// ns3::TitaParallelSimulatorImpl (tita-sim --threads, tita-parallel-simulator-impl.h):
// then its events are ordered by (time, key) with key = (LP that scheduled the
// event, that LP's own sequence number), a key no thread's timing changes;
// events for another LP go to an outbox (per destination LP) that the
// destination merges at the next round; the fast paths below act on the LP the
// calling thread runs (a thread_local pointer), and Defer() postpones work that
// touches shared state to the serial phase between rounds.
#pragma once

#include <cstdint>
#include <functional>
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

    /// The TitaSimulatorImpl in use (the calling thread's LP in a parallel run),
    /// nullptr if the simulator runs another one.
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
            const uint64_t ts = s_active->m_currentTs + static_cast<uint64_t>(delay.GetTimeStep());
            if (s_active->IsLocal(context))
            {
                s_active->Insert(ts, context, event, hint);
            }
            else
            {
                s_active->SendRemote(context, ts, event, hint);
            }
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
        return m_keyBase | m_seq++;
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

    // ---- a logical process of TitaParallelSimulatorImpl

    /// Receives an arrival another LP sent (SendArrival), on the receiving LP's
    /// thread at the start of a round: obj and arg as given, the frame, and the
    /// time stamp and key InsertReserved wants.
    using AcceptFn = void (*)(void* obj, uint32_t arg, void* frame, uint64_t ts, uint64_t key);

    /// Whether `context` (a node id, or NO_CONTEXT) is this LP's; always true
    /// outside a parallel run.
    bool IsLocal(uint32_t context) const
    {
        return m_lpOf == nullptr || LpOf(context) == m_lp;
    }
    /// A frame for another LP's node `context`, arriving at ts with key (from
    /// ReserveUid): the destination LP calls accept(obj, arg, frame, ts, key)
    /// when it merges its inbox, before it runs past ts.
    void SendArrival(uint32_t context, AcceptFn accept, void* obj, uint32_t arg, void* frame, uint64_t ts, uint64_t key);
    /// Runs fn now, or, while this thread runs an LP's window, in the serial
    /// phase after the window (with every LP stopped at the window's end, in
    /// the order of (time, LP, call) whatever the number of threads), for
    /// work that touches state shared between LPs (flow records, output files).
    static void Defer(std::function<void()> fn);
    /// While a thread runs an LP's window.
    static bool InLpRun()
    {
        return s_active != nullptr && s_active->m_inRun;
    }

    /// Makes node `context` the current context while it lives: in a parallel
    /// run's serial phase, the thread acts as that node's LP (events it
    /// schedules join that LP's queue); inside an LP's window, a node of
    /// another LP aborts (a cross-LP call). Nothing outside a parallel run.
    class NodeScope
    {
      public:
        explicit NodeScope(uint32_t context);
        ~NodeScope();
        NodeScope(const NodeScope&) = delete;
        NodeScope& operator=(const NodeScope&) = delete;

      private:
        TitaSimulatorImpl* m_prev = nullptr;
        uint32_t m_prevContext = 0;
        uint32_t m_targetContext = 0;
        bool m_active = false;
    };

  private:
    friend class TitaParallelSimulatorImpl;
    // initial-exec: the model is linked into the program, and the fast paths
    // above read it per event.
    static thread_local TitaSimulatorImpl* s_active __attribute__((tls_model("initial-exec")));

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
    static constexpr uint32_t kBuckets = 8192; // a power of two (LPs: kLpBuckets)
    static constexpr uint32_t kLpBuckets = 1024;
    static constexpr uint32_t kSlots = 8;      // per bucket in the slab

    void Insert(uint64_t ts, uint32_t context, EventImpl* event, const void* hint = nullptr);
    void Place(const Entry& e);
    Entry PopMin();
    /// Sets the clock to the event's and runs it.
    void Invoke(const Entry& e);
    /// Moves the cursor to the next bucket holding events (pulling far events
    /// into the ring as it goes) and gathers it into m_cur; false if no event
    /// is left.
    bool Advance();
    /// The first bucket holding events after the cursor, within one lap, as
    /// its distance past cursor + 1; UINT32_MAX if there is none.
    uint32_t NextOccupied() const;
    /// Moves bucket `slot`'s events to m_cur, sorted.
    void Gather(uint32_t slot);
    void FarPush(const Entry& e);
    Entry FarPop();
    void FarSiftDown(std::size_t i);
    /// Finds, unlinks and returns the event of id; nullptr if it is not queued.
    EventImpl* Unlink(const EventId& id);

    /// An LP's queue: `buckets` (a power of two).
    TitaSimulatorImpl(uint32_t buckets, bool makeActive);

    // ---- parallel runs (TitaParallelSimulatorImpl drives these)
    struct Remote
    {
        uint64_t ts;
        uint64_t key;
        EventImpl* impl;  // an event, or nullptr: an arrival for accept
        void* hint;       // the event's hint, or the arrival's frame
        AcceptFn accept;
        void* obj;
        uint32_t arg;
        uint32_t context;
    };
    uint32_t LpOf(uint32_t context) const
    {
        return context < m_nLpOf ? m_lpOf[context] : m_globalLp;
    }
    void SendRemote(uint32_t context, uint64_t ts, EventImpl* event, const void* hint);
    void PushRemote(uint32_t lp, const Remote& r);
    /// Becomes LP `lp` of a parallel run over `lpOf` (node id -> LP; others: globalLp).
    void JoinParallel(uint32_t lp, uint32_t globalLp, const uint32_t* lpOf, uint32_t nLpOf);
    /// Time stamp of the next event, UINT64_MAX if none.
    uint64_t NextTs();
    /// Runs the events before `end`; returns how many ran.
    uint64_t RunUntil(uint64_t end);
    /// Takes out every queued event (the queue is empty afterwards).
    void ExtractAll(std::vector<Entry>* out);
    /// Queues an event another queue took (ExtractAll) or another LP sent.
    void Adopt(const Entry& e)
    {
        Place(e);
        ++m_size;
    }
    /// Merges what `from`'s outbox holds for this LP.
    void MergeFrom(TitaSimulatorImpl* from);
    /// Sets the clock forward to ts (the serial phase acting as this LP).
    void AdvanceClockTo(uint64_t ts)
    {
        if (ts > m_currentTs)
        {
            m_currentTs = ts;
            m_currentKey = 0;
            m_currentUid = 0;
        }
    }

    struct Deferred
    {
        uint64_t ts;
        uint64_t seq;
        std::function<void()> fn;
    };

    uint32_t m_lp = 0;
    uint32_t m_globalLp = 0;
    TitaSimulatorImpl* const* m_peers = nullptr; // every LP's queue, by LP (the global one last)
    uint64_t m_windowEnd = 0;                   // of the window being run
    const uint32_t* m_lpOf = nullptr; // nullptr: not parallel
    uint32_t m_nLpOf = 0;
    uint64_t m_keyBase = 0; // lp << 40 in a parallel run
    bool m_keyed = false;
    uint64_t m_seqStart = 0; // sequence numbers below: events queued before the partition (key = sequence)
    bool m_inRun = false;
    uint64_t m_currentKey = 0;
    // Outboxes per destination LP, two sets: a round writes one while the
    // receivers merge what the round before (and its serial phase) wrote in
    // the other.
    std::vector<std::vector<Remote>> m_out[2];
    std::vector<uint32_t> m_outTouched[2]; // destinations written since the last collection
    uint32_t m_wp = 0;                      // the set written now
    uint64_t m_outMin = UINT64_MAX;         // earliest time stamp sent since then
    std::vector<Deferred> m_deferred;
    uint64_t m_deferSeq = 0;
    uint32_t m_mask = kBuckets - 1;
    uint32_t m_buckets = kBuckets;

    uint32_t m_shift = 0;  // bucket width: 2^shift time steps
    uint64_t m_cursor = 0; // absolute bucket number of the clock's bucket
    // Bucket b (b in (cursor, cursor + buckets)) at slot b % buckets: its
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
