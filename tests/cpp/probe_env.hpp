#pragma once
// A small env for engine tests: particles that systems create, move and
// destroy, plus a per-world log of which nodes ran in which order.

#include "engine/simulator.hpp"

namespace probe {
using namespace orrery;

struct Value {
    using Element = uint32_t;
    uint32_t v;
};
struct Spawned {
    uint32_t by_step;
};
struct Cmd {
    using Element = int32_t;
    int32_t value;
};
struct Log {
    uint32_t n;
    uint32_t order[15];
};
struct Wide : ArrayOf<uint16_t> {};

ORRERY_COMPONENTS(Value, Spawned, Cmd, Log, Wide);
ORRERY_ARCHETYPE(Particle, Value, Spawned);
ORRERY_ARCHETYPE(Controller, Cmd, Wide);
ORRERY_ARCHETYPE(Journal, Log);
ORRERY_ARCHETYPES(Particle, Controller, Journal);

inline constexpr uint32_t kParticles = 6;

ORRERY_HD inline void note(Ctx& ctx, uint32_t id) {
    Log& log = ctx.single<Journal, Log>();
    if (log.n < 15) log.order[log.n++] = id;
}

ORRERY_SYSTEM void spawn(Ctx& ctx) {
    for (uint32_t i = 0; i < 3; ++i) ctx.get<Value>(ctx.create<Particle>())->v = ctx.rng(7).below(1000) + i;
    ctx.create<Controller>();
    note(ctx, 100);
}
/// Cmd > 0: create that many particles; Cmd < 0: destroy the lowest-row particle.
ORRERY_SYSTEM void apply_cmd(Ctx& ctx, const Cmd& cmd, Array<Wide> wide) {
    wide[0] = uint16_t(wide[0] + 1);
    for (int32_t i = 0; i < cmd.value; ++i) {
        Entity e = ctx.create<Particle>();
        if (Spawned* s = ctx.get<Spawned>(e)) s->by_step = ctx.step() + 1;
    }
    if (cmd.value < 0) {
        bool done = false;
        ctx.each<Particle>([&](Entity e) {
            if (!done) done = ctx.destroy(e);
        });
    }
}
ORRERY_SYSTEM void bump(Ctx& ctx, Value& v) { v.v = v.v * 3u + ctx.rng(ctx.self().row()).below(7); }
ORRERY_SYSTEM void log_a(Ctx& ctx) { note(ctx, 1); }
ORRERY_SYSTEM void log_b(Ctx& ctx) { note(ctx, 2); }
ORRERY_SYSTEM void log_c(Ctx& ctx) { note(ctx, 3); }
ORRERY_SYSTEM void log_obs(Ctx& ctx) { note(ctx, 9); }
ORRERY_SYSTEM void end_at_five(Ctx& ctx) {
    if (ctx.step() + 1 >= 5) ctx.truncate();
}

inline EnvSpec make_spec(uint32_t particle_capacity = kParticles) {
    EnvSpec spec = ORRERY_ENV_SPEC("probe", "tests/cpp/probe_env.hpp");
    spec.dims<Wide>({2, 3});
    spec.archetype<Particle>(particle_capacity);
    spec.archetype<Controller>(1);
    spec.archetype<Journal>(1, true);
    spec.add(Phase::kInit, ORRERY_PER_WORLD(spawn));
    auto a = spec.add(Phase::kStep, ORRERY_PER_WORLD(log_a));
    auto cmd = spec.add(Phase::kStep, ORRERY_PER_ENTITY(apply_cmd), {a});
    auto b = spec.add(Phase::kStep, ORRERY_PER_ENTITY(bump), {cmd});
    auto c = spec.add(Phase::kStep, ORRERY_PER_WORLD(log_b), {a});
    spec.add(Phase::kStep, ORRERY_PER_WORLD(log_c), {b, c});
    spec.add(Phase::kStep, ORRERY_PER_WORLD(end_at_five));
    spec.add(Phase::kObserve, ORRERY_PER_WORLD(log_obs));
    spec.export_input<Controller, Cmd>("cmd");
    spec.input_range("cmd", -1, 3);
    spec.export_output<Particle, Value>("value");
    spec.export_output<Controller, Wide>("wide");
    return spec;
}

} // namespace probe
