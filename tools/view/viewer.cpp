// orrery-view: watch and play any world of a batch. The selected world alone is
// copied to the host each frame, so watching a large batch costs one world's
// bytes per frame, never the batch. While running, frames show the latest
// landed world view (Simulator::request/poll_world_view), so a frame never
// waits for queued steps; paused, they read the world exactly (read_world).

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <tuple>

#include <GLFW/glfw3.h>
#include <imgui.h>

#include "render/image_io.hpp"
#include "tools/view/cli.hpp"
#include "tools/view/panels.hpp"
#include "tools/view/window.hpp"

namespace {

using namespace orrery;
using namespace orrery::render;

constexpr const char* kUsage =
    "usage: orrery-view ENV [--layout L] [--opt key=value]... [--worlds N] [--device cpu|cuda|auto]\n"
    "                   [--seed S] [--policy random|noop] [--vk-device D] [--size WxH]\n"
    "                   [--paused] [--screenshot PNG] [--frames N]\n"
    "                   [--obs-names a,b,...] [--action-names a,b,...] [--actions FILE] [--speed S]\n"
    "Keys: arrows/WASD move the controlled agent, space interacts, P pauses, N steps once,\n"
    "Tab picks the next agent, [ and ] the previous/next world; the mouse wheel zooms, dragging\n"
    "pans (2-D) or orbits (3-D). With --frames N the viewer\n"
    "exits after N frames, writing the last one to --screenshot if given. --obs-names and\n"
    "--action-names label the observation's channels (or entries) and the action values.\n"
    "--actions FILE replays world 0's recorded actions (one line per step, as orrery-record\n"
    "takes them: how `orrery view --play POLICY` shows a trained policy's episode), then pauses\n"
    "and, on exit, prints world 0's state hash. --speed S: steps per second (default 8).\n";

struct ViewArgs {
    CommonArgs common;
    uint32_t width = 1280, height = 800, frames = 0;
    std::string screenshot;
    bool paused = false;
    std::vector<std::string> obs_names, action_names;
    std::string actions; ///< a recorded episode of world 0 to replay
    float speed = 8.0f;
};

/// "a,b,c" as {"a", "b", "c"}.
std::vector<std::string> split_names(const std::string& csv) {
    std::vector<std::string> out(1);
    for (char c : csv) {
        if (c == ',')
            out.emplace_back();
        else
            out.back().push_back(c);
    }
    return out;
}

ViewArgs parse(int argc, char** argv) {
    ViewArgs a;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) throw Error("option " + arg + " needs a value");
            return argv[++i];
        };
        if (parse_common(a.common, argc, argv, i)) continue;
        if (arg == "--screenshot")
            a.screenshot = value();
        else if (arg == "--paused")
            a.paused = true;
        else if (arg == "--frames")
            a.frames = parse_u32(arg, value());
        else if (arg == "--size")
            std::tie(a.width, a.height) = parse_size(arg, value());
        else if (arg == "--obs-names")
            a.obs_names = split_names(value());
        else if (arg == "--action-names")
            a.action_names = split_names(value());
        else if (arg == "--actions")
            a.actions = value();
        else if (arg == "--speed") {
            a.speed = float(parse_u32(arg, value()));
            if (a.speed < 1.0f) throw Error("--speed 0 is invalid; expected steps per second >= 1");
        } else if (arg == "-h" || arg == "--help") {
            std::cout << kUsage;
            std::exit(0);
        } else {
            throw Error("unknown option '" + arg + "'");
        }
    }
    if (a.common.env.empty()) throw Error("missing ENV");
    return a;
}

