// orrery-watch-bench: what watching one world costs a batch that is stepping
// (issue 6, item 7). Steps the batch for T seconds alone, then T seconds while
// rendering the selected world offscreen at up to F frames per second in the
// same thread (as a training loop that shows frames would), and reports both
// step rates and the frame rate reached.

#include <chrono>
#include <cstdio>
#include <iostream>
#include <tuple>

#include "render/cli.hpp"
#include "render/render.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    orrery::render::CommonArgs common;
    double seconds = 5.0, fps = 60.0;
    uint32_t width = 1280, height = 800;
};

struct Phase {
    uint64_t steps = 0, frames = 0;
    double seconds = 0.0, frame_seconds = 0.0;
};

/// Steps for `secs`; with `frames`, renders world 0 whenever 1/fps has passed.
/// `lockstep` waits for each step, as a loop that reads every step's outputs
/// does; otherwise steps queue freely and a frame first drains the queue.
Phase run_phase(orrery::Simulator& sim, double secs, orrery::render::FrameRenderer* frames, double fps,
                bool lockstep) {
    Phase p;
    sim.synchronize();
    auto start = Clock::now(), next_frame = start;
    auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / fps));
    while (std::chrono::duration<double>(Clock::now() - start).count() < secs) {
        sim.step();
        if (lockstep) sim.synchronize();
        ++p.steps;
        if (frames && Clock::now() >= next_frame) {
            auto t0 = Clock::now();
            std::vector<uint8_t> rgba = frames->render(sim, 0);
            p.frame_seconds += std::chrono::duration<double>(Clock::now() - t0).count();
            ++p.frames;
            next_frame += period;
            if (next_frame < Clock::now()) next_frame = Clock::now() + period; // fell behind: do not burst
        }
    }
    sim.synchronize();
    p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return p;
}

int bench(const BenchArgs& a) {
    auto sim = orrery::render::make_simulator(a.common);
    orrery::render::Policy(a.common.policy, a.common.seed).act(*sim); // actions stay on the device
    orrery::render::FrameRenderer frames({a.width, a.height, a.common.vk_device});
    run_phase(*sim, 1.0, &frames, a.fps, true); // warm-up: kernels compiled, pipelines built
    double worlds = double(sim->num_worlds());
    std::printf("env %s, %u worlds on %s, frames %ux%u on %s\n", a.common.env.c_str(), sim->num_worlds(),
                sim->backend().describe().c_str(), a.width, a.height, frames.device_name().c_str());
    for (bool lockstep : {true, false}) {
        Phase alone = run_phase(*sim, a.seconds, nullptr, a.fps, lockstep);
        Phase watched = run_phase(*sim, a.seconds, &frames, a.fps, lockstep);
        double rate_alone = double(alone.steps) / alone.seconds;
        double rate_watched = double(watched.steps) / watched.seconds;
        std::printf("%s\n", lockstep ? "lockstep (each step waited for):" : "free-running (steps queued ahead):");
        std::printf("  alone:    %.1f steps/s (%.3g env-steps/s)\n", rate_alone, rate_alone * worlds);
        std::printf("  watched:  %.1f steps/s (%.3g env-steps/s), %.1f frames/s, %.2f ms per frame\n",
                    rate_watched, rate_watched * worlds, double(watched.frames) / watched.seconds,
                    1e3 * watched.frame_seconds / double(watched.frames ? watched.frames : 1));
        std::printf("  step-rate drop: %.2f%%\n", 100.0 * (1.0 - rate_watched / rate_alone));
    }
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        BenchArgs a;
        for (int i = 1; i < argc; ++i) {
            std::string arg = argv[i];
            if (orrery::render::parse_common(a.common, argc, argv, i)) continue;
            if (i + 1 >= argc) throw orrery::Error("option " + arg + " needs a value");
            if (arg == "--seconds") a.seconds = std::stod(argv[++i]);
            else if (arg == "--fps") a.fps = std::stod(argv[++i]);
            else if (arg == "--size") std::tie(a.width, a.height) = orrery::render::parse_size(arg, argv[++i]);
            else throw orrery::Error("unknown option '" + arg + "'");
        }
        if (a.common.env.empty()) a.common.env = "overcooked";
        if (!(a.seconds > 0.0) || !(a.fps > 0.0)) throw orrery::Error("--seconds and --fps must be positive");
        return bench(a);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orrery-watch-bench: %s\nusage: orrery-watch-bench [ENV] [--layout L] [--worlds N] "
                             "[--device cuda] [--seconds T] [--fps F] [--size WxH]\n", e.what());
        return 2;
    }
}
