// Reading overcooked_ai kitchens: .layout files are Python dict literals, so
// they are rewritten to JSON (strings, None/True/False, tuples, trailing
// commas, comments) and read with nlohmann-json; the grid is checked row by
// row so that every error names its line.

#include <algorithm>
#include <cctype>
#include <functional>

#include <nlohmann/json.hpp>

#include "envs/overcooked/layout.hpp"

namespace overcooked {
namespace {

using nlohmann::json;
using orrery::Error;

/// Python literal -> JSON text. Python string escapes are not interpreted
/// (layout files do not use them).
std::string python_to_json(const std::string& s, const std::string& source) {
    std::string out;
    size_t i = 0;
    while (i < s.size()) {
        char c = s[i];
        if (c == '#') {
            while (i < s.size() && s[i] != '\n') ++i;
        } else if (c == '"' || c == '\'') {
            std::string close = s.compare(i, 3, std::string(3, c)) == 0 ? std::string(3, c) : std::string(1, c);
            size_t end = s.find(close, i + close.size());
            if (end == std::string::npos) throw Error(source + ": unterminated string");
            out += json(s.substr(i + close.size(), end - i - close.size())).dump();
            i = end + close.size();
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t end = i;
            while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_')) ++end;
            std::string word = s.substr(i, end - i);
            if (word == "None") out += "null";
            else if (word == "True") out += "true";
            else if (word == "False") out += "false";
            else throw Error(source + ": unsupported Python expression '" + word + "'; expected plain literals");
            i = end;
        } else if (c == '}' || c == ']' || c == ')') {
            size_t k = out.find_last_not_of(" \t\r\n");
            if (k != std::string::npos && out[k] == ',') out.erase(k, 1); // trailing comma
            out += c == ')' ? ']' : c;
            ++i;
        } else {
            out += c == '(' ? '[' : c;
            ++i;
        }
    }
    return out;
}

std::string strip(const std::string& s) {
    size_t b = s.find_first_not_of(" \t\r"), e = s.find_last_not_of(" \t\r");
    return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

bool is_tile_symbol(char c) { return std::string("XPODTS").find(c) != std::string::npos; }

/// Checks the grid rows (overcooked_ai's _assert_valid_grid plus Orrery's
/// limits) and fills the terrain and start cells. where(r) names row r.
void read_grid(Layout& L, std::vector<std::string> rows, const std::function<std::string(size_t)>& where) {
    if (rows.empty() || rows[0].empty()) throw Error(where(0) + ": the grid is empty");
    L.height = uint32_t(rows.size());
    L.width = uint32_t(rows[0].size());
    bool seen[kNumPlayers] = {false, false};
    uint32_t pots = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].size() != L.width)
            throw Error(where(r) + ": ragged row: " + std::to_string(rows[r].size()) + " characters; expected " +
                        std::to_string(L.width) + " like the first row");
        for (size_t x = 0; x < L.width; ++x) {
            char& c = rows[r][x];
            std::string at = where(r) + ", column " + std::to_string(x + 1);
            bool border = r == 0 || r + 1 == rows.size() || x == 0 || x + 1 == L.width;
            if (c >= '3' && c <= '9')
                throw Error(at + ": player '" + std::string(1, c) +
                            "': Overcooked in Orrery has exactly 2 players (digits 1 and 2)");
            if (c != ' ' && c != '1' && c != '2' && !is_tile_symbol(c))
                throw Error(at + ": unknown symbol '" + std::string(1, c) +
                            "'; expected X, P, O, T, D, S, space or a player digit 1-2");
            if (border && !is_tile_symbol(c))
                throw Error(at + ": walkable border; the grid's edge must be X, P, O, T, D or S");
            pots += c == 'P';
            if (c != '1' && c != '2') continue;
            uint32_t p = uint32_t(c - '1');
            if (seen[p]) throw Error(at + ": player '" + std::string(1, c) + "' appears twice");
            seen[p] = true;
            L.start[p] = uint32_t(r) * L.width + uint32_t(x);
            c = ' ';
        }
    }
    if (size_t(L.width) * L.height > kMaxCells)
        throw Error(where(0) + ": the grid is " + std::to_string(L.width) + " x " + std::to_string(L.height) +
                    "; Overcooked in Orrery supports at most " + std::to_string(kMaxCells) + " cells");
    for (uint32_t p = 0; p < kNumPlayers; ++p)
        if (!seen[p]) throw Error(where(0) + ": no player '" + std::to_string(p + 1) + "' in the grid; expected digits 1 and 2");
    if (pots > kMaxPots)
        throw Error(where(0) + ": " + std::to_string(pots) + " pots; at most " + std::to_string(kMaxPots));
    std::string all;
    for (const std::string& row : rows) all += row;
    for (const char* need : {"P", "D", "S", "OT"})
        if (all.find_first_of(need) == std::string::npos)
            throw Error(where(0) + ": the grid has no '" + std::string(need).substr(0, 1) +
                        (need[1] ? "' or 'T'" : "'") + "; overcooked_ai requires at least one");
    L.terrain = std::move(rows);
}

