// One long RDMA WRITE on a QP pair of its own, and the path changes of QPs, for
// experiments on a single flow's path (Hash Dodging under a fault, spraying
// around a black hole: doc/hash-dodging.md, doc/multipath.md): where its
// packets go, when it completes, how much its receiver executed.
#pragma once

#include "rdma-nic-net-device.h"
#include "tita-network-helper.h"

#include "ns3/nstime.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 *   TitaLongFlow flow(&net, 0, 4, "hpcc");
 *   flow.Connect();
 *   std::vector<uint16_t> ports;
 *   auto path = flow.Path(flow.GetUdpSport(), &ports); // host tor agg ...
 *   flow.Write(16 << 20);
 */
class TitaLongFlow
{
  public:
    TitaLongFlow(TitaNetworkHelper* net, uint32_t src, uint32_t dst, std::string cc);

    /// Creates the QP pair, connects it (RESET to RTS, each with the other's
    /// QPN) and sets its congestion control. 0 or the first -errno.
    int Connect();
    /// Posts the WRITE of `bytes` now (0 or -errno). From here on the sender's
    /// NIC reports its completions to this flow only: a host of a long flow
    /// runs nothing else.
    int Write(uint32_t bytes);

    /// The vertices a packet of the flow with this UDP source port visits, as
    /// TitaNetworkHelper::TracePath; with `ports`, each switch's egress port.
    std::vector<uint32_t> Path(uint16_t udpSport, std::vector<uint16_t>* ports = nullptr) const;
    /// The UDP source port the sender uses now.
    uint16_t GetUdpSport() const;

    uint32_t GetSrc() const { return m_src; }
    uint32_t GetDst() const { return m_dst; }
    Ptr<RdmaNicNetDevice> GetSender() const { return m_a; }
    Ptr<RdmaNicNetDevice> GetReceiver() const { return m_b; }
    uint32_t GetSenderQpn() const { return m_qa; }
    uint32_t GetReceiverQpn() const { return m_qb; }

    /// When the WRITE completed at the sender; negative before.
    Time GetDone() const { return m_done; }
    bool IsOk() const { return m_ok; }
    /// The completion's status name ("IBV_WC_SUCCESS"); empty before.
    const std::string& GetStatus() const { return m_status; }
    /// Payload bytes the receiver executed.
    uint64_t GetDelivered() const;

  private:
    void Completed(Ptr<RdmaNicNetDevice> nic, const ::tita::engine::WorkCompletion& wc);

    TitaNetworkHelper* m_net;
    uint32_t m_src;
    uint32_t m_dst;
    std::string m_cc;
    Ptr<RdmaNicNetDevice> m_a;
    Ptr<RdmaNicNetDevice> m_b;
    uint32_t m_qa = 0;
    uint32_t m_qb = 0;
    Time m_done = Time(-1);
    bool m_ok = false;
    std::string m_status;
};

/**
 * \ingroup tita
 * Every path change (RdmaNicNetDevice's PathChange trace) of the NICs it watches.
 */
class TitaPathChangeLog
{
  public:
    struct Change
    {
        Time at;
        uint32_t host;
        uint32_t qpn;
        uint8_t reason; ///< tita::engine::RepathReason
        uint16_t from;  ///< dodge value before
        uint16_t to;
    };

    /// Records host `host`'s changes from now on; the log must outlive the run.
    void Watch(Ptr<RdmaNicNetDevice> nic, uint32_t host);
    /// Every host of `net`.
    void WatchAll(const TitaNetworkHelper& net);
    const std::vector<Change>& Get() const { return m_changes; }
    /// The changes of one QP, in order.
    std::vector<Change> Of(uint32_t host, uint32_t qpn) const;

  private:
    struct Host
    {
        TitaPathChangeLog* log;
        uint32_t host;
    };
    std::vector<Change> m_changes;
    std::vector<std::unique_ptr<Host>> m_hosts;
};

} // namespace ns3
