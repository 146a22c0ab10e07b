// The engine's settings (tita/engine/settings.h) as ns-3 attributes: a loop
// over the settings table adds each row with an ns-3 name to a TypeId, with
// the row's help, its ns-3 default and a checker from its range, so the model
// declares none of them by hand. Times are Time values, counts Uinteger,
// switches Boolean, choices Enum (which also take their names as strings: every
// name the row's parser reads), rates DataRate.
#pragma once

#include "ns3/object-base.h"
#include "ns3/type-id.h"
#include "tita/engine/settings.h"

namespace ns3
{

/// Where an object of the type keeps its engine settings (nullptr: not this object).
typedef ::tita::engine::EngineConfig* (*EngineSettingsOf)(ObjectBase* object);

/// Adds the engine's settings to tid as attributes whose values live in
/// settingsOf(object); returns tid, for GetTypeId's chain.
TypeId AddEngineAttributes(TypeId tid, EngineSettingsOf settingsOf);

} // namespace ns3
