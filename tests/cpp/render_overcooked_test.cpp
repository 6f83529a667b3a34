// Overcooked drawn from its registration table, offscreen: a chef where the
// state puts it, the item it holds, and a pot's look while cooking (soup, then
// a progress bar that fills with the cooking tick). Skips only without a Vulkan driver.

#include <gtest/gtest.h>

#ifndef ORRERY_RENDER_DISABLED
#include <cmath>
#include <cstdlib>
#include <filesystem>

#include "engine/simulator.hpp"
#include "envs/overcooked/overcooked.hpp"
#include "envs/registry.hpp"
#include "render/render.hpp"
#include "render_support.hpp"

namespace {

namespace oc = overcooked;

struct Rgb {
    int r, g, b;
};

class OvercookedFrame : public ::testing::Test {
  protected:
    static constexpr uint32_t kW = 500, kH = 400; // cramped_room is 5 x 4 cells
    void SetUp() override {
        if (!vulkan_icd_present()) GTEST_SKIP() << "no Vulkan driver (ICD) installed";
        orrery::register_builtin_envs();
        orrery::SimOptions so;
        so.threads = 1;
        sim_ =
            std::make_unique<orrery::Simulator>(orrery::make_env_spec("overcooked", {{"layout", "cramped_room"}}), so);
        sim_->reset(1);
        frames_ = std::make_unique<orrery::render::FrameRenderer>(orrery::render::FrameOptions{kW, kH, {}});
    }

    /// Chef 0 on cell (x, y) facing east holding `held`; pot 0 with soup `soup` at tick `tick`.
    void set_state(uint32_t x, uint32_t y, uint8_t held, uint8_t soup, uint8_t tick) {
        sim_->edit_world(0, [&](orrery::Ctx& ctx) {
            oc::Player& p = ctx.at<oc::Chef, oc::Player>(0);
            p.cell = uint8_t(y * 5 + x);
            p.dir = oc::kEast;
            p.held = held;
            oc::Pots& pots = ctx.single<oc::Kitchen, oc::Pots>();
            pots.soup[0] = soup;
            pots.tick[0] = tick;
        });
        image_ = frames_->render(*sim_, 0);
    }

    /// The pixel at world point (x, y) (cell units), mapped by the renderer's own 2-D framing.
    Rgb at(float x, float y) const {
        auto t = orrery::render::frame_bounds({0.0f, 0.0f, 5.0f, 4.0f}, {}, kW, kH);
        float nx = x * t.scale[0] + t.offset[0], ny = y * t.scale[1] + t.offset[1];
        uint32_t px = uint32_t((nx * 0.5f + 0.5f) * kW), py = uint32_t((ny * 0.5f + 0.5f) * kH);
        const uint8_t* p = &image_[(size_t(py) * kW + px) * 4];
        return {p[0], p[1], p[2]};
    }

    std::unique_ptr<orrery::Simulator> sim_;
    std::unique_ptr<orrery::render::FrameRenderer> frames_;
    std::vector<uint8_t> image_;
};

void expect_color(Rgb got, Rgb want, const std::string& what) {
    EXPECT_NEAR(got.r, want.r, 2) << what;
    EXPECT_NEAR(got.g, want.g, 2) << what;
    EXPECT_NEAR(got.b, want.b, 2) << what;
}

const Rgb kChef0{40, 90, 200}, kFloor{214, 204, 182}, kOnion{236, 196, 60}, kSoup{230, 130, 40};
const Rgb kPotTile{64, 64, 70}, kBarFill{250, 200, 40}, kBarEmpty{30, 30, 30};

TEST_F(OvercookedFrame, ChefIsDrawnOnItsCellWithItsItem) {
    set_state(1, 2, oc::kOnion, 0, 0);
    expect_color(at(1.5f, 2.2f), kChef0, "chef 0 body on cell (1, 2)");
    expect_color(at(1.72f, 2.72f), kOnion, "the onion chef 0 holds");
    expect_color(at(3.5f, 2.2f), kFloor, "empty floor cell (3, 2)");
    set_state(3, 2, oc::kNothing, 0, 0);
    expect_color(at(3.5f, 2.2f), kChef0, "chef 0 after moving to (3, 2)");
    expect_color(at(1.5f, 2.2f), kFloor, "its old cell is floor again");
}

TEST_F(OvercookedFrame, PotShowsSoupAndCookingProgress) {
    const uint8_t three_onions = uint8_t(oc::kSoup | 3 << 3);
    // Pot 0 is cell (2, 0). Idle and empty: the pot tile, no bar.
    set_state(1, 2, 0, 0, 0);
    expect_color(at(2.5f, 0.3f), kPotTile, "empty pot");
    // Three onions, not cooking: the soup disc, still no bar.
    set_state(1, 2, 0, three_onions, 0);
    expect_color(at(2.5f, 0.3f), kSoup, "full idle pot shows its soup");
    expect_color(at(2.3f, 0.752f), kSoup, "no bar before cooking starts");
    // Cooking, half way (tick = cooking_tick + 1 = 11 of 20): the left of the bar is
    // filled, the right is not.
    set_state(1, 2, 0, three_onions, 11);
    expect_color(at(2.3f, 0.752f), kBarFill, "bar filled on the left half");
    expect_color(at(2.68f, 0.752f), kBarEmpty, "bar empty on the right half");
    // Ready (tick past the cook time): the bar is full.
    set_state(1, 2, 0, three_onions, 21);
    expect_color(at(2.68f, 0.752f), kBarFill, "bar full when ready");
}

} // namespace

#else
TEST(RenderOvercooked, Disabled) { GTEST_SKIP() << "render/ was not built (Vulkan development files absent)"; }
#endif
