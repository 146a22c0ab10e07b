#include "tita-training.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"

#include <algorithm>
#include <cstdio>

namespace ns3
{

namespace
{

constexpr uint32_t kCompute = UINT32_MAX;

}

// The analytical twin's iteration i, 0 if it has none.
static uint64_t
BoundNs(const TitaTraining* bound, std::size_t i)
{
    if (bound == nullptr || i >= bound->GetIterations().size() || !bound->GetIterations()[i].finished)
    {
        return 0;
    }
    const auto& x = bound->GetIterations()[i];
    return (x.end - x.start).GetNanoSeconds();
}

namespace
{

} // namespace

double
TitaTraining::Collective::AlgBwGBps() const
{
    const double s = (end - start).GetSeconds();
    return s > 0 ? static_cast<double>(bytes) / s / 1e9 : 0;
}

double
TitaTraining::Collective::BusBwGBps() const
{
    // nccl-tests' bus bandwidth: what each rank's links carried, per second.
    const double n = static_cast<double>(ranks.size());
    switch (type)
    {
    case TitaTrainingCollective::kAllReduce:
        return AlgBwGBps() * 2 * (n - 1) / n;
    case TitaTrainingCollective::kAllGather:
    case TitaTrainingCollective::kReduceScatter:
    case TitaTrainingCollective::kAllToAll:
        return AlgBwGBps() * (n - 1) / n;
    default:
        return AlgBwGBps();
    }
}

TitaTraining::TitaTraining(Ptr<TitaFlowManager> mgr, TitaTrainingFile file, TitaTrainingOptions opts)
    : m_mgr(mgr),
      m_file(std::move(file)),
      m_opts(opts)
{
    if (m_opts.layers > 0 && m_opts.layers < m_file.layers.size())
    {
        m_file.layers.resize(m_opts.layers);
    }
    m_opts.iterations = std::max<uint32_t>(1, m_opts.iterations);
    m_opts.channels = std::max<uint32_t>(1, m_opts.channels);
}

std::pair<uint32_t, uint32_t>
TitaTraining::GpuOf(uint32_t rank) const
{
    if (!m_opts.placement.empty())
    {
        return {m_opts.placement[rank].server, m_opts.placement[rank].gpu};
    }
    return {rank / m_gpusPerServer, rank % m_gpusPerServer};
}

bool
TitaTraining::Place(std::string* err)
{
    const TitaTopology& topo = m_mgr->GetNetwork()->GetTopology();
    m_gpusPerServer = topo.GetGpusPerServer();
    const uint32_t have = topo.GetNServers() * m_gpusPerServer;
    if (have == 0)
    {
        *err = "--workload=training needs GPU servers (--topo=multirail:... or fattree:...,gpus=G)";
        return false;
    }
    if (m_file.allGpus > have)
    {
        *err = "--workload=training: the file's all_gpus " + std::to_string(m_file.allGpus) + " is more than the " +
               std::to_string(have) + " GPUs of the topology";
        return false;
    }
    for (const TitaRankPlace& p : m_opts.placement)
    {
        if (p.server >= topo.GetNServers() || p.gpu >= m_gpusPerServer)
        {
            *err = m_opts.placementPath + ":" + std::to_string(p.line) + ": server " + std::to_string(p.server) +
                   " GPU " + std::to_string(p.gpu) + " is not in the topology (" +
                   std::to_string(topo.GetNServers()) + " servers of " + std::to_string(m_gpusPerServer) +
                   " GPUs)";
            return false;
        }
    }
    for (uint32_t r = 0; r < m_file.allGpus; ++r)
    {
        const auto [server, gpu] = GpuOf(r);
        TitaCollective::Rank k;
        k.host = static_cast<uint32_t>(topo.RailHost(server, gpu));
        k.server = static_cast<int32_t>(server);
        k.gpu = static_cast<int32_t>(gpu);
        m_place.push_back(k);
        if (topo.GetNicPorts() == 2)
        {
            m_port1.push_back(static_cast<uint32_t>(topo.PortHost(server, gpu, 1)));
        }
    }
    m_gpus.assign(m_file.allGpus, Gpu{});
    m_recvBytes.assign(m_file.allGpus, 0);
    return true;
}

std::vector<uint32_t>
TitaTraining::GroupOf(TitaTrainingGroup g, uint32_t rank) const
{
    // Megatron's order: TP fastest, then DP, then PP (dpFirst: DP, then TP).
    const uint32_t tp = m_file.tp;
    const uint32_t dp = m_file.Dp();
    const uint32_t ep = m_file.ep;
    const bool dpFirst = m_opts.dpFirst;
    const uint32_t tpRank = dpFirst ? (rank / dp) % tp : rank % tp;
    const uint32_t dpRank = dpFirst ? rank % dp : (rank / tp) % dp;
    const uint32_t stage = rank / (tp * dp) * tp * dp;
    auto at = [&](uint32_t t, uint32_t d) { return stage + (dpFirst ? t * dp + d : d * tp + t); };
    std::vector<uint32_t> m;
    switch (g)
    {
    case TitaTrainingGroup::kTp:
        for (uint32_t t = 0; t < tp; ++t)
        {
            m.push_back(at(t, dpRank));
        }
        break;
    case TitaTrainingGroup::kDp:
        for (uint32_t d = 0; d < dp; ++d)
        {
            m.push_back(at(tpRank, d));
        }
        break;
    case TitaTrainingGroup::kEp:
        for (uint32_t d = dpRank / ep * ep; d < dpRank / ep * ep + ep; ++d)
        {
            m.push_back(at(tpRank, d));
        }
        break;
    case TitaTrainingGroup::kDpEp:
        for (uint32_t d = dpRank % ep; d < dp; d += ep)
        {
            m.push_back(at(tpRank, d));
        }
        break;
    default:
        break;
    }
    return m;
}

std::vector<uint32_t>
TitaTraining::RailRing(const std::vector<uint32_t>& members) const
{
    std::vector<std::vector<uint32_t>> byServer; // in the order the servers first appear
    std::vector<uint32_t> servers;
    for (uint32_t r : members)
    {
        const uint32_t s = GpuOf(r).first;
        const auto it = std::find(servers.begin(), servers.end(), s);
        if (it == servers.end())
        {
            servers.push_back(s);
            byServer.push_back({r});
        }
        else
        {
            byServer[it - servers.begin()].push_back(r);
        }
    }
    std::vector<uint32_t> ring;
    for (std::size_t k = 0; k < byServer.size(); ++k)
    {
        auto& m = byServer[k];
        std::sort(m.begin(), m.end(), [this](uint32_t a, uint32_t b) { return GpuOf(a).second < GpuOf(b).second; });
        if (k % 2 == 1)
        {
            std::reverse(m.begin(), m.end());
        }
        ring.insert(ring.end(), m.begin(), m.end());
    }
    return ring;
}

uint32_t
TitaTraining::CommFor(TitaTrainingGroup g, uint32_t rank)
{
    const std::vector<uint32_t> members = m_opts.railRing ? RailRing(GroupOf(g, rank)) : GroupOf(g, rank);
    const auto key = std::make_pair(static_cast<uint32_t>(g), uint64_t{members.front()});
    auto it = m_commIndex.find(key);
    if (it != m_commIndex.end())
    {
        return it->second;
    }
    uint32_t index = 0;
    for (const Comm& c : m_comms)
    {
        index += c.group == g;
    }
    m_comms.push_back(Comm{g, index, members, {}, 0, false});
    m_commIndex[key] = static_cast<uint32_t>(m_comms.size() - 1);
    return static_cast<uint32_t>(m_comms.size() - 1);
}

uint32_t
TitaTraining::PairComm(uint32_t from, uint32_t to)
{
    const auto key = std::make_pair(static_cast<uint32_t>(TitaTrainingGroup::kPp), uint64_t{from} << 32 | to);
    auto it = m_commIndex.find(key);
    if (it != m_commIndex.end())
    {
        return it->second;
    }
    uint32_t index = 0;
    for (const Comm& c : m_comms)
    {
        index += c.group == TitaTrainingGroup::kPp;
    }
    m_comms.push_back(Comm{TitaTrainingGroup::kPp, index, {from, to}, {}, 0, false});
    m_commIndex[key] = static_cast<uint32_t>(m_comms.size() - 1);
    return static_cast<uint32_t>(m_comms.size() - 1);
}

void
TitaTraining::Call(uint32_t comm,
                   uint32_t rank,
                   const TitaTrainingComm& c,
                   int32_t layer,
                   const char* phase,
                   std::function<void()> then)
{
    Comm& k = m_comms[comm];
    const uint64_t seq = m_gpus[rank].seq[comm]++;
    Pending& p = k.calls[seq];
    if (p.arrived == 0)
    {
        p.type = c.type;
        p.bytes = c.bytes;
        p.layer = layer;
        p.phase = phase;
    }
    NS_ABORT_MSG_IF(p.type != c.type || p.bytes != c.bytes,
                    "training: the members of a communicator called different collectives");
    ++p.arrived;
    if (then)
    {
        p.waiting.push_back(std::move(then));
    }
    MaybeLaunch(comm);
}

// A communicator runs its collectives one at a time, in the order its members
// call them (one NCCL stream per communicator), each once every member has
// called it.
void
TitaTraining::MaybeLaunch(uint32_t comm)
{
    Comm& k = m_comms[comm];
    if (k.running)
    {
        return;
    }
    auto it = k.calls.find(k.next);
    if (it == k.calls.end() || it->second.arrived < k.members.size())
    {
        return;
    }
    Pending p = std::move(it->second);
    k.calls.erase(it);
    ++k.next;
    const uint32_t n = static_cast<uint32_t>(k.members.size());
    if (n < 2 || p.bytes == 0)
    {
        // Nothing to move (a group of one, a size of 0): done now.
        for (auto& w : p.waiting)
        {
            Simulator::ScheduleNow(w);
        }
        Simulator::ScheduleNow(&TitaTraining::MaybeLaunch, this, comm);
        return;
    }
    k.running = true;
    Collective rec;
    rec.id = static_cast<uint32_t>(m_collectives.size());
    rec.iteration = static_cast<uint32_t>(m_iterations.size() - 1);
    rec.layer = p.layer;
    rec.phase = p.phase;
    rec.group = k.group;
    rec.groupIndex = k.index;
    rec.type = p.type;
    rec.ranks = k.members;
    rec.bytes = p.bytes;
    rec.start = Simulator::Now();
    m_collectives.push_back(rec);

    std::vector<TitaCollective::Rank> ranks;
    for (uint32_t r : k.members)
    {
        ranks.push_back(m_place[r]);
    }
    // C channels, each a collective of its share (the first ones one byte more
    // when C does not divide the size), with its own QPs.
    const uint32_t channels = p.type == TitaTrainingCollective::kSendRecv
                                  ? 1
                                  : static_cast<uint32_t>(std::min<uint64_t>(m_opts.channels, p.bytes));
    const char* kind = nullptr;
    switch (p.type)
    {
    case TitaTrainingCollective::kAllReduce:
        kind = "allreduce";
        break;
    case TitaTrainingCollective::kAllGather:
        kind = "allgather";
        break;
    case TitaTrainingCollective::kReduceScatter:
        kind = "reducescatter";
        break;
    case TitaTrainingCollective::kAllToAll:
        kind = m_opts.pxn ? "alltoall-pxn" : "alltoall";
        break;
    case TitaTrainingCollective::kSendRecv:
        kind = "sendrecv";
        break;
    default:
        NS_ABORT_MSG("training: no collective to run");
    }
    // The bound. One channel: the collective's IdealNs. C channels share each
    // GPU's port (one NIC per GPU) and overlap each other's step latencies: no
    // faster than one channel of its share alone, nor than the port's time for
    // all the bytes. Both ideals are serialisation plus latency (I = ser + lat,
    // the latency the same whatever the size), so the whole size's
    // serialisation is C (I_full - I_share) / (C - 1).
    const uint32_t id = rec.id;
    const uint64_t full = TitaCollective::IdealNsOf(m_mgr, kind, ranks, p.bytes);
    if (channels == 1)
    {
        m_collectives[id].idealNs = full;
    }
    else
    {
        const uint64_t one = TitaCollective::IdealNsOf(m_mgr, kind, ranks, (p.bytes + channels - 1) / channels);
        // Dual-port NICs: the channels alternate between the two ports.
        const uint64_t ports = m_port1.empty() ? 1 : 2;
        const uint64_t ser = full > one ? channels * (full - one) / (channels - 1) / ports : 0;
        m_collectives[id].idealNs = std::max(one, ser);
    }
    auto self = shared_from_this();
    auto waiting = std::make_shared<std::vector<std::function<void()>>>(std::move(p.waiting));
    if (m_opts.analytical)
    {
        Simulator::Schedule(NanoSeconds(m_collectives[id].idealNs),
                            [self, comm, id, waiting] { self->CollectiveDone(comm, id, *waiting); });
        return;
    }
    auto left = std::make_shared<uint32_t>(channels);
    for (uint32_t ch = 0; ch < channels; ++ch)
    {
        const uint64_t share = p.bytes / channels + (ch < p.bytes % channels ? 1 : 0);
        const int32_t cid = m_nextCollectiveId++;
        std::shared_ptr<TitaCollective> c;
        // Dual-port NICs: odd channels on every member's port 1 (the rail's other ToR).
        std::vector<TitaCollective::Rank> on = ranks;
        if (!m_port1.empty() && ch % 2 == 1)
        {
            for (std::size_t i = 0; i < on.size(); ++i)
            {
                on[i].host = m_port1[m_comms[comm].members[i]];
            }
        }
        switch (p.type)
        {
        case TitaTrainingCollective::kAllReduce:
            c = TitaCollective::RingAllReduce(m_mgr, cid, on, share, Time(0));
            break;
        case TitaTrainingCollective::kAllGather:
            c = TitaCollective::RingAllGather(m_mgr, cid, on, share, Time(0));
            break;
        case TitaTrainingCollective::kReduceScatter:
            c = TitaCollective::RingReduceScatter(m_mgr, cid, on, share, Time(0));
            break;
        case TitaTrainingCollective::kAllToAll:
            c = m_opts.pxn ? TitaCollective::AllToAllPxn(m_mgr, cid, on, share, Time(0))
                           : TitaCollective::AllToAll(m_mgr, cid, on, share, Time(0));
            break;
        default:
            c = TitaCollective::SendRecv(m_mgr, cid, on, share, Time(0));
            break;
        }
        c->SetChannel(static_cast<uint16_t>(ch));
        c->SetDoneCallback([self, comm, id, left, waiting](const TitaCollective& done) {
            const Comm& k = self->m_comms[comm];
            for (std::size_t i = 0; i < k.members.size(); ++i)
            {
                self->m_recvBytes[k.members[i]] += done.GetReceivedBytes()[i];
            }
            if (--*left == 0)
            {
                self->CollectiveDone(comm, id, *waiting);
            }
        });
    }
}

void
TitaTraining::CollectiveDone(uint32_t comm, uint32_t id, const std::vector<std::function<void()>>& waiting)
{
    Collective& rec = m_collectives[id];
    rec.end = Simulator::Now();
    rec.finished = true;
    for (uint32_t r : m_comms[comm].members)
    {
        Gpu& g = m_gpus[r];
        g.commNs += (rec.end - rec.start).GetNanoSeconds();
        g.spans.push_back(Span{static_cast<uint64_t>(rec.start.GetNanoSeconds()),
                               static_cast<uint64_t>(rec.end.GetNanoSeconds()),
                               id,
                               nullptr,
                               rec.layer});
    }
    m_comms[comm].running = false;
    for (const auto& w : waiting)
    {
        w();
    }
    MaybeLaunch(comm);
}

void
TitaTraining::Compute(uint32_t rank, uint64_t ns, const char* what, int32_t layer, std::function<void()> then)
{
    Gpu& g = m_gpus[rank];
    const uint64_t now = Simulator::Now().GetNanoSeconds();
    g.computeNs += ns;
    g.spans.push_back(Span{now, now + ns, kCompute, what, layer});
    Simulator::Schedule(NanoSeconds(ns), std::move(then));
}

void
TitaTraining::Start(Time at)
{
    auto self = shared_from_this();
    Simulator::Schedule(at, [self] { self->BeginIteration(); });
}

void
TitaTraining::BeginIteration()
{
    Iteration it;
    it.start = Simulator::Now();
    m_iterations.push_back(it);
    m_gpusDone = 0;
    for (Gpu& g : m_gpus)
    {
        g.backwardDone = false;
        g.computeNs = 0;
        g.commNs = 0;
    }
    const uint32_t stride = m_file.tp * m_file.Dp();
    for (uint32_t r = 0; r < m_file.allGpus; ++r)
    {
        if (r >= stride)
        {
            // A later pipeline stage waits for the activations of the one before.
            TitaTrainingComm c{TitaTrainingCollective::kSendRecv, TitaTrainingGroup::kPp, m_file.ppCommBytes};
            Call(PairComm(r - stride, r), r, c, -1, "pp_fwd", [this, r] { Forward(r, 0); });
        }
        else
        {
            Forward(r, 0);
        }
    }
}

void
TitaTraining::Forward(uint32_t rank, uint32_t layer)
{
    const uint32_t stride = m_file.tp * m_file.Dp();
    if (layer == m_file.layers.size())
    {
        TitaTrainingComm c{TitaTrainingCollective::kSendRecv, TitaTrainingGroup::kPp, m_file.ppCommBytes};
        const uint32_t last = m_file.layers.size() - 1;
        if (rank + stride < m_file.allGpus)
        {
            Call(PairComm(rank, rank + stride), rank, c, -1, "pp_fwd", {});
            // ... and waits for the gradients of the stage after it.
            Call(PairComm(rank + stride, rank), rank, c, -1, "pp_bwd", [this, rank, last] { Backward(rank, last); });
        }
        else
        {
            Backward(rank, last);
        }
        return;
    }
    const TitaTrainingLayer& l = m_file.layers[layer];
    Compute(rank, l.fwdComputeNs, "fwd", static_cast<int32_t>(layer), [this, rank, layer] {
        const TitaTrainingLayer& l = m_file.layers[layer];
        auto next = [this, rank, layer] { Forward(rank, layer + 1); };
        if (l.fwd.type == TitaTrainingCollective::kNone)
        {
            next();
            return;
        }
        Call(CommFor(l.fwd.group, rank), rank, l.fwd, static_cast<int32_t>(layer), "fwd", next);
    });
}

// Input gradient, its collective (blocking), weight gradient, its collective
// (not blocking: it overlaps the layers below), then the layer below.
void
TitaTraining::Backward(uint32_t rank, uint32_t layer)
{
    const TitaTrainingLayer& l = m_file.layers[layer];
    Compute(rank, l.igComputeNs, "ig", static_cast<int32_t>(layer), [this, rank, layer] {
        const TitaTrainingLayer& l = m_file.layers[layer];
        auto weight = [this, rank, layer] {
            const uint32_t stride = m_file.tp * m_file.Dp();
            if (layer == 0 && rank >= stride)
            {
                TitaTrainingComm c{TitaTrainingCollective::kSendRecv, TitaTrainingGroup::kPp, m_file.ppCommBytes};
                Call(PairComm(rank, rank - stride), rank, c, -1, "pp_bwd", {});
            }
            Compute(rank, m_file.layers[layer].wgComputeNs, "wg", static_cast<int32_t>(layer), [this, rank, layer] {
                const TitaTrainingLayer& l = m_file.layers[layer];
                Gpu& g = m_gpus[rank];
                ++g.pendingWg;
                auto updated = [this, rank, layer] {
                    Compute(rank, m_file.layers[layer].updateNs, "update", static_cast<int32_t>(layer), [this, rank] {
                        --m_gpus[rank].pendingWg;
                        GpuMaybeDone(rank);
                    });
                };
                if (l.wg.type == TitaTrainingCollective::kNone)
                {
                    updated();
                }
                else
                {
                    Call(CommFor(l.wg.group, rank), rank, l.wg, static_cast<int32_t>(layer), "wg", updated);
                }
                if (layer == 0)
                {
                    m_gpus[rank].backwardDone = true;
                    GpuMaybeDone(rank);
                }
                else
                {
                    Backward(rank, layer - 1);
                }
            });
        };
        if (l.ig.type == TitaTrainingCollective::kNone)
        {
            weight();
            return;
        }
        Call(CommFor(l.ig.group, rank), rank, l.ig, static_cast<int32_t>(layer), "ig", weight);
    });
}

// An iteration ends when every GPU has run its backward pass and its weight
// gradients are reduced and applied (the optimizer step needs all of them).
void
TitaTraining::GpuMaybeDone(uint32_t rank)
{
    Gpu& g = m_gpus[rank];
    if (!g.backwardDone || g.pendingWg > 0)
    {
        return;
    }
    g.backwardDone = false; // counted once
    if (++m_gpusDone < m_file.allGpus)
    {
        return;
    }
    Iteration& it = m_iterations.back();
    it.end = Simulator::Now();
    it.finished = true;
    uint32_t busiest = 0;
    for (uint32_t r = 1; r < m_gpus.size(); ++r)
    {
        busiest = m_gpus[r].computeNs > m_gpus[busiest].computeNs ? r : busiest;
    }
    it.computeNs = m_gpus[busiest].computeNs;
    it.commNs = m_gpus[busiest].commNs;
    const uint64_t span = (it.end - it.start).GetNanoSeconds();
    it.exposedNs = span > it.computeNs ? span - it.computeNs : 0;
    if (m_iterations.size() < m_opts.iterations)
    {
        BeginIteration();
    }
    else
    {
        m_done = true;
    }
}

void
TitaTraining::Write(TitaOutputWriter& out, const TitaTraining* bound) const
{
    std::ostream& it = out.File("iterations.csv",
                                "iteration,start_ns,end_ns,time_ns,compute_ns,comm_ns,exposed_comm_ns,bound_ns,layers\n");
    for (std::size_t i = 0; i < m_iterations.size(); ++i)
    {
        const Iteration& x = m_iterations[i];
        if (!x.finished)
        {
            continue; // unfinished at --stop
        }
        it << i << "," << x.start.GetNanoSeconds() << "," << x.end.GetNanoSeconds() << ","
           << (x.end - x.start).GetNanoSeconds() << "," << x.computeNs << "," << x.commNs << "," << x.exposedNs
           << "," << BoundNs(bound, i) << "," << m_file.layers.size() << "\n";
    }
    std::ostream& cs = out.File("training_collectives.csv",
                                "id,iteration,layer,layer_name,phase,group,group_index,type,ranks,channels,bytes,"
                                "start_ns,end_ns,time_ns,ideal_ns,algbw_GBps,busbw_GBps\n");
    for (const Collective& c : m_collectives)
    {
        if (!c.finished)
        {
            continue;
        }
        char bw[64];
        std::snprintf(bw, sizeof bw, "%.3f,%.3f", c.AlgBwGBps(), c.BusBwGBps());
        cs << c.id << "," << c.iteration << "," << c.layer << ","
           << (c.layer >= 0 ? m_file.layers[c.layer].name : std::string("-")) << "," << c.phase << ","
           << TitaTrainingGroupName(c.group) << "," << c.groupIndex << "," << TitaTrainingCollectiveName(c.type) << ","
           << c.ranks.size() << "," << (c.type == TitaTrainingCollective::kSendRecv ? 1 : m_opts.channels) << ","
           << c.bytes << "," << c.start.GetNanoSeconds() << "," << c.end.GetNanoSeconds() << ","
           << (c.end - c.start).GetNanoSeconds() << "," << c.idealNs << "," << bw << "\n";
    }
    std::ostream& gp = out.File("training_gpus.csv", "rank,server,gpu,host,recv_bytes\n");
    for (uint32_t r = 0; r < m_gpus.size(); ++r)
    {
        gp << r << "," << m_place[r].server << "," << m_place[r].gpu << "," << m_place[r].host << ","
           << m_recvBytes[r] << "\n";
    }
    // Chrome trace (ui.perfetto.dev, chrome://tracing): a process per GPU, a
    // thread for compute and one for communication; times in microseconds.
    std::ostream& tr = out.File("training_trace.json");
    tr << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
    bool first = true;
    auto sep = [&tr, &first] {
        tr << (first ? "" : ",\n");
        first = false;
    };
    for (uint32_t r = 0; r < m_gpus.size(); ++r)
    {
        const auto [server, gpu] = GpuOf(r);
        sep();
        tr << "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":" << r << ",\"args\":{\"name\":\"rank " << r
           << " (server " << server << ", gpu " << gpu << ")\"}}";
        sep();
        tr << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r << ",\"tid\":0,\"args\":{\"name\":\"compute\"}}";
        sep();
        tr << "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":" << r << ",\"tid\":1,\"args\":{\"name\":\"comm\"}}";
        for (const Span& s : m_gpus[r].spans)
        {
            char ts[96];
            std::snprintf(ts,
                          sizeof ts,
                          "\"ts\":%.3f,\"dur\":%.3f",
                          static_cast<double>(s.startNs) / 1e3,
                          static_cast<double>(s.endNs - s.startNs) / 1e3);
            const std::string layer = s.layer >= 0 ? m_file.layers[s.layer].name : "pp";
            sep();
            if (s.collective == kCompute)
            {
                tr << "{\"ph\":\"X\",\"pid\":" << r << ",\"tid\":0,\"name\":\"" << s.what << " " << layer << "\","
                   << ts << ",\"args\":{\"layer\":" << s.layer << "}}";
            }
            else
            {
                const Collective& c = m_collectives[s.collective];
                tr << "{\"ph\":\"X\",\"pid\":" << r << ",\"tid\":1,\"name\":\"" << TitaTrainingCollectiveName(c.type)
                   << " " << TitaTrainingGroupName(c.group) << " " << c.phase << " " << layer << "\"," << ts
                   << ",\"args\":{\"collective\":" << c.id << ",\"bytes\":" << c.bytes << "}}";
            }
        }
    }
    tr << "\n]}\n";
}

void
TitaTraining::Describe(TitaNotes& notes, const TitaTraining* bound) const
{
    if (m_mgr->GetPortFailovers() > 0)
    {
        notes.Line() << "training: " << m_mgr->GetPortFailovers()
                     << " message(s) moved to the other port of their NICs after their QP broke\n";
    }
    for (std::size_t i = 0; i < m_iterations.size(); ++i)
    {
        const Iteration& x = m_iterations[i];
        if (!x.finished)
        {
            notes.Line() << "training: iteration " << i << " unfinished at the stop time (raise --stop)\n";
            continue;
        }
        char line[256];
        std::snprintf(line,
                      sizeof line,
                      "training: iteration %zu %.3f ms (analytical bound %.3f ms), compute %.3f ms, "
                      "communication %.3f ms, exposed %.3f ms\n",
                      i,
                      (x.end - x.start).GetSeconds() * 1e3,
                      BoundNs(bound, i) / 1e6,
                      x.computeNs / 1e6,
                      x.commNs / 1e6,
                      x.exposedNs / 1e6);
        notes.Line() << line;
    }
}

} // namespace ns3
