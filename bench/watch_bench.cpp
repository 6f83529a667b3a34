// orrery-watch-bench: what watching one world costs a batch that is stepping
// (issue 6, item 7). Steps the batch for T seconds alone, then T seconds while
// rendering world 0 offscreen at up to F frames per second: in the stepping
// thread (as a training loop that shows frames itself would) reading the world
// with read_world (waits for every queued step) or from lagging world views
// (Simulator::request/poll_world_view, never waits), and on a watcher thread
// of its own from world views. Reports the step rates, the frame rates, how
// many of the frames were rendered (FrameRenderer renders a frame only when
// its scene or camera changed; the others repeat the last one) and how many
// steps the views trailed. --moving-camera turns the camera a little every
// frame, so that every frame is rendered (a user orbiting the view).
// --phase-steps N runs each phase for N steps instead of T seconds: with N a
// multiple of the episode length, every phase covers the same part of the
// episodes of worlds that reset together (hide-and-seek: 240 steps), whose
// step cost changes over an episode. --thread-only leaves out the two phases
// that draw on the stepping thread.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <tuple>

#include "render/render.hpp"
#include "render/scene.hpp"
#include "tools/view/cli.hpp"

namespace {

using Clock = std::chrono::steady_clock;

struct BenchArgs {
    orrery::render::CommonArgs common;
    double seconds = 5.0, fps = 60.0;
    uint32_t width = 1280, height = 800;
    uint32_t shadow_size = 0; ///< the shadow map's side (0: the renderer's default)
    /// Free-running: wait for the queued steps after every `ahead` steps (0: never
    /// inside a phase). Long steps (hide-and-seek at 65,536 worlds takes about
    /// 0.1 s) otherwise fill the launch queue, and each phase ends by draining it.
    uint32_t ahead = 0;
    /// Each mode's phases run `rounds` times, interleaved (alone, read_world,
    /// world view, view thread, alone, ...), and are summed: a step whose cost
    /// changes over an episode (hide-and-seek's) is then sampled alike by all.
    uint32_t rounds = 1;
    /// Turn the camera every frame: every frame differs and is rendered.
    bool moving_camera = false;
    /// Steps per phase instead of `seconds` (0: by time).
    uint64_t phase_steps = 0;
    /// Only the alone and view-thread phases.
    bool thread_only = false;
};

/// How frames are made: none; on the stepping thread from read_world or from
/// world views; or on a watcher thread of their own from world views.
enum class Watch { kNone, kSync, kLagging, kThread };

struct Phase {
    uint64_t steps = 0, frames = 0, renders = 0; ///< renders: frames not repeated from the last one
    uint64_t shadows = 0;                        ///< renders that drew the shadow map (3-D)
    /// `seconds` runs until the queued steps have finished (the step rate);
    /// `watched` until stepping stopped, when frames stop too (the frame rate).
    double seconds = 0.0, watched = 0.0, frame_seconds = 0.0, render_seconds = 0.0;
    uint64_t views = 0, lag_sum = 0, lag_max = 0; ///< fresh views and their lag (kLagging)

