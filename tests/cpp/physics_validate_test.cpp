// Issue 19, item 4: the physics module's fields (phys::validate_world, which
// every env composing the module gets from phys::add_to) and hide-and-seek's
// own fields, in a snapshot or checkpoint, are untrusted input. One crafted
// snapshot per rule: it must be refused with a message naming the world, the
// row and the field, and every world of the simulator must keep its bytes.
// Then: every state the simulator makes itself is accepted, a crafted
// checkpoint names its world, and a bad hull number that reaches a step (as
// a system could write one) records kErrorBadHull and touches nothing.

#include <gtest/gtest.h>

#include <zlib.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <unistd.h>

#include "engine/simulator.hpp"
#include "envs/hide_and_seek/hide_and_seek.hpp"
#include "envs/physics_scenes/scenes.hpp"
#include "envs/registry.hpp"
#include "physics/module.hpp"
#include "gpu_support.hpp"

namespace {
using namespace orrery;
using phys::Quat;
using phys::Vec3;
using Body = physics_scenes::Body;
namespace hs = hide_and_seek;

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

std::unique_ptr<Simulator> make(const std::string& env, EnvOptions options, uint32_t worlds = 2,
                                const std::string& device = "cpu") {
    register_builtin_envs();
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = 1;
    o.device = device;
    return std::make_unique<Simulator>(make_env_spec(env, options), o);
}

/// Every world's bytes: what "untouched" compares, bit for bit.
std::vector<std::vector<uint8_t>> state_of(Simulator& sim) {
    std::vector<std::vector<uint8_t>> out;
    for (uint32_t w = 0; w < sim.num_worlds(); ++w) out.push_back(sim.save_world(w).bytes);
    return out;
}

template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) { return e.what(); }
    return "";
}

/// Where each archetype's columns lie in a world snapshot (Region order:
/// per archetype its bookkeeping, then its columns by component id).
std::map<uint32_t, std::map<uint32_t, size_t>> columns_of(const EnvSpec& spec) {
    std::map<uint32_t, std::map<uint32_t, size_t>> out;
    size_t at = 0;
    for (uint32_t a = 0; a < spec.archetype_specs().size(); ++a) {
        const ArchetypeSpec& arch = spec.archetype_specs()[a];
        const size_t cap = arch.capacity;
        at += cap * 4 + cap + cap + cap * 4 + 4 + 4 +
              4; // generation, alive, doomed, free_rows, free_top, high_water, live
        for (uint32_t c = 0; c < spec.component_specs().size(); ++c)
            if (std::count(arch.components.begin(), arch.components.end(), c))
                out[a][c] = at, at += cap * spec.component_specs()[c].row_bytes;
    }
    return out;
}
/// Offset of the bookkeeping field `field_at` (bytes into archetype a's block) in a snapshot.
size_t table_at(const EnvSpec& spec, uint32_t arch) {
    size_t at = 0;
    for (uint32_t a = 0; a < arch; ++a) {
        const ArchetypeSpec& s = spec.archetype_specs()[a];
        at += size_t(s.capacity) * 10 + 12;
        for (uint32_t c : s.components) at += size_t(s.capacity) * spec.component_specs()[c].row_bytes;
    }
    return at;
}

/// Reads component C of archetype A's row in a snapshot, lets f change it, writes it back.
template <class A, class C, class F> void edit(WorldSnapshot& s, const EnvSpec& spec, uint32_t row, F&& f) {
    const size_t at = columns_of(spec)[archetype_id<A>][component_id<C>] +
                      size_t(row) * spec.component_specs()[component_id<C>].row_bytes;
    C c;
    std::memcpy(&c, s.bytes.data() + at, sizeof(C));
    f(c);
    std::memcpy(s.bytes.data() + at, &c, sizeof(C));
}
/// Element k of buffer T of singleton A (k == ~0u: the stored count, as a uint32_t).
template <class A, class T> size_t buffer_at(const EnvSpec& spec, uint32_t k) {
    const size_t at = columns_of(spec)[archetype_id<A>][component_id<T>];
    return k == ~0u ? at : at + kBufferHeaderBytes + size_t(k) * sizeof(typename T::Element);
}
template <class A, class T, class F> void edit_element(WorldSnapshot& s, const EnvSpec& spec, uint32_t k, F&& f) {
    typename T::Element e;
    const size_t at = buffer_at<A, T>(spec, k);
    std::memcpy(&e, s.bytes.data() + at, sizeof(e));
    f(e);
    std::memcpy(s.bytes.data() + at, &e, sizeof(e));
}
template <class A, class T> uint32_t count_in(const WorldSnapshot& s, const EnvSpec& spec) {
    uint32_t n;
    std::memcpy(&n, s.bytes.data() + buffer_at<A, T>(spec, ~0u), 4);
    return n;
}
template <class A, class T> void set_count(WorldSnapshot& s, const EnvSpec& spec, uint32_t n) {
    std::memcpy(s.bytes.data() + buffer_at<A, T>(spec, ~0u), &n, 4);
}

