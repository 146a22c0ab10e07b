// Topologies as graphs, before any ns-3 object exists: read from the HPCC
// simulator's file format, or generated (3-level fat-tree, multi-rail GPU
// cluster with an intra-host NVLink-like fabric). TitaNetworkHelper builds them.
#pragma once

#include <cstdint>
#include <istream>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * Hosts (each one RDMA NIC) and switches joined by links.
 */
class TitaTopology
{
  public:
    enum class Kind : uint8_t
    {
        kHost,
        kSwitch
    };

    struct Vertex
    {
        Kind kind = Kind::kHost;
        std::string name;
        int32_t node = -1;   ///< vertices with the same node share an ns-3 Node (a GPU's NICs)
        int32_t server = -1; ///< multi-rail: server index
        int32_t gpu = -1;    ///< multi-rail: GPU (= rail) index in its server
        bool nvlink = false; ///< the NIC of the intra-host (NVLink-like) fabric
        int32_t block = -1;  ///< fat-tree / multi-rail block of a host or ToR
        int32_t tier = 0;    ///< switches: 1 ToR, 2 aggregation (pod), 3 core/spine (cluster); 0 NVSwitch
    };

    struct Link
    {
        uint32_t a;
        uint32_t b;
        uint64_t rateBps;
        uint64_t delayNs;
        double errorRate = 0;
    };

    uint32_t AddHost(const std::string& name);
    uint32_t AddSwitch(const std::string& name, int32_t tier);
    void AddLink(uint32_t a, uint32_t b, uint64_t rateBps, uint64_t delayNs, double errorRate = 0);

    const std::vector<Vertex>& Vertices() const { return m_vertices; }
    std::vector<Vertex>& MutableVertices() { return m_vertices; }
    const std::vector<Link>& Links() const { return m_links; }
    /// Changes a link's rate (both directions) before the network is built.
    void SetLinkRate(uint32_t link, uint64_t rateBps) { m_links.at(link).rateBps = rateBps; }
    /// Host vertices in order (host index -> vertex).
    const std::vector<uint32_t>& Hosts() const { return m_hosts; }
    uint32_t GetNSwitches() const { return static_cast<uint32_t>(m_vertices.size() - m_hosts.size()); }
    std::string Describe() const;

    /// The HPCC simulator's format: `nodes switches links`, the switch ids, then
    /// `src dst rate delay error_rate` per link (rate an ns-3 DataRate such as 100Gbps,
    /// or bits per second; delay an ns-3 Time such as 1000ns or 0.001ms, or ns).
    /// Returns false with a one-line message naming the file's line ("topo:12: ...").
    static bool ReadHpcc(const std::string& path, TitaTopology* out, std::string* err);
    /// The same from a stream; `name` is what messages call it.
    static bool ReadHpcc(std::istream& in, const std::string& name, TitaTopology* out, std::string* err);

    /// A 3-level Clos: hosts under ToRs (a Block per ToR), ToRs and aggregation
    /// switches fully meshed within a Pod, aggregation switch j of every pod joined
    /// to core group j (the Cluster level). Oversubscription at the ToR is
    /// hostsPerTor x hostRate / (aggsPerPod x torUplinkRate).
    struct FatTreeParams
    {
        uint32_t pods = 5;
        uint32_t torsPerPod = 4;
        uint32_t aggsPerPod = 4;
        uint32_t hostsPerTor = 16;
        uint32_t coresPerAgg = 4;
        uint64_t hostRateBps = 100'000'000'000;
        uint64_t torAggRateBps = 400'000'000'000;
        uint64_t aggCoreRateBps = 400'000'000'000;
        uint64_t linkDelayNs = 1000;
        /// If > 0: hostsPerTor = oversubscription x aggsPerPod x torAggRate / hostRate.
        double oversubscription = 0;
        /// If > 0: GPU servers, as a classic (not rail-optimised) cluster: every
        /// gpusPerServer consecutive hosts of a ToR are the NICs of one server's
        /// GPUs (hostsPerTor a multiple of it), so all NICs of a server share its
        /// ToR; RailHost/NvlinkHost answer as on a multi-rail topology.
        uint32_t gpusPerServer = 0;
        /// With gpusPerServer: each GPU also on its server's NVSwitch, as MultiRail's nvlink.
        bool nvlink = false;
        uint64_t nvlinkRateBps = 3'600'000'000'000;
        uint64_t nvlinkDelayNs = 200;
    };
    static TitaTopology FatTree(const FatTreeParams& p);

    /// Multi-rail GPU cluster: servers of gpusPerServer GPUs, each with its own
    /// NIC; NIC k of every server of a block on the block's rail-k ToR; every ToR
    /// joined to every spine (linksPerSpine links each). With nvlink, each GPU
    /// also has an NVLink-like port on its server's NVSwitch, so a GPU can relay
    /// to the GPU on the right rail (PXN).
    struct MultiRailParams
    {
        uint32_t blocks = 8;
        uint32_t serversPerBlock = 32;
        uint32_t gpusPerServer = 8;
        uint32_t spines = 32;
        uint32_t linksPerSpine = 1;
        uint64_t nicRateBps = 400'000'000'000;
        uint64_t fabricRateBps = 400'000'000'000;
        uint64_t linkDelayNs = 1000;
        bool nvlink = false;
        uint64_t nvlinkRateBps = 3'600'000'000'000;
        uint64_t nvlinkDelayNs = 200;
        /// StarPulse's dual-port NIC: two ToRs per rail in a block (port 0's and
        /// port 1's), each GPU's NIC with a port on each at nicRate (2 x 100G:
        /// nicRate 100G). A port is a host of its own on the GPU's node.
        bool dualPort = false;
    };
    static TitaTopology MultiRail(const MultiRailParams& p);

    /// `hosts` hosts on one switch ("tor", tier 1), every link at rateBps and
    /// delayNs (incast experiments).
    static TitaTopology Star(uint32_t hosts, uint64_t rateBps, uint64_t delayNs);

    /// Multi-rail lookups: host index of (server, gpu); the NVLink NIC's host index.
    int32_t RailHost(uint32_t server, uint32_t gpu) const;
    int32_t NvlinkHost(uint32_t server, uint32_t gpu) const;
    /// Dual-port NICs: the host index of port `port` (0: RailHost) of (server,
    /// gpu)'s NIC; -1 if it has no such port.
    int32_t PortHost(uint32_t server, uint32_t gpu, uint32_t port) const;
    /// Rail NIC ports per GPU: 2 with dualPort, else 1 (0: no GPUs).
    uint32_t GetNicPorts() const { return m_servers == 0 ? 0 : (m_port1Host.empty() ? 1 : 2); }
    uint32_t GetNServers() const { return m_servers; }
    uint32_t GetGpusPerServer() const { return m_gpusPerServer; }

  private:
    std::vector<Vertex> m_vertices;
    std::vector<Link> m_links;
    std::vector<uint32_t> m_hosts;
    std::vector<int32_t> m_hostIndex; // vertex -> host index, -1 for switches
    uint32_t m_servers = 0;
    uint32_t m_gpusPerServer = 0;
    std::vector<int32_t> m_railHost;   // server * gpus + gpu -> host index
    std::vector<int32_t> m_nvlinkHost;
    std::vector<int32_t> m_port1Host; // dual-port NICs: server * gpus + gpu -> port 1's host index

  public:
    int32_t HostIndexOf(uint32_t vertex) const { return m_hostIndex[vertex]; }
};

} // namespace ns3