    Phase& operator+=(const Phase& o) {
        steps += o.steps, frames += o.frames, renders += o.renders, shadows += o.shadows, views += o.views;
        lag_sum += o.lag_sum;
        seconds += o.seconds, watched += o.watched, frame_seconds += o.frame_seconds;
        render_seconds += o.render_seconds;
        lag_max = std::max(lag_max, o.lag_max);
        return *this;
    }
};

/// The scene of world 0 for one frame: read exactly, or from the latest landed
/// view (requesting the next one); `last` keeps the latest view's scene.
const orrery::render::Scene& frame_scene(orrery::Simulator& sim, Watch watch, orrery::render::Scene& last, Phase& p) {
    if (watch == Watch::kSync) {
        sim.read_world(0, [&](orrery::Ctx& ctx) { last = orrery::render::build_scene(sim.spec().draw, ctx); });
        return last;
    }
    sim.request_world_view(0); // refused while one is in flight
    bool fresh = false;
    sim.poll_world_view([&](orrery::Ctx& ctx, const orrery::LaggedView& v) {
        if (!v.fresh) return; // the same view again: its scene is `last` already
        last = orrery::render::build_scene(sim.spec().draw, ctx);
        fresh = true;
        ++p.views;
        p.lag_sum += v.lag;
        p.lag_max = std::max(p.lag_max, v.lag);
    });
    // As orrery-view does: on the GPU keep one copy in flight, to land by the next frame.
    if (fresh && sim.backend().device() != orrery::DeviceKind::kCpu) sim.request_world_view(0);
    return last;
}

/// Renders one frame if 1/fps has passed since the last one was due. The
/// schedule does not drift: a late frame is followed by the next one on time,
/// and only a frame more than a whole period late restarts it.
void maybe_frame(orrery::Simulator& sim, orrery::render::FrameRenderer& frames, Watch watch,
                 orrery::render::Scene& last, Phase& p, Clock::time_point& next_frame, Clock::duration period,
                 bool moving_camera) {
    auto now = Clock::now();
    if (now < next_frame) return;
    orrery::render::Camera cam;
    if (moving_camera) cam.yaw += 0.002f * float(p.frames % 1000); // a slow orbit: every frame differs
    const orrery::render::Scene& scene = frame_scene(sim, watch == Watch::kThread ? Watch::kLagging : watch, last, p);
    const uint64_t renders = frames.renders(), shadows = frames.shadow_passes();
    std::vector<uint8_t> rgba = frames.render(scene, cam);
    const double took = std::chrono::duration<double>(Clock::now() - now).count();
    p.frame_seconds += took;
    if (frames.renders() != renders) ++p.renders, p.render_seconds += took;
    p.shadows += frames.shadow_passes() - shadows;
    ++p.frames;
    next_frame += period;
    if (next_frame + period < Clock::now()) next_frame = Clock::now();
}

/// Steps for `secs`; unless `watch` is kNone, renders world 0 whenever 1/fps has
/// passed, on the stepping thread or (kThread) on a watcher thread. `lockstep`
/// waits for each step, as a loop that reads every step's outputs does;
/// otherwise steps queue freely (at most `ahead` of them when it is not 0).
Phase run_phase(orrery::Simulator& sim, double secs, orrery::render::FrameRenderer& frames, Watch watch,
                orrery::render::Scene& last, double fps, bool lockstep, uint32_t ahead = 0, bool moving_camera = false,
                uint64_t phase_steps = 0) {
    Phase p;
    sim.synchronize();
    auto start = Clock::now(), next_frame = start;
    auto period = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(1.0 / fps));
    std::atomic<bool> stop{false};
    std::thread watcher;
    if (watch == Watch::kThread)
        watcher = std::thread([&] {
            while (!stop.load()) {
                maybe_frame(sim, frames, watch, last, p, next_frame, period, moving_camera);
                std::this_thread::sleep_until(std::min(next_frame, Clock::now() + period));
            }
        });
    uint64_t steps = 0;
    while (phase_steps ? steps < phase_steps : std::chrono::duration<double>(Clock::now() - start).count() < secs) {
        sim.step();
        ++steps;
        if (lockstep || (ahead != 0 && steps % ahead == 0)) sim.synchronize();
        if (watch == Watch::kSync || watch == Watch::kLagging)
            maybe_frame(sim, frames, watch, last, p, next_frame, period, moving_camera);
    }
    stop = true;
    if (watcher.joinable()) watcher.join();
    p.watched = std::chrono::duration<double>(Clock::now() - start).count();
    sim.synchronize(); // free-running: the queued steps drain, with no frames drawn
    p.steps = steps;
    p.seconds = std::chrono::duration<double>(Clock::now() - start).count();
    return p;
}

/// Steps a second of a phase, and the percentage a watched phase's rate is below `rate_alone`.
double step_rate(const Phase& p) { return double(p.steps) / p.seconds; }
double drop_percent(const Phase& watched, double rate_alone) { return 100.0 * (1.0 - step_rate(watched) / rate_alone); }

void print_watched(const char* label, const Phase& w, double rate_alone, double worlds) {
    double rate = step_rate(w);
    std::printf("  %-16s %.1f steps/s (%.3g env-steps/s), %.1f frames/s, %.2f ms per frame, step-rate drop %.2f%%\n",
                label, rate, rate * worlds, double(w.frames) / w.watched,
                1e3 * w.frame_seconds / double(w.frames ? w.frames : 1), drop_percent(w, rate_alone));
    std::printf("  %-16s %.1f of them rendered/s (%.2f ms each; %.1f/s drew the shadow map), the rest repeated an "
                "unchanged frame\n",
                "", double(w.renders) / w.watched, 1e3 * w.render_seconds / double(w.renders ? w.renders : 1),
                double(w.shadows) / w.watched);
    if (w.views)
        std::printf("  %-16s %llu views landed, %.1f steps behind on average, %llu at most\n", "",
                    (unsigned long long)w.views, double(w.lag_sum) / double(w.views), (unsigned long long)w.lag_max);
}

