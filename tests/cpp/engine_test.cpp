// Determinism across threads and batch sizes, auto-reset modes, snapshots,
// world copies, checkpoints (and their rejection), and bad input.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include <unistd.h>

#include "envs/registry.hpp"
#include "engine/simulator.hpp"
#include "envs/tutorial/tag.hpp"

namespace {
using namespace orrery;

SimOptions opts(uint32_t worlds, uint32_t threads, AutoReset mode = AutoReset::kNextStep) {
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = threads;
    o.autoreset = mode;
    return o;
}

Simulator make_tag(uint32_t worlds, uint32_t threads, AutoReset mode = AutoReset::kNextStep, EnvOptions env = {}) {
    register_builtin_envs();
    return Simulator(make_env_spec("tag", env), opts(worlds, threads, mode));
}

/// The action world w takes at step t: a fixed function of (w, t) only.
int32_t action_of(uint32_t w, uint32_t t, uint32_t agent) {
    return int32_t((w * 7 + t * 13 + agent * 5 + (t >> 3)) % 5);
}

void set_actions(Simulator& sim, uint32_t t) {
    const TensorView& a = sim.tensor("action");
    int32_t* p = static_cast<int32_t*>(a.data);
    uint32_t agents = uint32_t(a.shape[1]);
    for (uint32_t w = 0; w < sim.num_worlds(); ++w)
        for (uint32_t i = 0; i < agents; ++i) p[w * agents + i] = action_of(w, t, i);
}

/// Hash of world `w` after each of `steps` steps.
std::vector<uint64_t> trajectory(Simulator& sim, uint32_t w, uint32_t steps) {
    std::vector<uint64_t> out;
    for (uint32_t t = 0; t < steps; ++t) {
        set_actions(sim, t);
        sim.step();
        out.push_back(sim.state_hash(w));
    }
    return out;
}

TEST(Determinism, SameWorldSameHashAtAnyThreadCountAndBatchSize) {
    // 450 steps cross the 200-step horizon twice, so resets are covered too.
    std::vector<uint64_t> ref;
    for (uint32_t threads : {1u, 2u, 8u}) {
        for (uint32_t worlds : {1u, 7u, 1000u}) {
            Simulator sim = make_tag(worlds, threads);
            sim.reset(42);
            std::vector<uint64_t> h = trajectory(sim, 0, 450);
            if (ref.empty()) ref = h;
            EXPECT_EQ(h, ref) << threads << " threads, " << worlds << " worlds";
        }
    }
    // And a world other than 0, at two batch sizes.
    Simulator a = make_tag(7, 2), b = make_tag(1000, 8);
    a.reset(42);
    b.reset(42);
    EXPECT_EQ(trajectory(a, 6, 120), trajectory(b, 6, 120));
}

TEST(RandomInputs, DrawnInRangeInsideTheStepAndTheSameAtAnyBatchSize) {
    // SimOptions::random_inputs: the step draws each world's actions from its own
    // RNG stream, so world 3 takes the same actions and states in any batch.
    register_builtin_envs();
    std::vector<std::vector<int32_t>> actions_by_batch;
    std::vector<std::vector<uint64_t>> hashes_by_batch;
    for (auto [worlds, threads] : {std::pair{4u, 1u}, std::pair{1000u, 2u}}) {
        SimOptions o = opts(worlds, threads);
        o.random_inputs = true;
        Simulator sim(make_env_spec("overcooked", {}), o);
        sim.reset(5);
        const TensorView& a = sim.tensor("action");
        const int32_t* p = static_cast<const int32_t*>(a.data);
        std::vector<int32_t> taken;
        std::vector<uint64_t> hashes;
        for (uint32_t t = 0; t < 450; ++t) {
            sim.step();
            for (uint32_t i = 0; i < uint32_t(a.shape[0] * a.shape[1]); ++i)
                ASSERT_TRUE(p[i] >= 0 && p[i] <= 5) << "action " << p[i] << " at step " << t;
            taken.push_back(p[3 * 2]);
            taken.push_back(p[3 * 2 + 1]);
            hashes.push_back(sim.state_hash(3));
        }
        sim.check_errors();
        actions_by_batch.push_back(taken);
        hashes_by_batch.push_back(hashes);
    }
    EXPECT_EQ(actions_by_batch[0], actions_by_batch[1]);
    EXPECT_EQ(hashes_by_batch[0], hashes_by_batch[1]);
    std::vector<int> count(6, 0);
    for (int32_t v : actions_by_batch[0]) ++count[size_t(v)];
    for (int v = 0; v < 6; ++v) EXPECT_GT(count[size_t(v)], 100) << "action " << v << " is drawn too rarely";
}

TEST(RandomInputs, DifferFromWorldToWorldAndStepToStep) {
    register_builtin_envs();
    SimOptions o = opts(64, 1);
    o.random_inputs = true;
    Simulator sim(make_env_spec("tag", {}), o);
    sim.reset(1);
    sim.step();
    const TensorView& a = sim.tensor("action");
    std::vector<int32_t> first(static_cast<const int32_t*>(a.data),
                               static_cast<const int32_t*>(a.data) + a.bytes() / 4);
    sim.step();
    std::vector<int32_t> second(static_cast<const int32_t*>(a.data),
                                static_cast<const int32_t*>(a.data) + a.bytes() / 4);
    EXPECT_NE(first, second);
    size_t per_world = first.size() / 64;
    EXPECT_FALSE(std::equal(first.begin(), first.begin() + per_world, first.begin() + per_world));
}

TEST(Determinism, FullResetDoesNotDependOnHistory) {
    // reset(seed) is a pure function of the seed: no generations, free lists or
    // stale rows from earlier episodes remain (pellets are destroyed and created).
    Simulator used = make_tag(3, 2), fresh = make_tag(3, 1);
    used.reset(11);
    trajectory(used, 0, 250);
    used.reset(4);
    fresh.reset(4);
    for (uint32_t w = 0; w < 3; ++w) EXPECT_EQ(used.state_hash(w), fresh.state_hash(w)) << "world " << w;
    EXPECT_EQ(trajectory(used, 2, 40), trajectory(fresh, 2, 40));
}

TEST(Determinism, DifferentSeedsAndWorldsDiverge) {
    Simulator a = make_tag(2, 1), b = make_tag(2, 1);
    a.reset(1);
    b.reset(2);
    EXPECT_NE(a.state_hash(0), b.state_hash(0));
    EXPECT_NE(a.state_hash(0), a.state_hash(1));
}

TEST(AutoReset, NextStepKeepsTheFinalStateReadableThenResets) {
    Simulator sim = make_tag(2, 1, AutoReset::kNextStep, {{"horizon", "5"}, {"tag_limit", "1000"}});
    const uint8_t* trunc = static_cast<const uint8_t*>(sim.tensor("truncated").data);
    for (int t = 0; t < 5; ++t) sim.step();
    EXPECT_EQ(trunc[0], 1);
    uint32_t episode = 0, steps = 0;
    sim.read_world(0, [&](Ctx& ctx) {
        episode = ctx.episode();
        steps = ctx.single<tag::Arena, tag::Score>().steps;
    });
    EXPECT_EQ(episode, 0u);
    EXPECT_EQ(steps, 5u); // the terminal state is still there
    sim.step();           // this step resets and ignores actions
    EXPECT_EQ(trunc[0], 0);
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_EQ(ctx.episode(), 1u);
        EXPECT_EQ((ctx.single<tag::Arena, tag::Score>().steps), 0u);
    });
}

