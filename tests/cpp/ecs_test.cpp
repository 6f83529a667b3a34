// Storage, handles, queries, parallel create/destroy and task-graph ordering,
// exercised through the probe env (tests/cpp/probe_env.hpp).

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include "probe_env.hpp"

namespace {
using namespace orrery;

Simulator make_sim(uint32_t worlds, uint32_t threads = 1, uint32_t capacity = probe::kParticles,
                   AutoReset mode = AutoReset::kNextStep) {
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = threads;
    o.autoreset = mode;
    return Simulator(probe::make_spec(capacity), o);
}

int32_t* cmd(Simulator& sim, uint32_t world) { return static_cast<int32_t*>(sim.tensor("cmd").data) + world; }

TEST(Storage, ColumnsAreDenseWorldSlabsAtFixedAddresses) {
    Simulator sim = make_sim(5);
    const TensorView& v = sim.tensor("value");
    EXPECT_EQ(v.shape, (std::vector<int64_t>{5, probe::kParticles, 1}));
    EXPECT_EQ(v.dtype, DType::kU32);
    const TensorView& wide = sim.tensor("wide");
    EXPECT_EQ(wide.shape, (std::vector<int64_t>{5, 1, 2, 3}));
    EXPECT_EQ(wide.dtype, DType::kU16);
    void* before = v.data;
    sim.step();
    sim.reset(3);
    EXPECT_EQ(sim.tensor("value").data, before);
    // World 2's rows start exactly capacity rows after world 1's.
    sim.read_world(2, [&](Ctx& ctx) { EXPECT_EQ(ctx.count<probe::Particle>(), 3u); });
    uint32_t* values = static_cast<uint32_t*>(v.data);
    uint32_t expected = 0;
    sim.read_world(2, [&](Ctx& ctx) { expected = ctx.at<probe::Particle, probe::Value>(1).v; });
    EXPECT_EQ(values[2 * probe::kParticles + 1], expected);
}

TEST(Storage, ArrayComponentsHaveTheirRegisteredShape) {
    Simulator sim = make_sim(3);
    sim.step();
    sim.step();
    const uint16_t* wide = static_cast<const uint16_t*>(sim.tensor("wide").data);
    // apply_cmd increments element 0 of each controller's [2, 3] u16 array once per step.
    for (uint32_t w = 0; w < 3; ++w) {
        EXPECT_EQ(wide[w * 6], 2);
        EXPECT_EQ(wide[w * 6 + 1], 0);
    }
}

TEST(Storage, MemoryReportComesFromDeclaredCapacities) {
    Simulator sim = make_sim(10, 1, 64);
    MemoryReport r = sim.memory_report();
    ASSERT_EQ(r.archetypes.size(), 3u);
    EXPECT_EQ(r.archetypes[0].archetype, "Particle");
    EXPECT_EQ(r.archetypes[0].capacity, 64u);
    // 64 rows x (Value 4 + Spawned 4 + generation 4 + alive 1 + doomed 1 + free list 4) + 3 counters.
    EXPECT_EQ(r.archetypes[0].bytes_per_world, 64u * (4 + 4 + 10) + 12);
    EXPECT_GE(r.archetypes[0].bytes, r.archetypes[0].bytes_per_world * 10);
    EXPECT_GE(r.total_bytes, r.archetypes[0].bytes + r.archetypes[1].bytes + r.archetypes[2].bytes);
    EXPECT_NE(r.to_string().find("Particle"), std::string::npos);
}

TEST(Handles, StaleHandleIsDetectedAfterDestroyAndReuse) {
    Simulator sim = make_sim(1);
    Entity first{};
    sim.edit_world(0, [&](Ctx& ctx) {
        ctx.each<probe::Particle>([&](Entity e) {
            if (first.is_null()) first = e;
        });
        EXPECT_TRUE(ctx.valid(first));
        EXPECT_TRUE(ctx.destroy(first));
        // Destruction is deferred: still readable until the barrier.
        EXPECT_TRUE(ctx.valid(first));
        apply_destroys(ctx.storage(), 0);
        EXPECT_FALSE(ctx.valid(first));
        EXPECT_EQ(ctx.get<probe::Value>(first), nullptr);
        EXPECT_FALSE(ctx.destroy(first));
        Entity again = ctx.create<probe::Particle>();
        EXPECT_EQ(again.row(), first.row()); // the lowest free row is reused...
        EXPECT_NE(again.gen, first.gen);     // ...under a new generation
        EXPECT_FALSE(ctx.valid(first));
        EXPECT_TRUE(ctx.valid(again));
        EXPECT_EQ(ctx.get<probe::Value>(again)->v, 0u); // components start zeroed
    });
}

TEST(Handles, NullAndForeignHandlesAreInvalid) {
    Simulator sim = make_sim(1);
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_FALSE(ctx.valid(Entity{}));
        EXPECT_FALSE(ctx.valid(Entity::make(7, 0, 1)));                 // no such archetype
        EXPECT_FALSE(ctx.valid(Entity::make(0, probe::kParticles, 1))); // beyond capacity
        EXPECT_FALSE(ctx.valid(Entity::make(0, 5, 1)));                 // never created
        Entity c{};
        ctx.each<probe::Controller>([&](Entity e) { c = e; });
        EXPECT_EQ(ctx.get<probe::Value>(c), nullptr); // live, but lacks the component
        EXPECT_NE(ctx.get<probe::Cmd>(c), nullptr);
    });
}

