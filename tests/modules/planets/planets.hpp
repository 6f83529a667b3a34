#pragma once
// Planets: the test env that composes the orbit module (tests/modules/orbit)
// with components of its own. Planets and moons are both orbit bodies; the
// world keeps a score and orbit's contact buffer. Its observation is written
// by a per-world lane system.

#include "tests/modules/orbit/orbit.hpp"

namespace planets {
using namespace orrery;

struct Config {
    uint32_t planets, moons;
};
struct Kind {
    using Element = int32_t;
    int32_t value;
}; // [worlds, planets, 1] i32
struct Thrust {
    using Element = int32_t;
    int32_t value;
}; // [worlds, planets, 1] i32, input 0..4
struct Score {
    uint32_t contacts, steps;
};
struct Obs : ArrayOf<float> {};        // [worlds, 1, 4 * (planets + moons)] f32
struct Trail : ArrayOf<orbit::Pos> {}; // per planet: its last 4 positions (structs)
/// spread_heat's step scratch (EnvSpec::scratch): two halves of 2 * (planets
/// + moons) cells, one read while the other is written.
struct Heat : ArrayOf<float> {};
struct Warmth { // [worlds, 1, 1] f32
    using Element = float;
    float total;
};

ORRERY_COMPONENTS(orbit::OrreryComponents, Kind, Thrust, Score, Obs, Trail, Heat, Warmth);
ORRERY_ARCHETYPE(Planet, orbit::Body, Kind, Thrust, Trail);
ORRERY_ARCHETYPE(Moon, orbit::Body, Kind);
ORRERY_ARCHETYPE(Sky, Score, Obs, orbit::Hits, Warmth);
ORRERY_ARCHETYPES(orbit::OrreryArchetypes, Planet, Moon, Sky);

ORRERY_SYSTEM void spawn(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(1);
    for (uint32_t i = 0; i < cfg.planets + cfg.moons; ++i) {
        Entity e = i < cfg.planets ? ctx.create<Planet>() : ctx.create<Moon>();
        if (e.is_null()) return;
        *ctx.get<orbit::Pos>(e) = {rng.uniform() * 2.0f - 1.0f, rng.uniform() * 2.0f - 1.0f};
        *ctx.get<orbit::Vel>(e) = {rng.uniform() - 0.5f, rng.uniform() - 0.5f};
        ctx.get<orbit::InvMass>(e)->value = i < cfg.planets ? 1.0f : 4.0f;
        ctx.get<Kind>(e)->value = i < cfg.planets ? 0 : 1;
    }
}

/// Planets fire thrusters (the action) and remember where they were.
ORRERY_SYSTEM void thrust(Ctx&, const Thrust& t, orbit::Vel& v, const orbit::Pos& p, Array<Trail> trail) {
    v.x += t.value == 1 ? 0.05f : t.value == 2 ? -0.05f : 0.0f;
    v.y += t.value == 3 ? 0.05f : t.value == 4 ? -0.05f : 0.0f;
    for (uint32_t i = trail.size - 1; i > 0; --i) trail[i] = trail[i - 1];
    trail[0] = p;
}

ORRERY_SYSTEM void contacts(Ctx& ctx) { orbit::find_contacts<Sky>(ctx); }

ORRERY_SYSTEM void keep_score(Ctx& ctx) {
    Score& s = ctx.single<Sky, Score>();
    s.contacts += ctx.count<orbit::Contact>();
    s.steps += 1;
    if (s.steps >= 50) ctx.truncate();
}

/// Every body's position and velocity, a lane per body slot.
ORRERY_SYSTEM void observe(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    Array<Obs> obs = ctx.array_at<Obs>(archetype_id<Sky>, 0);
    uint32_t i = 0;
    ctx.each_with<orbit::Pos, orbit::Vel>([&](Entity e) {
        if (i % lanes == lane && 4 * i + 3 < obs.size) {
            obs[4 * i] = ctx.get<orbit::Pos>(e)->x;
            obs[4 * i + 1] = ctx.get<orbit::Pos>(e)->y;
            obs[4 * i + 2] = ctx.get<orbit::Vel>(e)->x;
            obs[4 * i + 3] = ctx.get<orbit::Vel>(e)->y;
        }
        ++i;
    });
}

/// A team system (its lanes meet at syncs): each body's speed seeds a ring
/// of cells, a few rounds spread each cell into its neighbours (every round
/// reads what other lanes wrote in the last), and lane 0 sums the ring. The
/// ring is the node's step scratch: one slot the team shares, every cell
/// written before it is read.
ORRERY_SYSTEM void spread_heat(Ctx& ctx, const Lanes& l) {
    Array<Heat> heat = ctx.scratch_array<Heat>();
    const uint32_t n = heat.size / 2;
    uint32_t i = 0;
    ctx.each_with<orbit::Pos, orbit::Vel>([&](Entity e) {
        const orbit::Vel v = *ctx.get<orbit::Vel>(e);
        if (i % l.count == l.lane && i < n) heat[i] = v.x * v.x + v.y * v.y;
        ++i;
    });
    for (uint32_t k = i + l.lane; k < n; k += l.count) heat[k] = 0.0f;
    l.sync();
    const uint32_t rounds = 2 + ctx.step() % 3;
    for (uint32_t r = 0; r < rounds; ++r) {
        const float* from = &heat[(r % 2) * n];
        float* to = &heat[((r + 1) % 2) * n];
        for (uint32_t k = l.lane; k < n; k += l.count)
            to[k] = 0.5f * from[k] + 0.25f * (from[(k + n - 1) % n] + from[(k + 1) % n]) + 0.01f * float(k);
        l.sync();
    }
    if (l.lane != 0) return;
    // A cost hint that changes with the world and the step, so a GPU that
    // orders this node's teams (EnvSpec::order_teams) reorders them every step.
    ctx.cost_hint((ctx.world() * 2654435761u + ctx.step() * 40503u) >> 24);
    float total = 0.0f;
    for (uint32_t k = 0; k < n; ++k) total += heat[(rounds % 2) * n + k] * float(k + 1);
    ctx.single<Sky, Warmth>().total = total;
}

} // namespace planets
