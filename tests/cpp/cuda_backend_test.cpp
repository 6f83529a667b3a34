// The CUDA backend against the CPU backend: every registered env runs 1,000
// steps from the same seed and actions on both, and every world's state hash
// (plus every exported tensor) must match after every step, bit for bit. Also:
// per-node launches against the megakernel, CUDA graph capture, device-side
// input checks, and the errors and fallback of device selection. Tests that
// need a GPU skip cleanly without one.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "envs/registry.hpp"
#include "gpu_support.hpp"

namespace {

using orrery::Simulator;

orrery::SimOptions options(uint32_t worlds, const std::string& device, orrery::AutoReset mode, bool per_node = false) {
    orrery::SimOptions o;
    o.num_worlds = worlds;
    o.threads = 2;
    o.device = device;
    o.autoreset = mode;
    o.per_node_launches = per_node;
    return o;
}

/// Tag on the GPU: most tests here compare two or three of these.
Simulator tag_on_cuda(uint32_t worlds, orrery::AutoReset mode) {
    return Simulator(orrery::make_env_spec("tag", {}), options(worlds, "cuda", mode));
}

/// Every world's Simulator::state_hash, read with one bulk copy per region.
std::vector<uint64_t> world_hashes(Simulator& sim) {
    const uint32_t W = sim.num_worlds();
    orrery::StorageLayout layout = orrery::make_layout(sim.spec(), W, sim.options().autoreset);
    std::vector<orrery::Region> regions = layout.regions(sim.backend().storage());
    std::vector<std::vector<uint8_t>> host(regions.size());
    sim.synchronize();
    for (size_t i = 0; i < regions.size(); ++i) {
        host[i].resize(regions[i].bytes_per_world * W);
        sim.backend().copy_to_host(host[i].data(), regions[i].base, host[i].size());
    }
    std::vector<uint64_t> out(W, 1469598103934665603ull);
    for (uint32_t w = 0; w < W; ++w)
        for (size_t i = 0; i < regions.size(); ++i) {
            size_t n = regions[i].bytes_per_world;
            for (size_t k = 0; k < n; ++k) out[w] = (out[w] ^ host[i][w * n + k]) * 1099511628211ull;
        }
    return out;
}

/// The bytes of every exported tensor (outputs, final_ copies, terminated, truncated, errors).
std::vector<std::vector<uint8_t>> tensors_of(Simulator& sim) {
    std::vector<std::vector<uint8_t>> out;
    sim.synchronize();
    for (const orrery::TensorView& t : sim.tensors()) {
        out.emplace_back(t.bytes());
        sim.backend().copy_to_host(out.back().data(), t.data, t.bytes());
    }
    return out;
}

/// Host-generated uniform values for every ranged input, one buffer per input.
struct Actions {
    uint64_t state = 0x243F6A8885A308D3ull;
    std::vector<std::vector<uint8_t>> fill(Simulator& sim) { return orrery::random_inputs(sim, state); }
    static void write(Simulator& sim, const std::vector<std::vector<uint8_t>>& values) {
        size_t i = 0;
        for (const auto& [name, range] : sim.spec().input_ranges()) {
            const orrery::TensorView& t = sim.tensor(name);
            sim.backend().copy_from_host(t.data, values[i].data(), values[i].size());
            ++i;
        }
    }
};

std::string first_mismatch(const std::vector<uint64_t>& want, const std::vector<uint64_t>& got) {
    for (size_t w = 0; w < want.size(); ++w)
        if (want[w] != got[w]) return "world " + std::to_string(w);
    return "";
}

/// Runs one env on the CPU, the GPU megakernel and GPU per-node launches, and
/// compares every world's hash and every tensor after every step.
void run_parity(const std::string& env, orrery::AutoReset mode, uint32_t worlds, uint32_t steps) {
    orrery::register_builtin_envs();
    Simulator cpu(orrery::make_env_spec(env, {}), options(worlds, "cpu", mode));
    orrery::SimOptions staged = options(worlds, "cuda", mode);
    staged.gpu.stage = true;      // the megakernel staging worlds in shared memory
    staged.gpu.megakernel = true; // hide_and_seek prefers the per-node form
    Simulator mega(orrery::make_env_spec(env, {}), staged);
    orrery::SimOptions global = options(worlds, "cuda", mode);
    global.gpu.stage = false; // the megakernel working on global memory directly
    Simulator direct(orrery::make_env_spec(env, {}), global);
    Simulator node(orrery::make_env_spec(env, {}), options(worlds, "cuda", mode, true));
    // A staged block holds at least 16 worlds in shared memory: the physics
    // envs' worlds (tens of KB each) do not fit, and their megakernel runs on
    // global memory instead (CudaBackend::choose_stage_worlds).
    const bool fits = env != "physics_scenes" && env != "hide_and_seek";
    EXPECT_EQ(dynamic_cast<orrery::cuda::CudaBackend&>(mega.backend()).staged(), fits) << mega.backend().describe();
    EXPECT_FALSE(dynamic_cast<orrery::cuda::CudaBackend&>(direct.backend()).staged());
    std::vector<Simulator*> sims = {&cpu, &mega, &direct, &node};
    const char* names[] = {"cpu", "cuda staged megakernel", "cuda direct megakernel", "cuda per-node"};
    for (Simulator* s : sims) s->reset(7);
    Actions actions;
    std::vector<uint8_t> mask(worlds, 0);
    for (uint32_t step = 0; step < steps; ++step) {
        auto values = actions.fill(cpu);
        for (Simulator* s : sims) Actions::write(*s, values);
        if (step % 97 == 50) { // exercise the reset pass on a few worlds
            for (uint32_t w = 0; w < worlds; ++w) mask[w] = (w + step) % 5 == 0;
            for (Simulator* s : sims) s->reset_worlds(mask);
        }
        for (Simulator* s : sims) s->step();
        std::vector<uint64_t> want = world_hashes(cpu);
        auto want_tensors = tensors_of(cpu);
        for (size_t i = 1; i < sims.size(); ++i) {
            std::string diff = first_mismatch(want, world_hashes(*sims[i]));
            ASSERT_EQ(diff, "") << env << ": " << names[i] << " differs from the cpu at step " << step;
            auto got = tensors_of(*sims[i]);
            for (size_t t = 0; t < got.size(); ++t)
                ASSERT_TRUE(got[t] == want_tensors[t]) << env << ": tensor '" << cpu.tensors()[t].name
                                                       << "' differs on " << names[i] << " at step " << step;
        }
        ASSERT_NO_THROW(cpu.check_errors());
    }
    // The bulk hash is the simulator's own definition of a world's hash.
    EXPECT_EQ(world_hashes(mega)[worlds - 1], mega.state_hash(worlds - 1));
}

class Parity : public ::testing::TestWithParam<orrery::AutoReset> {};

std::string mode_name(const ::testing::TestParamInfo<orrery::AutoReset>& info) {
    const char* names[] = {"NextStep", "SameStep", "Disabled"};
    return names[int(info.param)];
}

TEST_P(Parity, EveryEnvMatchesTheCpuEveryStep) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    for (const auto& [env, summary] : orrery::registered_envs()) {
        SCOPED_TRACE(env);
        run_parity(env, GetParam(), 64, 1000);
        if (HasFatalFailure()) return;
    }
}

