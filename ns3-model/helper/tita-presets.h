// Named configurations of a whole simulation: attribute defaults for NICs,
// switches and the flow manager, and congestion-control parameters, set in one
// go so that a comparison run is configured as the simulator it compares with.
// doc/ns3-vs-hpcc-artifact.md maps every key of the HPCC artifact's configuration
// to what "hpcc-artifact" sets.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace ns3
{

/// One attribute a preset sets: the full ns-3 path (as in --ns3::Type::Name=) and value.
struct TitaPresetSetting
{
    std::string path;
    std::string value;
};

struct TitaPreset
{
    std::vector<TitaPresetSetting> attributes;
    std::string ccParams; ///< "name=value,..." for the chosen algorithm (may be empty)
};

/// The names presets go by ("hpcc-artifact").
std::vector<std::string> TitaPresetNames();

/// What preset `name` sets for algorithm `cc` on a network whose host NICs run at
/// `hostBps` (the artifact scales its parameters with the NIC rate). False with a
/// message for an unknown name.
bool TitaGetPreset(const std::string& name,
                   const std::string& cc,
                   uint64_t hostBps,
                   TitaPreset* out,
                   std::string* err);

/// The attribute paths a command line sets ("--ns3::Type::Name=..." gives
/// "ns3::Type::Name"), for TitaApplyPreset's `keep`.
std::set<std::string> TitaAttributesGiven(int argc, char* argv[]);

/// Config::SetDefault for each attribute of `preset` that `keep` (paths the user
/// set on the command line) does not name; returns the paths it left alone.
std::vector<std::string> TitaApplyPreset(const TitaPreset& preset, const std::set<std::string>& keep);

} // namespace ns3