/// Restores a crafted copy of world 0 into world 1: refused naming world 1
/// and every needle, with every world's bytes unchanged.
template <class F> void expect_rejected(Simulator& sim, F&& craft, const std::vector<std::string>& needles) {
    WorldSnapshot s = sim.save_world(0);
    craft(s);
    const auto before = state_of(sim);
    const std::string msg = error_of([&] { sim.restore_world(1, s); });
    ASSERT_FALSE(msg.empty()) << "accepted: " << needles[0];
    EXPECT_NE(msg.find("world 1"), std::string::npos) << msg;
    for (const std::string& n : needles)
        EXPECT_NE(msg.find(n), std::string::npos) << "'" << msg << "' lacks '" << n << "'";
    EXPECT_TRUE(state_of(sim) == before) << "a rejected restore changed the simulator: " << msg;
}

// --- the physics module: physics_scenes' grab scene (two holders welded to a box) ----------

std::unique_ptr<Simulator> grab_scene() {
    std::unique_ptr<Simulator> made = make("physics_scenes", {{"scene", "grab"}, {"holders", "2"}});
    Simulator& sim = *made;
    for (int t = 0; t < 4; ++t) sim.step(); // welded, touching the floor: joints and contacts in the lists
    WorldSnapshot s = sim.save_world(0);
    EXPECT_EQ((count_in<phys::PhysicsWorld, phys::Joints>(s, sim.spec())), 2u);
    EXPECT_GT((count_in<phys::PhysicsWorld, phys::ContactCache>(s, sim.spec())), 0u);
    sim.restore_world(1, s); // the untouched copy is accepted: each test below changes one field
    return made;
}

template <class C, class F> auto body(const Simulator& sim, uint32_t row, F f) {
    return [&sim, row, f](WorldSnapshot& s) { edit<Body, C>(s, sim.spec(), row, f); };
}

