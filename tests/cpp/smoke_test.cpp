#include <gtest/gtest.h>
#include "engine/simulator.hpp"
#include "envs/registry.hpp"
TEST(Smoke, TagSteps) {
    orrery::register_builtin_envs();
    orrery::SimOptions o; o.num_worlds = 4; o.threads = 2;
    orrery::Simulator sim(orrery::make_env_spec("tag", {}), o);
    for (int i = 0; i < 10; ++i) sim.step();
    sim.check_errors();
    EXPECT_EQ(sim.tensor("obs").shape[2], 7 + 4 * 3);
}
