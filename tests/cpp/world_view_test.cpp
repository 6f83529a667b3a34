// Lagging world views (Simulator::request_world_view / poll_world_view and the
// Backend snapshot calls beneath them) on the CPU backend: a view holds exactly
// the bytes read_world sees at the step it claims, one request is pending at a
// time, and a bad world index is a clear error that changes nothing.

#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {
using namespace orrery;

Simulator make_sim(const std::string& env, uint32_t worlds) {
    register_builtin_envs();
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = 2;
    return Simulator(make_env_spec(env, {}), o);
}

/// Every region of the one world a Ctx views, byte for byte (the layout of WorldSnapshot).
std::vector<uint8_t> bytes_of(const Simulator& sim, const Ctx& ctx) {
    StorageLayout one = make_layout(sim.spec(), 1, sim.options().autoreset);
    std::vector<uint8_t> out;
    for (const Region& r : one.regions(ctx.storage())) out.insert(out.end(), r.base, r.base + r.bytes_per_world);
    return out;
}

/// Steps `n` times with fresh random actions from `rng`.
void step_n(Simulator& sim, uint32_t n, uint64_t& rng) {
    for (uint32_t i = 0; i < n; ++i) {
        std::vector<std::vector<uint8_t>> values = random_inputs(sim, rng);
        size_t k = 0;
        for (const auto& [name, range] : sim.spec().input_ranges()) {
            const TensorView& t = sim.tensor(name);
            sim.backend().copy_from_host(t.data, values[k].data(), values[k].size());
            ++k;
        }
        sim.step();
    }
}

struct Seen {
    bool called = false;
    LaggedView view;
    std::vector<uint8_t> bytes;
};

Seen poll(Simulator& sim) {
    Seen s;
    bool shown = sim.poll_world_view([&](Ctx& ctx, const LaggedView& v) {
        s.called = true;
        s.view = v;
        s.bytes = bytes_of(sim, ctx);
    });
    EXPECT_EQ(shown, s.called);
    return s;
}

TEST(WorldView, EqualsReadWorldAfterSteps) {
    for (const char* env : {"tag", "overcooked"}) {
        SCOPED_TRACE(env);
        Simulator sim = make_sim(env, 6);
        sim.reset(3);
        uint64_t rng = 0x9E3779B97F4A7C15ull;
        for (uint32_t round = 0; round < 5; ++round) {
            step_n(sim, 7 + round, rng);
            uint32_t world = (round * 2 + 1) % sim.num_worlds();
            std::vector<uint8_t> want;
            sim.read_world(world, [&](Ctx& ctx) { want = bytes_of(sim, ctx); });
            ASSERT_EQ(want, sim.save_world(world).bytes); // the helper reads what a snapshot holds
            ASSERT_TRUE(sim.request_world_view(world));
            Seen got = poll(sim);
            ASSERT_TRUE(got.called);
            EXPECT_TRUE(got.view.fresh);
            EXPECT_EQ(got.view.world, world);
            EXPECT_EQ(got.view.step, sim.steps_taken());
            EXPECT_EQ(got.view.lag, 0u);
            EXPECT_EQ(got.bytes, want) << "round " << round;
        }
    }
}

TEST(WorldView, ShowsTheStepItWasRequestedAtAndItsLag) {
    Simulator sim = make_sim("overcooked", 4);
    sim.reset(11);
    uint64_t rng = 42;
    step_n(sim, 20, rng);
    std::vector<uint8_t> at20 = sim.save_world(2).bytes;
    ASSERT_TRUE(sim.request_world_view(2));
    step_n(sim, 3, rng);
    ASSERT_NE(sim.save_world(2).bytes, at20) << "three steps should change the world";
    Seen got = poll(sim);
    ASSERT_TRUE(got.called);
    EXPECT_EQ(got.view.step, 20u);
    EXPECT_EQ(got.view.lag, 3u);
    EXPECT_TRUE(got.view.fresh);
    EXPECT_EQ(got.bytes, at20);
    // Polled again with nothing requested: the same view, no longer fresh, lag grown.
    step_n(sim, 2, rng);
    Seen again = poll(sim);
    ASSERT_TRUE(again.called);
    EXPECT_FALSE(again.view.fresh);
    EXPECT_EQ(again.view.step, 20u);
    EXPECT_EQ(again.view.lag, 5u);
    EXPECT_EQ(again.bytes, at20);
}

TEST(WorldView, OneRequestPendingAtATime) {
    Simulator sim = make_sim("tag", 4);
    uint64_t rng = 5;
    EXPECT_FALSE(poll(sim).called) << "nothing requested, nothing landed";
    step_n(sim, 4, rng);
    std::vector<uint8_t> world1 = sim.save_world(1).bytes;
    ASSERT_TRUE(sim.request_world_view(1));
    EXPECT_FALSE(sim.request_world_view(3)) << "a second request while one is pending is refused";
    Seen got = poll(sim);
    ASSERT_TRUE(got.called);
    EXPECT_EQ(got.view.world, 1u) << "the refused request did not replace the pending one";
    EXPECT_EQ(got.bytes, world1);
    ASSERT_TRUE(sim.request_world_view(3)) << "collected: the next request is accepted";
    got = poll(sim);
    EXPECT_EQ(got.view.world, 3u);
    EXPECT_EQ(got.bytes, sim.save_world(3).bytes);
}