INSTANTIATE_TEST_SUITE_P(Cuda, Parity,
                         ::testing::Values(orrery::AutoReset::kNextStep, orrery::AutoReset::kSameStep,
                                           orrery::AutoReset::kDisabled),
                         mode_name);

/// CPU against the staged megakernel at several block widths (a partial last
/// block included) and the direct one, with actions drawn inside the step
/// (SimOptions::random_inputs) on each device.
void run_block_parity(const std::string& env, uint32_t worlds, uint32_t steps) {
    orrery::register_builtin_envs();
    auto opts = [&](const std::string& device) {
        orrery::SimOptions o = options(worlds, device, orrery::AutoReset::kNextStep);
        o.random_inputs = true;
        return o;
    };
    std::vector<std::unique_ptr<Simulator>> sims;
    std::vector<std::string> names;
    sims.push_back(std::make_unique<Simulator>(orrery::make_env_spec(env, {}), opts("cpu")));
    names.push_back("cpu");
    for (uint32_t block : {16u, 48u, 80u, 256u}) {
        orrery::SimOptions o = opts("cuda");
        o.gpu.stage_worlds = block;
        sims.push_back(std::make_unique<Simulator>(orrery::make_env_spec(env, {}), o));
        names.push_back(sims.back()->backend().describe());
    }
    orrery::SimOptions global = opts("cuda");
    global.gpu.stage = false;
    sims.push_back(std::make_unique<Simulator>(orrery::make_env_spec(env, {}), global));
    names.push_back(sims.back()->backend().describe());
    for (auto& s : sims) s->reset(11);
    for (uint32_t step = 0; step < steps; ++step) {
        for (auto& s : sims) s->step();
        std::vector<uint64_t> want = world_hashes(*sims[0]);
        auto want_tensors = tensors_of(*sims[0]);
        for (size_t i = 1; i < sims.size(); ++i) {
            ASSERT_EQ(first_mismatch(want, world_hashes(*sims[i])), "")
                << env << ": " << names[i] << " differs from the cpu at step " << step;
            ASSERT_TRUE(tensors_of(*sims[i]) == want_tensors) << env << ": " << names[i] << " at step " << step;
        }
    }
    ASSERT_NO_THROW(sims[0]->check_errors());
}

