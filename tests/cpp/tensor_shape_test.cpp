// TensorView::user_shape, the one place the shape users see is computed (the
// Python package views every tensor with it): [worlds], then rows unless the
// archetype is a singleton, then dims unless the component is one scalar.

#include <gtest/gtest.h>

#include <vector>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {

using Shape = std::vector<int64_t>;

TEST(UserShape, TagDropsTheScalarDimAndKeepsArrays) {
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.num_worlds = 3;
    o.threads = 1;
    orrery::Simulator sim(orrery::make_env_spec("tag", {}), o);
    EXPECT_EQ(sim.tensor("obs").user_shape, (Shape{3, 4, 19}));
    EXPECT_EQ(sim.tensor("obs").shape, (Shape{3, 4, 19}));
    EXPECT_EQ(sim.tensor("reward").user_shape, (Shape{3, 4}));
    EXPECT_EQ(sim.tensor("reward").shape, (Shape{3, 4, 1}));
    EXPECT_EQ(sim.tensor("terminated").user_shape, (Shape{3}));
    EXPECT_EQ(sim.tensor("errors").user_shape, (Shape{3}));
}

TEST(UserShape, EveryEnvFollowsTheRuleAndCoversTheSameBytes) {
    orrery::register_builtin_envs();
    for (const auto& [env, summary] : orrery::registered_envs()) {
        orrery::SimOptions o;
        o.num_worlds = 2;
        o.threads = 1;
        o.autoreset = orrery::AutoReset::kSameStep; // final_<name> tensors too
        orrery::Simulator sim(orrery::make_env_spec(env, {}), o);
        const orrery::EnvSpec& spec = sim.spec();
        for (const orrery::TensorView& t : sim.tensors()) {
            int64_t shape_elems = 1, user_elems = 1;
            for (int64_t d : t.shape) shape_elems *= d;
            for (int64_t d : t.user_shape) user_elems *= d;
            EXPECT_EQ(shape_elems, user_elems) << env << " " << t.name;
            std::string base = t.name.rfind("final_", 0) == 0 ? t.name.substr(6) : t.name;
            Shape want = {2};
            for (const orrery::ExportSpec& e : spec.exports()) {
                if (e.name != base) continue;
                const orrery::ArchetypeSpec& a = spec.archetype_specs()[e.archetype];
                const orrery::ComponentSpec& c = spec.component_specs()[e.component];
                if (!a.singleton) want.push_back(a.capacity);
                if (!(c.dims.size() == 1 && c.dims[0] == 1)) want.insert(want.end(), c.dims.begin(), c.dims.end());
            }
            EXPECT_EQ(t.user_shape, want) << env << " " << t.name;
        }
    }
}

} // namespace
