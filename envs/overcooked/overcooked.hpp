#pragma once
// Overcooked (overcooked_ai rules, both cooking dynamics): components and
// systems. One thread steps one world: a kitchen is a few dozen bytes of state,
// so a whole transition in one per-world system beats spreading it over nodes.
// Compiled by g++ for the CPU and by NVRTC for the GPU: no host includes here.

#include "engine/ctx.hpp"

namespace overcooked {
using namespace orrery;

inline constexpr uint32_t kMaxCells = 256; ///< width * height; a cell index fits a byte
inline constexpr uint32_t kMaxPots = 8;
inline constexpr uint32_t kNumPlayers = 2;
inline constexpr uint32_t kNumChannels = 26; ///< lossless_state_encoding layers
inline constexpr uint32_t kNumRecipes = 16;  ///< onions + 4 * tomatoes, each 0..3
inline constexpr uint32_t kUrgencySteps = 40;

enum : int32_t { kNorth = 0, kSouth = 1, kEast = 2, kWest = 3, kStay = 4, kInteract = 5, kNumActions = 6 };
/// Tiles, numbered so that a non-floor tile's observation channel is 9 + tile.
enum : uint8_t { kFloor = 0, kPot, kCounter, kOnionSource, kTomatoSource, kDishSource, kServe };
/// Item byte: bits 0-2 kind; for soup, bits 3-4 ingredient count and bit 5+i
/// set when ingredient i is a tomato (the order overcooked_ai reports).
enum : uint8_t { kNothing = 0, kOnion = 1, kTomato = 2, kDish = 3, kSoup = 4 };
enum : uint8_t { kStartStandard = 0, kStartRandom = 1, kStartJaxmarl = 2 };

/// Everything layout-derived, read-only during a step (ctx.config<Config>()).
struct Config {
    uint32_t horizon;
    uint8_t width, height, num_pots, old_dynamics;
    uint16_t num_cells, num_counters, num_floor;
    uint8_t start_mode, pad;
    uint8_t start_cell[kNumPlayers];
    float placement_in_pot, dish_pickup, soup_pickup; ///< shaped reward per event
    float delivery[kNumRecipes];                      ///< sparse reward per recipe (0 when not ordered)
    uint8_t cook_time[kNumRecipes];
    uint8_t tile[kMaxCells]; ///< kFloor, kCounter, ... per cell y * width + x
    uint8_t slot[kMaxCells]; ///< counter or pot index of a counter or pot cell
    uint8_t pot_cell[kMaxPots];
    uint8_t counter_cell[kMaxCells];
    uint8_t floor_cell[kMaxCells];
    uint16_t num_solid; ///< cells that are not floor (the observation's terrain)
    uint8_t solid_cell[kMaxCells];
};

struct Player {
    uint8_t cell, dir, held, pad;
};                                       // per chef: position, facing, held item
struct Action : ArrayOf<int32_t> {};     // [worlds, 2] i32, input, 0..5
struct Obs : ArrayOf<uint8_t> {};        // [worlds, 2, 26, H, W] u8
struct Reward : ArrayOf<float> {};       // [worlds, 2] f32, team sparse reward
struct SparseReward : ArrayOf<float> {}; // [worlds, 2] f32, sparse_r_by_agent
struct ShapedReward : ArrayOf<float> {}; // [worlds, 2] f32, shaped_r_by_agent
struct Clock {
    uint32_t timestep;
}; // per kitchen
struct Pots {
    uint8_t soup[kMaxPots];
    uint8_t tick[kMaxPots];
};                                        // tick = cooking_tick + 1, 0 idle
struct Counters : ArrayOf<uint8_t> {};    // [worlds, 1, counters] item per counter
struct FeaturizedObs : ArrayOf<float> {}; // [worlds, 2, 96] f32, featurized=1 only
static_assert(sizeof(Player) == 4 && sizeof(Pots) == 2 * kMaxPots && sizeof(Clock) == 4);

// Featurizer is last so the default spec, which never declares it, keeps its ids.
ORRERY_COMPONENTS(Player, Action, Obs, Reward, SparseReward, ShapedReward, Clock, Pots, Counters, FeaturizedObs);
ORRERY_ARCHETYPE(Chef, Player, Action, Obs, Reward, SparseReward, ShapedReward);
ORRERY_ARCHETYPE(Kitchen, Clock, Pots, Counters);
ORRERY_ARCHETYPE(Featurizer, FeaturizedObs); ///< one row per chef, featurized=1 only
ORRERY_ARCHETYPES(Chef, Kitchen, Featurizer);

// --- items ------------------------------------------------------------------

ORRERY_HD inline uint32_t kind_of(uint32_t item) { return item & 7u; }
ORRERY_HD inline uint32_t soup_size(uint32_t item) { return (item >> 3) & 3u; }
ORRERY_HD inline bool is_tomato_at(uint32_t item, uint32_t i) { return (item >> (5 + i)) & 1u; }
ORRERY_HD inline uint32_t tomatoes_in(uint32_t item) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < soup_size(item); ++i) n += is_tomato_at(item, i);
    return n;
}
ORRERY_HD inline uint32_t onions_in(uint32_t item) { return soup_size(item) - tomatoes_in(item); }
/// Recipe index of a soup: onions + 4 * tomatoes.
ORRERY_HD inline uint32_t recipe_of(uint32_t item) { return onions_in(item) + 4 * tomatoes_in(item); }
/// The soup `soup` (0 for an empty pot) with one more onion or tomato.
ORRERY_HD inline uint8_t with_ingredient(uint32_t soup, uint32_t ingredient) {
    uint32_t n = kind_of(soup) == kSoup ? soup_size(soup) : 0;
    uint32_t tomatoes = (soup >> 5) | (ingredient == kTomato ? 1u << n : 0u);
    return uint8_t(kSoup | ((n + 1) << 3) | (tomatoes << 5));
}

