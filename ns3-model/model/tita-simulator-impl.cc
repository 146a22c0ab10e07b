#include "tita-simulator-impl.h"

#include <algorithm>

#include "ns3/abort.h"
#include "ns3/assert.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaSimulatorImpl");
NS_OBJECT_ENSURE_REGISTERED(TitaSimulatorImpl);

TypeId
TitaSimulatorImpl::GetTypeId()
{
    static TypeId tid = TypeId("ns3::TitaSimulatorImpl")
                            .SetParent<SimulatorImpl>()
                            .SetGroupName("Tita")
                            .AddConstructor<TitaSimulatorImpl>();
    return tid;
}

thread_local TitaSimulatorImpl* TitaSimulatorImpl::s_active = nullptr;

TitaSimulatorImpl::TitaSimulatorImpl()
    : TitaSimulatorImpl(kBuckets, true)
{
}

TitaSimulatorImpl::TitaSimulatorImpl(uint32_t buckets, bool makeActive)
    : m_mask(buckets - 1),
      m_buckets(buckets),
      m_slab(std::size_t{buckets} * kSlots),
      m_count(buckets, 0),
      m_spill(buckets),
      m_occupied(buckets / 64, 0),
      m_currentContext(Simulator::NO_CONTEXT)
{
    NS_ABORT_MSG_IF(buckets < 64 || (buckets & (buckets - 1)) != 0, "TitaSimulatorImpl: buckets must be a power of two >= 64");
    m_cur.reserve(256);
    const int64_t stepsPerNs = NanoSeconds(1).GetTimeStep();
    NS_ABORT_MSG_IF(stepsPerNs < 1, "TitaSimulatorImpl needs a time resolution of 1 ns or finer");
    m_stepsPerNs = static_cast<uint64_t>(stepsPerNs);
    if (makeActive)
    {
        s_active = this;
    }
    // Buckets of about 2 ns at the current time resolution (a power of two of
    // time steps: 2 at ns, 2048 at ps).
    const int64_t stepsPer2Ns = NanoSeconds(2).GetTimeStep();
    while (m_shift < 40 && (int64_t{1} << m_shift) < stepsPer2Ns)
    {
        ++m_shift;
    }
}

TitaSimulatorImpl::~TitaSimulatorImpl()
{
    if (s_active == this)
    {
        s_active = nullptr;
    }
}

void
TitaSimulatorImpl::DoDispose()
{
    if (s_active == this)
    {
        s_active = nullptr;
    }
    for (uint32_t slot = 0; slot < m_buckets; ++slot)
    {
        for (uint32_t i = 0; i < std::min<uint32_t>(m_count[slot], kSlots); ++i)
        {
            m_slab[std::size_t{slot} * kSlots + i].impl->Unref();
        }
        for (const Entry& e : m_spill[slot])
        {
            e.impl->Unref();
        }
        m_spill[slot].clear();
        m_count[slot] = 0;
    }
    std::fill(m_occupied.begin(), m_occupied.end(), 0);
    for (std::size_t i = m_curHead; i < m_cur.size(); ++i)
    {
        m_cur[i].impl->Unref();
    }
    m_cur.clear();
    m_curHead = 0;
    for (const Entry& e : m_far)
    {
        e.impl->Unref();
    }
    m_far.clear();
    m_size = 0;
    SimulatorImpl::DoDispose();
}

void
TitaSimulatorImpl::Destroy()
{
    while (!m_destroyEvents.empty())
    {
        Ptr<EventImpl> ev = m_destroyEvents.front().PeekEventImpl();
        m_destroyEvents.pop_front();
        if (!ev->IsCancelled())
        {
            ev->Invoke();
        }
    }
}

void
TitaSimulatorImpl::SetScheduler(ObjectFactory)
{
}

uint32_t
TitaSimulatorImpl::GetSystemId() const
{
    return 0;
}

bool
TitaSimulatorImpl::IsFinished() const
{
    return m_size == 0 || m_stop;
}

// ---------------------------------------------------------------- the queue

