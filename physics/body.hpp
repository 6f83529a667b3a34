#pragma once
// The physics module's components and archetypes: what a rigid body is (the
// RigidBody bundle an env puts in its own archetypes), the per-world
// PhysicsWorld singleton (gravity, contact cache, joints), the step scratch of
// simulate (bodies, contacts, pairs, colouring) and the
// module's settings asset. Plain data; the systems are in solver.hpp.

#include "engine/ctx.hpp"
#include "physics/math.hpp"

namespace phys {
using orrery::AssetOf;
using orrery::BufferOf;
using orrery::Ctx;
using orrery::Entity;
using orrery::Lanes;
using orrery::min_of;
using orrery::uint16_t;

/// Position and orientation. // [worlds, bodies, 7] f32: px py pz qw qx qy qz
struct Pose {
    using Element = float;
    Vec3 p;
    Quat q;
};
/// Linear and angular velocity, world frame. // [worlds, bodies, 6] f32
struct Velocity {
    using Element = float;
    Vec3 v, w;
};
/// Inverse mass and body-frame inverse principal inertia; zero for static and
/// kinematic bodies (the solver ignores them there). mass_of() fills it.
struct MassProps { // [worlds, bodies, 4] f32
    using Element = float;
    float inv_mass;
    Vec3 inv_inertia;
};
enum class BodyKind : uint32_t {
    kDynamic = 0,   ///< moved by gravity, forces and contacts
    kStatic = 1,    ///< never moves (hide-and-seek's locked box); switchable any step
    kKinematic = 2, ///< moved by its velocity only, pushes dynamic bodies, infinite mass
};
struct BodyType { // [worlds, bodies, 1] u32
    using Element = uint32_t;
    BodyKind kind;
};
/// Per degree of freedom locks, world axes: kLockX.. freeze a coordinate,
/// kLockTurnX.. forbid rotation about that axis (OpenAI's agents and boxes: kLockTurnX | kLockTurnY).
enum : uint32_t { kLockX = 1, kLockY = 2, kLockZ = 4, kLockTurnX = 8, kLockTurnY = 16, kLockTurnZ = 32 };
struct Locks {
    using Element = uint32_t;
    uint32_t mask;
};
/// Velocity damping per second: v *= 1 / (1 + h * linear) each substep (Box2D's form).
struct Damping {
    using Element = float;
    float linear, angular;
};
/// MuJoCo's joint damping, per world axis: a force -linear.x * v.x along x
/// (N s/m), and so on, and a torque -angular.z * w.z about z (N m s/rad).
/// OpenAI's agents: linear {10, 10, 1}, angular {0, 0, 10}. Applied
/// implicitly each substep, as MuJoCo's integrators do (README, "Damping").
struct AxisDamping { // [worlds, bodies, 6] f32
    using Element = float;
    Vec3 linear, angular;
};
enum class ShapeKind : uint32_t {
    kSphere = 0,  ///< radius dims.x
    kCapsule = 1, ///< radius dims.x, half length dims.y of the segment along the body's z axis
    kBox = 2,     ///< half extents dims
    kPlane = 3,   ///< infinite plane through the body's origin, normal the body's +z (static only)
    kHull = 4,    ///< convex hull number dims.x (hull_shape(i)) of the Hulls asset (physics/hull.hpp)
};
struct Shape {
    ShapeKind kind;
    Vec3 dims;
};
/// Coulomb friction coefficients and restitution of a shape; a pair's values
/// combine by PhysicsOptions' rules (default: the larger of the two, as MuJoCo).
struct Material {
    using Element = float;
    float static_friction, dynamic_friction, restitution, pad;
};
/// Force and torque (world frame) applied during the next step, then cleared.
/// Systems (actions) add to it. // [worlds, bodies, 6] f32
struct Force {
    using Element = float;
    Vec3 f, t;
};
/// Lets a dynamic body sleep (Box2D's sleeping, per body): after
/// Params::sleep_steps steps moving slower than Params::sleep_speed, with no
/// moving body near it, it stops (zero velocity) and leaves the solver until a
/// force, a joint, a velocity set by a system, or a moving body coming within
/// contact reach wakes it (README, "Sleeping"). Bodies without it never sleep.
/// An env adds it to the archetypes that may sleep. // [worlds, bodies, 2] u32
struct Sleep {
    using Element = uint32_t;
    uint32_t still;  ///< steps in a row it has ended slower than sleep_speed
    uint32_t asleep; ///< 1 while asleep
};
static_assert(sizeof(Pose) == 28 && sizeof(Velocity) == 24 && sizeof(MassProps) == 16 && sizeof(Shape) == 16 &&
              sizeof(Material) == 16 && sizeof(Force) == 24 && sizeof(AxisDamping) == 24);

/// How a pair's friction or restitution is made from the two shapes' values.
enum class Combine : uint32_t { kMax = 0, kMin = 1, kMean = 2, kGeometric = 3 };
ORRERY_HD inline float combine(Combine rule, float a, float b) {
    switch (rule) {
    case Combine::kMax: return max_f(a, b);
    case Combine::kMin: return min_f(a, b);
    case Combine::kMean: return 0.5f * (a + b);
    default: return sqrt_of(a * b);
    }
}

/// The set a contact's friction impulse (along its two tangents) may take:
/// within a circle of radius mu times the normal impulse (Box2D, MuJoCo's
/// elliptic cone), or within the square |f1| + |f2| <= mu times it whose
/// corners lie on the tangents (MuJoCo's default pyramidal cone, which
/// OpenAI's hide-and-seek ran with; the tangents follow the normal only:
/// physics/solver.hpp, tangents_of).
enum class FrictionCone : uint32_t { kCircle = 0, kPyramid = 1 };

/// The module's options as systems read them (one element of the Settings asset).
struct Params {
    float dt;          ///< seconds per env step
    uint32_t substeps; ///< solver substeps per env step
    Vec3 gravity;      ///< each world's initial gravity
    Combine friction_rule, restitution_rule;
    float bounce_speed;        ///< no bounce below this approach speed (m/s)
    float margin;              ///< contact points are found up to this far apart (speculative, m)
    float match_distance;      ///< a point within this of last step's (in a's frame) inherits its impulses
    float contact_hertz;       ///< stiffness of the soft contact (Box2D: 30)
    float damping_ratio;       ///< damping of the soft contact (Box2D: 10)
    float push_speed;          ///< the fastest overlapping bodies are pushed apart (m/s)
    uint32_t relax_iterations; ///< velocity passes without the push, per substep
    float joint_hertz;         ///< stiffness of the soft joints (at most half the substep rate)
    float joint_damping_ratio; ///< damping of the soft joints
    FrictionCone friction_cone;
    float sleep_speed;    ///< a body with Sleep is still below this speed, |v| + |w| bound (m/s); 0: never
    uint32_t sleep_steps; ///< it sleeps after this many still steps in a row
    uint32_t joint_kinds; ///< the joint kinds add_joint accepts (joint_kind_bit's), PhysicsOptions::joint_kinds
};

/// A body as the solver sees it during a step: gathered from the entity's
/// components, stepped, and written back. One per body in PhysicsWorld's Bodies.
struct SolverBody {
    // What the constraint passes read, together at the front (on the GPU a
    // point's two bodies then take fewer L1 sectors): the kind and locks, the
    // velocities, how impulses move it, where it is against the step's start
    // and how it has turned since, and its material.
    BodyKind kind;
    uint32_t locks;
    Vec3 v, w;
    Vec3 inv_mass_damped;      ///< 1 / (m + h d) per world axis, AxisDamping's d: what impulses move it by
    Vec3 inv_inertia_world[3]; ///< rows of (I + h D)^-1, world frame, at the step's start, locks applied
    Vec3 x;
    Vec3 x0;      ///< position at the step's start (contact separations are updated from it)
    Vec3 turn[3]; ///< rows of the rotation since the step's start (q conj(q0)), updated each substep
    Material material;
    // The rest: read once a step or once a substep.
    Entity entity;
    Shape shape;
    Quat q;
    Quat q0;
    Vec3 inv_mass;    ///< per world axis, zero where locked (forces)
    Vec3 inv_inertia; ///< body frame (torques)
    Vec3 force, torque;
    float bound; ///< bounding-sphere radius (broadphase)
    float sweep; ///< how far its surface may move this step: dt * (|v| + |w| bound)
    float lin_damping, ang_damping;
    Vec3 axis_rate;    ///< AxisDamping's linear coefficients times the inverse mass: 1/s per world axis
    Vec3 axis_angular; ///< AxisDamping's angular coefficients (N m s/rad per world axis)
    uint32_t colours;  ///< the colours of constraints on it so far (colouring only)
    uint32_t sleep; ///< kSleepy: it has Sleep; kAsleep: asleep this step; kBlocked: near a moving body (settle_bodies)
    uint32_t still; ///< Sleep::still
#if defined(ORRERY_DEVICE_CODE)
    /// On the GPU only: makes the size an odd number of 4-byte words (79),
    /// so that in shared memory, where a team's bodies lie, the same field of
    /// bodies 16 apart falls in different banks (at 78 words any two 16 apart
    /// shared a bank, a 2-way conflict for a pass's lanes: the crowd +1.0 %
    /// on an H100). The host keeps 312 bytes, a multiple of 8, which its
    /// batch solver reads 1.1-1.5 % faster (docs/perf-notes.md row 116);
    /// add_to sizes the scratch for the larger one.
    uint32_t odd_stride = 0;
#endif
};
/// The GPU's SolverBody size (with odd_stride): the Bodies scratch's element size.
inline constexpr uint32_t kDeviceSolverBodyBytes = 316;
#if defined(ORRERY_DEVICE_CODE)
static_assert(sizeof(SolverBody) == kDeviceSolverBodyBytes && sizeof(SolverBody) / 4 % 2 == 1,
              "SolverBody is plain data of an odd number of words on the GPU");
#else
static_assert(sizeof(SolverBody) == 312, "SolverBody is plain data (its size is the Bodies scratch's)");
#endif
enum : uint32_t { kSleepy = 1, kAsleep = 2, kBlocked = 4 };
/// One contact point, found at the step's start: normal from body a to body
/// b (the two of its Pair, whose points lie in Contacts at [first, first +
/// count)) and tangent t1 (the second tangent is cross(n, t1): contact_t2),
/// anchors (world offsets from each body's centre, fixed for the step), and
/// the solver's accumulated impulses. The pair's friction and restitution are
/// combined from the bodies' materials where they are used. Scratch of one
/// step (what the next step reads of it is in ContactCache).
struct Contact {
    Vec3 n, t1, ra, rb;
    float separation; ///< at the start, less the anchors' offset along n (< 0: overlapping)
    float normal_mass, t1_mass, t2_mass;
    float normal_impulse, t1_impulse, t2_impulse, max_normal_impulse;
    float approach; ///< normal velocity at the start (< 0: approaching), for restitution
};
static_assert(sizeof(Contact) == 84, "Contact is plain data");
/// A Contact's floats, and the first of each field (PointRun's columns).
inline constexpr uint32_t kContactFloats = 21;
enum ContactField : uint32_t {
    kFieldN = 0,
    kFieldT1 = 3,
    kFieldRa = 6,
    kFieldRb = 9,
    kFieldSeparation = 12,
    kFieldNormalMass = 13,
    kFieldT1Mass = 14,
    kFieldT2Mass = 15,
    kFieldNormalImpulse = 16,
    kFieldT1Impulse = 17,
    kFieldT2Impulse = 18,
    kFieldMaxNormalImpulse = 19,
    kFieldApproach = 20,
};
#if !defined(__CUDACC_RTC__) // NVRTC has no offsetof; the layout is the host's
static_assert(offsetof(Contact, t1) == 4 * kFieldT1 && offsetof(Contact, rb) == 4 * kFieldRb &&
                  offsetof(Contact, separation) == 4 * kFieldSeparation &&
                  offsetof(Contact, normal_impulse) == 4 * kFieldNormalImpulse &&
                  offsetof(Contact, max_normal_impulse) == 4 * kFieldMaxNormalImpulse &&
                  offsetof(Contact, approach) == 4 * kFieldApproach && sizeof(Contact) == 4 * kContactFloats,
              "a Contact is 21 floats in ContactField's order");
#endif
/// A contact's second tangent (tangents_of makes it so: the same bits).
ORRERY_HD inline Vec3 contact_t2(const Contact& c) { return cross(c.n, c.t1); }

/// What a step keeps of a contact point: what the next step's warm start
/// reads (its bodies by index, to find a pair's points by binary search, and
/// by entity, as the same index may hold another body next step; the point in
/// a's body frame at the step's start; its final impulses, friction as a world
/// vector t1 * t1_impulse + t2 * t2_impulse, projected onto the new point's
/// tangents), and its normal, which only the viewer's contacts overlay reads:
/// the step's Contacts are step scratch, gone when the step ends.
struct CachedContact {
    uint16_t a, b; ///< indices in Bodies (max_bodies <= 4096)
    Entity ea, eb;
    Vec3 la;
    float normal_impulse;
    Vec3 friction;
    Vec3 n; ///< the normal, from a to b
};
static_assert(sizeof(CachedContact) == 60, "CachedContact is plain data");

inline constexpr uint32_t kMaxManifold = 4;

/// The contact of two shapes: normal from A to B, points and depths.
struct Manifold {
    Vec3 n;
    /// Points found. In simulate's Manifolds list, once the pair holds the
    /// count (Pair::count), the pair's first entry in last step's
    /// ContactCache instead (cache_first; ORRERY_PHYS_CACHE_ONCE).
    uint32_t count;
    Vec3 p[kMaxManifold];
    float depth[kMaxManifold];
};

/// A pair of bodies the broadphase kept for a step (a < b; the list is in
/// pair order), where its points start in Contacts and how many of them the
/// list kept (before the points are placed: how many the narrowphase found).
/// Its manifold is in Manifolds, at the same index.
struct Pair {
    uint32_t a, b;
    uint32_t first, count;
};
static_assert(sizeof(Pair) == 16, "Pair is plain data");
/// Colours of the step's constraints (joints and manifolds): no two of one
/// colour share a dynamic body, so a world's lanes solve a colour at once.
/// A constraint that needs more goes to colour kColours, which one lane
/// solves in order.
inline constexpr uint32_t kColours = 24;
/// Most lanes of a world the solver shares its broadphase among (more idle there).
inline constexpr uint32_t kMaxSolverLanes = 32;
/// SolveOrder's entries: a joint's index, or a pair's with this bit set.
inline constexpr uint32_t kPairEntry = 0x80000000u;
/// A joint's weight in the GPU's cost hint (step_cost): a weld's lane runs
/// about 8 times a contact point's instructions, weighted 2.
/// ORRERY_PHYS_JOINT_COST (an NVRTC define) sets another weight, for
/// measuring against; the hint orders the worlds and changes no result.
#ifndef ORRERY_PHYS_JOINT_COST
#define ORRERY_PHYS_JOINT_COST 16
#endif
inline constexpr uint32_t kJointCost = ORRERY_PHYS_JOINT_COST;
/// The step's solve order: colour c's constraints are SolveOrder entries
/// [begin[c], begin[c + 1]), colours 0..kColours (the last the serial one).
struct Colouring {
    uint32_t begin[kColours + 2];
    uint32_t lane_pairs[kMaxSolverLanes]; ///< the broadphase's pairs per lane, before their offsets are known
};

/// What a joint leaves free between its two frames (each frame fixed in one body).
enum class JointKind : uint32_t {
    kWeld = 0,   ///< nothing: the frames keep one pose (a grab)
    kHinge = 1,  ///< rotation about the frames' z axis
    kSlider = 2, ///< translation along the frames' z axis
};
enum : uint32_t {
    kJointLimited = 1, ///< the hinge angle or slider offset stays within [lower, upper]
};
/// A frame fixed in a body: origin and orientation in the body's frame.
struct Frame {
    Vec3 p;
    Quat q;
};
/// One joint of a world's Joints list (physics/joint.hpp makes, removes and
/// solves them). Bodies are named by entity and found again each step; a
/// joint whose body is gone is dropped. The impulses persist, warm-starting
/// the next substep and step.
struct Joint {
    Entity a, b; ///< the two bodies; b null: the world
    JointKind kind;
    uint32_t flags;     ///< kJointLimited
    uint32_t tag;       ///< the user's (say, the agent holding a box); physics ignores it
    uint32_t ia, ib;    ///< a's and b's index in Bodies during a step (kWorldBody: the world)
    Frame fa, fb;       ///< the joint frame in a's and in b's body frame (world frame for the world)
    float lower, upper; ///< limits: hinge angle of b's frame about a's z (rad), or slider offset along it (m)
    Vec3 linear_impulse, angular_impulse;
    float lower_impulse, upper_impulse;
};
static_assert(sizeof(Joint) == 132, "Joint is plain data");

/// A JointKind's bit in a set of kinds (PhysicsOptions::joint_kinds).
ORRERY_HD constexpr uint32_t joint_kind_bit(JointKind k) { return 1u << uint32_t(k); }
inline constexpr uint32_t kAllJointKinds = 7u; ///< weld, hinge and slider
// The joint kinds this build's solver handles. The GPU compiles an env's
// kernels with the set it declares (PhysicsOptions::joint_kinds, through
// EnvSpec::device_define), leaving the other kinds' rows out of its code
// (none at all for an env without joints); the CPU build handles every kind.
// add_joint and the state checks refuse a kind the env did not declare, so
// both backends only ever meet declared kinds and compute the same.
#ifndef ORRERY_PHYS_JOINT_KINDS
#define ORRERY_PHYS_JOINT_KINDS 7u
#endif
#if defined(ORRERY_PHYS_EVERY_JOINT_KIND) // an NVRTC define for the A/B: every kind's code, whatever is declared
#undef ORRERY_PHYS_JOINT_KINDS
#define ORRERY_PHYS_JOINT_KINDS 7u
#endif
/// Whether j is a weld: known without reading j where welds are the only kind compiled.
ORRERY_HD inline bool is_weld(const Joint& j) {
    return ORRERY_PHYS_JOINT_KINDS == joint_kind_bit(JointKind::kWeld) || j.kind == JointKind::kWeld;
}

/// x with K x = rhs for a weld's 3 x 3 system along the world axes, made once
/// for many right-hand sides (joint.hpp's axes_of and solve_with, the bits
/// of solve_axes): Cramer's cofactors and 1 / det, or the diagonal alone for
/// a nearly singular system; `on` bit i: axis i in use, bit 3: the diagonal.
struct AxesSolve {
    Vec3 c0, c1, c2, diagonal;
    float inv_det;
    uint32_t on;
};
/// A weld's geometry for its passes while its bodies do not move: its
/// anchors from the bodies' centres (world frame), the frames' angular error
/// C, the anchors' gap d, and its angular and point systems (joint.hpp's
/// weld_step). Made by the first pass after its bodies move (they move
/// only in integrate_positions) and read by the passes until the next move;
/// device code makes it in each pass instead (ORRERY_PHYS_KEEP_WELDS).
struct WeldStep {
    Vec3 ra, rb, C, d;
    AxesSolve angular, point;
};
static_assert(sizeof(WeldStep) == 160, "WeldStep is plain data");

struct Gravity { // per world, [worlds, 1, 3] f32
    using Element = float;
    Vec3 g;
};
/// simulate's step scratch (EnvSpec::scratch, in no world): the gathered
/// bodies, the step's contact points, the broadphase's pairs (capacity
/// PhysicsOptions::max_pairs) and their manifolds, the constraints in colour
/// order and the colouring. simulate rebuilds each before reading it.
struct Bodies : BufferOf<SolverBody> {};
struct Contacts : BufferOf<Contact> {};
struct Pairs : BufferOf<Pair> {};
/// Each kept pair's manifold, by its index in Pairs (capacity max_pairs).
struct Manifolds : BufferOf<Manifold> {};
struct SolveOrder : BufferOf<uint32_t> {};
/// Joint k's WeldStep at k (a weld's; capacity PhysicsOptions::max_joints).
struct WeldSteps : BufferOf<WeldStep> {};
/// Contact point k's separation at k, kept between passes while the bodies
/// do not move (capacity PhysicsOptions::max_contacts).
struct Separations : BufferOf<float> {};
/// Last step's contact points as warm starting reads them (written at the
/// end of each step, in Contacts' order), matched to this step's points.
struct ContactCache : BufferOf<CachedContact> {};
/// The world's joints, capacity PhysicsOptions::max_joints; systems add and
/// remove them in any step (physics/joint.hpp). A full list records
/// ErrorCode::kBufferOverflow for the world.
struct Joints : BufferOf<Joint> {};
struct Settings : AssetOf<Params> {};

/// One convex hull of the shared hull table (PhysicsOptions::hulls; physics/hull.hpp
/// reads it). Its vertices are given in the body frame: origin at the centroid,
/// axes the principal axes of inertia; `offset` and `frame` place that body frame
/// in the frame the vertices were supplied in (hull_pose() converts a pose).
struct HullInfo {
    uint32_t first_point, num_vertices, num_dirs; ///< HullPoints: the vertices, then unit edge directions
    uint32_t first_face, num_faces;               ///< HullFaces
    uint32_t first_edge, num_edges;               ///< HullIndices: edges as (vertex, vertex, direction) triples
    float bound;                                  ///< farthest vertex from the body origin
    float volume;                                 ///< m^3
    Vec3 inertia;                                 ///< principal moments of inertia at density 1, body frame
    Vec3 offset;                                  ///< the centroid, in the vertices' given frame
    Quat frame;                                   ///< the body axes' orientation in the given frame
};
/// A face of a hull: outward unit normal n and offset d (dot(n, x) <= d inside),
/// and its corners, counter-clockwise seen from outside, at HullIndices[first..first+count).
struct HullFace {
    Vec3 n;
    float d;
    uint32_t first, count; ///< corner indices are vertex numbers within the hull
};
static_assert(sizeof(HullInfo) == 76 && sizeof(HullFace) == 24);
/// The shared read-only hull table: one copy for every world, set by phys::add_to.
struct Hulls : AssetOf<HullInfo> {};
struct HullPoints : AssetOf<Vec3> {};
struct HullFaces : AssetOf<HullFace> {};
struct HullIndices : AssetOf<uint32_t> {};
/// Per-world error code (Ctx::fail) for a body whose kHull shape names no hull of the table.
inline constexpr uint32_t kErrorBadHull = 0x70680001u;
/// Per-world error code (Ctx::fail) for a joint of a kind the env did not
/// declare (PhysicsOptions::joint_kinds): add_joint refuses it.
inline constexpr uint32_t kErrorUndeclaredJoint = 0x70680002u;

ORRERY_COMPONENTS(Pose, Velocity, MassProps, BodyType, Locks, Damping, Shape, Material, Force, Gravity, Bodies,
                  Contacts, ContactCache, Settings, AxisDamping, Joints, Hulls, HullPoints, HullFaces, HullIndices,
                  Pairs, SolveOrder, Colouring, Manifolds, Sleep, WeldSteps, Separations);
/// Everything a rigid body carries; an env puts it in its archetypes.
ORRERY_BUNDLE(RigidBody, Pose, Velocity, MassProps, BodyType, Locks, Damping, Shape, Material, Force, AxisDamping);
/// Per-world physics state (a singleton the module registers): what carries
/// from one step to the next. The step's scratch (Bodies, Contacts, Pairs,
/// Manifolds, SolveOrder, Colouring, WeldSteps, Separations) is simulate's, in no world.
ORRERY_ARCHETYPE(PhysicsWorld, Gravity, ContactCache, Joints);
ORRERY_ARCHETYPES(PhysicsWorld);

/// Mass properties of `shape` at `density` (kg/m^3): solid sphere, box and
/// capsule (cylinder plus two hemispheres). Planes get none; so do hulls here:
/// their overloads in hull.hpp read the hull table.
ORRERY_HD inline MassProps mass_of(Shape s, float density) {
    float r = s.dims.x, m = 0.0f;
    Vec3 I{0, 0, 0};
    if (s.kind == ShapeKind::kSphere) {
        m = density * (4.0f / 3.0f) * kPi * r * r * r;
        float i = 0.4f * m * r * r;
        I = {i, i, i};
    } else if (s.kind == ShapeKind::kBox) {
        Vec3 e = s.dims;
        m = density * 8.0f * e.x * e.y * e.z;
        I = {m / 3.0f * (e.y * e.y + e.z * e.z), m / 3.0f * (e.x * e.x + e.z * e.z),
             m / 3.0f * (e.x * e.x + e.y * e.y)};
    } else if (s.kind == ShapeKind::kCapsule) {
        float h = s.dims.y;
        float mc = density * kPi * r * r * 2.0f * h, ms = density * (4.0f / 3.0f) * kPi * r * r * r;
        m = mc + ms;
        float ixx = mc * (r * r / 4.0f + h * h / 3.0f) + ms * (0.4f * r * r + h * h + 0.75f * h * r);
        I = {ixx, ixx, mc * r * r * 0.5f + ms * 0.4f * r * r};
    }
    if (m <= 0.0f) return {0.0f, {0.0f, 0.0f, 0.0f}};
    return {1.0f / m, {1.0f / I.x, 1.0f / I.y, 1.0f / I.z}};
}

/// mass_of() rescaled to a given total mass (inertia keeps the shape's distribution).
ORRERY_HD inline MassProps mass_given(Shape s, float mass) {
    MassProps unit = mass_of(s, 1.0f);
    if (unit.inv_mass <= 0.0f || mass <= 0.0f) return unit;
    float scale = unit.inv_mass * mass; // density giving `mass`
    return {1.0f / mass, unit.inv_inertia * (1.0f / scale)};
}

} // namespace phys
