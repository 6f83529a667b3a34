// The JSON state codec: one world <-> overcooked_ai's OvercookedState.to_dict().
// Reading checks everything a step relies on (cells, tiles, soups, one object
// per cell) and writes the world only once the whole dict is known good.

#include <algorithm>

#include <nlohmann/json.hpp>

#include "envs/overcooked/layout.hpp"

namespace overcooked {
namespace {

using Json = nlohmann::ordered_json;
using orrery::Error;

const char* kItemNames[] = {"", "onion", "tomato", "dish",
                            "soup"}; ///< by kind_of(item) (validate_kitchen keeps it < 5)

Json position(const Config& cfg, uint32_t cell) { return Json::array({cell % cfg.width, cell / cfg.width}); }

Json item_json(const Config& cfg, uint32_t item, uint32_t cell, int32_t tick) {
    Json o = {{"name", kItemNames[kind_of(item)]}, {"position", position(cfg, cell)}};
    if (kind_of(item) != kSoup) return o;
    Json ingredients = Json::array();
    for (uint32_t i = 0; i < soup_size(item); ++i)
        ingredients.push_back(
            {{"name", is_tomato_at(item, i) ? "tomato" : "onion"}, {"position", position(cfg, cell)}});
    int32_t cook = cfg.cook_time[recipe_of(item)];
    bool idle = tick < 0, ready = !idle && tick >= cook;
    o.update(Json{{"_ingredients", ingredients},
                  {"cooking_tick", tick},
                  {"is_cooking", !idle && !ready},
                  {"is_ready", ready},
                  {"is_idle", idle},
                  {"cook_time", idle ? -1 : cook},
                  {"_cooking_tick", tick}});
    return o;
}

/// A soup outside a pot is always cooked: its tick is its recipe's cook time.
int32_t loose_tick(const Config& cfg, uint32_t item) {
    return kind_of(item) == kSoup ? int32_t(cfg.cook_time[recipe_of(item)]) : -1;
}

Json orders_json(const std::vector<uint32_t>& orders) {
    Json out = Json::array();
    for (uint32_t r : orders) {
        std::vector<std::string> names(r % 4, "onion");
        names.insert(names.end(), r / 4, "tomato");
        out.push_back({{"ingredients", names}});
    }
    return out;
}

// --- reading ------------------------------------------------------------------

const Json& need(const Json& o, const char* key, const std::string& field) {
    if (!o.is_object() || !o.contains(key)) throw Error(field + ": missing \"" + key + "\"");
    return o[key];
}

int64_t integer(const Json& v, const std::string& field) {
    if (!v.is_number_integer()) throw Error(field + ": expected an integer, got " + v.dump());
    return v.get<int64_t>();
}

uint32_t read_cell(const Config& cfg, const Json& v, const std::string& field) {
    if (!v.is_array() || v.size() != 2) throw Error(field + ": expected [x, y], got " + v.dump());
    int64_t x = integer(v[0], field + "[0]"), y = integer(v[1], field + "[1]");
    if (x < 0 || y < 0 || x >= cfg.width || y >= cfg.height)
        throw Error(field + " = " + v.dump() + " is off the grid; expected 0 <= x < " + std::to_string(cfg.width) +
                    ", 0 <= y < " + std::to_string(cfg.height));
    return uint32_t(y * cfg.width + x);
}

/// An object read from the state; tick is the cooking_tick of a soup, else -1.
struct Object {
    uint32_t cell;
    uint8_t item;
    int32_t tick;
};

/// Reads a soup's ingredients and cooking tick (current or legacy "state" form).
void read_soup(const Config& cfg, const Json& o, const std::string& field, Object& out) {
    uint8_t soup = 0;
    int64_t tick = -1;
    if (o.contains("state")) { // legacy: [ingredient, count, ticks]
        const Json& s = o["state"];
        if (!s.is_array() || s.size() != 3 || (s[0] != "onion" && s[0] != "tomato"))
            throw Error(field + ".state: expected [\"onion\"|\"tomato\", count, ticks]");
        int64_t n = integer(s[1], field + ".state[1]"), time = integer(s[2], field + ".state[2]");
        if (n < 1 || n > 3) throw Error(field + ".state[1]: expected 1 to 3 ingredients");
        for (int64_t i = 0; i < n; ++i) soup = with_ingredient(soup, s[0] == "onion" ? kOnion : kTomato);
        tick = time == 0 ? -1 : time >= 20 ? cfg.cook_time[recipe_of(soup)] : time;
    } else {
        const Json& list = need(o, "_ingredients", field);
        if (!list.is_array() || list.empty() || list.size() > 3)
            throw Error(field + "._ingredients: expected 1 to 3 ingredients");
        for (size_t i = 0; i < list.size(); ++i) {
            std::string at = field + "._ingredients[" + std::to_string(i) + "]";
            soup = with_ingredient(soup,
                                   ingredient_weight(need(list[i], "name", at), at + ".name") == 1 ? kOnion : kTomato);
        }
        const char* key = o.contains("cooking_tick") ? "cooking_tick" : "_cooking_tick";
        tick = o.contains(key) ? integer(o[key], field + "." + key) : -1;
    }
    int32_t cook = cfg.cook_time[recipe_of(soup)];
    if (tick < -1 || tick > cook) // checked as read, before any narrowing
        throw Error(field + ".cooking_tick = " + std::to_string(tick) + " is invalid; expected -1 (idle) to " +
                    std::to_string(cook) + " (this recipe's cook time)");
    out.tick = int32_t(tick);
    out.item = soup;
}

Object read_object(const Config& cfg, const Json& o, const std::string& field) {
    Object out{read_cell(cfg, need(o, "position", field), field + ".position"), kNothing, -1};
    const Json& name = need(o, "name", field);
    for (uint8_t item : {kOnion, kTomato, kDish})
        if (name == kItemNames[item]) out.item = item;
    if (name == "soup")
        read_soup(cfg, o, field, out);
    else if (!out.item)
        throw Error(field + ".name: unknown object " + name.dump() + "; expected onion, tomato, dish or soup");
    return out;
}

/// Objects outside pots must be what the rules can produce: soups fully cooked.
void require_loose(const Config& cfg, const Object& o, const std::string& field) {
    if (kind_of(o.item) == kSoup && o.tick != loose_tick(cfg, o.item))
        throw Error(field + ": a soup outside a pot must be cooked (cooking_tick = " +
                    std::to_string(loose_tick(cfg, o.item)) + ")");
}

Player read_player(const Config& cfg, const Json& p, const std::string& field) {
    Player out{};
    out.cell = uint8_t(read_cell(cfg, need(p, "position", field), field + ".position"));
    if (cfg.tile[out.cell] != kFloor)
        throw Error(field + ".position = " + p["position"].dump() +
                    " is not a floor cell (a player cannot stand on a wall)");
    const Json& o = need(p, "orientation", field);
    while (out.dir < 4 && o != Json::array({dir_dx(out.dir), dir_dy(out.dir)})) ++out.dir;
    if (out.dir == 4)
        throw Error(field + ".orientation = " + o.dump() + "; expected one of N (0,-1), S (0,1), E (1,0), W (-1,0)");
    if (!p.contains("held_object") || p["held_object"].is_null()) return out;
    Json copy = p["held_object"];
    if (copy.is_object() && !copy.contains("position")) copy["position"] = p["position"];
    Object held = read_object(cfg, copy, field + ".held_object");
    if (held.cell != out.cell)
        throw Error(field + ".held_object.position = " + copy["position"].dump() + "; expected the player's position");
    require_loose(cfg, held, field + ".held_object");
    out.held = held.item;
    return out;
}

/// overcooked_ai reads a missing all_orders as every recipe and a missing
/// bonus_orders as none; `absent` is that list. Orders are fixed by the layout,
/// so a dict whose orders (given or implied) differ is refused.
void check_orders(const Json& state, const char* key, const std::vector<uint32_t>& expected,
                  const std::vector<uint32_t>& absent) {
    if (!state.contains(key)) {
        if (std::is_permutation(absent.begin(), absent.end(), expected.begin(), expected.end())) return;
        throw Error(std::string(key) + ": missing; overcooked_ai reads that as " + orders_json(absent).dump() +
                    ", which differs from this kitchen's " + orders_json(expected).dump() + "; give " + key);
    }
    std::vector<uint32_t> got;
    const Json& list = state[key];
    if (!list.is_array()) throw Error(std::string(key) + ": expected a list of orders");
    for (size_t i = 0; i < list.size(); ++i) {
        std::string field = std::string(key) + "[" + std::to_string(i) + "]";
        uint32_t r = 0;
        for (const Json& name : need(list[i], "ingredients", field)) r += ingredient_weight(name, field);
        got.push_back(r);
    }
    if (!std::is_permutation(got.begin(), got.end(), expected.begin(), expected.end()))
        throw Error(std::string(key) + " = " + list.dump() + " differs from this kitchen's " +
                    orders_json(expected).dump() + "; orders are fixed by the layout");
}

/// An item as the rules make it: onion, tomato or dish exactly, or a soup of 1-3
/// ingredients with tomato bits only for those; 0 (nothing) when `empty_ok`.
bool valid_item(uint32_t item, bool empty_ok) {
    if (item == kNothing) return empty_ok;
    if (item == kOnion || item == kTomato || item == kDish) return true;
    uint32_t n = soup_size(item);
    return kind_of(item) == kSoup && n >= 1 && (item >> 5) < (1u << n);
}

void need_item(uint32_t item, bool empty_ok, const std::string& field) {
    if (!valid_item(item, empty_ok))
        throw Error(field + " = " + std::to_string(item) + " is not an item; expected " +
                    (empty_ok ? "0 (nothing), " : "") +
                    "1 (onion), 2 (tomato), 3 (dish) or a soup of 1 to 3 ingredients (kind 4)");
}

void validate_chefs(const orrery::Ctx& ctx, const Config& cfg) {
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        std::string field = "Chef row " + std::to_string(i);
        if (!ctx.storage()
                 .tables[orrery::archetype_id<Chef>]
                 .alive[ctx.slot(ctx.storage().tables[orrery::archetype_id<Chef>], i)])
            throw Error(field + ": not alive; expected both chefs alive");
        const Player& p = ctx.at<Chef, Player>(i);
        if (p.cell >= cfg.num_cells || cfg.tile[p.cell] != kFloor)
            throw Error(field + ": Player.cell = " + std::to_string(p.cell) + "; expected a floor cell of the " +
                        std::to_string(cfg.width) + " x " + std::to_string(cfg.height) + " layout");
        if (p.dir > kWest)
            throw Error(field + ": Player.dir = " + std::to_string(p.dir) + "; expected 0 to 3 (N, S, E, W)");
        need_item(p.held, true, field + ": Player.held");
    }
    if (ctx.at<Chef, Player>(0).cell == ctx.at<Chef, Player>(1).cell)
        throw Error("Chef rows 0 and 1: both chefs stand on cell " + std::to_string(ctx.at<Chef, Player>(0).cell) +
                    "; expected distinct cells");
}

} // namespace

