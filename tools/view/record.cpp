// orrery-record: renders one world offscreen for K steps into PNG frames, then
// an mp4 (ffmpeg) or a GIF. Needs any Vulkan driver (lavapipe works), no display.

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <tuple>

#include "render/image_io.hpp"
#include "render/render.hpp"
#include "tools/view/cli.hpp"

namespace {

constexpr const char* kUsage =
    "usage: orrery-record ENV [--layout L] [--opt key=value]... [--world W] [--worlds N] [--steps K]\n"
    "                     [--policy random|noop] [--seed S] [--device cpu|cuda|auto] [--size WxH]\n"
    "                     [--fps F] [--vk-device D] [--actions FILE] --out DIR\n"
    "Writes DIR/frame_00000.png ... (K + 1 frames) and DIR/video.mp4 (ffmpeg) or DIR/video.gif.\n"
    "--actions FILE replays world W's recorded actions (one line per step; --steps defaults to the\n"
    "number of lines): from the same --seed this reproduces an episode played elsewhere.\n";

struct RecordArgs {
    orrery::render::CommonArgs common;
    uint32_t world = 0, steps = 100, width = 512, height = 512, fps = 10;
    bool steps_given = false;
    std::string out, actions;
};

RecordArgs parse(int argc, char** argv) {
    RecordArgs a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw orrery::Error("option " + arg + " needs a value");
            return argv[++i];
        };
        if (orrery::render::parse_common(a.common, argc, argv, i)) continue;
        using orrery::render::parse_u32;
        if (arg == "--world")
            a.world = parse_u32(arg, value());
        else if (arg == "--steps")
            a.steps = parse_u32(arg, value()), a.steps_given = true;
        else if (arg == "--actions")
            a.actions = value();
        else if (arg == "--fps")
            a.fps = parse_u32(arg, value());
        else if (arg == "--out")
            a.out = value();
        else if (arg == "--size")
            std::tie(a.width, a.height) = orrery::render::parse_size(arg, value());
        else if (arg == "-h" || arg == "--help") {
            std::cout << kUsage;
            std::exit(0);
        } else {
            throw orrery::Error("unknown option '" + arg + "'");
        }
    }
    if (a.out.empty()) throw orrery::Error("missing --out DIR");
    if (a.fps == 0) throw orrery::Error("option --fps must be at least 1");
    if (a.common.worlds <= a.world) a.common.worlds = a.world + 1;
    return a;
}

int record(const RecordArgs& a) {
    auto sim = orrery::render::make_simulator(a.common);
    orrery::render::FrameRenderer frames({a.width, a.height, orrery::render::vulkan_device(a.common)});
    std::filesystem::create_directories(a.out);
    orrery::render::Policy policy(a.common.policy, a.common.seed);
    std::unique_ptr<orrery::render::ActionReplay> replay;
    uint32_t steps = a.steps;
    if (!a.actions.empty()) {
        replay = std::make_unique<orrery::render::ActionReplay>(a.actions, *sim);
        if (!a.steps_given) steps = replay->steps();
        if (steps > replay->steps())
            throw orrery::Error("--steps " + std::to_string(steps) + " asks for more steps than the " +
                                std::to_string(replay->steps()) + " in " + a.actions);
    }
    std::vector<std::vector<uint8_t>> all;
    const bool ffmpeg = orrery::render::have_ffmpeg();
    using Clock = std::chrono::steady_clock;
    double scene_s = 0.0, render_s = 0.0;
    for (uint32_t k = 0; k <= steps; ++k) {
        if (k > 0) {
            policy.act(*sim);
            if (replay) replay->act(*sim, a.world, k - 1);
            sim->step();
        }
        auto t0 = Clock::now();
        orrery::render::Scene scene = orrery::render::scene_of(*sim, a.world); // copies this world only
        auto t1 = Clock::now();
        std::vector<uint8_t> rgba = frames.render(scene);
        render_s += std::chrono::duration<double>(Clock::now() - t1).count();
        scene_s += std::chrono::duration<double>(t1 - t0).count();
        char name[32];
        std::snprintf(name, sizeof(name), "frame_%05u.png", k);
        orrery::render::write_png(a.out + "/" + name, rgba.data(), a.width, a.height);
        if (!ffmpeg) all.push_back(std::move(rgba));
    }
    std::string video;
    if (ffmpeg) {
        video = a.out + "/video.mp4";
        orrery::render::encode_mp4(a.out + "/frame_%05d.png", video, a.fps);
    } else {
        video = a.out + "/video.gif";
        orrery::render::write_gif(video, all, a.width, a.height, 100 / a.fps);
    }
    std::printf("orrery-record: %u frames of %s world %u (%ux%u, Vulkan device: %s) -> %s, %s\n", steps + 1,
                a.common.env.c_str(), a.world, a.width, a.height, frames.device_name().c_str(), a.out.c_str(),
                video.c_str());
    std::printf("orrery-record: world %u state hash after step %u: %016llx\n", a.world, steps,
                static_cast<unsigned long long>(sim->state_hash(a.world)));
    double n = double(steps + 1);
    std::printf("orrery-record: per frame, read_world + scene %.3f ms, render + readback %.3f ms (%u worlds)\n",
                1e3 * scene_s / n, 1e3 * render_s / n, sim->num_worlds());
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return record(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orrery-record: %s\n%s", e.what(), kUsage);
        return 2;
    }
}
