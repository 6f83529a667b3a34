// Every shipped env's GPU kernels compile through NVRTC, on any machine: NVRTC
// needs no GPU, so a device compile error fails CI on GPU-less machines. NVRTC
// must be present (CI installs the CUDA toolkit); a missing NVRTC fails loudly.

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <thread>
#include <vector>

#include "engine/cuda/background_compile.hpp"
#include "engine/cuda/codegen.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "envs/registry.hpp"

namespace {

/// The GPU present, else Hopper (sm_90), the architecture of the benchmark machines.
int target_arch() {
    try {
        return orrery::cuda::device_info(0).arch;
    } catch (const orrery::Error&) { return 90; }
}

void compile_all(orrery::AutoReset mode, orrery::cuda::KernelForm form, int arch = target_arch()) {
    using orrery::cuda::KernelForm;
    const bool per_node = form == KernelForm::kPerNode;
    orrery::register_builtin_envs();
    auto envs = orrery::registered_envs();
    ASSERT_FALSE(envs.empty());
    for (const auto& [name, summary] : envs) {
        SCOPED_TRACE("env " + name);
        orrery::EnvSpec spec = orrery::make_env_spec(name, {});
        // Next-step mode (the default) also draws its actions inside the step, as benchmarks do.
        const bool random_inputs = mode == orrery::AutoReset::kNextStep;
        orrery::Plan plan = orrery::make_plan(spec, mode, random_inputs);
        orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, form);
        EXPECT_EQ(k.text.find("orrery::draw_random_inputs(s, w") != std::string::npos, random_inputs);
        const size_t direct = form == KernelForm::kDirect ? 1u : 0u;
        if (per_node) { // a kernel per op or fused run of serial ops, covering the pass in order
            for (auto [kernels, first, ops] : {std::tuple{&k.step_kernels, &k.step_first_op, &plan.step},
                                               std::tuple{&k.reset_kernels, &k.reset_first_op, &plan.reset}}) {
                ASSERT_EQ(first->size(), kernels->size());
                ASSERT_FALSE(first->empty());
                EXPECT_EQ(first->front(), 0u);
                for (size_t i = 1; i < first->size(); ++i) EXPECT_LT((*first)[i - 1], (*first)[i]);
                EXPECT_LT(first->back(), ops->size());
            }
        } else {
            EXPECT_EQ(k.step_kernels.size(), direct);
            EXPECT_EQ(k.reset_kernels.size(), direct);
        }
        if (per_node) { // what the backend compiles: each kernel its own program
            std::vector<orrery::cuda::CompileRequest> reqs = orrery::cuda::node_requests(spec, k, arch);
            ASSERT_EQ(reqs.size(), k.step_kernels.size() + k.reset_kernels.size());
            for (orrery::cuda::CompileRequest& r : reqs) r.use_cache = false;
            std::vector<orrery::cuda::CompiledModule> ms;
            try {
                ms = orrery::cuda::compile_modules(reqs);
            } catch (const orrery::Error& e) { FAIL() << e.what() << "\n--- generated source ---\n" << k.text; }
            for (size_t i = 0; i < ms.size(); ++i) {
                EXPECT_EQ(ms[i].cubin.substr(0, 4), "\x7f"
                                                    "ELF");
                EXPECT_NE(ms[i].cubin.find(k.programs[i].kernel), std::string::npos) << reqs[i].label;
                EXPECT_FALSE(ms[i].from_cache);
            }
            continue;
        }
        orrery::cuda::CompileRequest req;
        req.label = "'" + name + "' test";
        req.source = k.text;
        req.env_header = k.env_header;
        req.arch = arch;
        req.use_cache = false; // compile for real every time
        orrery::cuda::CompiledModule m;
        try {
            m = orrery::cuda::compile_module(req);
        } catch (const orrery::Error& e) { FAIL() << e.what() << "\n--- generated source ---\n" << k.text; }
        // A cubin is an ELF image: it starts with the ELF magic and holds every kernel's name.
        ASSERT_GT(m.cubin.size(), 4u);
        EXPECT_EQ(m.cubin.substr(0, 4), "\x7f"
                                        "ELF");
        for (const std::string& kname : k.step_kernels) EXPECT_NE(m.cubin.find(kname), std::string::npos) << kname;
        for (const std::string& kname : k.reset_kernels) EXPECT_NE(m.cubin.find(kname), std::string::npos) << kname;
        EXPECT_EQ(k.staged_step_kernel.empty(), form != KernelForm::kStaged);
        if (form == KernelForm::kStaged) {
            EXPECT_NE(m.cubin.find(k.staged_step_kernel), std::string::npos);
            EXPECT_NE(m.cubin.find(k.staged_reset_kernel), std::string::npos);
        }
        EXPECT_FALSE(m.from_cache);
    }
}

} // namespace

