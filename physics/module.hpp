#pragma once
// Host side of the physics module: its options and the one call that composes
// it into an env's registration table. An env lists phys::OrreryComponents and
// phys::OrreryArchetypes first in its own lists, then calls phys::add_to.

#include "engine/env.hpp"
#include "physics/physics.hpp"

namespace phys {

/// What an env chooses about its physics. Defaults follow MuJoCo where a choice
/// is arbitrary (the larger friction of two shapes), so scenes port 1:1.
struct PhysicsOptions {
    float dt = 0.01f;                        ///< seconds of simulated time per env step
    uint32_t substeps = 8;                   ///< XPBD substeps per env step
    uint32_t sweeps = 4;                     ///< Gauss-Seidel sweeps over each manifold's points per pass
    uint32_t iterations = 2;                 ///< position passes over every contact per substep
    Vec3 gravity{0.0f, 0.0f, -9.81f};        ///< each world's gravity at reset (Gravity may change it)
    uint32_t max_bodies = 64;                ///< rigid bodies per world (the solver's scratch)
    uint32_t max_contacts = 256;             ///< contact points per world per substep
    Combine friction_rule = Combine::kMax;   ///< how two shapes' friction combine
    Combine restitution_rule = Combine::kMax; ///< how two shapes' restitution combine
    float bounce_speed = 0.0f;               ///< no bounce below this normal speed (also never below 2|g|h)
};

/// The nodes add_to registered, for an env's own nodes to depend on.
struct PhysicsNodes {
    orrery::NodeId init;     ///< kInit: sets each world's gravity
    orrery::NodeId simulate; ///< kStep: one step of physics for every world
};

/// Registers the module's settings asset, buffer capacities, the PhysicsWorld
/// singleton, and its nodes: init_world in kInit and simulate in kStep, each
/// after every node the env added before (add env nodes that must see the
/// new poses after this call). Throws orrery::Error on an option out of range.
PhysicsNodes add_to(orrery::EnvSpec& spec, const PhysicsOptions& options);

} // namespace phys
