#include "tita-workload-kinds.h"

#include "tita-ranks.h"

#include <algorithm>

namespace ns3
{

namespace
{

// poisson:cdf=FILE,load=L,at=T: every host starts flows to random others.
bool
AddPoisson(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err)
{
    const std::string cdfPath = sp.Str("cdf", "data/workloads/websearch.cdf");
    const double load = sp.Real("load", 0.3, 1e-6, 1);
    const Time at = NanoSeconds(sp.TimeNs("at", 0));
    if (!sp.Check(err))
    {
        return false;
    }
    TitaFlowSizeCdf cdf;
    if (!cdf.Load(cdfPath, err))
    {
        *err = "--workload=poisson: " + *err;
        return false;
    }
    if (!set.GetDuration().IsStrictlyPositive())
    {
        *err = "--workload=poisson needs --duration above 0";
        return false;
    }
    const auto& hosts = set.GetHosts();
    const uint64_t rate = set.GetNetwork().GetNic(hosts.front())->GetDataRate().GetBitRate();
    auto flows = TitaWorkload::Poisson(cdf, hosts, load, rate, at, set.GetDuration(), set.GetSeed());
    set.Notes().Line() << flows.size() << " Poisson flows, mean size " << cdf.MeanBytes() << " B, load " << load
                       << "\n";
    set.ScheduleFlows(std::move(flows));
    return true;
}

// flows:path=FILE: the HPCC simulator's flow file.
bool
AddFlowFile(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err)
{
    const std::string path = sp.Str("path", "");
    if (!sp.Check(err))
    {
        return false;
    }
    const TitaTopology& t = set.GetNetwork().GetTopology();
    std::vector<TitaFlowSpec> flows;
    if (!TitaWorkload::ReadHpccFlows(
            path,
            [&t](uint32_t node) { return node < t.Vertices().size() ? t.HostIndexOf(node) : -1; },
            &flows,
            err))
    {
        *err = "--workload=flows: " + *err;
        return false;
    }
    set.ScheduleFlows(std::move(flows));
    return true;
}

// incast:senders=N,receiver=R,bytes=B,jitter=T,at=T: the first N other hosts to R.
bool
AddIncast(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err)
{
    const uint32_t n = sp.Count("senders", 16, 1);
    const uint32_t recv = sp.Count("receiver", 0);
    const uint64_t bytes = sp.Bytes("bytes", 500'000);
    const Time at = NanoSeconds(sp.TimeNs("at", 0));
    const Time jitter = NanoSeconds(sp.TimeNs("jitter", 0));
    if (!sp.Check(err))
    {
        return false;
    }
    const auto& hosts = set.GetHosts();
    if (recv >= hosts.size() || n >= hosts.size())
    {
        *err = "--workload=incast: receiver " + std::to_string(recv) + " and " + std::to_string(n) +
               " senders need more than " + std::to_string(hosts.size()) + " hosts";
        return false;
    }
    std::vector<uint32_t> senders;
    for (uint32_t h : hosts)
    {
        if (h != recv && senders.size() < n)
        {
            senders.push_back(h);
        }
    }
    set.ScheduleFlows(TitaWorkload::Incast(senders, recv, bytes, at, jitter, set.GetSeed() + 1));
    return true;
}

// allreduce / alltoall:ranks=all|N,bytes=B,order=...,at=T (alltoall: pxn=0|1).
bool
AddCollectiveKind(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err)
{
    const bool ring = sp.GetKind() == "allreduce";
    const uint64_t bytes = sp.Bytes("bytes", 1'000'000);
    const Time at = NanoSeconds(sp.TimeNs("at", 0));
    const bool pxn = !ring && sp.Flag("pxn", false);
    std::vector<TitaCollective::Rank> ranks;
    if (!TitaCollectiveRanks(set.GetNetwork().GetTopology(), sp, &ranks, err) || !sp.Check(err))
    {
        return false;
    }
    const auto n = ranks.size();
    const auto make = ring ? &TitaCollective::RingAllReduce
                           : (pxn ? &TitaCollective::AllToAllPxn : &TitaCollective::AllToAll);
    auto c = make(set.GetFlowManager(), set.NextCollectiveId(), std::move(ranks), bytes, at);
    set.Notes().Line() << c->GetKind() << " over " << n << " ranks, " << bytes << " B\n";
    set.AddCollective(c, at);
    return true;
}

} // namespace

const std::vector<TitaWorkloadKind>&
TitaWorkloadKinds()
{
    static const std::vector<TitaWorkloadKind> kinds{{"poisson", &AddPoisson},
                                                     {"flows", &AddFlowFile},
                                                     {"incast", &AddIncast},
                                                     {"allreduce", &AddCollectiveKind},
                                                     {"alltoall", &AddCollectiveKind},
                                                     {"training", &TitaAddTrainingWorkload}};
    return kinds;
}

TitaWorkloadSet::TitaWorkloadSet(TitaNetworkHelper* net,
                                 Ptr<TitaFlowManager> mgr,
                                 Time duration,
                                 uint64_t seed,
                                 TitaNotes& notes)
    : m_net(net),
      m_mgr(mgr),
      m_duration(duration),
      m_seed(seed),
      m_notes(notes)
{
    const TitaTopology& topo = net->GetTopology();
    for (uint32_t h = 0; h < net->GetNHosts(); ++h)
    {
        if (!topo.Vertices()[topo.Hosts()[h]].nvlink)
        {
            m_hosts.push_back(h);
        }
    }
}

bool
TitaWorkloadSet::AddAll(const std::string& list, std::string* err)
{
    for (const std::string& item : TitaSpec::SplitList(list, ';', true))
    {
        if (!Add(item, err))
        {
            return false;
        }
    }
    return true;
}

bool
TitaWorkloadSet::Add(const std::string& item, std::string* err)
{
    const TitaSpec sp = TitaSpec::Parse("--workload", item);
    std::string known;
    for (const TitaWorkloadKind& k : TitaWorkloadKinds())
    {
        if (sp.GetKind() == k.name)
        {
            return k.add(*this, sp, err);
        }
        known += (known.empty() ? "" : ", ") + std::string(k.name);
    }
    *err = "--workload: unknown kind '" + sp.GetKind() + "' (known: " + known + ")";
    return false;
}

void
TitaWorkloadSet::ScheduleFlows(std::vector<TitaFlowSpec> flows)
{
    if (!flows.empty())
    {
        m_firstStart = std::min(m_firstStart, flows.front().start);
        m_arrivalsEnd = std::max(m_arrivalsEnd, flows.back().start);
    }
    m_scheduled += flows.size();
    TitaWorkload::Schedule(m_mgr, std::move(flows));
}

void
TitaWorkloadSet::AddJob(std::shared_ptr<TitaWorkloadJob> job, Time at)
{
    m_jobs.push_back(std::move(job));
    m_firstStart = std::min(m_firstStart, at);
    m_arrivalsEnd = std::max(m_arrivalsEnd, at);
    ++m_scheduled;
}

void
TitaWorkloadSet::AddCollective(std::shared_ptr<TitaCollective> c, Time at)
{
    m_collectives.push_back(std::move(c));
    m_firstStart = std::min(m_firstStart, at);
    m_arrivalsEnd = std::max(m_arrivalsEnd, at);
    ++m_scheduled;
}

} // namespace ns3
