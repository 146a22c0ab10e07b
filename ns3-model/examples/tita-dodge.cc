// tita-dodge: Hash Dodging under a silent fault (doc/hash-dodging.md).
//
// A long RDMA WRITE from a host in the first pod to a host in the last, and a
// collective among other hosts, run on a fat-tree whose switches add the dodge
// offset to ECMP. At --fault-at, the aggregation switch's port to the core on
// the long flow's path starts dropping everything routed to it (a black hole)
// or a fraction of it (--fault=loss); --reroute-after later the control plane
// withdraws the port from its ECMP groups. With --dodge the NICs' engines
// detect the fault from protocol state and move their flows themselves. The
// experiment is TitaDodgeExperiment (helper/tita-dodge-experiment.h).
//
//   tita-dodge --fault=blackhole --dodge=1 --out=out/hd/bh-on
//
// Outputs in --out: series.csv (t_ns, long-flow bytes delivered and Gb/s per
// sample, collective bytes delivered and Gb/s), path_changes.csv (every QP's
// path changes: time, host, qpn, reason, old and new dodge value, whether it
// is the long flow), summary.json (detection and recovery times, completion,
// bytes delivered, collective duration).
#include "tita-dodge-experiment.h"
#include "tita/cli/contract.h"

#include "ns3/simulator.h"

#include <cstdlib>
#include <iostream>

using namespace ns3;

int
main(int argc, char* argv[])
{
    Time::SetResolution(Time::PS);
    TitaDodgeConfig cfg;
    TitaCommandLine cmd("tita-dodge", __FILE__);
    cmd.Usage("A long flow and a collective on a fat-tree; a port on the long flow's path fails silently.");
    cfg.AddOptions(cmd);
    cmd.Parse(argc, argv);
    TitaNotes notes(&std::cerr, "tita-dodge");
    TitaDodgeExperiment experiment(cfg, notes);
    std::string err;
    if (!experiment.Build(&err))
    {
        return ::tita::cli::usage_error("tita-dodge", err);
    }
    experiment.Run();
    experiment.Finish();
    Simulator::Destroy();
    return 0;
}
