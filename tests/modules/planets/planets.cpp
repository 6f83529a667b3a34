// The planets test env's registration table: orbit's assets and buffer
// capacity, the env's own archetypes, and a task graph whose lane nodes state
// what they wait for; two of its nodes keep step scratch.

#include "tests/modules/planets/planets.hpp"

#include "engine/env.hpp"

namespace planets {

orrery::EnvSpec make_spec(uint32_t planets, uint32_t moons, uint32_t hit_capacity, const std::string& root) {
    orrery::EnvSpec spec = ORRERY_ENV_SPEC("planets", "tests/modules/planets/planets.hpp");
    spec.set_header_root(root);
    Config cfg{planets, moons};
    spec.config(cfg);
    spec.asset<orbit::Settings>(std::vector<orbit::Params>{{0.05f, 0.3f, 0.98f, 0.0f}});
    spec.asset<orbit::Wells>(std::vector<orbit::Well>{{0.5f, 0.0f, 0.2f, 0}, {-0.5f, 0.25f, 0.1f, 0}});
    spec.capacity<orbit::Hits>(hit_capacity);
    spec.capacity<orbit::Gathered>(planets + moons);
    spec.dims<Obs>({4 * (planets + moons)});
    spec.dims<Trail>({4});
    spec.dims<Heat>({2 * (planets + moons)});
    spec.archetype<orbit::Contact>((planets + moons) * (planets + moons));
    spec.archetype<Planet>(planets);
    spec.archetype<Moon>(moons);
    spec.archetype<Sky>(1, /*singleton=*/true);

    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn));
    auto push = spec.add(orrery::Phase::kStep, ORRERY_PER_ENTITY_LANES(thrust), {});
    auto move = spec.add(orrery::Phase::kStep, ORRERY_PER_ENTITY_LANES(orbit::integrate), {push});
    auto find = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(contacts), {move});
    spec.scratch<orbit::Gathered>(find);
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(keep_score), {find});
    spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(observe));
    auto heat = spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_TEAM(spread_heat), {});
    spec.scratch<Heat>(heat);

    spec.export_input<Planet, Thrust>("thrust");
    spec.input_range("thrust", 0, 4);
    spec.export_output<Sky, Obs>("obs", orrery::Output::kRewrittenEachStep);
    spec.export_output<Sky, Warmth>("warmth");
    spec.export_output<Planet, orbit::Pos>("planet_position");
    spec.export_output<Moon, orbit::Pos>("moon_position");
    return spec;
}

} // namespace planets
