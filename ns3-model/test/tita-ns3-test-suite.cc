// ns-3 test suites of the tita model: the engine and cc/ inside ns-3 NICs, the
// lib/fabric switch, topologies, workloads. QUICK suites run from `meson test
// --suite ns3`; every assertion is an exact outcome or a stated bound.
#include "rdma-nic-net-device.h"
#include "tita-channel.h"
#include "tita-flow-manager.h"
#include "tita-frame.h"
#include "tita-network-helper.h"
#include "tita-presets.h"
#include "tita-switch-node.h"
#include "tita-test-topologies.h"
#include "tita-topology.h"
#include "tita-workload.h"

#include "ns3/boolean.h"
#include "ns3/nstime.h"
#include "ns3/config.h"
#include "ns3/double.h"
#include "ns3/pcap-file.h"
#include "ns3/simulator.h"
#include "ns3/string.h"
#include "ns3/test.h"
#include "ns3/uinteger.h"
#include "tita/cc/cc.h"
#include "tita/engine/settings.h"
#include "tita/fabric/red.h"
#include "tita/wire/frame.h"

#include "../../tests/cc/golden_trace.h"

#include <cmath>
#include <cstdlib>
#include <deque>
#include <sstream>
#include <cstdio>
#include <map>
#include <numeric>

using namespace ns3;
namespace wire = ::tita::wire;
namespace ccl = ::tita::cc;
namespace golden = ::tita::test::golden;

namespace
{

using tita_test::Star;

// A frame's IPv4 header and, if any, its telemetry trailer.
struct Seen
{
    bool roce = false;
    uint8_t opcode = 0;
    uint8_t ecn = 0;
    uint32_t psn = 0;
    uint32_t len = 0;
    uint32_t payload = 0;
    int hops = -1;
    wire::TelemetryHop hop[wire::kMaxTelemetryHops];
};

Seen
Inspect(Ptr<const Packet> p)
{
    Seen s;
    std::vector<uint8_t> buf(p->GetSize());
    p->CopyData(buf.data(), p->GetSize());
    wire::Packet pkt;
    if (wire::parse(buf.data(), p->GetSize(), &pkt, {.verify_icrc = false, .verify_ip_checksum = true}) !=
        wire::ParseError::kOk)
    {
        return s;
    }
    s.roce = true;
    s.opcode = pkt.opcode();
    s.ecn = pkt.ecn;
    s.psn = pkt.psn();
    s.len = p->GetSize();
    s.payload = pkt.payload_len;
    if (const wire::TelemetryHdr* t = pkt.telemetry())
    {
        s.hops = t->hops();
        std::memcpy(s.hop, wire::telemetry_hops(t), t->hops() * sizeof(wire::TelemetryHop));
    }
    return s;
}

bool
IsData(uint8_t opcode)
{
    return opcode <= static_cast<uint8_t>(wire::Opcode::kWriteOnlyImm);
}

} // namespace

// ---------------------------------------------------------------- 2-to-1 incast

/**
 * Two long flows into one 100 Gb/s port, the second joining 0.5 ms after the
 * first. Both must get a fair share of the bottleneck over [2, 3] ms; HPCC and
 * tita must also keep the bottleneck queue near zero there.
 */
class TitaIncastFairnessTestCase : public TestCase
{
  public:
    TitaIncastFairnessTestCase(std::string cc, bool checkQueue)
        : TestCase("2-to-1 incast at 100G under " + cc),
          m_cc(std::move(cc)),
          m_checkQueue(checkQueue)
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.Build(Star(3));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue(m_cc));
        mgr->SetNetwork(&net);
        Simulator::Schedule(Time(0), [&] { mgr->StartFlow(1, 0, 100'000'000); });
        Simulator::Schedule(MicroSeconds(500), [&] { mgr->StartFlow(2, 0, 100'000'000); });
        uint64_t at2[2] = {};
        uint64_t at3[2] = {};
        Simulator::Schedule(MilliSeconds(2), [&] {
            at2[0] = net.GetNic(1)->GetTxWireBytes();
            at2[1] = net.GetNic(2)->GetTxWireBytes();
        });
        Simulator::Schedule(MilliSeconds(3), [&] {
            at3[0] = net.GetNic(1)->GetTxWireBytes();
            at3[1] = net.GetNic(2)->GetTxWireBytes();
        });
        Ptr<TitaSwitchNode> sw = net.GetSwitches().front();
        double qsum = 0;
        uint64_t qmax = 0;
        uint32_t qn = 0;
        for (int i = 0; i < 1000; ++i)
        {
            Simulator::Schedule(MilliSeconds(2) + MicroSeconds(i), [&] {
                const uint64_t q = sw->GetCore().qlen_bytes(0); // port 0 faces host 0
                qsum += q;
                qmax = std::max(qmax, q);
                ++qn;
            });
        }
        Simulator::Stop(MilliSeconds(3) + NanoSeconds(1));
        Simulator::Run();
        const double r0 = (at3[0] - at2[0]) * 8.0 / 1e-3 / 1e9; // Gb/s
        const double r1 = (at3[1] - at2[1]) * 8.0 / 1e-3 / 1e9;
        const double jain = (r0 + r1) * (r0 + r1) / (2 * (r0 * r0 + r1 * r1));
        const double qmean = qsum / qn;
        std::fprintf(stderr,
                     "  %s: rates %.1f / %.1f Gb/s (wire), Jain %.4f, bottleneck queue mean %.0f B max %lu B\n",
                     m_cc.c_str(),
                     r0,
                     r1,
                     jain,
                     qmean,
                     static_cast<unsigned long>(qmax));
        NS_TEST_EXPECT_MSG_GT(jain, 0.98, m_cc << ": shares not fair: " << r0 << " vs " << r1);
        NS_TEST_EXPECT_MSG_GT(r0 + r1, 80.0, m_cc << ": bottleneck underused");
        if (m_checkQueue)
        {
            // "Near zero": below a tenth of the bottleneck's BDP (100 Gb/s x 4.2 us = 52 KB).
            NS_TEST_EXPECT_MSG_LT(qmean, 5200.0, m_cc << ": standing queue at steady state");
        }
        NS_TEST_EXPECT_MSG_EQ(sw->GetDrops(), 0, "lossless fabric dropped packets");
        Simulator::Destroy();
    }

    std::string m_cc;
    bool m_checkQueue;
};

/**
 * Eight senders into one port with congestion control off and a 4 MB buffer:
 * PFC must pause the senders and nothing may be lost.
 */
