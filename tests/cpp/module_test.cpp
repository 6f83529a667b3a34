// Engine modules: the orbit module (tests/modules/orbit) composed into the
// planets env with components, archetypes, a per-world buffer, shared assets
// and lane systems of its own. Ids, queries over every archetype with a
// component, bulk clears, buffer overflow, assets, the dependency graph, and
// the same bytes from every lane count, backend and kernel form.

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"
#include "gpu_support.hpp"
#include "tests/modules/planets/planets.hpp"

namespace planets {
orrery::EnvSpec make_spec(uint32_t planets, uint32_t moons, uint32_t hit_capacity, const std::string& root);
}

namespace {
using namespace orrery;

// A module's ids are the same in every env that composes it, and the env's own
// come after them (the static_asserts in ORRERY_COMPONENTS/ARCHETYPES prove
// the whole list; these spell out what that means).
static_assert(component_id<orbit::Pos> == 0 && component_id<orbit::Hits> == 6);
static_assert(component_id<planets::Kind> == orbit::OrreryComponents::size);
static_assert(archetype_id<orbit::Contact> == 0 && archetype_id<planets::Planet> == 1);
static_assert(has_component<planets::Moon, orbit::InvMass>); // through the Body bundle

EnvSpec spec(uint32_t hit_capacity = 64) { return planets::make_spec(3, 2, hit_capacity, ORRERY_SOURCE_DIR); }
/// 63 bodies a world: too large for a staged block, and integrate (over 60
/// moons) gets 64 lanes, a block per world, in the direct form.
EnvSpec big_spec() { return planets::make_spec(3, 60, 2048, ORRERY_SOURCE_DIR); }

SimOptions options(uint32_t worlds, const std::string& device = "cpu", uint32_t lanes = 1, uint32_t threads = 1) {
    SimOptions o;
    o.num_worlds = worlds;
    o.device = device;
    o.cpu_lanes = lanes;
    o.threads = threads;
    return o;
}

/// Writes thrust values drawn from a fixed formula of (world, step, row).
void write_thrust(Simulator& sim, uint32_t step) {
    const TensorView& t = sim.tensor("thrust");
    std::vector<int32_t> v(t.bytes() / 4);
    for (size_t i = 0; i < v.size(); ++i) v[i] = int32_t(((uint32_t(i) * 2654435761u + step * 40503u) >> 7) % 5u);
    sim.backend().copy_from_host(t.data, v.data(), t.bytes());
}

std::vector<uint64_t> hashes(Simulator& sim) {
    std::vector<uint64_t> h;
    for (uint32_t w = 0; w < sim.num_worlds(); ++w) h.push_back(sim.state_hash(w));
    return h;
}

TEST(Module, NamesComeFromTheTypesAndEveryKindIsRegistered) {
    EnvSpec s = spec();
    const auto& c = s.component_specs();
    ASSERT_EQ(c.size(), orbit::OrreryComponents::size + 7);
    EXPECT_EQ(c[component_id<orbit::Pos>].name, "Pos");
    EXPECT_EQ(c[component_id<planets::Trail>].name, "Trail");
    EXPECT_EQ(c[component_id<orbit::Hits>].kind, ComponentKind::kBuffer);
    EXPECT_EQ(c[component_id<orbit::Wells>].kind, ComponentKind::kAsset);
    EXPECT_EQ(c[component_id<planets::Trail>].kind, ComponentKind::kArray);
    EXPECT_EQ(c[component_id<planets::Trail>].row_bytes, 4 * sizeof(orbit::Pos)); // ArrayOf<struct>
    EXPECT_EQ(c[component_id<orbit::Hits>].row_bytes, kBufferHeaderBytes + 64 * sizeof(orbit::Hit));
}

TEST(Module, BadTablesAreRefusedNamingTheComponent) {
    using namespace planets;
    EnvSpec s = ORRERY_ENV_SPEC("nocap", "none.hpp");
    s.dims<Obs>({4});
    s.dims<Trail>({4});
    s.dims<Heat>({4});
    s.archetype<orbit::Contact>(4);
    s.archetype<Planet>(1);
    s.archetype<Moon>(1);
    s.archetype<Sky>(1, true);
    try {
        s.validate();
        FAIL() << "a buffer without a capacity was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("buffer 'Hits' has no capacity"), std::string::npos) << e.what();
    }
    EXPECT_THROW(s.capacity<orbit::Hits>(0), Error);
    // The facts the adapters read: one bound of each kind per named entry.
    s.capacity<orbit::Hits>(4);
    s.capacity<orbit::Gathered>(4);
    s.facts.obs_names = {"a", "b"};
    s.facts.obs_low = {0, 0};
    s.facts.obs_high = {1};
    try {
        s.validate();
        FAIL() << "bounds of another length than the names were accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("facts: obs_low has 2 entries, obs_high 1"), std::string::npos)
            << e.what();
    }
    s.facts.obs_high = {1, -1};
    EXPECT_THROW(s.validate(), Error); // low above high
    s.facts.obs_high = {1, 1};
    EXPECT_NO_THROW(s.validate());
}

TEST(Module, AssetsAreOneSharedCopyAndReportedSo) {
    Simulator sim(spec(), options(8));
    MemoryReport r = sim.memory_report();
    EXPECT_GT(r.asset_bytes, 0u);
    EXPECT_LT(r.asset_bytes, 256u); // one copy, not one per world
    bool buffer_row = false;
    for (const auto& c : r.components) buffer_row = buffer_row || (c.component == "Sky.Hits" && !c.exported);
    EXPECT_TRUE(buffer_row) << r.to_string();
    sim.read_world(3, [&](Ctx& ctx) {
        Span<orbit::Well> wells = ctx.asset<orbit::Wells>();
        ASSERT_EQ(wells.size, 2u);
        EXPECT_EQ(wells[1].y, 0.25f);
        EXPECT_EQ(ctx.asset<orbit::Settings>()[0].radius, 0.3f);
    });
}

/// Bytes of a slot of the planets env's step scratch: Gathered (a count, then
/// a Placed per body) and Heat (two halves of a cell per body), each 16-byte aligned.
size_t scratch_slot_bytes(uint32_t bodies) {
    auto align16 = [](size_t n) { return (n + 15) / 16 * 16; };
    return align16(kBufferHeaderBytes + bodies * sizeof(orbit::Placed)) + align16(2 * bodies * sizeof(float));
}

TEST(Module, StepScratchIsInNoWorldAndHasASlotPerThread) {
    Simulator sim(spec(), options(8, "cpu", 1, 3));
    MemoryReport r = sim.memory_report();
    ASSERT_EQ(r.scratch.size(), 2u) << r.to_string();
    EXPECT_EQ(r.scratch[0].component, "Gathered");
    EXPECT_EQ(r.scratch[1].component, "Heat");
    EXPECT_EQ(r.scratch_slot_bytes, scratch_slot_bytes(5));
    EXPECT_EQ(r.scratch_slots, 3u) << "one per thread, whatever the worlds";
    EXPECT_EQ(r.scratch_bytes, 3 * scratch_slot_bytes(5));
    EXPECT_EQ(r.total_bytes, make_layout(spec(), 8, AutoReset::kNextStep).total_bytes + r.scratch_bytes);
    for (const auto& c : r.components) EXPECT_EQ(c.component.find("Heat"), std::string::npos) << "in a world";
    EXPECT_NE(r.to_string().find("pool: 3 slots (one per CPU thread)"), std::string::npos) << r.to_string();
    sim.reset(2);
    sim.step();
    sim.read_world(0, [](Ctx& ctx) { // a world view has no slot: scratch is no world's
        EXPECT_EQ(ctx.scratch<planets::Heat>(), nullptr);
        EXPECT_EQ(ctx.scratch_buffer<orbit::Gathered>().capacity(), 0u);
        EXPECT_EQ(ctx.scratch_array<planets::Heat>().size, 0u);
    });
    Simulator more(spec(), options(40, "cpu", 1, 3));
    EXPECT_EQ(more.memory_report().scratch_slots, 3u);
}

TEST(Module, AWorldGetsWhicheverSlotIsFreeNotOneOfItsOwn) {
    // One thread: one slot for all 6 worlds, so after a step it holds what the
    // last world's contacts node gathered (its bodies where they ended the step).
    Simulator sim(spec(), options(6, "cpu", 1, 1));
    sim.reset(5);
    write_thrust(sim, 0);
    sim.step();
    const Storage& s = sim.backend().storage();
    ASSERT_EQ(s.scratch_slots, 1u);
    const uint8_t* slot = s.scratch + scratch_offset(s, component_id<orbit::Gathered>);
    uint32_t count = 0;
    std::memcpy(&count, slot, 4);
    ASSERT_EQ(count, 5u);
    std::vector<orbit::Placed> gathered(5);
    std::memcpy(gathered.data(), slot + kBufferHeaderBytes, sizeof(orbit::Placed) * 5);
    for (uint32_t w : {0u, 5u}) {
        bool same = true;
        sim.read_world(w, [&](Ctx& ctx) {
            uint32_t i = 0;
            ctx.each_with<orbit::Pos>([&](Entity e) {
                const orbit::Pos p = *ctx.get<orbit::Pos>(e);
                same = same && gathered[i].p.x == p.x && gathered[i].p.y == p.y;
                ++i;
            });
        });
        EXPECT_EQ(same, w == 5) << "world " << w;
    }
}

/// Expects f() to throw an orrery::Error whose message holds `want`.
template <class F> void expect_refused(F&& f, const std::string& want) {
    try {
        f();
        ADD_FAILURE() << "accepted; wanted: " << want;
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what(); }
}

/// Expects s.validate() to refuse `s` with a message holding `want`.
void refused(EnvSpec s, const std::string& want) {
    expect_refused([&] { s.validate(); }, want);
}

TEST(Module, ScratchIsRefusedInAnArchetypeOrOnALaneNode) {
    EnvSpec held = spec();
    held.scratch<orbit::Hits>(NodeId{3}); // contacts' node; Hits is the Sky's
    refused(held, "component 'Hits' is step scratch of node 'contacts' and held by archetype 'Sky'");
    EnvSpec lanes = spec();
    lanes.scratch<planets::Heat>(NodeId{1}); // thrust: ORRERY_PER_ENTITY_LANES
    refused(lanes, "node 'thrust' declares step scratch; only ORRERY_PER_WORLD and ORRERY_PER_WORLD_TEAM");
    EnvSpec s = spec();
    EXPECT_THROW(s.scratch<planets::Heat>(NodeId{99}), Error);
}

/// The node running `name` in `s`.
NodeId node_named(const EnvSpec& s, const std::string& name) {
    for (uint32_t i = 0; i < s.nodes().size(); ++i)
        if (s.nodes()[i].system.name == name) return NodeId{i};
    ADD_FAILURE() << "no node " << name;
    return NodeId{0};
}

/// The planets env with spread_heat's team a whole warp keeping its scratch (Heat) on chip.
EnvSpec on_chip_spec() {
    EnvSpec s = spec();
    s.world_lanes = 32;
    s.scratch_shared<planets::Heat>(node_named(s, "spread_heat"));
    return s;
}

TEST(Module, ScratchKeptOnChipIsATeamNodesOwnScratch) {
    EnvSpec other = spec();
    other.scratch_shared<orbit::Gathered>(node_named(other, "spread_heat")); // contacts' scratch, not spread_heat's
    refused(other, "node 'spread_heat' keeps component 'Gathered' in shared memory but does not declare it as its "
                   "scratch");
    EnvSpec serial = spec();
    serial.scratch_shared<orbit::Gathered>(node_named(serial, "contacts")); // ORRERY_PER_WORLD
    refused(serial, "node 'contacts' keeps step scratch in shared memory; only ORRERY_PER_WORLD_TEAM nodes can");
    EnvSpec s = spec();
    EXPECT_THROW(s.scratch_shared<planets::Heat>(NodeId{99}), Error);
    EXPECT_NO_THROW(on_chip_spec().validate());
    // The memory report gives a team's region, laid out as the slot is.
    MemoryReport r = make_layout(on_chip_spec(), 4, AutoReset::kNextStep).report;
    EXPECT_EQ(r.scratch_shared_bytes,
              (on_chip_spec().component_specs()[component_id<planets::Heat>].row_bytes + 15) / 16 * 16);
    EXPECT_NE(r.to_string().find("asked to keep on chip: " + std::to_string(r.scratch_shared_bytes) + " bytes a team"),
              std::string::npos)
        << r.to_string();
    EXPECT_EQ(make_layout(spec(), 4, AutoReset::kNextStep).report.scratch_shared_bytes, 0u);
}

/// spec() with spread_heat's teams ordered by its cost hints.
EnvSpec ordered_spec() {
    EnvSpec s = spec();
    s.world_lanes = 32;
    s.order_teams(node_named(s, "spread_heat"));
    return s;
}

TEST(Module, OrderedTeamsTakeTheirWorldsInTheOrder) {
    // Needs NVRTC only. order_teams takes one team node an env; the per-node
    // form's kernels of that node (teams of a warp) read world t of the order
    // and share their program with the kernel that makes it.
    EnvSpec bad = spec();
    expect_refused([&] { bad.order_teams(node_named(bad, "contacts")); },
                   "order_teams() names node 'contacts'; only an ORRERY_PER_WORLD_TEAM node's teams are ordered");
    expect_refused([&] { bad.order_teams(NodeId{99}); }, "order_teams() names no node of this env");
    const NodeId second = bad.add(Phase::kStep, ORRERY_PER_WORLD_TEAM(planets::spread_heat));
    bad.order_teams(node_named(bad, "spread_heat"));
    expect_refused([&] { bad.order_teams(second); }, "at most one node of an env orders its teams");
    EXPECT_NO_THROW(ordered_spec().validate());
    for (uint32_t order : {0u, 1u, 2u}) EXPECT_NO_THROW(cuda::check_team_order(order));
    expect_refused([] { cuda::check_team_order(3); },
                   "GpuOptions::order_teams (ORRERY_CUDA_ORDER_TEAMS) is 3; expected 0 (never), 1 (past one wave of "
                   "blocks) or 2 (always)");

    EnvSpec s = ordered_spec();
    Plan plan = make_plan(s, AutoReset::kSameStep);
    cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, 32);
    ASSERT_EQ(k.ordered_kernels.size(), 3u) << "spread_heat runs in the step pass twice and in the reset pass";
    size_t found = 0;
    for (const auto& [kernel, order] : k.ordered_kernels) {
        EXPECT_EQ(order, kernel + "_order");
        for (const cuda::NodeProgram& p : k.programs)
            if (p.kernel == kernel) {
                EXPECT_EQ(p.node, "spread_heat");
                EXPECT_NE(p.text.find("s.team_order && t < s.num_worlds ? s.team_order[t] : t"), std::string::npos);
                EXPECT_NE(p.text.find("__global__ void __launch_bounds__(" + std::to_string(cuda::kOrderThreads) +
                                      ") " + order + "()"),
                          std::string::npos)
                    << p.text;
                ++found;
            }
    }
    EXPECT_EQ(found, 3u);
    expect_nvrtc_compiles(s, k);
    // Teams of 16 lanes, the megakernels and an env that asks for no order read world t.
    EXPECT_TRUE(cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, 16).ordered_kernels.empty());
    EXPECT_TRUE(cuda::generate_kernels(s, plan, cuda::KernelForm::kDirect, 32).ordered_kernels.empty());
    EnvSpec plain = spec();
    plain.world_lanes = 32;
    cuda::KernelSource unordered =
        cuda::generate_kernels(plain, make_plan(plain, AutoReset::kSameStep), cuda::KernelForm::kPerNode, 32);
    EXPECT_TRUE(unordered.ordered_kernels.empty());
    EXPECT_EQ(unordered.text.find("team_order"), std::string::npos);
    // On the CPU the hint is dropped: the same bytes as without.
    Simulator without(plain, options(5, "cpu", 2, 2)), with(ordered_spec(), options(5, "cpu", 2, 2));
    EXPECT_EQ(with.backend().storage().team_cost, nullptr);
    for (uint32_t step = 0; step < 6; ++step) {
        for (Simulator* sim : {&without, &with}) {
            write_thrust(*sim, step);
            sim->step();
        }
        ASSERT_EQ(hashes(with), hashes(without)) << "step " << step;
    }
}