ORRERY_HD inline int32_t dir_dx(uint32_t d) { return d == kEast ? 1 : d == kWest ? -1 : 0; }
ORRERY_HD inline int32_t dir_dy(uint32_t d) { return d == kSouth ? 1 : d == kNorth ? -1 : 0; }
/// The cell next to `cell` in direction d (players stand on floor, inside the border).
ORRERY_HD inline uint32_t neighbor(const Config& cfg, uint32_t cell, uint32_t d) {
    return uint32_t(int32_t(cell) + dir_dx(d) + dir_dy(d) * int32_t(cfg.width));
}

// --- pots -------------------------------------------------------------------

ORRERY_HD inline bool pot_idle(const Pots& p, uint32_t j) { return p.tick[j] == 0; }
ORRERY_HD inline bool pot_ready(const Config& cfg, const Pots& p, uint32_t j) {
    return p.tick[j] != 0 && uint32_t(p.tick[j] - 1) >= cfg.cook_time[recipe_of(p.soup[j])];
}
/// Pots that make a dish pickup useful: ready, cooking, or idle with 1-2 ingredients.
ORRERY_HD inline uint32_t pots_wanting_dish(const Config& cfg, const Pots& p) {
    uint32_t n = 0;
    for (uint32_t j = 0; j < cfg.num_pots; ++j) {
        if (!p.soup[j]) continue;
        uint32_t size = soup_size(p.soup[j]);
        n += !pot_idle(p, j) || (size >= 1 && size <= 2);
    }
    return n;
}

/// One world's mutable state during a step, as the interact rules see it.
struct Turn {
    const Config& cfg;
    Player* chef[kNumPlayers];
    Pots& pots;
    Array<Counters> counters;
    uint32_t dish_demand; ///< pots_wanting_dish before any interact (overcooked_ai's snapshot)
    float sparse[kNumPlayers];
    float shaped[kNumPlayers];
};

ORRERY_HD inline void use_counter(Turn& t, Player& p, uint32_t cell) {
    uint8_t& slot = t.counters[t.cfg.slot[cell]];
    if (p.held && !slot) {
        slot = p.held;
        p.held = kNothing;
    } else if (!p.held && slot) {
        p.held = slot;
        slot = kNothing;
    }
}

ORRERY_HD inline bool dish_pickup_useful(const Turn& t) {
    for (uint32_t k = 0; k < t.cfg.num_counters; ++k)
        if (t.counters[k] == kDish) return false;
    uint32_t held = 0;
    for (uint32_t i = 0; i < kNumPlayers; ++i) held += t.chef[i]->held == kDish;
    return held < t.dish_demand;
}

