#pragma once
// physics_scenes: canonical rigid-body scenes over the physics module, one per
// world batch (a sphere dropped on a plane, a box sliding to rest, a box at
// rest, a stack, a bouncing ball, a box on an incline, a mixed scene of every
// shape and body kind, a hide-and-seek-sized crowd in a walled room, with its
// two ramps on request, OpenAI's hide-and-seek agent driving, pushing a box,
// and grabbing one with a weld, and a box on a 45 degree wedge ramp). Tests
// validate the module against MuJoCo and across backends with it.
// With rays=N every agent (a turn-locked sphere) scans N lidar rays, exported as "lidar".

#include "physics/physics.hpp"

namespace physics_scenes {
using namespace orrery;
using phys::Quat;
using phys::Vec3;

enum Scene : uint32_t {
    kSphereDrop,
    kBoxSlide,
    kBoxRest,
    kStack,
    kBounce,
    kIncline,
    kMixed,
    kCrowd,
    kDrive, ///< OpenAI's agent alone on the floor
    kPush,  ///< the agent behind a 0.5 m box
    kGrab,  ///< the agent (or two) welded to the box from step grab_at to release_at
    kRamp,  ///< a box on a 45 degree wedge
    kNumScenes
};
/// The hull table every scene registers (PhysicsOptions::hulls).
enum Hull : uint32_t {
    kHideSeekRamp = 0, ///< OpenAI hide-and-seek's ramp: a 45 degree wedge, 0.5 x 0.5 x 0.5 m
    kTestRamp = 1,     ///< the ramp scene's 45 degree wedge, `ramp` metres on each side
};
inline constexpr uint32_t kMaxBodies = 48;
inline constexpr uint32_t kMaxCrowd = 36;   ///< pieces of the crowd scene, one per 1 m cell of its 6 x 6 m room
inline constexpr uint32_t kMaxScanners = 9; ///< agents with lidar: the crowd's turn-locked spheres at its largest

struct Config {
    uint32_t scene, horizon;
    float friction, restitution, speed, height, angle;
    uint32_t freeze_at, thaw_at;  ///< steps at which body 1 turns static and back to dynamic (0: never)
    uint32_t count;               ///< pieces in the crowd scene
    uint32_t ramps;               ///< hide-and-seek ramps in the crowd scene (0, 1 or 2)
    float ramp;                   ///< the ramp scene's wedge size, m
    float push_force;             ///< newtons the action pushes body 1 with
    uint32_t grab_at, release_at; ///< steps whose physics the grab scene's welds start and last act in (0: never)
    uint32_t holders;             ///< agents holding the box in the grab scene (1 or 2)
    uint32_t rays;                ///< lidar rays per agent (0: no lidar)
    float lidar_range;            ///< metres; a ray that hits nothing reads this
    uint32_t kicks;               ///< random pushes per step (the playground: scene crowd, kicks > 0)
    float kick_speed;             ///< m/s each push adds, horizontal, in a random direction
};

/// The agent pushes body 1: 0 none, 1 +x, 2 -x, 3 +y, 4 -y. // [worlds, 1] i32
struct Action {
    using Element = int32_t;
    int32_t value;
};
/// Every body slot's position, orientation, linear and angular velocity (13 floats, zeros where empty).
struct Obs : ArrayOf<float> {}; // [worlds, 1, 13 * 48] f32
/// Body 1's velocity along x: the agent is paid for pushing it that way. // [worlds, 1] f32
struct Reward {
    using Element = float;
    float value;
};
/// Each agent's lidar: distance along ray k at world-fixed angle 2 pi k / rays,
/// horizontal through its centre, to the first body (never the floor, never
/// itself), or the range. Rows: agents in body order; rows without one read 0.
struct Lidar : ArrayOf<float> {}; // [worlds, 9, rays] f32

ORRERY_COMPONENTS(phys::OrreryComponents, Action, Obs, Reward, Lidar);
ORRERY_ARCHETYPE(Body, phys::RigidBody); // pose [worlds, 48, 7] f32, velocity [worlds, 48, 6], force input
ORRERY_ARCHETYPE(Agent, Action, Obs, Reward);
/// One per agent with lidar; registered only with rays > 0, so scenes without
/// lidar keep their storage (and pinned hashes) as before.
ORRERY_ARCHETYPE(Scanner, Lidar);
ORRERY_ARCHETYPES(phys::OrreryArchetypes, Body, Agent, Scanner);

/// Creates a body of `shape` with mass `mass` (0: static), at rest unless `v` is given.
ORRERY_HD inline Entity add_body(Ctx& ctx, phys::Shape shape, float mass, Vec3 p, Quat q, float friction,
                                 float restitution, Vec3 v = {0, 0, 0}, uint32_t locks = 0) {
    Entity e = ctx.create<Body>();
    if (e.is_null()) return e;
    *ctx.get<phys::Pose>(e) = {p, q};
    *ctx.get<phys::Velocity>(e) = {v, {0, 0, 0}};
    ctx.get<phys::BodyType>(e)->kind = mass > 0.0f ? phys::BodyKind::kDynamic : phys::BodyKind::kStatic;
    *ctx.get<phys::MassProps>(e) = mass > 0.0f ? phys::mass_given(shape, mass, phys::hull_set(ctx)) : phys::MassProps{};
    *ctx.get<phys::Shape>(e) = shape;
    *ctx.get<phys::Material>(e) = {friction, friction, restitution, 0.0f};
    ctx.get<phys::Locks>(e)->mask = locks;
    return e;
}

/// The mixed scene: agents (spheres turning only about z, as OpenAI's), cubes,
/// an elongated box, a capsule and a kinematic paddle, jittered per world.
ORRERY_HD inline void spawn_mixed(Ctx& ctx, const Config& cfg) {
    Rng rng = ctx.rng(7);
    const Quat id{1, 0, 0, 0};
    auto jitter = [&]() { return rng.uniform() * 0.1f - 0.05f; };
    // Draws are named before use: the order of a call's arguments is unspecified.
    for (uint32_t i = 0; i < 3; ++i) {
        float x = jitter(), vx = jitter() * 10.0f;
        add_body(ctx, {phys::ShapeKind::kSphere, {0.15f, 0, 0}}, 1.0f, {-1.0f + i * 0.5f + x, -0.6f, 0.3f}, id,
                 cfg.friction, 0.0f, {vx, 1.5f, 0.0f}, phys::kLockTurnX | phys::kLockTurnY);
    }
    for (uint32_t i = 0; i < 3; ++i) { // a tower that the agents run into
        float x = jitter(), yaw = jitter();
        add_body(ctx, {phys::ShapeKind::kBox, {0.2f, 0.2f, 0.2f}}, 2.0f, {x, 0.3f, 0.2f + 0.42f * i},
                 phys::axis_angle({0, 0, 1}, yaw), cfg.friction, 0.0f);
    }
    add_body(ctx, {phys::ShapeKind::kBox, {0.6f, 0.1f, 0.15f}}, 3.0f, {0.9f, 0.0f, 0.8f},
             phys::axis_angle(phys::normalize_or({1, 1, 0}, {1, 0, 0}), 0.4f), cfg.friction, 0.1f);
    add_body(ctx, {phys::ShapeKind::kCapsule, {0.1f, 0.25f, 0}}, 1.0f, {-0.8f, 0.6f, 1.0f},
             phys::axis_angle({1, 0, 0}, 1.2f + jitter()), cfg.friction, 0.3f, {0.5f, 0, 0});
    add_body(ctx, {phys::ShapeKind::kSphere, {0.12f, 0, 0}}, 0.5f, {-0.8f, 0.65f, 1.6f}, id, cfg.friction, 0.5f);
    Entity paddle =
        add_body(ctx, {phys::ShapeKind::kBox, {0.1f, 0.5f, 0.1f}}, 0.0f, {1.6f, 0.0f, 0.1f}, id, cfg.friction, 0.0f);
    ctx.get<phys::BodyType>(paddle)->kind = phys::BodyKind::kKinematic;
    ctx.get<phys::Velocity>(paddle)->v = {-0.6f, 0.0f, 0.0f};
}

/// OpenAI's hide-and-seek agent: a 1 kg sphere of radius 0.15 sliding in x, y
/// and z and turning about z, with MuJoCo joint damping 10, 10, 1 and 10 and
/// friction 0.01 (research/hideseek.md, section 1).
ORRERY_HD inline Entity add_agent(Ctx& ctx, Vec3 p) {
    Entity e = add_body(ctx, {phys::ShapeKind::kSphere, {0.15f, 0, 0}}, 1.0f, p, {1, 0, 0, 0}, 0.01f, 0.0f, {0, 0, 0},
                        phys::kLockTurnX | phys::kLockTurnY);
    if (phys::AxisDamping* d = ctx.get<phys::AxisDamping>(e)) *d = {{10.0f, 10.0f, 1.0f}, {0.0f, 0.0f, 10.0f}};
    return e;
}
/// Its 0.5 m, 1 kg cube: friction 0.2, sliding in x, y, z and turning about z, damping 0.01.
ORRERY_HD inline Entity add_cube(Ctx& ctx, Vec3 p) {
    Entity e = add_body(ctx, {phys::ShapeKind::kBox, {0.25f, 0.25f, 0.25f}}, 1.0f, p, {1, 0, 0, 0}, 0.2f, 0.0f,
                        {0, 0, 0}, phys::kLockTurnX | phys::kLockTurnY);
    if (phys::AxisDamping* d = ctx.get<phys::AxisDamping>(e)) *d = {{0.01f, 0.01f, 0.01f}, {0.0f, 0.0f, 0.01f}};
    return e;
}

/// The crowd: `count` pieces (turn-locked spheres as agents, cubes, long
/// boxes, capsules), one per cell of a 6 x 6 m room walled by four static
/// boxes, moving at up to 1.5 m/s: hide-and-seek's size, for cost and parity.
ORRERY_HD inline void spawn_crowd(Ctx& ctx, const Config& cfg) {
    Rng rng = ctx.rng(9);
    for (uint32_t i = 0; i < cfg.count; ++i) {
        float x = -2.5f + float(i % 6) + rng.uniform() * 0.2f - 0.1f,
              y = -2.5f + float(i / 6) + rng.uniform() * 0.2f - 0.1f;
        float vx = rng.uniform() * 3.0f - 1.5f, vy = rng.uniform() * 3.0f - 1.5f, yaw = rng.uniform() * 6.0f;
        Quat q = phys::axis_angle({0, 0, 1}, yaw);
        switch (i % 4) {
        case 0:
            add_body(ctx, {phys::ShapeKind::kSphere, {0.25f, 0, 0}}, 1.0f, {x, y, 0.25f}, q, cfg.friction, 0.0f,
                     {vx, vy, 0}, phys::kLockTurnX | phys::kLockTurnY);
            break;
        case 1:
            add_body(ctx, {phys::ShapeKind::kBox, {0.25f, 0.25f, 0.25f}}, 2.0f, {x, y, 0.25f}, q, cfg.friction, 0.0f,
                     {vx, vy, 0});
            break;
        case 2:
            add_body(ctx, {phys::ShapeKind::kBox, {0.4f, 0.1f, 0.2f}}, 2.0f, {x, y, 0.2f}, q, cfg.friction, 0.0f,
                     {vx, vy, 0});
            break;
        default:
            add_body(ctx, {phys::ShapeKind::kCapsule, {0.1f, 0.25f, 0}}, 1.0f, {x, y, 0.1f},
                     q * phys::axis_angle({1, 0, 0}, 1.5707963f), cfg.friction, 0.2f, {vx, vy, 0});
            break;
        }
    }
    const Quat id{1, 0, 0, 0};
    for (uint32_t k = 0; k < cfg.ramps; ++k) { // in the last row of cells, clear of 30 pieces; 10 kg as OpenAI's boxes
        phys::Pose at = phys::hull_pose(ctx.asset<phys::Hulls>()[kHideSeekRamp], {k ? 1.5f : -1.5f, 2.5f, 0.0f},
                                        phys::axis_angle({0, 0, 1}, k ? 0.5f : 2.5f));
        add_body(ctx, phys::hull_shape(kHideSeekRamp), 10.0f, at.p, at.q, cfg.friction, 0.0f);
    }
    for (uint32_t k = 0; k < 4; ++k) { // walls
        float along = k < 2 ? 3.1f : 0.0f, across = k < 2 ? 0.0f : 3.1f, sign = k % 2 ? -1.0f : 1.0f;
        Vec3 half = k < 2 ? Vec3{0.1f, 3.2f, 0.5f} : Vec3{3.2f, 0.1f, 0.5f};
        add_body(ctx, {phys::ShapeKind::kBox, half}, 0.0f, {sign * along, sign * across, 0.5f}, id, cfg.friction, 0.0f);
    }
}

/// The ramp: a static 45 degree wedge (`ramp` m, rising toward +y) and a flat
/// 0.2 x 0.2 x 0.1 m box of 1 kg lying on its slope, `height` above it at the
/// slope's middle (0: touching), at rest: it rests below the friction angle
/// (friction > 1) and slides above it, with a = g (sin 45 - mu cos 45). (A
/// cube would be on the point of tipping at 45 degrees, whatever the friction.)
ORRERY_HD inline void spawn_ramp(Ctx& ctx, const Config& cfg) {
    Quat slope = phys::axis_angle({1, 0, 0}, 0.25f * phys::kPi);
    Vec3 up = phys::rotate(slope, {0, 0, 1});
    add_body(ctx, {phys::ShapeKind::kBox, {0.1f, 0.1f, 0.05f}}, 1.0f,
             Vec3{0, 0, 0.5f * cfg.ramp} + up * (0.05f + cfg.height), slope, cfg.friction, 0.0f); // body 1
    phys::Pose w = phys::hull_pose(ctx.asset<phys::Hulls>()[kTestRamp], {0, 0, 0}, {1, 0, 0, 0});
    add_body(ctx, phys::hull_shape(kTestRamp), 0.0f, w.p, w.q, cfg.friction, 0.0f);
}

/// Creates the configured scene: a ground plane (z = 0) and its bodies.
ORRERY_SYSTEM void spawn(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    ctx.create<Agent>();
    const Quat id{1, 0, 0, 0};
    // The ground: z = 0, or tilted about x by `angle` for the incline.
    const Quat tilt = phys::axis_angle({1, 0, 0}, cfg.scene == kIncline ? cfg.angle : 0.0f);
    add_body(ctx, {phys::ShapeKind::kPlane, {0, 0, 0}}, 0.0f, {0, 0, 0}, tilt, cfg.friction, cfg.restitution);
    const phys::Shape ball{phys::ShapeKind::kSphere, {0.1f, 0, 0}}, cube{phys::ShapeKind::kBox, {0.1f, 0.1f, 0.1f}};
    switch (cfg.scene) {
    case kSphereDrop:
    case kBounce: add_body(ctx, ball, 1.0f, {0, 0, cfg.height}, id, cfg.friction, cfg.restitution); break;
    case kBoxSlide:
        add_body(ctx, cube, 1.0f, {0, 0, 0.1f}, id, cfg.friction, cfg.restitution, {cfg.speed, 0, 0});
        break;
    case kBoxRest: add_body(ctx, cube, 1.0f, {0, 0, 0.1f}, id, cfg.friction, cfg.restitution); break;
    case kIncline: add_body(ctx, cube, 1.0f, phys::rotate(tilt, {0, 0, 0.1f}), tilt, cfg.friction, 0.0f); break;
    case kStack:
        for (uint32_t i = 0; i < 3; ++i) add_body(ctx, cube, 1.0f, {0, 0, 0.1f + 0.2f * i}, id, cfg.friction, 0.0f);
        break;
    case kCrowd: spawn_crowd(ctx, cfg); break;
    case kDrive: add_agent(ctx, {0, 0, 0.15f}); break;
    case kPush:
    case kGrab: // the agent 5 cm behind the box's -x face; a second holder opposite
        add_agent(ctx, {-0.45f, 0, 0.15f});
        add_cube(ctx, {0, 0, 0.25f});
        if (cfg.scene == kGrab && cfg.holders > 1) add_agent(ctx, {0.45f, 0, 0.15f});
        break;
    case kRamp: spawn_ramp(ctx, cfg); break;
    default: spawn_mixed(ctx, cfg); break;
    }
}

/// Body n (row n of Body; row 0 is the ground), or null.
ORRERY_HD inline Entity body_at(Ctx& ctx, uint32_t n) {
    Entity found{};
    uint32_t row = 0;
    ctx.each<Body>([&](Entity e) {
        if (row++ == n) found = e;
    });
    return found;
}
ORRERY_HD inline Entity body_one(Ctx& ctx) { return body_at(ctx, 1); }

/// Body 1 turns static at step freeze_at and dynamic again at thaw_at (as
/// hide-and-seek's lock does), inside the step, before physics runs.
ORRERY_SYSTEM void switch_kinds(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    uint32_t step = ctx.step() + 1;
    if (step != cfg.freeze_at && step != cfg.thaw_at) return;
    if (phys::BodyType* t = ctx.get<phys::BodyType>(body_one(ctx)))
        t->kind = step == cfg.freeze_at ? phys::BodyKind::kStatic : phys::BodyKind::kDynamic;
}

/// The action adds a push to body 1's force for this step.
ORRERY_SYSTEM void push(Ctx& ctx) {
    int32_t a = ctx.single<Agent, Action>().value;
    phys::Force* f = ctx.get<phys::Force>(body_one(ctx));
    if (!f || a == 0) return;
    float F = ctx.config<Config>().push_force;
    float x = a == 1 ? F : a == 2 ? -F : 0.0f, y = a == 3 ? F : a == 4 ? -F : 0.0f;
    f->f += Vec3{x, y, 0.0f};
}

/// The playground's random pushes: `kicks` times a step, a dynamic body drawn
/// at random gains `kick_speed` m/s in a random horizontal direction, before
/// physics runs (drawn from the world's own stream, so any batch size and
/// either backend push the same bodies the same way).
ORRERY_SYSTEM void kick(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    if (cfg.kicks == 0) return;
    uint32_t bodies = 0;
    ctx.each<Body>([&](Entity) { ++bodies; });
    Rng rng = ctx.rng(11);
    for (uint32_t k = 0; k < cfg.kicks && bodies > 0; ++k) {
        uint32_t pick = rng.below(bodies);
        float angle = rng.uniform() * 2.0f * phys::kPi;
        Entity e = body_at(ctx, pick);
        if (e.is_null() || ctx.get<phys::BodyType>(e)->kind != phys::BodyKind::kDynamic) continue;
        phys::SinCos d = phys::sin_cos(angle);
        ctx.get<phys::Velocity>(e)->v += Vec3{d.c, d.s, 0.0f} * cfg.kick_speed;
    }
}

/// The grab scene's holders (bodies 1 and 3) weld the box (body 2) to
/// themselves before the physics of step grab_at, in the pose they have then.
ORRERY_SYSTEM void grab(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    if (cfg.scene != kGrab || ctx.step() + 1 != cfg.grab_at) return;
    Entity box = body_at(ctx, 2);
    for (uint32_t i = 0; i < cfg.holders; ++i) phys::weld(ctx, body_at(ctx, i == 0 ? 1 : 3), box, i);
}

/// ...and let go after the physics of step release_at (grab_at == release_at:
/// made and broken inside one step).
ORRERY_SYSTEM void release(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    if (cfg.scene != kGrab || ctx.step() + 1 != cfg.release_at) return;
    Entity box = body_at(ctx, 2);
    for (uint32_t i = 0; i < cfg.holders; ++i) phys::remove_joints(ctx, body_at(ctx, i == 0 ? 1 : 3), box);
}

/// Writes every body slot's state into the observation and body 1's x velocity as the reward.
ORRERY_SYSTEM void observe(Ctx& ctx) {
    Array<Obs> obs = ctx.array_at<Obs>(archetype_id<Agent>, 0);
    for (uint32_t i = 0; i < obs.size; ++i) obs[i] = 0.0f;
    uint32_t slot = 0;
    ctx.each<Body>([&](Entity e) {
        const phys::Pose p = *ctx.get<phys::Pose>(e);
        const phys::Velocity v = *ctx.get<phys::Velocity>(e);
        const float row[13] = {p.p.x, p.p.y, p.p.z, p.q.w, p.q.x, p.q.y, p.q.z,
                               v.v.x, v.v.y, v.v.z, v.w.x, v.w.y, v.w.z};
        for (uint32_t k = 0; k < 13 && 13 * slot + k < obs.size; ++k) obs[13 * slot + k] = row[k];
        ++slot;
    });
    const phys::Velocity* v = ctx.get<phys::Velocity>(body_one(ctx));
    ctx.single<Agent, Reward>().value = v ? v->v.x : 0.0f;
}

/// An agent: a sphere turning only about z, as OpenAI's (the mixed and crowd scenes' agents).
ORRERY_HD inline bool is_agent(const Ctx& ctx, Entity e) {
    const uint32_t upright = phys::kLockTurnX | phys::kLockTurnY;
    return ctx.get<phys::Shape>(e)->kind == phys::ShapeKind::kSphere &&
           (ctx.get<phys::Locks>(e)->mask & upright) == upright;
}

/// A scanner per agent (at most kMaxScanners), after spawn.
ORRERY_SYSTEM void add_scanners(Ctx& ctx) {
    uint32_t agents = 0;
    ctx.each<Body>([&](Entity e) { agents += is_agent(ctx, e) ? 1u : 0u; });
    for (uint32_t i = 0; i < agents && i < kMaxScanners; ++i) ctx.create<Scanner>();
}

/// Every agent's lidar, its rays shared among the world's lanes: ray k of
/// agent a is item a * rays + k, each computed alone, so the bytes do not
/// depend on the lane count (phys::for_lane_share).
ORRERY_SYSTEM void scan(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t n = cfg.rays;
    uint32_t agent = 0;
    ctx.each<Body>([&](Entity e) {
        if (agent >= kMaxScanners || !is_agent(ctx, e)) return;
        Array<Lidar> out = ctx.array_at<Lidar>(archetype_id<Scanner>, agent);
        const Vec3 origin = ctx.get<phys::Pose>(e)->p;
        const uint32_t first = agent * n;
        phys::for_lane_share(first, first + n, lane, lanes, [&](uint32_t i) {
            phys::Ray ray = phys::lidar_ray(origin, i - first, n, cfg.lidar_range);
            out[i - first] = phys::cast_ray(ctx, ray, {e, phys::kSkipPlanes}).distance;
        });
        ++agent;
    });
    phys::for_lane_share(agent * n, kMaxScanners * n, lane, lanes,
                         [&](uint32_t i) { ctx.array_at<Lidar>(archetype_id<Scanner>, i / n)[i % n] = 0.0f; });
}

/// Truncates the episode at the horizon.
ORRERY_SYSTEM void keep_time(Ctx& ctx) {
    if (ctx.step() + 1 >= ctx.config<Config>().horizon) ctx.truncate();
}

} // namespace physics_scenes
