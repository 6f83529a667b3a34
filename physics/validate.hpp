#pragma once
// Host side: the physics module's check of one world's fields in a snapshot or
// checkpoint being restored (issue #19). phys::add_to registers it as a world
// check (EnvSpec::add_world_check), so every env composing the module gets it
// before its own validate_world; the world is then restored all or nothing.

#include "engine/env.hpp"
#include "physics/physics.hpp"

namespace phys {

/// Largest allowed distance of a unit quaternion's norm from 1 (Pose, joint frames).
inline constexpr float kUnitTolerance = 1e-3f;

/// Checks every rigid body (body type, shape kind and dims, hull number against
/// the hull table, finite pose with a unit quaternion, velocity, mass, locks,
/// damping, material, force) and the PhysicsWorld singleton (gravity, the
/// ContactCache's and Joints' counts against their capacities, cached
/// contacts' body indices and numbers, each joint's kind, flags, bodies,
/// frames and limits). Throws orrery::Error naming
/// the archetype and row (or buffer element), the field, its value and what is expected.
void validate_world(const orrery::EnvSpec& spec, const orrery::Ctx& ctx);

} // namespace phys