TEST(CudaParity, StagedBlockWidthsAndDeviceDrawnActionsMatchTheCpu) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    for (const auto& [env, summary] : orrery::registered_envs()) {
        SCOPED_TRACE(env);
        run_block_parity(env, 1000, 300);
        if (HasFatalFailure()) return;
    }
}

TEST(CudaSanitize, SmallBatchEveryEnv) {
    // Kept small so tools/gpu_check.sh can run it under compute-sanitizer.
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    for (const auto& [env, summary] : orrery::registered_envs()) {
        SCOPED_TRACE(env);
        const char* steps = std::getenv("ORRERY_SANITIZE_STEPS"); // fewer under racecheck
        run_parity(env, orrery::AutoReset::kSameStep, 8, steps ? uint32_t(std::atoi(steps)) : 40u);
        if (HasFatalFailure()) return;
    }
}

TEST(CudaBackend, BadActionIsRecordedAndThatWorldDoesNotStep) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    Simulator sim = tag_on_cuda(4, orrery::AutoReset::kNextStep);
    sim.step();
    const orrery::TensorView& a = sim.tensor("action");
    std::vector<int32_t> act(a.bytes() / 4, 1);
    act[2 * a.shape[1]] = 99; // world 2, agent 0
    sim.backend().copy_from_host(a.data, act.data(), a.bytes());
    uint32_t before = 0;
    sim.read_world(2, [&](orrery::Ctx& c) { before = c.step(); });
    sim.step();
    std::vector<uint32_t> e = sim.errors();
    EXPECT_EQ(e[2], uint32_t(orrery::ErrorCode::kBadAction));
    EXPECT_EQ(e[0], 0u);
    EXPECT_EQ(e[1], 0u);
    EXPECT_THROW(sim.check_errors(), orrery::Error);
    sim.read_world(2, [&](orrery::Ctx& c) { EXPECT_EQ(c.step(), before); });
    sim.read_world(1, [&](orrery::Ctx& c) { EXPECT_EQ(c.step(), before + 1); });
}

/// Device memory for a test, freed at scope exit.
struct DeviceBuffer {
    orrery::cuda::CUdeviceptr p = 0;
    explicit DeviceBuffer(size_t n) { ORRERY_CU(orrery::cuda::driver().cuMemAlloc(&p, n)); }
    ~DeviceBuffer() { orrery::cuda::driver().cuMemFree(p); }
    uint8_t* at(size_t offset) const { return reinterpret_cast<uint8_t*>(p) + offset; }
};