class TitaPfcNoLossTestCase : public TestCase
{
  public:
    TitaPfcNoLossTestCase()
        : TestCase("8-to-1 incast without congestion control: PFC pauses, no loss")
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.SetSwitchAttribute("BufferSize", UintegerValue(4 << 20));
        net.Build(Star(9));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("none"));
        mgr->SetNetwork(&net);
        uint32_t pausesAtNics = 0;
        for (uint32_t h = 1; h < 9; ++h)
        {
            net.GetNic(h)->TraceConnectWithoutContext(
                "PfcRx",
                MakeBoundCallback(+[](uint32_t* n, uint8_t, uint16_t q) { *n += q > 0; }, &pausesAtNics));
            Simulator::Schedule(Time(0), [&, h] { mgr->StartFlow(h, 0, 2'000'000); });
        }
        Simulator::Stop(MilliSeconds(20));
        Simulator::Run();
        Ptr<TitaSwitchNode> sw = net.GetSwitches().front();
        uint64_t nicDrops = 0;
        for (uint32_t h = 0; h < 9; ++h)
        {
            nicDrops += net.GetNic(h)->GetEngineDrops();
        }
        std::fprintf(stderr,
                     "  PFC pauses sent %lu, received by NICs %u, switch drops %lu\n",
                     static_cast<unsigned long>(sw->GetPfcPausesSent()),
                     pausesAtNics,
                     static_cast<unsigned long>(sw->GetDrops()));
        NS_TEST_EXPECT_MSG_GT(sw->GetPfcPausesSent(), 0, "no PFC pause under an 8:1 incast");
        NS_TEST_EXPECT_MSG_GT(pausesAtNics, 0, "NICs never saw a pause");
        NS_TEST_EXPECT_MSG_EQ(sw->GetDrops(), 0, "the switch dropped packets");
        NS_TEST_EXPECT_MSG_EQ(nicDrops, 0, "NICs dropped frames");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), 8, "not every flow finished");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFailed(), 0, "a flow failed");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- ECN and INT

/**
 * Two senders at a fixed 55 Gb/s each ("none" with rate_bps) into one 100 Gb/s
 * port: the queue grows slowly through Kmin..Kmax. Each data packet reaching the
 * receiver carries the queue it left behind in its INT record; the fraction
 * CE-marked per queue band must follow Kmin/Kmax/Pmax (fabric::red_mark_probability).
 * The INT record must name the port's rate, the dequeue time, the bytes the port
 * has sent and that queue length.
 */
class TitaEcnIntTestCase : public TestCase
{
  public:
    TitaEcnIntTestCase()
        : TestCase("ECN marking follows Kmin, Kmax and Pmax; INT records carry the right values")
    {
    }

  private:
    void DoRun() override
    {
        const uint64_t kmin = 20'000;
        const uint64_t kmax = 200'000;
        const double pmax = 0.2;
        TitaNetworkHelper net;
        net.SetSwitchAttribute("RedKmin", UintegerValue(kmin));
        net.SetSwitchAttribute("RedKmax", UintegerValue(kmax));
        net.SetSwitchAttribute("RedPmax", DoubleValue(pmax));
        net.Build(Star(3));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("none"));
        mgr->SetAttribute("CcParams", StringValue("rate_bps=55000000000"));
        mgr->SetNetwork(&net);
        mgr->StartFlow(1, 0, 30'000'000);
        mgr->StartFlow(2, 0, 30'000'000);

        struct Sample
        {
            uint32_t qlen;
            bool ce;
        };
        struct Probe
        {
            std::vector<Sample> samples;
            uint32_t errors = 0;
            uint32_t checked = 0;
            uint32_t lastTx = 0;
            bool haveLast = false;
            Ptr<RdmaNicNetDevice> dev;
            Time delay = MicroSeconds(1);
        } probe;
        probe.dev = net.GetNic(0);
        probe.dev->TraceConnectWithoutContext(
            "PhyRxEnd",
            MakeBoundCallback(
                +[](Probe* c, Ptr<const Packet> p) {
                    const Seen s = Inspect(p);
                    if (!s.roce || !IsData(s.opcode) || s.hops != 1)
                    {
                        return;
                    }
                    const auto& h = s.hop[0];
                    c->samples.push_back({h.qlen_bytes.get(), s.ecn == wire::kEcnCe});
                    // The record was written at dequeue: arrival - wire time - delay.
                    const Time dequeue = Simulator::Now() - c->dev->WireTime(s.len) - c->delay;
                    const auto ts = static_cast<uint32_t>(dequeue.GetNanoSeconds());
                    bool ok = h.rate_mbps.get() == 100'000;
                    ok &= h.ts_ns.get() + 1 >= ts && h.ts_ns.get() <= ts + 1;
                    if (c->haveLast)
                    {
                        // Bytes sent by the port since the previous data packet: this one.
                        ok &= h.tx_bytes.get() - c->lastTx == s.len;
                    }
                    c->lastTx = h.tx_bytes.get();
                    c->haveLast = true;
                    c->errors += !ok;
                    ++c->checked;
                },
                &probe));
        Simulator::Stop(MicroSeconds(400));
        Simulator::Run();

        NS_TEST_ASSERT_MSG_GT(probe.checked, 1000, "too few data packets with INT");
        NS_TEST_EXPECT_MSG_EQ(probe.errors, 0, "INT records with wrong rate, timestamp or byte count");
        const auto& samples = probe.samples;
        // Marking per queue band against the RED law.
        const uint64_t bands[] = {0, kmin, 65'000, 110'000, 155'000, kmax, 10'000'000};
        for (std::size_t b = 0; b + 1 < std::size(bands); ++b)
        {
            uint32_t n = 0;
            uint32_t marked = 0;
            double expect = 0;
            for (const Sample& s : samples)
            {
                if (s.qlen >= bands[b] && s.qlen < bands[b + 1])
                {
                    ++n;
                    marked += s.ce;
                    expect += ::tita::fabric::red_mark_probability(s.qlen, {kmin, kmax, pmax});
                }
            }
            if (n == 0)
            {
                continue;
            }
            const double got = static_cast<double>(marked) / n;
            const double want = expect / n;
            const double sd = std::sqrt(std::max(want * (1 - want), 1e-4) / n);
            std::fprintf(stderr,
                         "  queue [%6lu, %8lu) B: %5u packets, marked %.4f, RED %.4f\n",
                         static_cast<unsigned long>(bands[b]),
                         static_cast<unsigned long>(bands[b + 1]),
                         n,
                         got,
                         want);
            NS_TEST_EXPECT_MSG_LT(std::abs(got - want), 4 * sd + 1e-9, "marking off the RED law in band " << b);
        }
        Simulator::Destroy();
    }
};


// ---------------------------------------------------------------- notification and ACK priority

/**
 * DCQCN under a 4-to-1 incast, in each notification mode: with CNP packets at
 * most one per QP per interval (interval 0: one per CE-marked packet), or with
 * CE echoed in every ACK and no CNP at all (the HPCC simulator's). Each mode must
 * slow the senders down (they act on notifications) and lose nothing.
 */
class TitaNotificationTestCase : public TestCase
{
  public:
    struct Result
    {
        uint64_t cnpFrames = 0;
        uint64_t notifications = 0;
    };

    TitaNotificationTestCase()
        : TestCase("DCQCN notification by CNP (with and without pacing) and by ACK echo")
    {
    }

