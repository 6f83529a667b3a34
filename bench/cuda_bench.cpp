// orrery_cuda_bench: what the GPU backend costs. Start-up (cold NVRTC compile
// against a cache hit), and per-step time at several batch sizes for the
// megakernel and the per-node launches, queued, synchronised each step, and
// replayed from a CUDA graph. Run it twice with the same --cache-dir to see a
// warm start from a fresh process.

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cuda/background_compile.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/options.hpp"
#include "envs/registry.hpp"
#include "tools/cli_args.hpp"

namespace {

using Clock = std::chrono::steady_clock;
const Clock::time_point kProcessStart = Clock::now();

double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

struct Args {
    std::string env = "tag";
    std::vector<uint32_t> worlds = {1024, 16384, 262144};
    uint32_t steps = 2000;
    bool startup_only = false;
    bool wait_full = false;  ///< --startup-only: also wait for a cold start's full kernels
    bool cold_start = false; ///< --compile: as a cold start plans it, quick programs then full ones
    bool print_source = false;
    bool compile = false;
    int arch = 90;
    bool per_node = false;
    orrery::EnvOptions env_options;
    std::string only;  ///< "staged", "direct" or "per-node": run just that variant
    std::string label; ///< env, or env:layout
};

/// The ORRERY_* variables apply (options_from_environment), as for every tool.
orrery::SimOptions options(uint32_t worlds, bool per_node) {
    orrery::SimOptions o = orrery::options_from_environment();
    o.num_worlds = worlds;
    o.device = "cuda";
    o.per_node_launches = per_node;
    o.random_inputs = true; // every step draws its actions on the device
    return o;
}

orrery::cuda::CudaBackend& cuda_of(orrery::Simulator& sim) {
    return dynamic_cast<orrery::cuda::CudaBackend&>(sim.backend());
}

/// Mean microseconds per step of `body` over `steps` iterations, queued and synchronised once.
template <class F> double per_step_us(orrery::Simulator& sim, uint32_t steps, F body) {
    for (uint32_t i = 0; i < 20; ++i) body(i);
    sim.synchronize();
    auto t0 = Clock::now();
    for (uint32_t i = 0; i < steps; ++i) body(i);
    sim.synchronize();
    return since(t0) * 1e6 / steps;
}

/// Microseconds per step when `chunk` steps are captured into one CUDA graph and replayed.
double graph_us(orrery::Simulator& sim, uint32_t steps) {
    using namespace orrery::cuda;
    const DriverApi& d = driver();
    CudaBackend& b = cuda_of(sim);
    const uint32_t chunk = 100;
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;
    ORRERY_CU(d.cuStreamBeginCapture(b.stream(), kCaptureModeThreadLocal));
    for (uint32_t i = 0; i < chunk; ++i) sim.step();
    ORRERY_CU(d.cuStreamEndCapture(b.stream(), &graph));
    ORRERY_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
    uint32_t reps = std::max(1u, steps / chunk);
    double us = per_step_us(sim, reps, [&](uint32_t) { ORRERY_CU(d.cuGraphLaunch(exec, b.stream())); }) / chunk;
    d.cuGraphExecDestroy(exec);
    d.cuGraphDestroy(graph);
    return us;
}

/// "per-node", "direct", or "staged" ("staged-pdl" with programmatic launches).
const char* kernels_label(const orrery::cuda::CudaBackend& b, bool per_node) {
    if (per_node) return "per-node";
    if (!b.staged()) return "direct";
    return b.programmatic_launch() ? "staged-pdl" : "staged";
}

void bench_steps(const Args& a, uint32_t n, bool per_node, bool direct) {
    orrery::SimOptions o = options(n, per_node);
    o.gpu.stage = !direct;          // this row's kernel form, whatever ORRERY_CUDA_STAGE says
    o.gpu.megakernel = !per_node;   // and whatever form the env prefers
    o.gpu.cold_start_level.clear(); // the rows time the full kernels: compile them first
    orrery::Simulator sim(orrery::make_env_spec(a.env, a.env_options), o);
    orrery::cuda::CudaBackend& b = cuda_of(sim);
    b.finish_compiles(); // a cold start's fully optimised kernels, as a warm start runs
    uint32_t steps = n >= 262144 ? a.steps / 4 : a.steps;
    double queued = per_step_us(sim, steps, [&](uint32_t) { sim.step(); });
    double synced = per_step_us(sim, steps / 4, [&](uint32_t) {
        sim.step();
        sim.synchronize();
    });
    double graph = graph_us(sim, steps);
    sim.check_errors();
    std::printf("%-8s %-10s %9u %6u %12.2f %12.2f %12.2f %14.3e\n", a.label.c_str(), kernels_label(b, per_node), n,
                b.block_size(), queued, synced, graph, n / (std::min(queued, graph) * 1e-6));
    std::fflush(stdout);
}

/// A start from this process's beginning: the simulator ready, its first step
/// done (a cold start's target), with --wait-full the fully optimised kernels
/// in use (a cold start compiles them behind the first steps), and how long
/// destroying the simulator took (it waits for background compiles running).
void startup(const Args& a) {
    auto t0 = Clock::now();
    auto sim = std::make_unique<orrery::Simulator>(orrery::make_env_spec(a.env, {}), options(1024, false));
    sim->synchronize();
    const double ready = since(kProcessStart), made = since(t0);
    sim->step();
    sim->synchronize();
    const double first = since(kProcessStart);
    const orrery::cuda::ModuleStats& m = cuda_of(*sim).module_stats();
    // Microseconds per step (1,024 worlds, each step waited for), after 20 untimed.
    auto step_us = [&] {
        return per_step_us(*sim, 20, [&](uint32_t) {
            sim->step();
            sim->synchronize();
        });
    };
    const double early_us = a.wait_full ? step_us() : 0; // on a cold start, mostly the quick kernels
    std::printf("startup env=%s device=\"%s\" process_to_ready_s=%.3f first_step_s=%.3f simulator_s=%.3f "
                "module_s=%.3f from_cache=%d first_level=%s background_programs=%zu\n",
                a.env.c_str(), sim->backend().describe().c_str(), ready, first, made, m.compile_seconds,
                m.from_cache ? 1 : 0, m.first_level.empty() ? "-" : m.first_level.c_str(), m.background_programs);
    if (a.wait_full) {
        const size_t swapped_early = m.swapped_programs; // during those 40 steps
        sim->backend().finish_compiles();
        sim->step();
        sim->synchronize();
        const double full = since(kProcessStart);
        std::printf("startup env=%s full_kernels_s=%.3f swapped=%zu failed=%zu early_step_us=%.1f "
                    "(%zu programs swapped by then) full_step_us=%.1f\n",
                    a.env.c_str(), full, m.swapped_programs, m.failed_programs, early_us, swapped_early, step_us());
    }
    auto t1 = Clock::now();
    sim.reset();
    std::printf("startup env=%s destroy_s=%.3f\n", a.env.c_str(), since(t1));
    std::fflush(stdout);
}

/// The compiles of a cold start as the backend plans them (GpuOptions::cold_start_level,
/// ORRERY_NVRTC_BACKGROUND) on an empty cache: the quick programs the first step waits
/// for, then the full ones on background threads. Needs NVRTC, no GPU.
void compile_cold_start(const Args& a, std::vector<orrery::cuda::CompileRequest> reqs, const orrery::GpuOptions& g) {
    using namespace orrery::cuda;
    // An empty cache of its own, removed however this returns.
    std::string made = (std::filesystem::temp_directory_path() / "orrery_cold_start_XXXXXX").string();
    if (!::mkdtemp(made.data())) throw orrery::Error("cannot make a temporary cache directory from " + made);
    struct Removed {
        std::string path;
        ~Removed() {
            std::error_code ec;
            std::filesystem::remove_all(path, ec);
        }
    } dir{made};
    for (CompileRequest& r : reqs) {
        r.use_cache = true;
        r.cache_dir = dir.path;
    }
    auto t0 = Clock::now();
    StartPlan plan = plan_start(reqs, g.cold_start_level);
    std::vector<CompiledModule> first = compile_modules(plan.first, g.compile_threads);
    const double quick = since(t0);
    size_t slowest = 0;
    for (size_t i = 0; i < first.size(); ++i)
        if (first[i].seconds > first[slowest].seconds) slowest = i;
    std::vector<CompileRequest> behind;
    for (size_t i : plan.background) behind.push_back(reqs[i]);
    double full = quick, slowest_full = 0;
    if (!behind.empty()) {
        BackgroundCompiles bg(behind, g.compile_threads);
        for (const BackgroundCompiles::Finished& f : bg.wait_all()) {
            if (!f.error.empty()) throw orrery::Error(f.error);
            slowest_full = std::max(slowest_full, f.module.seconds);
        }
        full = since(t0);
    }
    std::printf("cold_start env=%s programs=%zu level=%s first_step_compile_s=%.2f (slowest %s %.2f s) "
                "background_programs=%zu full_kernels_s=%.2f (slowest full program %.2f s)\n",
                a.env.c_str(), reqs.size(), g.cold_start_level.empty() ? "-" : g.cold_start_level.c_str(), quick,
                plan.first[slowest].label.c_str(), first[slowest].seconds, behind.size(), full, slowest_full);
}

/// A cold compile of one kernel form, past the cache, as the backend does it
/// (the per-node form: its programs on GpuOptions::compile_threads threads;
/// ORRERY_NVRTC_OPTIONS and ORRERY_NVRTC_THREADS apply). Needs NVRTC, no GPU.
void compile_only(const Args& a) {
    using namespace orrery::cuda;
    orrery::SimOptions o = orrery::options_from_environment();
    orrery::EnvSpec spec = orrery::make_env_spec(a.env, a.env_options);
    orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    KernelForm form = a.per_node           ? KernelForm::kPerNode
                      : a.only == "direct" ? KernelForm::kDirect
                                           : KernelForm::kStaged;
    KernelSource k = generate_kernels(spec, plan, form, world_lanes_for(spec, o.gpu.world_lanes),
                                      team_block_for(spec, o.gpu.team_block_threads), o.gpu.fuse_serial);
    // The per-node form as the backend compiles it: a program per node (node_group_requests).
    std::vector<CompileRequest> reqs = a.per_node ? node_group_requests(spec, k, a.arch).reqs
                                                  : std::vector<CompileRequest>{kernel_request(spec, k, a.arch)};
    for (CompileRequest& r : reqs) {
        r.use_cache = false;
        r.extra_options = o.gpu.nvrtc_options; // after EnvSpec::fast_compile, as the backend does
        r.dump_source_dir = o.gpu.dump_source_dir;
        r.log_compile = false;
    }
    if (a.cold_start) return compile_cold_start(a, reqs, o.gpu);
    auto t0 = Clock::now();
    std::vector<CompiledModule> ms = compile_modules(reqs, o.gpu.compile_threads);
    double wall = since(t0), sum = 0;
    for (size_t i = 0; i < ms.size(); ++i) {
        sum += ms[i].seconds;
        std::printf("  %-60s %7.2f s %9zu bytes\n", reqs[i].label.c_str(), ms[i].seconds, ms[i].cubin.size());
        // Beside the dumped source (ORRERY_DUMP_SOURCE), its cubin: with ORRERY_NVRTC_OPTIONS=-lineinfo,
        // bench/sass_lines.py maps a profile's SASS addresses to source lines without a GPU.
        if (!reqs[i].dump_source_dir.empty()) {
            std::ofstream out(reqs[i].dump_source_dir + "/" + reqs[i].file_name + ".cubin", std::ios::binary);
            out.write(reinterpret_cast<const char*>(ms[i].cubin.data()), std::streamsize(ms[i].cubin.size()));
        }
    }
    std::printf("compile env=%s form=%s programs=%zu fast_compile=\"%s\" options=\"%s\" wall_s=%.2f sum_s=%.2f\n",
                a.env.c_str(),
                a.per_node           ? "per-node"
                : a.only == "direct" ? "direct"
                                     : "staged",
                ms.size(), reqs.front().fast_compile.c_str(), o.gpu.nvrtc_options.c_str(), wall, sum);
}

} // namespace

