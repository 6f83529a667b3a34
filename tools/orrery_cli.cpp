// The `orrery` command-line tool (C++ side): list envs, report memory,
// measure env-steps per second, and compile an env's GPU kernels offline. The
// Python package's `orrery` command adds view/record and forwards bench here
// when the native tool is installed.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/options.hpp"
#include "engine/plugin.hpp"
#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "tools/cli_args.hpp"

namespace {

struct BenchArgs {
    std::vector<std::string> envs;
    std::string device = "auto";
    std::vector<uint32_t> worlds = {1024, 65536};
    uint32_t steps = 0; ///< 0: enough steps for about 0.5 s per point
    uint32_t threads = 0;
    std::string json;
    orrery::EnvOptions options;
    bool per_node = false;
    std::string actions = "auto"; ///< "host", "device" or "auto" (device on a GPU, host on the CPU)
    int arch = 90;                ///< kernels: the compute capability, times 10
    std::string node;             ///< kernels: only the programs of nodes whose name holds this
    std::string out;              ///< kernels: the folder the cubins go to ("": none written)
};

/// A cubin (a 64-bit little-endian ELF file, as NVRTC makes it), read in
/// place: its fields, and its section headers by index.
struct Cubin {
    const std::string& elf;
    uint64_t shoff = 0, entsize = 0, count = 0, strtab = 0;
    explicit Cubin(const std::string& e) : elf(e) {
        if (elf.size() < 64 || elf[0] != '\x7f' || elf.compare(1, 3, "ELF") != 0 || elf[4] != 2)
            throw orrery::Error("the cubin is not a 64-bit ELF file");
        shoff = u(0x28, 8), entsize = u(0x3A, 2), count = u(0x3C, 2);
        strtab = u(header(u(0x3E, 2)) + 24, 8); // the section names' string table
    }
    /// The n-byte field at `at`.
    uint64_t u(uint64_t at, size_t n) const {
        uint64_t v = 0;
        if (at + n > elf.size()) throw orrery::Error("the cubin is not an ELF file NVRTC would make");
        std::memcpy(&v, elf.data() + at, n); // little-endian, as every CUDA host
        return v;
    }
    uint64_t header(uint64_t i) const { return shoff + i * entsize; }
    std::string name(uint64_t i) const { return elf.c_str() + strtab + u(header(i), 4); }
    uint64_t offset(uint64_t i) const { return u(header(i) + 24, 8); }
    uint64_t size(uint64_t i) const { return u(header(i) + 32, 8); }
};

/// The machine code in a cubin: each `.text.NAME` section's bytes, by NAME
/// (a kernel, or a function kept out of line).
std::vector<std::pair<std::string, uint64_t>> code_sections(const Cubin& c) {
    std::vector<std::pair<std::string, uint64_t>> out;
    for (uint64_t i = 0; i < c.count; ++i)
        if (const std::string name = c.name(i); name.rfind(".text.", 0) == 0)
            out.emplace_back(name.substr(6), c.size(i));
    return out;
}

/// Registers a thread of each kernel in a cubin, by name: the
/// EIATTR_REGCOUNT entries (attribute 0x2f: a symbol index and the count) of
/// its `.nv.info` sections, the symbols named through `.symtab` and its
/// string table. What the driver reports for the kernel on a GPU (Nsight
/// Compute's "registers per thread"), read here without one.
std::map<std::string, uint32_t> kernel_registers(const Cubin& c) {
    uint64_t symtab = 0, symstr = 0;
    for (uint64_t i = 0; i < c.count; ++i)
        if (c.u(c.header(i) + 4, 4) == 2) // SHT_SYMTAB; its sh_link names its string table
            symtab = c.offset(i), symstr = c.offset(c.u(c.header(i) + 40, 4));
    std::map<std::string, uint32_t> out;
    if (!symtab) return out;
    for (uint64_t i = 0; i < c.count; ++i) {
        if (c.name(i).rfind(".nv.info", 0) != 0) continue;
        const uint64_t end = c.offset(i) + c.size(i);
        for (uint64_t at = c.offset(i); at + 2 <= end;) {
            const uint64_t format = c.u(at, 1), attribute = c.u(at + 1, 1);
            if (format == 4) { // a sized value
                const uint64_t size = c.u(at + 2, 2);
                if (attribute == 0x2f && size == 8)
                    out[c.elf.c_str() + symstr + c.u(symtab + c.u(at + 4, 4) * 24, 4)] = uint32_t(c.u(at + 8, 4));
                at += 4 + size;
            } else {
                at += format == 1 ? 2 : 4; // no value; a byte or a half-word beside the attribute
            }
        }
    }
    return out;
}

/// `orrery kernels ENV`: the env's per-node GPU programs compiled here by
/// NVRTC as the CUDA backend compiles them (its team size and block, with
/// ORRERY_NVRTC_OPTIONS; no GPU needed), and each one's machine code: bytes
/// and instructions (16 bytes each from sm_70), kernels and out-of-line
/// functions apart, and the kernel's registers a thread. The GPU's physics
/// step is sensitive to code it never runs (docs/perf-notes.md), so a
/// change's size can be read here before a GPU measures it.
int kernels(const BenchArgs& a) {
    if (a.envs.size() != 1) throw orrery::Error("orrery kernels takes one env, got " + std::to_string(a.envs.size()));
    const orrery::EnvSpec spec = orrery::make_env_spec(a.envs[0], a.options);
    const orrery::GpuOptions gpu = orrery::options_from_environment().gpu;
    const orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
    const unsigned lanes = orrery::cuda::world_lanes_for(spec, gpu.world_lanes);
    const unsigned block = orrery::cuda::team_block_for(spec, gpu.team_block_threads);
    const orrery::cuda::KernelSource k =
        orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kPerNode, lanes, block, gpu.fuse_serial);
    std::vector<orrery::cuda::CompileRequest> reqs = orrery::cuda::node_requests(spec, k, a.arch);
    if (!a.out.empty()) std::filesystem::create_directories(a.out);
    std::printf("%s: sm_%d, %u lanes a world, blocks of %u threads%s%s\n", spec.name().c_str(), a.arch, lanes, block,
                gpu.nvrtc_options.empty() ? "" : ", NVRTC options ", gpu.nvrtc_options.c_str());
    uint64_t total = 0;
    for (size_t i = 0; i < reqs.size(); ++i) {
        const orrery::cuda::NodeProgram& p = k.programs[i];
        if (!a.node.empty() && p.node.find(a.node) == std::string::npos) continue;
        orrery::cuda::CompileRequest& r = reqs[i];
        r.use_cache = false;
        r.log_compile = false;
        r.extra_options = gpu.nvrtc_options;
        const orrery::cuda::CompiledModule m = orrery::cuda::compile_module(r);
        uint64_t bytes = 0;
        const Cubin cubin(m.cubin);
        const auto sections = code_sections(cubin);
        for (const auto& [name, n] : sections) bytes += n;
        total += bytes;
        // Kernels whose threads a world are chosen at launch (GpuOptions::pack_serial, pack_teams, wide_lanes).
        std::string at_launch;
        for (const orrery::cuda::LaunchLanes& l : k.launch_lanes)
            if (l.kernel == p.kernel)
                at_launch = l.serial ? ", serial: 1 or " + std::to_string(k.lanes) + " lanes at launch"
                            : l.team
                                ? ", team: 1 or " + std::to_string(k.lanes) + " lanes at launch"
                                : ", " + std::to_string(k.lanes) + " to " + std::to_string(l.most) + " lanes at launch";
        const auto registers = kernel_registers(cubin);
        const auto found = registers.find(p.kernel);
        const std::string regs = found == registers.end() ? "" : ", " + std::to_string(found->second) + " registers";
        std::printf("  %-28s %9llu bytes %7llu instructions  (%s%s, %zu code sections, %.1f s%s)\n", p.node.c_str(),
                    (unsigned long long)bytes, (unsigned long long)(bytes / 16), p.kernel.c_str(), regs.c_str(),
                    sections.size(), m.seconds, at_launch.c_str());
        for (const auto& [name, n] : sections)
            if (sections.size() > 1) std::printf("      %9llu  %s\n", (unsigned long long)n, name.c_str());
        if (!a.out.empty()) {
            std::ofstream f(a.out + "/" + p.kernel + ".cubin", std::ios::binary);
            f << m.cubin;
            if (!f) throw orrery::Error("cannot write " + a.out + "/" + p.kernel + ".cubin (--out)");
            std::ofstream src(a.out + "/" + p.kernel + ".cu");
            src << p.text;
            if (!src) throw orrery::Error("cannot write " + a.out + "/" + p.kernel + ".cu (--out)");
        }
    }
    std::printf("  %-28s %9llu bytes %7llu instructions\n", "all", (unsigned long long)total,
                (unsigned long long)(total / 16));
    return 0;
}

