// The tutorial env's rules: tagging, pellets (destroy + create inside a step),
// walls, episode ends and the observation layout.

#include <gtest/gtest.h>

#include <cstring>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "envs/tutorial/tag.hpp"

namespace {
using namespace orrery;
using namespace tag;

Simulator make(EnvOptions env = {}, uint32_t worlds = 1) {
    register_builtin_envs();
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = 1;
    return Simulator(make_env_spec("tag", env), o);
}

Entity agent(Ctx& ctx, uint32_t row) {
    return Entity::make(archetype_id<Agent>, row,
                        ctx.storage().tables[0].generation[ctx.slot(ctx.storage().tables[0], row)]);
}

/// Puts every agent and pellet far apart and at rest, so nothing touches by accident.
void spread_out(Ctx& ctx) {
    uint32_t i = 0;
    ctx.each<Agent>([&](Entity e) {
        *ctx.get<Position>(e) = {0.1f + 0.2f * float(i), 0.9f};
        *ctx.get<Velocity>(e) = {0.0f, 0.0f};
        ++i;
    });
    uint32_t k = 0;
    ctx.each<Pellet>([&](Entity e) { *ctx.get<Position>(e) = {0.1f + 0.2f * float(k++), 0.1f}; });
}

float reward(Simulator& sim, uint32_t agent_row) { return static_cast<float*>(sim.tensor("reward").data)[agent_row]; }

TEST(Tag, PursuerTouchingEvaderScoresAndEvaderRespawns) {
    Simulator sim = make({{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "1"}});
    sim.edit_world(0, [&](Ctx& ctx) {
        spread_out(ctx);
        *ctx.get<Position>(agent(ctx, 0)) = {0.5f, 0.5f};
        *ctx.get<Position>(agent(ctx, 1)) = {0.52f, 0.5f};
    });
    sim.step(); // actions are zero: no acceleration
    EXPECT_FLOAT_EQ(reward(sim, 0), 1.0f);
    EXPECT_FLOAT_EQ(reward(sim, 1), -1.0f);
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_EQ((ctx.single<Arena, Score>().tags), 1u);
        Position e = *ctx.get<Position>(agent(ctx, 1));
        EXPECT_FALSE(e.x == 0.52f && e.y == 0.5f); // moved to a random place
    });
    sim.step();
    EXPECT_FLOAT_EQ(reward(sim, 0), 0.0f) << "rewards are per step";
}

TEST(Tag, EatenPelletIsDestroyedAndANewOneCreated) {
    Simulator sim = make({{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "2"}});
    Entity eaten{};
    sim.edit_world(0, [&](Ctx& ctx) {
        spread_out(ctx);
        ctx.each<Pellet>([&](Entity e) {
            if (eaten.is_null()) eaten = e;
        });
        *ctx.get<Position>(eaten) = *ctx.get<Position>(agent(ctx, 1));
    });
    sim.step();
    EXPECT_FLOAT_EQ(reward(sim, 1), 0.1f);
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_FALSE(ctx.valid(eaten));
        EXPECT_EQ(ctx.count<Pellet>(), 2u);
    });
    EXPECT_NO_THROW(sim.check_errors());
}

TEST(Tag, AgentsBounceOffWalls) {
    Simulator sim = make({{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "0"}});
    sim.edit_world(0, [&](Ctx& ctx) {
        spread_out(ctx);
        *ctx.get<Position>(agent(ctx, 0)) = {0.995f, 0.5f};
        *ctx.get<Velocity>(agent(ctx, 0)) = {0.02f, 0.0f};
    });
    sim.step();
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_LE(ctx.get<Position>(agent(ctx, 0))->x, 1.0f);
        EXPECT_LT(ctx.get<Velocity>(agent(ctx, 0))->x, 0.0f);
    });
}

TEST(Tag, TagLimitTerminatesAndHorizonTruncates) {
    Simulator sim = make({{"pursuers", "1"}, {"evaders", "1"}, {"tag_limit", "1"}, {"horizon", "50"}});
    sim.edit_world(0, [&](Ctx& ctx) {
        spread_out(ctx);
        *ctx.get<Position>(agent(ctx, 1)) = *ctx.get<Position>(agent(ctx, 0));
    });
    sim.step();
    EXPECT_EQ(static_cast<uint8_t*>(sim.tensor("terminated").data)[0], 1);
    EXPECT_EQ(static_cast<uint8_t*>(sim.tensor("truncated").data)[0], 0);

    Simulator h = make({{"horizon", "3"}, {"tag_limit", "1000"}});
    for (int i = 0; i < 2; ++i) h.step();
    EXPECT_EQ(static_cast<uint8_t*>(h.tensor("truncated").data)[0], 0);
    h.step();
    EXPECT_EQ(static_cast<uint8_t*>(h.tensor("truncated").data)[0], 1);
}

TEST(Tag, ObservationLayout) {
    Simulator sim = make({{"pursuers", "2"}, {"evaders", "1"}, {"pellets", "1"}});
    sim.edit_world(0, [&](Ctx& ctx) { spread_out(ctx); });
    sim.step();
    const TensorView& obs = sim.tensor("obs");
    ASSERT_EQ(obs.shape, (std::vector<int64_t>{1, 3, 7 + 4 * 2}));
    const float* o = static_cast<const float*>(obs.data) + 2 * 15; // the evader
    sim.read_world(0, [&](Ctx& ctx) {
        Position me = *ctx.get<Position>(agent(ctx, 2));
        EXPECT_EQ(o[0], float(kEvader));
        EXPECT_EQ(o[1], me.x);
        EXPECT_EQ(o[2], me.y);
        Position other = *ctx.get<Position>(agent(ctx, 0));
        EXPECT_EQ(o[7], other.x - me.x); // first other agent: row 0
        Position pellet{};
        ctx.each<Pellet>([&](Entity e) { pellet = *ctx.get<Position>(e); });
        EXPECT_EQ(o[5], pellet.x - me.x);
    });
}

} // namespace

// accelerate, integrate and observe are per-entity lane systems: the GPU may run
// a world's agents on several threads at once. Run on the CPU as 1, 3 and 16
// lanes, every output must be the same bytes every step, with tags and pellets
// eaten along the way.
TEST(Tag, OutputsDoNotDependOnTheLaneCount) {
    orrery::register_builtin_envs();
    std::vector<std::unique_ptr<Simulator>> sims;
    for (uint32_t lanes : {1u, 3u, 16u}) {
        SimOptions o;
        o.num_worlds = 8;
        o.threads = 1;
        o.cpu_lanes = lanes;
        o.random_inputs = true;
        sims.push_back(std::make_unique<Simulator>(
            make_env_spec("tag", {{"pursuers", "3"}, {"evaders", "4"}, {"pellets", "12"}}), o));
        sims.back()->reset(11);
    }
    uint32_t tags = 0;
    for (int step = 0; step < 400; ++step) {
        for (auto& sim : sims) sim->step();
        for (const char* name : {"obs", "reward", "position"}) {
            const orrery::TensorView& want = sims[0]->tensor(name);
            for (size_t k = 1; k < sims.size(); ++k)
                ASSERT_EQ(0, std::memcmp(want.data, sims[k]->tensor(name).data, want.bytes()))
                    << name << ", lanes run " << k << ", step " << step;
        }
        const float* reward = static_cast<const float*>(sims[0]->tensor("reward").data);
        for (uint32_t i = 0; i < 8 * 7; ++i) tags += reward[i] >= 1.0f;
    }
    EXPECT_GT(tags, 0u); // pursuers did tag evaders: the reward path ran
}
