#include "tita-presets.h"

#include "ns3/config.h"
#include "ns3/string.h"
#include "tita/cc/cc.h"

#include <sstream>

namespace ns3
{

std::vector<std::string>
TitaPresetNames()
{
    return {"hpcc-artifact"};
}

namespace
{

std::string
Bps(double v)
{
    std::ostringstream o;
    o.precision(15);
    o << static_cast<uint64_t>(v + 0.5);
    return o.str();
}

// The HPCC paper's simulator (alibaba-edu/High-Precision-Congestion-Control) as
// its run.py configures it for `--bw B` (B = the host NIC rate): mix/config.txt's
// template plus run.py's per-algorithm lines. Scaled quantities follow run.py's
// formulas in B (AI 5B/25 Mb/s for DCQCN ...).
// Whether algorithm `cc` reads INT hop records (a flow of it says so); unknown
// names say yes (they fail later, with the message of the cc parameter check).
bool
WantsInt(const std::string& cc)
{
    const ::tita::cc::FlowConfig link{100'000'000'000, 10'000, 1000};
    ::tita::cc::Params params;
    if (::tita::cc::Params::create(cc, link, &params, nullptr) != 0)
    {
        return true;
    }
    ::tita::cc::Flow flow;
    flow.init(params, link, 0);
    return flow.wants_int();
}

TitaPreset
HpccArtifact(const std::string& cc, uint64_t hostBps)
{
    const double bw = static_cast<double>(hostBps) / 1e9; // run.py's --bw, in Gb/s
    const bool ackHigh = cc == "dcqcn" || cc == "timely"; // ACK_HIGH_PRIO 1 in run.py
    TitaPreset p;
    p.attributes = {
        // PACKET_PAYLOAD_SIZE 1000 inside the 1024-byte path MTU, an ACK per packet
        // (L2_ACK_INTERVAL 1), go-back-N from the cumulative ACK (L2_BACK_TO_ZERO 0).
        {"ns3::RdmaNicNetDevice::PathMtu", "1024"},
        {"ns3::RdmaNicNetDevice::PayloadSize", "1000"},
        {"ns3::RdmaNicNetDevice::AckReqEvery", "1"},
        {"ns3::RdmaNicNetDevice::SelectiveRepeat", "false"},
        // CE echoed in every ACK, each echo a CNP at the sender; no CNP packets.
        {"ns3::RdmaNicNetDevice::CongestionNotification", "ack"},
        {"ns3::RdmaNicNetDevice::AckHighPriority", ackHigh ? "true" : "false"},
        // BUFFER_SIZE 16 * bw / 50 MiB per switch; reserve 4 KiB and resume
        // offset 3 KiB (switch-mmu.cc); headroom 3 x rate x delay per port, nothing
        // added; alpha 1/8 at the NIC rate, doubled per doubling of port rate.
        {"ns3::TitaSwitchNode::BufferSize", std::to_string(static_cast<uint64_t>(16 * bw / 50) << 20)},
        {"ns3::TitaSwitchNode::ReserveBytes", "4096"},
        {"ns3::TitaSwitchNode::ResumeOffsetBytes", "3072"},
        {"ns3::TitaSwitchNode::HeadroomBytes", "0"},
        {"ns3::TitaSwitchNode::HeadroomExtraBytes", "0"},
        {"ns3::TitaSwitchNode::PfcDynamic", "true"},
        {"ns3::TitaSwitchNode::PfcAlpha", "0.125"},
        {"ns3::TitaSwitchNode::PfcAlphaBaseRate", Bps(static_cast<double>(hostBps)) + "bps"},
        // KMIN/KMAX_MAP 100B/25, 400B/25 KB at B and four times that at 4B, i.e.
        // 400 KB / 1600 KB per 100 Gb/s of port rate; PMAX 0.2 (ENABLE_QCN 1).
        {"ns3::TitaSwitchNode::Ecn", "true"},
        {"ns3::TitaSwitchNode::RedKmin", "400000"},
        {"ns3::TitaSwitchNode::RedKmax", "1600000"},
        {"ns3::TitaSwitchNode::RedBaseRate", "100Gbps"},
        {"ns3::TitaSwitchNode::RedPmax", "0.2"},
        // The standalone FCT: size + packets x 48 header bytes, over the pair's RTT.
        {"ns3::TitaFlowManager::IdealOverheadBytes", "48"},
        // The artifact's packets keep their size along the path (its INT header,
        // HPCC's only, has room for every hop from the start); tita's switches
        // append a 16-byte record per hop. For an algorithm that reads no INT,
        // switches add none, as the artifact's packets carry none.
        {"ns3::TitaSwitchNode::Int", WantsInt(cc) ? "true" : "false"},
    };
    const std::string minRate = "min_rate_bps=1000000000"; // MIN_RATE 1000Mb/s
    if (cc == "dcqcn")
    {
        // run.py `dcqcn`: ALPHA_RESUME_INTERVAL 1, RATE_DECREASE_INTERVAL 4,
        // RP_TIMER 300 (us), EWMA_GAIN 1/256, FAST_RECOVERY_TIMES 1,
        // CLAMP_TARGET_RATE 0, RATE_AI 5B/25, RATE_HAI 50B/25 Mb/s; no byte counter.
        p.ccParams = "g=0.00390625,alpha_interval_ns=1000,decrease_interval_ns=4000,rate_timer_ns=300000,"
                     "byte_counter_bytes=0,fast_recovery_stages=1,clamp_target_rate=0,rate_ai_bps=" +
                     Bps(5 * bw / 25 * 1e6) + ",rate_hai_bps=" + Bps(50 * bw / 25 * 1e6) + "," + minRate;
    }
    else if (cc == "hpcc")
    {
        // run.py `hp --hpai 50` (the README's command, the paper's hp95ai50):
        // U_TARGET 0.95, MI_THRESH 0, RATE_AI 50 Mb/s, FAST_REACT 1.
        p.ccParams = "eta=0.95,max_stage=0,ai_rate_bps=50000000,fast_react=1," + minRate;
    }
    else if (cc == "timely")
    {
        // rdma-hw.cc's TIMELY attributes (alpha 0.875, beta 0.8, Tlow 50 us,
        // Thigh 500 us, minRtt 20 us, HAI after 5 increases) and run.py `timely`:
        // RATE_AI 10B/10, RATE_HAI 50B/10 Mb/s.
        p.ccParams = "ewma_gain=0.875,beta=0.8,t_low_ns=50000,t_high_ns=500000,min_rtt_ns=20000,hai_after=5,"
                     "ai_bps=" +
                     Bps(10 * bw / 10 * 1e6) + ",hai_bps=" + Bps(50 * bw / 10 * 1e6) + "," + minRate;
    }
    return p;
}

} // namespace

bool
TitaGetPreset(const std::string& name,
              const std::string& cc,
              uint64_t hostBps,
              TitaPreset* out,
              std::string* err)
{
    if (name == "hpcc-artifact")
    {
        *out = HpccArtifact(cc, hostBps);
        return true;
    }
    std::string known;
    for (const auto& n : TitaPresetNames())
    {
        known += (known.empty() ? "" : ", ") + n;
    }
    *err = "unknown preset '" + name + "' (known: " + known + ")";
    return false;
}

std::set<std::string>
TitaAttributesGiven(int argc, char* argv[])
{
    std::set<std::string> given;
    for (int i = 1; i < argc; ++i)
    {
        const std::string arg = argv[i];
        if (arg.rfind("--ns3::", 0) == 0)
        {
            given.insert(arg.substr(2, arg.find('=') - 2));
        }
    }
    return given;
}

std::vector<std::string>
TitaApplyPreset(const TitaPreset& preset, const std::set<std::string>& keep)
{
    std::vector<std::string> kept;
    for (const auto& a : preset.attributes)
    {
        if (keep.count(a.path) != 0)
        {
            kept.push_back(a.path);
            continue;
        }
        Config::SetDefault(a.path, StringValue(a.value));
    }
    return kept;
}

} // namespace ns3
