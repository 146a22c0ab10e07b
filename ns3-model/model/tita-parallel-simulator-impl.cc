#include "tita-parallel-simulator-impl.h"

#include "ns3/abort.h"
#include "ns3/assert.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <thread>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaParallelSimulatorImpl");
NS_OBJECT_ENSURE_REGISTERED(TitaParallelSimulatorImpl);

namespace
{

TitaParallelSimulatorImpl* g_parallel = nullptr; // set on the main thread, before any worker starts

} // namespace

// The threads meet here after each round; the last one to arrive runs the
// serial phase while the others wait (spinning briefly, then asleep: the
// machine may have fewer cores than threads).
struct TitaParallelSimulatorImpl::Barrier
{
    explicit Barrier(uint32_t n)
        : threads(n)
    {
    }

    template <class F>
    void ArriveAndWait(F&& completion)
    {
        const uint32_t g = generation.load(std::memory_order_acquire);
        if (arrived.fetch_add(1, std::memory_order_acq_rel) + 1 == threads)
        {
            arrived.store(0, std::memory_order_relaxed);
            completion();
            generation.store(g + 1, std::memory_order_release);
            generation.notify_all();
            return;
        }
        for (int i = 0; i < 512; ++i)
        {
            if (generation.load(std::memory_order_acquire) != g)
            {
                return;
            }
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
        while (generation.load(std::memory_order_acquire) == g)
        {
            generation.wait(g, std::memory_order_acquire);
        }
    }

    const uint32_t threads;
    std::atomic<uint32_t> arrived{0};
    std::atomic<uint32_t> generation{0};
};

TypeId
TitaParallelSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TitaParallelSimulatorImpl")
                            .SetParent<SimulatorImpl>()
                            .SetGroupName("Tita")
                            .AddConstructor<TitaParallelSimulatorImpl>();
    return tid;
}

TitaParallelSimulatorImpl::TitaParallelSimulatorImpl()
    : m_global(CreateObject<TitaSimulatorImpl>())
{
    // Until Configure, one queue on the main thread: the fast paths use it.
    TitaSimulatorImpl::s_active = PeekPointer(m_global);
    g_parallel = this;
}

TitaParallelSimulatorImpl::~TitaParallelSimulatorImpl()
{
    if (g_parallel == this)
    {
        g_parallel = nullptr;
    }
}

TitaParallelSimulatorImpl*
TitaParallelSimulatorImpl::Get()
{
    return g_parallel;
}

TitaSimulatorImpl*
TitaParallelSimulatorImpl::Cur()
{
    return TitaSimulatorImpl::s_active;
}

void
TitaParallelSimulatorImpl::DoDispose()
{
    for (auto& lp : m_lps)
    {
        lp->Dispose();
    }
    m_lps.clear();
    m_peers.clear();
    if (m_global)
    {
        m_global->Dispose();
        m_global = nullptr;
    }
    TitaSimulatorImpl::s_active = nullptr;
    if (g_parallel == this)
    {
        g_parallel = nullptr;
    }
    SimulatorImpl::DoDispose();
}

void
TitaParallelSimulatorImpl::Configure(std::vector<uint32_t> lpOfNode, uint32_t nLps, uint64_t lookahead, uint32_t threads)
{
    NS_ABORT_MSG_IF(m_configured, "TitaParallelSimulatorImpl::Configure runs once");
    NS_ABORT_MSG_IF(nLps == 0 || lookahead == 0 || threads == 0, "TitaParallelSimulatorImpl: bad partition");
    m_configured = true;
    m_lpOfNode = std::move(lpOfNode);
    m_nLps = nLps;
    m_lookahead = lookahead;
    m_threads = threads;
    for (uint32_t lp = 0; lp < nLps; ++lp)
    {
        m_lps.push_back(CompleteConstruct(new TitaSimulatorImpl(TitaSimulatorImpl::kLpBuckets, false)));
    }
    for (auto& lp : m_lps)
    {
        m_peers.push_back(PeekPointer(lp));
    }
    m_peers.push_back(PeekPointer(m_global));
    const auto n = static_cast<uint32_t>(m_lpOfNode.size());
    for (uint32_t lp = 0; lp <= nLps; ++lp)
    {
        TitaSimulatorImpl* q = m_peers[lp];
        q->JoinParallel(lp, nLps, m_lpOfNode.data(), n);
        q->m_peers = m_peers.data();
        q->m_currentTs = m_global->m_currentTs;
        // Every LP's sequence starts after those of the events queued so far,
        // which keep their keys (IsExpired tells them apart).
        q->m_seq = m_global->m_seq;
        q->m_seqStart = m_global->m_seq;
        q->m_cursor = m_global->m_cursor;
    }
    // What was queued before the partition goes to its node's LP, with its key.
    std::vector<TitaSimulatorImpl::Entry> all;
    m_global->ExtractAll(&all);
    for (const auto& e : all)
    {
        m_peers[m_global->LpOf(e.context)]->Adopt(e);
    }
    m_inboxSrcs.assign(nLps + 1, {});
    m_nextTs.assign(nLps, UINT64_MAX);
    m_load.assign(nLps, 0);
}

