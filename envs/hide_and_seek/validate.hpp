#pragma once
// Host side: hide-and-seek's check of one world's own fields in a snapshot or
// checkpoint being restored (EnvSpec::validate_world); the physics module's
// fields are checked before it by phys::validate_world.

#include "engine/ctx.hpp"

namespace hide_and_seek {

/// Checks every agent and object row is alive (the systems read them by row),
/// each agent's team against the round's draw, actions in their bins, finite
/// rewards and observations, each grip names a present object, each piece's
/// kind and lock state, the round's counts, and the ray scene's count. Throws
/// orrery::Error naming the archetype, row, field and the value expected.
void validate_world(const orrery::Ctx& ctx);

} // namespace hide_and_seek
