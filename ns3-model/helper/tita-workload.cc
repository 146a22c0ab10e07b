#include "tita-workload.h"

#include "ns3/abort.h"
#include "ns3/log.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>

namespace ns3
{

NS_LOG_COMPONENT_DEFINE("TitaWorkload");

// ---------------------------------------------------------------- flows

std::vector<TitaFlowSpec>
TitaWorkload::Poisson(const TitaFlowSizeCdf& cdf,
                      const std::vector<uint32_t>& hosts,
                      double load,
                      uint64_t hostRateBps,
                      Time start,
                      Time duration,
                      uint64_t seed)
{
    std::vector<TitaFlowSpec> flows;
    if (hosts.size() < 2 || load <= 0)
    {
        return flows;
    }
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    // Arrivals per second per host so that mean size x rate = load x capacity.
    const double lambda = load * static_cast<double>(hostRateBps) / 8.0 / cdf.MeanBytes();
    std::exponential_distribution<double> gap(lambda);
    std::uniform_int_distribution<std::size_t> pick(0, hosts.size() - 2);
    const double end = duration.GetSeconds();
    for (std::size_t i = 0; i < hosts.size(); ++i)
    {
        double t = gap(rng);
        while (t < end)
        {
            std::size_t j = pick(rng);
            if (j >= i)
            {
                ++j; // any host but this one
            }
            flows.push_back({hosts[i], hosts[j], cdf.Sample(unit(rng)), start + Seconds(t)});
            t += gap(rng);
        }
    }
    std::stable_sort(flows.begin(), flows.end(), [](const TitaFlowSpec& a, const TitaFlowSpec& b) {
        return a.start < b.start;
    });
    return flows;
}

std::vector<TitaFlowSpec>
TitaWorkload::Incast(const std::vector<uint32_t>& senders,
                     uint32_t receiver,
                     uint64_t bytes,
                     Time start,
                     Time jitter,
                     uint64_t seed)
{
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> unit(0.0, 1.0);
    std::vector<TitaFlowSpec> flows;
    for (uint32_t s : senders)
    {
        const Time at = start + Seconds(jitter.GetSeconds() * unit(rng));
        flows.push_back({s, receiver, bytes, at});
    }
    std::stable_sort(flows.begin(), flows.end(), [](const TitaFlowSpec& a, const TitaFlowSpec& b) {
        return a.start < b.start;
    });
    return flows;
}

namespace
{

struct FlowFeeder
{
    Ptr<TitaFlowManager> mgr;
    std::vector<TitaFlowSpec> flows;
    std::size_t next = 0;