TEST(NvrtcKernels, LibraryLoads) {
    // Loud failure, not a skip: CI must have NVRTC to check the GPU code.
    ASSERT_NO_THROW(orrery::cuda::nvrtc());
    EXPECT_GE(orrery::cuda::nvrtc_version(), 12000);
}

using orrery::cuda::KernelForm;
TEST(NvrtcKernels, MegakernelNextStep) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kStaged); }
TEST(NvrtcKernels, MegakernelSameStep) { compile_all(orrery::AutoReset::kSameStep, KernelForm::kStaged); }
TEST(NvrtcKernels, MegakernelDisabled) { compile_all(orrery::AutoReset::kDisabled, KernelForm::kStaged); }
// The staged kernels' programmatic-launch wait is Hopper PTX; older GPUs compile without it.
TEST(NvrtcKernels, MegakernelBeforeHopper) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kStaged, 80); }
TEST(NvrtcKernels, DirectMegakernelEveryMode) {
    for (auto mode : {orrery::AutoReset::kNextStep, orrery::AutoReset::kSameStep, orrery::AutoReset::kDisabled})
        compile_all(mode, KernelForm::kDirect);
}
TEST(NvrtcKernels, PerNodeNextStep) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kPerNode); }

// Hide-and-seek's physics step in its own kernel, a warp a team (the env's
// default form): each team's bodies, points, pairs and colour order in its region of the block's shared
// memory, the call compiled as NVRTC compiles it (at --Ofast-compile=max
// here, to keep CI short; the GPU tests run the fully optimised kernel).
TEST(NvrtcKernels, PerNodePhysicsKeepsItsScratchOnChip) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("hide_and_seek", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    const unsigned lanes = orrery::cuda::world_lanes_for(spec, 0);
    ASSERT_EQ(lanes, 32u);
    orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, KernelForm::kPerNode, lanes);
    const orrery::MemoryReport r = orrery::make_layout(spec, 1, orrery::AutoReset::kNextStep).report;
    const uint32_t bytes = uint32_t(r.scratch_shared_bytes);
    // OpenAI's game keeps all of simulate's scratch on chip but the manifolds,
    // the welds' geometry and the points' kept separations.
    size_t kept = 0;
    for (const auto& row : r.scratch) {
        const bool off_chip =
            row.component == "Manifolds" || row.component == "WeldSteps" || row.component == "Separations";
        kept += off_chip ? 0 : (row.bytes + 15) / 16 * 16;
    }
    EXPECT_EQ(bytes, kept);
    EXPECT_GT(bytes, 0u);
    ASSERT_EQ(k.team_shared_kernels.size(), 1u); // simulate runs in the step pass only
    EXPECT_EQ(k.team_shared_kernels[0].second, bytes);
    std::vector<orrery::cuda::CompileRequest> reqs = orrery::cuda::node_requests(spec, k, target_arch());
    ASSERT_EQ(reqs.size(), k.programs.size());
    for (size_t i = 0; i < k.programs.size(); ++i) {
        if (k.programs[i].kernel != k.team_shared_kernels[0].first) continue;
        EXPECT_EQ(k.programs[i].node, "phys::simulate");
        EXPECT_NE(k.programs[i].text.find("orrery_team_shared_region()"), std::string::npos);
        reqs[i].use_cache = false;
        reqs[i].fast_compile = "max";
        orrery::cuda::CompiledModule m;
        try {
            m = orrery::cuda::compile_module(reqs[i]);
        } catch (const orrery::Error& e) { FAIL() << e.what(); }
        EXPECT_NE(m.cubin.find(k.programs[i].kernel), std::string::npos);
        return;
    }
    FAIL() << "no program runs the kernel " << k.team_shared_kernels[0].first;
}

// bench/phys_phases.sh's build: simulate with its phase clocks and their
// printf (ORRERY_PHYS_CLOCKS) still compiles, and prints something.
TEST(NvrtcKernels, PhysicsPhaseClocksCompile) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("hide_and_seek", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    const unsigned lanes = orrery::cuda::world_lanes_for(spec, 0);
    orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, KernelForm::kPerNode, lanes);
    std::vector<orrery::cuda::CompileRequest> reqs = orrery::cuda::node_requests(spec, k, target_arch());
    for (size_t i = 0; i < k.programs.size(); ++i) {
        if (k.programs[i].node != "phys::simulate") continue;
        reqs[i].use_cache = false;
        reqs[i].fast_compile = "max";
        reqs[i].extra_options = "-DORRERY_PHYS_CLOCKS=1";
        orrery::cuda::CompiledModule m;
        try {
            m = orrery::cuda::compile_module(reqs[i]);
        } catch (const orrery::Error& e) { FAIL() << e.what(); }
        EXPECT_NE(m.cubin.find("phys-phases world"), std::string::npos); // the format string is in the cubin
        return;
    }
    FAIL() << "no program runs phys::simulate";
}

