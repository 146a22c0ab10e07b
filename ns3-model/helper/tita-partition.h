// The logical processes of a parallel run (tita-sim --threads): every switch is
// one, and each host joins the switch of its first fabric link (a GPU: its rail
// NIC's switch, not its NVLink switch). A link whose ends are in two LPs is a
// cut; the lookahead is the smallest delay of a cut. A link without delay
// cannot be a cut: its two ends share one LP (said in one line).
#pragma once

#include "tita-network-helper.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ns3
{

/**
 * \ingroup tita
 * A partition of a built network into logical processes.
 */
struct TitaPartition
{
    std::vector<uint32_t> lpOfNode; ///< by ns-3 node id
    uint32_t nLps = 0;
    uint32_t cutLinks = 0;
    uint64_t lookaheadNs = 0;       ///< 0 when nothing is cut (one LP)
    uint32_t zeroDelayLinks = 0;    ///< links without delay between two would-be LPs
    std::string zeroDelayExample;   ///< the first of them, "A-B"

    /// One line: LPs, cut links, lookahead (and the zero-delay fall-back).
    std::string Describe() const;
};

/// Splits `net` (built) into logical processes; also has every channel learn
/// its ends' node ids (TitaChannel::LearnContexts).
TitaPartition TitaMakePartition(const TitaNetworkHelper& net);

} // namespace ns3
