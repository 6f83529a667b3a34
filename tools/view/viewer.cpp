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
    "                   [--camera orbit|top|eye:ROW|eye:ARCH:ROW] [--fov DEG] [--overlays a,b,...]\n"
    "                   [--inspect ROW|ARCH:ROW]\n"
    "Keys: arrows/WASD move the controlled agent, space interacts (or grabs), Q and E turn where the\n"
    "env turns agents (else E interacts), L is the env's second button (hide-and-seek's lock); where\n"
    "the env's actions have several parts the keys act while held. P pauses, N steps once,\n"
    "Tab picks the next agent, [ and ] the previous/next world; the mouse wheel zooms, dragging\n"
    "pans (2-D, 3-D top-down) or orbits (3-D); a click on a 3-D body inspects it. With --frames N the viewer\n"
    "exits after N frames, writing the last one to --screenshot if given. --obs-names and\n"
    "--action-names label the observation's channels (or entries) and the action values.\n"
    "--actions FILE replays world 0's recorded actions (one line per step, as orrery-record\n"
    "takes them: how `orrery view --play POLICY` shows a trained policy's episode), then pauses\n"
    "and, on exit, prints world 0's state hash. --speed S: steps per second (default 8).\n"
    "3-D views start with the --camera, --fov and --overlays of orrery-record; the panel changes them.\n"
    "--inspect selects a body as a click would (row ROW of the first archetype drawn as bodies, or of\n"
    "ARCH) and prints its inspector lines on exit.\n";