TEST(AutoReset, SameStepResetsAtOnceAndKeepsFinalOutputs) {
    Simulator sim = make_tag(3, 2, AutoReset::kSameStep, {{"horizon", "4"}, {"tag_limit", "1000"}});
    const TensorView& obs = sim.tensor("obs");
    const TensorView& fin = sim.tensor("final_obs");
    EXPECT_EQ(fin.shape, obs.shape);
    for (int t = 0; t < 3; ++t) sim.step();
    std::vector<float> last(static_cast<float*>(obs.data), static_cast<float*>(obs.data) + obs.bytes() / 4);
    set_actions(sim, 3);
    // Recompute what the 4th step's observation will be with a next-step twin.
    Simulator twin = make_tag(3, 2, AutoReset::kNextStep, {{"horizon", "4"}, {"tag_limit", "1000"}});
    for (int t = 0; t < 3; ++t) twin.step();
    set_actions(twin, 3);
    twin.step();
    sim.step();
    EXPECT_EQ(static_cast<const uint8_t*>(sim.tensor("truncated").data)[1], 1);
    const float* f = static_cast<const float*>(fin.data);
    const float* tw = static_cast<const float*>(twin.tensor("obs").data);
    for (size_t i = 0; i < obs.bytes() / 4; ++i) ASSERT_EQ(f[i], tw[i]) << i;
    sim.read_world(1, [&](Ctx& ctx) {
        EXPECT_EQ(ctx.episode(), 1u);
        EXPECT_EQ((ctx.single<tag::Arena, tag::Score>().steps), 0u);
    });
}

