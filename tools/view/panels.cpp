// ImGui panels of orrery-view. Observation channels are drawn as rectangles
// on ImGui's draw list, which needs no texture upload.

#include "tools/view/panels.hpp"

#include <algorithm>
#include <cstring>

#include <imgui.h>

namespace orrery::render {
namespace {

/// Element `i` of a row of `dtype` as text.
std::string element_text(const uint8_t* p, DType t, size_t i) {
    char buf[32];
    switch (t) {
    case DType::kU8: std::snprintf(buf, sizeof(buf), "%u", unsigned(p[i])); break;
    case DType::kI8: std::snprintf(buf, sizeof(buf), "%d", int(int8_t(p[i]))); break;
    case DType::kU16: {
        uint16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        std::snprintf(buf, sizeof(buf), "%u", unsigned(v));
        break;
    }
    case DType::kI16: {
        int16_t v;
        std::memcpy(&v, p + 2 * i, 2);
        std::snprintf(buf, sizeof(buf), "%d", int(v));
        break;
    }
    case DType::kI32: {
        int32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        std::snprintf(buf, sizeof(buf), "%d", v);
        break;
    }
    case DType::kU32: {
        uint32_t v;
        std::memcpy(&v, p + 4 * i, 4);
        std::snprintf(buf, sizeof(buf), "%u", v);
        break;
    }
    case DType::kF32: {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        std::snprintf(buf, sizeof(buf), "%.4g", double(v));
        break;
    }
    case DType::kI64: {
        int64_t v;
        std::memcpy(&v, p + 8 * i, 8);
        std::snprintf(buf, sizeof(buf), "%lld", (long long)v);
        break;
    }
    }
    return buf;
}

DType dtype_of(ScalarType t) {
    switch (t) {
    case ScalarType::kU8: return DType::kU8;
    case ScalarType::kI8: return DType::kI8;
    case ScalarType::kU16: return DType::kU16;
    case ScalarType::kI16: return DType::kI16;
    case ScalarType::kI32: return DType::kI32;
    case ScalarType::kU32: return DType::kU32;
    default: return DType::kF32;
    }
}

/// "Name: name=v0 name=v1 ..." for a component whose elements the draw table
/// names (DrawSpec::element_names), each read as its declared scalar type.
std::string named_row_text(const ComponentSpec& c, const uint8_t* p, const ElementNames& e) {
    std::string s = c.name + ":";
    size_t at = 0;
    for (size_t i = 0; i < e.names.size(); ++i) {
        DType t = i < e.types.size() ? dtype_of(e.types[i]) : c.dtype;
        if (at + dtype_size(t) > c.row_bytes) break;
        s.append(" ").append(e.names[i]).append("=").append(element_text(p + at, t, 0));
        at += dtype_size(t);
    }
    return s;
}

/// "Name: v0 v1 ..." for one component row, at most 12 elements shown; with
/// element names, "Name: px=0.1 py=0.2 ...".
std::string row_text(const ComponentSpec& c, const uint8_t* p, const ElementNames* names = nullptr) {
    if (names) return named_row_text(c, p, *names);
    size_t n = c.row_bytes / dtype_size(c.dtype);
    std::string s = c.name + ":";
    for (size_t i = 0; i < std::min<size_t>(n, 12); ++i) {
        s.push_back(' ');
        s.append(element_text(p, c.dtype, i));
    }
    if (n > 12) s.append(" ... (").append(std::to_string(n)).append(" values)");
    return s;
}

const ExportSpec* find_export(const EnvSpec& spec, const std::string& name) {
    for (const ExportSpec& e : spec.exports())
        if (e.name == name) return &e;
    return nullptr;
}

const uint8_t* row_ptr(const Ctx& ctx, uint32_t arch, uint32_t comp, uint32_t row) {
    const Storage& s = ctx.storage();
    const ArchetypeTable& t = s.tables[arch];
    if (!t.columns[comp] || row >= t.capacity) return nullptr;
    return t.columns[comp] + size_t(ctx.slot(t, row)) * s.row_bytes[comp];
}

const ElementNames* names_of(const DrawSpec& d, uint32_t component) {
    for (const ElementNames& e : d.element_names)
        if (e.component == component) return &e;
    return nullptr;
}

void report_entities(const EnvSpec& spec, const Ctx& ctx, WorldReport& r) {
    const auto& comps = spec.component_specs();
    for (uint32_t a = 0; a < spec.archetype_specs().size(); ++a) {
        const ArchetypeSpec& as = spec.archetype_specs()[a];
        const ArchetypeTable& t = ctx.storage().tables[a];
        for (uint32_t row = 0; row < std::min(t.high_water[ctx.world()], t.capacity); ++row) {
            if (!t.alive[ctx.slot(t, row)]) continue;
            WorldReport::EntityLines e{as.name, a, row, {}};
            e.name.append(" ").append(std::to_string(row));
            for (uint32_t c : as.components)
                if (const uint8_t* p = row_ptr(ctx, a, c, row))
                    e.lines.push_back(row_text(comps[c], p, names_of(spec.draw, c)));
            r.entities.push_back(std::move(e));
        }
    }
}

void report_agent(const EnvSpec& spec, const Ctx& ctx, uint32_t agent, WorldReport& r) {
    const DrawSpec& d = spec.draw;
    const ExportSpec* act = find_export(spec, d.action);
    const ExportSpec* obs = find_export(spec, d.obs);
    const ExportSpec* rew = find_export(spec, d.reward);
    const ExportSpec* agents = act ? act : obs ? obs : rew;
    if (!agents) return;
    r.num_agents = ctx.storage().tables[agents->archetype].capacity;
    if (rew) {
        const ComponentSpec& c = spec.component_specs()[rew->component];
        for (uint32_t i = 0; i < r.num_agents; ++i) {
            const uint8_t* p = row_ptr(ctx, rew->archetype, rew->component, i);
            float v = 0.0f;
            if (p && c.dtype == DType::kF32) std::memcpy(&v, p, 4);
            r.rewards.push_back(v);
        }
    }
    if (obs && agent < r.num_agents) {
        const ComponentSpec& c = spec.component_specs()[obs->component];
        const uint8_t* p = row_ptr(ctx, obs->archetype, obs->component, agent);
        r.obs_dims = c.dims;
        r.obs_dtype = c.dtype;
        if (p) r.obs.assign(p, p + c.row_bytes);
    }
}

/// Entry `i`'s name, or its index where none was given.
std::string entry_label(const std::vector<std::string>& names, size_t i) {
    return i < names.size() && !names[i].empty() ? names[i] : std::to_string(i);
}

/// "keys: up=north ..." for the keys the env declares, with the action names.
void keys_line(const DrawSpec& d, const std::vector<std::string>& names) {
    static const char* kKeyNames[] = {"", "up", "down", "left", "right", "space", "Q", "E", "L"};
    std::string line = "keys:";
    for (const KeyPart& k : d.key_parts) // held: the row's part `part` takes `value`
        line.append(" ")
            .append(kKeyNames[int(k.key)])
            .append(":")
            .append(entry_label(d.key_part_names, k.part))
            .append("=")
            .append(std::to_string(k.value));
    for (const auto& [key, value] : d.keys)
        if (key != Key::kNoop) // no key is pressed for it: the action agents take when none is
            line.append(" ").append(kKeyNames[int(key)]).append("=").append(entry_label(names, size_t(value)));
    ImGui::TextWrapped("%s", line.c_str());
}

/// 3-D camera: orbit (drag to turn, wheel to zoom), top-down (drag to pan), or
/// the eyes of a body (the selected one when chosen), with its field of view.
void camera_controls(const EnvSpec& spec, ViewState& s, Camera& cam) {
    int mode = int(cam.mode);
    ImGui::RadioButton("orbit", &mode, int(Camera::Mode::kOrbit));
    ImGui::SameLine();
    ImGui::RadioButton("top", &mode, int(Camera::Mode::kTop));
    ImGui::SameLine();
    ImGui::RadioButton("entity's eye", &mode, int(Camera::Mode::kEye));
    cam.mode = Camera::Mode(mode);
    if (cam.mode == Camera::Mode::kOrbit) {
        ImGui::SliderFloat("yaw", &cam.yaw, -3.14159f, 3.14159f);
        ImGui::SliderFloat("pitch", &cam.pitch, 0.05f, 1.55f);
    }
    if (cam.mode != Camera::Mode::kEye) {
        ImGui::SliderFloat("distance", &cam.distance, 0.0f, 200.0f, "%.1f (0: auto)");
        return;
    }
    if (s.scene.selected_archetype >= 0 && ImGui::Button("look through the selected body")) {
        s.eye_archetype = s.scene.selected_archetype;
        s.eye_row = s.scene.selected_row;
    }
    int row = int(s.eye_row);
    if (s.eye_archetype >= 0) {
        const ArchetypeSpec& a = spec.archetype_specs()[size_t(s.eye_archetype)];
        if (ImGui::SliderInt(("eye: " + a.name).c_str(), &row, 0, int(a.capacity) - 1)) s.eye_row = uint32_t(row);
    }
    float deg = cam.eye_fov * 57.29578f;
    if (ImGui::SliderFloat("field of view", &deg, 10.0f, 170.0f, "%.0f deg")) cam.eye_fov = deg / 57.29578f;
}

/// Checkboxes for the overlays the draw table offers.
void overlay_controls(const DrawSpec& d, ViewState& s) {
    for (const std::string& name : overlay_names(d)) {
        bool on = s.scene.has(name);
        if (!ImGui::Checkbox(name.c_str(), &on)) continue;
        auto& v = s.scene.overlays;
        v.erase(std::remove(v.begin(), v.end(), name), v.end());
        if (on) v.push_back(name);
    }
}

/// The picked body's components, with element names where the env gives them.
void inspector(const ViewState& s, const WorldReport& r) {
    if (s.scene.selected_archetype < 0) {
        ImGui::TextDisabled("click a body in the view to inspect it");
        return;
    }
    for (const auto& e : r.entities) {
        if (int32_t(e.archetype) != s.scene.selected_archetype || e.row != s.scene.selected_row) continue;
        ImGui::Text("%s", e.name.c_str());
        for (const auto& l : e.lines) ImGui::TextWrapped("%s", l.c_str());
        return;
    }
    ImGui::TextDisabled("the selected entity is gone");
}

void controls_panel(Simulator& sim, ViewState& s, const WorldReport& r, Camera& cam, const std::string& device) {
    ImGui::Text("%s on %s, %u worlds", sim.spec().name().c_str(), sim.backend().describe().c_str(), sim.num_worlds());
    ImGui::TextDisabled("Vulkan: %s", device.c_str());
    int world = int(s.world);
    if (ImGui::SliderInt("world", &world, 0, int(sim.num_worlds()) - 1)) s.world = uint32_t(world);
    int agent = int(s.agent);
    if (r.num_agents && ImGui::SliderInt("agent", &agent, 0, int(r.num_agents) - 1)) s.agent = uint32_t(agent);
    if (ImGui::Button(s.paused ? "Resume (P)" : "Pause (P)")) s.paused = !s.paused;
    ImGui::SameLine();
    if (ImGui::Button("Step (N)")) s.step_once = true;
    ImGui::SameLine();
    ImGui::Checkbox("keys drive agent", &s.control);
    if (!s.action_names.empty() || !sim.spec().draw.key_parts.empty()) keys_line(sim.spec().draw, s.action_names);
    ImGui::SliderFloat("steps/s", &s.speed, 0.5f, 240.0f, "%.1f", ImGuiSliderFlags_Logarithmic);
    bool random = s.policy == "random";
    if (ImGui::Checkbox("other agents random (else noop)", &random)) s.policy = random ? "random" : "noop";
    ImGui::Text("episode %u, step %u%s%s%s", r.episode, r.step, r.terminated ? ", terminated" : "",
                r.truncated ? ", truncated" : "", r.error ? ", error!" : "");
    if (r.error) ImGui::TextColored(ImVec4(1, 0.3f, 0.3f, 1), "error code %u in this world", r.error);
    for (const std::string& line : r.status) ImGui::TextColored(ImVec4(1, 0.85f, 0.3f, 1), "%s", line.c_str());
    if (r.exact)
        ImGui::TextDisabled("view: after step %llu, exact (read_world)", (unsigned long long)r.sim_step);
    else
        ImGui::Text("view: after step %llu, %llu step%s behind", (unsigned long long)r.sim_step,
                    (unsigned long long)r.lag, r.lag == 1 ? "" : "s");
    if (sim.spec().draw.view == DrawSpec::View::k3D) {
        camera_controls(sim.spec(), s, cam);
    } else {
        ImGui::SliderFloat("zoom", &cam.zoom, 0.25f, 8.0f, "%.2f", ImGuiSliderFlags_Logarithmic);
    }
}

void rewards_panel(ViewState& s, const WorldReport& r) {
    for (uint32_t i = 0; i < r.rewards.size(); ++i)
        ImGui::Text("%sagent %u: reward %+.3f, episode return %+.3f", i == s.agent ? "> " : "  ", i,
                    double(r.rewards[i]), double(i < s.returns.size() ? s.returns[i] : 0.0f));
    if (s.unseen_steps)
        ImGui::TextDisabled("returns leave out %llu step%s no view showed", (unsigned long long)s.unseen_steps,
                            s.unseen_steps == 1 ? "" : "s");
}

/// Each channel of a [C, H, W] u8 observation as a small grey image under its name.
void obs_channels(const WorldReport& r, const std::vector<std::string>& names) {
    uint32_t C = r.obs_dims[0], H = r.obs_dims[1], W = r.obs_dims[2];
    float px = std::max(2.0f, std::min(10.0f, 90.0f / float(std::max(W, H))));
    ImDrawList* dl = ImGui::GetWindowDrawList();
    float avail = ImGui::GetContentRegionAvail().x;
    float used = 0.0f;
    for (uint32_t c = 0; c < C; ++c) {
        const uint8_t* ch = r.obs.data() + size_t(c) * H * W;
        uint8_t peak = *std::max_element(ch, ch + size_t(H) * W);
        std::string label = entry_label(names, c) + (peak ? "*" : "");
        float w = std::max(float(W) * px + 4.0f, ImGui::CalcTextSize(label.c_str()).x);
        if (c > 0 && used + w <= avail)
            ImGui::SameLine();
        else
            used = 0.0f;
        used += w + ImGui::GetStyle().ItemSpacing.x;
        ImGui::BeginGroup();
        ImGui::TextUnformatted(label.c_str());
        ImVec2 o = ImGui::GetCursorScreenPos();
        for (uint32_t y = 0; y < H; ++y) {
            for (uint32_t x = 0; x < W; ++x) {
                uint32_t v = peak ? uint32_t(ch[y * W + x]) * 255u / peak : 0u;
                ImVec2 a(o.x + float(x) * px, o.y + float(y) * px);
                dl->AddRectFilled(a, ImVec2(a.x + px, a.y + px), IM_COL32(v, v, v / 2 + 40, 255));
            }
        }
        ImGui::Dummy(ImVec2(float(W) * px, float(H) * px));
        ImGui::EndGroup();
    }
}

void obs_panel(const WorldReport& r, const std::vector<std::string>& names) {
    if (r.obs.empty()) {
        ImGui::TextDisabled("no observation tensor '%s'", "obs");
        return;
    }
    if (r.obs_dims.size() == 3 && r.obs_dtype == DType::kU8) {
        obs_channels(r, names);
        return;
    }
    size_t n = r.obs.size() / dtype_size(r.obs_dtype);
    if (!names.empty()) { // one "name value" per line, in two columns
        for (size_t i = 0; i < std::min<size_t>(n, 256); ++i) {
            if (i % 2) ImGui::SameLine(float(kPanelWidth) / 2);
            ImGui::Text("%s %s", entry_label(names, i).c_str(), element_text(r.obs.data(), r.obs_dtype, i).c_str());
        }
        return;
    }
    std::string line;
    for (size_t i = 0; i < std::min<size_t>(n, 256); ++i) {
        line.append(element_text(r.obs.data(), r.obs_dtype, i)).push_back(' ');
        if (i % 8 == 7) ImGui::TextUnformatted(line.c_str()), line.clear();
    }
    if (!line.empty()) ImGui::TextUnformatted(line.c_str());
}

WorldReport report_of(const Simulator& sim, const ViewState& state, const Ctx& ctx, Scene* scene) {
    WorldReport r;
    const Storage& s = ctx.storage();
    r.episode = ctx.episode();
    r.step = ctx.step();
    r.error = s.errors[ctx.world()];
    r.terminated = s.terminated[ctx.world()] != 0;
    r.truncated = s.truncated[ctx.world()] != 0;
    report_entities(sim.spec(), ctx, r);
    report_agent(sim.spec(), ctx, state.agent, r);
    if (scene) {
        *scene = build_scene(sim.spec().draw, ctx, state.scene);
        r.status = scene->status;
    } else {
        r.status = status_of(sim.spec().draw, ctx).lines;
    }
    return r;
}

} // namespace

WorldReport read_report(Simulator& sim, const ViewState& state, Scene* scene) {
    WorldReport r;
    sim.read_world(state.world, [&](Ctx& ctx) { r = report_of(sim, state, ctx, scene); });
    r.sim_step = sim.steps_taken();
    return r;
}

bool read_report_lagging(Simulator& sim, const ViewState& state, Scene* scene, WorldReport& out) {
    // Request first: where the copy is immediate (the CPU) this frame shows the current state.
    sim.request_world_view(state.world);
    bool shown = false, fresh = false;
    sim.poll_world_view([&](Ctx& ctx, const LaggedView& v) {
        if (v.world != state.world) return; // a view of the previously selected world
        out = report_of(sim, state, ctx, scene);
        out.sim_step = v.step;
        out.lag = v.lag;
        out.exact = false;
        shown = true;
        fresh = v.fresh;
    });
    // Where copies take time (the GPU), keep one in flight: it can land by the next frame.
    if (fresh && sim.backend().device() != DeviceKind::kCpu) sim.request_world_view(state.world);
    return shown;
}

void accumulate_returns(ViewState& state, const WorldReport& report) {
    if (report.episode != state.episode || state.returns_world != state.world) {
        state.episode = report.episode;
        state.returns_world = state.world;
        state.returns.assign(report.num_agents, 0.0f);
        state.returns_step = report.sim_step;
        state.unseen_steps = 0;
        return;
    }
    if (report.sim_step <= state.returns_step) return; // this step's rewards are counted already
    state.unseen_steps += report.sim_step - state.returns_step - 1;
    state.returns_step = report.sim_step;
    state.returns.resize(report.rewards.size(), 0.0f);
    for (size_t i = 0; i < report.rewards.size(); ++i) state.returns[i] += report.rewards[i];
}

void draw_panels(Simulator& sim, ViewState& state, const WorldReport& report, Camera& cam,
                 const std::string& device_name) {
    const ImGuiIO& io = ImGui::GetIO();
    ImGui::SetNextWindowPos(ImVec2(io.DisplaySize.x - float(kPanelWidth), 0.0f));
    ImGui::SetNextWindowSize(ImVec2(float(kPanelWidth), io.DisplaySize.y));
    ImGui::Begin("Orrery", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize | ImGuiWindowFlags_NoCollapse);
    if (ImGui::CollapsingHeader("Simulation", ImGuiTreeNodeFlags_DefaultOpen))
        controls_panel(sim, state, report, cam, device_name);
    const DrawSpec& d = sim.spec().draw;
    if (d.view == DrawSpec::View::k3D && !overlay_names(d).empty() &&
        ImGui::CollapsingHeader("Overlays", ImGuiTreeNodeFlags_DefaultOpen))
        overlay_controls(d, state);
    if (d.view == DrawSpec::View::k3D && ImGui::CollapsingHeader("Inspector", ImGuiTreeNodeFlags_DefaultOpen))
        inspector(state, report);
    if (ImGui::CollapsingHeader("Rewards", ImGuiTreeNodeFlags_DefaultOpen)) rewards_panel(state, report);
    if (ImGui::CollapsingHeader("Observation of the selected agent", ImGuiTreeNodeFlags_DefaultOpen))
        obs_panel(report, state.obs_names);
    if (ImGui::CollapsingHeader("World state")) {
        for (const auto& e : report.entities) {
            if (!ImGui::TreeNode(e.name.c_str())) continue;
            for (const auto& l : e.lines) ImGui::TextUnformatted(l.c_str());
            ImGui::TreePop();
        }
    }
    ImGui::End();
}

} // namespace orrery::render