void
TitaSimulatorImpl::FarPush(const Entry& e)
{
    std::size_t i = m_far.size();
    m_far.push_back(e);
    while (i > 0)
    {
        const std::size_t parent = (i - 1) / 4;
        if (!Before(e, m_far[parent]))
        {
            break;
        }
        m_far[i] = m_far[parent];
        i = parent;
    }
    m_far[i] = e;
}

void
TitaSimulatorImpl::FarSiftDown(std::size_t i)
{
    const std::size_t n = m_far.size();
    const Entry e = m_far[i];
    for (;;)
    {
        const std::size_t first = 4 * i + 1;
        if (first >= n)
        {
            break;
        }
        std::size_t best = first;
        const std::size_t last = std::min(first + 4, n);
        for (std::size_t c = first + 1; c < last; ++c)
        {
            if (Before(m_far[c], m_far[best]))
            {
                best = c;
            }
        }
        if (!Before(m_far[best], e))
        {
            break;
        }
        m_far[i] = m_far[best];
        i = best;
    }
    m_far[i] = e;
}

TitaSimulatorImpl::Entry
TitaSimulatorImpl::FarPop()
{
    const Entry top = m_far.front();
    m_far.front() = m_far.back();
    m_far.pop_back();
    if (!m_far.empty())
    {
        FarSiftDown(0);
    }
    return top;
}

// Into the clock's bucket (in order), the ring when its bucket is within reach,
// else the far heap.
void
TitaSimulatorImpl::Place(const Entry& e)
{
    const uint64_t b = e.ts >> m_shift;
    if (b <= m_cursor)
    {
        // The clock's bucket (or, in an LP whose next bucket was gathered
        // ahead of its clock, an earlier one): in order among those to run.
        m_cur.push_back(e);
        std::size_t i = m_cur.size() - 1;
        while (i > m_curHead && Before(e, m_cur[i - 1]))
        {
            m_cur[i] = m_cur[i - 1];
            --i;
        }
        m_cur[i] = e;
        return;
    }
    if (b - m_cursor >= m_buckets)
    {
        FarPush(e);
        return;
    }
    const uint32_t slot = static_cast<uint32_t>(b & m_mask);
    const uint32_t n = m_count[slot]++;
    if (n < kSlots)
    {
        m_slab[std::size_t{slot} * kSlots + n] = e;
    }
    else
    {
        m_spill[slot].push_back(e);
    }
    m_occupied[slot >> 6] |= uint64_t{1} << (slot & 63);
}

void
TitaSimulatorImpl::Insert(uint64_t ts, uint32_t context, EventImpl* event, const void* hint)
{
    Place({ts, m_keyBase | m_seq++, event, hint, context});
    ++m_size;
}

void
TitaSimulatorImpl::Gather(uint32_t slot)
{
    m_cur.clear();
    m_curHead = 0;
    const uint32_t n = m_count[slot];
    const Entry* in = &m_slab[std::size_t{slot} * kSlots];
    m_cur.insert(m_cur.end(), in, in + std::min(n, kSlots));
    if (n > kSlots)
    {
        m_cur.insert(m_cur.end(), m_spill[slot].begin(), m_spill[slot].end());
        m_spill[slot].clear();
    }
    m_count[slot] = 0;
    m_occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
    if (m_cur.size() > 1)
    {
        std::sort(m_cur.begin(), m_cur.end(), &TitaSimulatorImpl::Before);
    }
    // The next bucket is probably next: fetch its slots while these run.
    const char* next = reinterpret_cast<const char*>(&m_slab[std::size_t{(slot + 1) & m_mask} * kSlots]);
    for (uint32_t off = 0; off < kSlots * sizeof(Entry); off += 64)
    {
        __builtin_prefetch(next + off);
    }
}

