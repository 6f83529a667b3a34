// Reach's registration table, its draw table, and the plugin entry that
// registers it with the Orrery process loading this library.

#include "reach.hpp"

#include "engine/plugin.hpp"
#include "envs/options.hpp"

namespace reach {

orrery::EnvSpec make_spec(const orrery::EnvOptions& options) {
    orrery::OptionReader opt("reach", options);
    Config cfg{};
    cfg.horizon = opt.u32("horizon", 100, 1, 1u << 20);
    cfg.speed = 0.05f;
    cfg.radius = 0.08f;
    opt.finish();

    // The header path is relative to the plugin's folder, where
    // orrery_add_plugin copies its HEADERS: NVRTC reads it from there.
    orrery::EnvSpec spec = ORRERY_ENV_SPEC("reach", "reach.hpp");
    spec.archetype<Agent>(1, /*singleton=*/true);
    spec.archetype<Goal>(1);
    spec.config(cfg);
    opt.record(spec);

    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn));
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(walk));
    spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD(observe));

    // The draw table: what `orrery view` and render() show, as data.
    using orrery::Shape;
    spec.draw.bounds = {0.0f, 0.0f, 1.0f, 1.0f};
    spec.draw.entity<Goal>()
        .at(orrery::field(&Position::x), orrery::field(&Position::y))
        .style({Shape::kRing, {90, 200, 90, 255}, 2 * cfg.radius, "goal"});
    spec.draw.entity<Agent>()
        .at(orrery::field(&Position::x), orrery::field(&Position::y))
        .style({Shape::kCircle, {60, 110, 230, 255}, 0.05f, "agent"});
    spec.draw.keys = {{orrery::Key::kNoop, kNoop},
                      {orrery::Key::kUp, kUp},
                      {orrery::Key::kDown, kDown},
                      {orrery::Key::kLeft, kLeft},
                      {orrery::Key::kRight, kRight}};

    // What the tensors mean, for the Python adapters and the viewer's labels.
    spec.facts.reward = orrery::RewardMode::kPerAgent;
    spec.facts.action_meanings = {"noop", "up", "down", "left", "right"};
    spec.facts.obs_names = {"x", "y", "goal_dx", "goal_dy"};

    spec.export_input<Agent, Action>("action");
    spec.input_range("action", 0, kNumActions - 1);
    spec.export_output<Agent, Obs>("obs", orrery::Output::kRewrittenEachStep);
    spec.export_output<Agent, Reward>("reward");
    spec.export_output<Agent, Position>("position");
    return spec;
}

} // namespace reach

ORRERY_PLUGIN(registry) {
    registry.add("reach", reach::make_spec, "example out-of-tree env: one agent walks to a goal (2-D)");
}
