// Overcooked's registration table: options, the layout turned into the
// device-side Config, the task graph, the exported tensors and the JSON codec.

#include <algorithm>
#include <iterator>
#include <string>
#include <string_view>

#include "engine/files.hpp"
#include "envs/options.hpp"
#include "envs/overcooked/layout.hpp"

namespace overcooked {
namespace {

using orrery::Error;

/// Largest layout file read (the classic ones are a few hundred bytes).
constexpr uint64_t kMaxLayoutBytes = 1u << 20;

/// JaxMARL's start cells (x, y) for its versions of the classic kitchens.
const std::map<std::string, std::array<std::array<uint32_t, 2>, kNumPlayers>> kJaxmarlStarts = {
    {"cramped_room", {{{1, 1}, {3, 1}}}},
    {"asymmetric_advantages", {{{2, 3}, {5, 3}}}},
    {"coordination_ring", {{{2, 1}, {1, 2}}}},
    {"forced_coordination", {{{1, 2}, {3, 1}}}},
    {"counter_circuit_o_1order", {{{2, 1}, {6, 3}}}}};

Layout load_layout(orrery::OptionReader& opt, const orrery::EnvOptions& options) {
    std::string name = opt.str("layout", "cramped_room");
    std::string file = opt.str("layout_file", "");
    std::string grid = opt.str("layout_grid", "");
    if (options.count("layout") + options.count("layout_file") + options.count("layout_grid") > 1)
        throw Error("overcooked: give only one of layout, layout_file and layout_grid");
    if (options.count("layout_grid")) return parse_layout_grid(grid);
    Layout L;
    if (options.count("layout_file")) {
        L = parse_layout_file(orrery::read_regular_file(file, "layout_file", kMaxLayoutBytes), file);
        name = file;
    } else if (auto it = builtin_layouts().find(name); it != builtin_layouts().end()) {
        L = parse_layout_file(it->second, name + ".layout");
    } else {
        std::string names;
        for (const auto& [n, text] : builtin_layouts()) names += (names.empty() ? "" : ", ") + n;
        throw Error("overcooked: layout=" + name + " is unknown; expected one of: " + names +
                    " (or give layout_file or layout_grid)");
    }
    L.name = name;
    return L;
}

/// Tile of a terrain symbol: its place in " PXOTDS" follows the kFloor, kPot, ... order.
uint8_t tile_of(char c) {
    static_assert(kPot == 1 && kCounter == 2 && kOnionSource == 3 && kTomatoSource == 4 && kDishSource == 5 &&
                  kServe == 6);
    size_t at = std::string_view(" PXOTDS").find(c);
    return at == std::string_view::npos ? uint8_t(kFloor) : uint8_t(at);
}

void fill_cells(Config& cfg, const Layout& L) {
    cfg.width = uint8_t(L.width);
    cfg.height = uint8_t(L.height);
    cfg.num_cells = uint16_t(L.width * L.height);
    // A pot's or counter's slot is its place in pot_cell or counter_cell.
    auto append = [&](auto& cells, auto& count, uint32_t c) {
        cfg.slot[c] = uint8_t(count);
        cells[count++] = uint8_t(c);
    };
    for (uint32_t c = 0; c < cfg.num_cells; ++c) {
        uint8_t t = cfg.tile[c] = tile_of(L.terrain[c / L.width][c % L.width]);
        if (t == kPot)
            append(cfg.pot_cell, cfg.num_pots, c);
        else if (t == kCounter)
            append(cfg.counter_cell, cfg.num_counters, c);
        else if (t == kFloor)
            cfg.floor_cell[cfg.num_floor++] = uint8_t(c);
        if (t != kFloor) cfg.solid_cell[cfg.num_solid++] = uint8_t(c);
    }
}

void fill_starts(Config& cfg, const Layout& L, const std::string& mode) {
    for (uint32_t i = 0; i < kNumPlayers; ++i) cfg.start_cell[i] = uint8_t(L.start[i]);
    const std::map<std::string, uint8_t> modes = {
        {"standard", kStartStandard}, {"random", kStartRandom}, {"jaxmarl", kStartJaxmarl}};
    if (!modes.count(mode))
        throw Error("overcooked: option start=" + mode + " is invalid; expected standard, random or jaxmarl");
    cfg.start_mode = modes.at(mode);
    if (cfg.start_mode == kStartRandom && cfg.num_floor < kNumPlayers)
        throw Error("overcooked: start=random needs at least 2 floor cells");
    if (cfg.start_mode != kStartJaxmarl) return;
    auto it = kJaxmarlStarts.find(L.name);
    if (it == kJaxmarlStarts.end())
        throw Error("overcooked: start=jaxmarl is defined for the 5 classic layouts only, not " + L.name);
    for (uint32_t i = 0; i < kNumPlayers; ++i)
        cfg.start_cell[i] = uint8_t(it->second[i][1] * L.width + it->second[i][0]);
}

Config make_config(orrery::OptionReader& opt, const orrery::EnvOptions& options, Layout& L) {
    Config cfg{};
    cfg.old_dynamics = opt.flag("old_dynamics", L.old_dynamics);
    cfg.placement_in_pot = opt.f32("placement_in_pot", float(L.placement_in_pot), -1e6f, 1e6f);
    cfg.dish_pickup = opt.f32("dish_pickup", float(L.dish_pickup), -1e6f, 1e6f);
    cfg.soup_pickup = opt.f32("soup_pickup", float(L.soup_pickup), -1e6f, 1e6f);
    uint32_t cook_time = opt.u32("cook_time", 20, 1, 250);
    float soup_value = opt.f32("soup_value", 20, 1e-6f, 1e6f);
    if (options.count("cook_time")) L.time = {cook_time}; // replaces every per-recipe time of the layout
    if (options.count("soup_value")) L.value = {soup_value};
    if (cfg.old_dynamics)
        for (uint32_t r : effective_orders(L))
            if (r % 4 + r / 4 != 3)
                throw Error("overcooked: old_dynamics=true needs every order to have 3 ingredients");
    cfg.horizon = opt.u32("horizon", 400, 1, 1u << 30);
    fill_cells(cfg, L);
    fill_recipes(cfg, L);
    fill_starts(cfg, L, opt.str("start", "standard"));
    return cfg;
}

/// overcooked_ai's MotionPlanner graph from one (cell, facing) state: every
/// move turns, and steps when the target is floor. Distances by breadth-first
/// search; 0xFFFF where unreachable.
std::vector<uint16_t> motion_distances(const Config& cfg, uint32_t start) {
    std::vector<uint16_t> dist(4u * cfg.num_cells, 0xFFFF);
    std::vector<uint32_t> queue{start};
    dist[start] = 0;
    for (size_t at = 0; at < queue.size(); ++at) {
        uint32_t cell = queue[at] / 4;
        for (uint32_t d = 0; d < 4; ++d) {
            uint32_t next = neighbor(cfg, cell, d);
            uint32_t state = 4 * (cfg.tile[next] == kFloor ? next : cell) + d;
            if (dist[state] != 0xFFFF) continue;
            dist[state] = uint16_t(dist[queue[at]] + 1);
            queue.push_back(state);
        }
    }
    return dist;
}

/// min_cost_to_feature's argmin: the first target (in list order) with the
/// fewest moves to a floor cell next to it, facing it; kMaxCells for none.
uint32_t closest_target(const Config& cfg, const std::vector<uint16_t>& dist, const std::vector<uint32_t>& targets) {
    static constexpr uint32_t kOpposite[4] = {kSouth, kNorth, kWest, kEast};
    uint32_t best = kMaxCells, best_dist = 0xFFFF;
    for (uint32_t t : targets) {
        int32_t x = int32_t(t % cfg.width), y = int32_t(t / cfg.width);
        for (uint32_t d = 0; d < 4; ++d) {
            int32_t nx = x + dir_dx(d), ny = y + dir_dy(d);
            if (nx < 0 || ny < 0 || nx >= cfg.width || ny >= cfg.height) continue;
            uint32_t q = uint32_t(ny * cfg.width + nx);
            if (cfg.tile[q] != kFloor || dist[4 * q + kOpposite[d]] >= best_dist) continue;
            best = t;
            best_dist = dist[4 * q + kOpposite[d]];
        }
    }
    return best;
}

/// The planner table of FeatConfig: the closest dispenser, serving cell and two
/// closest pots from every (floor cell, facing).
FeatConfig make_feat_config(const Config& cfg) {
    FeatConfig fc{};
    fc.base = cfg;
    std::vector<uint32_t> lists[kNearServe + 1], pots(cfg.pot_cell, cfg.pot_cell + cfg.num_pots);
    const uint8_t kinds[kNearServe + 1] = {kOnionSource, kTomatoSource, kDishSource, kServe};
    const char* names[kNearServe + 1] = {"onion dispensers", "tomato dispensers", "dish dispensers", "serving cells"};
    for (uint32_t n = 0; n <= kNearServe; ++n) {
        for (uint32_t c = 0; c < cfg.num_cells; ++c)
            if (cfg.tile[c] == kinds[n]) lists[n].push_back(c);
        if (lists[n].size() > kMaxTargets)
            throw Error("overcooked: featurized=true supports at most 15 " + std::string(names[n]) +
                        "; the layout has " + std::to_string(lists[n].size()));
        std::copy(lists[n].begin(), lists[n].end(), fc.target[n]);
    }
    auto put = [&](uint32_t cell, uint32_t dir, uint32_t n, size_t index) {
        fc.near[cell][dir][n / 2] |= uint8_t((index + 1) << (4 * (n & 1)));
    };
    for (uint32_t c = 0; c < cfg.num_cells; ++c) {
        if (cfg.tile[c] != kFloor) continue;
        for (uint32_t d = 0; d < 4; ++d) {
            std::vector<uint16_t> dist = motion_distances(cfg, 4 * c + d);
            for (uint32_t n = 0; n <= kNearServe; ++n) {
                uint32_t t = closest_target(cfg, dist, lists[n]);
                if (t != kMaxCells) put(c, d, n, std::find(lists[n].begin(), lists[n].end(), t) - lists[n].begin());
            }
            uint32_t p0 = closest_target(cfg, dist, pots);
            if (p0 == kMaxCells) continue;
            put(c, d, kNearPot0, cfg.slot[p0]);
            std::vector<uint32_t> rest;
            std::copy_if(pots.begin(), pots.end(), std::back_inserter(rest), [&](uint32_t p) { return p != p0; });
            uint32_t p1 = closest_target(cfg, dist, rest);
            if (p1 != kMaxCells) put(c, d, kNearPot1, cfg.slot[p1]);
        }
    }
    return fc;
}

} // namespace

void add_draw_table(orrery::EnvSpec& spec, const Config& cfg); // envs/overcooked/draw.cpp

orrery::EnvSpec make_spec(const orrery::EnvOptions& options) {
    orrery::OptionReader opt("overcooked", options);
    Layout layout = load_layout(opt, options);
    Config cfg = make_config(opt, options, layout);
    const bool featurized = opt.flag("featurized", false);
    opt.finish();

    // Without featurized=true only the first nine components are registered, so
    // the table (schema, checkpoints, plan, kernels) is the one from before the option.
    orrery::EnvSpec spec("overcooked", "envs/overcooked/overcooked.hpp");
    if (featurized)
        spec.components(OrreryComponents{});
    else
        spec.components(orrery::List<Player, Action, Obs, Reward, SparseReward, ShapedReward, Clock, Pots, Counters>{});
    spec.dims<Action>({});
    spec.dims<Reward>({});
    spec.dims<SparseReward>({});
    spec.dims<ShapedReward>({});
    spec.dims<Obs>({kNumChannels, cfg.height, cfg.width});
    spec.dims<Counters>({std::max<uint32_t>(1, cfg.num_counters)});
    spec.archetype<Chef>(kNumPlayers);
    spec.archetype<Kitchen>(1, /*singleton=*/true);
    if (featurized)
        spec.config(make_feat_config(cfg));
    else
        spec.config(cfg);
    add_draw_table(spec, cfg);

    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(start_kitchen));
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(step_kitchen));
    // The observation spreads over lanes (the GPU gives a world its block's spare threads).
    spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(observe_kitchen));

    // What the tensors mean: one team reward (20 per soup, as overcooked_ai),
    // the actions' names, and overcooked_ai's lossless_state_encoding layer
    // names with their bounds (0/1 masks, except the ingredient counts, at most
    // 3 per soup, and the cook time left, a byte). player_0 is the observer.
    spec.facts.reward = orrery::RewardMode::kTeam;
    spec.facts.action_meanings = {"north", "south", "east", "west", "stay", "interact"};
    spec.facts.obs_names = {"player_0_loc", "player_1_loc"};
    for (int p = 0; p < 2; ++p)
        for (int d = 0; d < 4; ++d)
            spec.facts.obs_names.push_back("player_" + std::to_string(p) + "_orientation_" + std::to_string(d));
    for (const char* n : {"pot_loc", "counter_loc", "onion_disp_loc", "tomato_disp_loc", "dish_disp_loc", "serve_loc",
                          "onions_in_pot", "tomatoes_in_pot", "onions_in_soup", "tomatoes_in_soup",
                          "soup_cook_time_remaining", "soup_done", "dishes", "onions", "tomatoes", "urgency"})
        spec.facts.obs_names.push_back(n);
    spec.facts.obs_low.assign(kNumChannels, 0.0f);
    spec.facts.obs_high.assign(kNumChannels, 1.0f);
    for (int c = 16; c < 20; ++c) spec.facts.obs_high[c] = 3.0f;
    spec.facts.obs_high[20] = 255.0f;

    spec.export_input<Chef, Action>("action");
    spec.input_range("action", 0, kNumActions - 1);
    spec.export_output<Chef, Obs>("obs", Output::kClearedEachStep); // observe_kitchen writes the non-zero cells
    spec.export_output<Chef, Reward>("reward");
    spec.export_output<Chef, SparseReward>("sparse_r_by_agent");
    spec.export_output<Chef, ShapedReward>("shaped_r_by_agent");
    if (featurized) { // after the default table, so the default spec is unchanged
        spec.dims<FeaturizedObs>({kNumFeatures});
        spec.archetype<Featurizer>(kNumPlayers);
        spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(start_featurizer));
        spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD(observe_features));
        spec.export_output<Featurizer, FeaturizedObs>("featurized_obs", Output::kRewrittenEachStep);
    }

    auto codec = std::make_shared<StateCodec>(
        StateCodec{effective_orders(layout), sorted_orders(layout.bonus_orders), featurized});
    spec.state_to_json = [codec](orrery::Ctx& ctx) { return codec->to_json(ctx); };
    spec.state_from_json = [codec](orrery::Ctx& ctx, const std::string& text) { codec->from_json(ctx, text); };
    spec.validate_world = [](const orrery::Ctx& ctx) { validate_kitchen(ctx); };
    spec.info()["layout"] = layout.name;
    opt.record(spec);
    spec.info()["old_dynamics"] = cfg.old_dynamics ? "true" : "false";
    if (featurized) spec.info()["featurized"] = "true";
    std::string terrain;
    for (const std::string& row : layout.terrain) terrain += (terrain.empty() ? "" : "|") + row;
    spec.info()["terrain"] = terrain;
    return spec;
}

} // namespace overcooked