bool
TitaSimulatorImpl::Advance()
{
    for (;;)
    {
        const uint32_t hit = NextOccupied();
        if (hit != UINT32_MAX)
        {
            m_cursor += 1 + hit;
            // Far events the ring now reaches join it.
            while (!m_far.empty() && (m_far.front().ts >> m_shift) - m_cursor < m_buckets)
            {
                Place(FarPop());
            }
            Gather(static_cast<uint32_t>(m_cursor & m_mask));
            return true;
        }
        if (m_far.empty())
        {
            return false;
        }
        // The ring is empty: jump to the first far event's bucket.
        m_cursor = m_far.front().ts >> m_shift;
        m_cur.clear();
        m_curHead = 0;
        while (!m_far.empty() && (m_far.front().ts >> m_shift) - m_cursor < m_buckets)
        {
            Place(FarPop());
        }
        if (m_curHead < m_cur.size())
        {
            return true;
        }
    }
}

// The first occupied bucket after the cursor, within one lap, as its distance
// past cursor + 1; UINT32_MAX when the ring holds nothing there.
uint32_t
TitaSimulatorImpl::NextOccupied() const
{
    const uint32_t start = static_cast<uint32_t>((m_cursor + 1) & m_mask);
    for (uint32_t scanned = 0; scanned < m_buckets - 1;)
    {
        const uint32_t slot = (start + scanned) & m_mask;
        const uint64_t bits = m_occupied[slot >> 6] >> (slot & 63);
        if (bits != 0)
        {
            const uint32_t hit = scanned + static_cast<uint32_t>(__builtin_ctzll(bits));
            return hit < m_buckets - 1 ? hit : UINT32_MAX;
        }
        scanned += 64 - (slot & 63);
    }
    return UINT32_MAX;
}

TitaSimulatorImpl::Entry
TitaSimulatorImpl::PopMin()
{
    if (m_curHead == m_cur.size())
    {
        const bool more = Advance();
        NS_ASSERT(more);
        (void)more;
    }
    const Entry e = m_cur[m_curHead++];
    if (m_curHead < m_cur.size())
    {
        // The next event's object and data (a packet's headers and trailer) are
        // likely cold: fetch them while this one runs.
        const Entry& n = m_cur[m_curHead];
        __builtin_prefetch(n.impl);
        if (n.hint != nullptr)
        {
            const char* h = static_cast<const char*>(n.hint);
            __builtin_prefetch(h);
            __builtin_prefetch(h + 64);
            __builtin_prefetch(h + 128);
            __builtin_prefetch(h + 192);
        }
    }
    --m_size;
    return e;
}

EventImpl*
TitaSimulatorImpl::Unlink(const EventId& id)
{
    auto matches = [&id](const Entry& e) {
        return e.ts == id.GetTs() && static_cast<uint32_t>(e.seq) == id.GetUid() && e.impl == id.PeekEventImpl();
    };
    const uint64_t b = id.GetTs() >> m_shift;
    if (b <= m_cursor)
    {
        for (std::size_t i = m_curHead; i < m_cur.size(); ++i)
        {
            if (matches(m_cur[i]))
            {
                EventImpl* impl = m_cur[i].impl;
                m_cur.erase(m_cur.begin() + static_cast<std::ptrdiff_t>(i)); // keeps the order
                --m_size;
                return impl;
            }
        }
        return nullptr;
    }
    if (b - m_cursor < m_buckets)
    {
        // Take the bucket apart and put back all but the event.
        const uint32_t slot = static_cast<uint32_t>(b & m_mask);
        std::vector<Entry> all;
        const uint32_t n = m_count[slot];
        const Entry* in = &m_slab[std::size_t{slot} * kSlots];
        all.insert(all.end(), in, in + std::min(n, kSlots));
        all.insert(all.end(), m_spill[slot].begin(), m_spill[slot].end());
        EventImpl* impl = nullptr;
        for (std::size_t i = 0; i < all.size(); ++i)
        {
            if (matches(all[i]))
            {
                impl = all[i].impl;
                all.erase(all.begin() + static_cast<std::ptrdiff_t>(i));
                break;
            }
        }
        if (impl == nullptr)
        {
            return nullptr;
        }
        m_spill[slot].clear();
        m_count[slot] = 0;
        m_occupied[slot >> 6] &= ~(uint64_t{1} << (slot & 63));
        for (const Entry& e : all)
        {
            Place(e);
        }
        --m_size;
        return impl;
    }
    for (std::size_t i = 0; i < m_far.size(); ++i)
    {
        if (!matches(m_far[i]))
        {
            continue;
        }
        EventImpl* impl = m_far[i].impl;
        // Rebuild the heap without it (rare: removal of a far event).
        m_far.erase(m_far.begin() + static_cast<std::ptrdiff_t>(i));
        std::vector<Entry> rest;
        rest.swap(m_far);
        for (const Entry& e : rest)
        {
            FarPush(e);
        }
        --m_size;
        return impl;
    }
    return nullptr;
}