  private:
    Result Run(const std::string& mode, Time interval)
    {
        TitaNetworkHelper net;
        net.SetNicAttribute("CongestionNotification", StringValue(mode));
        net.SetNicAttribute("CnpInterval", TimeValue(interval));
        net.Build(Star(5));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("dcqcn"));
        // The HPCC simulator's DCQCN (run.py, as the preset has it): the same in every mode.
        TitaPreset preset;
        std::string err;
        NS_ABORT_MSG_UNLESS(TitaGetPreset("hpcc-artifact", "dcqcn", 100'000'000'000, &preset, &err), err);
        mgr->SetAttribute("CcParams", StringValue(preset.ccParams));
        mgr->SetNetwork(&net);
        Result r;
        net.GetNic(0)->TraceConnectWithoutContext(
            "EngineTx",
            MakeBoundCallback(
                +[](Result* res, Ptr<const Packet> p) {
                    res->cnpFrames += Inspect(p).opcode == static_cast<uint8_t>(wire::Opcode::kCnp);
                },
                &r));
        for (uint32_t h = 1; h < 5; ++h)
        {
            mgr->StartFlow(h, 0, 3'000'000);
        }
        Simulator::Stop(MilliSeconds(20));
        Simulator::Run();
        uint64_t drops = 0;
        for (uint32_t h = 0; h < 5; ++h)
        {
            drops += net.GetNic(h)->GetEngineDrops();
        }
        r.notifications = mgr->GetCnpsReceived();
        std::fprintf(stderr,
                     "  %s, interval %s: %lu CNP frames, senders acted on %lu notifications\n",
                     mode.c_str(),
                     std::to_string(interval.GetMicroSeconds()).c_str(),
                     static_cast<unsigned long>(r.cnpFrames),
                     static_cast<unsigned long>(r.notifications));
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), 4, "not every flow finished (" << mode << ")");
        NS_TEST_EXPECT_MSG_EQ(net.GetSwitches().front()->GetDrops() + drops, 0, "frames dropped (" << mode << ")");
        NS_TEST_EXPECT_MSG_GT(r.notifications, 0, "senders never slowed down (" << mode << ")");
        Simulator::Destroy();
        return r;
    }

    void DoRun() override
    {
        const Result paced = Run("cnp", MicroSeconds(50));
        const Result every = Run("cnp", Time(0));
        const Result echo = Run("ack", MicroSeconds(50));
        NS_TEST_EXPECT_MSG_GT(paced.cnpFrames, 0, "no CNP frames in cnp mode");
        NS_TEST_EXPECT_MSG_EQ(paced.cnpFrames, paced.notifications, "CNPs sent and acted on differ");
        // 4 QPs over at most ~20 ms at one CNP per 50 us, and far fewer than per packet.
        NS_TEST_EXPECT_MSG_LT(paced.cnpFrames, 4 * (20'000 / 50 + 1), "CNPs above one per QP per interval");
        NS_TEST_EXPECT_MSG_GT(every.cnpFrames, 2 * paced.cnpFrames, "interval 0 did not send more CNPs");
        NS_TEST_EXPECT_MSG_EQ(echo.cnpFrames, 0, "CNP frames in ack mode");
        NS_TEST_EXPECT_MSG_GT(echo.notifications, paced.notifications, "ACK echoes fewer than paced CNPs");
    }
};

/**
 * The engine's settings as the NIC's attributes (tita/engine/settings.h): every
 * row with an ns-3 name is an attribute whose default is the row's ns-3
 * default; the names and defaults are those the model had before the table
 * (pinned here); a value set through each attribute reaches the engine's
 * config; a choice takes every name its parser does and refuses others.
 */
class TitaEngineSettingsTestCase : public TestCase
{
  public:
    TitaEngineSettingsTestCase()
        : TestCase("engine settings are the NIC's attributes, with their names and defaults")
    {
    }

  private:
    // An ns-3 value's text, as the attribute's own checker writes it.
    static std::string Text(const AttributeValue& v, Ptr<const AttributeChecker> c)
    {
        return v.SerializeToString(c);
    }

    void DoRun() override
    {
        namespace eng = ::tita::engine;
        // The attributes before they were made from the table (--PrintAttributes).
        const std::map<std::string, std::string> before = {
            {"AckReqEvery", "1"},          {"BaseRtt", "+1e+07ps"},     {"CnpInterval", "+5e+07ps"},
            {"CollapsePermille", "100"},   {"ComputeIcrc", "false"},    {"CongestionNotification", "cnp"},
            {"ControlRing", "512"},        {"DodgeField", "none"},      {"DodgeMask", "0"},
            {"LossyRounds", "3"},          {"MaxQps", "4096"},          {"OooSlots", "1024"},
            {"RepathTimeouts", "1"},       {"SprayFlowlet", "+0ps"},    {"SprayPaths", "0"},
            {"SprayPolicy", "round_robin"}, {"SrWindow", "256"},        {"StallMin", "+4e+07ps"},
            {"StallRtts", "8"},            {"Telemetry", "true"},       {"TimerSlotNs", "2048"},
            {"TimerSlots", "4096"},        {"VerifyIcrc", "false"}};
        const TypeId tid = RdmaNicNetDevice::GetTypeId();
        std::map<std::string, std::string> fromTable;
        Ptr<RdmaNicNetDevice> nic = CreateObject<RdmaNicNetDevice>();
        std::map<std::string, uint64_t> set;  // row name -> the value set through its attribute
        for (const eng::Setting& row : eng::settings())
        {
            if (row.attribute.empty())
            {
                continue;
            }
            const std::string name(row.attribute);
            TypeId::AttributeInformation info;
            NS_TEST_ASSERT_MSG_EQ(tid.LookupAttributeByName(name, &info), true, name << " is no attribute");
            fromTable[name] = Text(*info.initialValue, info.checker);
            // The row's ns-3 default, in the row's own words, read by the checker.
            const uint64_t d = row.default_for(eng::FrontEnd::kNs3);
            std::string expected = row.format(d);
            if (row.kind == eng::SettingKind::kTime)
            {
                expected = Text(TimeValue(NanoSeconds(d)), info.checker);
            }
            NS_TEST_EXPECT_MSG_EQ(fromTable[name], expected, name << ": not the row's ns-3 default");
            // Another value: the least, or the next (spraying needs 2..16 paths).
            uint64_t v = d != row.min ? row.min : row.min + 1;
            if (row.kind == eng::SettingKind::kBool)
            {
                v = d == 0 ? 1 : 0;
            }
            else if (row.kind == eng::SettingKind::kChoice)
            {
                v = row.choice_name(d + 1).empty() ? 0 : d + 1;
            }
            else if (row.name == "spray_paths")
            {
                v = 4;
            }
            set[std::string(row.name)] = v;
            const bool time = row.kind == eng::SettingKind::kTime;
            nic->SetAttribute(name, StringValue(time ? std::to_string(v) + "ns" : row.format(v)));
            StringValue back;
            nic->GetAttribute(name, back);
            const std::string want = time ? Text(TimeValue(NanoSeconds(v)), info.checker) : row.format(v);
            NS_TEST_EXPECT_MSG_EQ(back.Get(), want, name << ": not read back");
        }
        NS_TEST_EXPECT_MSG_EQ(fromTable.size(), before.size(), "attributes added or lost");
        for (const auto& [name, value] : before)
        {
            NS_TEST_EXPECT_MSG_EQ(fromTable.count(name), 1, name << " is gone");
            NS_TEST_EXPECT_MSG_EQ(fromTable[name], value, name << ": its default changed");
        }
        // Each value reaches the engine (spraying also needs selective repeat).
        nic->SetAttribute("SelectiveRepeat", BooleanValue(true));
        const eng::EngineConfig& c = nic->GetEngine().config();
        for (const eng::Setting& row : eng::settings())
        {
            if (!row.attribute.empty())
            {
                NS_TEST_EXPECT_MSG_EQ(row.get(c), set[std::string(row.name)], row.attribute << ": not the engine's");
            }
        }
        nic->Dispose();
        // A choice by any name its parser takes, and no other.
        Ptr<RdmaNicNetDevice> other = CreateObject<RdmaNicNetDevice>();
        other->SetAttribute("DodgeField", StringValue("udp-sport"));
        NS_TEST_EXPECT_MSG_EQ(static_cast<int>(other->GetEngine().config().path.field),
                              static_cast<int>(wire::DodgeField::kUdpSport),
                              "DodgeField=udp-sport");
        NS_TEST_EXPECT_MSG_EQ(other->SetAttributeFailSafe("DodgeField", StringValue("ecn")), false, "DodgeField=ecn");
        NS_TEST_EXPECT_MSG_EQ(other->SetAttributeFailSafe("SrWindow", UintegerValue(2048)), false, "SrWindow=2048");
        NS_TEST_EXPECT_MSG_EQ(Config::SetDefaultFailSafe("ns3::RdmaNicNetDevice::SprayPolicy", StringValue("random")),
                              false,
                              "SprayPolicy=random");
        other->Dispose();
    }
};

/**
 * A NIC that PFC keeps pausing (it sends into a congested port) also receives a
 * flow: with AckHighPriority its ACKs leave while it is paused, without it they
 * wait with its data.
 */
class TitaAckPriorityTestCase : public TestCase
{
  public:
    TitaAckPriorityTestCase()
        : TestCase("AckHighPriority: ACKs leave a PFC-paused NIC only when set")
    {
    }

  private:
    struct Probe
    {
        bool paused = false;
        uint64_t pauses = 0;
        uint64_t acksWhilePaused = 0;
    };

    Probe Run(bool high)
    {
        TitaNetworkHelper net;
        net.SetNicAttribute("AckHighPriority", BooleanValue(high));
        net.SetSwitchAttribute("BufferSize", UintegerValue(2 << 20));
        net.Build(Star(6));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("none"));
        mgr->SetNetwork(&net);
        Probe probe;
        // Host 2 sends into the incast on host 0 and receives from host 5.
        net.GetNic(2)->TraceConnectWithoutContext(
            "PfcRx",
            MakeBoundCallback(
                +[](Probe* pr, uint8_t, uint16_t quanta) {
                    pr->pauses += quanta > 0 && !pr->paused;
                    pr->paused = quanta > 0;
                },
                &probe));
        net.GetNic(2)->TraceConnectWithoutContext(
            "PhyTxBegin",
            MakeBoundCallback(
                +[](Probe* pr, Ptr<const Packet> p) {
                    const Seen s = Inspect(p);
                    pr->acksWhilePaused +=
                        pr->paused && s.roce && s.opcode == static_cast<uint8_t>(wire::Opcode::kAck);
                },
                &probe));
        for (uint32_t h = 1; h < 5; ++h)
        {
            mgr->StartFlow(h, 0, 4'000'000);
        }
        mgr->StartFlow(5, 2, 4'000'000);
        Simulator::Stop(MilliSeconds(20));
        Simulator::Run();
        std::fprintf(stderr,
                     "  AckHighPriority %d: host 2 paused %lu times, %lu ACKs sent while paused\n",
                     high,
                     static_cast<unsigned long>(probe.pauses),
                     static_cast<unsigned long>(probe.acksWhilePaused));
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), 5, "not every flow finished");
        NS_TEST_EXPECT_MSG_EQ(net.GetSwitches().front()->GetDrops(), 0, "the switch dropped frames");
        NS_TEST_EXPECT_MSG_GT(probe.pauses, 0, "host 2 was never paused");
        Simulator::Destroy();
        return probe;
    }

    void DoRun() override
    {
        NS_TEST_EXPECT_MSG_EQ(Run(false).acksWhilePaused, 0, "ACKs left a paused NIC in the data priority");
        NS_TEST_EXPECT_MSG_GT(Run(true).acksWhilePaused, 0, "no ACK left the paused NIC with AckHighPriority");
    }
};