TEST(Handles, CapacityOverflowIsAPerWorldErrorNotACrash) {
    Simulator sim = make_sim(3);
    *cmd(sim, 1) = 3; // world 1: 3 + 3 = 6 particles, fits
    sim.step();
    EXPECT_NO_THROW(sim.check_errors());
    *cmd(sim, 1) = 3; // 9 > capacity 6
    sim.step();
    std::vector<uint32_t> e = sim.errors();
    EXPECT_EQ(e[0], 0u);
    EXPECT_EQ(e[1], uint32_t(ErrorCode::kCapacityOverflow));
    EXPECT_EQ(e[2], 0u);
    EXPECT_THROW(sim.check_errors(), Error);
    sim.read_world(1, [&](Ctx& ctx) { EXPECT_EQ(ctx.count<probe::Particle>(), probe::kParticles); });
    *cmd(sim, 1) = 0;
    sim.step(); // errors are per step
    EXPECT_NO_THROW(sim.check_errors());
}

TEST(Queries, PerEntitySystemsVisitOnlyMatchingArchetypes) {
    Simulator sim = make_sim(2);
    std::vector<uint32_t> before(3);
    sim.read_world(0, [&](Ctx& ctx) {
        for (uint32_t r = 0; r < 3; ++r) before[r] = ctx.at<probe::Particle, probe::Value>(r).v;
    });
    sim.step();
    sim.read_world(0, [&](Ctx& ctx) {
        uint32_t visited = 0;
        ctx.each<probe::Particle>([&](Entity e) {
            uint32_t v = ctx.get<probe::Value>(e)->v;
            EXPECT_GE(v, before[e.row()] * 3);
            EXPECT_LT(v, before[e.row()] * 3 + 7);
            ++visited;
        });
        EXPECT_EQ(visited, 3u);
    });
}

TEST(Parallel, CreateFromManyThreadsGivesDistinctRows) {
    constexpr uint32_t kCap = 4096, kThreads = 8, kEach = 400;
    Simulator sim = make_sim(2, 1, kCap);
    sim.edit_world(1, [&](Ctx& ctx) {
        std::vector<std::vector<Entity>> made(kThreads);
        std::vector<std::thread> pool;
        for (uint32_t t = 0; t < kThreads; ++t)
            pool.emplace_back([&, t] {
                for (uint32_t i = 0; i < kEach; ++i) made[t].push_back(ctx.create<probe::Particle>());
            });
        for (std::thread& th : pool) th.join();
        std::set<uint32_t> rows;
        for (auto& v : made)
            for (Entity e : v) {
                ASSERT_FALSE(e.is_null());
                rows.insert(e.row());
            }
        EXPECT_EQ(rows.size(), kThreads * kEach);
        EXPECT_EQ(ctx.count<probe::Particle>(), 3 + kThreads * kEach);
        // Destroy every other from many threads, then the barrier frees them.
        pool.clear();
        for (uint32_t t = 0; t < kThreads; ++t)
            pool.emplace_back([&, t] {
                for (uint32_t i = 0; i < kEach; i += 2) EXPECT_TRUE(ctx.destroy(made[t][i]));
            });
        for (std::thread& th : pool) th.join();
        apply_destroys(ctx.storage(), 0);
        EXPECT_EQ(ctx.count<probe::Particle>(), 3 + kThreads * kEach / 2);
        for (auto& v : made)
            for (uint32_t i = 0; i < v.size(); ++i) EXPECT_EQ(ctx.valid(v[i]), i % 2 == 1);
        // Freed rows come back lowest first.
        uint32_t lowest = kCap;
        for (auto& v : made)
            for (uint32_t i = 0; i < v.size(); i += 2) lowest = std::min(lowest, v[i].row());
        EXPECT_EQ(ctx.create<probe::Particle>().row(), lowest);
    });
    sim.read_world(0, [&](Ctx& ctx) { EXPECT_EQ(ctx.count<probe::Particle>(), 3u); });
}

TEST(Parallel, CreateAndDestroyInsideStepsOnAllThreads) {
    Simulator sim = make_sim(64, 4);
    for (uint32_t w = 0; w < 64; ++w) *cmd(sim, w) = int32_t(w % 3) - 1 + (w % 2); // -1..2
    sim.step();
    sim.check_errors();
    for (uint32_t w = 0; w < 64; ++w) {
        int32_t c = int32_t(w % 3) - 1 + (w % 2);
        uint32_t expect = c < 0 ? 2 : 3 + uint32_t(c);
        sim.read_world(w, [&](Ctx& ctx) { EXPECT_EQ(ctx.count<probe::Particle>(), expect) << "world " << w; });
    }
}