TEST(Module, OnlyAWarpTeamsOwnKernelKeepsScratchOnChip) {
    // Needs NVRTC only. The per-node form with teams of a warp hands each team
    // its region of the block's dynamic shared memory; 16-lane teams and the
    // megakernels keep the scratch in the slot.
    EnvSpec s = on_chip_spec();
    const uint32_t bytes = make_layout(s, 4, AutoReset::kSameStep).report.scratch_shared_bytes;
    Plan plan = make_plan(s, AutoReset::kSameStep);
    cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, 32);
    size_t runs = 0; // spread_heat observes in the step and reset passes (twice in a same-step reset's step)
    for (const std::vector<Op>* ops : {&plan.step, &plan.reset})
        for (const Op& op : *ops)
            runs += op.kind == OpKind::kNode && std::string(op.node->system.name) == "spread_heat";
    ASSERT_EQ(runs, 3u);
    ASSERT_EQ(k.team_shared_kernels.size(), runs);
    const std::string call = "orrery_run_team_scratch<&planets::spread_heat>(s, w, orrery_lanes_in_block(lane, 32u, "
                             "block_threads), orrery_team_shared_region())";
    size_t found = 0;
    for (const auto& [kernel, team_bytes] : k.team_shared_kernels) {
        EXPECT_EQ(team_bytes, bytes);
        for (const cuda::NodeProgram& p : k.programs)
            if (p.kernel == kernel) {
                EXPECT_EQ(p.node, "spread_heat");
                EXPECT_NE(p.text.find(call), std::string::npos) << p.text;
                ++found;
            }
    }
    EXPECT_EQ(found, runs);
    expect_nvrtc_compiles(s, k);
    for (auto form : {cuda::KernelForm::kPerNode, cuda::KernelForm::kDirect, cuda::KernelForm::kStaged}) {
        cuda::KernelSource other = cuda::generate_kernels(s, plan, form, form == cuda::KernelForm::kPerNode ? 16 : 32);
        EXPECT_TRUE(other.team_shared_kernels.empty()) << int(form);
        EXPECT_EQ(other.text.find("), orrery_team_shared_region("), std::string::npos) << int(form); // no call
    }
    // On the CPU the scratch stays in the slot: the same bytes as without.
    Simulator plain(spec(), options(5, "cpu", 2, 2)), kept(on_chip_spec(), options(5, "cpu", 2, 2));
    for (uint32_t step = 0; step < 8; ++step) {
        for (Simulator* sim : {&plain, &kept}) {
            write_thrust(*sim, step);
            sim->step();
        }
        ASSERT_EQ(hashes(kept), hashes(plain)) << "step " << step;
    }
}

