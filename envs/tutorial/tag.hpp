#pragma once
// Tag: the tutorial env (docs/writing-an-env.md walks through it). Pursuers
// chase evaders across a unit square; evaders also eat pellets, which are
// destroyed and respawned inside the step. Components and systems only: this
// file is compiled by g++ for the CPU and by NVRTC for the GPU.

#include "engine/ctx.hpp"

namespace tag {
using namespace orrery;

enum : int32_t { kPursuer = 0, kEvader = 1 };
enum : int32_t { kNoop = 0, kUp = 1, kDown = 2, kLeft = 3, kRight = 4, kNumActions = 5 };

struct Config {
    uint32_t pursuers, evaders, pellets, horizon, tag_limit;
    float accel, drag, radius;
};

struct Position {
    using Element = float;
    float x, y;
}; // [worlds, agents, 2] f32
struct Velocity {
    using Element = float;
    float x, y;
};
struct Role {
    using Element = int32_t;
    int32_t value;
}; // [worlds, agents, 1] i32
struct Action {
    using Element = int32_t;
    int32_t value;
}; // [worlds, agents, 1] i32, input
struct Reward {
    using Element = float;
    float value;
};                              // [worlds, agents, 1] f32
struct Obs : ArrayOf<float> {}; // [worlds, agents, 7 + 4 (agents - 1)] f32
struct Score {
    uint32_t tags, steps;
}; // per-world
static_assert(sizeof(Position) == 8 && sizeof(Action) == 4 && sizeof(Score) == 8);

ORRERY_COMPONENTS(Position, Velocity, Role, Action, Reward, Obs, Score);
ORRERY_ARCHETYPE(Agent, Position, Velocity, Role, Action, Reward, Obs);
ORRERY_ARCHETYPE(Pellet, Position);
ORRERY_ARCHETYPE(Arena, Score);
ORRERY_ARCHETYPES(Agent, Pellet, Arena);

ORRERY_HD inline void place_randomly(Rng& rng, Position& p) {
    p.x = rng.uniform();
    p.y = rng.uniform();
}

/// Init: agents (pursuers first, so rows are stable agent ids) and pellets.
ORRERY_SYSTEM void spawn(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(1);
    for (uint32_t i = 0; i < cfg.pursuers + cfg.evaders; ++i) {
        Entity e = ctx.create<Agent>();
        if (e.is_null()) return; // the engine recorded kCapacityOverflow
        place_randomly(rng, *ctx.get<Position>(e));
        ctx.get<Role>(e)->value = i < cfg.pursuers ? kPursuer : kEvader;
    }
    for (uint32_t i = 0; i < cfg.pellets; ++i) {
        Entity e = ctx.create<Pellet>();
        if (!e.is_null()) place_randomly(rng, *ctx.get<Position>(e));
    }
}

/// Turns the action into acceleration; clears last step's reward.
ORRERY_SYSTEM void accelerate(Ctx& ctx, const Action& a, Velocity& v, Reward& r) {
    const Config& cfg = ctx.config<Config>();
    float ax = a.value == kRight ? 1.0f : a.value == kLeft ? -1.0f : 0.0f;
    float ay = a.value == kDown ? 1.0f : a.value == kUp ? -1.0f : 0.0f;
    v.x = v.x * cfg.drag + ax * cfg.accel;
    v.y = v.y * cfg.drag + ay * cfg.accel;
    r.value = 0.0f;
}

/// Moves by the velocity and bounces off the walls of the unit square.
ORRERY_SYSTEM void integrate(Ctx&, Position& p, Velocity& v) {
    p.x += v.x;
    p.y += v.y;
    if (p.x < 0.0f) {
        p.x = -p.x;
        v.x = -v.x;
    }
    if (p.x > 1.0f) {
        p.x = 2.0f - p.x;
        v.x = -v.x;
    }
    if (p.y < 0.0f) {
        p.y = -p.y;
        v.y = -v.y;
    }
    if (p.y > 1.0f) {
        p.y = 2.0f - p.y;
        v.y = -v.y;
    }
}

ORRERY_HD inline bool touching(const Position& a, const Position& b, float radius) {
    float dx = a.x - b.x, dy = a.y - b.y;
    return dx * dx + dy * dy < radius * radius;
}

/// A pursuer touching an evader scores; the evader respawns elsewhere.
ORRERY_SYSTEM void tag_evaders(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(2);
    Score& score = ctx.single<Arena, Score>();
    ctx.each<Agent>([&](Entity p) {
        if (ctx.get<Role>(p)->value != kPursuer) return;
        ctx.each<Agent>([&](Entity e) {
            if (ctx.get<Role>(e)->value != kEvader) return;
            if (!touching(*ctx.get<Position>(p), *ctx.get<Position>(e), cfg.radius)) return;
            ctx.get<Reward>(p)->value += 1.0f;
            ctx.get<Reward>(e)->value -= 1.0f;
            place_randomly(rng, *ctx.get<Position>(e));
            score.tags += 1;
        });
    });
}

/// Evaders eat pellets: the pellet is destroyed and a new one is created.
ORRERY_SYSTEM void eat_pellets(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(3);
    ctx.each<Pellet>([&](Entity pellet) {
        bool eaten = false;
        ctx.each<Agent>([&](Entity a) {
            if (eaten || ctx.get<Role>(a)->value != kEvader) return;
            if (!touching(*ctx.get<Position>(a), *ctx.get<Position>(pellet), cfg.radius)) return;
            ctx.get<Reward>(a)->value += 0.1f;
            eaten = true;
        });
        if (!eaten) return;
        ctx.destroy(pellet);
        Entity fresh = ctx.create<Pellet>();
        if (!fresh.is_null()) place_randomly(rng, *ctx.get<Position>(fresh));
    });
}

/// Ends the episode: terminated at the tag limit, truncated at the horizon.
ORRERY_SYSTEM void keep_time(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Score& score = ctx.single<Arena, Score>();
    score.steps += 1;
    if (score.tags >= cfg.tag_limit)
        ctx.terminate();
    else if (score.steps >= cfg.horizon)
        ctx.truncate();
}

/// Observation: own role, position, velocity; the nearest pellet relative to
/// us; then every other agent's relative position and velocity, in row order.
ORRERY_SYSTEM void observe(Ctx& ctx, const Position& p, const Velocity& v, const Role& r, Array<Obs> obs) {
    uint32_t k = 0;
    obs[k++] = float(r.value);
    obs[k++] = p.x;
    obs[k++] = p.y;
    obs[k++] = v.x;
    obs[k++] = v.y;
    float best = 4.0f, bx = 0.0f, by = 0.0f;
    ctx.each<Pellet>([&](Entity e) {
        const Position& q = *ctx.get<Position>(e);
        float dx = q.x - p.x, dy = q.y - p.y;
        if (dx * dx + dy * dy < best) {
            best = dx * dx + dy * dy;
            bx = dx;
            by = dy;
        }
    });
    obs[k++] = bx;
    obs[k++] = by;
    Entity me = ctx.self();
    ctx.each<Agent>([&](Entity e) {
        if (e.index == me.index) return;
        const Position& q = *ctx.get<Position>(e);
        const Velocity& u = *ctx.get<Velocity>(e);
        obs[k++] = q.x - p.x;
        obs[k++] = q.y - p.y;
        obs[k++] = u.x;
        obs[k++] = u.y;
    });
}

} // namespace tag
