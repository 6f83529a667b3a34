// Offscreen rendering on whatever Vulkan driver is present (lavapipe in CI):
// known states are drawn and pixels checked where the state puts each mark.
// Skips only when no Vulkan driver (ICD) is installed at all.

#include <gtest/gtest.h>

#ifndef ORRERY_RENDER_DISABLED
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "envs/tutorial/tag.hpp"
#ifdef ORRERY_HAVE_FRONT_END
#include "tools/view/cli.hpp"
#endif
#include "render/render.hpp"
#include "render_support.hpp"

namespace {

using orrery::render::FrameRenderer;

#define REQUIRE_VULKAN()                                                                                               \
    do {                                                                                                               \
        if (!vulkan_icd_present()) GTEST_SKIP() << "no Vulkan driver (ICD) installed";                                 \
    } while (0)

/// One pursuer and one evader, no pellets, placed where the test says.
std::unique_ptr<orrery::Simulator> tag_world(uint32_t worlds = 1) {
    orrery::register_builtin_envs();
    orrery::EnvOptions opts{{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "0"}};
    orrery::SimOptions so;
    so.num_worlds = worlds;
    so.threads = 1;
    auto sim = std::make_unique<orrery::Simulator>(orrery::make_env_spec("tag", opts), so);
    sim->reset(7);
    return sim;
}

void place(orrery::Simulator& sim, uint32_t world, float px, float py, float ex, float ey) {
    sim.edit_world(world, [&](orrery::Ctx& ctx) {
        ctx.at<tag::Agent, tag::Position>(0) = {px, py};
        ctx.at<tag::Agent, tag::Position>(1) = {ex, ey};
    });
}

struct Rgb {
    int r, g, b;
};

Rgb pixel(const std::vector<uint8_t>& img, uint32_t w, uint32_t x, uint32_t y) {
    const uint8_t* p = &img[(size_t(y) * w + x) * 4];
    return {p[0], p[1], p[2]};
}

/// The pixel of world point (x, y) for a square frame of `n` pixels over the unit square.
std::pair<uint32_t, uint32_t> to_pixel(float x, float y, uint32_t n) {
    float px = float(n) / 1.04f; // frame_bounds keeps a 4% margin
    return {uint32_t(std::lround((x - 0.5f) * px + 0.5f * float(n))),
            uint32_t(std::lround((y - 0.5f) * px + 0.5f * float(n)))};
}

void expect_color(Rgb got, Rgb want, const char* what) {
    EXPECT_NEAR(got.r, want.r, 2) << what;
    EXPECT_NEAR(got.g, want.g, 2) << what;
    EXPECT_NEAR(got.b, want.b, 2) << what;
}

const Rgb kPursuer{220, 60, 50}, kEvader{60, 110, 230}, kBackground{24, 24, 30};

TEST(RenderScene, AgentsComeFromTheStateWithRoleStyles) {
    auto sim = tag_world();
    place(*sim, 0, 0.25f, 0.3f, 0.7f, 0.8f);
    orrery::render::Scene s = orrery::render::scene_of(*sim, 0);
    // The first two instances are the agents' discs, in row order; labels follow each.
    int found = 0;
    for (const auto& q : s.shapes) {
        if (q.prim != uint32_t(orrery::render::Prim::kCircle)) continue;
        if (found == 0) {
            EXPECT_FLOAT_EQ(q.cx, 0.25f);
            EXPECT_FLOAT_EQ(q.cy, 0.3f);
            EXPECT_EQ(q.color, orrery::render::pack({220, 60, 50, 255}));
        } else {
            EXPECT_FLOAT_EQ(q.cx, 0.7f);
            EXPECT_FLOAT_EQ(q.cy, 0.8f);
            EXPECT_EQ(q.color, orrery::render::pack({60, 110, 230, 255}));
        }
        EXPECT_FLOAT_EQ(q.hx, 0.05f); // 2 * radius across
        ++found;
    }
    EXPECT_EQ(found, 2);
}

TEST(RenderScene, BadDrawTableIsRejectedByName) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {});
    spec.draw.entities.push_back(spec.draw.entities.back());
    spec.draw.entities.back().archetype = 1; // Pellet has no Role
    try {
        orrery::render::validate_draw(spec);
        FAIL() << "expected orrery::Error";
    } catch (const orrery::Error& e) {
        EXPECT_NE(std::string(e.what()).find("Role"), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("Pellet"), std::string::npos) << e.what();
    }
}

