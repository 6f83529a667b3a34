// The windowed viewer, smoke-tested under Xvfb: it opens a window on any
// Vulkan driver that can present (lavapipe), draws Overcooked and the ImGui
// panels, and writes a screenshot whose pixels are checked, paused (frames
// read the world exactly) and running (frames come from lagging world views).
// Also: without a display it fails with a clear message.

#include <gtest/gtest.h>

#if !defined(ORRERY_RENDER_DISABLED) && defined(ORRERY_VIEW_EXE)
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <tuple>
#include <utility>

#include <stb_image.h>

#include "tools/view/panels.hpp"
#include "render/renderer.hpp"
#include "render_support.hpp"

namespace {

/// Why orrery-view cannot run under Xvfb here, or null when it can.
const char* cannot_run_viewer() {
    if (!vulkan_icd_present()) return "no Vulkan driver (ICD) installed";
    if (std::system("command -v xvfb-run >/dev/null 2>&1") != 0) return "xvfb-run not installed";
    return nullptr;
}

std::string temp_path(const std::string& name) {
    return (std::filesystem::temp_directory_path() / ("orrery_view_test_" + std::to_string(::getpid()) + name))
        .string();
}

struct Image {
    int w = 0, h = 0;
    std::vector<uint8_t> rgba;
    std::array<int, 3> at(float x, float y) const {
        const uint8_t* p = &rgba[(size_t(y) * size_t(w) + size_t(x)) * 4];
        return {p[0], p[1], p[2]};
    }
};

Image load_png(const std::string& path) {
    Image im;
    int n = 0;
    unsigned char* data = stbi_load(path.c_str(), &im.w, &im.h, &n, 4);
    if (data) im.rgba.assign(data, data + size_t(im.w) * size_t(im.h) * 4);
    stbi_image_free(data);
    return im;
}

void expect_color(std::array<int, 3> got, std::array<int, 3> want, const char* what) {
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(got[size_t(i)], want[size_t(i)], 2) << what << " channel " << i;
}

constexpr uint32_t kShotW = 1000, kShotH = 600;

/// Runs orrery-view on cramped_room under Xvfb with `args`, taking a 1000x600
/// screenshot into `shot`; returns its exit status and fills `log` with its output.
int run_viewer(const std::string& args, const std::string& shot, std::string& log) {
    const std::string log_path = shot + ".log";
    std::string cmd = "xvfb-run -a -s '-screen 0 1024x768x24' " + std::string(ORRERY_VIEW_EXE) +
                      " overcooked --layout cramped_room --size 1000x600 " + args + " --screenshot " + shot + " >" +
                      log_path + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(log_path);
    std::stringstream text;
    text << in.rdbuf();
    log = cmd + "\n" + text.str();
    std::remove(log_path.c_str());
    return rc;
}

/// Colour of the screenshot at scene coordinates (x, y) of the 5 x 4 kitchen,
/// framed like offscreen frames in the area left of the panel column.
std::array<int, 3> scene_pixel(const Image& im, float x, float y) {
    uint32_t scene_w = kShotW - orrery::render::kPanelWidth;
    auto t = orrery::render::frame_bounds({0.0f, 0.0f, 5.0f, 4.0f}, {}, scene_w, kShotH);
    return im.at((x * t.scale[0] + t.offset[0]) * 0.5f * float(scene_w) + 0.5f * float(scene_w),
                 (y * t.scale[1] + t.offset[1]) * 0.5f * float(kShotH) + 0.5f * float(kShotH));
}

TEST(RenderView, WindowUnderXvfbDrawsKitchenAndPanels) {
    if (const char* why = cannot_run_viewer()) GTEST_SKIP() << why;
    const std::string shot = temp_path("shot.png");
    std::string log;
    ASSERT_EQ(run_viewer("--paused --frames 3", shot, log), 0) << log;
    EXPECT_NE(log.find("exact view"), std::string::npos) << "paused frames read the world exactly\n" << log;
    Image im = load_png(shot);
    ASSERT_EQ(im.w, int(kShotW));
    ASSERT_EQ(im.h, int(kShotH));
    // cramped_room's standard start: chef 0 on (1, 2), chef 1 on (3, 1); the pot on (2, 0).
    expect_color(scene_pixel(im, 1.3f, 2.55f), {40, 90, 200}, "chef 0 (left of centre, clear of its facing marker)");
    expect_color(scene_pixel(im, 3.3f, 1.55f), {40, 160, 70}, "chef 1 (left of centre)");
    expect_color(scene_pixel(im, 2.5f, 0.3f), {64, 64, 70}, "pot tile");
    expect_color(scene_pixel(im, 2.5f, 2.5f), {214, 204, 182}, "floor");
    // The panel column is ImGui's, not the scene's background.
    auto panel = im.at(float(kShotW) - 20.0f, float(kShotH) - 20.0f);
    EXPECT_NE(panel, (std::array<int, 3>{24, 24, 30}));
    std::remove(shot.c_str());
}

TEST(RenderView, RunningViewerDrawsFromLaggingWorldViews) {
    if (const char* why = cannot_run_viewer()) GTEST_SKIP() << why;
    const std::string shot = temp_path("running.png");
    std::string log;
    ASSERT_EQ(run_viewer("--worlds 16 --frames 30", shot, log), 0) << log;
    // Running, frames come from world views (on the CPU they land at once: no lag).
    EXPECT_NE(log.find("lagging view"), std::string::npos) << log;
    EXPECT_NE(log.find(", 0 behind"), std::string::npos) << log;
    Image im = load_png(shot);
    ASSERT_EQ(im.w, int(kShotW));
    ASSERT_EQ(im.h, int(kShotH));
    expect_color(scene_pixel(im, 2.5f, 0.3f), {64, 64, 70}, "pot tile"); // chefs never stand on counters
    std::remove(shot.c_str());
}

/// The frames orrery-view's log says it made and rendered.
std::pair<long, long> frames_rendered(const std::string& log) {
    const std::string key = "orrery-view: ";
    for (size_t at = log.find(key); at != std::string::npos; at = log.find(key, at + 1)) {
        long frames = -1, rendered = -1;
        if (std::sscanf(log.c_str() + at, "orrery-view: %ld frames, %ld of them rendered", &frames, &rendered) == 2)
            return {frames, rendered};
    }
    return {-1, -1};
}

TEST(RenderView, AFrameIsDrawnOnlyWhenSomethingChanged) {
    // Paused, nothing changes after ImGui has laid its panels out: those frames
    // are neither rendered nor presented (the last, a screenshot, is). Running,
    // every frame steps the world (speed far above the frame rate) and shows the
    // new step in the panel: every frame is rendered.
    if (const char* why = cannot_run_viewer()) GTEST_SKIP() << why;
    const std::string shot = temp_path("still.png");
    std::string log;
    ASSERT_EQ(run_viewer("--paused --frames 40", shot, log), 0) << log;
    auto [frames, rendered] = frames_rendered(log);
    EXPECT_EQ(frames, 40) << log;
    EXPECT_GE(rendered, 2) << log;
    EXPECT_LE(rendered, 8) << "a paused, untouched view must not be drawn every frame\n" << log;
    Image im = load_png(shot); // the screenshot frame still shows the kitchen
    expect_color(scene_pixel(im, 2.5f, 0.3f), {64, 64, 70}, "pot tile");
    std::remove(shot.c_str());

    ASSERT_EQ(run_viewer("--worlds 4 --frames 40 --speed 100000", shot, log), 0) << log;
    std::tie(frames, rendered) = frames_rendered(log);
    EXPECT_EQ(frames, 40) << log;
    EXPECT_GE(rendered, 38) << "each frame took a step, which the panel shows\n" << log;
    std::remove(shot.c_str());
}

/// orrery-view's inspector lines for `args` (an env and --inspect ARCH:ROW),
/// paused for two frames under Xvfb.
std::string inspect(const std::string& args, int& rc) {
    const std::string log_path = temp_path("inspect.log");
    std::string cmd = "xvfb-run -a -s '-screen 0 1024x768x24' " + std::string(ORRERY_VIEW_EXE) + " " + args +
                      " --size 800x500 --paused --frames 2 >" + log_path + " 2>&1";
    rc = std::system(cmd.c_str());
    std::ifstream in(log_path);
    std::stringstream text;
    text << in.rdbuf();
    std::remove(log_path.c_str());
    return cmd + "\n" + text.str();
}

TEST(RenderView, TheInspectorNamesOvercookedsAndTagsElements) {
    if (const char* why = cannot_run_viewer()) GTEST_SKIP() << why;
    int rc = 0;
    // cramped_room's standard start: chef 0 on (1, 2) = cell 11, facing north, empty-handed.
    std::string log = inspect("overcooked --layout cramped_room --inspect Chef:0", rc);
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("orrery-view: inspector: Chef 0"), std::string::npos) << log;
    EXPECT_NE(log.find("Player: cell=11 dir (0 N, 1 S, 2 E, 3 W)=0 held (item byte)=0 pad=0"), std::string::npos)
        << log;
    EXPECT_NE(log.find("Reward: reward=0"), std::string::npos) << log;
    EXPECT_NE(log.find("ShapedReward: shaped_reward=0"), std::string::npos) << log;
    // The kitchen: its clock, the pot on (2, 0) idle, and counters named by their cells.
    log = inspect("overcooked --layout cramped_room --inspect Kitchen:0", rc);
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("Clock: timestep=0"), std::string::npos) << log;
    EXPECT_NE(log.find("Pots: soup0=0 soup1=0"), std::string::npos) << log;
    EXPECT_NE(log.find("tick7=0"), std::string::npos) << log;
    EXPECT_NE(log.find("Counters: counter@0,0=0 counter@1,0=0"), std::string::npos) << log;
    // Tag: agent 0 is a pursuer; its observation's entries carry observe()'s names.
    log = inspect("tag --inspect Agent:0", rc);
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("orrery-view: inspector: Agent 0"), std::string::npos) << log;
    EXPECT_NE(log.find("Position: x="), std::string::npos) << log;
    EXPECT_NE(log.find("Role: role (0 pursuer, 1 evader)=0"), std::string::npos) << log;
    EXPECT_NE(log.find("Obs: role=0 x="), std::string::npos) << log;
    EXPECT_NE(log.find(" pellet_dx="), std::string::npos) << log;
    EXPECT_NE(log.find(" other0_vy="), std::string::npos) << log;
    log = inspect("tag --inspect Arena:0", rc);
    ASSERT_EQ(rc, 0) << log;
    EXPECT_NE(log.find("Score: tags=0 steps=0"), std::string::npos) << log;
}

TEST(RenderView, NoDisplayIsAClearError) {
    const std::string log = temp_path("nodisplay.txt");
    std::string cmd =
        "env -u DISPLAY -u WAYLAND_DISPLAY " + std::string(ORRERY_VIEW_EXE) + " tag --frames 1 >" + log + " 2>&1";
    int rc = std::system(cmd.c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(rc, 0);
    EXPECT_NE(text.str().find("no display"), std::string::npos) << text.str();
    EXPECT_NE(text.str().find("orrery-record"), std::string::npos) << text.str();
    std::remove(log.c_str());
}

} // namespace

#else
TEST(RenderView, Disabled) {
    GTEST_SKIP() << "orrery-view was not built (Vulkan, GLFW or ImGui development files absent)";
}
#endif