uint32_t read_recipe(const json& order, const std::string& field) {
    if (!order.is_object() || !order.contains("ingredients") || !order["ingredients"].is_array())
        throw Error(field + ": expected {\"ingredients\": [...]}");
    const json& list = order["ingredients"];
    if (list.empty() || list.size() > 3) throw Error(field + ".ingredients: expected 1 to 3 ingredients");
    uint32_t recipe = 0;
    for (const json& name : list) {
        if (name == "onion") recipe += 1;
        else if (name == "tomato") recipe += 4;
        else throw Error(field + ".ingredients: unknown ingredient " + name.dump() + "; expected \"onion\" or \"tomato\"");
    }
    return recipe;
}

std::vector<uint32_t> read_orders(const json& list, const std::string& field) {
    if (list.is_null()) return {};
    if (!list.is_array()) throw Error(field + ": expected a list of orders");
    std::vector<uint32_t> out;
    for (size_t i = 0; i < list.size(); ++i) {
        uint32_t r = read_recipe(list[i], field + "[" + std::to_string(i) + "]");
        if (std::count(out.begin(), out.end(), r)) throw Error(field + ": order " + list[i].dump() + " is listed twice");
        out.push_back(r);
    }
    return out;
}

double read_number(const json& v, const std::string& field) {
    if (!v.is_number()) throw Error(field + ": expected a number, got " + v.dump());
    return v.get<double>();
}

void read_shaping(Layout& L, const json& v, const std::string& source) {
    if (v.is_null()) return;
    if (!v.is_object()) throw Error(source + ": rew_shaping_params: expected a dict or None");
    for (auto& [key, value] : v.items()) {
        std::string field = source + ": rew_shaping_params." + key;
        double x = read_number(value, field);
        if (key == "PLACEMENT_IN_POT_REW") L.placement_in_pot = x;
        else if (key == "DISH_PICKUP_REWARD") L.dish_pickup = x;
        else if (key == "SOUP_PICKUP_REWARD") L.soup_pickup = x;
        else if (x != 0) throw Error(field + " = " + value.dump() + ": only 0 is supported (distance shaping is not implemented)");
    }
}

void read_setting(Layout& L, const std::string& key, const json& v, const std::string& source) {
    std::string field = source + ": " + key;
    std::map<std::string, std::optional<double>*> numbers = {
        {"cook_time", &L.cook_time},       {"delivery_reward", &L.delivery_reward},
        {"onion_value", &L.onion_value},   {"tomato_value", &L.tomato_value},
        {"onion_time", &L.onion_time},     {"tomato_time", &L.tomato_time}};
    if (numbers.count(key)) *numbers[key] = read_number(v, field);
    else if (key == "start_all_orders") L.all_orders = read_orders(v, field);
    else if (key == "start_bonus_orders") L.bonus_orders = read_orders(v, field);
    else if (key == "rew_shaping_params") read_shaping(L, v, source);
    else if (key == "order_bonus") L.order_bonus = read_number(v, field);
    else if (key == "old_dynamics" && v.is_boolean()) L.old_dynamics = v.get<bool>();
    else if (key == "num_items_for_soup" && v == 3) return;
    else if (key == "recipe_values" || key == "recipe_times") {
        if (!v.is_array()) throw Error(field + ": expected a list of numbers");
        std::vector<double>& out = key == "recipe_values" ? L.recipe_values : L.recipe_times;
        for (size_t i = 0; i < v.size(); ++i) out.push_back(read_number(v[i], field + "[" + std::to_string(i) + "]"));
    } else {
        throw Error(field + " = " + v.dump() + " is not supported; expected grid, start_all_orders, "
                    "start_bonus_orders, rew_shaping_params, cook_time, delivery_reward, onion_/tomato_value, "
                    "onion_/tomato_time, recipe_values, recipe_times, order_bonus, old_dynamics, num_items_for_soup=3");
    }
}

/// Line (1-based) of the grid's first row in a .layout file.
size_t grid_line(const std::string& text) {
    size_t key = text.find("grid");
    size_t quote = key == std::string::npos ? 0 : text.find_first_of("\"'", key + 5);
    return size_t(std::count(text.begin(), text.begin() + long(std::min(quote, text.size())), '\n')) + 1;
}

} // namespace