TEST(Module, CheckpointsNameTheirAssetsByHash) {
    const std::string path = ::testing::TempDir() + "/planets_assets.ckpt";
    Simulator sim(spec(), options(4));
    write_thrust(sim, 0);
    sim.step();
    sim.save_checkpoint(path);
    uint64_t saved = sim.state_hash(2);
    Simulator same(spec(), options(4));
    same.load_checkpoint(path);
    EXPECT_EQ(same.state_hash(2), saved);
    // Other wells: the same sizes and options, other shared data.
    EnvSpec other = spec();
    other.asset<orbit::Wells>(std::vector<orbit::Well>{{0.5f, 0.0f, 0.2f, 0}, {-0.5f, 0.25f, 0.3f, 0}});
    Simulator differs(std::move(other), options(4));
    uint64_t before = differs.state_hash(2);
    try {
        differs.load_checkpoint(path);
        FAIL() << "a checkpoint made with other assets was loaded";
    } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("assets_sha256"), std::string::npos) << e.what(); }
    EXPECT_EQ(differs.state_hash(2), before); // untouched
}

TEST(Module, SystemsReachEveryArchetypeWithTheirComponents) {
    Simulator sim(spec(), options(4));
    // Before a step: positions as spawned; after one step every body (planets
    // and moons) has moved by integrate, which names no archetype.
    std::vector<orbit::Pos> before;
    sim.read_world(1, [&](Ctx& ctx) {
        uint32_t n = 0;
        ctx.each_with<orbit::Pos>([&](Entity e) {
            before.push_back(*ctx.get<orbit::Pos>(e));
            ++n;
        });
        EXPECT_EQ(n, 5u);
        EXPECT_EQ(ctx.count<planets::Moon>(), 2u);
    });
    write_thrust(sim, 0);
    sim.step();
    sim.read_world(1, [&](Ctx& ctx) {
        size_t i = 0;
        ctx.each_with<orbit::Pos, orbit::InvMass>([&](Entity e) {
            const orbit::Pos p = *ctx.get<orbit::Pos>(e);
            EXPECT_TRUE(p.x != before[i].x || p.y != before[i].y) << "body " << i << " did not move";
            ++i;
        });
        EXPECT_EQ(i, 5u);
        // Contacts are rebuilt each step: the buffer and the Contact entities agree.
        Buffer<orbit::Hits> hits = ctx.single_buffer<planets::Sky, orbit::Hits>();
        EXPECT_EQ(hits.size(), ctx.count<orbit::Contact>());
        for (uint32_t k = 0; k < hits.size(); ++k) EXPECT_LT(hits[k].dist2, 0.3f * 0.3f);
    });
}