// ---------------------------------------------------------------- the rounds

void
TitaParallelSimulatorImpl::Run()
{
    if (!m_configured)
    {
        // Nothing to split (a run that never configured the partition): one queue.
        m_global->Run();
        return;
    }
    m_stop = false;
    m_done = false;
    m_barrier = std::make_unique<Barrier>(m_threads);
    SerialPhase();
    std::vector<std::thread> workers;
    for (uint32_t i = 1; i < m_threads && !m_done; ++i)
    {
        workers.emplace_back([this] { Worker(); });
    }
    if (!m_done)
    {
        Worker();
    }
    for (auto& t : workers)
    {
        t.join();
    }
    // The clock of the run: its last event's time, or the stop's.
    TitaSimulatorImpl::s_active = PeekPointer(m_global);
    for (auto& lp : m_lps)
    {
        m_global->m_currentTs = std::max(m_global->m_currentTs, lp->m_currentTs);
    }
    m_global->m_currentContext = Simulator::NO_CONTEXT;
}

void
TitaParallelSimulatorImpl::Worker()
{
    for (;;)
    {
        for (;;)
        {
            const uint32_t i = m_nextInOrder.fetch_add(1, std::memory_order_relaxed);
            if (i >= m_order.size())
            {
                break;
            }
            RunLp(m_order[i]);
        }
        m_barrier->ArriveAndWait([this] { SerialPhase(); });
        if (m_done)
        {
            return;
        }
    }
}

void
TitaParallelSimulatorImpl::RunLp(uint32_t lp)
{
    TitaSimulatorImpl* q = m_peers[lp];
    TitaSimulatorImpl::s_active = q;
    for (uint32_t src : m_inboxSrcs[lp])
    {
        q->MergeFrom(m_peers[src]);
    }
    m_inboxSrcs[lp].clear();
    m_load[lp] = q->RunUntil(m_windowEnd);
    m_nextTs[lp] = q->NextTs();
    TitaSimulatorImpl::s_active = nullptr;
}

void
TitaParallelSimulatorImpl::CollectOutboxes()
{
    for (uint32_t src = 0; src <= m_nLps; ++src)
    {
        TitaSimulatorImpl* q = m_peers[src];
        for (uint32_t dst : q->m_outTouched[q->m_wp])
        {
            if (dst == m_nLps)
            {
                // Events for the global queue join it now (the serial phase runs it).
                auto& in = q->m_out[q->m_wp][dst];
                for (const auto& r : in)
                {
                    NS_ABORT_MSG_IF(r.impl == nullptr, "threads: a frame for no node");
                    m_global->Adopt({r.ts, r.key, r.impl, r.hint, r.context});
                }
                in.clear();
                continue;
            }
            m_inboxSrcs[dst].push_back(src);
        }
        q->m_outTouched[q->m_wp].clear();
    }
}