Layout parse_layout_file(const std::string& text, const std::string& source) {
    json dict;
    try {
        dict = json::parse(python_to_json(text, source));
    } catch (const json::exception& e) {
        throw Error(source + ": not a valid layout dict (" + e.what() + ")");
    }
    if (!dict.is_object() || !dict.contains("grid") || !dict["grid"].is_string())
        throw Error(source + ": expected a dict with a \"grid\" string");
    Layout L;
    std::vector<std::string> rows;
    std::string grid = dict["grid"].get<std::string>();
    for (size_t b = 0, e; b <= grid.size(); b = e + 1) {
        e = std::min(grid.find('\n', b), grid.size());
        rows.push_back(strip(grid.substr(b, e - b)));
    }
    size_t first = grid_line(text);
    read_grid(L, rows, [&](size_t r) { return source + " line " + std::to_string(first + r); });
    for (auto& [key, value] : dict.items())
        if (key != "grid") read_setting(L, key, value, source);
    if (L.recipe_values.size() && L.recipe_values.size() != L.all_orders.size())
        throw Error(source + ": recipe_values has " + std::to_string(L.recipe_values.size()) +
                    " entries; expected one per start_all_orders entry (" + std::to_string(L.all_orders.size()) + ")");
    if (L.recipe_times.size() && L.recipe_times.size() != L.all_orders.size())
        throw Error(source + ": recipe_times has " + std::to_string(L.recipe_times.size()) +
                    " entries; expected one per start_all_orders entry (" + std::to_string(L.all_orders.size()) + ")");
    return L;
}

Layout parse_layout_grid(const std::string& grid) {
    char sep = grid.find('\n') == std::string::npos && grid.find('|') != std::string::npos ? '|' : '\n';
    std::vector<std::string> rows;
    for (size_t b = 0, e; b <= grid.size(); b = e + 1) {
        e = std::min(grid.find(sep, b), grid.size());
        rows.push_back(strip(grid.substr(b, e - b)));
    }
    while (!rows.empty() && rows.back().empty()) rows.pop_back();
    size_t skipped = 0;
    while (!rows.empty() && rows.front().empty()) rows.erase(rows.begin()), ++skipped;
    Layout L;
    L.name = "layout_grid";
    L.all_orders = {3}; // the classic kitchens' one order, 3 onions (so old_dynamics works too)
    read_grid(L, rows, [&](size_t r) { return "layout_grid line " + std::to_string(skipped + r + 1); });
    return L;
}

uint32_t recipe_sort_key(uint32_t recipe) {
    uint32_t onions = recipe % 4, tomatoes = recipe / 4;
    return (onions && tomatoes ? recipe * 16 : 0) + recipe;
}

std::vector<uint32_t> effective_orders(const Layout& L) {
    std::vector<uint32_t> out = L.all_orders;
    if (out.empty())
        for (uint32_t r = 0; r < kNumRecipes; ++r)
            if (r % 4 + r / 4 >= 1 && r % 4 + r / 4 <= 3) out.push_back(r);
    std::sort(out.begin(), out.end(), [](uint32_t a, uint32_t b) { return recipe_sort_key(a) < recipe_sort_key(b); });
    return out;
}

RecipeTables resolve_recipes(const Layout& L) {
    auto both = [&](const auto& a, const auto& b, const char* what) {
        if (a.has_value() != b.has_value()) throw Error(L.name + ": must specify both onion_" + what + " and tomato_" + what);
    };
    both(L.onion_time, L.tomato_time, "time");
    both(L.onion_value, L.tomato_value, "value");
    if ((L.tomato_value && (L.delivery_reward || L.recipe_values.size())) || (L.delivery_reward && L.recipe_values.size()))
        throw Error(L.name + ": delivery_reward, recipe_values and onion_/tomato_value exclude each other");
    if ((L.tomato_time && (L.cook_time || L.recipe_times.size())) || (L.cook_time && L.recipe_times.size()))
        throw Error(L.name + ": cook_time, recipe_times and onion_/tomato_time exclude each other");
    auto truthy = [](const std::optional<double>& v) { return v && *v != 0; }; // Python's `if x:`
    std::vector<uint32_t> orders = effective_orders(L);
    RecipeTables t;
    for (uint32_t r = 0; r < kNumRecipes; ++r) {
        double onions = r % 4, tomatoes = r / 4;
        auto listed = std::find(L.all_orders.begin(), L.all_orders.end(), r);
        size_t at = size_t(listed - L.all_orders.begin());
        if (truthy(L.cook_time)) t.time[r] = *L.cook_time;
        else if (listed != L.all_orders.end() && at < L.recipe_times.size()) t.time[r] = L.recipe_times[at];
        else if (truthy(L.onion_time) && truthy(L.tomato_time)) t.time[r] = onions * *L.onion_time + tomatoes * *L.tomato_time;
        else t.time[r] = 20;
        double value = 20;
        if (truthy(L.delivery_reward)) value = *L.delivery_reward;
        else if (listed != L.all_orders.end() && at < L.recipe_values.size()) value = L.recipe_values[at];
        else if (truthy(L.onion_value) && truthy(L.tomato_value)) value = onions * *L.onion_value + tomatoes * *L.tomato_value;
        bool ordered = std::count(orders.begin(), orders.end(), r) > 0;
        bool bonus = std::count(L.bonus_orders.begin(), L.bonus_orders.end(), r) > 0;
        t.delivery[r] = ordered ? value * (bonus ? L.order_bonus : 1) : 0;
    }
    return t;
}

} // namespace overcooked