int bench(const BenchArgs& a) {
    std::vector<std::string> envs = a.envs;
    if (envs.empty())
        for (auto& [name, summary] : orrery::registered_envs()) envs.push_back(name);
    // device="auto" is resolved once (one fallback line at most), so every
    // simulator below runs on the same device and picks its action source for it.
    std::string device = a.device;
    if (device == "auto") {
        orrery::SimOptions probe = orrery::options_from_environment();
        probe.device = "auto";
        orrery::Simulator sim(orrery::make_env_spec(envs.front(), a.options), probe);
        device = sim.backend().device() == orrery::DeviceKind::kCpu
                     ? "cpu"
                     : "cuda:" + std::to_string(sim.backend().device_index());
    }
    std::ostringstream json;
    json << "[";
    bool first = true;
    std::printf("%-12s %-10s %-22s %10s %8s %10s %16s\n", "env", "device", "backend", "worlds", "steps", "seconds",
                "env-steps/s");
    for (const std::string& env : envs) {
        for (uint32_t n : a.worlds) {
            orrery::SimOptions o = orrery::options_from_environment();
            o.num_worlds = n;
            o.threads = a.threads;
            o.device = a.device;
            o.per_node_launches = o.per_node_launches || a.per_node; // --per-node or ORRERY_CUDA_PER_NODE=1
            // Random actions: "device" draws them inside each step on the stepping
            // device (SimOptions::random_inputs: no host traffic on a GPU); "host"
            // copies one of 16 pre-drawn action sets before every step, which on
            // the CPU is a small memcpy (drawing costs about as much as an
            // Overcooked step there) and is what the CPU peers do.
            o.device = device;
            o.random_inputs = a.actions == "device" || (a.actions == "auto" && device != "cpu");
            // A benchmark times the fully optimised kernels (what a warm start runs): on a
            // cold GPU start it waits for them, so quick kernels first would only add a
            // compile, unless ORRERY_NVRTC_BACKGROUND asks for them (physics_gpu.sh's cold rows).
            if (!std::getenv("ORRERY_NVRTC_BACKGROUND")) o.gpu.cold_start_level.clear();
            orrery::Simulator sim(orrery::make_env_spec(env, a.options), o);
            sim.backend().finish_compiles();
            const bool host_actions = !o.random_inputs;
            uint64_t rng = 0x9E3779B97F4A7C15ull;
            std::vector<std::vector<uint8_t>> pool;
            void* input_ptr = nullptr;
            if (host_actions) {
                for (int i = 0; i < 16; ++i) {
                    std::vector<std::vector<uint8_t>> inputs = orrery::random_inputs(sim, rng);
                    pool.push_back(inputs.empty() ? std::vector<uint8_t>() : inputs.front());
                }
                for (const auto& [name, range] : sim.spec().input_ranges()) {
                    input_ptr = sim.tensor(name).data;
                    break;
                }
            }
            auto run = [&](uint32_t steps) {
                for (uint32_t s = 0; s < steps; ++s) {
                    if (input_ptr) sim.backend().copy_from_host(input_ptr, pool[s % 16].data(), pool[s % 16].size());
                    sim.step();
                }
                sim.synchronize();
            };
            run(8); // warm-up
            uint32_t steps = a.steps;
            if (steps == 0) {
                auto t0 = std::chrono::steady_clock::now();
                run(16);
                double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
                steps = uint32_t(std::max(16.0, std::min(1e6, 0.5 / (dt / 16))));
            }
            auto t0 = std::chrono::steady_clock::now();
            run(steps);
            double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
            sim.check_errors();
            double rate = double(n) * steps / secs;
            std::string backend = sim.backend().describe();
            // Output tensors (and the done flags) are what every step writes out.
            size_t bytes_per_step = 0;
            for (const orrery::TensorView& t : sim.tensors())
                if (!t.input && t.name != "errors" && t.name.rfind("final_", 0) != 0) bytes_per_step += t.bytes();
            // The layout the env resolved (its default too), for every env that has one.
            const auto& info = sim.spec().info();
            auto layout = info.find("layout");
            std::printf("%-12s %-10s %-22s %10u %8u %10.3f %16.0f\n", env.c_str(),
                        sim.backend().device() == orrery::DeviceKind::kCpu ? "cpu" : "cuda", backend.c_str(), n, steps,
                        secs, rate);
            std::fflush(stdout);
            json << (first ? "" : ",") << "\n  {\"env\": \"" << env << "\", \"device\": \""
                 << (sim.backend().device() == orrery::DeviceKind::kCpu ? "cpu" : "cuda") << "\", \"backend\": \""
                 << backend << "\", \"num_worlds\": " << n << ", \"steps\": " << steps << ", \"seconds\": " << secs
                 << ", \"env_steps_per_s\": " << rate << ", \"bytes_moved_per_step\": " << bytes_per_step
                 << ", \"actions\": \"" << (host_actions ? "host" : "device") << "\"";
            if (layout != info.end()) json << ", \"layout\": \"" << layout->second << "\"";
            json << "}";
            first = false;
        }
    }
    json << "\n]\n";
    if (!a.json.empty()) std::ofstream(a.json) << json.str();
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: orrery envs\n"
                 "       orrery memory ENV [--worlds N] [--device D] [--threads T] [--layout L] [--opt key=value ...]\n"
                 "       orrery bench [ENV ...] [--layout L] [--device auto|cpu|cuda] [--worlds N,N,...] [--steps T]\n"
                 "                    [--threads T] [--per-node] [--actions auto|host|device]\n"
                 "                    [--json FILE] [--opt key=value ...]\n"
                 "       orrery kernels ENV [--arch N] [--node NAME] [--out DIR] [--layout L] [--opt key=value ...]\n"
                 "       (--layout L is --opt layout=L)\n");
    return 2;
}