int bench(const BenchArgs& a) {
    auto sim = orrery::render::make_simulator(a.common);
    sim->backend().finish_compiles(); // a GPU cold start's full kernels: time what a warm start runs
    orrery::render::Policy(a.common.policy, a.common.seed).act(*sim); // actions stay on the device
    if (sim->spec().draw.empty()) throw orrery::Error("env '" + a.common.env + "' declares nothing to draw");
    orrery::render::FrameRenderer frames({a.width, a.height, orrery::render::vulkan_device(a.common), a.shadow_size});
    orrery::render::Scene last;
    // Warm-up: kernels compiled, pipelines built, the first view landed.
    run_phase(*sim, 0.5, frames, Watch::kSync, last, a.fps, true);
    run_phase(*sim, 0.5, frames, Watch::kLagging, last, a.fps, true);
    double worlds = double(sim->num_worlds());
    std::printf("env %s, %u worlds on %s, frames %ux%u (shadow map %u) on %s%s\n", a.common.env.c_str(),
                sim->num_worlds(), sim->backend().describe().c_str(), a.width, a.height, frames.shadow_size(),
                frames.device_name().c_str(), a.moving_camera ? ", camera turning every frame" : "");
    std::fflush(stdout);
    for (bool lockstep : {true, false}) {
        Phase alone, sync, lagging, threaded;
        std::string rounds; // each round's view-thread drop against that round's alone phase
        auto phase = [&](Watch w) {
            return run_phase(*sim, a.seconds, frames, w, last, a.fps, lockstep, a.ahead, a.moving_camera,
                             a.phase_steps);
        };
        for (uint32_t r = 0; r < a.rounds; ++r) {
            Phase one = phase(Watch::kNone);
            alone += one;
            if (!a.thread_only) {
                sync += phase(Watch::kSync);
                lagging += phase(Watch::kLagging);
            }
            Phase watched = phase(Watch::kThread);
            threaded += watched;
            char drop[32];
            std::snprintf(drop, sizeof drop, "%s%.2f%%", r ? ", " : "", drop_percent(watched, step_rate(one)));
            rounds += drop;
        }
        double rate_alone = step_rate(alone);
        if (lockstep)
            std::printf("lockstep (each step waited for):\n");
        else if (a.ahead != 0)
            std::printf("free-running (at most %u steps queued ahead):\n", a.ahead);
        else
            std::printf("free-running (steps queued ahead):\n");
        std::printf("  %-16s %.1f steps/s (%.3g env-steps/s)\n", "alone:", rate_alone, rate_alone * worlds);
        if (!a.thread_only) {
            print_watched("read_world:", sync, rate_alone, worlds);
            print_watched("world view:", lagging, rate_alone, worlds);
        }
        print_watched("view thread:", threaded, rate_alone, worlds);
        std::printf("  %-16s view-thread drop per round: %s (%llu steps a phase)\n", "", rounds.c_str(),
                    (unsigned long long)(alone.steps / a.rounds));
        std::fflush(stdout); // a phase can take long: each block is out before the next starts
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
            if (arg == "--moving-camera") {
                a.moving_camera = true;
                continue;
            }
            if (arg == "--thread-only") {
                a.thread_only = true;
                continue;
            }
            if (i + 1 >= argc) throw orrery::Error("option " + arg + " needs a value");
            if (arg == "--seconds")
                a.seconds = std::stod(argv[++i]);
            else if (arg == "--fps")
                a.fps = std::stod(argv[++i]);
            else if (arg == "--rounds")
                a.rounds = std::max(1u, orrery::render::parse_u32(arg, argv[++i]));
            else if (arg == "--phase-steps")
                a.phase_steps = orrery::render::parse_u32(arg, argv[++i]);
            else if (arg == "--ahead")
                a.ahead = orrery::render::parse_u32(arg, argv[++i]);
            else if (arg == "--size")
                std::tie(a.width, a.height) = orrery::render::parse_size(arg, argv[++i]);
            else if (arg == "--shadow-size")
                a.shadow_size = orrery::render::parse_u32(arg, argv[++i]);
            else
                throw orrery::Error("unknown option '" + arg + "'");
        }
        if (a.common.env.empty()) a.common.env = "overcooked";
        if (!(a.seconds > 0.0) || !(a.fps > 0.0)) throw orrery::Error("--seconds and --fps must be positive");
        return bench(a);
    } catch (const std::exception& e) {
        std::fprintf(stderr,
                     "orrery-watch-bench: %s\nusage: orrery-watch-bench [ENV] [--layout L] [--worlds N] "
                     "[--device cuda] [--seconds T] [--fps F] [--size WxH] [--shadow-size N] [--ahead N] [--rounds R] "
                     "[--phase-steps N] [--thread-only] [--moving-camera] [--vk-device D]\n",
                     e.what());
        return 2;
    }
}