TEST(RenderScene, KeyPartsOutsideTheActionRowAreRejectedByName) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("hide_and_seek", {});
    orrery::render::validate_draw(spec); // its own keys pass
    spec.draw.key_parts.push_back({orrery::Key::kUp, 5, 1});
    try {
        orrery::render::validate_draw(spec);
        FAIL() << "expected orrery::Error";
    } catch (const orrery::Error& e) {
        EXPECT_NE(std::string(e.what()).find("key_parts[8].part is 5; expected < 5"), std::string::npos) << e.what();
    }
    spec.draw.key_parts.back() = {orrery::Key::kNoop, 0, 1};
    EXPECT_THROW(orrery::render::validate_draw(spec), orrery::Error);
}

#ifdef ORRERY_HAVE_FRONT_END
TEST(RenderScene, AViewersKeyRowIsWrittenToOneAgentAndCheckedFirst) {
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.num_worlds = 2;
    o.device = "cpu";
    o.threads = 1;
    orrery::Simulator sim(orrery::make_env_spec("hide_and_seek", {}), o);
    sim.reset(3);
    const orrery::DrawSpec& d = sim.spec().draw;
    const orrery::TensorView& t = sim.tensor("action");
    auto values = [&] {
        std::vector<int32_t> v(t.bytes() / sizeof(int32_t));
        sim.backend().copy_to_host(v.data(), t.data, t.bytes());
        return v;
    };
    const std::vector<int32_t> before = values();
    const uint32_t held = (1u << uint32_t(orrery::Key::kUp)) | (1u << uint32_t(orrery::Key::kInteract));
    orrery::render::set_action_row(sim, "action", 1, 2, d.key_row(held));
    std::vector<int32_t> after = values(), want = before;
    const std::vector<int32_t> row = {5, 10, 5, 1, 0};
    const size_t at = (1 * size_t(t.shape[1]) + 2) * 5;
    std::copy(row.begin(), row.end(), want.begin() + long(at));
    EXPECT_EQ(after, want); // world 1's agent 2 only
    EXPECT_THROW(orrery::render::set_action_row(sim, "action", 0, 0, {5, 5, 5}), orrery::Error);
    try {
        orrery::render::set_action_row(sim, "action", 0, 0, {5, 5, 11, 0, 0});
        FAIL() << "expected orrery::Error";
    } catch (const orrery::Error& e) {
        EXPECT_NE(std::string(e.what()).find("value 11 is outside 'action''s [0, 10]"), std::string::npos) << e.what();
    }
    EXPECT_EQ(values(), after); // nothing written by the refused rows
}
#endif

TEST(RenderOffscreen, AgentsAppearWhereTheStatePutsThem) {
    REQUIRE_VULKAN();
    auto sim = tag_world(2);
    place(*sim, 0, 0.25f, 0.3f, 0.7f, 0.8f);
    place(*sim, 1, 0.8f, 0.2f, 0.2f, 0.5f);
    const uint32_t n = 256;
    FrameRenderer fr({n, n, {}});
    std::vector<uint8_t> img = fr.render(*sim, 0);
    ASSERT_EQ(img.size(), size_t(n) * n * 4);
    // Sample 0.6 of the radius above the centre, clear of the centred label.
    float up = 0.6f * 0.05f;
    auto [px, py] = to_pixel(0.25f, 0.3f - up, n);
    auto [ex, ey] = to_pixel(0.7f, 0.8f - up, n);
    expect_color(pixel(img, n, px, py), kPursuer, "pursuer at (0.25, 0.3)");
    expect_color(pixel(img, n, ex, ey), kEvader, "evader at (0.7, 0.8)");
    auto [bx, by] = to_pixel(0.5f, 0.5f, n);
    expect_color(pixel(img, n, bx, by), kBackground, "empty middle");

    // World 1 has them elsewhere: the same pixels are now background.
    std::vector<uint8_t> other = fr.render(*sim, 1);
    expect_color(pixel(other, n, px, py), kBackground, "world 1 at the old pursuer spot");
    auto [qx, qy] = to_pixel(0.8f, 0.2f - up, n);
    expect_color(pixel(other, n, qx, qy), kPursuer, "world 1 pursuer at (0.8, 0.2)");
}