int main(int argc, char** argv) {
    Args a;
    for (int i = 1; i < argc; ++i) {
        std::string s = argv[i];
        auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
        if (s == "--env")
            a.env = next();
        else if (s == "--worlds")
            a.worlds = orrery::cli::parse_u32_list(s, next());
        else if (s == "--steps")
            a.steps = orrery::cli::parse_u32(s, next());
        else if (s == "--startup-only")
            a.startup_only = true;
        else if (s == "--wait-full")
            a.wait_full = true;
        else if (s == "--cold-start")
            a.cold_start = true;
        else if (s == "--print-source")
            a.print_source = true;
        else if (s == "--compile")
            a.compile = true;
        else if (s == "--arch")
            a.arch = int(orrery::cli::parse_u32(s, next()));
        else if (s == "--per-node")
            a.per_node = true;
        else if (s == "--layout")
            a.env_options["layout"] = next();
        else if (s == "--opt") { // an env option, as `orrery bench --opt KEY=VALUE`
            const std::string kv = next();
            const size_t eq = kv.find('=');
            if (eq == std::string::npos || eq == 0) {
                std::fprintf(stderr, "orrery_cuda_bench: --opt expects KEY=VALUE, got '%s'\n", kv.c_str());
                return 2;
            }
            a.env_options[kv.substr(0, eq)] = kv.substr(eq + 1);
        } else if (s == "--only")
            a.only = next();
        else {
            std::fprintf(
                stderr,
                "usage: orrery_cuda_bench [--env E] [--layout L] [--opt KEY=VALUE] [--worlds N,N] [--steps T]\n"
                "                          [--only staged|direct|per-node] [--startup-only [--wait-full]]\n"
                "       orrery_cuda_bench --print-source [--env E] [--per-node | --only direct]   (no GPU needed)\n"
                "       orrery_cuda_bench --compile [--env E] [--per-node | --only direct] [--arch 90] [--cold-start]\n"
                "                          (no GPU needed)\n");
            return 2;
        }
    }
    try {
        orrery::register_builtin_envs();
        if (a.print_source) {
            orrery::EnvSpec spec = orrery::make_env_spec(a.env, a.env_options);
            orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep);
            const orrery::SimOptions o = orrery::options_from_environment();
            using orrery::cuda::KernelForm;
            KernelForm form = a.per_node           ? KernelForm::kPerNode
                              : a.only == "direct" ? KernelForm::kDirect
                                                   : KernelForm::kStaged;
            std::fputs(orrery::cuda::generate_kernels(
                           spec, plan, form, orrery::cuda::world_lanes_for(spec, o.gpu.world_lanes),
                           orrery::cuda::team_block_for(spec, o.gpu.team_block_threads), o.gpu.fuse_serial)
                           .text.c_str(),
                       stdout);
            return 0;
        }
        if (a.compile) {
            compile_only(a);
            return 0;
        }
        startup(a);
        if (a.startup_only) return 0;
        std::printf("%-8s %-10s %9s %6s %12s %12s %12s %14s\n", "env", "kernels", "worlds", "block", "queued_us",
                    "synced_us", "graph_us", "env-steps/s");
        a.label = a.env_options.count("layout") ? a.env_options["layout"] : a.env;
        for (uint32_t n : a.worlds) {
            if (a.only.empty() || a.only == "staged") bench_steps(a, n, false, false);  // staged in shared memory
            if (a.only.empty() || a.only == "direct") bench_steps(a, n, false, true);   // on global memory
            if (a.only.empty() || a.only == "per-node") bench_steps(a, n, true, false); // one launch per op
        }
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orrery_cuda_bench: error: %s\n", e.what());
        return 1;
    }
    return 0;
}