void validate_kitchen(const orrery::Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    validate_chefs(ctx, cfg);
    const Pots& pots = ctx.single<Kitchen, Pots>();
    for (uint32_t j = 0; j < kMaxPots; ++j) {
        std::string field = "Pots.soup[" + std::to_string(j) + "]";
        if (j >= cfg.num_pots || !pots.soup[j]) {
            if (pots.soup[j] || pots.tick[j])
                throw Error(field + " = " + std::to_string(pots.soup[j]) + ", tick = " + std::to_string(pots.tick[j]) +
                            "; expected 0 and 0 for " +
                            (j >= cfg.num_pots ? "a slot past the layout's pots" : "an empty pot"));
            continue;
        }
        if (kind_of(pots.soup[j]) != kSoup || !valid_item(pots.soup[j], false))
            throw Error(field + " = " + std::to_string(pots.soup[j]) + "; expected 0 or a soup of 1 to 3 ingredients");
        uint32_t cook = cfg.cook_time[recipe_of(pots.soup[j])];
        if (pots.tick[j] > cook + 1)
            throw Error("Pots.tick[" + std::to_string(j) + "] = " + std::to_string(pots.tick[j]) +
                        "; expected 0 (idle) to " + std::to_string(cook + 1) + " (cook time + 1)");
    }
    orrery::Array<Counters> counters = ctx.array_at<Counters>(orrery::archetype_id<Kitchen>, 0);
    for (uint32_t k = 0; k < counters.size; ++k) {
        std::string field = "Counters[" + std::to_string(k) + "]";
        if (k < cfg.num_counters)
            need_item(counters[k], true, field);
        else if (counters[k])
            throw Error(field + " = " + std::to_string(counters[k]) + "; expected 0 (the layout has no such counter)");
    }
}