TEST(WorldView, ReadAndEditOfOtherWorldsLeaveAShownViewAlone) {
    Simulator sim = make_sim("overcooked", 3);
    uint64_t rng = 77;
    step_n(sim, 6, rng);
    std::vector<uint8_t> world0 = sim.save_world(0).bytes;
    ASSERT_TRUE(sim.request_world_view(0));
    ASSERT_EQ(poll(sim).bytes, world0);
    // read_world and edit_world share the one-world scratch storage with views.
    sim.read_world(2, [](Ctx&) {});
    sim.edit_world(1, [](Ctx&) {});
    sim.copy_world(2, 0); // changes world 0 after its view was taken
    ASSERT_NE(sim.save_world(0).bytes, world0);
    Seen again = poll(sim);
    EXPECT_FALSE(again.view.fresh);
    EXPECT_EQ(again.bytes, world0);
}

TEST(WorldView, BadWorldIsAnErrorAndChangesNothing) {
    Simulator sim = make_sim("tag", 3);
    uint64_t rng = 8;
    step_n(sim, 2, rng);
    uint64_t hash = sim.state_hash(2);
    try {
        sim.request_world_view(3);
        FAIL() << "world 3 of 3 was accepted";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("world = 3"), std::string::npos) << m;
        EXPECT_NE(m.find("< 3"), std::string::npos) << m;
    }
    EXPECT_FALSE(poll(sim).called) << "the bad request queued nothing";
    EXPECT_TRUE(sim.request_world_view(2)) << "and left nothing pending";
    EXPECT_EQ(poll(sim).view.world, 2u);
    EXPECT_EQ(sim.state_hash(2), hash);
}

TEST(WorldView, AWatcherThreadSeesConsistentStatesWhileAnotherThreadSteps) {
    // A training thread steps; a watcher thread requests and polls views of
    // world 3 as fast as it can. Every view must be exactly the world's state
    // after the step it claims (a reference run records that state per step).
    register_builtin_envs();
    auto make = [] {
        SimOptions o;
        o.num_worlds = 16;
        o.threads = 1;
        o.random_inputs = true; // actions drawn in the step: no host writes racing the watcher
        return Simulator(make_env_spec("overcooked", {}), o);
    };
    const uint32_t steps = 600;
    Simulator reference = make();
    reference.reset(9);
    std::vector<std::string> state_after(steps + 1);
    state_after[0] = reference.get_state_json(3);
    for (uint32_t k = 1; k <= steps; ++k) {
        reference.step();
        state_after[k] = reference.get_state_json(3);
    }
    Simulator sim = make();
    sim.reset(9);
    std::atomic<bool> done{false};
    std::atomic<uint32_t> views{0};
    std::vector<std::pair<uint64_t, std::string>> seen;
    std::thread watcher([&] {
        while (!done.load()) {
            sim.request_world_view(3);
            sim.poll_world_view([&](Ctx& ctx, const LaggedView& v) {
                if (!v.fresh) return;
                seen.emplace_back(v.step, sim.spec().state_to_json(ctx));
                views.fetch_add(1);
            });
        }
    });
    for (uint32_t k = 0; k < steps; ++k) {
        if (k % 20 == 0) { // let the watcher land a view now and then, whatever the scheduler does
            uint32_t before = views.load();
            while (views.load() == before) std::this_thread::yield();
        }
        sim.step();
    }
    done = true;
    watcher.join();
    ASSERT_GT(seen.size(), 10u) << "the watcher saw too few views to test anything";
    for (const auto& [step, json] : seen) {
        ASSERT_LE(step, steps);
        EXPECT_EQ(json, state_after[step]) << "view claiming step " << step;
    }
}

TEST(BackendSnapshot, CpuCopiesAtOnceAndHandsOverOnce) {
    Simulator sim = make_sim("tag", 3);
    uint64_t rng = 1;
    step_n(sim, 5, rng);
    StorageLayout layout = make_layout(sim.spec(), sim.num_worlds(), sim.options().autoreset);
    std::vector<Region> regions = layout.regions(sim.backend().storage());
    Backend& b = sim.backend();
    std::vector<uint8_t> out;
    EXPECT_FALSE(b.poll_snapshot(out));
    ASSERT_TRUE(b.request_snapshot(regions, 1));
    EXPECT_FALSE(b.request_snapshot(regions, 2));
    std::vector<uint8_t> want = sim.save_world(1).bytes;
    step_n(sim, 1, rng); // after the request: not in the copy
    ASSERT_TRUE(b.poll_snapshot(out));
    EXPECT_EQ(out, want);
    EXPECT_FALSE(b.poll_snapshot(out)) << "each request is handed over once";
}

} // namespace