TEST(CudaBackend, StepReadingMatchesCopyingInWithoutACopy) {
    // The staged step reads the caller's column in place (an aligned source) or
    // after a device copy (an unaligned one); both step exactly as writing the
    // tensor and calling step() does, and leave the values in the tensor.
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    const uint32_t W = 200; // 12 full staged blocks of 16 and a partial one, at most
    Simulator copied = tag_on_cuda(W, orrery::AutoReset::kSameStep);
    Simulator aligned = tag_on_cuda(W, orrery::AutoReset::kSameStep);
    Simulator unaligned = tag_on_cuda(W, orrery::AutoReset::kSameStep);
    ASSERT_TRUE(dynamic_cast<CudaBackend&>(aligned.backend()).staged()) << aligned.backend().describe();
    const size_t bytes = copied.tensor("action").bytes();
    DeviceBuffer pool(9 * bytes + 16); // eight aligned sets, then one more at +4 past them (unaligned)
    Actions actions;
    for (Simulator* s : {&copied, &aligned, &unaligned}) s->reset(5);
    for (uint32_t t = 0; t < 60; ++t) {
        std::vector<uint8_t> values = actions.fill(copied).front();
        uint8_t* set = pool.at((t % 8) * bytes); // cudaMalloc'd: 256-byte aligned, bytes a multiple of 16 here
        copied.backend().copy_from_host(set, values.data(), bytes);
        copied.backend().copy_from_host(pool.at(8 * bytes + 4), values.data(), bytes);
        copied.synchronize(); // the uploads were queued on copied's stream; the others read them
        copied.backend().copy_within(copied.tensor("action").data, set, bytes);
        copied.step();
        aligned.step_reading("action", set);
        unaligned.step_reading("action", pool.at(8 * bytes + 4));
        aligned.synchronize(); // the next uploads must not overtake these steps' reads
        unaligned.synchronize();
        copied.synchronize();
    }
    EXPECT_EQ(world_hashes(aligned), world_hashes(copied));
    EXPECT_EQ(world_hashes(unaligned), world_hashes(copied));
    EXPECT_EQ(tensors_of(aligned), tensors_of(copied)) << "the action tensor holds what was read, like the outputs";
    EXPECT_EQ(tensors_of(unaligned), tensors_of(copied));
}

TEST(CudaBackend, StepReadingWritesOutputsFromTheStagedCopyBack) {
    // Outputs given to step_reading land at their destinations after the step:
    // aligned ones written by the staged step itself (four at most), the others
    // (unaligned, or past four) by copies after it; every one equals the tensor.
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    Simulator sim = tag_on_cuda(200, orrery::AutoReset::kSameStep);
    ASSERT_TRUE(dynamic_cast<CudaBackend&>(sim.backend()).staged()) << sim.backend().describe();
    std::vector<const orrery::TensorView*> outs;
    for (const char* n : {"obs", "reward", "terminated", "truncated", "position"}) outs.push_back(&sim.tensor(n));
    size_t total = 0;
    for (const orrery::TensorView* t : outs) total += (t->bytes() + 15) / 16 * 16 + 16;
    DeviceBuffer dst(total), source(sim.tensor("action").bytes());
    Actions actions;
    sim.reset(3);
    for (uint32_t t = 0; t < 40; ++t) {
        std::vector<uint8_t> values = actions.fill(sim).front();
        sim.backend().copy_from_host(source.at(0), values.data(), values.size());
        std::vector<orrery::OutputCopy> copies;
        size_t at = 0;
        for (size_t k = 0; k < outs.size(); ++k) {
            const size_t skew = k == 1 ? 4 : 0; // reward's destination unaligned: copied after the step
            copies.push_back({outs[k]->data, dst.at(at + skew), outs[k]->bytes()});
            at += (outs[k]->bytes() + 15) / 16 * 16 + 16;
        }
        sim.step_reading("action", source.at(0), copies);
        for (const orrery::OutputCopy& c : copies) {
            std::vector<uint8_t> want(c.bytes), got(c.bytes);
            sim.backend().copy_to_host(want.data(), c.column, c.bytes);
            sim.backend().copy_to_host(got.data(), c.dst, c.bytes);
            ASSERT_EQ(want, got) << "step " << t << ", " << c.bytes << " bytes";
        }
    }
}

TEST(CudaBackend, StepReadingRecordsABadActionAndThatWorldDoesNotStep) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    Simulator sim = tag_on_cuda(4, orrery::AutoReset::kNextStep);
    sim.step();
    const orrery::TensorView& a = sim.tensor("action");
    std::vector<int32_t> act(a.bytes() / 4, 1);
    act[2 * a.shape[1] + 1] = -3; // world 2, agent 1
    DeviceBuffer source(a.bytes());
    sim.backend().copy_from_host(source.at(0), act.data(), a.bytes());
    uint32_t before = 0;
    sim.read_world(2, [&](orrery::Ctx& c) { before = c.step(); });
    sim.step_reading("action", source.at(0));
    std::vector<uint32_t> e = sim.errors();
    EXPECT_EQ(e[2], uint32_t(orrery::ErrorCode::kBadAction));
    EXPECT_EQ(e[0] + e[1] + e[3], 0u);
    sim.read_world(2, [&](orrery::Ctx& c) { EXPECT_EQ(c.step(), before); });
    sim.read_world(3, [&](orrery::Ctx& c) { EXPECT_EQ(c.step(), before + 1); });
}