TEST(NvrtcKernels, SystemNamesAreQualified) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {});
    for (const orrery::NodeSpec& n : spec.nodes()) {
        std::string q = orrery::cuda::qualified_system_name(n.system);
        EXPECT_EQ(q, std::string("tag::") + n.system.name);
    }
}

TEST(NvrtcKernels, CompileErrorShowsLog) {
    orrery::cuda::CompileRequest req;
    req.label = "broken test source";
    req.source = "#include \"engine/ctx.hpp\"\nextern \"C\" __global__ void k() { undefined_name_xyz = 1; }\n";
    req.arch = 90;
    req.use_cache = false;
    try {
        orrery::cuda::compile_module(req);
        FAIL() << "a broken source compiled";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("nvrtcCompileProgram"), std::string::npos) << msg;
        EXPECT_NE(msg.find("undefined_name_xyz"), std::string::npos) << msg; // the log names the culprit
    }
}

namespace {
namespace fs = std::filesystem;

/// A private cache directory for one test, removed afterwards.
struct TempCache {
    fs::path dir = fs::temp_directory_path() / ("orrery_node_cache_" + std::to_string(::getpid()));
    TempCache() { fs::remove_all(dir); }
    ~TempCache() { fs::remove_all(dir); }
    size_t entries() const {
        size_t n = 0;
        if (!fs::exists(dir)) return n;
        for (const auto& e : fs::directory_iterator(dir)) n += e.path().extension() == ".cubin" ? 1 : 0;
        return n;
    }
};

std::vector<orrery::cuda::CompileRequest> tag_node_requests(orrery::cuda::KernelSource& k) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kSameStep);
    k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kPerNode);
    return orrery::cuda::node_requests(spec, k, 90);
}
} // namespace

// The per-node form as the backend compiles it: every kernel a program of its
// own (the source's head and that kernel), each its own cache entry; compiled
// on one thread or several, the same binaries; a second start loads them all.
TEST(NvrtcKernels, PerNodeProgramsAreCachedOneEntryEach) {
    orrery::cuda::KernelSource k;
    std::vector<orrery::cuda::CompileRequest> reqs = tag_node_requests(k);
    ASSERT_EQ(k.programs.size(), k.step_kernels.size() + k.reset_kernels.size());
    ASSERT_GT(k.programs.size(), 4u);
    const std::string head = k.text.substr(0, k.text.find("extern \"C\" __global__"));
    for (size_t i = 0; i < k.programs.size(); ++i) {
        const orrery::cuda::NodeProgram& p = k.programs[i];
        EXPECT_EQ(p.kernel, i < k.step_kernels.size() ? k.step_kernels[i] : k.reset_kernels[i - k.step_kernels.size()]);
        EXPECT_EQ(p.text.compare(0, head.size(), head), 0) << p.kernel << " starts with the shared head";
        std::string body = p.text.substr(head.size());
        EXPECT_NE(k.text.find(body), std::string::npos) << p.kernel << "'s kernel is the whole source's";
        EXPECT_EQ(body.find("__global__", body.find("__global__") + 1), std::string::npos) << "one kernel each";
        EXPECT_NE(reqs[i].label.find(p.kernel + " (" + p.node + ")"), std::string::npos) << reqs[i].label;
    }
    TempCache cache;
    for (orrery::cuda::CompileRequest& r : reqs) r.cache_dir = cache.dir.string();
    std::vector<orrery::cuda::CompiledModule> one = orrery::cuda::compile_modules(reqs, 1);
    EXPECT_EQ(cache.entries(), reqs.size()) << "one entry per program";
    for (const orrery::cuda::CompiledModule& m : one) EXPECT_FALSE(m.from_cache);
    std::vector<orrery::cuda::CompiledModule> again = orrery::cuda::compile_modules(reqs, 3);
    EXPECT_EQ(cache.entries(), reqs.size());
    for (size_t i = 0; i < reqs.size(); ++i) {
        EXPECT_TRUE(again[i].from_cache) << reqs[i].label;
        EXPECT_EQ(again[i].cubin, one[i].cubin) << reqs[i].label;
        EXPECT_EQ(again[i].cache_path, one[i].cache_path);
    }
    // Compiled in parallel past the cache: the same binaries as one at a time.
    for (orrery::cuda::CompileRequest& r : reqs) r.use_cache = false;
    std::vector<orrery::cuda::CompiledModule> parallel = orrery::cuda::compile_modules(reqs, 4);
    for (size_t i = 0; i < reqs.size(); ++i) EXPECT_EQ(parallel[i].cubin, one[i].cubin) << reqs[i].label;
}

