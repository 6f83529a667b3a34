// orrery-record: renders one world offscreen for K steps into PNG frames, then
// an mp4 (ffmpeg) or a GIF. Needs any Vulkan driver (lavapipe works), no display.

#include <algorithm>
#include <chrono>
#include <cstring>
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
    "                     [--fps F] [--vk-device D] [--actions FILE] [--camera orbit|top|eye:ROW|eye:ARCH:ROW]\n"
    "                     [--fov DEG] [--overlays a,b,...] [--grid N] --out DIR\n"
    "Writes DIR/frame_00000.png ... (K + 1 frames) and DIR/video.mp4 (ffmpeg) or DIR/video.gif.\n"
    "3-D views: --camera picks the orbit camera (default), top-down, or the eyes of body ROW of the\n"
    "first archetype drawn as bodies (or of archetype ARCH), whose horizontal field of view is --fov\n"
    "degrees (default 135); --overlays turns on the named overlays (bounds, velocities, contacts, ...).\n"
    "--grid N draws worlds W .. W + N - 1 side by side in each frame.\n"
    "--actions FILE replays world W's recorded actions (one line per step; --steps defaults to the\n"
    "number of lines), or with --grid N those of worlds W .. W + N - 1 when each line holds N worlds'\n"
    "values: from the same --seed this reproduces episodes played elsewhere.\n";

struct RecordArgs {
    orrery::render::CommonArgs common;
    uint32_t world = 0, steps = 100, width = 512, height = 512, fps = 10;
    bool steps_given = false;
    std::string out, actions;
    orrery::render::CameraChoice camera;
    float fov = 135.0f;
    bool overlays_given = false;
    std::vector<std::string> overlays;
    uint32_t grid = 1;
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
        else if (arg == "--camera")
            a.camera = orrery::render::parse_camera(arg, value());
        else if (arg == "--fov") {
            a.fov = float(parse_u32(arg, value()));
            if (a.fov < 1.0f || a.fov > 170.0f) throw orrery::Error("option --fov expects degrees in [1, 170]");
        } else if (arg == "--overlays") {
            a.overlays_given = true;
            a.overlays = orrery::render::split_list(value());
        } else if (arg == "--grid") {
            a.grid = parse_u32(arg, value());
            if (a.grid < 1 || a.grid > 64) throw orrery::Error("option --grid expects a number of worlds in [1, 64]");
        } else if (arg == "--out")
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
    if (a.common.worlds < a.world + a.grid) a.common.worlds = a.world + a.grid;
    return a;
}

/// The camera and overlays the options ask for, checked against the env.
struct View {
    orrery::render::Camera cam;
    orrery::render::SceneOptions scene;
    uint32_t eye_archetype = 0;
};

View view_of(const RecordArgs& a, const orrery::EnvSpec& spec) {
    View v;
    v.scene = orrery::render::default_scene_options(spec.draw);
    if (a.overlays_given) {
        std::vector<std::string> known = orrery::render::overlay_names(spec.draw);
        std::string list;
        for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
        for (const auto& o : a.overlays)
            if (std::find(known.begin(), known.end(), o) == known.end())
                throw orrery::Error("option --overlays: env '" + spec.name() + "' has no overlay '" + o +
                                    "' (it has: " + (list.empty() ? "none" : list) + ")");
        v.scene.overlays = a.overlays;
    }
    using Mode = orrery::render::Camera::Mode;
    v.cam.mode = a.camera.mode == "top" ? Mode::kTop : a.camera.mode == "eye" ? Mode::kEye : Mode::kOrbit;
    if (v.cam.mode == Mode::kEye) v.eye_archetype = orrery::render::eye_archetype(a.camera, spec);
    v.cam.eye_fov = a.fov / 57.2957795f;
    return v;
}