TEST(PhysicsValidation, BodyKindsAndShapes) {
    auto made = grab_scene();
    Simulator& sim = *made;
    using phys::Shape;
    using phys::ShapeKind;
    expect_rejected(sim, body<phys::BodyType>(sim, 1, [](auto& t) { t.kind = phys::BodyKind(5); }),
                    {"archetype 'Body' row 1", "BodyType.kind = 5", "expected 0 (dynamic), 1 (static) or 2"});
    expect_rejected(sim, body<Shape>(sim, 2, [](auto& s) { s.kind = ShapeKind(9); }),
                    {"archetype 'Body' row 2", "Shape.kind = 9", "4 (hull)"});
    // A hull number beyond the shared table (physics_scenes holds 2 hulls), fractional, negative, NaN.
    expect_rejected(sim, body<Shape>(sim, 2, [](auto& s) { s = phys::hull_shape(7); }),
                    {"Shape.dims.x (hull number) = 7", "0..1 (the hull table holds 2)"});
    expect_rejected(sim,
                    body<Shape>(sim, 2,
                                [](auto& s) {
                                    s = {ShapeKind::kHull, {0.5f, 0, 0}};
                                }),
                    {"hull number) = 0.5"});
    expect_rejected(sim,
                    body<Shape>(sim, 2,
                                [](auto& s) {
                                    s = {ShapeKind::kHull, {-1.0f, 0, 0}};
                                }),
                    {"hull number) = -1"});
    expect_rejected(sim,
                    body<Shape>(sim, 2,
                                [](auto& s) {
                                    s = {ShapeKind::kHull, {kNaN, 0, 0}};
                                }),
                    {"Shape.dims = (nan, 0, 0)", "finite"});
    expect_rejected(sim,
                    body<Shape>(sim, 1,
                                [](auto& s) {
                                    s = {ShapeKind::kSphere, {-0.1f, 0, 0}};
                                }),
                    {"Shape.dims.x (sphere radius) = -0.1", "> 0 m"});
    expect_rejected(sim,
                    body<Shape>(sim, 1,
                                [](auto& s) {
                                    s = {ShapeKind::kCapsule, {0.1f, -1.0f, 0}};
                                }),
                    {"capsule half length) = -1"});
    expect_rejected(sim, body<Shape>(sim, 2, [](auto& s) { s.dims.y = 0.0f; }), {"Shape.dims (box half extents)"});
    expect_rejected(sim, body<Shape>(sim, 2, [](auto& s) { s.dims.z = kInf; }), {"Shape.dims = (", "inf"});
    // Row 0 is the floor, a plane: static only.
    expect_rejected(sim, body<phys::BodyType>(sim, 0, [](auto& t) { t.kind = phys::BodyKind::kDynamic; }),
                    {"archetype 'Body' row 0", "BodyType.kind of a plane = 0", "1 (static)"});
}

TEST(PhysicsValidation, PosesVelocitiesMassesAndMaterials) {
    auto made = grab_scene();
    Simulator& sim = *made;
    expect_rejected(sim, body<phys::Pose>(sim, 1, [](auto& p) { p.p.y = kNaN; }), {"row 1", "Pose.p = (", "nan"});
    expect_rejected(sim,
                    body<phys::Pose>(sim, 1,
                                     [](auto& p) {
                                         p.q = Quat{0.5f, 0, 0, 0};
                                     }),
                    {"Pose.q = (0.5, 0, 0, 0) (norm 0.5)", "unit quaternion"});
    expect_rejected(sim, body<phys::Pose>(sim, 1, [](auto& p) { p.q = Quat{0, 0, 0, 0}; }), {"Pose.q", "norm 0"});
    expect_rejected(sim, body<phys::Pose>(sim, 3, [](auto& p) { p.q.x = kNaN; }), {"row 3", "Pose.q"});
    expect_rejected(sim, body<phys::Velocity>(sim, 1, [](auto& v) { v.w.z = kInf; }), {"Velocity.w = (", "inf"});
    expect_rejected(sim, body<phys::Velocity>(sim, 2, [](auto& v) { v.v.x = kNaN; }), {"Velocity.v"});
    expect_rejected(sim, body<phys::MassProps>(sim, 2, [](auto& m) { m.inv_mass = -1.0f; }),
                    {"MassProps.inv_mass = -1", ">= 0"});
    expect_rejected(sim, body<phys::MassProps>(sim, 2, [](auto& m) { m.inv_inertia.y = kNaN; }),
                    {"MassProps.inv_inertia"});
    expect_rejected(sim, body<phys::Locks>(sim, 1, [](auto& l) { l.mask = 64; }), {"Locks.mask = 64", "63"});
    expect_rejected(sim, body<phys::Damping>(sim, 1, [](auto& d) { d.linear = -1.0f; }), {"Damping = (-1, "});
    expect_rejected(sim, body<phys::AxisDamping>(sim, 1, [](auto& d) { d.angular.z = kNaN; }), {"AxisDamping.angular"});
    expect_rejected(sim, body<phys::Material>(sim, 2, [](auto& m) { m.dynamic_friction = -0.5f; }),
                    {"Material friction and restitution"});
    expect_rejected(sim, body<phys::Material>(sim, 2, [](auto& m) { m.restitution = 2.0f; }),
                    {"Material.restitution = 2", "0..1"});
    expect_rejected(sim, body<phys::Force>(sim, 1, [](auto& f) { f.t.x = kNaN; }), {"Force.t"});
}