// GpuOptions::fuse_serial: each run of consecutive serial ops without scratch
// is one kernel, named by its first op, its world's ops one after another on
// lane 0 in the plan's order, its lanes chosen at launch like a serial node's;
// off, a kernel per op. Hide-and-seek's step: 13 ops in 7 kernels. Needs no
// compile.
TEST(NvrtcKernels, SerialRunsFuseIntoOneKernel) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("hide_and_seek", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    const unsigned lanes = orrery::cuda::world_lanes_for(spec, 0);
    using orrery::cuda::KernelForm;
    orrery::cuda::KernelSource fused = orrery::cuda::generate_kernels(spec, plan, KernelForm::kPerNode, lanes);
    orrery::cuda::KernelSource apart =
        orrery::cuda::generate_kernels(spec, plan, KernelForm::kPerNode, lanes, 0, false);
    ASSERT_EQ(plan.step.size(), 13u);
    EXPECT_EQ(apart.step_kernels.size(), 13u);
    EXPECT_EQ(fused.step_kernels.size(), 7u);
    EXPECT_EQ(fused.step_first_op, (std::vector<size_t>{0, 6, 7, 8, 9, 11, 12}));
    EXPECT_EQ(fused.reset_first_op, (std::vector<size_t>{0, 4, 5}));
    const orrery::cuda::NodeProgram& run = fused.programs[0];
    EXPECT_EQ(run.kernel, "orrery_step_op0");
    EXPECT_EQ(run.nodes, (std::vector<std::string>{"begin step", "random inputs", "spawn", "phys::init_world",
                                                   "orrery::apply_destroys", "move_agents"}));
    // Each op's statement, as its own kernel has it, in the plan's order.
    size_t at = run.text.find("if (lane != 0) return;");
    ASSERT_NE(at, std::string::npos) << run.text;
    for (size_t i = 0; i < 6; ++i) {
        const std::string& own = apart.programs[i].text;
        const size_t open = own.find("if (lane == 0) {\n");
        ASSERT_NE(open, std::string::npos) << own;
        const size_t from = open + 17, to = own.find('\n', from);
        std::string statement = own.substr(from, to - from);
        statement.erase(0, statement.find_first_not_of(' '));
        const size_t found = run.text.find(statement, at);
        ASSERT_NE(found, std::string::npos) << statement << " in\n" << run.text;
        at = found + statement.size();
    }
    const auto launch = std::find_if(fused.launch_lanes.begin(), fused.launch_lanes.end(),
                                     [&](const orrery::cuda::LaunchLanes& l) { return l.kernel == run.kernel; });
    ASSERT_NE(launch, fused.launch_lanes.end());
    EXPECT_TRUE(launch->serial);
    EXPECT_FALSE(launch->team);
    // A lane node and a node with scratch are never fused.
    EXPECT_EQ(fused.programs[1].nodes, std::vector<std::string>{"lock_and_grab"});
    EXPECT_EQ(fused.programs[2].nodes, std::vector<std::string>{"phys::simulate"});
    EXPECT_EQ(fused.programs[4].nodes, (std::vector<std::string>{"orrery::apply_destroys", "end step"}));
}

