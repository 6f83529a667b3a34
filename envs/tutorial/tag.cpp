// Tag's registration table: sizes, config, task graph and exported tensors.

#include "envs/tutorial/tag.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "engine/env.hpp"
#include "envs/options.hpp"

namespace tag {

namespace {
bool finite(const Position& p) { return std::isfinite(p.x) && std::isfinite(p.y); }

/// Checks one world's fields in a host copy (a snapshot or checkpoint being
/// loaded): the agents spawn made, in their rows and roles, at finite places.
void validate_arena(const orrery::Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t agents = cfg.pursuers + cfg.evaders;
    const orrery::ArchetypeTable& t = ctx.storage().tables[orrery::archetype_id<Agent>];
    for (uint32_t i = 0; i < agents; ++i) {
        const std::string row = "Agent row " + std::to_string(i);
        if (!t.alive[ctx.slot(t, i)])
            throw orrery::Error(row + ": not alive; expected all " + std::to_string(agents) + " agents alive");
        int32_t role = ctx.at<Agent, Role>(i).value, want = i < cfg.pursuers ? kPursuer : kEvader;
        if (role != want)
            throw orrery::Error(row + ": Role = " + std::to_string(role) + "; expected " + std::to_string(want) +
                                " (pursuers first, then evaders)");
        const Velocity& v = ctx.at<Agent, Velocity>(i);
        if (!finite(ctx.at<Agent, Position>(i)) || !std::isfinite(v.x) || !std::isfinite(v.y))
            throw orrery::Error(row + ": Position or Velocity is not finite; expected finite numbers");
    }
    ctx.each<Pellet>([&](orrery::Entity e) {
        if (!finite(*ctx.get<Position>(e)))
            throw orrery::Error("Pellet row " + std::to_string(e.row()) +
                                ": Position is not finite; expected finite numbers");
    });
}
} // namespace

orrery::EnvSpec make_spec(const orrery::EnvOptions& options) {
    orrery::OptionReader opt("tag", options);
    Config cfg{};
    cfg.pursuers = opt.u32("pursuers", 2, 1, 64);
    cfg.evaders = opt.u32("evaders", 2, 1, 64);
    cfg.pellets = opt.u32("pellets", 4, 0, 256);
    cfg.horizon = opt.u32("horizon", 200, 1, 1u << 30);
    cfg.tag_limit = opt.u32("tag_limit", 10, 1, 1u << 30);
    cfg.accel = 0.01f;
    cfg.drag = 0.9f;
    cfg.radius = 0.05f;
    opt.finish();
    uint32_t agents = cfg.pursuers + cfg.evaders;

    orrery::EnvSpec spec = ORRERY_ENV_SPEC("tag", "envs/tutorial/tag.hpp");
    spec.dims<Obs>({7 + 4 * (agents - 1)});
    spec.archetype<Agent>(agents);
    spec.archetype<Pellet>(2 * cfg.pellets + 1); // eaten pellets free their rows at the barrier
    spec.archetype<Arena>(1, /*singleton=*/true);
    spec.config(cfg);
    opt.record(spec);
    spec.validate_world = validate_arena;

    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn));
    // Per-entity lane systems: each writes only its own agent, so the GPU may
    // run one world's agents on several threads at once.
    auto accel = spec.add(orrery::Phase::kStep, ORRERY_PER_ENTITY_LANES(accelerate));
    auto move = spec.add(orrery::Phase::kStep, ORRERY_PER_ENTITY_LANES(integrate), {accel});
    auto tags = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(tag_evaders), {move});
    auto eat = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(eat_pellets), {move});
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(keep_time), {tags, eat});
    spec.add(orrery::Phase::kObserve, ORRERY_PER_ENTITY_LANES(observe));

    // What the viewer draws: pursuers red, evaders blue, pellets small and green.
    using orrery::Shape;
    spec.draw.bounds = {0.0f, 0.0f, 1.0f, 1.0f};
    spec.draw.entity<Pellet>()
        .at(orrery::field(&Position::x), orrery::field(&Position::y))
        .style({Shape::kCircle, {90, 200, 90, 255}, 0.03f, ""});
    spec.draw.entity<Agent>()
        .at(orrery::field(&Position::x), orrery::field(&Position::y))
        .style_of(orrery::field(&Role::value),
                  orrery::Palette()
                      .set(kPursuer, {Shape::kCircle, {220, 60, 50, 255}, 2 * cfg.radius, "#"})
                      .set(kEvader, {Shape::kCircle, {60, 110, 230, 255}, 2 * cfg.radius, "#"}));
    spec.draw.keys = {{orrery::Key::kNoop, kNoop},
                      {orrery::Key::kUp, kUp},
                      {orrery::Key::kDown, kDown},
                      {orrery::Key::kLeft, kLeft},
                      {orrery::Key::kRight, kRight}};

    // What the tensors mean: each agent's own reward (+1 / -1 for a tag), the
    // actions' names, and observe()'s entries with their bounds (positions stay
    // in the unit square, so offsets are in [-1, 1]; speeds are unbounded).
    const float inf = std::numeric_limits<float>::infinity();
    spec.facts.reward = orrery::RewardMode::kPerAgent;
    spec.facts.action_meanings = {"noop", "up", "down", "left", "right"};
    spec.facts.obs_names = {"role", "x", "y", "vx", "vy", "pellet_dx", "pellet_dy"};
    spec.facts.obs_low = {0, 0, 0, -inf, -inf, -1, -1};
    spec.facts.obs_high = {1, 1, 1, inf, inf, 1, 1};
    for (uint32_t k = 0; k + 1 < agents; ++k) {
        for (const char* f : {"dx", "dy", "vx", "vy"})
            spec.facts.obs_names.push_back("other" + std::to_string(k) + "_" + f);
        spec.facts.obs_low.insert(spec.facts.obs_low.end(), {-1, -1, -inf, -inf});
        spec.facts.obs_high.insert(spec.facts.obs_high.end(), {1, 1, inf, inf});
    }
    // The inspector's names of each component's elements (the observation's are observe()'s).
    spec.draw.name_elements<Position>({"x", "y"});
    spec.draw.name_elements<Velocity>({"vx", "vy"});
    spec.draw.name_elements<Role>({"role (0 pursuer, 1 evader)"});
    spec.draw.name_elements<Action>({"action (0 noop, 1 up, 2 down, 3 left, 4 right)"});
    spec.draw.name_elements<Reward>({"reward"});
    spec.draw.name_elements<Obs>(spec.facts.obs_names);
    spec.draw.name_elements<Score>({"tags", "steps"});

    spec.export_input<Agent, Action>("action");
    spec.input_range("action", 0, kNumActions - 1);
    spec.export_output<Agent, Obs>("obs");
    spec.export_output<Agent, Reward>("reward");
    spec.export_output<Agent, Position>("position");
    spec.export_output<Agent, Role>("role");
    return spec;
}

} // namespace tag