TEST(PhysicsValidation, WorldBuffersAndContacts) {
    auto made = grab_scene();
    Simulator& sim = *made;
    const EnvSpec& spec = sim.spec();
    using W = phys::PhysicsWorld;
    expect_rejected(sim, [&](WorldSnapshot& s) { edit<W, phys::Gravity>(s, spec, 0, [](auto& g) { g.g.z = kInf; }); },
                    {"PhysicsWorld: Gravity.g"});
    expect_rejected(sim, [&](WorldSnapshot& s) { set_count<W, phys::ContactCache>(s, spec, 257); },
                    {"ContactCache count = 257", "capacity 256 (PhysicsOptions::max_contacts)"});
    expect_rejected(sim, [&](WorldSnapshot& s) { set_count<W, phys::ContactCache>(s, spec, 0xFFFFFFFFu); },
                    {"ContactCache count = 4294967295", "max_contacts"});
    expect_rejected(sim, [&](WorldSnapshot& s) { set_count<W, phys::Joints>(s, spec, 17); },
                    {"Joints count = 17", "capacity 16 (PhysicsOptions::max_joints)"});
    // The cache is what the next step warm-starts from.
    expect_rejected(sim,
                    [&](WorldSnapshot& s) {
                        edit_element<W, phys::ContactCache>(s, spec, 0, [](auto& c) { std::swap(c.a, c.b); });
                    },
                    {"PhysicsWorld ContactCache[0]: (a, b) = (", "a < b < 48"});
    expect_rejected(
        sim, [&](WorldSnapshot& s) { edit_element<W, phys::ContactCache>(s, spec, 0, [](auto& c) { c.b = 1000; }); },
        {"ContactCache[0]: (a, b) = (", ", 1000)"});
    expect_rejected(sim,
                    [&](WorldSnapshot& s) {
                        edit_element<W, phys::ContactCache>(s, spec, 0, [](auto& c) { c.friction.y = kNaN; });
                    },
                    {"ContactCache[0]: a point, normal or impulse = not finite"});
    expect_rejected(sim,
                    [&](WorldSnapshot& s) {
                        edit_element<W, phys::ContactCache>(s, spec, 0, [](auto& c) { c.normal_impulse = kInf; });
                    },
                    {"ContactCache[0]: a point, normal or impulse = not finite"});
    expect_rejected(
        sim, [&](WorldSnapshot& s) { edit_element<W, phys::ContactCache>(s, spec, 0, [](auto& c) { c.n.z = kNaN; }); },
        {"ContactCache[0]: a point, normal or impulse = not finite"});
}

TEST(PhysicsValidation, Joints) {
    auto made = grab_scene();
    Simulator& sim = *made;
    const EnvSpec& spec = sim.spec();
    auto joint = [&](auto f) {
        return [&spec, f](WorldSnapshot& s) {
            edit_element<phys::PhysicsWorld, phys::Joints>(s, spec, 0, [&](phys::Joint& j) { f(j, s); });
        };
    };
    expect_rejected(sim, joint([](auto& j, auto&) { j.kind = phys::JointKind(7); }),
                    {"PhysicsWorld Joints[0]: kind = 7", "0 (weld), 1 (hinge) or 2 (slider)"});
    // The grab scene declares welds alone (PhysicsOptions::joint_kinds).
    expect_rejected(sim, joint([](auto& j, auto&) { j.kind = phys::JointKind::kHinge; }),
                    {"PhysicsWorld Joints[0]: kind = 1", "a kind the env declares (PhysicsOptions::joint_kinds = 1"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.flags = 6; }), {"Joints[0]: flags = 6"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.a = Entity::make(200, 1, 1); }),
                    {"Joints[0]: a = {index 3355443201, gen 1}", "archetype id 200"});
    const uint32_t agent = archetype_id<physics_scenes::Agent>, bodies = archetype_id<Body>;
    expect_rejected(sim, joint([=](auto& j, auto&) { j.b = Entity::make(agent, 0, 1); }),
                    {"Joints[0]: b = ", "archetype 'Agent', which holds no rigid bodies"});
    expect_rejected(sim, joint([=](auto& j, auto&) { j.a = Entity::make(bodies, 48, 1); }),
                    {"archetype 'Body' row 48, beyond its capacity 48"});
    // A handle no body had yet would come alive when its row is reused.
    expect_rejected(sim, joint([](auto& j, auto&) { j.b.gen += 1; }),
                    {"Joints[0]: b = ", "which no body had yet (the row's generation is ", ", alive)"});
    expect_rejected(sim, joint([=](auto& j, auto&) { j.a = Entity::make(bodies, 40, 1); }),
                    {"row 40 generation 1", "free)"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.b = j.a; }), {"(a, b) = one body twice"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.a = j.b = Entity{}; }), {"(a, b) = the world twice"});
    expect_rejected(sim, joint([](auto& j, auto&) {
                        j.a = Entity{5, 0};
                    }),
                    {"a null handle (generation 0) with index 5"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.fb.q = Quat{1, 1, 0, 0}; }), {"Joints[0]: fb.q = (1, 1, 0, 0)"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.fa.p.x = kNaN; }), {"Joints[0]: fa.p"});
    expect_rejected(sim, joint([](auto& j, auto&) { j = phys::limited(j, 1.0f, -1.0f); }),
                    {"limits (lower, upper) = (1, -1)", "lower <= upper when limited"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.upper = kInf; }), {"limits (lower, upper) = (0, inf)"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.angular_impulse.y = kNaN; }), {"angular_impulse"});
    expect_rejected(sim, joint([](auto& j, auto&) { j.lower_impulse = -1.0f; }),
                    {"limit impulses (lower, upper) = (-1, "});
}