ORRERY_HD inline void use_pot(Turn& t, uint32_t i, uint32_t cell) {
    Player& p = *t.chef[i];
    uint32_t j = t.cfg.slot[cell];
    uint8_t& soup = t.pots.soup[j];
    if (!p.held) {
        if (!t.cfg.old_dynamics && soup && pot_idle(t.pots, j)) t.pots.tick[j] = 1;
    } else if (p.held == kDish) {
        if (!soup || !pot_ready(t.cfg, t.pots, j)) return;
        p.held = soup;
        soup = kNothing;
        t.pots.tick[j] = 0;
        t.shaped[i] += t.cfg.soup_pickup;
    } else if (p.held == kOnion || p.held == kTomato) {
        bool full = soup && (!pot_idle(t.pots, j) || soup_size(soup) == 3);
        if (full) return;
        soup = with_ingredient(soup, p.held);
        p.held = kNothing;
        t.shaped[i] += t.cfg.placement_in_pot;
    }
}

/// INTERACT of player i on the tile it faces (overcooked_ai resolve_interacts).
ORRERY_HD inline void interact(Turn& t, uint32_t i) {
    Player& p = *t.chef[i];
    uint32_t cell = neighbor(t.cfg, p.cell, p.dir);
    switch (t.cfg.tile[cell]) {
    case kCounter: use_counter(t, p, cell); break;
    case kOnionSource:
        if (!p.held) p.held = kOnion;
        break;
    case kTomatoSource:
        if (!p.held) p.held = kTomato;
        break;
    case kDishSource:
        if (p.held) break;
        if (dish_pickup_useful(t)) t.shaped[i] += t.cfg.dish_pickup;
        p.held = kDish;
        break;
    case kPot: use_pot(t, i, cell); break;
    case kServe:
        if (kind_of(p.held) != kSoup) break;
        t.sparse[i] += t.cfg.delivery[recipe_of(p.held)];
        p.held = kNothing;
        break;
    default: break;
    }
}

/// Simultaneous moves: a blocked move only turns; if two players would share a
/// cell or swap cells, nobody moves (turns still apply).
ORRERY_HD inline void move_players(const Config& cfg, Player* chef[], const int32_t action[]) {
    uint32_t to[kNumPlayers];
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        Player& p = *chef[i];
        to[i] = p.cell;
        if (action[i] > kWest) continue;
        p.dir = uint8_t(action[i]);
        uint32_t next = neighbor(cfg, p.cell, p.dir);
        if (cfg.tile[next] == kFloor) to[i] = next;
    }
    bool same = to[0] == to[1];
    bool swap = to[0] == chef[1]->cell && to[1] == chef[0]->cell;
    if (same || swap) return;
    for (uint32_t i = 0; i < kNumPlayers; ++i) chef[i]->cell = uint8_t(to[i]);
}

/// Environment effects: old dynamics start full idle pots, then cooking pots tick.
ORRERY_HD inline void tick_pots(const Config& cfg, Pots& pots) {
    for (uint32_t j = 0; j < cfg.num_pots; ++j) {
        if (!pots.soup[j]) continue;
        if (cfg.old_dynamics && pot_idle(pots, j) && soup_size(pots.soup[j]) == 3) pots.tick[j] = 1;
        if (!pot_idle(pots, j) && !pot_ready(cfg, pots, j)) pots.tick[j] += 1;
    }
}

template <class T> ORRERY_HD Array<T> chef_array(const Ctx& ctx, uint32_t row) {
    return ctx.template array_at<T>(archetype_id<Chef>, row);
}

/// Init: both chefs at their start cells (standard: facing north; random:
/// distinct uniform floor cells facing north; jaxmarl: JaxMARL's cells, random facing).
ORRERY_SYSTEM void start_kitchen(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(1);
    uint32_t cells[kNumPlayers] = {cfg.start_cell[0], cfg.start_cell[1]};
    if (cfg.start_mode == kStartRandom) {
        uint32_t a = rng.below(cfg.num_floor), b = rng.below(cfg.num_floor - 1u);
        cells[0] = cfg.floor_cell[a];
        cells[1] = cfg.floor_cell[b >= a ? b + 1 : b];
    }
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        Entity e = ctx.create<Chef>();
        if (e.is_null()) return; // the engine recorded kCapacityOverflow
        Player& p = *ctx.get<Player>(e);
        p.cell = uint8_t(cells[i]);
        p.dir = cfg.start_mode == kStartJaxmarl ? uint8_t(rng.below(4)) : uint8_t(kNorth);
    }
}