TEST(RenderOffscreen, FollowsTheSimulationStepByStep) {
    REQUIRE_VULKAN();
    auto sim = tag_world();
    place(*sim, 0, 0.5f, 0.5f, 0.9f, 0.9f);
    const uint32_t n = 128;
    std::vector<uint8_t> before = orrery::render::render_world_rgba(*sim, 0, n, n);
    sim->step();
    float x = 0.0f, y = 0.0f;
    sim->read_world(0, [&](orrery::Ctx& ctx) {
        x = ctx.at<tag::Agent, tag::Position>(0).x;
        y = ctx.at<tag::Agent, tag::Position>(0).y;
    });
    std::vector<uint8_t> after = orrery::render::render_world_rgba(*sim, 0, n, n);
    auto [px, py] = to_pixel(x, y - 0.03f, n);
    expect_color(pixel(after, n, px, py), kPursuer, "pursuer after one step");
    EXPECT_EQ(before.size(), after.size());
}

TEST(RenderOffscreen, ThreeDimensionalViewDrawsShadedMeshes) {
    REQUIRE_VULKAN();
    auto sim = tag_world();
    place(*sim, 0, 0.5f, 0.5f, 0.05f, 0.05f);
    orrery::render::Scene s = orrery::render::scene_of(*sim, 0);
    s.view = orrery::DrawSpec::View::k3D;
    s.shapes.clear();
    s.meshes[size_t(orrery::render::Mesh::kSphere)] = {
        {0.5f, 0.5f, 0.1f, 0.0f, 0.2f, 0.2f, 0.2f, orrery::render::pack({220, 60, 50, 255})}};
    s.meshes[size_t(orrery::render::Mesh::kCube)] = {
        {0.5f, 0.5f, -0.01f, 0.0f, 1.0f, 1.0f, 0.02f, orrery::render::pack({200, 200, 200, 255})}};
    const uint32_t n = 200;
    FrameRenderer fr({n, n, {}});
    orrery::render::Camera cam;
    std::vector<uint8_t> img = fr.render(s, cam);
    // Project the sphere's centre with the same camera and look there.
    auto m = orrery::render::orbit_view_proj(s.bounds, cam, n, n);
    float X = 0.5f, Y = 0.5f, Z = 0.1f;
    float cx = m[0] * X + m[4] * Y + m[8] * Z + m[12], cy = m[1] * X + m[5] * Y + m[9] * Z + m[13];
    float cw = m[3] * X + m[7] * Y + m[11] * Z + m[15];
    ASSERT_GT(cw, 0.0f);
    uint32_t sx = uint32_t((cx / cw * 0.5f + 0.5f) * n), sy = uint32_t((cy / cw * 0.5f + 0.5f) * n);
    Rgb c = pixel(img, n, sx, sy);
    EXPECT_GT(c.r, 2 * c.g) << "a red sphere, shaded, at its projected centre";
    EXPECT_GT(c.r, 60);
    // The floor is grey and the corners are background.
    expect_color(pixel(img, n, 0, 0), kBackground, "corner");
}