TEST(AutoReset, DisabledWaitsForAMaskedReset) {
    Simulator sim = make_tag(2, 1, AutoReset::kDisabled, {{"horizon", "2"}, {"tag_limit", "1000"}});
    for (int t = 0; t < 4; ++t) sim.step();
    uint64_t frozen = sim.state_hash(0);
    sim.step();
    EXPECT_EQ(sim.state_hash(0), frozen); // finished worlds do not move
    sim.reset_worlds({1, 0});
    sim.read_world(0, [&](Ctx& ctx) { EXPECT_EQ(ctx.episode(), 1u); });
    sim.read_world(1, [&](Ctx& ctx) { EXPECT_EQ(ctx.episode(), 0u); });
    EXPECT_EQ(static_cast<const uint8_t*>(sim.tensor("truncated").data)[0], 0);
    EXPECT_EQ(static_cast<const uint8_t*>(sim.tensor("truncated").data)[1], 1);
    EXPECT_THROW(sim.reset_worlds({1}), Error);
}

TEST(Snapshots, RestoredWorldContinuesBitExactly) {
    Simulator sim = make_tag(4, 2);
    sim.reset(9);
    for (uint32_t t = 0; t < 30; ++t) {
        set_actions(sim, t);
        sim.step();
    }
    WorldSnapshot snap = sim.save_world(2);
    std::vector<uint64_t> expected;
    for (uint32_t t = 30; t < 80; ++t) {
        set_actions(sim, t);
        sim.step();
        expected.push_back(sim.state_hash(2));
    }
    sim.restore_world(2, snap);
    for (uint32_t t = 30; t < 80; ++t) {
        set_actions(sim, t);
        sim.step();
        ASSERT_EQ(sim.state_hash(2), expected[t - 30]) << "step " << t;
    }
}

TEST(Snapshots, CopiedWorldMatchesItsOriginalInAnySlot) {
    Simulator sim = make_tag(5, 2);
    for (int t = 0; t < 10; ++t) sim.step();
    sim.copy_world(1, 4);
    EXPECT_EQ(sim.state_hash(1), sim.state_hash(4));
    int32_t* a = static_cast<int32_t*>(sim.tensor("action").data);
    for (int t = 0; t < 60; ++t) {
        for (int i = 0; i < 4; ++i) a[1 * 4 + i] = a[4 * 4 + i] = (t + i) % 5;
        sim.step();
        ASSERT_EQ(sim.state_hash(1), sim.state_hash(4)) << "step " << t;
    }
    EXPECT_THROW(sim.copy_world(0, 5), Error);
    WorldSnapshot bad;
    bad.bytes.resize(3);
    EXPECT_THROW(sim.restore_world(0, bad), Error);
}