/// One overcooked_ai transition: interacts (player 0 then 1, pre-move state),
/// movement, environment effects; per-agent rewards; truncation at the horizon.
ORRERY_SYSTEM void step_kitchen(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Pots& pots = ctx.single<Kitchen, Pots>();
    Turn t{cfg,
           {&ctx.at<Chef, Player>(0), &ctx.at<Chef, Player>(1)},
           pots,
           ctx.array_at<Counters>(archetype_id<Kitchen>, 0),
           pots_wanting_dish(cfg, pots),
           {0, 0},
           {0, 0}};
    int32_t action[kNumPlayers];
    for (uint32_t i = 0; i < kNumPlayers; ++i) action[i] = chef_array<Action>(ctx, i)[0];
    for (uint32_t i = 0; i < kNumPlayers; ++i)
        if (action[i] == kInteract) interact(t, i);
    move_players(cfg, t.chef, action);
    tick_pots(cfg, pots);
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        chef_array<Reward>(ctx, i)[0] = t.sparse[0] + t.sparse[1];
        chef_array<SparseReward>(ctx, i)[0] = t.sparse[i];
        chef_array<ShapedReward>(ctx, i)[0] = t.shaped[i];
    }
    Clock& clock = ctx.single<Kitchen, Clock>();
    clock.timestep += 1;
    if (clock.timestep >= cfg.horizon) ctx.truncate();
}

// --- observation --------------------------------------------------------------

/// Sets byte `at` of both chefs' observations: layers 10-25 (terrain, objects,
/// urgency) are the same for both players.
ORRERY_HD inline void put_both(uint8_t* const obs[], uint32_t at, uint8_t v) {
    obs[0][at] = v;
    obs[1][at] = v;
}

/// Adds item layers of an object lying outside a pot (held or on a counter).
ORRERY_HD inline void observe_item(uint8_t* const obs[], uint32_t plane, uint32_t cell, uint32_t item) {
    switch (kind_of(item)) {
    case kDish: put_both(obs, 22 * plane + cell, 1); break;
    case kOnion: put_both(obs, 23 * plane + cell, 1); break;
    case kTomato: put_both(obs, 24 * plane + cell, 1); break;
    case kSoup: // a soup outside a pot counts as cooked, 0 ticks left
        put_both(obs, 18 * plane + cell, uint8_t(onions_in(item)));
        put_both(obs, 19 * plane + cell, uint8_t(tomatoes_in(item)));
        put_both(obs, 21 * plane + cell, 1);
        break;
    default: break;
    }
}

/// Pot j's layers at its cell: ingredients while idle; cooking ones, time left and done otherwise.
ORRERY_HD inline void observe_pot(const Config& cfg, const Pots& pots, uint8_t* const obs[], uint32_t plane,
                                  uint32_t j) {
    uint32_t soup = pots.soup[j], cell = cfg.pot_cell[j];
    if (!soup) return;
    if (pot_idle(pots, j)) {
        put_both(obs, 16 * plane + cell, uint8_t(onions_in(soup)));
        put_both(obs, 17 * plane + cell, uint8_t(tomatoes_in(soup)));
        return;
    }
    put_both(obs, 18 * plane + cell, uint8_t(onions_in(soup)));
    put_both(obs, 19 * plane + cell, uint8_t(tomatoes_in(soup)));
    put_both(obs, 20 * plane + cell, uint8_t(cfg.cook_time[recipe_of(soup)] - (pots.tick[j] - 1)));
    put_both(obs, 21 * plane + cell, pot_ready(cfg, pots, j) ? 1 : 0);
}