/**
 * With the HPCC simulator's payload (1000 B) and header count (48 B), the ideal
 * FCT is its standalone FCT: pair RTT (2 x propagation + a payload's
 * serialisation per link) + (size + packets x 48) x 8 / bottleneck. On one
 * switch at 100 Gb/s and 1 us per link the artifact's RTT is 4160 ns.
 */
class TitaIdealFctTestCase : public TestCase
{
  public:
    TitaIdealFctTestCase()
        : TestCase("ideal FCT equals the HPCC simulator's standalone FCT under its payload and header size")
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.SetNicAttribute("PayloadSize", UintegerValue(1000));
        net.Build(Star(2));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("IdealOverheadBytes", UintegerValue(48));
        mgr->SetNetwork(&net);
        for (uint64_t size : {1000ULL, 1001ULL, 100'000ULL, 10'000'000ULL})
        {
            const uint64_t packets = (size + 999) / 1000;
            const double artifact = 4160 + (size + packets * 48) * 8e9 / 100e9;
            NS_TEST_EXPECT_MSG_EQ_TOL(static_cast<double>(mgr->IdealFctNs(1, 0, size)),
                                      artifact,
                                      1.0,
                                      "ideal FCT of " << size << " B");
        }
        Simulator::Destroy();
    }
};

/**
 * tita-sim's readers of topology, flow and CDF files: good files load, bad ones
 * are refused with one line naming the file's line and what is wrong (the
 * cases the fuzzer, tests/fuzz/sim_fuzz.cc, found or could find).
 */
class TitaFileReadersTestCase : public TestCase
{
  public:
    TitaFileReadersTestCase()
        : TestCase("topology, flow and CDF files: bad ones refused with a message naming the line")
    {
    }

  private:
    static std::string Topology(const std::string& text)
    {
        std::istringstream in(text);
        TitaTopology t;
        std::string err;
        return TitaTopology::ReadHpcc(in, "t.topo", &t, &err) ? "ok " + t.Describe() : err;
    }