class Checkpoint : public ::testing::Test {
  protected:
    // Per process: test runs in parallel (ctest -j, several build trees) share TempDir().
    std::string path = ::testing::TempDir() + "/orrery_ckpt_test_" + std::to_string(::getpid()) + ".bin";
    void TearDown() override { std::remove(path.c_str()); }
    std::string read() {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    void write(const std::string& s) { std::ofstream(path, std::ios::binary) << s; }
    static std::vector<uint64_t> hashes(Simulator& sim) {
        std::vector<uint64_t> h;
        for (uint32_t w = 0; w < sim.num_worlds(); ++w) h.push_back(sim.state_hash(w));
        return h;
    }
    void expect_rejected(Simulator& sim, const std::string& needle) {
        std::vector<uint64_t> before = hashes(sim);
        try {
            sim.load_checkpoint(path);
            ADD_FAILURE() << "expected rejection containing '" << needle << "'";
        } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what(); }
        EXPECT_EQ(hashes(sim), before) << "a rejected checkpoint changed the simulator";
    }
};

TEST_F(Checkpoint, RoundTripContinuesBitExactly) {
    Simulator a = make_tag(6, 2);
    a.reset(5);
    for (uint32_t t = 0; t < 25; ++t) {
        set_actions(a, t);
        a.step();
    }
    a.save_checkpoint(path);
    Simulator b = make_tag(6, 1);
    b.load_checkpoint(path);
    EXPECT_EQ(hashes(a), hashes(b));
    for (uint32_t t = 25; t < 60; ++t) {
        set_actions(a, t);
        set_actions(b, t);
        a.step();
        b.step();
        ASSERT_EQ(hashes(a), hashes(b)) << "step " << t;
    }
}

TEST_F(Checkpoint, CorruptTruncatedAndMismatchedFilesAreRejected) {
    Simulator a = make_tag(3, 1);
    a.step();
    a.save_checkpoint(path);
    std::string good = read();
    Simulator b = make_tag(3, 1);
    b.reset(77);

    std::string flipped = good;
    flipped[flipped.size() / 2] ^= 0x10;
    write(flipped);
    expect_rejected(b, "checksum");

    write(good.substr(0, good.size() - 9));
    expect_rejected(b, "truncated");

    write(good.substr(0, 10));
    expect_rejected(b, "truncated");

    std::string magic = good;
    magic[0] = 'X';
    write(magic);
    expect_rejected(b, "magic");

    std::string version = good;
    version[8] = 9;
    write(version);
    expect_rejected(b, "version");

    write(good);
    Simulator more = make_tag(4, 1);
    expect_rejected(more, "num_worlds=3");
    Simulator other = make_tag(3, 1, AutoReset::kNextStep, {{"pellets", "7"}});
    expect_rejected(other, "different simulator");

    std::remove(path.c_str());
    expect_rejected(b, "cannot open");
}

TEST(BadInput, OutOfRangeActionThrowsAndLeavesStateUntouched) {
    Simulator sim = make_tag(3, 2);
    sim.step();
    std::vector<uint64_t> before = {sim.state_hash(0), sim.state_hash(1), sim.state_hash(2)};
    int32_t* a = static_cast<int32_t*>(sim.tensor("action").data);
    int32_t previous = a[2 * 4 + 3];
    a[2 * 4 + 3] = 5;
    try {
        sim.step();
        FAIL() << "expected an error";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("'action'"), std::string::npos) << m;
        EXPECT_NE(m.find("world 2"), std::string::npos) << m;
        EXPECT_NE(m.find("[0, 4]"), std::string::npos) << m;
    }
    a[2 * 4 + 3] = previous; // the action column is part of the world; undo our own write
    EXPECT_EQ(before, (std::vector<uint64_t>{sim.state_hash(0), sim.state_hash(1), sim.state_hash(2)}));
}

