// Builds a TitaTopology into ns-3 objects: RDMA NICs, switches on lib/fabric,
// TitaChannels; assigns addresses; computes shortest-path routes and fills each
// switch's ECMP groups; answers path questions (base RTT, bottleneck rate) for
// the ideal flow completion time.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "rdma-nic-net-device.h"
#include "tita-channel.h"
#include "tita-switch-node.h"
#include "tita-topology.h"

#include "ns3/node.h"
#include "ns3/object-factory.h"

namespace ns3
{

/**
 * \ingroup tita
 * From a topology graph to a running network.
 *
 *   TitaNetworkHelper net;
 *   net.SetNicAttribute("PathMtu", UintegerValue(1024));
 *   net.Build(TitaTopology::FatTree({}));
 *   Ptr<RdmaNicNetDevice> nic = net.GetNic(0);
 *
 * Attributes can also be set with Config::SetDefault or --ns3::RdmaNicNetDevice::...
 */
class TitaNetworkHelper
{
  public:
    TitaNetworkHelper();

    void SetNicAttribute(const std::string& name, const AttributeValue& value);
    void SetSwitchAttribute(const std::string& name, const AttributeValue& value);
    void SetChannelAttribute(const std::string& name, const AttributeValue& value);

    /// Registers every node under its topology name (ns3::Names), for Config
    /// paths like /Names/pod0-block1-tor/... Off by default: names are global.
    void EnableNames(bool on) { m_names = on; }

    /// INT off on some switches (mixed fabrics): "" none, "all", "half" (every
    /// other switch of each tier, in topology order, starting with the first),
    /// "tor", "agg", "core" (tier 1, 2, 3). Call before Build. False for an
    /// unknown choice.
    bool SetIntOff(const std::string& which);
    /// Switches whose INT is off (after Build).
    uint32_t GetIntOffCount() const { return m_intOffCount; }

    /// Builds everything; call once. Sets every NIC's BaseRtt to the largest
    /// unloaded RTT of the network (as the HPCC simulator's GLOBAL_T). A switch
    /// whose settings cannot be built (a buffer too small for its reserve and
    /// headroom) makes it return false with one line naming the switch, or,
    /// without err, abort with that line.
    bool Build(const TitaTopology& topo, std::string* err = nullptr);

    const TitaTopology& GetTopology() const { return m_topo; }
    uint32_t GetNHosts() const { return static_cast<uint32_t>(m_nics.size()); }
    Ptr<RdmaNicNetDevice> GetNic(uint32_t host) const { return m_nics[host]; }
    /// Host index of a NIC (from its address).
    uint32_t GetHostIndex(Ptr<const RdmaNicNetDevice> nic) const;
    const std::vector<Ptr<TitaSwitchNode>>& GetSwitches() const { return m_switches; }
    /// The switch of a topology vertex (nullptr for hosts).
    Ptr<TitaSwitchNode> GetSwitchOfVertex(uint32_t vertex) const { return m_switchOf[vertex]; }
    /// The ns-3 node of a topology vertex (the GPU's node for each of its NICs).
    Ptr<Node> GetNodeOfVertex(uint32_t vertex) const { return m_nodes[vertex]; }
    /// The two devices of a link (in the order of the topology's link).
    std::pair<Ptr<TitaNetDevice>, Ptr<TitaNetDevice>> GetLinkDevices(uint32_t link) const;
    Ptr<TitaChannel> GetChannel(uint32_t link) const { return m_channels[link]; }

    static Ipv4Address HostAddress(uint32_t host);

    /// The path packets from src to dst take (first member of each ECMP group).
    struct PathInfo
    {
        uint32_t links = 0;
        uint64_t delayNs = 0;       ///< one way, propagation only
        uint64_t bottleneckBps = 0; ///< slowest link
        std::vector<uint64_t> rates; ///< every link's rate, in order
        std::vector<uint32_t> vertices; ///< src ... dst
    };
    PathInfo GetPath(uint32_t src, uint32_t dst) const;

    /// The vertices a packet from host src to host dst with this UDP source port
    /// and DSCP visits (src ... dst), as the switches forward it: their routes
    /// and ECMP with the dodge offset, lib/fabric's own decision. With `ports`,
    /// each switch's egress port too. Empty when it does not arrive in 64 hops.
    std::vector<uint32_t> TracePath(uint32_t src,
                                    uint32_t dst,
                                    uint16_t udpSport,
                                    uint8_t dscp = 0,
                                    std::vector<uint16_t>* ports = nullptr) const;

    /// Unloaded RTT as the HPCC simulator computes it: 2 x propagation delay +
    /// the store-and-forward time of one payloadBytes packet on every link of the
    /// forward path.
    uint64_t GetBaseRttNs(uint32_t src, uint32_t dst, uint32_t payloadBytes) const;
    uint64_t GetMaxBaseRttNs() const { return m_maxBaseRttNs; }

    /// pcap (DLT_EN10MB, real RoCEv2 frames) of a host's NIC: <prefix>-<host>.pcap.
    void EnablePcap(const std::string& prefix, uint32_t host);
    /// pcap of every port of a switch: <prefix>-<name>-<port>.pcap.
    void EnableSwitchPcap(const std::string& prefix, uint32_t vertex);

    /// Takes a link down at `at` (both directions lose every frame). With
    /// rerouteAfter >= 0 the switches at its ends withdraw the port from their
    /// ECMP groups that much later (the control plane's reaction).
    void SetLinkDown(uint32_t link, Time at, Time rerouteAfter);

    /// Takes a link out of service as a routing protocol does: at `at` the
    /// switches at its ends withdraw the port from their ECMP groups (frames
    /// already queued still go out), and `converge` later every switch's
    /// routes are computed again without the link, so that no switch keeps
    /// sending towards one whose only way on was that link (a core switch
    /// with one link into a pod). The link's channel stays up.
    void WithdrawLink(uint32_t link, Time at, Time converge);

  private:
    struct Port
    {
        uint32_t link;
        uint32_t peer; // vertex
    };
    void ComputeRoutes(uint32_t payloadBytes);
    void Reconverge(uint32_t link);

    ObjectFactory m_nicFactory;
    ObjectFactory m_switchFactory;
    ObjectFactory m_channelFactory;
    TitaTopology m_topo;
    std::vector<Ptr<Node>> m_nodes; // per vertex (hosts of one GPU share one)
    std::vector<Ptr<RdmaNicNetDevice>> m_nics;
    std::vector<Ptr<TitaSwitchNode>> m_switches;
    std::vector<Ptr<TitaSwitchNode>> m_switchOf;
    std::vector<Ptr<TitaChannel>> m_channels;
    std::vector<std::pair<Ptr<TitaNetDevice>, Ptr<TitaNetDevice>>> m_linkDevs;
    std::vector<std::vector<Port>> m_ports; // per vertex: its ports in device order
    // Routes: per switch vertex, the ECMP group index towards each host.
    std::vector<std::vector<int32_t>> m_route;
    std::vector<std::vector<std::vector<uint16_t>>> m_groups;
    std::vector<uint8_t> m_linkOut; // per link: withdrawn from the routes (WithdrawLink)
    uint32_t m_routePayloadBytes = 1024;
    uint64_t m_maxBaseRttNs = 0;
    bool m_names = false;
    std::string m_intOff;
    uint32_t m_intOffCount = 0;
};

} // namespace ns3
