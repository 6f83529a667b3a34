#pragma once
// Reach: a single-agent env kept outside the Orrery tree (docs/writing-an-env.md,
// "An env outside the tree"). One agent walks a unit square to a goal; reaching
// it ends the episode. Components and systems only: g++ compiles this file into
// the plugin for the CPU, and NVRTC compiles it at run time for the GPU, read
// from the plugin's folder.

#include "engine/ctx.hpp"

namespace reach {
using namespace orrery;

enum : int32_t { kNoop = 0, kUp = 1, kDown = 2, kLeft = 3, kRight = 4, kNumActions = 5 };

struct Config {
    uint32_t horizon;
    float speed, radius;
};

struct Position {
    using Element = float;
    float x, y;
}; // [worlds, 2] f32
struct Action {
    using Element = int32_t;
    int32_t value;
}; // [worlds] i32, input 0..4
struct Reward {
    using Element = float;
    float value;
}; // [worlds] f32
struct Obs {
    using Element = float;
    float v[4];
}; // [worlds, 4] f32: x, y, goal - position
struct Clock {
    uint32_t steps;
};
static_assert(sizeof(Position) == 8 && sizeof(Obs) == 16 && sizeof(Clock) == 4);

ORRERY_COMPONENTS(Position, Action, Reward, Obs, Clock);
// A single-agent env: the agent is a singleton (one row per world, always
// live), so its exported tensors are per world, with no agent axis.
ORRERY_ARCHETYPE(Agent, Position, Action, Reward, Obs, Clock);
ORRERY_ARCHETYPE(Goal, Position);
ORRERY_ARCHETYPES(Agent, Goal);

/// Init: the agent and a goal at random places.
ORRERY_SYSTEM void spawn(Ctx& ctx) {
    Rng rng = ctx.rng(1);
    ctx.single<Agent, Position>() = {rng.uniform(), rng.uniform()};
    ctx.single<Agent, Clock>().steps = 0;
    Entity goal = ctx.create<Goal>();
    if (!goal.is_null()) *ctx.get<Position>(goal) = {rng.uniform(), rng.uniform()};
}

/// The action moves the agent one step, kept inside the square; +1 and the
/// end of the episode at the goal, a small cost per step before it.
ORRERY_SYSTEM void walk(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    const int32_t a = ctx.single<Agent, Action>().value;
    Position& p = ctx.single<Agent, Position>();
    p.x += a == kRight ? cfg.speed : a == kLeft ? -cfg.speed : 0.0f;
    p.y += a == kDown ? cfg.speed : a == kUp ? -cfg.speed : 0.0f;
    p.x = p.x < 0.0f ? 0.0f : p.x > 1.0f ? 1.0f : p.x;
    p.y = p.y < 0.0f ? 0.0f : p.y > 1.0f ? 1.0f : p.y;
    const Position& g = ctx.at<Goal, Position>(0);
    const float dx = g.x - p.x, dy = g.y - p.y;
    const bool reached = dx * dx + dy * dy < cfg.radius * cfg.radius;
    ctx.single<Agent, Reward>().value = reached ? 1.0f : -0.01f;
    Clock& clock = ctx.single<Agent, Clock>();
    clock.steps += 1;
    if (reached)
        ctx.terminate();
    else if (clock.steps >= cfg.horizon)
        ctx.truncate();
}

/// Observation: own position, then the goal relative to it.
ORRERY_SYSTEM void observe(Ctx& ctx) {
    const Position& p = ctx.single<Agent, Position>();
    const Position& g = ctx.at<Goal, Position>(0);
    ctx.single<Agent, Obs>() = {{p.x, p.y, g.x - p.x, g.y - p.y}};
}

} // namespace reach
