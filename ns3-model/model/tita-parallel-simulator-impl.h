// tita-sim --threads=N: the network cut into logical processes (LPs), each with
// its own event queue (a TitaSimulatorImpl), run by N threads in rounds.
//
// Conservative synchronisation: the lookahead L is the smallest delay of a link
// whose two ends are in two LPs. A round runs every LP's events in the window
// [t0, W), t0 the earliest event anywhere, W = min(t0 + L, the next global
// event): nothing one LP does inside the window can reach another before W,
// since a frame on a cut link arrives at least L after it left. The threads
// take the LPs of a round largest measured load first (events of its last
// round), each LP whole; a frame for another LP goes into the sender's outbox
// for that LP (written by the sender's thread only) and the receiver merges it
// at the start of the next round: no lock on the per-packet path.
//
// Between rounds one thread runs the serial phase, every LP stopped at W:
// work that LPs deferred (TitaSimulatorImpl::Defer: flow completions, output
// rows) in the order of (time, LP, call), then the global events (context
// NO_CONTEXT: workload arrivals, samplers, faults, stop) due at the start of
// the next window, each at its own time.
//
// Identical results for any N: every LP orders its events by (time, key), the
// key being (the LP that scheduled the event, that LP's sequence number); which
// thread runs an LP, and when, changes nothing an LP sees. N = 1 runs the same
// rounds on one thread (the sequential reference of a parallel run).
#pragma once

#include "tita-simulator-impl.h"

#include "ns3/simulator-impl.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * SimulatorImpl running logical processes on threads (tita-sim --threads).
 */
class TitaParallelSimulatorImpl : public SimulatorImpl
{
  public:
    static TypeId GetTypeId();

    TitaParallelSimulatorImpl();
    ~TitaParallelSimulatorImpl() override;

    /// The impl in use, nullptr if the simulator runs another one.
    static TitaParallelSimulatorImpl* Get();

    /// Splits the nodes into LPs (lpOfNode: node id -> LP, nLps LPs), with
    /// lookahead in time steps (> 0), run by `threads` threads. Events queued
    /// so far move to their node's LP. Once, before Run().
    void Configure(std::vector<uint32_t> lpOfNode, uint32_t nLps, uint64_t lookahead, uint32_t threads);
    uint32_t GetNLps() const { return m_nLps; }
    uint32_t GetThreads() const { return m_threads; }
    uint64_t GetRounds() const { return m_rounds; }

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
    void SetScheduler(ObjectFactory schedulerFactory) override;
    uint32_t GetSystemId() const override;
    uint32_t GetContext() const override;
    uint64_t GetEventCount() const override;

  private:
    void DoDispose() override;
    /// The queue the calling thread acts on.
    static TitaSimulatorImpl* Cur();
    void Worker();
    void RunLp(uint32_t lp);
    /// Between rounds: deferred work, global events, the next window. Sets
    /// m_done when nothing is left or the run stopped.
    void SerialPhase();
    void CollectOutboxes();

    struct Barrier;

    Ptr<TitaSimulatorImpl> m_global; // global events (NO_CONTEXT), and everything before Configure
    std::vector<Ptr<TitaSimulatorImpl>> m_lps;
    std::vector<TitaSimulatorImpl*> m_peers; // m_lps then m_global
    std::vector<uint32_t> m_lpOfNode;
    uint32_t m_nLps = 0;
    uint32_t m_threads = 1;
    uint64_t m_lookahead = 0;
    bool m_configured = false;

    // A round.
    uint64_t m_windowEnd = 0;
    std::vector<uint32_t> m_order;               // LPs with work this round, largest load first
    std::atomic<uint32_t> m_nextInOrder{0};
    std::vector<std::vector<uint32_t>> m_inboxSrcs; // per LP: senders with frames for it
    std::vector<uint64_t> m_nextTs;               // per LP, after its round
    std::vector<uint64_t> m_load;                 // per LP: events of its last round
    uint64_t m_rounds = 0;
    bool m_done = false;
    bool m_stop = false;
    std::unique_ptr<Barrier> m_barrier;
};

} // namespace ns3