// --- hide-and-seek's own fields -------------------------------------------------------

std::unique_ptr<Simulator> seek_world() {
    std::unique_ptr<Simulator> made = make("hide_and_seek", {{"hiders", "1"},
                                                             {"seekers", "1"},
                                                             {"min_boxes", "1"},
                                                             {"max_boxes", "2"},
                                                             {"ramps", "1"},
                                                             {"lock_ramps", "0"},
                                                             {"max_rooms", "1"}});
    Simulator& sim = *made;
    // A seed whose round draws one box: object row 1 is then the absent second box.
    for (uint64_t seed = 1;; ++seed) {
        sim.reset(seed);
        uint32_t boxes = 0;
        sim.read_world(0, [&](Ctx& ctx) { boxes = ctx.single<hs::Arena, hs::Round>().boxes; });
        if (boxes == 1) break;
    }
    for (int t = 0; t < 3; ++t) sim.step();
    sim.restore_world(1, sim.save_world(0));
    return made;
}
template <class A, class C, class F> auto field(const Simulator& sim, uint32_t row, F f) {
    return [&sim, row, f](WorldSnapshot& s) { edit<A, C>(s, sim.spec(), row, f); };
}

TEST(HideAndSeekValidation, AgentsTeamsActionsAndGrips) {
    auto made = seek_world();
    Simulator& sim = *made;
    const EnvSpec& spec = sim.spec();
    // A dead agent row (its table's live count kept consistent, so only this check can refuse it).
    expect_rejected(sim,
                    [&](WorldSnapshot& s) {
                        const size_t at = table_at(spec, archetype_id<hs::Agent>), cap = 2;
                        s.bytes[at + cap * 4 + 1] = 0; // alive[1]
                        uint32_t live = 1; // live, after generation, alive, doomed, free_rows, free_top, high_water
                        std::memcpy(s.bytes.data() + at + cap * 10 + 8, &live, 4);
                    },
                    {"archetype 'Agent' row 1: alive = 0", "spawn makes all 2 agent rows"});
    expect_rejected(sim, field<hs::Agent, hs::Team>(sim, 0, [](auto& t) { t.value = 5; }),
                    {"archetype 'Agent' row 0: Team = 5", "expected 0 "});
    expect_rejected(sim, field<hs::Agent, hs::Team>(sim, 0, [](auto& t) { t.value = hs::kSeeker; }), {"Team = 1"});
    expect_rejected(sim, field<hs::Agent, hs::Action>(sim, 1, [](auto& a) { a.grab = 11; }),
                    {"archetype 'Agent' row 1: Action.grab = 11", "0..10"});
    expect_rejected(sim, field<hs::Agent, hs::Action>(sim, 0, [](auto& a) { a.move_x = -1; }), {"Action.move_x = -1"});
    expect_rejected(sim, field<hs::Agent, hs::Reward>(sim, 0, [](auto& r) { r.value = kNaN; }), {"Reward = nan"});
    expect_rejected(sim,
                    [&](WorldSnapshot& s) {
                        const size_t at =
                            columns_of(spec)[archetype_id<hs::Agent>][component_id<hs::Obs>] + 3 * sizeof(float);
                        std::memcpy(s.bytes.data() + at, &kInf, sizeof(float));
                    },
                    {"archetype 'Agent' row 0: Obs[3] = inf"});
    const Entity agent1 = Entity::make(archetype_id<hs::Agent>, 1, 1);
    expect_rejected(sim, field<hs::Agent, hs::Grip>(sim, 0, [=](auto& g) { g.held = agent1; }),
                    {"archetype 'Agent' row 0: Grip.held = {index", "a live Object row holding a present box or ramp"});
    // Object row 1 is the absent second box (the round drew 1).
    const Entity absent_box = Entity::make(archetype_id<hs::Object>, 1, 1);
    expect_rejected(sim, field<hs::Agent, hs::Grip>(sim, 0, [=](auto& g) { g.held = absent_box; }), {"Grip.held"});
}