// ---------------------------------------------------------------- parallel runs

void
TitaSimulatorImpl::JoinParallel(uint32_t lp, uint32_t globalLp, const uint32_t* lpOf, uint32_t nLpOf)
{
    m_lp = lp;
    m_globalLp = globalLp;
    m_lpOf = lpOf;
    m_nLpOf = nLpOf;
    // LP + 1: events queued before the partition keep their keys (LP "0"),
    // ahead of every LP's at the same time.
    m_keyBase = uint64_t{lp + 1} << 40;
    m_keyed = true;
    m_out[0].assign(globalLp + 1, {});
    m_out[1].assign(globalLp + 1, {});
}

void
TitaSimulatorImpl::PushRemote(uint32_t lp, const Remote& r)
{
    NS_ABORT_MSG_IF(m_inRun && r.ts < m_windowEnd,
                    "threads: an event for node " << r.context << " (LP " << lp << ") scheduled from LP " << m_lp
                                                  << " less than the lookahead ahead; only links with a delay may join "
                                                     "logical processes");
    std::vector<Remote>& out = m_out[m_wp][lp];
    if (out.empty())
    {
        m_outTouched[m_wp].push_back(lp);
    }
    out.push_back(r);
    m_outMin = std::min(m_outMin, r.ts);
}

void
TitaSimulatorImpl::SendRemote(uint32_t context, uint64_t ts, EventImpl* event, const void* hint)
{
    PushRemote(LpOf(context),
               {ts, m_keyBase | m_seq++, event, const_cast<void*>(hint), nullptr, nullptr, 0, context});
}

void
TitaSimulatorImpl::SendArrival(uint32_t context,
                               AcceptFn accept,
                               void* obj,
                               uint32_t arg,
                               void* frame,
                               uint64_t ts,
                               uint64_t key)
{
    PushRemote(LpOf(context), {ts, key, nullptr, frame, accept, obj, arg, context});
}

void
TitaSimulatorImpl::MergeFrom(TitaSimulatorImpl* from)
{
    std::vector<Remote>& in = from->m_out[from->m_wp ^ 1][m_lp];
    for (const Remote& r : in)
    {
        if (r.impl != nullptr)
        {
            Adopt({r.ts, r.key, r.impl, r.hint, r.context});
        }
        else
        {
            r.accept(r.obj, r.arg, r.hint, r.ts, r.key);
        }
    }
    in.clear();
}

void
TitaSimulatorImpl::Defer(std::function<void()> fn)
{
    TitaSimulatorImpl* a = s_active;
    if (a != nullptr && a->m_inRun)
    {
        a->m_deferred.push_back({a->m_currentTs, a->m_deferSeq++, std::move(fn)});
        return;
    }
    fn();
}

TitaSimulatorImpl::NodeScope::NodeScope(uint32_t context)
{
    TitaSimulatorImpl* cur = s_active;
    if (cur == nullptr || cur->m_lpOf == nullptr)
    {
        return;
    }
    m_active = true;
    m_prev = cur;
    m_prevContext = cur->m_currentContext;
    const uint32_t lp = cur->LpOf(context);
    if (lp == cur->m_lp)
    {
        cur->m_currentContext = context;
        return;
    }
    NS_ABORT_MSG_IF(cur->m_inRun,
                    "threads: node " << context << " (LP " << lp << ") touched from LP " << cur->m_lp
                                     << " inside a window (a cross-LP call)");
    TitaSimulatorImpl* t = cur->m_peers[lp];
    t->AdvanceClockTo(cur->m_currentTs);
    m_targetContext = t->m_currentContext;
    t->m_currentContext = context;
    s_active = t;
}