// Hide-and-seek's per-node kernels that take their lanes at launch: its two
// team nodes without scratch (lock_and_grab, gather_and_reward) as teams
// (GpuOptions::pack_teams), each call guarded by its phase and given a team
// of the launch's lanes; phys::simulate keeps scratch, so its teams keep the
// form's 32 lanes and align in the block. Needs no compile.
TEST(NvrtcKernels, TeamNodesWithoutScratchTakeTheirLanesAtLaunch) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("hide_and_seek", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kPerNode,
                                                                  orrery::cuda::world_lanes_for(spec, 0));
    ASSERT_EQ(k.lanes, 32u);
    std::map<std::string, const orrery::cuda::NodeProgram*> by_node;
    for (const orrery::cuda::NodeProgram& p : k.programs) by_node.emplace(p.node, &p);
    auto launch_of = [&](const std::string& node) -> const orrery::cuda::LaunchLanes* {
        for (const orrery::cuda::LaunchLanes& l : k.launch_lanes)
            if (by_node.count(node) && l.kernel == by_node[node]->kernel) return &l;
        return nullptr;
    };
    for (const char* node : {"lock_and_grab", "gather_and_reward"}) {
        SCOPED_TRACE(node);
        ASSERT_TRUE(by_node.count(node));
        const orrery::cuda::LaunchLanes* l = launch_of(node);
        ASSERT_NE(l, nullptr);
        EXPECT_TRUE(l->team);
        EXPECT_FALSE(l->serial);
        const std::string& text = by_node[node]->text;
        EXPECT_NE(text.find(by_node[node]->kernel + "(const unsigned orrery_lane_shift)"), std::string::npos) << text;
        EXPECT_NE(
            text.find("if (orrery::phase_active(s, w, orrery::Phase::kStep)) orrery::run_world_team<&hide_and_seek::" +
                      std::string(node) + ">(s, w, orrery_lanes(lane, lanes_now));"),
            std::string::npos)
            << text;
        EXPECT_EQ(std::count(k.aligned_kernels.begin(), k.aligned_kernels.end(), by_node[node]->kernel), 0);
    }
    ASSERT_TRUE(by_node.count("phys::simulate"));
    EXPECT_EQ(launch_of("phys::simulate"), nullptr) << "its scratch is a team's slot";
    EXPECT_EQ(std::count(k.aligned_kernels.begin(), k.aligned_kernels.end(), by_node["phys::simulate"]->kernel), 1);
}

// What the CUDA backend compiles in the per-node form: the kernels that run
// the same node share one program (NVRTC compiles each node's code once); each
// program holds exactly its kernels, after the head, and its cubin has them.
// Hide-and-seek's step and reset passes: 10 kernels (the serial runs fused,
// GpuOptions::fuse_serial), 6 programs: the three fused runs share spawn or
// apply_destroys, the observation and its regather_scene run in both passes.
TEST(NvrtcKernels, PerNodeKernelsOfOneNodeShareAProgram) {
    orrery::register_builtin_envs();
    for (const char* env : {"tag", "hide_and_seek"}) {
        SCOPED_TRACE(env);
        orrery::EnvSpec spec = orrery::make_env_spec(env, {});
        orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
        orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kPerNode);
        orrery::cuda::NodeGroups g = orrery::cuda::node_group_requests(spec, k, 90);
        ASSERT_EQ(g.program.size(), k.programs.size());
        ASSERT_EQ(g.nodes.size(), g.reqs.size());
        const std::string head = k.text.substr(0, k.program_head);
        std::vector<size_t> kernels(g.reqs.size(), 0);
        for (size_t i = 0; i < k.programs.size(); ++i) {
            const size_t p = g.program[i];
            ASSERT_LT(p, g.reqs.size());
            ++kernels[p];
            for (const std::string& n : k.programs[i].nodes)
                EXPECT_NE(std::find(g.node_sets[p].begin(), g.node_sets[p].end(), n), g.node_sets[p].end())
                    << k.programs[i].kernel << " runs " << n;
            // After `void`, or after a bound between them (hide-and-seek's
            // observation: ORRERY_NODE_REGS, EnvSpec::bound_registers).
            const std::string& name = k.programs[i].kernel;
            EXPECT_TRUE(g.reqs[p].source.find("void " + name + "(") != std::string::npos ||
                        g.reqs[p].source.find(") " + name + "(") != std::string::npos)
                << name << " is in its program";
            EXPECT_NE(g.reqs[p].label.find(k.programs[i].kernel), std::string::npos) << g.reqs[p].label;
        }
        for (size_t p = 0; p < g.reqs.size(); ++p) {
            EXPECT_EQ(g.reqs[p].source.compare(0, head.size(), head), 0) << "program " << p << " starts with the head";
            size_t n = 0;
            for (size_t at = g.reqs[p].source.find("__global__"); at != std::string::npos;
                 at = g.reqs[p].source.find("__global__", at + 1))
                ++n;
            EXPECT_EQ(n, kernels[p]) << g.reqs[p].label << ": its kernels and no other";
            for (size_t q = 0; q < p; ++q)
                for (const std::string& n : g.node_sets[p])
                    EXPECT_EQ(std::find(g.node_sets[q].begin(), g.node_sets[q].end(), n), g.node_sets[q].end())
                        << n << ": one program per node";
        }
        if (std::string(env) == "hide_and_seek") {
            EXPECT_EQ(k.programs.size(), 10u);
            EXPECT_EQ(g.reqs.size(), 6u);
            continue;
        }
        EXPECT_LT(g.reqs.size(), k.programs.size()) << "tag's passes share nodes too";
        for (orrery::cuda::CompileRequest& r : g.reqs) r.use_cache = false;
        std::vector<orrery::cuda::CompiledModule> ms = orrery::cuda::compile_modules(g.reqs, 2);
        for (size_t i = 0; i < k.programs.size(); ++i)
            EXPECT_NE(ms[g.program[i]].cubin.find(k.programs[i].kernel), std::string::npos) << k.programs[i].kernel;
    }
}