TEST(RenderOffscreen, AFrameIsRenderedOnlyWhenItsSceneOrCameraChanged) {
    // A watcher asks for frames faster than the world changes: a frame equal to
    // the last rendered one (same scene, same camera) repeats its pixels without
    // a render; a changed world state or camera is rendered.
    REQUIRE_VULKAN();
    auto sim = tag_world();
    place(*sim, 0, 0.25f, 0.3f, 0.7f, 0.8f);
    const uint32_t n = 128;
    FrameRenderer fr({n, n, {}});
    orrery::render::Scene first = orrery::render::scene_of(*sim, 0);
    std::vector<uint8_t> a = fr.render(first);
    EXPECT_EQ(fr.renders(), 1u);
    std::vector<uint8_t> again = fr.render(orrery::render::scene_of(*sim, 0)); // built anew, equal
    EXPECT_EQ(fr.frames(), 2u);
    EXPECT_EQ(fr.renders(), 1u) << "an unchanged scene and camera must not be rendered again";
    EXPECT_EQ(again, a);

    // The world changes (the pursuer moves): rendered, and the pursuer is in its new place.
    place(*sim, 0, 0.6f, 0.3f, 0.7f, 0.8f);
    std::vector<uint8_t> moved = fr.render(*sim, 0);
    EXPECT_EQ(fr.renders(), 2u);
    float up = 0.6f * 0.05f;
    auto [ox, oy] = to_pixel(0.25f, 0.3f - up, n);
    auto [nx, ny] = to_pixel(0.6f, 0.3f - up, n);
    expect_color(pixel(moved, n, ox, oy), kBackground, "the pursuer's old place");
    expect_color(pixel(moved, n, nx, ny), kPursuer, "the pursuer's new place");
    // A step changes the world too (both agents accelerate to the right).
    auto* act = static_cast<int32_t*>(sim->tensor("action").data);
    act[0] = act[1] = tag::kRight;
    sim->step();
    fr.render(*sim, 0);
    EXPECT_EQ(fr.renders(), 3u) << "a stepped world must be rendered";

    // The camera changes (zoomed in): rendered, and the view differs; the same camera again is not.
    orrery::render::Scene now = orrery::render::scene_of(*sim, 0);
    orrery::render::Camera zoomed;
    zoomed.zoom = 2.0f;
    std::vector<uint8_t> plain = fr.render(now);
    EXPECT_EQ(fr.renders(), 3u) << "same scene and camera as the stepped frame";
    std::vector<uint8_t> closer = fr.render(now, zoomed);
    EXPECT_EQ(fr.renders(), 4u);
    EXPECT_NE(closer, plain);
    EXPECT_EQ(fr.render(now, zoomed), closer);
    EXPECT_EQ(fr.renders(), 4u);
    // Back to the default camera: rendered again (only the last frame is kept), the same pixels as before.
    EXPECT_EQ(fr.render(now), plain);
    EXPECT_EQ(fr.renders(), 5u);
    // An overlay-like change the state does not make (one more line) is a change too.
    now.lines.push_back({{0.1f, 0.1f, 0.0f}, orrery::render::pack({255, 255, 0, 255})});
    now.lines.push_back({{0.9f, 0.9f, 0.0f}, orrery::render::pack({255, 255, 0, 255})});
    fr.render(now);
    EXPECT_EQ(fr.renders(), 6u);
    EXPECT_EQ(fr.frames(), 9u);
}

TEST(RenderOffscreen, RejectsBadWorldAndSize) {
    REQUIRE_VULKAN();
    auto sim = tag_world();
    FrameRenderer fr({32, 32, {}});
    EXPECT_THROW(fr.render(*sim, 5), orrery::Error);
    EXPECT_THROW(FrameRenderer({0, 32, {}}), orrery::Error);
}

/// Whether a renderer's device_name() ("NAME, TYPE") is a software rasteriser's.
bool is_cpu_device(const std::string& name) {
    return name.size() > 5 && name.compare(name.size() - 5, 5, ", cpu") == 0;
}

TEST(RenderOffscreen, CpuAndGpuNameAKindOfDevice) {
    REQUIRE_VULKAN();
    auto sim = tag_world();
    FrameRenderer any({32, 32, {}});
    const std::string& name = any.device_name();
    // The default prefers a hardware GPU, so a cpu default means no GPU has Vulkan here (CI's lavapipe).
    if (is_cpu_device(name)) {
        FrameRenderer cpu({32, 32, "cpu"});
        EXPECT_EQ(cpu.device_name(), name);
        EXPECT_EQ(cpu.render(*sim, 0), any.render(*sim, 0));
        try {
            FrameRenderer gpu({32, 32, "gpu"});
            ADD_FAILURE() << "device 'gpu' was given " << gpu.device_name() << " on a machine with only " << name;
        } catch (const orrery::Error& e) {
            EXPECT_NE(std::string(e.what()).find("matching device='gpu'"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find(name.substr(0, name.size() - 5)), std::string::npos) << e.what();
        }
    } else {
        FrameRenderer gpu({32, 32, "gpu"});
        EXPECT_EQ(gpu.device_name(), name);
        EXPECT_EQ(gpu.device_name().find(", cpu"), std::string::npos);
        // Beside a GPU, "cpu" gives the software rasteriser where one is installed, else names itself.
        try {
            FrameRenderer cpu({32, 32, "cpu"});
            EXPECT_TRUE(is_cpu_device(cpu.device_name())) << cpu.device_name();
        } catch (const orrery::Error& e) {
            EXPECT_NE(std::string(e.what()).find("matching device='cpu'"), std::string::npos) << e.what();
        }
    }
}

} // namespace

#else
TEST(RenderOffscreen, Disabled) { GTEST_SKIP() << "render/ was not built (Vulkan development files absent)"; }
#endif