TEST(StepReading, ReadsTheCallersValuesAndLeavesThemInTheTensor) {
    // step_reading(name, data) steps exactly as writing `data` into the tensor
    // and calling step() would: the same trajectory, and the tensor holds the values after.
    Simulator written = make_tag(5, 2), read = make_tag(5, 2);
    written.reset(4);
    read.reset(4);
    const TensorView& a = read.tensor("action");
    std::vector<int32_t> caller(a.bytes() / 4);
    const uint32_t agents = uint32_t(a.shape[1]);
    for (uint32_t t = 0; t < 30; ++t) {
        set_actions(written, t);
        written.step();
        for (uint32_t w = 0; w < 5; ++w)
            for (uint32_t i = 0; i < agents; ++i) caller[w * agents + i] = action_of(w, t, i);
        read.step_reading("action", caller.data());
        ASSERT_EQ(std::memcmp(a.data, caller.data(), a.bytes()), 0) << "step " << t;
        for (uint32_t w = 0; w < 5; ++w) ASSERT_EQ(read.state_hash(w), written.state_hash(w)) << "step " << t;
    }
    EXPECT_EQ(read.steps_taken(), 30u);
    read.step_reading("action", a.data); // the tensor itself: nothing to copy
    written.step();
    EXPECT_EQ(read.state_hash(3), written.state_hash(3));
}

TEST(StepReading, WritesTheOutputsItIsGivenAfterTheStep) {
    Simulator sim = make_tag(6, 2, AutoReset::kSameStep);
    sim.reset(2);
    const TensorView &obs = sim.tensor("obs"), &term = sim.tensor("terminated"), &a = sim.tensor("action");
    std::vector<uint8_t> obs_out(obs.bytes()), term_out(term.bytes());
    std::vector<int32_t> caller(a.bytes() / 4);
    for (uint32_t t = 0; t < 12; ++t) {
        for (size_t i = 0; i < caller.size(); ++i) caller[i] = int32_t((i * 3 + t) % 5);
        sim.step_reading("action", caller.data(),
                         {{obs.data, obs_out.data(), obs.bytes()}, {term.data, term_out.data(), term.bytes()}});
        ASSERT_EQ(std::memcmp(obs_out.data(), obs.data, obs.bytes()), 0) << "step " << t;
        ASSERT_EQ(std::memcmp(term_out.data(), term.data, term.bytes()), 0) << "step " << t;
    }
    // A copy that names no exported tensor (or only part of one) is refused before anything changes.
    const uint64_t before = sim.state_hash(1);
    EXPECT_THROW(sim.step_reading("action", caller.data(), {{obs.data, obs_out.data(), obs.bytes() - 4}}), Error);
    EXPECT_THROW(sim.step_reading("action", caller.data(), {{obs_out.data(), obs_out.data(), obs.bytes()}}), Error);
    EXPECT_THROW(sim.step_reading("action", caller.data(), {{obs.data, nullptr, obs.bytes()}}), Error);
    EXPECT_EQ(sim.state_hash(1), before);
    EXPECT_EQ(sim.steps_taken(), 12u);
}