// A program that fails to compile is named by its kernel and node, with
// NVRTC's log; the others' failures do not hide it (the first in order wins).
TEST(NvrtcKernels, PerNodeCompileErrorNamesTheNode) {
    orrery::cuda::KernelSource k;
    std::vector<orrery::cuda::CompileRequest> reqs = tag_node_requests(k);
    const size_t bad = reqs.size() / 2;
    for (orrery::cuda::CompileRequest& r : reqs) r.use_cache = false;
    reqs[bad].source += "\n__device__ void broken() { undefined_name_xyz = 1; }\n";
    try {
        orrery::cuda::compile_modules(reqs, 2);
        FAIL() << "a broken program compiled";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_EQ(msg.rfind(reqs[bad].label + ": ", 0), 0u) << msg;
        EXPECT_NE(msg.find("(" + k.programs[bad].node + ")"), std::string::npos) << msg;
        EXPECT_NE(msg.find("undefined_name_xyz"), std::string::npos) << msg;
        EXPECT_NE(msg.find(k.programs[bad].kernel + ".cu"), std::string::npos) << "NVRTC's log names the program";
    }
}

// Hide-and-seek runs one kernel per node in both variants (EnvSpec::prefer_per_node:
// faster on the H200, the physics teams aligned in a block, and its programs
// compile in parallel); tag keeps the megakernel; SimOptions overrule the env
// either way.
TEST(NvrtcKernels, TheEnvPicksTheFormUnlessTheSimulatorDoes) {
    orrery::register_builtin_envs();
    orrery::EnvSpec hs = orrery::make_env_spec("hide_and_seek", {});
    orrery::EnvSpec gpu_hs = orrery::make_env_spec("hide_and_seek", {{"variant", "gpu_hideseek"}});
    orrery::EnvSpec tag = orrery::make_env_spec("tag", {});
    orrery::SimOptions plain, mega, node;
    mega.gpu.megakernel = true;
    node.per_node_launches = true;
    EXPECT_TRUE(orrery::cuda::runs_per_node(hs, plain));
    EXPECT_FALSE(orrery::cuda::runs_per_node(hs, mega));
    EXPECT_TRUE(orrery::cuda::runs_per_node(hs, node));
    EXPECT_TRUE(orrery::cuda::runs_per_node(gpu_hs, plain));
    EXPECT_FALSE(orrery::cuda::runs_per_node(gpu_hs, mega));
    EXPECT_FALSE(orrery::cuda::runs_per_node(tag, plain));
    EXPECT_TRUE(orrery::cuda::runs_per_node(tag, node));
}

// An env's fast-compile level (EnvSpec::fast_compile) rides on every program
// of its kernels and into the cache key (a binary compiled at another level is
// never loaded in its place); the simulator's "--Ofast-compile=0" is another
// key again; an unknown level is refused by name before any compile.
TEST(NvrtcKernels, FastCompileLevelReachesEveryProgramAndTheCacheKey) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {});
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kSameStep);
    orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kPerNode);
    spec.fast_compile = "mid";
    std::vector<orrery::cuda::CompileRequest> reqs = orrery::cuda::node_requests(spec, k, 90);
    ASSERT_FALSE(reqs.empty());
    for (const orrery::cuda::CompileRequest& r : reqs) EXPECT_EQ(r.fast_compile, "mid") << r.label;
    orrery::cuda::KernelSource direct = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kDirect);
    TempCache cache;
    auto compiled = [&](const std::string& level, const std::string& extra) {
        orrery::EnvSpec s = spec;
        s.fast_compile = level;
        orrery::cuda::CompileRequest r = orrery::cuda::kernel_request(s, direct, 90);
        r.cache_dir = cache.dir.string();
        r.extra_options = extra;
        return orrery::cuda::compile_module(r);
    };
    orrery::cuda::CompiledModule full = compiled("", ""), mid = compiled("mid", ""),
                                 undone = compiled("mid", "--Ofast-compile=0");
    for (const orrery::cuda::CompiledModule* m : {&full, &mid, &undone}) {
        EXPECT_EQ(m->cubin.substr(0, 4), "\x7f"
                                         "ELF");
        EXPECT_FALSE(m->from_cache);
    }
    if (orrery::cuda::nvrtc_version() >= 12080) { // older NVRTCs leave the option out
        EXPECT_NE(mid.cache_path, full.cache_path);
        EXPECT_NE(undone.cache_path, mid.cache_path);
    }
    EXPECT_TRUE(compiled("mid", "").from_cache) << "the same level finds its own entry";
    spec.fast_compile = "fastest";
    try {
        orrery::cuda::kernel_request(spec, direct, 90);
        FAIL() << "an unknown level was accepted";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("EnvSpec::fast_compile of env 'tag' is 'fastest'"), std::string::npos) << msg;
    }
}

