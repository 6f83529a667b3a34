// Env plugins (engine/plugin.hpp): examples/out_of_tree's reach, built by its
// own CMakeLists.txt against the SDK, loads into this process's registry, runs
// on the CPU with its header root set to the plugin's folder, and compiles
// through NVRTC from there; bad files and taken names are refused.

#include <gtest/gtest.h>

#include <dlfcn.h>

#include <filesystem>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/plugin.hpp"
#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {

namespace fs = std::filesystem;
using orrery::Error;

std::vector<std::string> load_reach() {
    orrery::register_builtin_envs();
    return orrery::load_plugin(ORRERY_REACH_PLUGIN);
}

TEST(Plugin, RegistersIntoTheEnginesRegistry) {
    EXPECT_EQ(load_reach(), std::vector<std::string>{"reach"});
    EXPECT_EQ(load_reach(), std::vector<std::string>{"reach"}); // loading again is harmless
    bool found = false;
    for (const auto& [name, summary] : orrery::registered_envs()) found = found || name == "reach";
    EXPECT_TRUE(found);
    orrery::EnvSpec spec = orrery::make_env_spec("reach", {{"horizon", "7"}});
    EXPECT_EQ(fs::path(spec.header_root()), fs::canonical(ORRERY_REACH_PLUGIN).parent_path());
    EXPECT_TRUE(fs::exists(fs::path(spec.header_root()) / spec.source()));
    EXPECT_THROW(orrery::make_env_spec("reach", {{"horizon", "0"}}), Error); // the plugin's OptionReader
}

TEST(Plugin, StepsOnTheCpu) {
    load_reach();
    orrery::SimOptions o;
    o.num_worlds = 4;
    o.device = "cpu";
    o.threads = 1;
    orrery::Simulator sim(orrery::make_env_spec("reach", {{"horizon", "7"}}), o);
    sim.reset(1);
    const orrery::TensorView& obs = sim.tensor("obs");
    EXPECT_EQ(obs.user_shape, (std::vector<int64_t>{4, 4})); // a singleton agent: no agent axis
    auto* action = static_cast<int32_t*>(sim.tensor("action").data);
    auto* truncated = static_cast<uint8_t*>(sim.tensor("truncated").data);
    auto* terminated = static_cast<uint8_t*>(sim.tensor("terminated").data);
    uint32_t ends = 0;
    for (int step = 0; step < 7; ++step) {
        for (int w = 0; w < 4; ++w) action[w] = 0; // stand still
        sim.step();
        for (int w = 0; w < 4; ++w) ends += truncated[w] + terminated[w];
    }
    EXPECT_GE(ends, 4u); // every world's episode ended by the horizon, if not at the goal
}

TEST(Plugin, RefusesBadFilesAndTakenNames) {
    load_reach();
    EXPECT_THROW(orrery::load_plugin("/nonexistent/reach.so"), Error);
    Dl_info info{};
    ASSERT_NE(dladdr(reinterpret_cast<void*>(&dlopen), &info), 0);
    try {
        orrery::load_plugin(info.dli_fname); // libc: a shared library, not a plugin
        FAIL() << "libc loaded as a plugin";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("not an Orrery env plugin"), std::string::npos) << e.what();
    }
    // A second copy of the plugin is a second plugin, and "reach" is taken.
    fs::path twin = fs::temp_directory_path() / ("orrery_plugin_twin_" + std::to_string(getpid()) + ".so");
    fs::copy_file(ORRERY_REACH_PLUGIN, twin, fs::copy_options::overwrite_existing);
    try {
        orrery::load_plugin(twin.string());
        FAIL() << "a taken name was registered again";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("already registered"), std::string::npos) << e.what();
    }
    fs::remove(twin);
}

TEST(Plugin, MegakernelCompilesThroughNvrtcFromThePluginsFolder) {
    load_reach();
    orrery::EnvSpec spec = orrery::make_env_spec("reach", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep);
    orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kStaged);
    orrery::cuda::CompileRequest req = orrery::cuda::kernel_request(spec, k, 90); // from the plugin's header root
    req.use_cache = false;
    orrery::cuda::CompiledModule m = orrery::cuda::compile_module(req); // NVRTC needs no GPU
    ASSERT_GT(m.cubin.size(), 4u);
    EXPECT_NE(m.cubin.find(k.staged_step_kernel), std::string::npos);
}

} // namespace