/// Lossless 26-channel encoding per player, [26, H, W], the observer's layers
/// first. The engine has zeroed both chefs' observations (Output::kClearedEachStep);
/// this writes the non-zero cells: each lane takes every lanes-th of the solid
/// cells (terrain, counter items, pots), then the chefs and the urgency plane,
/// so lanes write disjoint bytes. The shared layers (10-25) are written to both
/// chefs as they are found: one pass, with no copy between chefs after it.
ORRERY_SYSTEM void observe_kitchen(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t plane = cfg.num_cells, solid = cfg.num_solid;
    uint8_t* const obs[kNumPlayers] = {&chef_array<Obs>(ctx, 0)[0], &chef_array<Obs>(ctx, 1)[0]};
    // Looked up once: the stores below may alias storage, so the compiler cannot hoist these.
    const uint8_t* counters = ctx.array_at<Counters>(archetype_id<Kitchen>, 0).data;
    const Pots& pots = ctx.single<Kitchen, Pots>();
    const Player* chef[kNumPlayers] = {&ctx.at<Chef, Player>(0), &ctx.at<Chef, Player>(1)};
    for (uint32_t t = lane; t < solid + kNumPlayers + 1u; t += lanes) {
        if (t < solid) {
            const uint32_t cell = cfg.solid_cell[t], tile = cfg.tile[cell];
            put_both(obs, (9u + tile) * plane + cell, 1);
            if (tile == kCounter)
                observe_item(obs, plane, cell, counters[cfg.slot[cell]]);
            else if (tile == kPot)
                observe_pot(cfg, pots, obs, plane, cfg.slot[cell]);
        } else if (t < solid + kNumPlayers) {
            const uint32_t i = t - solid;
            const Player& p = *chef[i];
            observe_item(obs, plane, p.cell, p.held);
            obs[i][0 * plane + p.cell] = 1; // as the observer
            obs[i][(2u + p.dir) * plane + p.cell] = 1;
            obs[1 - i][1 * plane + p.cell] = 1; // as the other player
            obs[1 - i][(6u + p.dir) * plane + p.cell] = 1;
        } else {
            int64_t left = int64_t(cfg.horizon) - int64_t(ctx.single<Kitchen, Clock>().timestep);
            if (left < int64_t(kUrgencySteps))
                for (uint32_t i = 0; i < kNumPlayers; ++i) fill_bytes(obs[i] + 25 * plane, 1, plane);
        }
    }
}

/// The whole observation of one world outside a step (after a state is loaded):
/// what the engine's clearing and the observe node do in a step.
ORRERY_HD inline void observe_world(Ctx& ctx) {
    const uint32_t plane = ctx.config<Config>().num_cells;
    for (uint32_t i = 0; i < kNumPlayers; ++i) fill_bytes(&chef_array<Obs>(ctx, i)[0], 0, kNumChannels * plane);
    observe_kitchen(ctx, 0, 1);
}

// --- featurized observation (option featurized=1) -----------------------------

inline constexpr uint32_t kNumFeatures = 96;    ///< featurize_state's length for 2 players, num_pots=2
inline constexpr uint32_t kPlayerFeatures = 46; ///< one player's block of it
inline constexpr uint32_t kMaxTargets = 15;     ///< dispensers or serving cells per kind (a nibble indexes them)
/// What the planner table answers per (cell, facing): the argmin target of each kind.
enum : uint32_t { kNearOnion = 0, kNearTomato, kNearDish, kNearServe, kNearPot0, kNearPot1, kNumNear };

/// Config followed by overcooked_ai's motion-planner answers (counter_goals=[],
/// as OvercookedEnv's mlam): the default spec registers plain Config instead.
struct FeatConfig {
    Config base;
    uint8_t target[kNearServe + 1][kMaxTargets]; ///< onion, tomato, dish dispenser and serving cells, row-major
    /// Per (cell, facing), nibble n of byte n / 2: 1 + index (in target[n], or
    /// pot slot for the pots) of the closest reachable target, 0 for none.
    uint8_t near[kMaxCells][4][kNumNear / 2];
};

ORRERY_HD inline uint32_t near_of(const FeatConfig& fc, uint32_t cell, uint32_t dir, uint32_t n) {
    uint32_t k = (fc.near[cell][dir][n / 2] >> (4 * (n & 1))) & 15u;
    if (k == 0) return kMaxCells;
    return n >= kNearPot0 ? fc.base.pot_cell[k - 1] : fc.target[n][k - 1];
}

/// (dx, dy) from `from` to `to`; (0, 0) when `to` is kMaxCells (none).
ORRERY_HD inline void put_delta(const Config& cfg, float* f, uint32_t from, uint32_t to) {
    f[0] = to == kMaxCells ? 0.f : float(int32_t(to % cfg.width) - int32_t(from % cfg.width));
    f[1] = to == kMaxCells ? 0.f : float(int32_t(to / cfg.width) - int32_t(from / cfg.width));
}