TEST(HideAndSeekValidation, PiecesRoundAndScene) {
    auto made = seek_world();
    Simulator& sim = *made;
    const EnvSpec& spec = sim.spec();
    auto piece = [&](uint32_t row, hs::Piece p) {
        return field<hs::Object, hs::Piece>(sim, row, [=](auto& q) { q = p; });
    };
    expect_rejected(sim, piece(0, {7, 0, hs::kAbsent, -1}),
                    {"archetype 'Object' row 0: Piece.kind = 7", "1 (cube) or 2"});
    expect_rejected(sim, piece(1, {hs::kCube, 0, hs::kAbsent, -1}), {"Object' row 1: Piece.kind = 1", "0 (no piece)"});
    expect_rejected(sim, piece(2, {hs::kCube, 0, hs::kAbsent, -1}), {"Object' row 2: Piece.kind = 1", "3 (ramp)"});
    expect_rejected(sim, piece(0, {hs::kCube, 2, hs::kAbsent, -1}), {"Piece.locked = 2", "0 or 1"});
    // The audit's kind of finding: lock_team indexes refuse[2] in lock_objects.
    expect_rejected(sim, piece(0, {hs::kCube, 1, 5, 0}), {"Piece.lock_team = 5", "the locker's team 0"});
    expect_rejected(sim, piece(0, {hs::kCube, 1, hs::kSeeker, 0}), {"Piece.lock_team = 1"});
    expect_rejected(sim, piece(0, {hs::kCube, 1, hs::kHider, 9}), {"Piece.locker = 9", "an agent row 0..1"});
    expect_rejected(sim, piece(0, {hs::kCube, 0, hs::kAbsent, 0}), {"Piece (lock_team, locker) = (-1, 0)"});
    expect_rejected(sim, piece(2, {hs::kRamp, 1, hs::kHider, 0}), {"Object' row 2: Piece.locked = 1", "lock_ramps=0"});
    expect_rejected(sim, piece(1, {hs::kNoPiece, 1, hs::kHider, 0}), {"0: no piece to lock"});
    auto round = [&](auto f) { return field<hs::Arena, hs::Round>(sim, 0, f); };
    expect_rejected(sim, round([](auto& r) { r.hiders = 3; }), {"archetype 'Arena' row 0: Round.hiders = 3", "1..1"});
    expect_rejected(sim, round([](auto& r) { r.boxes = 0; }), {"Round.boxes = 0", "1..2"});
    expect_rejected(sim, round([](auto& r) { r.rooms = 9; }), {"Round.rooms = 9"});
    expect_rejected(sim, round([](auto& r) { r.outer_walls = 2; }), {"Round.outer_walls = 2"});
    expect_rejected(sim, [&](WorldSnapshot& s) { set_count<hs::Arena, hs::Scene>(s, spec, 1000); },
                    {"Scene count = 1000"});
    // The physics module's check runs for hide-and-seek too (phys::add_to registered it).
    expect_rejected(sim, field<hs::Wall, phys::Shape>(sim, 0, [](auto& s) { s = phys::hull_shape(3); }),
                    {"archetype 'Wall' row 0: Shape.dims.x (hull number) = 3"});
}