TEST(CudaBackend, StepReadingCapturedInAGraphIsOneKernelAndReadsAtReplay) {
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    Simulator twin = tag_on_cuda(256, orrery::AutoReset::kNextStep);
    Simulator graphed = tag_on_cuda(256, orrery::AutoReset::kNextStep);
    auto& b = dynamic_cast<CudaBackend&>(graphed.backend());
    ASSERT_TRUE(b.staged()) << b.describe();
    const DriverApi& d = driver();
    const size_t bytes = graphed.tensor("action").bytes();
    DeviceBuffer source(bytes);
    graphed.synchronize();
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    ORRERY_CU(d.cuStreamBeginCapture(b.stream(), kCaptureModeThreadLocal));
    graphed.step_reading("action", source.at(0));
    ORRERY_CU(d.cuStreamEndCapture(b.stream(), &graph));
    if (d.cuGraphGetNodes) {
        size_t nodes = 0;
        ORRERY_CU(d.cuGraphGetNodes(graph, nullptr, &nodes));
        EXPECT_EQ(nodes, 1u) << "the step's one launch, no copy";
    }
    ORRERY_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
    Actions actions;
    for (int rep = 0; rep < 30; ++rep) { // new values in the source before each replay
        std::vector<uint8_t> values = actions.fill(twin).front();
        graphed.backend().copy_from_host(source.at(0), values.data(), bytes);
        ORRERY_CU(d.cuGraphLaunch(exec, b.stream()));
        twin.backend().copy_from_host(twin.tensor("action").data, values.data(), bytes);
        twin.step();
        graphed.synchronize(); // `values` is pageable: staged at once, but keep the next upload after this replay
    }
    EXPECT_EQ(world_hashes(twin), world_hashes(graphed));
    d.cuGraphExecDestroy(exec);
    d.cuGraphDestroy(graph);
}

TEST(CudaBackend, StepsCapturedInACudaGraphMatchDirectLaunches) {
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    Simulator direct = tag_on_cuda(256, orrery::AutoReset::kNextStep);
    Simulator graphed = tag_on_cuda(256, orrery::AutoReset::kNextStep);
    auto& b = dynamic_cast<CudaBackend&>(graphed.backend());
    const DriverApi& d = driver();
    graphed.synchronize();
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    ORRERY_CU(d.cuStreamBeginCapture(b.stream(), kCaptureModeThreadLocal));
    for (int i = 0; i < 10; ++i) graphed.step(); // no host synchronisation may happen here
    ORRERY_CU(d.cuStreamEndCapture(b.stream(), &graph));
    ORRERY_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 25; ++rep) ORRERY_CU(d.cuGraphLaunch(exec, b.stream()));
    for (int i = 0; i < 250; ++i) direct.step();
    EXPECT_EQ(world_hashes(direct), world_hashes(graphed));
    d.cuGraphExecDestroy(exec);
    d.cuGraphDestroy(graph);
}

/// A compile cache of its own, empty at first and removed afterwards: a simulator using it starts cold.
struct ColdCache {
    std::string dir = (std::filesystem::temp_directory_path() / ("orrery_cold_" + std::to_string(::getpid()))).string();
    ColdCache() { std::filesystem::remove_all(dir); }
    ~ColdCache() { std::filesystem::remove_all(dir); }
};

