// Lagging world views on the CUDA backend: with many steps queued, a view is
// requested and polled until it lands, never synchronising the step stream,
// and its bytes must equal the world's state at the step it claims, which a
// CPU simulator stepped as often from the same seed and actions gives (the
// parity tests show the two backends agree bit for bit). Skips without a GPU.
// The gather kernel itself compiles through NVRTC on any machine (no GPU needed).

#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "envs/registry.hpp"
#include "gpu_support.hpp"

namespace {

using namespace orrery;

Simulator make_sim(const std::string& device, uint32_t worlds) {
    register_builtin_envs();
    SimOptions o;
    o.num_worlds = worlds;
    o.threads = 0;
    o.device = device;
    return Simulator(make_env_spec("overcooked", {}), o);
}

void write_inputs(Simulator& sim, const std::vector<std::vector<uint8_t>>& values) {
    size_t k = 0;
    for (const auto& [name, range] : sim.spec().input_ranges()) {
        const TensorView& t = sim.tensor(name);
        sim.backend().copy_from_host(t.data, values[k].data(), values[k].size());
        ++k;
    }
}

std::vector<uint8_t> bytes_of(const Simulator& sim, const Ctx& ctx) {
    StorageLayout one = make_layout(sim.spec(), 1, sim.options().autoreset);
    std::vector<uint8_t> out;
    for (const Region& r : one.regions(ctx.storage())) out.insert(out.end(), r.base, r.base + r.bytes_per_world);
    return out;
}

struct Landed {
    LaggedView view;
    std::vector<uint8_t> bytes;
    int polls = 0; ///< polls that found it still in flight
};

/// Polls until the requested view lands (no synchronize anywhere); fails after 60 s.
Landed wait_for_view(Simulator& sim) {
    Landed out;
    auto start = std::chrono::steady_clock::now();
    while (!sim.poll_world_view([&](Ctx& ctx, const LaggedView& v) {
        if (!v.fresh) return;
        out.view = v;
        out.bytes = bytes_of(sim, ctx);
    }) || out.bytes.empty()) {
        ++out.polls;
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(60)) {
            ADD_FAILURE() << "the view did not land within 60 s";
            return out;
        }
        std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
    return out;
}

TEST(CudaWorldView, LandsWithoutSynchronizingAndEqualsTheStateAtItsStep) {
    REQUIRE_GPU();
    const uint32_t worlds = 4096;
    Simulator gpu = make_sim("cuda", worlds);
    Simulator cpu = make_sim("cpu", worlds);
    gpu.reset(17);
    cpu.reset(17);
    uint64_t rng = 0xC0FFEEull;
    std::vector<std::vector<uint8_t>> actions = random_inputs(cpu, rng); // the same every step, on both
    write_inputs(cpu, actions);
    write_inputs(gpu, actions);
    const uint32_t watched[] = {0, 1234, worlds - 1};
    uint64_t cpu_steps = 0;
    for (uint32_t round = 0; round < 3; ++round) {
        for (int i = 0; i < 200; ++i) gpu.step(); // queued, not waited for
        uint32_t world = watched[round];
        ASSERT_TRUE(gpu.request_world_view(world));
        EXPECT_FALSE(gpu.request_world_view(world)) << "one request pending at a time";
        for (int i = 0; i < 200; ++i) gpu.step(); // queued after the copy: must not show in it
        Landed got = wait_for_view(gpu);
        ASSERT_FALSE(got.bytes.empty());
        EXPECT_EQ(got.view.world, world);
        EXPECT_EQ(got.view.step, uint64_t(400) * round + 200);
        EXPECT_EQ(got.view.lag, 200u) << "the 200 steps queued after the request";
        while (cpu_steps < got.view.step) cpu.step(), ++cpu_steps;
        EXPECT_EQ(got.bytes, cpu.save_world(world).bytes)
            << "round " << round << ": world " << world << " at step " << got.view.step << " (landed after "
            << got.polls << " polls in flight)";
    }
    // The views never drained the queue; the batch still matches the CPU once it does.
    while (cpu_steps < gpu.steps_taken()) cpu.step(), ++cpu_steps;
    EXPECT_EQ(gpu.save_world(worlds - 1).bytes, cpu.save_world(worlds - 1).bytes);
}

TEST(NvrtcWorldGather, KernelCompilesForHopper) {
    cuda::CompileRequest req;
    req.label = "world gather test";
    req.source = cuda::world_gather_source();
    req.arch = 90;
    req.use_cache = false;
    cuda::CompiledModule m = cuda::compile_module(req);
    EXPECT_FALSE(m.cubin.empty());
    EXPECT_NE(m.cubin.find("orrery_gather_world"), std::string::npos) << "the kernel's symbol is in the cubin";
}

TEST(CudaWorldView, TeardownWithAViewInFlightIsClean) {
    REQUIRE_GPU();
    Simulator gpu = make_sim("cuda", 2048);
    for (int i = 0; i < 100; ++i) gpu.step();
    EXPECT_TRUE(gpu.request_world_view(5));
    for (int i = 0; i < 100; ++i) gpu.step();
    // Destroyed with the copy pending: release() waits for it before freeing its buffers.
}

} // namespace