    static std::string Flows(const std::string& text)
    {
        std::istringstream in(text);
        std::vector<TitaFlowSpec> flows;
        std::string err;
        auto host = [](uint32_t node) { return node < 4 ? static_cast<int32_t>(node) : -1; };
        return TitaWorkload::ReadHpccFlows(in, "f.txt", host, &flows, &err) ? "ok " + std::to_string(flows.size())
                                                                             : err;
    }

    static std::string Cdf(const std::string& text)
    {
        std::istringstream in(text);
        TitaFlowSizeCdf cdf;
        std::string err;
        return cdf.Read(in, "s.cdf", &err) ? "ok" : err;
    }

    void Expect(const std::string& got, const std::string& prefix, const std::string& what)
    {
        NS_TEST_EXPECT_MSG_EQ(got.substr(0, prefix.size()), prefix, what << ": got '" << got << "'");
        NS_TEST_EXPECT_MSG_EQ(got.find('\n'), std::string::npos, what << ": one line");
    }

    void DoRun() override
    {
        const std::string good = "4 2 3\n2 3\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1us 0.001\n\n2 3 400Gbps 0.001ms 0\n";
        Expect(Topology(good), "ok 2 hosts, 2 switches, 3 links", "a good topology (blank lines allowed)");
        Expect(Topology("4 2 3\n2 3\n0 2 100Gbps 1000ns 0\n1 2 100Gbps 1us 0.001\n"),
               "t.topo: at the end: link 2 of 3",
               "a missing link");
        Expect(Topology(good + "0 1 1Gbps 1us 0\n"), "t.topo:7: more lines than the 3 links", "an extra link");
        Expect(Topology("4 2 1\n2 2\n0 2 1Gbps 1us 0\n"), "t.topo:2: switch id '2' is not a node id", "a switch twice");
        Expect(Topology("4 2 1\n2 3\n0 2 1Gbps 1us 0 extra\n"), "t.topo:3: link 0 of 1", "a sixth field");
        Expect(Topology("4 2 1\n2 3\n0 0 1Gbps 1us 0\n"), "t.topo:3: link endpoints '0 0'", "a loop");
        Expect(Topology("4 2 1\n2 3\n0 2 1e300Gbps 1us 0\n"), "t.topo:3: rate '1e300Gbps'", "an overflowing rate");
        Expect(Topology("4 2 1\n2 3\n0 2 100 1us 0\n"), "t.topo:3: rate '100' has no unit", "a bare rate");
        Expect(Topology("4 2 1\n2 3\n0 2 100000000.0.0000001Tbps 1us 0\n"),
               "t.topo:3: rate '100000000.0.0000001Tbps'",
               "a number ns-3 would read differently");
        Expect(Topology("4 2 1\n2 3\n0 2 1Gbps 1e30s 0\n"), "t.topo:3: time '1e30s' is out of range", "a huge delay");
        Expect(Topology("4 2 1\n2 3\n0 2 1Gbps 1us nan\n"), "t.topo:3: 'nan' is not a number", "a NaN error rate");
        Expect(Topology("-4 2 1\n"), "t.topo:1: the first line must be", "a negative count");
        Expect(Topology("2000000 0 0\n"), "t.topo:1: at most 1000000 nodes", "too many nodes");

        Expect(Flows("2\n0 1 3 100 1000 0.5\n1 0 3 100 5 0\n"), "ok 2", "a good flow list");
        Expect(Flows("2\n0 1 3 100 1000 0.5\n"), "f.txt: at the end: flow 1 of 2", "a missing flow");
        Expect(Flows("1\n0 1 3 100 1000 0.5\n1 0 3 100 5 0\n"), "f.txt:3: more lines than the 1 flows", "an extra flow");
        Expect(Flows("1\n0 1 3 100 1000 -1\n"), "f.txt:2: priority 0 to 7", "a start before time 0");
        Expect(Flows("1\n0 1 3 100 0 1\n"), "f.txt:2: priority 0 to 7", "an empty flow");
        Expect(Flows("1\n0 9 3 100 10 1\n"), "f.txt:2: src and dst must be two different hosts", "a switch as dst");
        Expect(Flows("1\n0 1 3 100 10 1e400\n"), "f.txt:2: '1e400' is not a number", "an infinite start");
        Expect(Flows("99999999999\n"), "f.txt:1: the first line must be the number of flows", "a huge count");

        Expect(Cdf("0 0\n1000 50\n\n5000 100\n"), "ok", "a good CDF");
        Expect(Cdf("0 0\n1000 50\n500 100\n"), "s.cdf:3: sizes and percentages must not decrease", "a smaller size");
        Expect(Cdf("0 0\n1000 50\nfoo 100\n"), "s.cdf:3: want `size_bytes cumulative_percent`", "text");
        Expect(Cdf("-5 0\n1000 100\n"), "s.cdf:1: size must be 0 to 1e15 bytes", "a negative size");
        Expect(Cdf("0 0\n1000 150\n"), "s.cdf:2: size must be 0 to 1e15 bytes and the percentage", "above 100 %");
        Expect(Cdf("0 0\n1000 50\n"), "s.cdf: at the end: need at least two points, the last at 100", "short of 100 %");
        Expect(Cdf("0 0\n0 100\n1 100\n"), "s.cdf: at the end: the mean flow size is below 1 byte", "a zero mean");
        std::string err;
        TitaFlowSizeCdf atZero; // found by the fuzzer: 89 % of the mass at size 0
        std::istringstream zero("0 89\n100000000 100\n");
        NS_TEST_ASSERT_MSG_EQ(atZero.Read(zero, "z.cdf", &err), true, err);
        NS_TEST_EXPECT_MSG_EQ(atZero.Sample(0.5), 1u, "a flow has at least one byte");
        TitaFlowSizeCdf real;
        NS_TEST_EXPECT_MSG_EQ(real.Load(TITA_DATA_DIR "/workloads/websearch.cdf", &err), true, err);
        TitaTopology topo;
        NS_TEST_EXPECT_MSG_EQ(TitaTopology::ReadHpcc(TITA_DATA_DIR "/workloads/fat_tree_320.topo", &topo, &err),
                              true,
                              err);
        NS_TEST_EXPECT_MSG_EQ(topo.Hosts().size(), 320u, "fat_tree_320's hosts");
    }
};

/** ClearRoutes empties a switch's table: frames find no route and are counted. */
class TitaClearRoutesTestCase : public TestCase
{
  public:
    TitaClearRoutesTestCase()
        : TestCase("ClearRoutes: a switch without routes delivers nothing and counts the drops")
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.Build(Star(2));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetNetwork(&net);
        net.GetSwitches().front()->ClearRoutes();
        mgr->StartFlow(1, 0, 100'000);
        Simulator::Stop(MicroSeconds(500));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), 0, "a flow finished through a switch without routes");
        NS_TEST_EXPECT_MSG_GT(net.GetSwitches().front()->GetDrops(), 0, "no drop counted");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- golden trace

/**
 * The far end of a link that answers a NIC with scripted ACKs and CNPs: every
 * data packet is ACKed after a fixed delay with an echoed timestamp, one
 * synthetic INT hop and a CE count from the script; every 16th also draws a CNP.
 */
class ScriptedPeer : public TitaNetDevice
{
  public:
    static TypeId GetTypeId()
    {
        static TypeId tid = TypeId("ns3::TitaTestScriptedPeer").SetParent<TitaNetDevice>();
        return tid;
    }