// A cold start (GpuOptions::cold_start_level, on by default) steps first on
// kernels compiled at --Ofast-compile=max while the full ones compile behind,
// then swaps them in between two steps: in the staged megakernel (whose
// staging tables go into the new module) and the per-node form, the bytes stay
// the CPU's at every step. A graph captured before the swap still replays
// after it (swapped-out modules stay loaded, their Storage kept current), and
// the next simulator on the same cache starts on the full kernels at once.
TEST(CudaColdStart, SwappingInTheFullKernelsKeepsTheCpuBytes) {
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    const DriverApi& d = driver();
    for (bool per_node : {false, true}) {
        SCOPED_TRACE(per_node ? "per-node" : "staged megakernel");
        ColdCache cache;
        Simulator cpu(orrery::make_env_spec("tag", {}), options(256, "cpu", orrery::AutoReset::kNextStep));
        orrery::SimOptions o = options(256, "cuda", orrery::AutoReset::kNextStep, per_node);
        o.gpu.cache_dir = cache.dir;
        Simulator gpu(orrery::make_env_spec("tag", {}), o);
        auto& b = dynamic_cast<CudaBackend&>(gpu.backend());
        EXPECT_EQ(b.staged(), !per_node) << b.describe();
        ASSERT_EQ(b.module_stats().first_level, "max");
        const size_t programs = b.module_stats().programs; // per-node: one per node
        ASSERT_EQ(programs, per_node ? node_group_requests(gpu.spec(), b.kernel_source(), 90).reqs.size() : 1u);
        ASSERT_EQ(b.module_stats().background_programs, programs);
        // A graph of 5 steps captured first, before any pass outside a capture
        // could swap a kernel in: it launches the quick kernels.
        gpu.synchronize();
        CUgraph graph = nullptr;
        CUgraphExec exec = nullptr;
        ORRERY_CU(d.cuStreamBeginCapture(b.stream(), kCaptureModeThreadLocal));
        for (int i = 0; i < 5; ++i) gpu.step(); // no swap inside a capture
        ORRERY_CU(d.cuStreamEndCapture(b.stream(), &graph));
        ORRERY_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
        EXPECT_EQ(b.module_stats().swapped_programs, 0u);
        Actions actions;
        auto step_both = [&](int n) {
            for (int i = 0; i < n; ++i) {
                auto values = actions.fill(cpu);
                Actions::write(cpu, values);
                Actions::write(gpu, values);
                cpu.step();
                gpu.step();
                ASSERT_EQ(world_hashes(gpu), world_hashes(cpu)) << "step " << cpu.steps_taken();
            }
        };
        auto replay_both = [&] { // on the actions last written
            ORRERY_CU(d.cuGraphLaunch(exec, b.stream()));
            for (int i = 0; i < 5; ++i) cpu.step();
            ASSERT_EQ(world_hashes(gpu), world_hashes(cpu)) << "graph replay";
        };
        cpu.reset(5);
        gpu.reset(5);
        step_both(10); // full kernels swapped in as they land
        replay_both();
        b.finish_compiles();
        EXPECT_EQ(b.module_stats().swapped_programs, programs);
        EXPECT_EQ(b.module_stats().failed_programs, 0u);
        replay_both(); // the swapped-out kernels, still loaded
        step_both(20); // the full kernels
        d.cuGraphExecDestroy(exec);
        d.cuGraphDestroy(graph);
        Simulator warm(orrery::make_env_spec("tag", {}), o);
        auto& w = dynamic_cast<CudaBackend&>(warm.backend());
        EXPECT_TRUE(w.module_stats().from_cache);
        EXPECT_EQ(w.module_stats().first_level, "");
        EXPECT_EQ(w.module_stats().background_programs, 0u);
    }
}

TEST(CudaBackend, WorkFollowsTheCallersStream) {
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    Simulator plain = tag_on_cuda(128, orrery::AutoReset::kNextStep);
    Simulator moved = tag_on_cuda(128, orrery::AutoReset::kNextStep);
    auto& b = dynamic_cast<CudaBackend&>(moved.backend());
    CUstream own = b.stream(), theirs = nullptr;
    ORRERY_CU(driver().cuStreamCreate(&theirs, kStreamNonBlocking));
    EXPECT_EQ(moved.backend().native_stream(), reinterpret_cast<uintptr_t>(own)) << "what Python orders against";
    b.use_stream(theirs);
    EXPECT_EQ(b.stream(), theirs);
    EXPECT_EQ(moved.backend().native_stream(), reinterpret_cast<uintptr_t>(theirs));
    for (int i = 0; i < 30; ++i) moved.step();
    b.use_stream(nullptr);
    EXPECT_EQ(b.stream(), own);
    for (int i = 0; i < 30; ++i) moved.step();
    for (int i = 0; i < 60; ++i) plain.step();
    EXPECT_EQ(world_hashes(plain), world_hashes(moved));
    driver().cuStreamDestroy(theirs);
}