/// Keys to DrawSpec keys; edge-triggered so one press is one action.
class KeyReader {
  public:
    /// The declared key pressed since the last call, if any (kNoop otherwise, with `pressed` false).
    Key poll(GLFWwindow* w, bool& pressed) {
        struct Binding {
            int a, b;
            Key key;
        };
        static const Binding kBindings[] = {{GLFW_KEY_UP, GLFW_KEY_W, Key::kUp},
                                            {GLFW_KEY_DOWN, GLFW_KEY_S, Key::kDown},
                                            {GLFW_KEY_LEFT, GLFW_KEY_A, Key::kLeft},
                                            {GLFW_KEY_RIGHT, GLFW_KEY_D, Key::kRight},
                                            {GLFW_KEY_SPACE, GLFW_KEY_E, Key::kInteract}};
        pressed = false;
        Key out = Key::kNoop;
        for (const Binding& b : kBindings) {
            bool down = glfwGetKey(w, b.a) == GLFW_PRESS || glfwGetKey(w, b.b) == GLFW_PRESS;
            bool& was = down_[int(b.key)];
            if (down && !was) out = b.key, pressed = true;
            was = down;
        }
        return out;
    }
    /// True once per press of `key`.
    bool tapped(GLFWwindow* w, int key) {
        bool down = glfwGetKey(w, key) == GLFW_PRESS;
        bool& was = other_[key & 511];
        bool hit = down && !was;
        was = down;
        return hit;
    }

  private:
    bool down_[8] = {};
    bool other_[512] = {};
};

/// The action value the env declares for `key`, or -1.
int32_t action_for(const DrawSpec& d, Key key) {
    for (const auto& [k, v] : d.keys)
        if (k == key) return v;
    return -1;
}

/// Mouse over the scene: the wheel zooms; dragging pans (2-D) or orbits (3-D).
void steer_camera(const ImGuiIO& io, const DrawSpec& draw, Camera& cam) {
    float k = std::pow(1.15f, io.MouseWheel);
    bool drag = io.MouseDown[0] || io.MouseDown[1];
    if (draw.view == DrawSpec::View::k3D) {
        if (io.MouseWheel != 0.0f) {
            float extent = std::max(draw.bounds[2] - draw.bounds[0], draw.bounds[3] - draw.bounds[1]);
            cam.distance = (cam.distance > 0.0f ? cam.distance : 2.5f * extent) / k;
        }
        if (drag) {
            cam.yaw -= 0.01f * io.MouseDelta.x;
            cam.pitch = std::clamp(cam.pitch + 0.01f * io.MouseDelta.y, 0.05f, 1.55f);
        }
        return;
    }
    cam.zoom = std::clamp(cam.zoom * k, 0.25f, 8.0f);
    if (drag) { // one pixel of drag moves the view by one pixel's worth of world
        float w = draw.bounds[2] - draw.bounds[0], h = draw.bounds[3] - draw.bounds[1];
        float px = std::min((io.DisplaySize.x - float(kPanelWidth)) / w, io.DisplaySize.y / h) * cam.zoom / 1.04f;
        cam.pan_x -= io.MouseDelta.x / px;
        cam.pan_y -= io.MouseDelta.y / px;
    }
}