    Ptr<RdmaNicNetDevice> m_nic;
    uint32_t m_nicQpn = 0;
    uint32_t m_myQpn = 0x99;
    Ipv4Address m_myIp{"11.0.9.1"};
    Time m_ackDelay = MicroSeconds(8);
    std::deque<TitaPacketPtr> m_out;

  protected:
    bool HasMoreToSend() const override
    {
        return !m_out.empty();
    }

    TitaPacketPtr DequeueNext() override
    {
        if (m_out.empty())
        {
            return nullptr;
        }
        TitaPacketPtr p = std::move(m_out.front());
        m_out.pop_front();
        return p;
    }

    void DoReceive(TitaPacketPtr p) override
    {
        std::vector<uint8_t> buf(p->GetSize());
        p->CopyTo(buf.data(), p->GetSize());
        wire::Packet pkt;
        if (wire::parse(buf.data(), p->GetSize(), &pkt, {.verify_icrc = false}) != wire::ParseError::kOk ||
            !IsData(pkt.opcode()))
        {
            return;
        }
        const uint32_t psn = pkt.psn();
        const uint32_t ts = pkt.telemetry() ? pkt.telemetry()->ts_ns.get() : 0;
        Simulator::Schedule(m_ackDelay, &ScriptedPeer::Answer, this, psn, ts);
    }

  private:
    void Answer(uint32_t psn, uint32_t ts)
    {
        wire::FrameFields f;
        m_nic->GetMacAddress().CopyTo(f.dst_mac);
        GetMacAddress().CopyTo(f.src_mac);
        f.src_gid = wire::Gid::from_ipv4(m_myIp.Get());
        f.dst_gid = wire::Gid::from_ipv4(m_nic->GetIpv4().Get());
        f.dest_qp = m_nicQpn;
        uint8_t frames[2][256];
        uint32_t len[2];
        const int n = golden::answer_frames(f, psn, ts, frames, len);
        for (int i = 0; i < n; ++i)
        {
            m_out.push_back(TitaPacket::FromBytes(frames[i], len[i]));
        }
        TryTransmit();
    }
};

/**
 * One ACK/CNP event trace, fed to a cc/ algorithm directly and through the ns-3
 * NIC (engine host): the rate and window decisions must be identical after every
 * event. The direct side builds each AckSample from the ACK's fields by the
 * definitions in cc/types.h.
 */
class TitaGoldenTraceTestCase : public TestCase
{
  public:
    explicit TitaGoldenTraceTestCase(std::string cc)
        : TestCase("golden trace: " + cc + " directly and through the ns-3 NIC decide alike"),
          m_cc(std::move(cc))
    {
    }

  private:
    struct State
    {
        golden::Direct direct;
        Ptr<RdmaNicNetDevice> nic;
        uint32_t qpn = 0;
    };

    static uint64_t Now()
    {
        return static_cast<uint64_t>(Simulator::Now().GetNanoSeconds());
    }

    static void Compare(State* s, const char* where)
    {
        ::tita::engine::QpInfo info;
        s->nic->GetEngine().qp_info(s->qpn, &info);
        s->direct.compare(info.rate_bps, info.cwnd_bytes, where, Now());
    }

    // Deadlines strictly before now ran in the engine at their own time.
    static void CatchUpTimers(State* s)
    {
        if (Now() > 0)
        {
            s->direct.timer(Now() - 1, Now() - 1);
        }
    }

    static std::vector<uint8_t> Bytes(Ptr<const Packet> p)
    {
        std::vector<uint8_t> buf(p->GetSize());
        p->CopyData(buf.data(), p->GetSize());
        return buf;
    }

    static void OnEngineTx(State* s, Ptr<const Packet> p)
    {
        CatchUpTimers(s);
        const std::vector<uint8_t> buf = Bytes(p);
        s->direct.sent(Now(), buf.data(), static_cast<uint32_t>(buf.size()));
    }

    static void OnRx(State* s, Ptr<const Packet> p)
    {
        CatchUpTimers(s);
        Compare(s, "before event");
        const std::vector<uint8_t> buf = Bytes(p);
        s->direct.received(Now(), buf.data(), static_cast<uint32_t>(buf.size()));
    }