TEST(Module, ContactsAreClearedInBulkEachStep) {
    Simulator sim(spec(), options(16));
    uint32_t most = 0;
    for (uint32_t step = 0; step < 40; ++step) {
        write_thrust(sim, step);
        sim.step();
        for (uint32_t w = 0; w < 16; ++w)
            sim.read_world(w, [&](Ctx& ctx) {
                uint32_t live = ctx.count<orbit::Contact>();
                uint32_t rows = 0;
                ctx.each<orbit::Contact>([&](Entity) { ++rows; });
                EXPECT_EQ(rows, live);
                EXPECT_LE(live, 10u); // at most one per pair of 5 bodies: nothing accumulates
                most = std::max(most, live);
            });
    }
    EXPECT_GT(most, 0u) << "no contact ever formed; the scenario tests nothing";
    EXPECT_EQ(sim.errors(), std::vector<uint32_t>(16, 0));
}

TEST(Module, AFullBufferRecordsOverflowInThatWorldOnly) {
    Simulator sim(spec(/*hit_capacity=*/1), options(32));
    std::vector<uint32_t> errors;
    for (uint32_t step = 0; step < 40; ++step) {
        write_thrust(sim, step);
        sim.step();
        errors = sim.errors();
        bool any = false;
        for (uint32_t e : errors) any = any || e != 0;
        if (any) break;
    }
    uint32_t overflowed = 0;
    for (uint32_t w = 0; w < 32; ++w) {
        if (errors[w] == 0) continue;
        EXPECT_EQ(errors[w], uint32_t(ErrorCode::kBufferOverflow)) << "world " << w;
        sim.read_world(w, [&](Ctx& ctx) {
            EXPECT_GE(ctx.count<orbit::Contact>(), 2u); // more contacts than the buffer holds
            EXPECT_EQ((ctx.single_buffer<planets::Sky, orbit::Hits>().size()), 1u);
        });
        ++overflowed;
    }
    EXPECT_GT(overflowed, 0u);
    EXPECT_LT(overflowed, 32u);
    EXPECT_THROW(sim.check_errors(), Error);
}

TEST(Module, SameBytesWhateverTheLanesThreadsAndBatch) {
    Simulator one(spec(), options(9, "cpu", 1, 1));
    Simulator lanes(spec(), options(9, "cpu", 3, 2));
    Simulator big(spec(), options(23, "cpu", 2, 2));
    for (uint32_t step = 0; step < 120; ++step) { // past two truncations (50 steps each)
        for (Simulator* s : {&one, &lanes, &big}) {
            write_thrust(*s, step);
            s->step();
        }
        std::vector<uint64_t> a = hashes(one), b = hashes(lanes), c = hashes(big);
        ASSERT_EQ(a, b) << "step " << step;
        // Thrust depends on the flat index, so worlds of the larger batch see
        // other actions; world 0 sees the same ones.
        ASSERT_EQ(a[0], c[0]) << "step " << step;
    }
}

/// warmth of every world (spread_heat's result, written by its lane 0).
std::vector<float> warmth(Simulator& sim) {
    const TensorView& t = sim.tensor("warmth");
    std::vector<float> v(t.bytes() / 4);
    sim.backend().copy_to_host(v.data(), t.data, t.bytes());
    return v;
}

TEST(Module, ATeamGivesTheSameBytesForAnyLaneCount) {
    // spread_heat's lanes read what the others wrote before each sync; on the
    // CPU more than one lane runs as threads meeting at a real barrier.
    std::vector<std::unique_ptr<Simulator>> sims;
    for (uint32_t lanes : {1u, 2u, 3u, 8u, 32u})
        sims.push_back(std::make_unique<Simulator>(spec(), options(5, "cpu", lanes, 2)));
    std::vector<float> first;
    for (uint32_t step = 0; step < 12; ++step) {
        for (auto& s : sims) {
            write_thrust(*s, step);
            s->step();
        }
        for (size_t i = 1; i < sims.size(); ++i)
            ASSERT_EQ(hashes(*sims[i]), hashes(*sims[0])) << "lanes " << i << " step " << step;
        std::vector<float> w = warmth(*sims[0]);
        for (float x : w) EXPECT_GT(x, 0.0f) << "step " << step;
        if (step == 0) first = w;
    }
    EXPECT_NE(warmth(*sims[0]), first); // the bodies moved, so the heat changed
}

