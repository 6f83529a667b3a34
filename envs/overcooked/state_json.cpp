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

const char* kItemNames[] = {"", "onion", "tomato", "dish", "soup"}; ///< by kind_of(item)

Json position(const Config& cfg, uint32_t cell) { return Json::array({cell % cfg.width, cell / cfg.width}); }

Json item_json(const Config& cfg, uint32_t item, uint32_t cell, int32_t tick) {
    Json o = {{"name", kItemNames[kind_of(item)]}, {"position", position(cfg, cell)}};
    if (kind_of(item) != kSoup) return o;
    Json ingredients = Json::array();
    for (uint32_t i = 0; i < soup_size(item); ++i)
        ingredients.push_back({{"name", is_tomato_at(item, i) ? "tomato" : "onion"}, {"position", position(cfg, cell)}});
    int32_t cook = cfg.cook_time[recipe_of(item)];
    bool idle = tick < 0, ready = !idle && tick >= cook;
    o.update(Json{{"_ingredients", ingredients}, {"cooking_tick", tick}, {"is_cooking", !idle && !ready},
                  {"is_ready", ready}, {"is_idle", idle}, {"cook_time", idle ? -1 : cook}, {"_cooking_tick", tick}});
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
struct Object { uint32_t cell; uint8_t item; int32_t tick; };

/// Reads a soup's ingredients and cooking tick (current or legacy "state" form).
void read_soup(const Config& cfg, const Json& o, const std::string& field, Object& out) {
    uint8_t soup = 0;
    if (o.contains("state")) { // legacy: [ingredient, count, ticks]
        const Json& s = o["state"];
        if (!s.is_array() || s.size() != 3 || (s[0] != "onion" && s[0] != "tomato"))
            throw Error(field + ".state: expected [\"onion\"|\"tomato\", count, ticks]");
        int64_t n = integer(s[1], field + ".state[1]"), time = integer(s[2], field + ".state[2]");
        if (n < 1 || n > 3) throw Error(field + ".state[1]: expected 1 to 3 ingredients");
        for (int64_t i = 0; i < n; ++i) soup = with_ingredient(soup, s[0] == "onion" ? kOnion : kTomato);
        out.tick = time == 0 ? -1 : time >= 20 ? cfg.cook_time[recipe_of(soup)] : int32_t(time);
    } else {
        const Json& list = need(o, "_ingredients", field);
        if (!list.is_array() || list.empty() || list.size() > 3) throw Error(field + "._ingredients: expected 1 to 3 ingredients");
        for (size_t i = 0; i < list.size(); ++i) {
            std::string at = field + "._ingredients[" + std::to_string(i) + "]";
            soup = with_ingredient(soup, ingredient_weight(need(list[i], "name", at), at + ".name") == 1 ? kOnion : kTomato);
        }
        const char* key = o.contains("cooking_tick") ? "cooking_tick" : "_cooking_tick";
        out.tick = o.contains(key) ? int32_t(integer(o[key], field + "." + key)) : -1;
    }
    int32_t cook = cfg.cook_time[recipe_of(soup)];
    if (out.tick < -1 || out.tick > cook)
        throw Error(field + ".cooking_tick = " + std::to_string(out.tick) + " is invalid; expected -1 (idle) to " +
                    std::to_string(cook) + " (this recipe's cook time)");
    out.item = soup;
}

Object read_object(const Config& cfg, const Json& o, const std::string& field) {
    Object out{read_cell(cfg, need(o, "position", field), field + ".position"), kNothing, -1};
    const Json& name = need(o, "name", field);
    for (uint8_t item : {kOnion, kTomato, kDish})
        if (name == kItemNames[item]) out.item = item;
    if (name == "soup") read_soup(cfg, o, field, out);
    else if (!out.item) throw Error(field + ".name: unknown object " + name.dump() + "; expected onion, tomato, dish or soup");
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
        throw Error(field + ".position = " + p["position"].dump() + " is not a floor cell (a player cannot stand on a wall)");
    const Json& o = need(p, "orientation", field);
    while (out.dir < 4 && o != Json::array({dir_dx(out.dir), dir_dy(out.dir)})) ++out.dir;
    if (out.dir == 4) throw Error(field + ".orientation = " + o.dump() + "; expected one of N (0,-1), S (0,1), E (1,0), W (-1,0)");
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

void check_orders(const Json& state, const char* key, const std::vector<uint32_t>& expected) {
    if (!state.contains(key)) return;
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
        throw Error(std::string(key) + " = " + list.dump() + " differs from this kitchen's " + orders_json(expected).dump() +
                    "; orders are fixed by the layout");
}

} // namespace

std::string StateCodec::to_json(orrery::Ctx& ctx) const {
    const Config& cfg = ctx.config<Config>();
    Json players = Json::array();
    for (uint32_t i = 0; i < kNumPlayers; ++i) {
        const Player& p = ctx.at<Chef, Player>(i);
        Json held = p.held ? item_json(cfg, p.held, p.cell, loose_tick(cfg, p.held)) : Json(nullptr);
        players.push_back({{"position", position(cfg, p.cell)},
                           {"orientation", Json::array({dir_dx(p.dir), dir_dy(p.dir)})}, {"held_object", held}});
    }
    Json objects = Json::array();
    const Pots& pots = ctx.single<Kitchen, Pots>();
    for (uint32_t j = 0; j < cfg.num_pots; ++j)
        if (pots.soup[j]) objects.push_back(item_json(cfg, pots.soup[j], cfg.pot_cell[j], int32_t(pots.tick[j]) - 1));
    orrery::Array<Counters> counters = ctx.array_at<Counters>(orrery::archetype_id<Kitchen>, 0);
    for (uint32_t k = 0; k < cfg.num_counters; ++k)
        if (counters[k]) objects.push_back(item_json(cfg, counters[k], cfg.counter_cell[k], loose_tick(cfg, counters[k])));
    Json state = {{"players", players}, {"objects", objects}, {"bonus_orders", orders_json(bonus_orders)},
                  {"all_orders", orders_json(all_orders)}, {"timestep", ctx.single<Kitchen, Clock>().timestep}};
    return state.dump();
}

void StateCodec::from_json(orrery::Ctx& ctx, const std::string& text) const {
    const Config& cfg = ctx.config<Config>();
    Json state;
    try {
        state = Json::parse(text);
    } catch (const Json::exception& e) {
        throw Error(std::string("state: not valid JSON (") + e.what() + ")");
    }
    const Json& players = need(state, "players", "state");
    if (!players.is_array() || players.size() != kNumPlayers)
        throw Error("players: expected a list of 2 players, got " + std::to_string(players.size()));
    Player chef[kNumPlayers];
    for (uint32_t i = 0; i < kNumPlayers; ++i) chef[i] = read_player(cfg, players[i], "players[" + std::to_string(i) + "]");
    if (chef[0].cell == chef[1].cell) throw Error("players[1].position: both players stand on one cell");
    Pots pots{};
    std::vector<uint8_t> counters(cfg.num_counters, 0), used(cfg.num_cells, 0);
    const Json& objects = need(state, "objects", "state");
    if (!objects.is_array()) throw Error("objects: expected a list");
    for (size_t i = 0; i < objects.size(); ++i) {
        std::string field = "objects[" + std::to_string(i) + "]";
        Object o = read_object(cfg, objects[i], field);
        if (used[o.cell]++) throw Error(field + ".position = " + objects[i]["position"].dump() + ": two objects on one cell");
        uint8_t tile = cfg.tile[o.cell], slot = cfg.slot[o.cell];
        if (tile != kPot && tile != kCounter)
            throw Error(field + ".position = " + objects[i]["position"].dump() + " is not a counter or a pot");
        if (tile == kPot && kind_of(o.item) != kSoup) throw Error(field + ": only a soup can be in a pot");
        if (tile == kCounter) require_loose(cfg, o, field);
        (tile == kPot ? pots.soup[slot] : counters[slot]) = o.item;
        if (tile == kPot) pots.tick[slot] = uint8_t(o.tick + 1); // Pots keeps cooking_tick + 1; 0 is idle
    }
    int64_t timestep = state.contains("timestep") ? integer(state["timestep"], "timestep") : 0;
    if (timestep < 0 || timestep > int64_t(1u << 30)) throw Error("timestep = " + std::to_string(timestep) + " is out of range");
    check_orders(state, "all_orders", all_orders);
    check_orders(state, "bonus_orders", bonus_orders);

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