struct ViewArgs {
    CommonArgs common;
    uint32_t width = 1280, height = 800, frames = 0;
    std::string screenshot;
    bool paused = false;
    std::vector<std::string> obs_names, action_names;
    std::string actions; ///< a recorded episode of world 0 to replay
    float speed = 8.0f;
    CameraChoice camera;
    float fov = 135.0f;
    bool overlays_given = false;
    std::vector<std::string> overlays;
    bool inspect_given = false;
    CameraChoice inspect; ///< the body --inspect selects (archetype and row, as an eye camera names them)
};

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
            a.obs_names = split_list(value());
        else if (arg == "--action-names")
            a.action_names = split_list(value());
        else if (arg == "--actions")
            a.actions = value();
        else if (arg == "--camera")
            a.camera = parse_camera(arg, value());
        else if (arg == "--fov") {
            a.fov = float(parse_u32(arg, value()));
            if (a.fov < 1.0f || a.fov > 170.0f) throw Error("option --fov expects degrees in [1, 170]");
        } else if (arg == "--inspect") {
            std::string v = value();
            size_t colon = v.rfind(':');
            a.inspect_given = true;
            a.inspect.archetype = colon == std::string::npos ? "" : v.substr(0, colon);
            a.inspect.row = parse_u32(arg, colon == std::string::npos ? v : v.substr(colon + 1));
        } else if (arg == "--overlays") {
            a.overlays_given = true;
            a.overlays = split_list(value());
        } else if (arg == "--speed") {
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

/// Keys to DrawSpec keys: the one pressed since the last poll (edge-triggered,
/// so one press is one action) and the set held down now (DrawSpec::key_parts).
/// Only the keys the env declares are read; E is a second space unless the
/// env turns agents with it.
class KeyReader {
  public:
    explicit KeyReader(const DrawSpec& d) {
        struct Binding {
            int a, b;
            Key key;
        };
        const bool e_turns = d.holds_key(Key::kTurnRight);
        const Binding all[] = {{GLFW_KEY_UP, GLFW_KEY_W, Key::kUp},
                               {GLFW_KEY_DOWN, GLFW_KEY_S, Key::kDown},
                               {GLFW_KEY_LEFT, GLFW_KEY_A, Key::kLeft},
                               {GLFW_KEY_RIGHT, GLFW_KEY_D, Key::kRight},
                               {GLFW_KEY_SPACE, e_turns ? GLFW_KEY_SPACE : GLFW_KEY_E, Key::kInteract},
                               {GLFW_KEY_Q, GLFW_KEY_Q, Key::kTurnLeft},
                               {GLFW_KEY_E, GLFW_KEY_E, Key::kTurnRight},
                               {GLFW_KEY_L, GLFW_KEY_L, Key::kSecond}};
        for (const Binding& b : all) {
            bool declared = d.holds_key(b.key);
            for (const auto& [k, v] : d.keys) declared = declared || (k == b.key && k != Key::kNoop);
            if (declared) bindings_.push_back({b.a, b.b, b.key});
        }
    }
    /// The declared key pressed since the last call, if any (kNoop otherwise, with `pressed` false).
    Key poll(GLFWwindow* w, bool& pressed) {
        pressed = false;
        held_ = 0;
        Key out = Key::kNoop;
        for (const Binding& b : bindings_) {
            bool down = glfwGetKey(w, b.a) == GLFW_PRESS || glfwGetKey(w, b.b) == GLFW_PRESS;
            bool& was = down_[int(b.key)];
            if (down && !was) out = b.key, pressed = true;
            if (down) held_ |= 1u << uint32_t(b.key);
            was = down;
        }
        return out;
    }
    /// Bit k: Key k is down (as of the last poll).
    uint32_t held() const { return held_; }
    /// True once per press of `key`.
    bool tapped(GLFWwindow* w, int key) {
        bool down = glfwGetKey(w, key) == GLFW_PRESS;
        bool& was = other_[key & 511];
        bool hit = down && !was;
        was = down;
        return hit;
    }

  private:
    struct Binding {
        int a, b;
        Key key;
    };
    std::vector<Binding> bindings_;
    uint32_t held_ = 0;
    bool down_[kKeyCount] = {};
    bool other_[512] = {};
};

/// The action value the env declares for `key`, or -1.
int32_t action_for(const DrawSpec& d, Key key) {
    for (const auto& [k, v] : d.keys)
        if (k == key) return v;
    return -1;
}

/// Mouse over the scene: the wheel zooms; dragging pans (2-D, 3-D top-down),
/// orbits (3-D orbit) or turns the eye's field of view (wheel, entity's eye).
void steer_camera(const ImGuiIO& io, const DrawSpec& draw, Camera& cam) {
    float k = std::pow(1.15f, io.MouseWheel);
    bool drag = io.MouseDown[0] || io.MouseDown[1];
    if (draw.view == DrawSpec::View::k3D) {
        // The distance the camera stands at now (automatic until the wheel first sets one).
        uint32_t w = uint32_t(std::max(1.0f, io.DisplaySize.x - float(kPanelWidth)));
        CameraFrame f = camera_frame(draw.bounds, cam, w, uint32_t(std::max(1.0f, io.DisplaySize.y)));
        std::array<float, 3> target{0.5f * (draw.bounds[0] + draw.bounds[2]) + cam.pan_x,
                                    0.5f * (draw.bounds[1] + draw.bounds[3]) + cam.pan_y, 0.0f};
        float dist = std::sqrt((f.eye[0] - target[0]) * (f.eye[0] - target[0]) +
                               (f.eye[1] - target[1]) * (f.eye[1] - target[1]) + f.eye[2] * f.eye[2]);
        if (cam.mode == Camera::Mode::kEye) {
            cam.eye_fov = std::clamp(cam.eye_fov / k, 0.17f, 2.97f);
            return;
        }
        if (io.MouseWheel != 0.0f) cam.distance = dist / k;
        if (drag && cam.mode == Camera::Mode::kTop) { // the ground under the cursor follows it
            float per_pixel = 2.0f * dist * std::tan(0.5f * cam.fov) / std::max(io.DisplaySize.y, 1.0f);
            cam.pan_x -= io.MouseDelta.x * per_pixel;
            cam.pan_y += io.MouseDelta.y * per_pixel;
        } else if (drag) {
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
    state.scene = default_scene_options(sim->spec().draw);
    if (a.overlays_given) {
        std::vector<std::string> known = overlay_names(sim->spec().draw);
        for (const auto& o : a.overlays)
            if (std::find(known.begin(), known.end(), o) == known.end())
                throw Error("option --overlays: env '" + a.common.env + "' has no overlay '" + o + "'");
        state.scene.overlays = a.overlays;
    }
    std::unique_ptr<ActionReplay> replay;
    if (!a.actions.empty()) replay = std::make_unique<ActionReplay>(a.actions, *sim);
    uint32_t replayed = 0;
    std::string policy_kind = a.common.policy;
    Policy policy(policy_kind, a.common.seed);
    KeyReader keys(sim->spec().draw);
    Camera cam;
    cam.mode = a.camera.mode == "top"   ? Camera::Mode::kTop
               : a.camera.mode == "eye" ? Camera::Mode::kEye
                                        : Camera::Mode::kOrbit;
    cam.eye_fov = a.fov / 57.2957795f;
    if (cam.mode == Camera::Mode::kEye) {
        state.eye_archetype = int32_t(eye_archetype(a.camera, sim->spec()));
        state.eye_row = a.camera.row;
    }
    if (a.inspect_given) {
        state.scene.selected_archetype = int32_t(eye_archetype(a.inspect, sim->spec()));
        state.scene.selected_row = a.inspect.row;
    }
    Scene shown;           // last frame's scene, which the user clicked on
    WorldReport inspected; // last frame's report, for --inspect
    const DrawSpec& draw = sim->spec().draw;
    auto last = std::chrono::steady_clock::now();
    double owed = 0.0; // steps due at the chosen speed
    for (uint32_t frame = 1; !window.should_close(); ++frame) {
        window.begin_frame();
        GLFWwindow* w = window.handle();
        bool typing = ImGui::GetIO().WantCaptureKeyboard;
        bool pressed = false;
        Key key = typing ? Key::kNoop : keys.poll(w, pressed);
        const uint32_t held = typing ? 0u : keys.held();
        if (!typing && keys.tapped(w, GLFW_KEY_P)) state.paused = !state.paused;
        bool single = (!typing && keys.tapped(w, GLFW_KEY_N)) || state.step_once;
        if (state.step_once) state.paused = true; // the step button: pause, then one step
        state.step_once = false;
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
        if (pressed) state.pending = key, state.pending_held |= held;
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
            else if (state.control && !draw.key_parts.empty()) // every step, from the keys held (or tapped)
                set_action_row(*sim, draw.action, state.world, state.agent, draw.key_row(held | state.pending_held));
            else if (state.control && act >= 0)
                set_action(*sim, draw.action, state.world, state.agent, act);
            sim->step();
            state.steps_taken += 1;
            state.pending = Key::kNoop;
            state.pending_held = 0;
        }
        const ImGuiIO& io = ImGui::GetIO();
        if (!io.WantCaptureMouse) steer_camera(io, draw, cam);
        // A click (not a drag) on the 3-D view picks the body under the cursor, with last frame's scene.
        const uint32_t view_w = uint32_t(std::max(1.0f, io.DisplaySize.x - float(kPanelWidth)));
        const uint32_t view_h = uint32_t(std::max(1.0f, io.DisplaySize.y));
        if (draw.view == DrawSpec::View::k3D && !io.WantCaptureMouse && ImGui::IsMouseReleased(0) &&
            io.MouseDragMaxDistanceSqr[0] < 16.0f) {
            int32_t hit = pick_body(shown, cam, view_w, view_h, io.MousePos.x, io.MousePos.y);
            state.scene.selected_archetype = hit >= 0 ? int32_t(shown.bodies[size_t(hit)].archetype) : -1;
            state.scene.selected_row = hit >= 0 ? shown.bodies[size_t(hit)].row : 0;
        }

        // Exact instead when paused, when the selected world has no view yet, and when the
        // view is older than the last frame's (a copy requested before a pause).
        Scene scene;
        WorldReport report;
        if (state.paused || !read_report_lagging(*sim, state, &scene, report) || report.sim_step < state.shown_step)
            report = read_report(*sim, state, &scene);
        state.shown_step = report.sim_step;
        if (cam.mode == Camera::Mode::kEye && state.eye_archetype < 0) // none chosen: the first body not a floor
            for (const BodyRef& b : scene.bodies)
                if (b.solid != Solid::kPlane) {
                    state.eye_archetype = int32_t(b.archetype), state.eye_row = b.row;
                    break;
                }
        if (cam.mode == Camera::Mode::kEye && state.eye_archetype >= 0)
            aim_eye(scene, uint32_t(state.eye_archetype), state.eye_row, cam);
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
            for (const std::string& line : report.status) std::printf("orrery-view: status: %s\n", line.c_str());
        } else {
            window.end_frame(scene, cam, kPanelWidth);
        }
        shown = std::move(scene);
        inspected = std::move(report);
        if (last_frame) break;
    }
    std::printf("orrery-view: %llu frames, %llu of them rendered (the others showed an unchanged frame)\n",
                (unsigned long long)window.frames(), (unsigned long long)window.renders());
    if (a.inspect_given) {
        bool found = false;
        for (const auto& e : inspected.entities) {
            if (int32_t(e.archetype) != state.scene.selected_archetype || e.row != state.scene.selected_row) continue;
            found = true;
            std::printf("orrery-view: inspector: %s\n", e.name.c_str());
            for (const auto& l : e.lines) std::printf("  %s\n", l.c_str());
        }
        if (!found) std::printf("orrery-view: inspector: nothing selected\n");
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