TEST(Module, DependenciesAreATopologicalOrder) {
    EnvSpec s = spec();
    auto step = s.ordered(Phase::kStep);
    ASSERT_EQ(step.size(), 4u);
    EXPECT_STREQ(step[0]->system.name, "thrust");
    // integrate waits for thrust, contacts for integrate; keep_score for contacts only.
    std::vector<uint32_t> idx;
    for (uint32_t i = 0; i < s.nodes().size(); ++i)
        if (s.nodes()[i].phase == Phase::kStep) idx.push_back(i);
    EXPECT_TRUE(s.depends_on(idx[1], idx[0]));
    EXPECT_TRUE(s.depends_on(idx[3], idx[0])); // through integrate and contacts
    EXPECT_FALSE(s.depends_on(idx[0], idx[1]));
    // Without a list a node waits for every earlier node of its phase.
    EnvSpec t = spec();
    NodeId a = t.add(Phase::kStep, ORRERY_PER_WORLD(planets::keep_score));
    NodeId b = t.add(Phase::kStep, ORRERY_PER_WORLD(planets::keep_score), {});
    EXPECT_EQ(t.nodes()[a.index].deps.size(), 4u);
    EXPECT_TRUE(t.nodes()[b.index].deps.empty());
}

TEST(Module, HeadersOutsideTheLibraryCompileThroughNvrtc) {
    // NVRTC needs no GPU: the module's and env's headers are found under the
    // env's header root, and only headers the source reaches are compiled.
    for (const EnvSpec& s : {spec(), big_spec()}) {
        for (auto form : {cuda::KernelForm::kStaged, cuda::KernelForm::kDirect, cuda::KernelForm::kPerNode}) {
            Plan plan = make_plan(s, AutoReset::kSameStep);
            cuda::KernelSource k = cuda::generate_kernels(s, plan, form);
            if (form != cuda::KernelForm::kStaged) {
                const bool big = s.archetype_specs()[archetype_id<planets::Moon>].capacity > 32;
                EXPECT_EQ(k.lanes, big ? 64u : 16u); // observe's 16, or integrate's 60 moons
                // A node with step scratch takes a slot around its run (device/scratch.cuh).
                EXPECT_NE(k.text.find("orrery_run_team_scratch<&planets::spread_heat>(s, w, orrery_lanes(lane, 16u))"),
                          std::string::npos);
                if (form == cuda::KernelForm::kDirect) {
                    EXPECT_NE(k.text.find(big ? "__syncthreads(); // before orbit::integrate"
                                              : "__syncwarp(group); // before orbit::integrate"),
                              std::string::npos);
                }
            }
            if (form == cuda::KernelForm::kStaged) {
                EXPECT_NE(k.text.find("spread_heat, in a team of lanes"), std::string::npos);
                EXPECT_NE(k.text.find("orrery_run_team_scratch<&planets::spread_heat>(s, threadIdx.x / team, "),
                          std::string::npos);
            }
            EXPECT_NE(k.text.find("orrery_run_world_scratch<&planets::contacts>(s, w);"), std::string::npos);
            EXPECT_NE(k.text.find("orrery_scratch_take()"), std::string::npos);
            expect_nvrtc_compiles(s, k);
        }
    }
    cuda::CompileRequest missing;
    missing.source = "#include \"tests/modules/planets/planets.hpp\"\n";
    missing.env_header = "tests/modules/planets/planets.hpp";
    missing.use_cache = false;
    EXPECT_THROW(cuda::compile_module(missing), Error); // no header root: not built in
}

TEST(Module, DeviceDefinesComeAheadOfTheEnvHeaderAndAreChecked) {
    // EnvSpec::device_define: `#define NAME VALUE` ahead of the env's header
    // in every kernel form (a per-node program shares the head), the last
    // value given for a name, and NVRTC sees it (needs no GPU).
    EnvSpec s = spec();
    s.device_define("PLANETS_PROBE", "3u");
    s.device_define("PLANETS_PROBE", "4u"); // replaced, not repeated
    s.device_define("PLANETS_OTHER", "");
    ASSERT_EQ(s.device_defines().size(), 2u);
    Plan plan = make_plan(s, AutoReset::kSameStep);
    for (auto form : {cuda::KernelForm::kStaged, cuda::KernelForm::kDirect, cuda::KernelForm::kPerNode}) {
        cuda::KernelSource k = cuda::generate_kernels(s, plan, form);
        const size_t at = k.text.find("#define PLANETS_PROBE 4u\n#define PLANETS_OTHER \n");
        EXPECT_NE(at, std::string::npos);
        EXPECT_LT(at, k.text.find("#include \"" + s.source() + "\""));
        EXPECT_EQ(k.text.find("PLANETS_PROBE 3u"), std::string::npos);
        if (form == cuda::KernelForm::kPerNode) {
            EXPECT_LT(at, k.program_head);
            expect_nvrtc_compiles(s, k);
        }
    }
    // Ahead of the header: a define that breaks its namespace's name fails the compile.
    EnvSpec broken = spec();
    broken.device_define("planets", "1");
    cuda::KernelSource k =
        cuda::generate_kernels(broken, make_plan(broken, AutoReset::kSameStep), cuda::KernelForm::kDirect);
    cuda::CompileRequest r = cuda::kernel_request(broken, k, 90);
    r.use_cache = false;
    EXPECT_THROW(cuda::compile_module(r), Error);
    // Bad names and values are refused, naming the define.
    auto refused = [&](const std::string& name, const std::string& value, const std::string& want) {
        EnvSpec t = spec();
        try {
            t.device_define(name, value);
            ADD_FAILURE() << "device_define('" << name << "') was accepted";
        } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what(); }
        EXPECT_TRUE(t.device_defines().empty());
    };
    refused("", "1", "device_define name '' is invalid; expected a C identifier");
    refused("2D", "1", "device_define name '2D' is invalid");
    refused("A-B", "1", "device_define name 'A-B' is invalid");
    refused("A", "1\n#include <x>", "device_define A has a value spanning lines");
    refused("A", "1 \\", "device_define A has a value spanning lines or holding a backslash");
}

