// The `orrery` command-line tool (C++ side): list envs, report memory, and
// measure env-steps per second. The Python package's `orrery` command adds
// view/record and forwards bench here when the native tool is installed.

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

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
};

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
                 "       (--layout L is --opt layout=L)\n");
    return 2;
}

/// `orrery bench --help` and `orrery memory --help`: that subcommand's own help, on stdout.
int help(const std::string& cmd) {
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