void
TitaParallelSimulatorImpl::SerialPhase()
{
    TitaSimulatorImpl* const saved = TitaSimulatorImpl::s_active;
    TitaSimulatorImpl::s_active = PeekPointer(m_global);
    m_global->AdvanceClockTo(m_windowEnd);
    m_global->m_currentContext = Simulator::NO_CONTEXT;
    ++m_rounds;

    // 1. What the LPs deferred, in (time, LP, call) order.
    struct Item
    {
        uint64_t ts;
        uint32_t lp;
        uint64_t seq;
        std::function<void()>* fn;
    };
    std::vector<Item> items;
    for (uint32_t lp = 0; lp < m_nLps; ++lp)
    {
        for (auto& d : m_peers[lp]->m_deferred)
        {
            items.push_back({d.ts, lp, d.seq, &d.fn});
        }
    }
    if (!items.empty())
    {
        std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
            return a.ts != b.ts ? a.ts < b.ts : a.lp != b.lp ? a.lp < b.lp : a.seq < b.seq;
        });
        for (const Item& it : items)
        {
            (*it.fn)();
        }
        for (uint32_t lp = 0; lp < m_nLps; ++lp)
        {
            m_peers[lp]->m_deferred.clear();
        }
    }

    // 2. Global events due before any LP's next event, each at its time.
    uint64_t t0 = UINT64_MAX;
    uint64_t tg = UINT64_MAX;
    for (;;)
    {
        CollectOutboxes();
        t0 = UINT64_MAX;
        for (uint32_t lp = 0; lp < m_nLps; ++lp)
        {
            m_nextTs[lp] = m_peers[lp]->NextTs();
            t0 = std::min(t0, m_nextTs[lp]);
        }
        for (uint32_t src = 0; src <= m_nLps; ++src)
        {
            t0 = std::min(t0, m_peers[src]->m_outMin);
        }
        tg = m_global->NextTs();
        if (m_stop || tg == UINT64_MAX || tg > t0)
        {
            break;
        }
        m_global->RunUntil(tg + 1);
        TitaSimulatorImpl::s_active = PeekPointer(m_global);
    }
    if (m_stop || (t0 == UINT64_MAX && tg == UINT64_MAX))
    {
        m_done = true;
        TitaSimulatorImpl::s_active = saved;
        return;
    }

    // 3. The next window, and its LPs (those with events in it or frames to
    // merge), largest load of their last round first.
    const uint64_t reach = t0 > UINT64_MAX - m_lookahead ? UINT64_MAX : t0 + m_lookahead;
    m_windowEnd = std::min(reach, tg);
    for (uint32_t src = 0; src <= m_nLps; ++src)
    {
        // The receivers merge what was written so far; the round writes the other set.
        m_peers[src]->m_outMin = UINT64_MAX;
        m_peers[src]->m_wp ^= 1;
    }
    m_order.clear();
    for (uint32_t lp = 0; lp < m_nLps; ++lp)
    {
        if (m_nextTs[lp] < m_windowEnd || !m_inboxSrcs[lp].empty())
        {
            m_order.push_back(lp);
        }
    }
    std::sort(m_order.begin(), m_order.end(), [this](uint32_t a, uint32_t b) {
        return m_load[a] != m_load[b] ? m_load[a] > m_load[b] : a < b;
    });
    m_nextInOrder.store(0, std::memory_order_relaxed);
    TitaSimulatorImpl::s_active = saved;
}

// ---------------------------------------------------------------- the API, on the calling thread's queue

void
TitaParallelSimulatorImpl::Destroy()
{
    TitaSimulatorImpl::s_active = PeekPointer(m_global);
    m_global->Destroy();
}

bool
TitaParallelSimulatorImpl::IsFinished() const
{
    if (m_done || m_stop)
    {
        return true;
    }
    for (auto* q : m_peers)
    {
        if (q->m_size > 0)
        {
            return false;
        }
    }
    return m_global->m_size == 0;
}

void
TitaParallelSimulatorImpl::Stop()
{
    m_stop = true;
}

void
TitaParallelSimulatorImpl::Stop(const Time& delay)
{
    Simulator::Schedule(delay, &Simulator::Stop);
}

EventId
TitaParallelSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    return Cur()->Schedule(delay, event);
}

void
TitaParallelSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    TitaSimulatorImpl::ScheduleWithContextFast(context, delay, event);
}

EventId
TitaParallelSimulatorImpl::ScheduleNow(EventImpl* event)
{
    return Cur()->ScheduleNow(event);
}

EventId
TitaParallelSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    return m_global->ScheduleDestroy(event);
}

void
TitaParallelSimulatorImpl::Remove(const EventId& id)
{
    if (id.GetUid() == EventId::DESTROY)
    {
        m_global->Remove(id);
        return;
    }
    Cur()->Remove(id);
}

void
TitaParallelSimulatorImpl::Cancel(const EventId& id)
{
    if (id.GetUid() == EventId::DESTROY)
    {
        m_global->Cancel(id);
        return;
    }
    Cur()->Cancel(id);
}

bool
TitaParallelSimulatorImpl::IsExpired(const EventId& id) const
{
    if (id.GetUid() == EventId::DESTROY)
    {
        return m_global->IsExpired(id);
    }
    return Cur()->IsExpired(id);
}

Time
TitaParallelSimulatorImpl::Now() const
{
    return Cur()->Now();
}

Time
TitaParallelSimulatorImpl::GetDelayLeft(const EventId& id) const
{
    return Cur()->GetDelayLeft(id);
}

Time
TitaParallelSimulatorImpl::GetMaximumSimulationTime() const
{
    return m_global->GetMaximumSimulationTime();
}

void
TitaParallelSimulatorImpl::SetScheduler(ObjectFactory)
{
}

uint32_t
TitaParallelSimulatorImpl::GetSystemId() const
{
    return 0;
}

uint32_t
TitaParallelSimulatorImpl::GetContext() const
{
    return Cur()->GetContext();
}

uint64_t
TitaParallelSimulatorImpl::GetEventCount() const
{
    uint64_t n = m_global->GetEventCount();
    for (const auto& lp : m_lps)
    {
        n += lp->GetEventCount();
    }
    return n;
}

} // namespace ns3