/// Pot features: exists, is_empty, is_full, is_cooking, is_ready, onions, tomatoes, cook time left, dx, dy.
ORRERY_HD inline void put_pot(const Config& cfg, const Pots& pots, const Player& p, uint32_t cell, float* f) {
    for (uint32_t k = 0; k < 10; ++k) f[k] = 0;
    if (cell == kMaxCells) return;
    uint32_t j = cfg.slot[cell], soup = pots.soup[j];
    bool ready = soup && pot_ready(cfg, pots, j), cooking = soup && !pot_idle(pots, j) && !ready;
    f[0] = 1;
    f[1] = !soup;
    f[2] = ready || cooking || (soup && soup_size(soup) == 3);
    f[3] = cooking;
    f[4] = ready;
    f[5] = soup ? float(onions_in(soup)) : 0.f;
    f[6] = soup ? float(tomatoes_in(soup)) : 0.f;
    if (soup && !pot_idle(pots, j)) f[7] = float(int32_t(cfg.cook_time[recipe_of(soup)]) - int32_t(pots.tick[j] - 1));
    put_delta(cfg, f + 8, p.cell, cell);
}

/// One player's 46 features in featurize_state's order. Counters are never
/// motion goals (counter_goals=[]), so the closest soup and empty counter are
/// (0, 0) unless held.
ORRERY_HD inline void featurize_player(const FeatConfig& fc, const Pots& pots, const Player& p, float* f) {
    const Config& cfg = fc.base;
    for (uint32_t k = 0; k < kPlayerFeatures; ++k) f[k] = 0;
    f[p.dir] = 1;
    const uint32_t kind = kind_of(p.held);
    const uint8_t obj_slot[] = {0, 4, 7, 6, 5}; // kNothing, onion, tomato, dish, soup -> place in f[4..7]
    if (kind) f[obj_slot[kind]] = 1;
    const uint32_t held_kind[] = {kOnion, kTomato, kDish};
    for (uint32_t n = kNearOnion; n <= kNearDish; ++n)
        if (kind != held_kind[n]) put_delta(cfg, f + 8 + 2 * n, p.cell, near_of(fc, p.cell, p.dir, n));
    if (kind == kSoup) f[16] = float(onions_in(p.held)), f[17] = float(tomatoes_in(p.held));
    put_delta(cfg, f + 18, p.cell, near_of(fc, p.cell, p.dir, kNearServe));
    put_pot(cfg, pots, p, near_of(fc, p.cell, p.dir, kNearPot0), f + 22);
    put_pot(cfg, pots, p, near_of(fc, p.cell, p.dir, kNearPot1), f + 32);
    for (uint32_t d = 0; d < 4; ++d) f[42 + d] = cfg.tile[neighbor(cfg, p.cell, d)] != kFloor;
}

/// Init (featurized=1): the two Featurizer rows, row i for chef i.
ORRERY_SYSTEM void start_featurizer(Ctx& ctx) {
    for (uint32_t i = 0; i < kNumPlayers; ++i)
        if (ctx.create<Featurizer>().is_null()) return; // the engine recorded kCapacityOverflow
}

/// featurize_state per player: own block, the other's block, other - own position, own position.
ORRERY_SYSTEM void observe_features(Ctx& ctx) {
    const FeatConfig& fc = ctx.config<FeatConfig>();
    const Pots& pots = ctx.single<Kitchen, Pots>();
    const Player* chef[kNumPlayers] = {&ctx.at<Chef, Player>(0), &ctx.at<Chef, Player>(1)};
    float own[kNumPlayers][kPlayerFeatures];
    for (uint32_t i = 0; i < kNumPlayers; ++i) featurize_player(fc, pots, *chef[i], own[i]);
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        float* out = &ctx.array_at<FeaturizedObs>(archetype_id<Featurizer>, i)[0];
        for (uint32_t k = 0; k < kPlayerFeatures; ++k) out[k] = own[i][k], out[kPlayerFeatures + k] = own[1 - i][k];
        put_delta(fc.base, out + 2 * kPlayerFeatures, chef[i]->cell, chef[1 - i]->cell);
        put_delta(fc.base, out + 2 * kPlayerFeatures + 2, 0, chef[i]->cell);
    }
}

} // namespace overcooked