TEST(TaskGraph, NodesRunInDependencyOrderEachStep) {
    Simulator sim = make_sim(3, 2);
    sim.read_world(1, [&](Ctx& ctx) {
        const probe::Log& log = ctx.single<probe::Journal, probe::Log>();
        ASSERT_EQ(log.n, 2u);
        EXPECT_EQ(log.order[0], 100u); // init
        EXPECT_EQ(log.order[1], 9u);   // then observe
    });
    sim.step();
    sim.read_world(1, [&](Ctx& ctx) {
        const probe::Log& log = ctx.single<probe::Journal, probe::Log>();
        ASSERT_EQ(log.n, 6u);
        EXPECT_EQ(log.order[2], 1u); // log_a first
        EXPECT_EQ(log.order[3], 2u); // log_b after a
        EXPECT_EQ(log.order[4], 3u); // log_c after b and c
        EXPECT_EQ(log.order[5], 9u); // observe last
    });
}

TEST(TaskGraph, DependencyOnALaterOrOtherPhaseNodeIsRejected) {
    EnvSpec spec = probe::make_spec();
    NodeId obs{uint32_t(spec.nodes().size() - 1)}; // the observe node
    EXPECT_THROW(spec.add(Phase::kStep, ORRERY_PER_WORLD(probe::log_a), {obs}), Error);
    EXPECT_THROW(spec.add(Phase::kStep, ORRERY_PER_WORLD(probe::log_a), {NodeId{999}}), Error);
}

TEST(TaskGraph, PlanAppendsBarriersAndAutoResetOps) {
    EnvSpec spec = probe::make_spec();
    Plan p = make_plan(spec, AutoReset::kSameStep);
    ASSERT_FALSE(p.step.empty());
    EXPECT_EQ(p.step.front().kind, OpKind::kBeginStep);
    auto it = std::find_if(p.step.begin(), p.step.end(), [](const Op& o) { return o.kind == OpKind::kEndStep; });
    ASSERT_NE(it, p.step.end());
    EXPECT_EQ((it - 1)->node->system.kind, NodeKind::kApplyDestroys); // the step phase ends at a barrier
    EXPECT_TRUE(
        std::any_of(p.step.begin(), p.step.end(), [](const Op& o) { return o.kind == OpKind::kFinishSameStep; }));
    EXPECT_EQ(p.reset.front().kind, OpKind::kBeginRequestedReset);
}

TEST(Spec, IncompleteTablesAreRejectedWithTheirName) {
    using namespace probe; // ORRERY_ENV_SPEC reads the env's component list
    EnvSpec spec = ORRERY_ENV_SPEC("broken", "none.hpp");
    spec.dims<Wide>({4});
    try {
        spec.validate();
        FAIL() << "expected an error";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("archetype"), std::string::npos) << e.what(); }
    EnvSpec no_dims = ORRERY_ENV_SPEC("nodims", "none.hpp");
    try {
        no_dims.validate();
        FAIL() << "expected an error";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("Wide"), std::string::npos) << e.what(); }
}

} // namespace

// fill_bytes_lanes / copy_bytes_lanes: every lane count, offset and length
// covers exactly the bytes fill_bytes / copy_bytes would, nothing more.
TEST(Bytes, LaneSharesFillAndCopyExactlyTheRange) {
    alignas(16) uint8_t src[160], dst[160], want[160];
    for (uint32_t i = 0; i < 160; ++i) src[i] = uint8_t(i * 7 + 3);
    for (uint32_t lanes : {1u, 2u, 3u, 16u})
        for (size_t at = 0; at < 20; ++at)
            for (size_t from = 0; from < 20; from += 3)
                for (size_t n : {size_t(0), size_t(1), size_t(15), size_t(16), size_t(33), size_t(100)}) {
                    std::memset(dst, 0xAB, sizeof dst);
                    std::memcpy(want, dst, sizeof dst);
                    std::memcpy(want + at, src + from, n);
                    for (uint32_t lane = 0; lane < lanes; ++lane)
                        orrery::copy_bytes_lanes(dst + at, src + from, n, lane, lanes);
                    ASSERT_EQ(0, std::memcmp(dst, want, sizeof dst)) << lanes << " lanes, at " << at << ", n " << n;
                    std::memset(want + at, 5, n);
                    for (uint32_t lane = 0; lane < lanes; ++lane) orrery::fill_bytes_lanes(dst + at, 5, n, lane, lanes);
                    ASSERT_EQ(0, std::memcmp(dst, want, sizeof dst)) << lanes << " lanes, at " << at << ", n " << n;
                }
}