void check_json_depth(const std::string& text, const std::string& field) {
    uint32_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > kMaxJsonDepth)
                throw Error(field + ": nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at byte " +
                            std::to_string(i) + "; expected at most " + std::to_string(kMaxJsonDepth));
        } else if ((c == ']' || c == '}') && depth) {
            --depth;
        }
    }
}

std::string StateCodec::to_json(orrery::Ctx& ctx) const {
    const Config& cfg = ctx.config<Config>();
    Json players = Json::array();
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        const Player& p = ctx.at<Chef, Player>(i);
        Json held = p.held ? item_json(cfg, p.held, p.cell, loose_tick(cfg, p.held)) : Json(nullptr);
        players.push_back({{"position", position(cfg, p.cell)},
                           {"orientation", Json::array({dir_dx(p.dir), dir_dy(p.dir)})},
                           {"held_object", held}});
    }
    Json objects = Json::array();
    const Pots& pots = ctx.single<Kitchen, Pots>();
    for (uint32_t j = 0; j < cfg.num_pots; ++j)
        if (pots.soup[j]) objects.push_back(item_json(cfg, pots.soup[j], cfg.pot_cell[j], int32_t(pots.tick[j]) - 1));
    orrery::Array<Counters> counters = ctx.array_at<Counters>(orrery::archetype_id<Kitchen>, 0);
    for (uint32_t k = 0; k < cfg.num_counters; ++k)
        if (counters[k])
            objects.push_back(item_json(cfg, counters[k], cfg.counter_cell[k], loose_tick(cfg, counters[k])));
    Json state = {{"players", players},
                  {"objects", objects},
                  {"bonus_orders", orders_json(bonus_orders)},
                  {"all_orders", orders_json(all_orders)},
                  {"timestep", ctx.single<Kitchen, Clock>().timestep}};
    return state.dump();
}