    static void Run(std::shared_ptr<FlowFeeder> self)
    {
        const Time now = Simulator::Now();
        while (self->next < self->flows.size() && self->flows[self->next].start <= now)
        {
            const TitaFlowSpec& f = self->flows[self->next++];
            self->mgr->StartFlow(f.src, f.dst, f.bytes);
        }
        if (self->next < self->flows.size())
        {
            Simulator::Schedule(self->flows[self->next].start - now, &FlowFeeder::Run, self);
        }
    }
};

} // namespace

void
TitaWorkload::Schedule(Ptr<TitaFlowManager> mgr, std::vector<TitaFlowSpec> flows)
{
    if (flows.empty())
    {
        return;
    }
    auto feeder = std::make_shared<FlowFeeder>();
    feeder->mgr = mgr;
    feeder->flows = std::move(flows);
    const Time first = feeder->flows.front().start;
    const Time now = Simulator::Now();
    Simulator::Schedule(first > now ? first - now : Time(0), &FlowFeeder::Run, feeder);
}

// ---------------------------------------------------------------- collectives

TitaCollective::TitaCollective(Ptr<TitaFlowManager> mgr, int32_t id, std::string kind)
    : m_mgr(mgr),
      m_id(id),
      m_kind(std::move(kind))
{
}

std::shared_ptr<TitaCollective>
TitaCollective::Make(Ptr<TitaFlowManager> mgr,
                     int32_t id,
                     std::string kind,
                     std::vector<Rank> ranks,
                     uint64_t bytes,
                     Time at,
                     void (TitaCollective::*start)())
{
    auto c = std::make_shared<TitaCollective>(mgr, id, std::move(kind));
    c->m_ranks = std::move(ranks);
    c->m_bytes = bytes;
    c->m_recvBytes.assign(c->m_ranks.size(), 0);
    Simulator::Schedule(at, [c, start] { ((*c).*start)(); });
    return c;
}

uint32_t
TitaCollective::HostFor(const Rank& from, const Rank& to, bool sending) const
{
    const Rank& me = sending ? from : to;
    if (from.server >= 0 && from.server == to.server)
    {
        const int32_t nv = m_mgr->GetNetwork()->GetTopology().NvlinkHost(me.server, me.gpu);
        if (nv >= 0)
        {
            return static_cast<uint32_t>(nv);
        }
    }
    return me.host;
}

void
TitaCollective::Send(uint32_t src,
                     uint32_t dst,
                     uint64_t bytes,
                     int32_t step,
                     std::function<void()> onSent,
                     std::function<void()> onReceived)
{
    if (step >= static_cast<int32_t>(m_steps.size()))
    {
        m_steps.resize(step + 1);
        for (std::size_t i = 0; i < m_steps.size(); ++i)
        {
            m_steps[i].step = static_cast<int32_t>(i);
        }
    }
    Step& s = m_steps[step];
    if (s.messages == 0)
    {
        s.start = Simulator::Now();
    }
    ++s.messages;
    s.bytes += bytes;
    ++m_outstanding;
    const uint32_t a = HostFor(m_ranks[src], m_ranks[dst], true);
    const uint32_t b = HostFor(m_ranks[src], m_ranks[dst], false);
    auto self = shared_from_this();
    m_mgr->SendMessage(
        a,
        b,
        std::max<uint64_t>(bytes, 1),
        m_id,
        step,
        m_channel,
        [onSent](const TitaFlowRecord&) {
            if (onSent)
            {
                onSent();
            }
        },
        [self, step, dst, bytes, onReceived](const TitaFlowRecord&) {
            self->m_recvBytes[dst] += bytes;
            self->MessageReceived(step);
            if (onReceived)
            {
                onReceived();
            }
            self->CheckDone();
        });
}

void
TitaCollective::MessageReceived(int32_t step)
{
    m_steps[step].end = Simulator::Now();
    --m_outstanding;
}

void
TitaCollective::CheckDone()
{
    if (m_done || m_outstanding > 0)
    {
        return;
    }
    bool finished = true;
    if (IsRing())
    {
        for (uint32_t r : m_recv)
        {
            finished &= r == m_ringSteps;
        }
    }
    else if (m_kind == "alltoall-pxn")
    {
        for (uint32_t w : m_pxnWaiting)
        {
            finished &= w == UINT32_MAX; // every relay has sent
        }
    }
    if (!finished)
    {
        return;
    }
    m_done = true;
    m_end = Simulator::Now();
    if (m_onDone)
    {
        m_onDone(*this);
    }
}

std::shared_ptr<TitaCollective>
TitaCollective::RingAllReduce(Ptr<TitaFlowManager> mgr, int32_t id, std::vector<Rank> ranks, uint64_t bytes, Time at)
{
    return Make(mgr, id, "allreduce", std::move(ranks), bytes, at, &TitaCollective::StartRing);
}

std::shared_ptr<TitaCollective>
TitaCollective::RingAllGather(Ptr<TitaFlowManager> mgr, int32_t id, std::vector<Rank> ranks, uint64_t bytes, Time at)
{
    return Make(mgr, id, "allgather", std::move(ranks), bytes, at, &TitaCollective::StartRing);
}

std::shared_ptr<TitaCollective>
TitaCollective::RingReduceScatter(Ptr<TitaFlowManager> mgr,
                                  int32_t id,
                                  std::vector<Rank> ranks,
                                  uint64_t bytes,
                                  Time at)
{
    return Make(mgr, id, "reducescatter", std::move(ranks), bytes, at, &TitaCollective::StartRing);
}

std::shared_ptr<TitaCollective>
TitaCollective::SendRecv(Ptr<TitaFlowManager> mgr, int32_t id, std::vector<Rank> ranks, uint64_t bytes, Time at)
{
    return Make(mgr, id, "sendrecv", std::move(ranks), bytes, at, &TitaCollective::StartSendRecv);
}

void
TitaCollective::StartSendRecv()
{
    NS_ABORT_MSG_IF(m_ranks.size() != 2, "a send/recv has two ranks");
    m_start = Simulator::Now();
    Send(0, 1, m_bytes, 0, {}, {});
}

void
TitaCollective::StartRing()
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    NS_ABORT_MSG_IF(n < 2, "a ring needs two ranks");
    m_start = Simulator::Now();
    m_ringSteps = RingStepsFor(n);
    m_chunk = ChunkBytes();
    m_next.assign(n, 0);
    m_sent.assign(n, 0);
    m_recv.assign(n, 0);
    for (uint32_t i = 0; i < n; ++i)
    {
        RingTry(i);
    }
}