TitaSimulatorImpl::NodeScope::~NodeScope()
{
    if (!m_active)
    {
        return;
    }
    if (s_active != m_prev)
    {
        s_active->m_currentContext = m_targetContext;
        s_active = m_prev;
    }
    m_prev->m_currentContext = m_prevContext;
}

// Read only: gathering the next bucket here would move the cursor ahead of the
// clock (to an RTO far away), and every event queued before it would then be
// inserted one by one into the clock's bucket.
uint64_t
TitaSimulatorImpl::NextTs()
{
    if (m_size == 0)
    {
        return UINT64_MAX;
    }
    if (m_curHead < m_cur.size())
    {
        return m_cur[m_curHead].ts;
    }
    const uint32_t hit = NextOccupied();
    if (hit == UINT32_MAX)
    {
        return m_far.empty() ? UINT64_MAX : m_far.front().ts;
    }
    // That bucket's earliest event is the earliest of all: far events lie
    // beyond the ring.
    const uint32_t s = static_cast<uint32_t>((m_cursor + 1 + hit) & m_mask);
    const uint32_t n = m_count[s];
    uint64_t ts = UINT64_MAX;
    const Entry* in = &m_slab[std::size_t{s} * kSlots];
    for (uint32_t i = 0; i < std::min(n, kSlots); ++i)
    {
        ts = std::min(ts, in[i].ts);
    }
    for (const Entry& e : m_spill[s])
    {
        ts = std::min(ts, e.ts);
    }
    return ts;
}

uint64_t
TitaSimulatorImpl::RunUntil(uint64_t end)
{
    // An LP's window (the global queue runs in the serial phase: it may act
    // as any node, and what it defers runs at once).
    m_inRun = m_lp != m_globalLp;
    m_windowEnd = end;
    uint64_t n = 0;
    while (m_size > 0)
    {
        if (m_curHead == m_cur.size() && !Advance())
        {
            break;
        }
        if (m_cur[m_curHead].ts >= end)
        {
            break;
        }
        const Entry next = PopMin();
        ++n;
        Invoke(next);
    }
    m_eventCount += n;
    m_inRun = false;
    return n;
}

// The clock at the event, and the event run and released.
void
TitaSimulatorImpl::Invoke(const Entry& e)
{
    m_currentTs = e.ts;
    m_currentContext = e.context;
    m_currentUid = static_cast<uint32_t>(e.seq);
    m_currentKey = e.seq;
    e.impl->Invoke();
    e.impl->Unref();
}

void
TitaSimulatorImpl::ExtractAll(std::vector<Entry>* out)
{
    for (uint32_t slot = 0; slot < m_buckets; ++slot)
    {
        const Entry* in = &m_slab[std::size_t{slot} * kSlots];
        out->insert(out->end(), in, in + std::min<uint32_t>(m_count[slot], kSlots));
        out->insert(out->end(), m_spill[slot].begin(), m_spill[slot].end());
        m_spill[slot].clear();
        m_count[slot] = 0;
    }
    std::fill(m_occupied.begin(), m_occupied.end(), 0);
    out->insert(out->end(), m_cur.begin() + static_cast<std::ptrdiff_t>(m_curHead), m_cur.end());
    m_cur.clear();
    m_curHead = 0;
    out->insert(out->end(), m_far.begin(), m_far.end());
    m_far.clear();
    m_size = 0;
}

// ---------------------------------------------------------------- running

void
TitaSimulatorImpl::Run()
{
    m_stop = false;
    while (m_size > 0 && !m_stop)
    {
        const Entry next = PopMin();
        NS_ASSERT(next.ts >= m_currentTs);
        ++m_eventCount;
        Invoke(next);
    }
}

void
TitaSimulatorImpl::Stop()
{
    m_stop = true;
}

void
TitaSimulatorImpl::Stop(const Time& delay)
{
    Simulator::Schedule(delay, &Simulator::Stop);
}

