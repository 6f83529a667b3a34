#pragma once
// Orbit: a small reusable module for the engine's module tests. It owns its
// components (a Body bundle of position, velocity and inverse mass), an
// archetype of per-step contacts cleared in bulk, a per-world contact buffer,
// step scratch for its contact search, and shared read-only assets (its parameters and the gravity wells every
// world orbits). Any env composes it by listing orbit's lists first; its
// systems then run over every archetype that holds a Body.

#include "engine/ctx.hpp"

namespace orbit {
using namespace orrery;

struct Params {
    float dt, radius, damping, pad;
}; // one element: the module's options
struct Well {
    float x, y, strength, pad;
}; // a gravity well
struct Pos {
    using Element = float;
    float x, y;
}; // [worlds, rows, 2] f32
struct Vel {
    using Element = float;
    float x, y;
};
struct InvMass {
    float value;
};
struct Hit {
    Entity a, b;
    float dist2;
    uint32_t step;
}; // one contact, in the per-world buffer
struct Pair {
    Entity a, b;
}; // one contact, as an entity
struct Placed {
    Entity e;
    Pos p;
}; // a body as find_contacts gathers it
struct Settings : AssetOf<Params> {};
struct Wells : AssetOf<Well> {};
struct Hits : BufferOf<Hit> {};
/// find_contacts' step scratch (EnvSpec::scratch): the world's bodies, gathered.
struct Gathered : BufferOf<Placed> {};
static_assert(sizeof(Pos) == 8 && sizeof(Hit) == 24 && sizeof(Well) == 16);

ORRERY_COMPONENTS(Pos, Vel, InvMass, Pair, Settings, Wells, Hits, Gathered);
ORRERY_BUNDLE(Body, Pos, Vel, InvMass);
ORRERY_ARCHETYPE(Contact, Pair);
ORRERY_ARCHETYPES(Contact);

/// Pulls every body toward the wells (shared assets) and moves it: a lane
/// system, each call writes only its own entity.
ORRERY_SYSTEM void integrate(Ctx& ctx, Pos& p, Vel& v, const InvMass& m) {
    const Params prm = ctx.asset<Settings>()[0];
    Span<Well> wells = ctx.asset<Wells>();
    float ax = 0.0f, ay = 0.0f;
    for (uint32_t i = 0; i < wells.size; ++i) {
        const Well w = wells[i];
        float dx = w.x - p.x, dy = w.y - p.y;
        float d2 = dx * dx + dy * dy + 0.01f;
        ax += w.strength * dx / d2;
        ay += w.strength * dy / d2;
    }
    v.x = (v.x + ax * m.value * prm.dt) * prm.damping;
    v.y = (v.y + ay * m.value * prm.dt) * prm.damping;
    p.x += v.x * prm.dt;
    p.y += v.y * prm.dt;
}

/// Rebuilds the contacts of a world whose contact list is the buffer
/// component Hits of singleton archetype A: last step's Contact entities are
/// cleared in bulk, every body (any archetype with Pos) is gathered into the
/// node's step scratch Gathered (declared with EnvSpec::scratch, so a slot
/// another world used last: written before it is read), then every pair
/// closer than the radius becomes a Contact entity and a buffer entry. A full
/// buffer records ErrorCode::kBufferOverflow.
template <class A> ORRERY_HD void find_contacts(Ctx& ctx) {
    const Params prm = ctx.asset<Settings>()[0];
    Buffer<Hits> hits = ctx.single_buffer<A, Hits>();
    Buffer<Gathered> bodies = ctx.scratch_buffer<Gathered>();
    hits.clear();
    bodies.clear();
    ctx.clear<Contact>();
    ctx.each_with<Pos>([&](Entity e) { bodies.push(Placed{e, *ctx.get<Pos>(e)}); });
    for (uint32_t i = 0; i < bodies.size(); ++i)
        for (uint32_t j = i + 1; j < bodies.size(); ++j) {
            const Placed a = bodies[i], b = bodies[j];
            float dx = a.p.x - b.p.x, dy = a.p.y - b.p.y;
            float d2 = dx * dx + dy * dy;
            if (d2 >= prm.radius * prm.radius) continue;
            hits.push(Hit{a.e, b.e, d2, ctx.step()});
            Entity c = ctx.create<Contact>();
            if (Pair* pair = ctx.get<Pair>(c)) *pair = Pair{a.e, b.e};
        }
}

} // namespace orbit