void
TitaCollective::RingTry(uint32_t i)
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    while (m_next[i] < m_ringSteps && m_sent[i] >= m_next[i] && m_recv[i] >= m_next[i])
    {
        const uint32_t t = m_next[i]++;
        const uint32_t to = (i + 1) % n;
        // The buffer's chunk this step carries: reduce-scatter steps (and an
        // AllGather's) pass chunk i - t on, an AllReduce's gather steps chunk
        // i + 1 - (t - (n - 1)); chunks differ by one byte at most.
        const uint32_t k = m_kind == "allreduce" && t >= n - 1 ? (i + 1 + 2 * n - 1 - t) % n : (i + n - t % n) % n;
        auto self = shared_from_this();
        Send(
            i,
            to,
            PieceBytes(k),
            static_cast<int32_t>(t),
            [self, i] {
                ++self->m_sent[i];
                self->RingTry(i);
            },
            [self, to] {
                ++self->m_recv[to];
                self->RingTry(to);
            });
    }
}

uint64_t
TitaCollective::PieceBytes(uint32_t k) const
{
    const auto n = static_cast<uint64_t>(m_ranks.size());
    return m_bytes / n + (k < m_bytes % n ? 1 : 0);
}

uint64_t
TitaCollective::ChunkBytes() const
{
    const auto n = static_cast<uint64_t>(m_ranks.size());
    // A ring step carries a rounded-up share (the last may be short); an
    // All-to-All message its share of the rank's buffer.
    return std::max<uint64_t>(1, IsRing() ? (m_bytes + n - 1) / n : m_bytes / n);
}

uint64_t
TitaCollective::IdealNsOf(Ptr<TitaFlowManager> mgr, std::string kind, std::vector<Rank> ranks, uint64_t bytes)
{
    TitaCollective c(mgr, -1, std::move(kind));
    c.m_ranks = std::move(ranks);
    c.m_bytes = bytes;
    return c.IdealNs();
}

uint64_t
TitaCollective::IdealNs() const
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    if (n < 2)
    {
        return 0;
    }
    uint64_t worst = 0;
    if (m_kind == "sendrecv")
    {
        const uint32_t a = HostFor(m_ranks[0], m_ranks[1], true);
        const uint32_t b = HostFor(m_ranks[0], m_ranks[1], false);
        const uint64_t acked = m_mgr->IdealMessageNs(a, b, m_bytes);
        return acked - std::min(acked, m_mgr->GetNetwork()->GetPath(a, b).delayNs);
    }
    if (IsRing())
    {
        // acked[i]: rank i's message to i+1 until its ACK is back;
        // arrived[i]: until the receiver has it (the ACK's propagation less).
        const uint64_t chunk = ChunkBytes();
        std::vector<uint64_t> acked(n), arrived(n);
        for (uint32_t i = 0; i < n; ++i)
        {
            const uint32_t a = HostFor(m_ranks[i], m_ranks[(i + 1) % n], true);
            const uint32_t b = HostFor(m_ranks[i], m_ranks[(i + 1) % n], false);
            acked[i] = m_mgr->IdealMessageNs(a, b, chunk);
            arrived[i] = acked[i] - std::min(acked[i], m_mgr->GetNetwork()->GetPath(a, b).delayNs);
        }
        std::vector<uint64_t> start(n, 0), next(n);
        for (uint32_t t = 1; t < RingStepsFor(n); ++t)
        {
            for (uint32_t i = 0; i < n; ++i)
            {
                const uint32_t left = (i + n - 1) % n;
                next[i] = std::max(start[i] + acked[i], start[left] + arrived[left]);
            }
            start.swap(next);
        }
        for (uint32_t i = 0; i < n; ++i)
        {
            worst = std::max(worst, start[i] + arrived[i]);
        }
        return worst;
    }
    // Ranks of one server reach each other over NVLink where there is one: the
    // busiest rank at that port's rate, and the longest base RTT of the pairs
    // used less its ACK's way back (the collective ends when the last message
    // has arrived).
    const uint64_t total = uint64_t{n - 1} * ChunkBytes();
    uint64_t rtt = 0;
    for (uint32_t i = 0; i < n; ++i)
    {
        const uint32_t a = HostFor(m_ranks[i], m_ranks[(i + 1) % n], true);
        const uint32_t b = HostFor(m_ranks[i], m_ranks[(i + 1) % n], false);
        worst = std::max(worst, m_mgr->IdealFctNs(a, b, total) - m_mgr->BaseRttNs(a, b));
        for (uint32_t j = 0; j < n; ++j)
        {
            if (j != i)
            {
                const uint32_t x = HostFor(m_ranks[i], m_ranks[j], true);
                const uint32_t y = HostFor(m_ranks[i], m_ranks[j], false);
                const uint64_t base = m_mgr->BaseRttNs(x, y);
                rtt = std::max(rtt, base - std::min(base, m_mgr->GetNetwork()->GetPath(x, y).delayNs));
            }
        }
    }
    return worst + rtt;
}

