#pragma once
// Shared by hide-and-seek's rule tests, of the default variant
// (hide_and_seek_test.cpp) and of gpu_hideseek (hide_and_seek_gpu_test.cpp):
// simulator options, the env's spec, every agent's action, and reading and
// putting bodies in a world. In the unnamed namespace the tests' own helpers
// are in, names qualified: including it brings in no using-directive.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "envs/hide_and_seek/hide_and_seek.hpp"
#include "envs/registry.hpp"

namespace {

/// `worlds` worlds on `device`, on `threads` CPU threads (0: every hardware
/// thread) with `lanes` CPU lanes a world; `random`: random actions every step.
inline orrery::SimOptions options(uint32_t worlds, uint32_t threads = 1, uint32_t lanes = 1, bool random = false,
                                  const std::string& device = "cpu") {
    orrery::SimOptions o;
    o.num_worlds = worlds;
    o.device = device;
    o.threads = threads;
    o.cpu_lanes = lanes;
    o.random_inputs = random;
    return o;
}

/// Hide-and-seek's spec, with `extra` env options.
inline orrery::EnvSpec spec(orrery::EnvOptions extra = {}) {
    orrery::register_builtin_envs();
    return orrery::make_env_spec("hide_and_seek", extra);
}

/// Sets every agent's action in every world: agent i's is per_agent[i % size].
inline void act(orrery::Simulator& sim, const std::vector<hide_and_seek::Action>& per_agent) {
    const orrery::TensorView& t = sim.tensor("action");
    std::vector<hide_and_seek::Action> all(t.bytes() / sizeof(hide_and_seek::Action));
    for (size_t i = 0; i < all.size(); ++i) all[i] = per_agent[i % per_agent.size()];
    sim.backend().copy_from_host(t.data, all.data(), t.bytes());
}

/// No move, no turn, no grab, no lock.
const hide_and_seek::Action kStill{5, 5, 5, 0, 0};

/// World 0's env config.
inline hide_and_seek::Config config_of(orrery::Simulator& sim) {
    hide_and_seek::Config c{};
    sim.read_world(0, [&](orrery::Ctx& ctx) { c = ctx.config<hide_and_seek::Config>(); });
    return c;
}

/// A wall box: centre and half extents.
struct WallBox {
    phys::Vec3 p, e;
};
/// The walls of world w (static boxes of the Wall archetype, floor excluded).
inline std::vector<WallBox> walls_of(orrery::Simulator& sim, uint32_t w) {
    std::vector<WallBox> out;
    sim.read_world(w, [&](orrery::Ctx& ctx) {
        ctx.each<hide_and_seek::Wall>([&](orrery::Entity e) {
            const phys::Shape& s = *ctx.get<phys::Shape>(e);
            if (s.kind == phys::ShapeKind::kBox) out.push_back({ctx.get<phys::Pose>(e)->p, s.dims});
        });
    });
    return out;
}

/// Puts a body at p facing yaw (radians), at rest. A ramp's p is its own
/// frame's origin (the middle of its bottom face: z = 0 stands it on the floor).
inline void put(orrery::Ctx& ctx, orrery::Entity e, phys::Vec3 p, float yaw = 0.0f) {
    *ctx.get<phys::Pose>(e) = {p, phys::axis_angle({0, 0, 1}, yaw)};
    if (ctx.get<phys::Shape>(e)->kind == phys::ShapeKind::kHull)
        *ctx.get<phys::Pose>(e) =
            phys::hull_pose(phys::hull_set(ctx).info[hide_and_seek::kRampHull], p, phys::axis_angle({0, 0, 1}, yaw));
    *ctx.get<phys::Velocity>(e) = {};
    hide_and_seek::gather_scene(ctx, 0, 1); // what rays see
}

/// Agent row `row`'s pose, velocity and grip, and object 0's pose and state, in world 0.
struct Seen {
    phys::Pose agent;
    phys::Velocity vel;
    hide_and_seek::Grip grip;
    phys::Pose box;
    hide_and_seek::Piece piece;
    phys::BodyKind box_kind;
};
inline Seen look(orrery::Simulator& sim, uint32_t row) {
    Seen s{};
    sim.read_world(0, [&](orrery::Ctx& ctx) {
        s.agent = ctx.at<hide_and_seek::Agent, phys::Pose>(row);
        s.vel = ctx.at<hide_and_seek::Agent, phys::Velocity>(row);
        s.grip = ctx.at<hide_and_seek::Agent, hide_and_seek::Grip>(row);
        s.box = ctx.at<hide_and_seek::Object, phys::Pose>(0);
        s.piece = ctx.at<hide_and_seek::Object, hide_and_seek::Piece>(0);
        s.box_kind = ctx.at<hide_and_seek::Object, phys::BodyType>(0).kind;
    });
    return s;
}

} // namespace