    void DoRun() override
    {
        const uint64_t rate = 100'000'000'000;
        Ptr<Node> a = CreateObject<Node>();
        Ptr<Node> b = CreateObject<Node>();
        Ptr<RdmaNicNetDevice> nic = CreateObject<RdmaNicNetDevice>();
        nic->SetAddress(Mac48Address::Allocate());
        nic->SetDataRate(DataRate(rate));
        nic->SetIpv4(Ipv4Address("11.0.0.1"));
        nic->SetAttribute("BaseRtt", TimeValue(MicroSeconds(12)));
        a->AddDevice(nic);
        Ptr<ScriptedPeer> peer = CreateObject<ScriptedPeer>();
        peer->SetAddress(Mac48Address::Allocate());
        peer->SetDataRate(DataRate(rate));
        b->AddDevice(peer);
        Ptr<TitaChannel> ch = CreateObject<TitaChannel>();
        nic->Attach(ch);
        peer->Attach(ch);

        State s;
        s.nic = nic;
        const uint64_t totalBytes = 600 * 1024;
        s.qpn = nic->CreateQp();
        peer->m_nic = nic;
        peer->m_nicQpn = s.qpn;
        // The NIC's QP talks to the scripted peer's (fake) QP.
        {
            namespace eng = ::tita::engine;
            std::string err;
            eng::QpAttr at;
            at.qp_access_flags = eng::kAccessRemoteWrite;
            at.dest_qp_num = peer->m_myQpn;
            at.ah_attr.dgid = wire::Gid::from_ipv4(peer->m_myIp.Get());
            peer->GetMacAddress().CopyTo(at.ah_attr.dmac);
            at.timeout = 0; // no RTO in this script
            at.peer_tita = true; // as the NIC connects its QPs (the script plays a tita peer)
            NS_TEST_ASSERT_MSG_EQ(eng::connect_rc(nic->GetEngine(), s.qpn, at, &err), 0, err);
        }
        nic->SetCc(s.qpn, m_cc, {});
        const ccl::FlowConfig link{rate, 12'000, 1024};
        std::string err;
        NS_TEST_ASSERT_MSG_EQ(s.direct.init(m_cc, link, totalBytes, 1024, &err), 0, err);
        nic->TraceConnectWithoutContext("EngineTx", MakeBoundCallback(&TitaGoldenTraceTestCase::OnEngineTx, &s));
        nic->TraceConnectWithoutContext("PhyRxEnd", MakeBoundCallback(&TitaGoldenTraceTestCase::OnRx, &s));
        nic->PostWrite(s.qpn, 1, static_cast<uint32_t>(totalBytes), false, nic);
        Simulator::Stop(MilliSeconds(2));
        Simulator::Run();
        CatchUpTimers(&s);
        Compare(&s, "at the end");
        std::fprintf(stderr,
                     "  %s: %u ACKs, %u CNPs, %u comparisons, %u mismatches, final rate %lu b/s\n",
                     m_cc.c_str(),
                     s.direct.acks,
                     s.direct.cnps,
                     s.direct.compared,
                     s.direct.mismatches,
                     static_cast<unsigned long>(s.direct.rate_bps()));
        NS_TEST_EXPECT_MSG_GT(s.direct.acks, 300, "the script did not run");
        NS_TEST_EXPECT_MSG_EQ(s.direct.mismatches, 0, "first difference: " << s.direct.first);
        Simulator::Destroy();
    }

    std::string m_cc;
};

// ---------------------------------------------------------------- fat-tree workload

/**
 * A 16-host fat-tree (2 pods x 2 ToRs x 4 hosts, 2 aggregation switches per pod,
 * 4 cores) with web-search traffic at 30% load for 1 ms under HPCC: every flow
 * completes, successfully, with nothing dropped, and no flow beats its ideal FCT
 * by more than 5% (the HPCC formula counts a full-MTU store-and-forward per link,
 * which a flow whose last packet is short can beat by a few tens of ns).
 */
class TitaFatTreeWebSearchTestCase : public TestCase
{
  public:
    TitaFatTreeWebSearchTestCase()
        : TestCase("small fat-tree with web-search load: every flow finishes")
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.Build(tita_test::FatTree(2, 2, 2, 4, 2));
        NS_TEST_ASSERT_MSG_EQ(net.GetNHosts(), 16, "hosts");
        NS_TEST_ASSERT_MSG_EQ(net.GetSwitches().size(), 12, "switches");
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("hpcc"));
        mgr->SetNetwork(&net);
        TitaFlowSizeCdf cdf;
        std::string err;
        NS_TEST_ASSERT_MSG_EQ(cdf.Load(TITA_DATA_DIR "/workloads/websearch.cdf", &err), true, err);
        std::vector<uint32_t> hosts(16);
        std::iota(hosts.begin(), hosts.end(), 0);
        auto flows = TitaWorkload::Poisson(cdf, hosts, 0.3, 100'000'000'000, Time(0), MilliSeconds(1), 7);
        const std::size_t n = flows.size();
        TitaWorkload::Schedule(mgr, std::move(flows));
        uint32_t faster = 0;
        mgr->TraceConnectWithoutContext(
            "FlowComplete",
            MakeBoundCallback(
                +[](uint32_t* f, const TitaFlowRecord& r) {
                    if ((r.end - r.start).GetNanoSeconds() < static_cast<int64_t>(r.idealNs) * 95 / 100)
                    {
                        std::fprintf(stderr,
                                     "  flow %u: %lu B in %ld ns, ideal %lu ns, %u links\n",
                                     r.id,
                                     static_cast<unsigned long>(r.bytes),
                                     static_cast<long>((r.end - r.start).GetNanoSeconds()),
                                     static_cast<unsigned long>(r.idealNs),
                                     r.hops);
                        ++*f;
                    }
                },
                &faster));
        Simulator::Stop(MilliSeconds(30));
        Simulator::Run();
        uint64_t drops = 0;
        for (const auto& sw : net.GetSwitches())
        {
            drops += sw->GetDrops();
        }
        std::fprintf(stderr, "  %zu flows, %u finished\n", n, mgr->GetFinished());
        NS_TEST_EXPECT_MSG_GT(n, 10, "too few flows generated");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetStarted(), n, "not every flow started");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFinished(), n, "not every flow finished");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFailed(), 0, "a flow failed");
        NS_TEST_EXPECT_MSG_EQ(drops, 0, "switches dropped packets");
        NS_TEST_EXPECT_MSG_EQ(faster, 0, "a flow finished much faster than its ideal FCT");
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- multi-rail

/**
 * A 2-block multi-rail cluster (4 servers x 8 GPUs per block, 4 spines, NVLink):
 * the rail-k ToR of a block connects exactly the k-th NIC of that block's
 * servers (and spines), each NVSwitch exactly its server's 8 NVLink ports; a
 * ring AllReduce and an All-to-All with PXN relay over all 64 GPUs complete.
 */
class TitaMultiRailTestCase : public TestCase
{
  public:
    TitaMultiRailTestCase()
        : TestCase("multi-rail wiring: rail k ToR connects exactly the k-th NICs; collectives complete")
    {
    }