TEST(CudaBackend, FollowStreamMovesWorkWithoutWaitingOnTheHost) {
    // follow_stream orders the new stream after the old one's queued work by an
    // event: steps queued on three streams in turn, with no host wait between,
    // give what 60 steps on one stream give.
    REQUIRE_GPU();
    using namespace orrery::cuda;
    orrery::register_builtin_envs();
    Simulator plain = tag_on_cuda(128, orrery::AutoReset::kNextStep);
    Simulator moved = tag_on_cuda(128, orrery::AutoReset::kNextStep);
    auto& b = dynamic_cast<CudaBackend&>(moved.backend());
    const uintptr_t own = b.own_stream();
    EXPECT_EQ(own, b.native_stream());
    CUstream first = nullptr, second = nullptr;
    ORRERY_CU(driver().cuStreamCreate(&first, kStreamNonBlocking));
    ORRERY_CU(driver().cuStreamCreate(&second, kStreamNonBlocking));
    for (int round = 0; round < 3; ++round) {
        moved.backend().follow_stream(reinterpret_cast<uintptr_t>(first));
        EXPECT_EQ(b.stream(), first);
        for (int i = 0; i < 5; ++i) moved.step();
        moved.backend().follow_stream(reinterpret_cast<uintptr_t>(second));
        for (int i = 0; i < 5; ++i) moved.step();
        moved.backend().follow_stream(own);
        EXPECT_EQ(b.native_stream(), own);
        for (int i = 0; i < 10; ++i) moved.step();
    }
    EXPECT_EQ(b.own_stream(), own) << "its own stream never changes";
    for (int i = 0; i < 60; ++i) plain.step();
    EXPECT_EQ(world_hashes(plain), world_hashes(moved));
    driver().cuStreamDestroy(first);
    driver().cuStreamDestroy(second);
}

TEST(CudaBackend, TheCpuBackendHasNoNativeStream) {
    orrery::register_builtin_envs();
    Simulator cpu(orrery::make_env_spec("tag", {}), options(4, "cpu", orrery::AutoReset::kNextStep));
    EXPECT_EQ(cpu.backend().native_stream(), 0u);
}

TEST(CudaBackend, ExportedTensorsAreDevicePointersAtFixedAddresses) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    Simulator sim = tag_on_cuda(16, orrery::AutoReset::kNextStep);
    void* obs = sim.tensor("obs").data;
    EXPECT_EQ(sim.tensor("obs").device, orrery::DeviceKind::kCuda);
    for (int i = 0; i < 5; ++i) sim.step();
    sim.reset(3);
    EXPECT_EQ(sim.tensor("obs").data, obs);
    EXPECT_NE(sim.backend().describe().find("cuda:0"), std::string::npos);
}

TEST(CudaDevice, AutoUsesTheGpuOrFallsBackToTheCpu) {
    orrery::register_builtin_envs();
    bool gpu = gpu_unavailable().empty();
    Simulator sim(orrery::make_env_spec("tag", {}), options(4, "auto", orrery::AutoReset::kNextStep));
    EXPECT_EQ(sim.backend().device(), gpu ? orrery::DeviceKind::kCuda : orrery::DeviceKind::kCpu);
    sim.step();
    EXPECT_NO_THROW(sim.check_errors());
}

TEST(CudaDevice, CudaNeverFallsBackSilently) {
    orrery::register_builtin_envs();
    if (gpu_unavailable().empty()) {
        try {
            Simulator sim(orrery::make_env_spec("tag", {}), options(4, "cuda:97", orrery::AutoReset::kNextStep));
            FAIL() << "cuda:97 was accepted";
        } catch (const orrery::Error& e) {
            EXPECT_NE(std::string(e.what()).find("cuda:97"), std::string::npos) << e.what();
        }
        return;
    }
    try {
        Simulator sim = tag_on_cuda(4, orrery::AutoReset::kNextStep);
        FAIL() << "device='cuda' gave a simulator without a usable GPU";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("device='cuda'"), std::string::npos) << msg;
        EXPECT_EQ(msg, "device='cuda': " + gpu_unavailable()) << "the reason reaches the user";
    }
}

TEST(CudaDevice, OutOfDeviceMemoryIsAClearError) {
    REQUIRE_GPU();
    orrery::register_builtin_envs();
    // 2^24 worlds of 256 agents' observations: far beyond any GPU's memory.
    try {
        Simulator sim(orrery::make_env_spec("tag", {{"pursuers", "64"}, {"evaders", "64"}}),
                      options(1u << 24, "cuda", orrery::AutoReset::kNextStep));
        FAIL() << "an impossible allocation succeeded";
    } catch (const orrery::Error& e) {
        EXPECT_NE(std::string(e.what()).find("out of device memory"), std::string::npos) << e.what();
    }
}

} // namespace