void StateCodec::from_json(orrery::Ctx& ctx, const std::string& text) const {
    const Config& cfg = ctx.config<Config>();
    Json state;
    check_json_depth(text, "state");
    try {
        state = Json::parse(text);
    } catch (const Json::exception& e) { throw Error(std::string("state: not valid JSON (") + e.what() + ")"); }
    const Json& players = need(state, "players", "state");
    if (!players.is_array() || players.size() != kNumPlayers)
        throw Error("players: expected a list of 2 players, got " + std::to_string(players.size()));
    Player chef[kNumPlayers];
    for (uint32_t i = 0; i < kNumPlayers; ++i)
        chef[i] = read_player(cfg, players[i], "players[" + std::to_string(i) + "]");
    if (chef[0].cell == chef[1].cell) throw Error("players[1].position: both players stand on one cell");
    Pots pots{};
    std::vector<uint8_t> counters(cfg.num_counters, 0), used(cfg.num_cells, 0);
    const Json& objects = need(state, "objects", "state");
    if (!objects.is_array()) throw Error("objects: expected a list");
    for (size_t i = 0; i < objects.size(); ++i) {
        std::string field = "objects[" + std::to_string(i) + "]";
        Object o = read_object(cfg, objects[i], field);
        if (used[o.cell]++)
            throw Error(field + ".position = " + objects[i]["position"].dump() + ": two objects on one cell");
        uint8_t tile = cfg.tile[o.cell], slot = cfg.slot[o.cell];
        if (tile != kPot && tile != kCounter)
            throw Error(field + ".position = " + objects[i]["position"].dump() + " is not a counter or a pot");
        if (tile == kPot && kind_of(o.item) != kSoup) throw Error(field + ": only a soup can be in a pot");
        if (tile == kCounter) require_loose(cfg, o, field);
        (tile == kPot ? pots.soup[slot] : counters[slot]) = o.item;
        if (tile == kPot) pots.tick[slot] = uint8_t(o.tick + 1); // Pots keeps cooking_tick + 1; 0 is idle
    }
    int64_t timestep = state.contains("timestep") ? integer(state["timestep"], "timestep") : 0;
    if (timestep < 0 || timestep > int64_t(1u << 30))
        throw Error("timestep = " + std::to_string(timestep) + " is out of range");
    check_orders(state, "all_orders", all_orders, effective_orders(Layout{}));
    check_orders(state, "bonus_orders", bonus_orders, {});

    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        ctx.at<Chef, Player>(i) = chef[i];
        chef_array<Reward>(ctx, i)[0] = chef_array<SparseReward>(ctx, i)[0] = chef_array<ShapedReward>(ctx, i)[0] = 0;
    }
    ctx.single<Kitchen, Pots>() = pots;
    std::copy(counters.begin(), counters.end(), ctx.array_at<Counters>(orrery::archetype_id<Kitchen>, 0).data);
    ctx.single<Kitchen, Clock>().timestep = uint32_t(timestep);
    ctx.storage().truncated[ctx.world()] = timestep >= cfg.horizon; // as if a step had just reached it
    observe_world(ctx);
    if (featurized) observe_features(ctx);
}

} // namespace overcooked