  private:
    void DoRun() override
    {
        TitaTopology::MultiRailParams p;
        p.blocks = 2;
        p.serversPerBlock = 4;
        p.gpusPerServer = 8;
        p.spines = 4;
        p.nvlink = true;
        const TitaTopology topo = TitaTopology::MultiRail(p);
        TitaNetworkHelper net;
        net.Build(topo);
        NS_TEST_ASSERT_MSG_EQ(topo.GetNServers(), 8, "servers");
        const auto& vs = topo.Vertices();
        uint32_t tors = 0;
        for (uint32_t v = 0; v < vs.size(); ++v)
        {
            if (vs[v].kind != TitaTopology::Kind::kSwitch)
            {
                continue;
            }
            Ptr<TitaSwitchNode> sw = net.GetSwitchOfVertex(v);
            std::vector<uint32_t> hostPeers;
            uint32_t switchPeers = 0;
            for (uint16_t port = 0; port < sw->GetNPorts(); ++port)
            {
                Ptr<TitaNetDevice> peer = sw->GetPort(port)->GetPeer();
                if (auto nic = DynamicCast<RdmaNicNetDevice>(peer))
                {
                    hostPeers.push_back(net.GetHostIndex(nic));
                }
                else
                {
                    ++switchPeers;
                }
            }
            std::sort(hostPeers.begin(), hostPeers.end());
            std::vector<uint32_t> want;
            if (vs[v].tier == 1)
            {
                ++tors;
                for (uint32_t s = 0; s < p.serversPerBlock; ++s)
                {
                    want.push_back(topo.RailHost(vs[v].block * p.serversPerBlock + s, vs[v].gpu));
                }
                NS_TEST_EXPECT_MSG_EQ(switchPeers, p.spines, "a ToR's uplinks go to every spine");
            }
            else if (vs[v].tier == 0)
            {
                const uint32_t server = (hostPeers.empty() ? 0 : vs[topo.Hosts()[hostPeers[0]]].server);
                for (uint32_t g = 0; g < p.gpusPerServer; ++g)
                {
                    want.push_back(topo.NvlinkHost(server, g));
                }
                NS_TEST_EXPECT_MSG_EQ(switchPeers, 0, "an NVSwitch joins only its server's GPUs");
            }
            else
            {
                NS_TEST_EXPECT_MSG_EQ(switchPeers, p.blocks * p.gpusPerServer, "a spine joins every ToR");
            }
            std::sort(want.begin(), want.end());
            NS_TEST_EXPECT_MSG_EQ((hostPeers == want), true, "wrong hosts on " << vs[v].name);
        }
        NS_TEST_EXPECT_MSG_EQ(tors, p.blocks * p.gpusPerServer, "one ToR per (block, rail)");

        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("hpcc"));
        mgr->SetNetwork(&net);
        std::vector<TitaCollective::Rank> ranks;
        for (uint32_t g = 0; g < p.gpusPerServer; ++g)
        {
            for (uint32_t s = 0; s < topo.GetNServers(); ++s)
            {
                ranks.push_back({static_cast<uint32_t>(topo.RailHost(s, g)),
                                 static_cast<int32_t>(s),
                                 static_cast<int32_t>(g)});
            }
        }
        auto ring = TitaCollective::RingAllReduce(mgr, 0, ranks, 1 << 20, Time(0));
        auto pxn = TitaCollective::AllToAllPxn(mgr, 1, ranks, 1 << 20, MicroSeconds(1));
        Simulator::Stop(MilliSeconds(50));
        Simulator::Run();
        NS_TEST_EXPECT_MSG_EQ(ring->IsDone(), true, "ring AllReduce did not complete");
        NS_TEST_EXPECT_MSG_EQ(ring->GetSteps().size(), 2 * (ranks.size() - 1), "ring steps");
        NS_TEST_EXPECT_MSG_EQ(pxn->IsDone(), true, "PXN All-to-All did not complete");
        NS_TEST_EXPECT_MSG_EQ(mgr->GetFailed(), 0, "a message failed");
        std::fprintf(stderr,
                     "  ring AllReduce 1 MiB over %zu GPUs: %.1f us; PXN All-to-All: %.1f us\n",
                     ranks.size(),
                     (ring->GetEnd() - ring->GetStart()).GetMicroSeconds() * 1.0,
                     (pxn->GetEnd() - pxn->GetStart()).GetMicroSeconds() * 1.0);
        Simulator::Destroy();
    }
};

// ---------------------------------------------------------------- pcap

/**
 * A transfer captured with the pcap helper: every frame in the file is a RoCEv2
 * frame tita's parser accepts, ICRC included (ComputeIcrc on).
 */
class TitaPcapTestCase : public TestCase
{
  public:
    TitaPcapTestCase()
        : TestCase("pcap holds real RoCEv2 frames (Ethernet link type, valid ICRC)")
    {
    }

  private:
    void DoRun() override
    {
        TitaNetworkHelper net;
        net.SetNicAttribute("ComputeIcrc", BooleanValue(true));
        net.SetNicAttribute("VerifyIcrc", BooleanValue(true));
        net.Build(Star(2));
        Ptr<TitaFlowManager> mgr = CreateObject<TitaFlowManager>();
        mgr->SetAttribute("Cc", StringValue("dcqcn"));
        mgr->SetNetwork(&net);
        const std::string prefix = CreateTempDirFilename("tita");
        net.EnablePcap(prefix, 1);
        mgr->StartFlow(1, 0, 64 * 1024);
        Simulator::Run();
        Simulator::Destroy();
        PcapFile f;
        f.Open(prefix + "-1.pcap", std::ios::in);
        NS_TEST_ASSERT_MSG_EQ(f.Fail(), false, "no pcap file");
        NS_TEST_EXPECT_MSG_EQ(f.GetDataLinkType(), 1, "link type is not Ethernet");
        uint32_t frames = 0;
        uint32_t good = 0;
        std::vector<uint8_t> buf(65536);
        for (;;)
        {
            uint32_t sec;
            uint32_t usec;
            uint32_t incl;
            uint32_t orig;
            uint32_t read;
            f.Read(buf.data(), buf.size(), sec, usec, incl, orig, read);
            if (f.Eof() || f.Fail())
            {
                break;
            }
            ++frames;
            wire::Packet pkt;
            good += wire::parse(buf.data(), incl, &pkt, {.verify_icrc = true}) == wire::ParseError::kOk;
        }
        NS_TEST_EXPECT_MSG_GT(frames, 64, "too few frames captured");
        NS_TEST_EXPECT_MSG_EQ(good, frames, "frames that are not valid RoCEv2");
    }
};

// ---------------------------------------------------------------- suites

class TitaNs3TestSuite : public TestSuite
{
  public:
    TitaNs3TestSuite()
        : TestSuite("tita", UNIT)
    {
        AddTestCase(new TitaPcapTestCase, TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("dcqcn"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("hpcc"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("timely"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("swift"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("powertcp"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("nscc"), TestCase::QUICK);
        AddTestCase(new TitaGoldenTraceTestCase("tita"), TestCase::QUICK);
        // Congestion-control plug-ins named in TITA_TEST_CC_PLUGIN (space-separated
        // shared objects; the cc-plugin test sets it): the same golden trace.
        if (const char* env = std::getenv("TITA_TEST_CC_PLUGIN"); env != nullptr && *env != '\0')
        {
            std::stringstream ss(env);
            std::string path;
            while (ss >> path)
            {
                std::string err;
                NS_ABORT_MSG_IF(ccl::load_plugin(path, &err) != 0, err);
            }
            for (const ccl::PluginOps* ops : ccl::plugins())
            {
                AddTestCase(new TitaGoldenTraceTestCase(std::string(ops->info.name)), TestCase::QUICK);
            }
        }
        AddTestCase(new TitaEcnIntTestCase, TestCase::QUICK);
        AddTestCase(new TitaIncastFairnessTestCase("dcqcn", false), TestCase::QUICK);
        AddTestCase(new TitaIncastFairnessTestCase("hpcc", true), TestCase::QUICK);
        AddTestCase(new TitaIncastFairnessTestCase("tita", true), TestCase::QUICK);
        AddTestCase(new TitaPfcNoLossTestCase, TestCase::QUICK);
        AddTestCase(new TitaNotificationTestCase, TestCase::QUICK);
        AddTestCase(new TitaEngineSettingsTestCase, TestCase::QUICK);
        AddTestCase(new TitaAckPriorityTestCase, TestCase::QUICK);
        AddTestCase(new TitaClearRoutesTestCase, TestCase::QUICK);
        AddTestCase(new TitaIdealFctTestCase, TestCase::QUICK);
        AddTestCase(new TitaFileReadersTestCase, TestCase::QUICK);
        AddTestCase(new TitaFatTreeWebSearchTestCase, TestCase::QUICK);
        AddTestCase(new TitaMultiRailTestCase, TestCase::QUICK);
    }
};

static TitaNs3TestSuite g_titaNs3TestSuite;