// --- cold start: quick kernels first, the full ones behind ---------------------------

namespace {
/// The first `n` of tag's per-node programs, cached in `cache` (a few keep the NVRTC time down).
std::vector<orrery::cuda::CompileRequest> tag_programs(const TempCache& cache, size_t n) {
    orrery::cuda::KernelSource k;
    std::vector<orrery::cuda::CompileRequest> reqs = tag_node_requests(k);
    reqs.resize(std::min(n, reqs.size()));
    for (orrery::cuda::CompileRequest& r : reqs) {
        r.cache_dir = cache.dir.string();
        r.log_compile = false;
    }
    return reqs;
}
} // namespace

// What the CUDA backend does on a cold start, without the GPU: the programs the
// cache lacks start at the quick level (their own cache entries: the level is in
// the key), the full ones compile on background threads into the cache, and the
// next start finds them and plans no quick compile at all.
TEST(NvrtcColdStart, QuickProgramsFirstThenTheFullOnesAreCachedBehind) {
    if (orrery::cuda::nvrtc_version() < 12080) GTEST_SKIP() << "NVRTC before 12.8 has no --Ofast-compile";
    TempCache cache;
    std::vector<orrery::cuda::CompileRequest> full = tag_programs(cache, 3);
    orrery::cuda::StartPlan plan = orrery::cuda::plan_start(full, "max");
    ASSERT_EQ(plan.first.size(), full.size());
    ASSERT_EQ(plan.background.size(), full.size()) << "an empty cache: every program starts quick";
    for (size_t i = 0; i < full.size(); ++i) {
        EXPECT_EQ(plan.background[i], i);
        EXPECT_EQ(plan.first[i].fast_compile, "max") << plan.first[i].label;
        EXPECT_TRUE(plan.first[i].split_compile);
        EXPECT_FALSE(full[i].split_compile);
        EXPECT_EQ(plan.first[i].source, full[i].source);
    }
    std::vector<orrery::cuda::CompiledModule> quick = orrery::cuda::compile_modules(plan.first, 2);
    EXPECT_EQ(cache.entries(), full.size());
    std::vector<orrery::cuda::CompileRequest> behind;
    for (size_t i : plan.background) behind.push_back(full[i]);
    std::vector<orrery::cuda::BackgroundCompiles::Finished> done;
    {
        orrery::cuda::BackgroundCompiles bg(behind, 2);
        EXPECT_EQ(bg.size(), full.size());
        done = bg.wait_all();
        EXPECT_EQ(bg.outstanding(), 0u);
        EXPECT_FALSE(bg.has_finished());
        EXPECT_TRUE(bg.take_finished().empty());
    }
    ASSERT_EQ(done.size(), full.size());
    std::vector<bool> seen(full.size(), false);
    bool some_binary_differs = false;
    for (const auto& f : done) {
        ASSERT_LT(f.index, full.size());
        EXPECT_FALSE(seen[f.index]) << "each request finishes once";
        seen[f.index] = true;
        EXPECT_EQ(f.error, "");
        EXPECT_FALSE(f.module.from_cache);
        EXPECT_EQ(f.module.cubin.substr(0, 4), "\x7f"
                                               "ELF");
        EXPECT_NE(f.module.cache_path, quick[f.index].cache_path) << "a key of its own per level";
        some_binary_differs = some_binary_differs || f.module.cubin != quick[f.index].cubin;
    }
    EXPECT_TRUE(some_binary_differs) << "the level reached NVRTC";
    EXPECT_EQ(cache.entries(), 2 * full.size()) << "quick and full entries side by side";
    // The next start: the full binaries are cached, so nothing starts quick.
    orrery::cuda::StartPlan warm = orrery::cuda::plan_start(full, "max");
    EXPECT_TRUE(warm.background.empty());
    std::vector<orrery::cuda::CompiledModule> loaded = orrery::cuda::compile_modules(warm.first, 2);
    for (size_t i = 0; i < full.size(); ++i) {
        EXPECT_EQ(warm.first[i].fast_compile, "");
        EXPECT_FALSE(warm.first[i].split_compile);
        EXPECT_TRUE(loaded[i].from_cache);
        for (const auto& f : done)
            if (f.index == i) { EXPECT_EQ(loaded[i].cubin, f.module.cubin); }
    }
}

