// tita-sim: data-centre simulations with tita's RC engine and congestion control
// in ns-3. Topology, workload, congestion control, load, duration and seed on the
// command line; per-flow FCT records (with the ideal FCT and the slowdown), queue
// length histograms, PFC events, link utilisation and collective step times as
// CSV files in --out; a progress line on stderr. Formats: ns3-model/doc/tita-ns3.md.
// The run itself is TitaScenario (helper/tita-scenario.h); this file reads options.
//
//   tita-sim --topo=data/workloads/fat_tree_320.topo
//            --workload=poisson:cdf=data/workloads/websearch.cdf,load=0.3
//            --cc=hpcc --duration=10ms --out=out/ws30-hpcc
#include "tita-parallel-simulator-impl.h"
#include "tita-presets.h"
#include "tita-scenario.h"
#include "tita-simulator-impl.h"
#include "tita/cc/cc.h"
#include "tita/cli/contract.h"

#include "ns3/global-value.h"
#include "ns3/simulator.h"
#include "ns3/string.h"

#include <cstdlib>
#include <cstring>
#include <iostream>

using namespace ns3;

namespace
{

// A mistake in what the user asked for: one line, exit status 2, before any
// simulation work (the contract of tita/cli/contract.h).
[[noreturn]] void
Usage(const std::string& msg)
{
    std::exit(::tita::cli::usage_error("tita-sim", msg));
}

} // namespace

int
main(int argc, char* argv[])
{
    Time::SetResolution(Time::PS);
    // The lean simulator core (same event order as ns-3's default; see
    // tita-simulator-impl.h). --SimulatorImplementationType overrides it.
    GlobalValue::Bind("SimulatorImplementationType", StringValue(TitaSimulatorImpl::GetTypeId().GetName()));
    TitaScenarioConfig cfg;
    TitaCommandLine cmd("tita-sim", __FILE__);
    cmd.Usage("Runs a tita data-centre simulation. Every ns-3 attribute is settable too, e.g.\n"
              "--ns3::RdmaNicNetDevice::PathMtu=4096 --ns3::TitaSwitchNode::BufferSize=33554432");
    cfg.AddOptions(cmd);
    cmd.Parse(argc, argv);
    cfg.givenAttributes = TitaAttributesGiven(argc, argv);
    if (cfg.threads > 0)
    {
        // Checked before ns-3 makes its simulator: then the parallel one.
        if (cfg.threads > 256)
        {
            Usage("--threads=" + std::to_string(cfg.threads) + ": at most 256");
        }
        for (int i = 1; i < argc; ++i)
        {
            if (std::strncmp(argv[i], "--SimulatorImplementationType", 29) == 0)
            {
                Usage("--threads runs tita's parallel simulator: drop --SimulatorImplementationType");
            }
        }
        if (!cfg.pcap.empty())
        {
            Usage("--pcap writes from the simulation's threads: not with --threads");
        }
        GlobalValue::Bind("SimulatorImplementationType",
                          StringValue(TitaParallelSimulatorImpl::GetTypeId().GetName()));
    }

    std::string err;
    if (!TitaScenario::LoadCcPlugins(cfg.ccPlugins, &err))
    {
        Usage(err);
    }
    if (cfg.cc == "help")
    {
        std::cout << ::tita::cc::algorithms_help();
        return 0;
    }
    TitaNotes notes(&std::cerr, "tita-sim");
    TitaScenario scenario(cfg, notes);
    if (!scenario.Build(&err))
    {
        Usage(err);
    }
    scenario.Run();
    scenario.Finish();
    Simulator::Destroy();
    return 0;
}