/// One frame: world `world` alone, or a grid of worlds world .. world + grid - 1,
/// each tile framed by its own camera (the eye camera follows each world's body).
std::vector<uint8_t> render_frame(orrery::Simulator& sim, const RecordArgs& a, View& v,
                                  orrery::render::FrameRenderer& tiles, double& scene_s, double& render_s) {
    using Clock = std::chrono::steady_clock;
    uint32_t cols = 1;
    while (cols * cols < a.grid) ++cols;
    std::vector<uint8_t> out(size_t(a.width) * a.height * 4, 0);
    for (uint32_t t = 0; t < a.grid; ++t) {
        auto t0 = Clock::now();
        orrery::render::Scene scene = orrery::render::scene_of(sim, a.world + t, v.scene); // copies this world only
        if (v.cam.mode == orrery::render::Camera::Mode::kEye &&
            !orrery::render::aim_eye(scene, v.eye_archetype, a.camera.row, v.cam))
            throw orrery::Error("--camera eye: world " + std::to_string(a.world + t) + " draws no body at row " +
                                std::to_string(a.camera.row));
        auto t1 = Clock::now();
        std::vector<uint8_t> rgba = tiles.render(scene, v.cam);
        render_s += std::chrono::duration<double>(Clock::now() - t1).count();
        scene_s += std::chrono::duration<double>(t1 - t0).count();
        if (a.grid == 1) return rgba;
        uint32_t x0 = (t % cols) * tiles.width(), y0 = (t / cols) * tiles.height();
        for (uint32_t y = 0; y < tiles.height(); ++y)
            std::memcpy(&out[(size_t(y0 + y) * a.width + x0) * 4], &rgba[size_t(y) * tiles.width() * 4],
                        size_t(tiles.width()) * 4);
    }
    return out;
}

int record(const RecordArgs& a) {
    auto sim = orrery::render::make_simulator(a.common);
    View view = view_of(a, sim->spec());
    uint32_t cols = 1;
    while (cols * cols < a.grid) ++cols;
    uint32_t rows = (a.grid + cols - 1) / cols;
    if (a.width / cols == 0 || a.height / rows == 0)
        throw orrery::Error("--size " + std::to_string(a.width) + "x" + std::to_string(a.height) +
                            " is too small for " + std::to_string(a.grid) + " tiles");
    orrery::render::FrameRenderer frames({a.width / cols, a.height / rows, orrery::render::vulkan_device(a.common)});
    std::filesystem::create_directories(a.out);
    orrery::render::Policy policy(a.common.policy, a.common.seed);
    std::unique_ptr<orrery::render::ActionReplay> replay;
    uint32_t steps = a.steps;
    if (!a.actions.empty()) {
        replay = std::make_unique<orrery::render::ActionReplay>(a.actions, *sim, a.grid);
        if (!a.steps_given) steps = replay->steps();
        if (steps > replay->steps())
            throw orrery::Error("--steps " + std::to_string(steps) + " asks for more steps than the " +
                                std::to_string(replay->steps()) + " in " + a.actions);
    }
    std::vector<std::vector<uint8_t>> all;
    const bool ffmpeg = orrery::render::have_ffmpeg();
    double scene_s = 0.0, render_s = 0.0;
    for (uint32_t k = 0; k <= steps; ++k) {
        if (k > 0) {
            policy.act(*sim);
            if (replay) replay->act(*sim, a.world, k - 1);
            sim->step();
        }
        std::vector<uint8_t> rgba = render_frame(*sim, a, view, frames, scene_s, render_s);
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
    std::printf("orrery-record: %u frames of %s world %u%s (%ux%u, Vulkan device: %s) -> %s, %s\n", steps + 1,
                a.common.env.c_str(), a.world,
                a.grid > 1 ? (" and the next " + std::to_string(a.grid - 1)).c_str() : "", a.width, a.height,
                frames.device_name().c_str(), a.out.c_str(), video.c_str());
    for (uint32_t w = a.world; w < a.world + a.grid; ++w)
        std::printf("orrery-record: world %u state hash after step %u: %016llx\n", w, steps,
                    static_cast<unsigned long long>(sim->state_hash(w)));
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