// --- what the simulator makes itself is accepted ----------------------------------------

/// Steps with random in-range inputs; every few steps each world's snapshot
/// must restore into itself, and at the end a checkpoint round trip must load.
void expect_accepted(const std::string& env, const EnvOptions& options, int steps) {
    auto made = make(env, options);
    Simulator& sim = *made;
    uint64_t rng = 12345;
    for (int t = 0; t < steps; ++t) {
        std::vector<std::vector<uint8_t>> inputs = random_inputs(sim, rng);
        size_t i = 0;
        for (const auto& entry : sim.spec().input_ranges()) {
            const TensorView& v = sim.tensor(entry.first);
            std::memcpy(v.data, inputs[i++].data(), v.bytes());
        }
        sim.step();
        if (t % 5 != 4) continue;
        for (uint32_t w = 0; w < sim.num_worlds(); ++w)
            EXPECT_EQ(error_of([&] { sim.restore_world(w, sim.save_world(w)); }), "") << env << " step " << t;
    }
    const std::string path = ::testing::TempDir() + "/orrery_physics_validate_" + std::to_string(::getpid());
    sim.save_checkpoint(path);
    EXPECT_EQ(error_of([&] { sim.load_checkpoint(path); }), "") << env;
    std::remove(path.c_str());
}

TEST(PhysicsValidation, EveryStateTheScenesMakeIsAccepted) {
    for (const char* scene : {"mixed", "crowd", "grab", "ramp", "drive", "push", "stack", "bounce", "incline"})
        expect_accepted("physics_scenes", {{"scene", scene}, {"horizon", "25"}, {"freeze_at", "6"}, {"thaw_at", "12"}},
                        40);
    expect_accepted("physics_scenes", {{"scene", "grab"}, {"holders", "2"}, {"release_at", "20"}}, 30);
    expect_accepted("physics_scenes", {{"scene", "crowd"}, {"ramps", "2"}, {"rays", "8"}}, 20);
}

TEST(HideAndSeekValidation, EveryStateTheGameMakesIsAccepted) {
    // Random actions press grab and lock most steps: grips, welds and locks come and go.
    expect_accepted("hide_and_seek", {{"horizon", "20"}, {"prep_steps", "2"}}, 45);
    expect_accepted("hide_and_seek", {{"game", "quadrant"}, {"prep_steps", "2"}}, 30);
    expect_accepted("hide_and_seek", {{"variant", "gpu_hideseek"}, {"horizon", "20"}, {"prep_steps", "2"}}, 45);
}

// --- checkpoints name the world --------------------------------------------------------

TEST(PhysicsValidation, ACraftedCheckpointNamesItsWorldAndLoadsNothing) {
    auto made = grab_scene();
    Simulator& sim = *made;
    const std::string path = ::testing::TempDir() + "/orrery_physics_ck_" + std::to_string(::getpid());
    sim.save_checkpoint(path);
    std::ifstream in(path, std::ios::binary);
    std::string file((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    uint32_t header_len;
    std::memcpy(&header_len, file.data() + 12, 4);
    const size_t world1 = 16 + header_len + 8 + sim.save_world(0).bytes.size();
    WorldSnapshot w;
    w.bytes.assign(file.begin() + long(world1), file.begin() + long(world1 + sim.save_world(0).bytes.size()));
    edit<Body, phys::Shape>(w, sim.spec(), 2, [](auto& s) { s = phys::hull_shape(2); });
    std::memcpy(file.data() + world1, w.bytes.data(), w.bytes.size());
    uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(file.data()), uInt(file.size() - 4)));
    std::memcpy(file.data() + file.size() - 4, &crc, 4);
    std::ofstream(path, std::ios::binary).write(file.data(), std::streamsize(file.size()));
    for (int t = 0; t < 2; ++t) sim.step(); // the simulator has moved on since the save
    const auto before = state_of(sim);
    const std::string msg = error_of([&] { sim.load_checkpoint(path); });
    EXPECT_NE(msg.find("world 1: archetype 'Body' row 2: Shape.dims.x (hull number) = 2"), std::string::npos) << msg;
    EXPECT_TRUE(state_of(sim) == before);
    std::remove(path.c_str());
}