TEST(Module, AnEnvsWorldLanesSizeItsTeamUnlessTheSimulatorSays) {
    // EnvSpec::world_lanes is the env's measured team size; GpuOptions::world_lanes
    // (ORRERY_CUDA_LANES) overrides it; 0 leaves the engine's. Needs no GPU.
    EnvSpec s = spec();
    EXPECT_EQ(cuda::world_lanes_for(s, 0), cuda::kWorldLanes);
    s.world_lanes = 32;
    EXPECT_EQ(cuda::world_lanes_for(s, 0), 32u);
    EXPECT_EQ(cuda::world_lanes_for(s, 8), 8u);
    Plan plan = make_plan(s, AutoReset::kSameStep);
    cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, cuda::world_lanes_for(s, 0));
    // A team of a whole warp in the per-node form: the block's teams that run
    // the node are counted before any thread leaves (Lanes::align meets them).
    EXPECT_NE(k.text.find("orrery_run_team_scratch<&planets::spread_heat>(s, w, orrery_lanes_in_block(lane, 32u, "
                          "block_threads))"),
              std::string::npos);
    EXPECT_NE(k.text.find("__syncthreads_count(runs)"), std::string::npos);
    for (uint32_t bad : {3u, 64u}) {
        s.world_lanes = bad;
        try {
            cuda::world_lanes_for(s, 0);
            ADD_FAILURE() << bad << " lanes were accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("EnvSpec::world_lanes of env '" + s.name() + "' is " +
                                                 std::to_string(bad) + "; expected 0"),
                      std::string::npos)
                << e.what();
        }
        EXPECT_EQ(cuda::world_lanes_for(s, 16), 16u) << "the simulator's choice stands";
    }
}