// No quick start where it would not be the fully optimised kernels that follow:
// the level off, or a level the env or the simulator chose itself; an unknown
// level is refused by name.
TEST(NvrtcColdStart, NoQuickStartWhenOffOrALevelIsAlreadyChosen) {
    TempCache cache;
    std::vector<orrery::cuda::CompileRequest> full = tag_programs(cache, 2);
    EXPECT_TRUE(orrery::cuda::plan_start(full, "").background.empty());
    std::vector<orrery::cuda::CompileRequest> env_level = full, own_option = full;
    env_level[1].fast_compile = "mid"; // EnvSpec::fast_compile
    own_option[0].extra_options = "--Ofast-compile=0";
    for (const auto* reqs : {&env_level, &own_option}) {
        orrery::cuda::StartPlan p = orrery::cuda::plan_start(*reqs, "max");
        EXPECT_TRUE(p.background.empty());
        for (size_t i = 0; i < reqs->size(); ++i) EXPECT_EQ(p.first[i].fast_compile, (*reqs)[i].fast_compile);
    }
    EXPECT_EQ(cache.entries(), 0u) << "planning compiles nothing";
    try {
        orrery::cuda::plan_start(full, "fastest");
        FAIL() << "an unknown level was accepted";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("GpuOptions::cold_start_level (ORRERY_NVRTC_BACKGROUND) is 'fastest'"), std::string::npos)
            << msg;
    }
}

// A background compile that fails is handed over with its label and NVRTC's
// log, once; the others finish as usual.
TEST(NvrtcColdStart, AFailedBackgroundCompileIsHandedOverNotLost) {
    TempCache cache;
    std::vector<orrery::cuda::CompileRequest> reqs = tag_programs(cache, 3);
    reqs[1].source += "\n__device__ void broken() { undefined_name_xyz = 1; }\n";
    orrery::cuda::BackgroundCompiles bg(reqs, 2);
    std::vector<orrery::cuda::BackgroundCompiles::Finished> done = bg.wait_all();
    ASSERT_EQ(done.size(), 3u);
    size_t failed = 0;
    for (const auto& f : done) {
        if (f.index != 1) {
            EXPECT_EQ(f.error, "") << reqs[f.index].label;
            EXPECT_FALSE(f.module.cubin.empty());
            continue;
        }
        ++failed;
        EXPECT_EQ(f.error.rfind(reqs[1].label + ": ", 0), 0u) << f.error;
        EXPECT_NE(f.error.find("undefined_name_xyz"), std::string::npos) << f.error;
        EXPECT_TRUE(f.module.cubin.empty());
    }
    EXPECT_EQ(failed, 1u);
    EXPECT_TRUE(bg.take_finished().empty()) << "handed over once";
}

// Destroying the compiles (a simulator destroyed on a cold start) cancels the
// programs not yet started and waits only for the one running: once the first
// of six has finished on one thread, at most one more lands in the cache. The
// time the destruction waited is printed, not asserted.
TEST(NvrtcColdStart, DestructionWaitsOnlyForTheCompilesRunning) {
    TempCache cache;
    std::vector<orrery::cuda::CompileRequest> reqs = tag_programs(cache, 6);
    auto bg = std::make_unique<orrery::cuda::BackgroundCompiles>(reqs, 1);
    const auto limit = std::chrono::steady_clock::now() + std::chrono::minutes(5);
    while (!bg->has_finished() && std::chrono::steady_clock::now() < limit)
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    ASSERT_TRUE(bg->has_finished());
    auto t0 = std::chrono::steady_clock::now();
    bg.reset();
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_GE(cache.entries(), 1u);
    EXPECT_LE(cache.entries(), 2u) << "the requests not started were cancelled";
    std::printf("destroyed 1 thread of %zu compiles after %.2f s\n", reqs.size(), waited);
}

// A process that exits while a background compile runs (a simulator never
// destroyed) waits for it at exit, rather than tearing NVRTC down under it.
TEST(NvrtcColdStart, ExitWhileCompilingIsClean) {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer reports the threads this test never joins on purpose";
#endif
    auto leak_and_exit = [] {
        TempCache cache;
        std::vector<orrery::cuda::CompileRequest> reqs = tag_programs(cache, 4);
        new orrery::cuda::BackgroundCompiles(reqs, 2); // never destroyed
        std::exit(0);
    };
    EXPECT_EXIT(leak_and_exit(), ::testing::ExitedWithCode(0), "");
}
