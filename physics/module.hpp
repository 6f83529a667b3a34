#pragma once
// Host side of the physics module: its options and the one call that composes
// it into an env's registration table. An env lists phys::OrreryComponents and
// phys::OrreryArchetypes first in its own lists, then calls phys::add_to.

#include <string>
#include <vector>

#include "engine/env.hpp"
#include "physics/physics.hpp"

namespace phys {

/// What an env chooses about its physics. The solver's defaults are Box2D v3's
/// (scaled to metres); friction combines as in MuJoCo (the larger), so scenes
/// port 1:1 from MuJoCo and OpenAI's hide-and-seek.
struct PhysicsOptions {
    float dt = 0.01f;                         ///< seconds of simulated time per env step
    uint32_t substeps = 4;                    ///< solver substeps per env step (Box2D: 4)
    Vec3 gravity{0.0f, 0.0f, -9.81f};         ///< each world's gravity at reset (Gravity may change it)
    uint32_t max_bodies = 64;                 ///< rigid bodies per world (the solver's scratch)
    uint32_t max_contacts = 256;              ///< contact points per world per step
    uint32_t max_pairs = 0;                   ///< broadphase pairs kept per world per step (0: twice max_contacts)
    Combine friction_rule = Combine::kMax;    ///< how two shapes' friction combine
    Combine restitution_rule = Combine::kMax; ///< how two shapes' restitution combine
    float bounce_speed = 1.0f;                ///< no bounce below this approach speed, m/s (Box2D: 1)
    float margin = 0.01f;                     ///< speculative contact distance, m, grown by speed * dt
    float match_distance = 0.02f;             ///< a point this close to last step's (m) is warm-started from it
    float contact_hertz = 60.0f;              ///< contact spring, Hz, at most substep rate / 4 (Box2D: 30)
    float damping_ratio = 10.0f;              ///< contact damping ratio (Box2D: 10)
    float push_speed = 3.0f;                  ///< fastest overlap removal, m/s (Box2D: 3)
    uint32_t relax_iterations = 1;            ///< velocity passes without the push per substep
    uint32_t max_joints = 16;                 ///< joints per world (the Joints list's capacity)
    /// The joint kinds the env's systems make, a set of joint_kind_bit(kind)
    /// (0: none). add_joint refuses any other kind (it records
    /// kErrorUndeclaredJoint for the world) and so do snapshots and
    /// checkpoints; the GPU's kernels leave the other kinds' code out
    /// (hide-and-seek declares welds alone). Every kind by default.
    uint32_t joint_kinds = kAllJointKinds;
    float joint_hertz = 60.0f;                          ///< joint spring, Hz, at most half the substep rate (Box2D: 60)
    float joint_damping_ratio = 2.0f;                   ///< joint damping ratio (Box2D: 2)
    FrictionCone friction_cone = FrictionCone::kCircle; ///< circle, or MuJoCo's default pyramid
    /// Bodies with phys::Sleep sleep after sleep_time seconds slower than
    /// sleep_speed (m/s, at their fastest surface point); 0 turns sleeping off
    /// (Box2D: 0.05 m/s for 0.5 s).
    float sleep_speed = 0.05f;
    float sleep_time = 0.5f;
    /// What simulate asks to keep in a GPU block's shared memory, a copy per
    /// team (EnvSpec::scratch_shared; only on the GPU's per-node form): 0
    /// nothing, 1 the bodies, 2 also the contact points, 3 also the pairs,
    /// the colour order and the colouring. The backend keeps as many of them,
    /// in that order, as fit a block (the rest stay in the slot). The same
    /// results at every level (docs/benchmarks.md, "Physics scratch on chip").
    uint32_t on_chip = 3;
    /// GPU, per-node form: whether simulate's teams meet the other teams of
    /// their block (Lanes::align) after the contact build and before each
    /// substep and pass, so that they run the same code at once and share
    /// its instruction fetches. On by default: OpenAI's game ran 19 % slower
    /// at 1,024 worlds and 38 % at 65,536 without it, gpu_hideseek 6 and 16 %.
    /// The physics crowd, whose every world runs the same short passes,
    /// ran 2.0 % faster at 65,536 worlds without but 6.3 % slower at 262,144,
    /// its best batch (an H100; docs/benchmarks.md, "Programmatic launch for
    /// every kernel ..."), so every shipped env aligns. A device define
    /// (ORRERY_PHYS_ALIGN); the same results either way.
    bool align = true;
    /// Convex hulls by number (a body's shape: hull_shape(i)), each a list of
    /// 4..32 corner vertices; wedge_vertices() makes hide-and-seek's ramp.
    std::vector<std::vector<Vec3>> hulls;
};

/// A hull table built on the host: what add_to uploads as the shared hull assets.
struct HullTable {
    std::vector<HullInfo> info;
    std::vector<Vec3> points;
    std::vector<HullFace> faces;
    std::vector<uint32_t> indices;
    /// The table as systems see it (valid while this HullTable lives).
    HullSet view() const;
};

/// Builds the convex hull of each vertex list: faces with outward planes and
/// counter-clockwise corners, edges, volume, centroid and principal inertia,
/// the vertices moved into the body frame (centroid, principal axes; HullInfo's
/// offset and frame say where that lies in the given frame). Throws
/// orrery::Error naming `field`[i] for fewer than 4 or more than 32 vertices,
/// one beyond 1e6 m on an axis, a hull reaching less than 1e-4 m or more than
/// 1e5 m from its vertices' mean (its inertia would leave a float), a
/// coincident pair, coplanar vertices, one that is no corner of the hull
/// (inside it, or on an edge or face), or a face of more than 16 corners.
HullTable build_hulls(const std::vector<std::vector<Vec3>>& hulls, const std::string& field = "hulls");

/// OpenAI hide-and-seek's ramp: a wedge `width` (x) by `length` (y) whose top
/// rises from the floor at y = -length/2 to `height` at y = +length/2 (45
/// degrees when length = height). Given frame: origin at the centre of the
/// bottom face, so hull_pose(info, {x, y, 0}, yaw) stands it on the floor.
std::vector<Vec3> wedge_vertices(float width = 0.5f, float length = 0.5f, float height = 0.5f);

/// The nodes add_to registered, for an env's own nodes to depend on.
struct PhysicsNodes {
    orrery::NodeId init;     ///< kInit: sets each world's gravity
    orrery::NodeId simulate; ///< kStep: one step of physics for every world
};

/// Registers the module's settings asset, the hull table (built from
/// options.hulls), buffer capacities, the PhysicsWorld
/// singleton, and its nodes: init_world in kInit and simulate in kStep, each
/// after every node the env added before (add env nodes that must see the
/// new poses after this call). Throws orrery::Error on an option out of range.
PhysicsNodes add_to(orrery::EnvSpec& spec, const PhysicsOptions& options);

} // namespace phys