TEST(Module, WorldLanesSizeTheTeamAndAreChecked) {
    // GpuOptions::world_lanes sets a team's size in the direct and per-node
    // forms; a per-entity lane node keeps its rows (4 here); the world gets
    // the most any node uses. Needs NVRTC only.
    EnvSpec s = spec();
    Plan plan = make_plan(s, AutoReset::kSameStep);
    for (auto [lanes, team, world] : {std::tuple{32u, 32u, 32u}, {4u, 4u, 4u}, {1u, 1u, 4u}}) {
        cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kDirect, lanes);
        EXPECT_EQ(k.lanes, world) << lanes;
        std::string call =
            "orrery_run_team_scratch<&planets::spread_heat>(s, w, orrery_lanes(lane, " + std::to_string(team) + "u))";
        EXPECT_NE(k.text.find(call), std::string::npos) << lanes << ": " << call;
        if (lanes != 32u) continue;
        expect_nvrtc_compiles(s, k);
    }
    for (unsigned bad : {0u, 3u, 64u}) {
        try {
            cuda::generate_kernels(s, plan, cuda::KernelForm::kDirect, bad);
            ADD_FAILURE() << bad << " lanes were accepted";
        } catch (const Error& e) {
            EXPECT_NE(std::string(e.what()).find("world_lanes (ORRERY_CUDA_LANES) is " + std::to_string(bad)),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(Module, RegisterBoundsReachTheirNodesKernels) {
    // Needs NVRTC only. EnvSpec::bound_registers puts the node's bound on its
    // own per-node kernels (every pass it runs in) and on no other kernel,
    // beside the block's bound where there is one; the megakernels hold none.
    EnvSpec bad = spec();
    expect_refused([&] { bad.bound_registers(NodeId{99}, 64); }, "bound_registers() names no node of this env");
    expect_refused([&] { bad.bound_registers(node_named(bad, "observe"), 8); },
                   "bound_registers() for node 'observe' is 8; expected 16 to 255 registers a thread");
    expect_refused([&] { bad.bound_registers(node_named(bad, "observe"), 256); },
                   "bound_registers() for node 'observe' is 256; expected 16 to 255");
    EnvSpec s = spec();
    s.bound_registers(node_named(s, "observe"), 64);
    Plan plan = make_plan(s, AutoReset::kSameStep);
    for (unsigned block : {256u, 384u}) {
        cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, 32, block);
        const std::string bound =
            "ORRERY_NODE_REGS(64, " + std::string(block > 256 ? "__launch_bounds__(384, 1)" : "") + ") ";
        size_t bounded = 0;
        for (const cuda::NodeProgram& p : k.programs) {
            const bool has = p.text.find("__global__ void " + bound + p.kernel + "(") != std::string::npos;
            EXPECT_EQ(has, p.node == "observe") << p.kernel << " (" << p.node << ")";
            EXPECT_EQ(p.text.find("void ORRERY_NODE_REGS") != std::string::npos, p.node == "observe") << p.kernel;
            bounded += has ? 1u : 0u;
        }
        EXPECT_GE(bounded, 2u) << "observe runs in the step pass and the reset pass";
        expect_nvrtc_compiles(s, k);
    }
    for (cuda::KernelForm form : {cuda::KernelForm::kDirect, cuda::KernelForm::kStaged})
        EXPECT_EQ(cuda::generate_kernels(s, plan, form, 32).text.find("void ORRERY_NODE_REGS"), std::string::npos);
}

TEST(Module, TeamBlocksBoundTheKernelsAndAreChecked) {
    // A team block above 256 threads (EnvSpec::team_block_threads, or
    // GpuOptions::team_block_threads over it) compiles every direct and
    // per-node kernel to fit one such block on an SM; 256 and below leave
    // the kernels unbounded. Needs NVRTC only.
    EnvSpec s = spec();
    Plan plan = make_plan(s, AutoReset::kSameStep);
    EXPECT_EQ(cuda::team_block_for(s, 0), 256u) << "the engine's block";
    s.team_block_threads = 384;
    EXPECT_EQ(cuda::team_block_for(s, 0), 384u) << "the env's";
    EXPECT_EQ(cuda::team_block_for(s, 512), 512u) << "the simulator's choice stands";
    for (cuda::KernelForm form : {cuda::KernelForm::kDirect, cuda::KernelForm::kPerNode}) {
        cuda::KernelSource k = cuda::generate_kernels(s, plan, form, 32, cuda::team_block_for(s, 0));
        const std::string bound = "__launch_bounds__(384, 1) ";
        size_t kernels = 0, bounded = 0;
        for (size_t at = k.text.find("__global__ void "); at != std::string::npos;
             at = k.text.find("__global__ void ", at + 1), ++kernels)
            bounded += k.text.compare(at + 16, bound.size(), bound) == 0 ? 1u : 0u;
        EXPECT_GT(kernels, 0u);
        EXPECT_EQ(bounded, kernels) << "every kernel of the form is bounded";
        if (form == cuda::KernelForm::kDirect) expect_nvrtc_compiles(s, k);
        EXPECT_EQ(cuda::generate_kernels(s, plan, form, 32, 256).text.find("__launch_bounds__"), std::string::npos);
    }
    for (unsigned bad : {100u, 1056u}) {
        s.team_block_threads = bad;
        expect_refused([&] { cuda::team_block_for(s, 0); },
                       "EnvSpec::team_block_threads of env '" + s.name() + "' is " + std::to_string(bad));
        expect_refused([&] { cuda::team_block_for(s, bad); },
                       "GpuOptions::team_block_threads (ORRERY_CUDA_BLOCK_THREADS) is " + std::to_string(bad));
    }
}

/// Steps `make()`'s env on the CPU and in every GPU kernel form and compares
/// every world's state hash after every step.
void gpu_parity(EnvSpec (*make)(), uint32_t worlds, uint32_t steps, bool expect_staged) {
    Simulator cpu(make(), options(worlds, "cpu", 1, 2));
    SimOptions in_shared = options(worlds, "cuda");
    in_shared.gpu.stage = true; // the staged megakernel (where the worlds fit)
    Simulator staged(make(), in_shared);
    SimOptions in_global = options(worlds, "cuda");
    in_global.gpu.stage = false; // the direct megakernel
    Simulator direct(make(), in_global);
    SimOptions per_node = options(worlds, "cuda");
    per_node.per_node_launches = true;
    Simulator node(make(), per_node);
    SimOptions few_slots = options(worlds, "cuda");
    few_slots.gpu.stage = false;
    few_slots.gpu.scratch_slots = 3; // teams wait for slots, which pass between worlds all the time
    Simulator few(make(), few_slots);
    EXPECT_EQ(dynamic_cast<cuda::CudaBackend&>(staged.backend()).staged(), expect_staged)
        << staged.backend().describe();
    EXPECT_EQ(few.memory_report().scratch_slots, 3u);
    EXPECT_GT(direct.memory_report().scratch_slots, 3u);
    EXPECT_LE(direct.memory_report().scratch_slots, worlds);
    std::vector<Simulator*> sims = {&cpu, &staged, &direct, &node, &few};
    for (Simulator* s : sims) s->reset(11);
    for (uint32_t step = 0; step < steps; ++step) {
        for (Simulator* s : sims) {
            write_thrust(*s, step);
            s->step();
        }
        std::vector<uint64_t> want = hashes(cpu);
        for (size_t i = 1; i < sims.size(); ++i)
            ASSERT_EQ(hashes(*sims[i]), want) << sims[i]->backend().describe() << " differs at step " << step;
    }
    for (Simulator* s : sims) EXPECT_EQ(s->errors(), cpu.errors());
}

TEST(Module, GpuMatchesTheCpuInEveryKernelForm) {
    REQUIRE_GPU();
    gpu_parity(
        +[] { return spec(); }, 300, 120, true);
}

/// Steps `cpu` and every GPU simulator 60 steps with the same thrust and
/// expects every world's state hash (and with `warmth_too` the warmth) to be
/// the CPU's after every step.
void expect_gpus_step_as_the_cpu(Simulator& cpu, const std::vector<std::unique_ptr<Simulator>>& gpus,
                                 bool warmth_too = false) {
    cpu.reset(11);
    for (auto& g : gpus) g->reset(11);
    for (uint32_t step = 0; step < 60; ++step) {
        write_thrust(cpu, step);
        cpu.step();
        for (auto& g : gpus) {
            write_thrust(*g, step);
            g->step();
            ASSERT_EQ(hashes(*g), hashes(cpu)) << g->backend().describe() << " differs at step " << step;
            if (warmth_too) { ASSERT_EQ(warmth(*g), warmth(cpu)) << "step " << step; }
        }
    }
}

TEST(Module, GpuTeamsOfAnySizeMatchTheCpu) {
    REQUIRE_GPU();
    Simulator cpu(spec(), options(300, "cpu", 1, 2));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (uint32_t lanes : {1u, 2u, 8u, 32u}) {
        SimOptions o = options(300, "cuda");
        o.gpu.stage = false;
        o.gpu.world_lanes = lanes;
        gpus.push_back(std::make_unique<Simulator>(spec(), o));
    }
    expect_gpus_step_as_the_cpu(cpu, gpus);
}

TEST(Module, GpuTeamsKeepingScratchOnChipMatchTheCpu) {
    REQUIRE_GPU();
    Simulator cpu(on_chip_spec(), options(300, "cpu", 1, 2));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (bool on_chip : {true, false}) {
        SimOptions o = options(300, "cuda");
        o.per_node_launches = true;
        o.gpu.team_shared = on_chip;
        gpus.push_back(std::make_unique<Simulator>(on_chip_spec(), o));
    }
    const std::string used = gpus[0]->memory_report().scratch_shared_use;
    EXPECT_NE(used.find("shared memory of spread_heat's blocks"), std::string::npos) << used;
    EXPECT_EQ(gpus[1]->memory_report().scratch_shared_use, "");
    expect_gpus_step_as_the_cpu(cpu, gpus, /*warmth_too=*/true);
}

TEST(Module, GpuTeamsOrderedByCostMatchTheCpu) {
    // spread_heat's hints reorder its teams every step; 300 worlds leave the
    // last block part full. Every world must run once, whichever team takes it.
    REQUIRE_GPU();
    Simulator cpu(ordered_spec(), options(300, "cpu", 1, 2));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (uint32_t order : {2u, 0u, 1u}) { // always, never, past one wave (300 worlds fit one)
        SimOptions o = options(300, "cuda");
        o.per_node_launches = true;
        o.gpu.order_teams = order;
        gpus.push_back(std::make_unique<Simulator>(ordered_spec(), o));
    }
    EXPECT_NE(gpus[0]->backend().describe().find("teams ordered by cost"), std::string::npos)
        << gpus[0]->backend().describe();
    EXPECT_NE(gpus[0]->backend().storage().team_order, nullptr);
    EXPECT_EQ(gpus[0]->memory_report().team_order_bytes, 300u * 8u);
    EXPECT_EQ(gpus[0]->memory_report().total_bytes, gpus[1]->memory_report().total_bytes + 300u * 8u);
    EXPECT_NE(gpus[0]->memory_report().to_string().find("teams ordered by cost (a hint and a place a world): 2400 "
                                                        "bytes"),
              std::string::npos);
    for (size_t k : {1u, 2u}) {
        EXPECT_EQ(gpus[k]->backend().describe().find("teams ordered by cost"), std::string::npos);
        EXPECT_EQ(gpus[k]->backend().storage().team_order, nullptr);
    }
    expect_gpus_step_as_the_cpu(cpu, gpus, /*warmth_too=*/true);
}

// Per-node kernels take their threads a world at launch where the form's
// teams are 2 to 32 lanes: a serial node's kernel (keep_score, spawn, the
// engine's begin and end) 1 or the team's lanes, a lane node no team runs
// (observe) up to 256, a per-entity lane node up to its rows. A team node
// or a node that keeps scratch keeps the form's lanes and takes no argument.
TEST(Module, LanesChosenAtLaunchNameTheirKernels) {
    // Needs NVRTC only.
    for (uint32_t pack : {0u, 1u, 2u}) EXPECT_NO_THROW(cuda::check_launch_lanes(pack, 0, pack));
    for (uint32_t wide : {1u, 32u, 64u, 256u}) EXPECT_NO_THROW(cuda::check_launch_lanes(1, wide, 1));
    expect_refused([] { cuda::check_launch_lanes(3, 0, 1); },
                   "GpuOptions::pack_serial (ORRERY_CUDA_PACK_SERIAL) is 3; expected 0 (never), 1 (past one wave) or "
                   "2 (always)");
    expect_refused([] { cuda::check_launch_lanes(1, 0, 3); },
                   "GpuOptions::pack_teams (ORRERY_CUDA_PACK_TEAMS) is 3; expected 0 (never), 1 (past one wave) or "
                   "2 (always)");
    expect_refused([] { cuda::check_launch_lanes(1, 48, 1); },
                   "GpuOptions::wide_lanes (ORRERY_CUDA_WIDE_LANES) is 48; expected 0 (chosen at launch) or a power "
                   "of two from 1 to 256");
    expect_refused([] { cuda::check_launch_lanes(1, 512, 1); },
                   "GpuOptions::wide_lanes (ORRERY_CUDA_WIDE_LANES) is 512");
    for (uint32_t mb : {0u, 1u, 4096u}) EXPECT_NO_THROW(cuda::check_printf_mb(mb));
    expect_refused([] { cuda::check_printf_mb(4097); },
                   "GpuOptions::printf_mb (ORRERY_CUDA_PRINTF_MB) is 4097; expected 0 (the driver's 1 MB) or 1 to "
                   "4096 megabytes");

    EnvSpec s = spec();
    Plan plan = make_plan(s, AutoReset::kSameStep);
    cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kPerNode, 32);
    auto nodes_of = [&](const std::string& kernel) { // a fused run of serial ops has several (fuse_serial)
        for (const cuda::NodeProgram& p : k.programs)
            if (p.kernel == kernel) return p.nodes;
        return std::vector<std::string>{"?"};
    };
    std::map<std::string, std::pair<bool, unsigned>> seen; // node: serial, most
    for (const cuda::LaunchLanes& l : k.launch_lanes) {
        for (const std::string& node : nodes_of(l.kernel)) seen[node] = {l.serial, l.most};
        for (const cuda::NodeProgram& p : k.programs) {
            if (p.kernel == l.kernel) {
                EXPECT_NE(p.text.find(l.kernel + "(const unsigned orrery_lane_shift)"), std::string::npos) << p.text;
            }
        }
    }
    EXPECT_EQ(seen["keep_score"], std::make_pair(true, 32u));
    EXPECT_EQ(seen["spawn"], std::make_pair(true, 32u));
    EXPECT_EQ(seen["observe"], std::make_pair(false, 256u));
    EXPECT_EQ(seen.count("spread_heat"), 0u) << "a team node keeps its team";
    EXPECT_EQ(seen.count("contacts"), 0u) << "a node keeping scratch keeps the form's lanes";
    EXPECT_EQ(seen.count("thrust"), 0u) << "3 planets: 4 lanes, fewer than the form's 32";
    EXPECT_EQ(seen.count("orbit::integrate"), 0u) << "at most 3 rows an archetype: 4 lanes";
    expect_nvrtc_compiles(s, k);
    // The megakernels choose nothing at launch, nor a form of a block a
    // world: many moons give integrate's 63 bodies 64 lanes.
    EXPECT_TRUE(cuda::generate_kernels(s, plan, cuda::KernelForm::kDirect, 32).launch_lanes.empty());
    EXPECT_TRUE(cuda::generate_kernels(s, plan, cuda::KernelForm::kStaged, 32).launch_lanes.empty());
    EnvSpec big = big_spec();
    cuda::KernelSource kb =
        cuda::generate_kernels(big, make_plan(big, AutoReset::kSameStep), cuda::KernelForm::kPerNode, 32);
    EXPECT_EQ(kb.lanes, 64u);
    EXPECT_TRUE(kb.launch_lanes.empty());
}

// Every choice of lanes at launch gives the CPU's bytes: serial kernels
// packed 32 worlds a warp or a world a warp, lane nodes on 32 to 256 lanes
// (several warps a world), and the default's own choice.
TEST(Module, GpuLanesChosenAtLaunchMatchTheCpu) {
    REQUIRE_GPU();
    Simulator cpu(spec(), options(300, "cpu", 1, 2));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (auto [pack, wide] : {std::pair{2u, 256u}, {0u, 64u}, {2u, 32u}, {1u, 0u}}) {
        SimOptions o = options(300, "cuda");
        o.per_node_launches = true;
        o.gpu.world_lanes = 32;
        o.gpu.pack_serial = pack;
        o.gpu.wide_lanes = wide;
        gpus.push_back(std::make_unique<Simulator>(spec(), o));
    }
    EXPECT_NE(gpus[0]->backend().describe().find("observe 256"), std::string::npos) << gpus[0]->backend().describe();
    EXPECT_NE(gpus[0]->backend().describe().find("serial nodes 32 worlds a warp"), std::string::npos)
        << gpus[0]->backend().describe();
    EXPECT_NE(gpus[1]->backend().describe().find("observe 64"), std::string::npos) << gpus[1]->backend().describe();
    EXPECT_NE(gpus[1]->backend().describe().find("serial nodes a world a warp"), std::string::npos)
        << gpus[1]->backend().describe();
    expect_gpus_step_as_the_cpu(cpu, gpus, /*warmth_too=*/true);
}

TEST(Module, GpuLargeWorldsRunDirectWithABlockPerWorld) {
    REQUIRE_GPU();
    {
        SimOptions in_global = options(40, "cuda");
        in_global.gpu.stage = false;
        Simulator direct(big_spec(), in_global);
        EXPECT_NE(direct.backend().describe().find("64 lanes/world"), std::string::npos) << direct.backend().describe();
    }
    gpu_parity(&big_spec, 40, 60, false);
}

} // namespace