EventId
TitaSimulatorImpl::Schedule(const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(delay.IsPositive(), "TitaSimulatorImpl::Schedule(): negative delay");
    const uint64_t ts = m_currentTs + static_cast<uint64_t>(delay.GetTimeStep());
    const uint32_t uid = static_cast<uint32_t>(m_seq);
    Insert(ts, m_currentContext, event);
    return EventId(event, ts, m_currentContext, uid);
}

void
TitaSimulatorImpl::ScheduleWithContext(uint32_t context, const Time& delay, EventImpl* event)
{
    NS_ASSERT_MSG(delay.IsPositive(), "TitaSimulatorImpl::ScheduleWithContext(): negative delay");
    Insert(m_currentTs + static_cast<uint64_t>(delay.GetTimeStep()), context, event);
}

EventId
TitaSimulatorImpl::ScheduleNow(EventImpl* event)
{
    const uint32_t uid = static_cast<uint32_t>(m_seq);
    Insert(m_currentTs, m_currentContext, event);
    return EventId(event, m_currentTs, m_currentContext, uid);
}

EventId
TitaSimulatorImpl::ScheduleDestroy(EventImpl* event)
{
    EventId id(Ptr<EventImpl>(event, false), m_currentTs, 0xffffffff, EventId::DESTROY);
    m_destroyEvents.push_back(id);
    ++m_seq;
    return id;
}

Time
TitaSimulatorImpl::Now() const
{
    return TimeStep(m_currentTs);
}

Time
TitaSimulatorImpl::GetDelayLeft(const EventId& id) const
{
    if (IsExpired(id))
    {
        return TimeStep(0);
    }
    return TimeStep(id.GetTs() - m_currentTs);
}

void
TitaSimulatorImpl::Remove(const EventId& id)
{
    if (id.GetUid() == EventId::DESTROY)
    {
        for (auto i = m_destroyEvents.begin(); i != m_destroyEvents.end(); ++i)
        {
            if (*i == id)
            {
                m_destroyEvents.erase(i);
                break;
            }
        }
        return;
    }
    if (IsExpired(id))
    {
        return;
    }
    EventImpl* impl = Unlink(id);
    NS_ABORT_MSG_IF(impl == nullptr, "TitaSimulatorImpl::Remove(): event not queued");
    impl->Cancel();
    impl->Unref(); // the queue's reference
}

void
TitaSimulatorImpl::Cancel(const EventId& id)
{
    if (!IsExpired(id))
    {
        id.PeekEventImpl()->Cancel();
    }
}

bool
TitaSimulatorImpl::IsExpired(const EventId& id) const
{
    if (id.GetUid() == EventId::DESTROY)
    {
        if (id.PeekEventImpl() == nullptr || id.PeekEventImpl()->IsCancelled())
        {
            return true;
        }
        for (const EventId& d : m_destroyEvents)
        {
            if (d == id)
            {
                return false;
            }
        }
        return true;
    }
    if (m_keyed && id.PeekEventImpl() != nullptr && id.GetTs() == m_currentTs)
    {
        // The event's full key from its uid (this LP's key, with the
        // sequence's high bits of now): run if at or before the current one.
        uint64_t seq = (m_seq & ~uint64_t{0xffffffff}) | id.GetUid();
        if (seq > m_seq && seq >= (uint64_t{1} << 32))
        {
            seq -= uint64_t{1} << 32;
        }
        const uint64_t key = seq < m_seqStart ? seq : (m_keyBase | seq);
        return key <= m_currentKey || id.PeekEventImpl()->IsCancelled();
    }
    return id.PeekEventImpl() == nullptr || id.GetTs() < m_currentTs ||
           (id.GetTs() == m_currentTs && id.GetUid() <= m_currentUid) || id.PeekEventImpl()->IsCancelled();
}

Time
TitaSimulatorImpl::GetMaximumSimulationTime() const
{
    return TimeStep(0x7fffffffffffffffLL);
}

uint32_t
TitaSimulatorImpl::GetContext() const
{
    return m_currentContext;
}

uint64_t
TitaSimulatorImpl::GetEventCount() const
{
    return m_eventCount;
}

} // namespace ns3