// --- the hull builder: what fuzz_hull_build found -------------------------------------------

std::vector<Vec3> cube(float half) {
    std::vector<Vec3> v;
    for (float x : {-half, half})
        for (float y : {-half, half})
            for (float z : {-half, half}) v.push_back({x, y, z});
    return v;
}

TEST(PhysicsHullBuild, RefusesHullsWhoseMassPropertiesLeaveAFloat) {
    // Before: a 1e10 m cube was built with inertia inf (a table the narrowphase reads blindly).
    EXPECT_NE(error_of([] { phys::build_hulls({cube(5e9f)}); }).find("hulls[0] vertex 0 lies beyond 1e6 m"),
              std::string::npos);
    EXPECT_NE(error_of([] { phys::build_hulls({cube(1e5f)}); }).find("hulls[0] reaches 1.73e+05 m"), std::string::npos);
    EXPECT_NE(error_of([] { phys::build_hulls({cube(1e-6f)}); }).find("expected 1e-4 to 1e5 m"), std::string::npos);
    EXPECT_EQ(error_of([] { phys::build_hulls({cube(1e-4f), cube(2e4f)}); }), ""); // the ends of the range build
}

TEST(PhysicsHullBuild, RefusesANearlyFlatSetThatComesBackAsTwoFaces) {
    // Before: four points 7e-4 m off one plane, 1 km long, passed the coplanar
    // test through a nearly collinear triple and built as two faces back to back.
    const std::vector<Vec3> flat = {{1, -1, -1}, {0, -1024, 0}, {0, 0, 0}, {-1.001f, -1, 1}};
    EXPECT_NE(error_of([&] { phys::build_hulls({flat}); }).find("hulls[0] has coplanar vertices"), std::string::npos);
    phys::HullTable wedge = phys::build_hulls({phys::wedge_vertices()}); // a real hull still builds
    EXPECT_EQ(wedge.info[0].num_faces, 5u);
}

// --- a bad hull number inside a step (the device code's guard) ----------------------------

/// Writes shape s into body row 2 of world 0 of the live storage, past every
/// check (as a system could), steps, and returns each world's error code.
std::vector<uint32_t> step_with_shape(Simulator& sim, phys::Shape s) {
    sim.synchronize();
    Ctx live(sim.backend().storage(), 0);
    phys::Shape* at = &live.at<Body, phys::Shape>(2); // the address only: on a GPU it is device memory
    sim.backend().copy_from_host(at, &s, sizeof(s));
    sim.step();
    return sim.errors();
}

void bad_hull_is_recorded(const std::string& device) {
    for (float index : {2.0f, 1e9f, -3.0f, kNaN, 0.5f}) {
        auto made = make("physics_scenes", {{"scene", "ramp"}}, 2, device);
        Simulator& sim = *made;
        sim.step();
        const uint64_t other = sim.state_hash(1);
        std::vector<uint32_t> errors = step_with_shape(sim, {phys::ShapeKind::kHull, {index, 0.0f, 0.0f}});
        EXPECT_EQ(errors[0], phys::kErrorBadHull) << "hull number " << index;
        EXPECT_EQ(errors[1], 0u) << "world 1 has no bad hull";
        sim.step();
        EXPECT_NE(sim.state_hash(1), other); // world 1 stepped on, untroubled
    }
}

TEST(PhysicsBadHull, AStepRecordsTheErrorPerWorldAndReadsNoHull) { bad_hull_is_recorded("cpu"); }

TEST(PhysicsBadHull, GpuRecordsTheErrorPerWorldToo) {
    REQUIRE_GPU();
    bad_hull_is_recorded("cuda");
}

} // namespace