std::shared_ptr<TitaCollective>
TitaCollective::AllToAll(Ptr<TitaFlowManager> mgr, int32_t id, std::vector<Rank> ranks, uint64_t bytes, Time at)
{
    return Make(mgr, id, "alltoall", std::move(ranks), bytes, at, &TitaCollective::StartAllToAll);
}

void
TitaCollective::StartAllToAll()
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    m_start = Simulator::Now();
    m_chunk = ChunkBytes();
    for (uint32_t k = 1; k < n; ++k)
    {
        for (uint32_t i = 0; i < n; ++i)
        {
            Send(i, (i + k) % n, PieceBytes((i + k) % n), 0, {}, {});
        }
    }
}

std::shared_ptr<TitaCollective>
TitaCollective::AllToAllPxn(Ptr<TitaFlowManager> mgr, int32_t id, std::vector<Rank> ranks, uint64_t bytes, Time at)
{
    return Make(mgr, id, "alltoall-pxn", std::move(ranks), bytes, at, &TitaCollective::StartPxn);
}

void
TitaCollective::StartPxn()
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    const TitaTopology& topo = m_mgr->GetNetwork()->GetTopology();
    m_start = Simulator::Now();
    m_chunk = ChunkBytes();
    m_pxnWaiting.assign(n, 0);
    // How many ranks sit on each (server, gpu), and who shares a server.
    std::vector<std::vector<uint32_t>> local(n);
    for (uint32_t i = 0; i < n; ++i)
    {
        NS_ABORT_MSG_IF(m_ranks[i].server < 0 ||
                            topo.NvlinkHost(m_ranks[i].server, m_ranks[i].gpu) < 0,
                        "PXN needs a multi-rail topology with NVLink ports");
        for (uint32_t j = 0; j < n; ++j)
        {
            if (j != i && m_ranks[j].server == m_ranks[i].server)
            {
                local[i].push_back(j);
            }
        }
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        m_pxnWaiting[i] = static_cast<uint32_t>(local[i].size());
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        for (uint32_t relay : local[i])
        {
            // What i has for relay's rail: one chunk for relay itself and one for
            // every remote rank on the same GPU index.
            uint64_t chunks = 1;
            for (uint32_t j = 0; j < n; ++j)
            {
                if (m_ranks[j].server != m_ranks[i].server && m_ranks[j].gpu == m_ranks[relay].gpu)
                {
                    ++chunks;
                }
            }
            auto self = shared_from_this();
            Send(i, relay, chunks * m_chunk, 0, {}, [self, relay] {
                if (--self->m_pxnWaiting[relay] == 0)
                {
                    self->PxnRelay(relay);
                }
            });
        }
    }
    for (uint32_t i = 0; i < n; ++i)
    {
        if (m_pxnWaiting[i] == 0)
        {
            PxnRelay(i); // alone on its server
        }
    }
}

void
TitaCollective::PxnRelay(uint32_t relay)
{
    const auto n = static_cast<uint32_t>(m_ranks.size());
    m_pxnWaiting[relay] = UINT32_MAX;
    uint64_t senders = 1; // the relay's own data plus its local peers'
    for (uint32_t j = 0; j < n; ++j)
    {
        if (j != relay && m_ranks[j].server == m_ranks[relay].server)
        {
            ++senders;
        }
    }
    for (uint32_t j = 0; j < n; ++j)
    {
        if (m_ranks[j].server != m_ranks[relay].server && m_ranks[j].gpu == m_ranks[relay].gpu)
        {
            Send(relay, j, senders * m_chunk, 1, {}, {});
        }
    }
    CheckDone();
}

} // namespace ns3