TEST(StepReading, ChunkedOnThreadsStepsAsWritingThenCopying) {
    // The CPU backend moves the actions in and the outputs out chunk by chunk,
    // on the thread stepping each chunk: with 3 threads and 301 worlds (chunks
    // of 13, the last one short), every output lands whole and the worlds
    // follow the trajectory of writing the actions, stepping, then copying.
    Simulator written = make_tag(301, 3, AutoReset::kSameStep), read = make_tag(301, 3, AutoReset::kSameStep);
    written.reset(9);
    read.reset(9);
    const TensorView& a = read.tensor("action");
    std::vector<int32_t> caller(a.bytes() / 4);
    const uint32_t agents = uint32_t(a.shape[1]);
    std::vector<std::string> names = {"obs", "reward", "terminated", "truncated", "final_obs"};
    std::vector<std::vector<uint8_t>> out;
    std::vector<OutputCopy> copies;
    for (const std::string& n : names) out.emplace_back(read.tensor(n).bytes(), uint8_t(0xAB));
    for (size_t k = 0; k < names.size(); ++k)
        copies.push_back({read.tensor(names[k]).data, out[k].data(), read.tensor(names[k]).bytes()});
    for (uint32_t t = 0; t < 40; ++t) {
        set_actions(written, t);
        written.step();
        for (uint32_t w = 0; w < 301; ++w)
            for (uint32_t i = 0; i < agents; ++i) caller[w * agents + i] = action_of(w, t, i);
        read.step_reading("action", caller.data(), copies);
        ASSERT_EQ(std::memcmp(a.data, caller.data(), a.bytes()), 0) << "step " << t;
        for (size_t k = 0; k < names.size(); ++k) {
            const TensorView& v = written.tensor(names[k]);
            ASSERT_EQ(std::memcmp(out[k].data(), v.data, v.bytes()), 0) << names[k] << ", step " << t;
        }
        for (uint32_t w = 0; w < 301; w += 50) ASSERT_EQ(read.state_hash(w), written.state_hash(w)) << "step " << t;
    }
    EXPECT_EQ(read.state_hash(300), written.state_hash(300));
}

TEST(StepReading, OutOfRangeValueThrowsNamingItAndChangesNothing) {
    Simulator sim = make_tag(3, 2);
    sim.step();
    const TensorView& a = sim.tensor("action");
    std::vector<uint8_t> column(static_cast<uint8_t*>(a.data), static_cast<uint8_t*>(a.data) + a.bytes());
    std::vector<uint64_t> before = {sim.state_hash(0), sim.state_hash(1), sim.state_hash(2)};
    std::vector<int32_t> caller(a.bytes() / 4, 1);
    caller[1 * 4 + 2] = -1;
    try {
        sim.step_reading("action", caller.data());
        FAIL() << "expected an error";
    } catch (const Error& e) {
        std::string m = e.what();
        EXPECT_NE(m.find("'action' holds -1 at world 1, index 2"), std::string::npos) << m;
        EXPECT_NE(m.find("[0, 4]"), std::string::npos) << m;
    }
    // Refused before anything changed: the tensor still holds its old values.
    EXPECT_EQ(std::memcmp(a.data, column.data(), a.bytes()), 0);
    EXPECT_EQ(before, (std::vector<uint64_t>{sim.state_hash(0), sim.state_hash(1), sim.state_hash(2)}));
    EXPECT_EQ(sim.steps_taken(), 1u);
    EXPECT_THROW(sim.step_reading("reward", caller.data()), Error); // an output, not an input
    EXPECT_THROW(sim.step_reading("action", nullptr), Error);
}

TEST(BadInput, UnknownEnvOptionAndDeviceAreNamed) {
    register_builtin_envs();
    try {
        make_env_spec("nope", {});
        FAIL();
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("tag"), std::string::npos) << e.what(); }
    try {
        make_env_spec("tag", {{"pursuerz", "3"}});
        FAIL();
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("pursuerz"), std::string::npos) << e.what(); }
    EXPECT_THROW(make_env_spec("tag", {{"pursuers", "0"}}), Error);
    SimOptions o;
    o.device = "tpu";
    EXPECT_THROW(Simulator(make_env_spec("tag", {}), o), Error);
    o.device = "cpu";
    o.num_worlds = 0;
    EXPECT_THROW(Simulator(make_env_spec("tag", {}), o), Error);
    EXPECT_THROW(make_tag(2, 1).tensor("nope"), Error);
}

} // namespace
