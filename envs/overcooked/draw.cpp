// What the viewer draws for Overcooked (EnvSpec::draw): terrain by tile,
// counter items and pot soups on their cells with a cooking bar, chefs by
// index with a facing marker and the item they hold, and the names the
// inspector gives each component's elements. Data only; render/ reads it.

#include "envs/overcooked/overcooked.hpp"

#include "engine/env.hpp"

namespace overcooked {
namespace {

using orrery::Palette;
using orrery::Shape;

constexpr orrery::Rgba kOnionColor{236, 196, 60, 255}, kTomatoColor{214, 58, 44, 255};
constexpr orrery::Rgba kDishColor{240, 240, 236, 255}, kSoupColor{230, 130, 40, 255};

/// Items by kind (the low three bits of an item byte), `scale` of a cell across.
Palette items(float scale) {
    return Palette()
        .set(kOnion, {Shape::kCircle, kOnionColor, 0.5f * scale, ""})
        .set(kTomato, {Shape::kCircle, kTomatoColor, 0.5f * scale, ""})
        .set(kDish, {Shape::kRing, kDishColor, 0.6f * scale, ""})
        .set(kSoup, {Shape::kCircle, kSoupColor, 0.55f * scale, "S"});
}

} // namespace

/// Fills spec.draw for a kitchen of cfg.width x cfg.height cells.
void add_draw_table(orrery::EnvSpec& spec, const Config& cfg) {
    orrery::DrawSpec& d = spec.draw;
    d.bounds = {0.0f, 0.0f, float(cfg.width), float(cfg.height)};
    d.config_grid(orrery::config_field(&Config::tile), cfg.width, cfg.height)
        .style_of(Palette()
                      .set(kFloor, {Shape::kSquare, {214, 204, 182, 255}, 0.96f, ""})
                      .set(kCounter, {Shape::kSquare, {150, 112, 76, 255}, 0.96f, ""})
                      .set(kPot, {Shape::kSquare, {64, 64, 70, 255}, 0.96f, ""})
                      .set(kOnionSource, {Shape::kSquare, {150, 112, 76, 255}, 0.96f, "ON"})
                      .set(kTomatoSource, {Shape::kSquare, {150, 112, 76, 255}, 0.96f, "TO"})
                      .set(kDishSource, {Shape::kSquare, {150, 112, 76, 255}, 0.96f, "DI"})
                      .set(kServe, {Shape::kSquare, {70, 150, 80, 255}, 0.96f, "SERVE"}));
    d.grid<Kitchen>(orrery::elements<Counters>().masked(7), cfg.width, cfg.height)
        .on_cells(orrery::config_field(&Config::counter_cell), cfg.num_counters)
        .style_of(items(1.0f));
    // A pot's soup: its ingredient count (bits 3-4) as the label; the bar is the
    // cooking tick over the three-onion cook time (full once ready for that recipe).
    float t = float(cfg.cook_time[3] ? cfg.cook_time[3] : 20);
    Palette soups;
    for (uint32_t n = 1; n <= 3; ++n)
        soups.set(int32_t(kSoup | n << 3), {Shape::kCircle, kSoupColor, 0.7f, std::to_string(n)});
    d.grid<Kitchen>(orrery::field(&Pots::soup).masked(0x1F), cfg.width, cfg.height)
        .on_cells(orrery::config_field(&Config::pot_cell), cfg.num_pots)
        .style_of(soups)
        .progress(orrery::field(&Pots::tick, 1.0f / t, -1.0f / t));
    const std::vector<std::array<float, 2>> facing = {{0, -1}, {0, 1}, {1, 0}, {-1, 0}}; // N, S, E, W
    d.entity<Chef>()
        .at_cell(orrery::field(&Player::cell), cfg.width)
        .style_of(orrery::row_index(), Palette()
                                           .set(0, {Shape::kCircle, {40, 90, 200, 255}, 0.8f, ""})
                                           .set(1, {Shape::kCircle, {40, 160, 70, 255}, 0.8f, ""}))
        .facing(orrery::field(&Player::dir), facing);
    d.entity<Chef>()
        .at_cell(orrery::field(&Player::cell), cfg.width)
        .offset(0.22f, 0.22f)
        .style_of(orrery::field(&Player::held).masked(7), items(0.6f));
    // The inspector's names of each component's elements (the world-state panel).
    d.name_elements<Player>({"cell", "dir (0 N, 1 S, 2 E, 3 W)", "held (item byte)", "pad"});
    d.name_elements<Action>({"action (0 N, 1 S, 2 E, 3 W, 4 stay, 5 interact)"});
    d.name_elements<Reward>({"reward"});
    d.name_elements<SparseReward>({"sparse_reward"});
    d.name_elements<ShapedReward>({"shaped_reward"});
    d.name_elements<Clock>({"timestep"});
    std::vector<std::string> pots, counters;
    for (const char* what : {"soup", "tick"})
        for (uint32_t k = 0; k < kMaxPots; ++k) pots.push_back(what + std::to_string(k));
    d.name_elements<Pots>(std::move(pots));
    for (uint32_t k = 0; k < cfg.num_counters; ++k) // each counter's item byte, named by its cell
        counters.push_back("counter@" + std::to_string(cfg.counter_cell[k] % cfg.width) + "," +
                           std::to_string(cfg.counter_cell[k] / cfg.width));
    d.name_elements<Counters>(std::move(counters));
    d.keys = {{orrery::Key::kUp, kNorth},  {orrery::Key::kDown, kSouth}, {orrery::Key::kRight, kEast},
              {orrery::Key::kLeft, kWest}, {orrery::Key::kNoop, kStay},  {orrery::Key::kInteract, kInteract}};
}

} // namespace overcooked
