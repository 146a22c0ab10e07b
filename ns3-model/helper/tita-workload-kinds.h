// The workloads of a run, as tita-sim's --workload spells them
// ("poisson:cdf=F,load=0.3;allreduce:ranks=all,bytes=1M"), and the one table of
// workload kinds: each kind is a name and a function that reads its keys and
// schedules its flows or collectives through a TitaWorkloadSet. A new kind is
// a function in a file of its own and a row in TitaWorkloadKinds().
#pragma once

#include "tita-flow-manager.h"
#include "tita-network-helper.h"
#include "tita-notes.h"
#include "tita-spec.h"
#include "tita-workload.h"

#include "ns3/nstime.h"

#include <memory>
#include <string>
#include <vector>

namespace ns3
{

class TitaWorkloadSet;
class TitaOutputWriter;

/**
 * \ingroup tita
 * A workload that runs by itself once scheduled (a training job): the run
 * goes on until it is done, and it writes its own files at the end.
 */
class TitaWorkloadJob
{
  public:
    virtual ~TitaWorkloadJob() = default;
    virtual bool IsDone() const = 0;
    /// Its files in `out` and its summary lines.
    virtual void Finish(TitaOutputWriter& out, TitaNotes& notes) const = 0;
};

/// training:path=FILE,iterations=N,layers=K,channels=C,pxn=0|1,nvlink=packet|fluid,order=tp|dp
/// (tita-workload-training.cc, doc/training.md).
bool TitaAddTrainingWorkload(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err);

/**
 * \ingroup tita
 * A workload kind: reads `sp` (TitaSpec getters, then sp.Check) and schedules
 * through `set`. False with a one-line message.
 */
struct TitaWorkloadKind
{
    const char* name;
    bool (*add)(TitaWorkloadSet& set, const TitaSpec& sp, std::string* err);
};

/// Every kind, in the order messages list them.
const std::vector<TitaWorkloadKind>& TitaWorkloadKinds();

/**
 * \ingroup tita
 * What a run's workloads scheduled, and what the kinds share: the network, the
 * flow manager, the hosts that take part, the Poisson window and the seed.
 *
 *   TitaWorkloadSet set(&net, mgr, MilliSeconds(10), 1, notes);
 *   if (!set.AddAll("incast:senders=4,bytes=1M", &err)) ...
 */
class TitaWorkloadSet
{
  public:
    /// `duration` is the Poisson arrival window; `seed` seeds the generators.
    TitaWorkloadSet(TitaNetworkHelper* net, Ptr<TitaFlowManager> mgr, Time duration, uint64_t seed, TitaNotes& notes);

    /// Each ';'-separated item of `list` through its kind. False with a one-line
    /// message at the first mistake (an unknown kind, a bad key, a bad file).
    bool AddAll(const std::string& list, std::string* err);
    /// One item ("incast:senders=4,bytes=1M").
    bool Add(const std::string& item, std::string* err);

    // ---- for the kinds
    TitaNetworkHelper& GetNetwork() const { return *m_net; }
    Ptr<TitaFlowManager> GetFlowManager() const { return m_mgr; }
    TitaNotes& Notes() { return m_notes; }
    Time GetDuration() const { return m_duration; }
    uint64_t GetSeed() const { return m_seed; }
    /// Hosts that run workloads: every host but NVLink NICs, in host order.
    const std::vector<uint32_t>& GetHosts() const { return m_hosts; }
    /// Starts each flow at its time (TitaWorkload::Schedule) and counts it.
    void ScheduleFlows(std::vector<TitaFlowSpec> flows);
    /// Keeps a collective that starts at `at`; its id is NextCollectiveId().
    void AddCollective(std::shared_ptr<TitaCollective> c, Time at);
    int32_t NextCollectiveId() const { return static_cast<int32_t>(m_collectives.size()); }
    /// Keeps a job that starts at `at`.
    void AddJob(std::shared_ptr<TitaWorkloadJob> job, Time at);

    // ---- what was scheduled
    uint64_t GetScheduled() const { return m_scheduled; } ///< flows and collectives
    Time GetFirstStart() const { return m_firstStart; }   ///< Time::Max() if none
    Time GetArrivalsEnd() const { return m_arrivalsEnd; } ///< the last start
    const std::vector<std::shared_ptr<TitaCollective>>& GetCollectives() const { return m_collectives; }
    const std::vector<std::shared_ptr<TitaWorkloadJob>>& GetJobs() const { return m_jobs; }

  private:
    TitaNetworkHelper* m_net;
    Ptr<TitaFlowManager> m_mgr;
    Time m_duration;
    uint64_t m_seed;
    TitaNotes& m_notes;
    std::vector<uint32_t> m_hosts;
    uint64_t m_scheduled = 0;
    Time m_firstStart = Time::Max();
    Time m_arrivalsEnd = Time(0);
    std::vector<std::shared_ptr<TitaCollective>> m_collectives;
    std::vector<std::shared_ptr<TitaWorkloadJob>> m_jobs;
};

} // namespace ns3