/// `orrery bench --help`, `orrery memory --help` and `orrery kernels --help`: that subcommand's own help, on stdout.
int help(const std::string& cmd) {
    if (cmd == "kernels") {
        std::printf(
            "usage: orrery kernels ENV [--arch N] [--node NAME] [--out DIR] [--layout L] [--opt key=value ...]\n\n"
            "Compiles ENV's per-node GPU programs with NVRTC on this machine (no GPU needed), as the CUDA\n"
            "backend would (ORRERY_NVRTC_OPTIONS, ORRERY_CUDA_LANES and ORRERY_CUDA_BLOCK_THREADS apply),\n"
            "and prints each program's machine code in bytes and instructions, and its kernel's registers\n"
            "a thread.\n\n"
            "  --arch N          compute capability times 10 (default 90: H100, H200)\n"
            "  --node NAME       only the programs of nodes whose name holds NAME (e.g. phys::simulate)\n"
            "  --out DIR         also write each program's cubin and CUDA source to DIR/KERNEL.cubin, .cu\n"
            "  --layout L        the env's layout option (same as --opt layout=L)\n"
            "  --opt key=value   any env option, repeatable\n");
        return 0;
    }
    if (cmd == "memory") {
        std::printf(
            "usage: orrery memory ENV [--worlds N] [--device D] [--threads T] [--layout L] [--opt key=value "
            "...]\n\n"
            "Bytes per archetype for N worlds of ENV, from its declared capacities, and the step-scratch\n"
            "pool of the backend: a slot per CPU thread, or per GPU team that can be resident at once.\n\n"
            "  --worlds N        number of worlds (default 1)\n"
            "  --device D        cpu (default) or cuda[:N]: the pool sized for that GPU (compiles the kernels)\n"
            "  --threads T       CPU worker threads (default 1)\n"
            "  --layout L        the env's layout option (same as --opt layout=L)\n"
            "  --opt key=value   any env option, repeatable\n");
        return 0;
    }
    std::printf("usage: orrery bench [ENV ...] [options]\n\n"
                "Steps ENV (default: every registered env) at each batch size and prints env-steps/s.\n\n"
                "  --device D        auto (default: CUDA when usable), cpu, cuda or cuda:N\n"
                "  --worlds N,N,...  batch sizes to measure\n"
                "  --steps T         steps timed per batch size\n"
                "  --threads T       CPU worker threads (0: every core)\n"
                "  --per-node        GPU: one launch per task-graph node instead of the megakernel\n"
                "  --actions A       where random actions come from: auto, host or device\n"
                "  --json FILE       write the results as JSON\n"
                "  --layout L        the env's layout option (same as --opt layout=L)\n"
                "  --opt key=value   any env option, repeatable\n");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    orrery::register_builtin_envs();
    if (argc < 2) return usage();
    std::string cmd = argv[1];
    try {
        orrery::load_plugins_from_environment();
        if (cmd == "envs") {
            for (auto& [name, summary] : orrery::registered_envs())
                std::printf("%-12s %s\n", name.c_str(), summary.c_str());
            return 0;
        }
        BenchArgs a;
        for (int i = 2; i < argc; ++i) {
            std::string s = argv[i];
            if (s == "--help" || s == "-h") return help(cmd);
            auto next = [&]() -> std::string {
                if (i + 1 >= argc) throw orrery::Error(s + " needs a value");
                return argv[++i];
            };
            if (s == "--device")
                a.device = next();
            else if (s == "--worlds")
                a.worlds = orrery::cli::parse_u32_list(s, next());
            else if (s == "--steps")
                a.steps = orrery::cli::parse_u32(s, next());
            else if (s == "--threads")
                a.threads = orrery::cli::parse_u32(s, next());
            else if (s == "--json")
                a.json = next();
            else if (s == "--arch")
                a.arch = int(orrery::cli::parse_u32(s, next()));
            else if (s == "--node")
                a.node = next();
            else if (s == "--out")
                a.out = next();
            else if (s == "--per-node")
                a.per_node = true;
            else if (s == "--actions") {
                a.actions = next();
                if (a.actions != "auto" && a.actions != "host" && a.actions != "device")
                    throw orrery::Error("--actions expects auto, host or device, got '" + a.actions + "'");
            } else if (s == "--layout")
                a.options["layout"] = next(); // the env's layout option (Overcooked)
            else if (s == "--opt") {
                std::string kv = next();
                size_t eq = kv.find('=');
                if (eq == std::string::npos) throw orrery::Error("--opt expects key=value, got '" + kv + "'");
                a.options[kv.substr(0, eq)] = kv.substr(eq + 1);
            } else if (s.rfind("--", 0) == 0) {
                std::fprintf(stderr, "orrery: unknown option '%s'\n", s.c_str());
                return usage();
            } else
                a.envs.push_back(s);
        }
        if (cmd == "bench") return bench(a);
        if (cmd == "kernels") return kernels(a);
        if (cmd == "memory") {
            if (a.envs.size() != 1) return usage();
            orrery::SimOptions o = orrery::options_from_environment();
            o.num_worlds = a.worlds.empty() ? 1 : a.worlds[0];
            o.threads = a.threads ? a.threads : 1;
            o.device = a.device == "auto" ? "cpu" : a.device;
            o.per_node_launches = o.per_node_launches || a.per_node;
            orrery::Simulator sim(orrery::make_env_spec(a.envs[0], a.options), o);
            std::printf("%s", sim.memory_report().to_string().c_str());
            return 0;
        }
        return usage();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orrery: error: %s\n", e.what());
        return 1;
    }
}