int run(const ViewArgs& a) {
    auto sim = make_simulator(a.common);
    validate_draw(sim->spec());
    if (sim->spec().draw.empty())
        throw Error("env '" + a.common.env + "' declares nothing to draw (EnvSpec::draw is empty)");
    Window window("orrery view: " + a.common.env, a.width, a.height, vulkan_device(a.common));
    ViewState state;
    state.policy = a.common.policy;
    state.paused = a.paused;
    state.obs_names = a.obs_names;
    state.action_names = a.action_names;
    state.speed = a.speed;
    std::unique_ptr<ActionReplay> replay;
    if (!a.actions.empty()) replay = std::make_unique<ActionReplay>(a.actions, *sim);
    uint32_t replayed = 0;
    std::string policy_kind = a.common.policy;
    Policy policy(policy_kind, a.common.seed);
    KeyReader keys;
    Camera cam;
    const DrawSpec& draw = sim->spec().draw;
    auto last = std::chrono::steady_clock::now();
    double owed = 0.0; // steps due at the chosen speed
    for (uint32_t frame = 1; !window.should_close(); ++frame) {
        window.begin_frame();
        GLFWwindow* w = window.handle();
        bool typing = ImGui::GetIO().WantCaptureKeyboard;
        bool pressed = false;
        Key key = typing ? Key::kNoop : keys.poll(w, pressed);
        if (!typing && keys.tapped(w, GLFW_KEY_P)) state.paused = !state.paused;
        bool single = !typing && keys.tapped(w, GLFW_KEY_N);
        if (!typing && keys.tapped(w, GLFW_KEY_TAB)) state.agent += 1;
        if (!typing && keys.tapped(w, GLFW_KEY_RIGHT_BRACKET)) state.world += 1;
        if (!typing && keys.tapped(w, GLFW_KEY_LEFT_BRACKET) && state.world > 0) state.world -= 1;
        state.world = std::min(state.world, sim->num_worlds() - 1);

        auto now = std::chrono::steady_clock::now();
        double dt = std::chrono::duration<double>(now - last).count();
        last = now;
        owed = state.paused ? 0.0 : std::min(owed + dt * state.speed, 4.0);
        // Paused, a key press is a turn: one step with that action (play Overcooked step by step).
        int steps = state.paused ? ((single || (pressed && state.control)) ? 1 : 0) : int(owed);
        owed -= state.paused ? 0.0 : double(steps);
        if (pressed) state.pending = key;
        if (state.policy != policy_kind) policy = Policy(policy_kind = state.policy, a.common.seed);
        for (int s = 0; s < steps; ++s) {
            if (replay && replayed == replay->steps()) { // the episode is over: stay on its last state
                state.paused = true;
                break;
            }
            policy.act(*sim);
            int32_t act = action_for(draw, state.pending);
            if (replay)
                replay->act(*sim, 0, replayed++);
            else if (state.control && act >= 0)
                set_action(*sim, draw.action, state.world, state.agent, act);
            sim->step();
            state.steps_taken += 1;
            state.pending = Key::kNoop;
        }
        if (!ImGui::GetIO().WantCaptureMouse) steer_camera(ImGui::GetIO(), draw, cam);

        // Exact instead when paused, when the selected world has no view yet, and when the
        // view is older than the last frame's (a copy requested before a pause).
        Scene scene;
        WorldReport report;
        if (state.paused || !read_report_lagging(*sim, state, &scene, report) || report.sim_step < state.shown_step)
            report = read_report(*sim, state, &scene);
        state.shown_step = report.sim_step;
        accumulate_returns(state, report);
        state.agent = report.num_agents ? std::min(state.agent, report.num_agents - 1) : 0;
        draw_panels(*sim, state, report, cam, window.device_name());

        bool last_frame = a.frames && frame >= a.frames;
        if (last_frame && !a.screenshot.empty()) {
            std::vector<uint8_t> rgba;
            uint32_t sw = 0, sh = 0;
            window.end_frame(scene, cam, kPanelWidth, &rgba, &sw, &sh);
            write_png(a.screenshot, rgba.data(), sw, sh);
            std::printf("orrery-view: wrote %s (%ux%u) after %u frames on %s; %s after step %llu, %llu behind\n",
                        a.screenshot.c_str(), sw, sh, frame, window.device_name().c_str(),
                        report.exact ? "exact view" : "lagging view", (unsigned long long)report.sim_step,
                        (unsigned long long)report.lag);
        } else {
            window.end_frame(scene, cam, kPanelWidth);
        }
        if (last_frame) break;
    }
    if (replay)
        std::printf("orrery-view: world 0 state hash after replaying %u of %u steps: %016llx\n", replayed,
                    replay->steps(), static_cast<unsigned long long>(sim->state_hash(0)));
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    try {
        return run(parse(argc, argv));
    } catch (const std::exception& e) {
        std::fprintf(stderr, "orrery-view: %s\n", e.what());
        return 2;
    }
}
