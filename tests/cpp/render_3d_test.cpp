// The 3-D view on whatever Vulkan driver is present (lavapipe in CI): a box on
// a floor lands where the camera's projection puts it, in its declared colour,
// lit; its shadow darkens the floor away from the sun; overlays add their
// pixels only when on; picking and the entity's-eye camera find the box.
// Scene-level checks need no Vulkan; pixel checks skip only without a driver.

#include <gtest/gtest.h>

#ifndef ORRERY_RENDER_DISABLED
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <stb_image.h>

#include "engine/simulator.hpp"
#include "envs/hide_and_seek/hide_and_seek.hpp"
#include "envs/physics_scenes/scenes.hpp"
#include "envs/registry.hpp"
#include "render/render.hpp"
#include "render_support.hpp"
#include "tools/view/panels.hpp"

namespace {

using orrery::render::Camera;
using orrery::render::FrameRenderer;
using orrery::render::Scene;
using orrery::render::SceneOptions;

#define REQUIRE_VULKAN()                                                                                               \
    do {                                                                                                               \
        if (!vulkan_icd_present()) GTEST_SKIP() << "no Vulkan driver (ICD) installed";                                 \
    } while (0)

constexpr uint32_t kSize = 256;
const orrery::Rgba kBox{230, 150, 60, 255}, kFloor{215, 210, 195, 255};

/// physics_scenes' box_rest (a floor plane and one box), with the box's half
/// extents and centre set by the test.
std::unique_ptr<orrery::Simulator> box_world(phys::Vec3 half = {0.1f, 0.1f, 0.1f}, phys::Vec3 at = {0, 0, 0.1f},
                                             const std::string& scene = "box_rest") {
    orrery::register_builtin_envs();
    orrery::SimOptions so;
    so.num_worlds = 1;
    so.threads = 1;
    auto sim = std::make_unique<orrery::Simulator>(orrery::make_env_spec("physics_scenes", {{"scene", scene}}), so);
    sim->reset(1);
    sim->edit_world(0, [&](orrery::Ctx& ctx) {
        ctx.at<physics_scenes::Body, phys::Shape>(1) = {phys::ShapeKind::kBox, half};
        ctx.at<physics_scenes::Body, phys::Pose>(1).p = at;
    });
    return sim;
}

struct Rgb {
    int r, g, b;
    int luma() const { return (299 * r + 587 * g + 114 * b) / 1000; }
};

Rgb pixel(const std::vector<uint8_t>& img, float x, float y) {
    uint32_t px = uint32_t(x), py = uint32_t(y);
    const uint8_t* p = &img[(size_t(py) * kSize + px) * 4];
    return {p[0], p[1], p[2]};
}

/// The pixel world point `p` projects to under `cam`.
std::array<float, 3> at(const Scene& s, const Camera& cam, std::array<float, 3> p) {
    return orrery::render::project(orrery::render::orbit_view_proj(s.bounds, cam, kSize, kSize), p, kSize, kSize);
}

/// Whether `c` is `want` lit by some fraction k of the sun and the 0.35 ambient
/// (each channel want * k, with one k for all three).
bool shaded(Rgb c, orrery::Rgba want) {
    float k = float(c.r) / float(want.r);
    return k >= 0.3f && k <= 1.01f && std::fabs(float(c.g) - k * float(want.g)) <= 3.0f &&
           std::fabs(float(c.b) - k * float(want.b)) <= 3.0f;
}

int count(const std::vector<uint8_t>& img, orrery::Rgba c) {
    int n = 0;
    for (size_t i = 0; i < img.size(); i += 4) n += img[i] == c.r && img[i + 1] == c.g && img[i + 2] == c.b;
    return n;
}

/// Pixels that are `want` in some light (a body of that colour).
int count_shaded(const std::vector<uint8_t>& img, orrery::Rgba want) {
    int n = 0;
    for (size_t i = 0; i < img.size(); i += 4) n += shaded({img[i], img[i + 1], img[i + 2]}, want);
    return n;
}

Camera fixed_orbit() {
    Camera cam;
    cam.yaw = -2.0f, cam.pitch = 0.6f, cam.distance = 2.0f;
    return cam;
}

TEST(Render3DScene, BodiesComeFromPoseAndShape) {
    auto sim = box_world({0.1f, 0.2f, 0.3f}, {0.25f, -0.5f, 0.3f});
    Scene s = orrery::render::scene_of(*sim, 0);
    EXPECT_EQ(s.view, orrery::DrawSpec::View::k3D);
    const auto& cubes = s.meshes[size_t(orrery::render::Mesh::kCube)];
    ASSERT_EQ(cubes.size(), 1u);
    EXPECT_FLOAT_EQ(cubes[0].x, 0.25f);
    EXPECT_FLOAT_EQ(cubes[0].y, -0.5f);
    EXPECT_FLOAT_EQ(cubes[0].z, 0.3f);
    EXPECT_FLOAT_EQ(cubes[0].sx, 0.2f); // full extents: twice the half extents
    EXPECT_FLOAT_EQ(cubes[0].sy, 0.4f);
    EXPECT_FLOAT_EQ(cubes[0].sz, 0.6f);
    EXPECT_EQ(cubes[0].color, orrery::render::pack(kBox));
    ASSERT_EQ(s.meshes[size_t(orrery::render::Mesh::kPlane)].size(), 1u);
    EXPECT_EQ(s.meshes[size_t(orrery::render::Mesh::kPlane)][0].flags, orrery::render::kGridFlag);
    ASSERT_EQ(s.bodies.size(), 2u); // the floor, then the box
    EXPECT_EQ(s.bodies[1].row, 1u);
}

TEST(Render3DScene, EveryShapeOfTheMixedSceneIsDrawnWithItsOrientation) {
    orrery::register_builtin_envs();
    orrery::Simulator sim(orrery::make_env_spec("physics_scenes", {{"scene", "mixed"}}), {});
    sim.reset(3);
    Scene s = orrery::render::scene_of(sim, 0);
    EXPECT_EQ(s.meshes[size_t(orrery::render::Mesh::kSphere)].size(), 4u);
    EXPECT_EQ(s.meshes[size_t(orrery::render::Mesh::kCube)].size(), 5u); // tower, bar, paddle
    ASSERT_EQ(s.meshes[size_t(orrery::render::Mesh::kCapsule)].size(), 1u);
    const auto& cap = s.meshes[size_t(orrery::render::Mesh::kCapsule)][0];
    EXPECT_FLOAT_EQ(cap.half_length, 0.25f);
    EXPECT_FLOAT_EQ(cap.sx, 0.2f); // the diameter
    // Tilted about x by about 1.2 rad: the quaternion's x part is sin(0.6), give or take the jitter.
    EXPECT_NEAR(cap.qx, std::sin(0.6f), 0.03f);
}

TEST(Render3DScene, PickingFindsTheBodyUnderTheCursor) {
    auto sim = box_world();
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam = fixed_orbit();
    auto c = at(s, cam, {0.0f, 0.0f, 0.1f});
    EXPECT_EQ(orrery::render::pick_body(s, cam, kSize, kSize, c[0], c[1]), 1); // the box, not the floor behind it
    auto floor = at(s, cam, {0.6f, 0.6f, 0.0f});
    EXPECT_EQ(orrery::render::pick_body(s, cam, kSize, kSize, floor[0], floor[1]), -1);
    cam.mode = Camera::Mode::kTop;
    c = at(s, cam, {0.09f, -0.09f, 0.2f});
    EXPECT_EQ(orrery::render::pick_body(s, cam, kSize, kSize, c[0], c[1]), 1);
    c = at(s, cam, {0.12f, -0.09f, 0.2f});
    EXPECT_EQ(orrery::render::pick_body(s, cam, kSize, kSize, c[0], c[1]), -1);
}

TEST(Render3DScene, TheEyeCameraStandsInItsBodyLooksAlongItsXAndHidesIt) {
    auto sim = box_world({0.1f, 0.1f, 0.1f}, {0.5f, 0.25f, 0.1f});
    sim->edit_world(0, [](orrery::Ctx& ctx) { // turned a quarter about z: body +x is world +y
        ctx.at<physics_scenes::Body, phys::Pose>(1).q = phys::axis_angle({0, 0, 1}, 1.5707963f);
    });
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam;
    cam.mode = Camera::Mode::kEye;
    ASSERT_TRUE(orrery::render::aim_eye(s, orrery::archetype_id<physics_scenes::Body>, 1, cam));
    EXPECT_FLOAT_EQ(cam.eye[0], 0.5f);
    EXPECT_FLOAT_EQ(cam.eye[1], 0.25f);
    EXPECT_NEAR(cam.forward[0], 0.0f, 1e-6f);
    EXPECT_NEAR(cam.forward[1], 1.0f, 1e-6f);
    const auto& cube = s.meshes[size_t(orrery::render::Mesh::kCube)][0];
    EXPECT_EQ(cube.sx, 0.0f); // its own body is not drawn in front of the eye
    EXPECT_FALSE(orrery::render::aim_eye(s, orrery::archetype_id<physics_scenes::Body>, 7, cam)); // no such body
}

TEST(Render3DScene, TheLidarOverlayDrawsEachRayToItsHit) {
    orrery::register_builtin_envs();
    orrery::SimOptions so;
    so.threads = 1;
    orrery::Simulator sim(orrery::make_env_spec("physics_scenes", {{"scene", "crowd"}, {"rays", "8"}}), so);
    sim.reset(2);
    sim.step();
    Scene on = orrery::render::scene_of(sim, 0); // the env turns it on
    EXPECT_TRUE(orrery::render::scene_of(sim, 0, SceneOptions{}).lines.empty());
    // The first agent (row 1, a ball) and its scanner's distances: ray 0 runs along +x to its hit.
    phys::Vec3 o{};
    std::vector<float> d;
    sim.read_world(0, [&](orrery::Ctx& ctx) {
        o = ctx.at<physics_scenes::Body, phys::Pose>(1).p;
        orrery::Array<physics_scenes::Lidar> l =
            ctx.array_at<physics_scenes::Lidar>(orrery::archetype_id<physics_scenes::Scanner>, 0);
        d.assign(l.data, l.data + l.size);
    });
    ASSERT_EQ(d.size(), 8u);
    ASSERT_GE(on.lines.size(), 16u);
    EXPECT_FLOAT_EQ(on.lines[0].p[0], o.x);
    EXPECT_FLOAT_EQ(on.lines[0].p[1], o.y);
    EXPECT_FLOAT_EQ(on.lines[1].p[0], o.x + d[0]);
    EXPECT_FLOAT_EQ(on.lines[1].p[1], o.y);
    EXPECT_LT(d[0], 6.0f) << "inside the walled room every ray hits something";
    EXPECT_EQ(on.lines[0].color, orrery::render::pack({255, 220, 80, 255}));
}

/// Hide-and-seek with `worlds` worlds, reset (seed 1), on one thread.
std::unique_ptr<orrery::Simulator> hide_and_seek(uint32_t worlds, orrery::EnvOptions opts = {}) {
    orrery::register_builtin_envs();
    orrery::SimOptions so;
    so.num_worlds = worlds;
    so.threads = 1;
    auto sim = std::make_unique<orrery::Simulator>(orrery::make_env_spec("hide_and_seek", opts), so);
    sim->reset(1);
    return sim;
}

SceneOptions only(const std::string& overlay) {
    SceneOptions o;
    o.overlays = {overlay};
    return o;
}

bool same_point(const orrery::render::LineVertex& v, phys::Vec3 p) {
    return std::fabs(v.p[0] - p.x) < 1e-5f && std::fabs(v.p[1] - p.y) < 1e-5f && std::fabs(v.p[2] - p.z) < 1e-5f;
}

TEST(Render3DScene, HideAndSeeksVisionOverlayDrawsEachConeAndWhomEachAgentSees) {
    namespace hs = hide_and_seek;
    auto sim = hide_and_seek(8);
    sim->step();
    const uint32_t white = orrery::render::pack({250, 250, 250, 255});
    const uint32_t cone[2] = {orrery::render::pack({20, 100, 255, 255}), orrery::render::pack({255, 40, 20, 255})};
    int seen_total = 0;
    for (uint32_t w = 0; w < 8; ++w) {
        Scene s = orrery::render::scene_of(*sim, w, only("vision"));
        size_t at = 0;
        sim->read_world(w, [&](orrery::Ctx& ctx) {
            const hs::Config& cfg = ctx.config<hs::Config>();
            for (uint32_t row = 0; row < cfg.agents; ++row) {
                int32_t team = ctx.at<hs::Agent, hs::Team>(row).value;
                if (team == hs::kAbsent) continue;
                // The cone: its first edge, 8 arc pieces, its last edge, the last arc piece; edges 1 m long,
                // 135 degrees apart, symmetric about the body's +x axis.
                ASSERT_LE(at + 2 * 11, s.lines.size()) << "world " << w << " row " << row;
                const phys::Pose p = ctx.at<hs::Agent, phys::Pose>(row);
                const auto& first = s.lines[at + 1];
                const auto& last = s.lines[at + 2 * 9 + 1];
                EXPECT_TRUE(same_point(s.lines[at], p.p));
                EXPECT_TRUE(same_point(s.lines[at + 2 * 9], p.p));
                phys::Vec3 a{first.p[0] - p.p.x, first.p[1] - p.p.y, 0}, b{last.p[0] - p.p.x, last.p[1] - p.p.y, 0};
                EXPECT_NEAR(phys::length(a), 1.0f, 1e-5f);
                EXPECT_NEAR(phys::dot(a, b), -0.70710678f, 1e-5f) << "135 degrees between the edges";
                phys::Vec3 facing = phys::rotate(p.q, {1, 0, 0});
                EXPECT_NEAR(phys::dot(a, facing), phys::dot(b, facing), 1e-5f);
                EXPECT_NEAR(phys::dot(a, facing), 0.38268343f, 1e-5f) << "67.5 degrees either side";
                for (size_t k = at; k < at + 2 * 11; ++k) EXPECT_EQ(s.lines[k].color, cone[team]);
                at += 2 * 11;
                // Then a white line to each agent its observation says it sees, in row order.
                orrery::Array<hs::Obs> obs = ctx.array_at<hs::Obs>(orrery::archetype_id<hs::Agent>, row);
                for (uint32_t other = 0, slot = 0; other < cfg.agents; ++other) {
                    if (other == row || obs[cfg.off_aa + slot++] < 0.5f) continue;
                    ASSERT_LT(at + 1, s.lines.size());
                    EXPECT_EQ(s.lines[at].color, white);
                    EXPECT_TRUE(same_point(s.lines[at], p.p));
                    EXPECT_TRUE(same_point(s.lines[at + 1], ctx.at<hs::Agent, phys::Pose>(other).p));
                    at += 2, seen_total += 1;
                }
            }
        });
        EXPECT_EQ(at, s.lines.size()) << "world " << w;
    }
    EXPECT_GT(seen_total, 0) << "some agent of the 8 worlds sees another";
}

TEST(Render3DScene, HideAndSeeksLidarOverlayDrawsTheObservedRays) {
    namespace hs = hide_and_seek;
    auto sim = hide_and_seek(1);
    sim->step();
    Scene s = orrery::render::scene_of(*sim, 0, only("lidar"));
    EXPECT_TRUE(orrery::render::scene_of(*sim, 0).lines.size() < s.lines.size() || s.lines.empty());
    size_t at = 0;
    int hits = 0;
    sim->read_world(0, [&](orrery::Ctx& ctx) {
        const hs::Config& cfg = ctx.config<hs::Config>();
        for (uint32_t row = 0; row < cfg.agents; ++row) {
            if (ctx.at<hs::Agent, hs::Team>(row).value == hs::kAbsent) continue;
            const phys::Vec3 o = ctx.at<hs::Agent, phys::Pose>(row).p;
            orrery::Array<hs::Obs> obs = ctx.array_at<hs::Obs>(orrery::archetype_id<hs::Agent>, row);
            for (uint32_t r = 0; r < hs::kLidarRays; ++r) {
                // Ray r leaves the centre at the world-fixed angle 2 pi r / 30, as far as observed.
                float t = obs[cfg.off_lidar + r];
                phys::SinCos sc = phys::sin_cos(6.28318531f * float(r) / 30.0f);
                ASSERT_LT(at + 1, s.lines.size());
                EXPECT_TRUE(same_point(s.lines[at], o));
                EXPECT_TRUE(same_point(s.lines[at + 1], o + phys::Vec3{sc.c, sc.s, 0.0f} * t)) << "ray " << r;
                bool hit = t < hs::kLidarRange;
                EXPECT_EQ(s.lines[at].color, orrery::render::pack(hit ? orrery::Rgba{255, 220, 80, 255}
                                                                      : orrery::Rgba{120, 120, 130, 255}));
                at += hit ? 6 : 2; // a hit adds a small cross
                hits += hit;
            }
        }
    });
    EXPECT_EQ(at, s.lines.size());
    EXPECT_GT(hits, 0);
}

TEST(Render3DScene, HideAndSeeksHoldsOverlayMarksAGrabAndTheLockersTeam) {
    namespace hs = hide_and_seek;
    auto sim = hide_and_seek(1);
    EXPECT_TRUE(orrery::render::scene_of(*sim, 0, only("grabs and locks")).lines.empty()) << "nothing held or locked";
    // Hider row 0 holds box 1; the seekers have locked box 0.
    phys::Vec3 agent{}, box0{}, box1{};
    sim->edit_world(0, [&](orrery::Ctx& ctx) {
        ctx.at<hs::Agent, hs::Grip>(0).held = hs::row_entity<hs::Object>(ctx, 1);
        ctx.at<hs::Object, hs::Piece>(0) = {hs::kCube, 1, hs::kSeeker, 2};
        agent = ctx.at<hs::Agent, phys::Pose>(0).p;
        box0 = ctx.at<hs::Object, phys::Pose>(0).p;
        box1 = ctx.at<hs::Object, phys::Pose>(1).p;
        ASSERT_EQ((ctx.at<hs::Agent, hs::Team>(0).value), hs::kHider);
        ASSERT_EQ((ctx.at<hs::Object, phys::Shape>(0).kind), phys::ShapeKind::kBox);
    });
    Scene s = orrery::render::scene_of(*sim, 0, only("grabs and locks"));
    const uint32_t hider = orrery::render::pack({70, 130, 230, 255}), seeker = orrery::render::pack({220, 70, 60, 255});
    ASSERT_EQ(s.lines.size(), 2u * (1 + 4 + 6)); // the weld's line and square, the lock's crossed square
    EXPECT_TRUE(same_point(s.lines[0], agent));
    EXPECT_TRUE(same_point(s.lines[1], box1));
    for (size_t k = 0; k < 10; ++k) EXPECT_EQ(s.lines[k].color, hider);
    EXPECT_NEAR(s.lines[2].p[2], box1.z + 0.25f + 0.05f, 1e-5f) << "over the held box's top";
    for (size_t k = 10; k < 22; ++k) {
        EXPECT_EQ(s.lines[k].color, seeker);
        EXPECT_NEAR(s.lines[k].p[2], box0.z + 0.25f + 0.01f, 1e-5f) << "on the locked box's top";
        EXPECT_NEAR(s.lines[k].p[0], box0.x, 0.1f + 1e-5f);
        EXPECT_NEAR(s.lines[k].p[1], box0.y, 0.1f + 1e-5f);
    }
}

TEST(Render3DScene, HideAndSeeksPreparationPhaseIsAStatusLineATintAndAHud) {
    auto sim = hide_and_seek(1, {{"prep_steps", "2"}});
    const orrery::Rgba sky{150, 175, 205, 255};
    Scene prep = orrery::render::scene_of(*sim, 0);
    ASSERT_EQ(prep.status.size(), 1u);
    EXPECT_EQ(prep.status[0], "seekers frozen for 2 more steps");
    // The sky mixed with (40, 50, 90) by 120 / 255, rounded.
    EXPECT_EQ(orrery::render::pack(prep.background), orrery::render::pack({98, 116, 151, 255}));
    EXPECT_FALSE(prep.shapes.empty()) << "the line is drawn over the 3-D view";
    sim->step();
    EXPECT_EQ(orrery::render::scene_of(*sim, 0).status[0], "seekers frozen for 1 more step");
    sim->step();
    Scene after = orrery::render::scene_of(*sim, 0);
    EXPECT_TRUE(after.status.empty());
    EXPECT_TRUE(after.shapes.empty());
    EXPECT_EQ(orrery::render::pack(after.background), orrery::render::pack(sky));
}

TEST(Render3D, HideAndSeeksOverlaysAndPreparationHudShowInTheFrame) {
    REQUIRE_VULKAN();
    auto sim = hide_and_seek(1, {{"prep_steps", "1"}});
    Camera cam;
    cam.mode = Camera::Mode::kTop;
    FrameRenderer fr({kSize, kSize, {}});
    const orrery::Rgba kHiderCone{20, 100, 255, 255}, kRay{255, 220, 80, 255}, kHud{255, 235, 120, 255};
    std::vector<uint8_t> none = fr.render(orrery::render::scene_of(*sim, 0, SceneOptions{}), cam);
    EXPECT_EQ(count(none, kHiderCone), 0);
    EXPECT_EQ(count(none, kRay), 0);
    EXPECT_GT(count(none, kHud), 20) << "the preparation line";
    // The line is a heads-up display: panning and zooming the camera leave it where it is.
    Camera moved = cam;
    moved.pan_x = 2.0f, moved.zoom = 2.0f;
    std::vector<uint8_t> panned = fr.render(orrery::render::scene_of(*sim, 0, SceneOptions{}), moved);
    int same = 0, hud = 0;
    for (size_t i = 0; i < none.size(); i += 4) {
        bool a = none[i] == kHud.r && none[i + 1] == kHud.g && none[i + 2] == kHud.b;
        bool b = panned[i] == kHud.r && panned[i + 1] == kHud.g && panned[i + 2] == kHud.b;
        hud += a, same += a && b;
    }
    EXPECT_EQ(same, hud);
    EXPECT_EQ(count(panned, kHud), hud);
    EXPECT_GT(count(fr.render(orrery::render::scene_of(*sim, 0, only("vision")), cam), kHiderCone), 20);
    EXPECT_GT(count(fr.render(orrery::render::scene_of(*sim, 0, only("lidar")), cam), kRay), 20);
    sim->step();
    EXPECT_EQ(count(fr.render(orrery::render::scene_of(*sim, 0, SceneOptions{}), cam), kHud), 0) << "phase over";
}

TEST(Render3D, ABoxOnTheFloorLandsWhereTheProjectionSays) {
    REQUIRE_VULKAN();
    auto sim = box_world();
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam = fixed_orbit();
    FrameRenderer fr({kSize, kSize, {}});
    std::vector<uint8_t> img = fr.render(s, cam);
    // The top face's centre: lit from above, the box's colour.
    auto top = at(s, cam, {0.0f, 0.0f, 0.2f});
    Rgb c = pixel(img, top[0], top[1]);
    EXPECT_TRUE(shaded(c, kBox)) << c.r << " " << c.g << " " << c.b;
    // The box's centre projects onto a face of the box too.
    auto mid = at(s, cam, {0.0f, 0.0f, 0.1f});
    Rgb m = pixel(img, mid[0], mid[1]);
    EXPECT_TRUE(shaded(m, kBox)) << m.r << " " << m.g << " " << m.b;
    // Floor beside it, away from the shadow (the sun is at +x +y), mid-cell of the grid.
    auto beside = at(s, cam, {0.375f, 0.125f, 0.0f});
    Rgb f = pixel(img, beside[0], beside[1]);
    EXPECT_TRUE(shaded(f, kFloor)) << f.r << " " << f.g << " " << f.b;
    // The box is drawn nowhere near where it is not: the same image with the box moved.
    sim->edit_world(0, [](orrery::Ctx& ctx) { ctx.at<physics_scenes::Body, phys::Pose>(1).p = {0.6f, 0.0f, 0.1f}; });
    std::vector<uint8_t> moved = fr.render(orrery::render::scene_of(*sim, 0), cam);
    Rgb gone = pixel(moved, top[0], top[1]);
    EXPECT_TRUE(shaded(gone, kFloor)) << gone.r << " " << gone.g << " " << gone.b;
    auto there = at(s, cam, {0.6f, 0.0f, 0.2f});
    EXPECT_TRUE(shaded(pixel(moved, there[0], there[1]), kBox));
}

/// A pillar 0.8 m tall at the origin; the sun (0.5, 0.3, 0.6) casts its shadow towards -x -y.
std::unique_ptr<orrery::Simulator> pillar_world() { return box_world({0.1f, 0.1f, 0.4f}, {0.0f, 0.0f, 0.4f}); }

/// The pillar's shadow seen from the top in `img`: the floor at (-0.375,
/// -0.125), where the ray to the sun crosses the pillar between z 0.33 and
/// 0.45 m, is darker than at the mirrored point, with nothing between it and
/// the sun. Returns the lit point's pixel.
Rgb expect_pillar_shadow(const std::vector<uint8_t>& img, const Scene& s, const Camera& cam) {
    auto in = at(s, cam, {-0.375f, -0.125f, 0.0f});
    auto out = at(s, cam, {0.375f, 0.125f, 0.0f});
    Rgb dark = pixel(img, in[0], in[1]), lit = pixel(img, out[0], out[1]);
    EXPECT_TRUE(shaded(dark, kFloor) && shaded(lit, kFloor));
    EXPECT_LT(dark.luma(), lit.luma() * 6 / 10) << "shadow " << dark.luma() << " lit " << lit.luma();
    return lit;
}

TEST(Render3D, AShadowDarkensTheFloorAwayFromTheSun) {
    REQUIRE_VULKAN();
    auto sim = pillar_world();
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam;
    cam.mode = Camera::Mode::kTop;
    FrameRenderer fr({kSize, kSize, {}});
    std::vector<uint8_t> img = fr.render(s, cam);
    Rgb lit = expect_pillar_shadow(img, s, cam);
    auto in = at(s, cam, {-0.375f, -0.125f, 0.0f});
    // Without the pillar the same floor point is lit.
    sim->edit_world(0, [](orrery::Ctx& ctx) { ctx.at<physics_scenes::Body, phys::Pose>(1).p = {2.0f, 2.0f, 0.4f}; });
    std::vector<uint8_t> bare = fr.render(orrery::render::scene_of(*sim, 0), cam);
    EXPECT_NEAR(pixel(bare, in[0], in[1]).luma(), lit.luma(), 3);
}

TEST(Render3D, AShadowMapOfAnySizeCastsThePillarsShadowAndABadSizeIsRefused) {
    // FrameOptions::shadow_size trades the map's texels for the time a render
    // takes (orrery-watch-bench --shadow-size): a 256-texel map still puts the
    // pillar's shadow where the 2048 one does; sizes outside 64..8192 are refused.
    REQUIRE_VULKAN();
    auto sim = pillar_world();
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam;
    cam.mode = Camera::Mode::kTop;
    FrameRenderer small({kSize, kSize, {}, 256});
    EXPECT_EQ(small.shadow_size(), 256u);
    expect_pillar_shadow(small.render(s, cam), s, cam);
    for (uint32_t bad : {32u, 16384u}) {
        try {
            FrameRenderer fr({kSize, kSize, {}, bad});
            ADD_FAILURE() << "a shadow map of " << bad << " texels was accepted";
        } catch (const orrery::Error& e) {
            EXPECT_NE(std::string(e.what()).find("shadow_size is " + std::to_string(bad) + "; expected 0"),
                      std::string::npos)
                << e.what();
        }
    }
}

TEST(Render3D, AShadowMapKeptAcrossCameraMovesDrawsWhatAFreshOneDraws) {
    // The shadow map is drawn again only when the casters, light or bounds change:
    // a frame after a camera move or an overlay toggle reuses it, and must equal the
    // same frame drawn by a renderer that has drawn nothing before.
    REQUIRE_VULKAN();
    auto sim = pillar_world();
    Camera top;
    top.mode = Camera::Mode::kTop;
    Camera orbit = fixed_orbit();
    FrameRenderer kept({kSize, kSize, {}});
    auto fresh = [&](const Scene& s, const Camera& cam) {
        FrameRenderer fr({kSize, kSize, {}});
        return fr.render(s, cam);
    };
    Scene s = orrery::render::scene_of(*sim, 0);
    std::vector<uint8_t> first = kept.render(s, orbit);
    std::vector<uint8_t> turned = kept.render(s, top); // the map of the first frame
    EXPECT_EQ(turned, fresh(s, top));
    EXPECT_NE(turned, first);
    Scene with_bounds = orrery::render::scene_of(*sim, 0, SceneOptions{{"bounds"}});
    EXPECT_EQ(kept.render(with_bounds, top), fresh(with_bounds, top)) << "an overlay changes no caster";
    // The pillar moves: its shadow moves with it (the map is drawn again).
    sim->edit_world(0, [](orrery::Ctx& ctx) { ctx.at<physics_scenes::Body, phys::Pose>(1).p = {0.3f, -0.2f, 0.4f}; });
    Scene moved = orrery::render::scene_of(*sim, 0);
    std::vector<uint8_t> after = kept.render(moved, top);
    EXPECT_EQ(after, fresh(moved, top));
    EXPECT_NE(after, turned);
    EXPECT_EQ(kept.renders(), 4u);
    EXPECT_EQ(kept.shadow_passes(), 2u) << "the map is drawn for the first frame and after the move only";
}

TEST(Render3D, OverlaysAddTheirPixelsOnlyWhenOn) {
    REQUIRE_VULKAN();
    orrery::register_builtin_envs();
    orrery::Simulator sim(orrery::make_env_spec("physics_scenes", {{"scene", "box_slide"}}), {});
    sim.reset(1);
    sim.step(); // contacts of the sliding box with the floor, and a velocity
    Camera cam = fixed_orbit();
    FrameRenderer fr({kSize, kSize, {}});
    const orrery::Rgba kBounds{250, 250, 120, 255}, kArrow{80, 230, 250, 255}, kContact{255, 60, 60, 255};
    std::vector<uint8_t> none = fr.render(orrery::render::scene_of(sim, 0, SceneOptions{}), cam);
    EXPECT_EQ(count(none, kBounds), 0);
    EXPECT_EQ(count(none, kArrow), 0);
    EXPECT_EQ(count(none, kContact), 0);
    for (auto [name, colour] : {std::pair{"bounds", kBounds}, {"velocities", kArrow}, {"contacts", kContact}}) {
        SceneOptions on;
        on.overlays = {name};
        std::vector<uint8_t> img = fr.render(orrery::render::scene_of(sim, 0, on), cam);
        EXPECT_GT(count(img, colour), 20) << name;
    }
}

TEST(Render3D, TheJointsOverlayLinksAGrabbedBoxToItsHolder) {
    REQUIRE_VULKAN();
    orrery::register_builtin_envs();
    // The grab scene welds the cube to the agent in step 1 (physics/joint.hpp).
    orrery::Simulator sim(orrery::make_env_spec("physics_scenes", {{"scene", "grab"}}), {});
    sim.reset(1);
    Camera cam = fixed_orbit();
    FrameRenderer fr({kSize, kSize, {}});
    const orrery::Rgba kJoint{255, 220, 40, 255};
    SceneOptions on;
    on.overlays = {"joints"};
    EXPECT_EQ(count(fr.render(orrery::render::scene_of(sim, 0, on), cam), kJoint), 0) << "no joint before step 1";
    sim.step();
    EXPECT_EQ(count(fr.render(orrery::render::scene_of(sim, 0, SceneOptions{}), cam), kJoint), 0) << "overlay off";
    EXPECT_GT(count(fr.render(orrery::render::scene_of(sim, 0, on), cam), kJoint), 10);
}

TEST(Render3D, TheEntitysEyeSeesTheBoxAhead) {
    REQUIRE_VULKAN();
    auto sim = box_world();
    Scene s = orrery::render::scene_of(*sim, 0);
    Camera cam;
    cam.mode = Camera::Mode::kEye;
    cam.eye = {-1.0f, 0.0f, 0.1f};
    cam.forward = {1.0f, 0.0f, 0.0f};
    FrameRenderer fr({kSize, kSize, {}});
    std::vector<uint8_t> ahead = fr.render(s, cam);
    EXPECT_TRUE(shaded(pixel(ahead, kSize / 2, kSize / 2), kBox));
    // 135 degrees across (a square view: 135 degrees high too): the box's 0.2 m
    // face 0.9 m ahead spans 0.2 / 0.9 / (2 tan 67.5) of 256 pixels, 11.8, each way.
    int wide = count_shaded(ahead, kBox);
    EXPECT_NEAR(wide, 139, 40);
    cam.eye_fov = 0.5f; // a narrow eye: the box fills more of the view
    EXPECT_GT(count_shaded(fr.render(s, cam), kBox), 4 * wide);
    cam.eye_fov = 2.3561945f;
    cam.forward = {-1.0f, 0.0f, 0.0f}; // turned away: floor and sky
    std::vector<uint8_t> behind = fr.render(s, cam);
    EXPECT_EQ(count_shaded(behind, kBox), 0);
    EXPECT_FALSE(shaded(pixel(behind, kSize / 2, kSize / 2), kBox));
}

#ifdef ORRERY_RECORD_EXE
std::string run(const std::string& cmd, int& rc) {
    std::string log =
        (std::filesystem::temp_directory_path() / ("orrery_3d_log_" + std::to_string(::getpid()))).string();
    rc = std::system((cmd + " >" + log + " 2>&1").c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    std::filesystem::remove(log);
    return cmd + "\n" + text.str();
}

struct Png {
    int w = 0, h = 0;
    std::vector<uint8_t> rgba;
};
Png load(const std::filesystem::path& p) {
    Png im;
    int n = 0;
    unsigned char* data = stbi_load(p.string().c_str(), &im.w, &im.h, &n, 4);
    if (data) im.rgba.assign(data, data + size_t(im.w) * size_t(im.h) * 4);
    stbi_image_free(data);
    return im;
}

TEST(Render3DRecord, WritesFramesAndAVideoFromEachCameraAndAGridOfWorlds) {
    REQUIRE_VULKAN();
    namespace fs = std::filesystem;
    fs::path out = fs::temp_directory_path() / ("orrery_3d_record_" + std::to_string(::getpid()));
    fs::remove_all(out);
    int rc = 0;
    const std::string base = std::string(ORRERY_RECORD_EXE) + " physics_scenes --opt scene=crowd --steps 2 ";
    for (const char* camera : {"orbit", "top", "eye:1"}) {
        std::string log = run(base + "--size 96x64 --camera " + camera + " --out " + (out / camera).string(), rc);
        ASSERT_EQ(rc, 0) << log;
        for (const char* f : {"frame_00000.png", "frame_00002.png"}) {
            Png im = load(out / camera / f);
            ASSERT_EQ(im.w, 96) << camera << " " << f;
            EXPECT_EQ(im.h, 64);
        }
        EXPECT_FALSE(fs::exists(out / camera / "frame_00003.png"));
        EXPECT_TRUE(fs::exists(out / camera / "video.mp4") || fs::exists(out / camera / "video.gif")) << log;
    }
    // The cameras see different pictures of the same state.
    EXPECT_NE(load(out / "orbit" / "frame_00000.png").rgba, load(out / "top" / "frame_00000.png").rgba);
    EXPECT_NE(load(out / "top" / "frame_00000.png").rgba, load(out / "eye:1" / "frame_00000.png").rgba);
    // Four worlds in a 2 x 2 grid: each tile is that world alone, as one world's recording draws it.
    std::string log =
        run(base + "--worlds 4 --grid 4 --size 192x128 --camera top --out " + (out / "grid").string(), rc);
    ASSERT_EQ(rc, 0) << log;
    Png grid = load(out / "grid" / "frame_00001.png");
    ASSERT_EQ(grid.w, 192);
    ASSERT_EQ(grid.h, 128);
    log = run(base + "--worlds 4 --world 3 --size 96x64 --camera top --out " + (out / "w3").string(), rc);
    ASSERT_EQ(rc, 0) << log;
    Png w3 = load(out / "w3" / "frame_00001.png");
    ASSERT_EQ(w3.w, 96);
    int differ = 0;
    for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 96; ++x)
            for (int c = 0; c < 3; ++c)
                differ += grid.rgba[(size_t(64 + y) * 192 + size_t(96 + x)) * 4 + size_t(c)] !=
                          w3.rgba[(size_t(y) * 96 + size_t(x)) * 4 + size_t(c)];
    EXPECT_EQ(differ, 0) << "the bottom-right tile is world 3";
    // Tiles of different worlds differ (each world's crowd is jittered by its seed).
    int across = 0;
    for (int y = 0; y < 64; ++y)
        for (int x = 0; x < 96; ++x)
            across += grid.rgba[(size_t(y) * 192 + size_t(x)) * 4] != w3.rgba[(size_t(y) * 96 + size_t(x)) * 4];
    EXPECT_GT(across, 50);
    fs::remove_all(out);
}

TEST(Render3DRecord, BadCameraAndOverlayOptionsAreNamed) {
    int rc = 0;
    const std::string base = std::string(ORRERY_RECORD_EXE) + " physics_scenes --steps 1 --out /tmp/orrery_3d_bad ";
    std::string log = run(base + "--camera sideways", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("option --camera expects orbit, top, eye:ROW or eye:ARCHETYPE:ROW, got 'sideways'"),
              std::string::npos)
        << log;
    log = run(base + "--camera eye:Nobody:1", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("has no archetype 'Nobody'"), std::string::npos) << log;
    log = run(base + "--camera eye:99", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("row 99 of Body is out of range, expected < 48"), std::string::npos) << log;
    log = run(base + "--overlays contacts,lidar", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("has no overlay 'lidar' (it has: bounds, velocities, contacts, joints)"), std::string::npos)
        << log;
}
#endif

#ifdef ORRERY_VIEW_EXE
TEST(Render3DView, TheWindowShowsTheBoxFromAboveAndInspectsIt) {
    REQUIRE_VULKAN();
    if (std::system("command -v xvfb-run >/dev/null 2>&1") != 0) GTEST_SKIP() << "xvfb-run not installed";
    std::string shot =
        (std::filesystem::temp_directory_path() / ("orrery_3d_view_" + std::to_string(::getpid()) + ".png")).string();
    int rc = 0;
    std::string log = run("xvfb-run -a -s '-screen 0 1024x768x24' " + std::string(ORRERY_VIEW_EXE) +
                              " physics_scenes --opt scene=box_rest --size 1000x600 --paused --frames 3 --camera top"
                              " --overlays bounds --inspect 1 --screenshot " +
                              shot,
                          rc);
    ASSERT_EQ(rc, 0) << log;
    // The inspector names the picked body's elements.
    EXPECT_NE(log.find("orrery-view: inspector: Body 1"), std::string::npos) << log;
    EXPECT_NE(log.find("Pose: px=0 py=0 pz=0.1"), std::string::npos) << log;
    EXPECT_NE(log.find("Shape: kind=2 dx=0.1 dy=0.1 dz=0.1"), std::string::npos) << log;
    Png im = load(shot);
    ASSERT_EQ(im.w, 1000);
    // The box's top, seen from above at the centre of the scene area.
    const uint32_t scene_w = 1000 - orrery::render::kPanelWidth;
    Camera cam;
    cam.mode = Camera::Mode::kTop;
    auto m = orrery::render::orbit_view_proj({-1.0f, -1.0f, 1.0f, 1.0f}, cam, scene_w, 600);
    auto c = orrery::render::project(m, {0.0f, 0.0f, 0.2f}, scene_w, 600);
    const uint8_t* p = &im.rgba[(size_t(c[1]) * 1000 + size_t(c[0])) * 4];
    Rgb top{p[0], p[1], p[2]};
    // Selected: half way to white, (242, 202, 157), then lit; no longer the plain box colour.
    EXPECT_TRUE(shaded(top, {242, 202, 157, 255})) << top.r << " " << top.g << " " << top.b;
    EXPECT_FALSE(shaded(top, kBox));
    std::remove(shot.c_str());
}
#endif

} // namespace

#else
TEST(Render3D, Disabled) { GTEST_SKIP() << "render/ was not built (Vulkan development files absent)"; }
#endif
