// Reading overcooked_ai kitchens: .layout files are Python dict literals, so
// they are rewritten to JSON (strings, None/True/False, tuples, trailing
// commas, comments) and read with nlohmann-json; the grid is checked row by
// row so that every error names its line.

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string_view>

#include <nlohmann/json.hpp>

#include "envs/overcooked/layout.hpp"

namespace overcooked {
namespace {

using nlohmann::json;
using orrery::Error;

/// Python literal -> JSON text. Python string escapes are not interpreted
/// (layout files do not use them).
std::string python_to_json(const std::string& s, const std::string& source) {
    static const std::map<std::string, std::string> kWords = {{"None", "null"}, {"True", "true"}, {"False", "false"}};
    std::string out;
    for (size_t i = 0; i < s.size();) {
        char c = s[i];
        if (c == '#') {
            i = std::min(s.find('\n', i), s.size());
        } else if (c == '"' || c == '\'') {
            std::string close(s.compare(i, 3, std::string(3, c)) == 0 ? 3 : 1, c);
            size_t end = s.find(close, i + close.size());
            if (end == std::string::npos) throw Error(source + ": unterminated string");
            out += json(s.substr(i + close.size(), end - i - close.size())).dump();
            i = end + close.size();
        } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            size_t end = i;
            while (end < s.size() && (std::isalnum(static_cast<unsigned char>(s[end])) || s[end] == '_')) ++end;
            auto word = kWords.find(s.substr(i, end - i));
            if (word == kWords.end())
                throw Error(source + ": unsupported Python expression '" + s.substr(i, end - i) +
                            "'; expected plain literals");
            out += word->second;
            i = end;
        } else {
            size_t k = out.find_last_not_of(" \t\r\n");
            if ((c == '}' || c == ']' || c == ')') && k != std::string::npos && out[k] == ',')
                out.erase(k, 1); // trailing comma
            out += c == '(' ? '[' : c == ')' ? ']' : c;
            ++i;
        }
    }
    return out;
}

/// Splits `text` at `sep`; each row loses its leading and trailing spaces, tabs and '\r'.
std::vector<std::string> split_rows(const std::string& text, char sep) {
    std::vector<std::string> rows;
    for (size_t b = 0, e; b <= text.size(); b = e + 1) {
        e = std::min(text.find(sep, b), text.size());
        size_t first = text.find_first_not_of(" \t\r", b);
        rows.push_back(first < e ? text.substr(first, text.find_last_not_of(" \t\r", e - 1) + 1 - first) : "");
    }
    return rows;
}

/// The checks that need the whole grid; `all` is every cell, players included,
/// and `top` names the grid's first line.
void check_grid(const Layout& L, const std::string& all, const std::string& top) {
    if (size_t(L.width) * L.height > kMaxCells)
        throw Error(top + ": the grid is " + std::to_string(L.width) + " x " + std::to_string(L.height) +
                    "; Overcooked in Orrery supports at most " + std::to_string(kMaxCells) + " cells");
    for (uint32_t p = 0; p < kNumPlayers; ++p)
        if (all.find(char('1' + p)) == std::string::npos)
            throw Error(top + ": no player '" + std::to_string(p + 1) + "' in the grid; expected digits 1 and 2");
    if (size_t pots = size_t(std::count(all.begin(), all.end(), 'P')); pots > kMaxPots)
        throw Error(top + ": " + std::to_string(pots) + " pots; at most " + std::to_string(kMaxPots));
    for (const char* need : {"P", "D", "S", "OT"})
        if (all.find_first_of(need) == std::string::npos)
            throw Error(top + ": the grid has no '" + std::string(need).substr(0, 1) + (need[1] ? "' or 'T'" : "'") +
                        "; overcooked_ai requires at least one");
}

/// Checks the grid rows (overcooked_ai's _assert_valid_grid plus Orrery's
/// limits) and fills the terrain and start cells. Errors name `source` and the
/// line, the first row being line `first`.
void read_grid(Layout& L, std::vector<std::string> rows, const std::string& source, size_t first) {
    auto where = [&](size_t r) { return source + " line " + std::to_string(first + r); };
    if (rows.empty() || rows[0].empty()) throw Error(where(0) + ": the grid is empty");
    L.height = uint32_t(rows.size());
    L.width = uint32_t(rows[0].size());
    std::string all;
    for (size_t r = 0; r < rows.size(); ++r) {
        if (rows[r].size() != L.width)
            throw Error(where(r) + ": ragged row: " + std::to_string(rows[r].size()) + " characters; expected " +
                        std::to_string(L.width) + " like the first row");
        for (size_t x = 0; x < L.width; ++x) {
            char& c = rows[r][x];
            std::string at = where(r) + ", column " + std::to_string(x + 1), symbol = {'\'', c, '\''};
            bool border = r == 0 || r + 1 == rows.size() || x == 0 || x + 1 == L.width;
            bool tile = std::string_view("XPODTS").find(c) != std::string_view::npos;
            if (c >= '3' && c <= '9')
                throw Error(at + ": player " + symbol +
                            ": Overcooked in Orrery has exactly 2 players (digits 1 and 2)");
            if (c != ' ' && c != '1' && c != '2' && !tile)
                throw Error(at + ": unknown symbol " + symbol +
                            "; expected X, P, O, T, D, S, space or a player digit 1-2");
            if (border && !tile) throw Error(at + ": walkable border; the grid's edge must be X, P, O, T, D or S");
            if ((c == '1' || c == '2') && all.find(c) != std::string::npos)
                throw Error(at + ": player " + symbol + " appears twice");
            all += c;
            if (c != '1' && c != '2') continue;
            L.start[c - '1'] = uint32_t(r) * L.width + uint32_t(x);
            c = ' ';
        }
    }
    check_grid(L, all, where(0));
    L.terrain = std::move(rows);
}

std::vector<uint32_t> read_orders(const json& list, const std::string& field) {
    if (list.is_null()) return {};
    if (!list.is_array()) throw Error(field + ": expected a list of orders");
    std::vector<uint32_t> out;
    for (size_t i = 0; i < list.size(); ++i) {
        std::string at = field + "[" + std::to_string(i) + "]";
        if (!list[i].is_object() || !list[i].contains("ingredients") || !list[i]["ingredients"].is_array())
            throw Error(at + ": expected {\"ingredients\": [...]}");
        const json& names = list[i]["ingredients"];
        if (names.empty() || names.size() > 3) throw Error(at + ".ingredients: expected 1 to 3 ingredients");
        uint32_t recipe = 0;
        for (const json& name : names) recipe += ingredient_weight(name, at + ".ingredients");
        if (std::count(out.begin(), out.end(), recipe))
            throw Error(field + ": order " + list[i].dump() + " is listed twice");
        out.push_back(recipe);
    }
    return out;
}

double read_number(const json& v, const std::string& field) {
    if (!v.is_number()) throw Error(field + ": expected a number, got " + v.dump());
    return v.get<double>();
}

std::vector<double> read_numbers(const json& v, const std::string& field) {
    if (!v.is_array()) throw Error(field + ": expected a list of numbers");
    std::vector<double> out;
    for (size_t i = 0; i < v.size(); ++i) out.push_back(read_number(v[i], field + "[" + std::to_string(i) + "]"));
    return out;
}

void read_shaping(Layout& L, const json& v, const std::string& source) {
    if (v.is_null()) return;
    if (!v.is_object()) throw Error(source + ": rew_shaping_params: expected a dict or None");
    const std::map<std::string, double*> kept = {{"PLACEMENT_IN_POT_REW", &L.placement_in_pot},
                                                 {"DISH_PICKUP_REWARD", &L.dish_pickup},
                                                 {"SOUP_PICKUP_REWARD", &L.soup_pickup}};
    for (auto& [key, value] : v.items()) {
        std::string field = source + ": rew_shaping_params." + key;
        double x = read_number(value, field);
        if (kept.count(key))
            *kept.at(key) = x;
        else if (x != 0)
            throw Error(field + " = " + value.dump() + ": only 0 is supported (distance shaping is not implemented)");
    }
}

void read_setting(Layout& L, const std::string& key, const json& v, const std::string& source) {
    std::string field = source + ": " + key;
    const std::map<std::string, std::optional<double>*> numbers = {
        {"cook_time", &L.time.all},        {"delivery_reward", &L.value.all}, {"onion_value", &L.value.onion},
        {"tomato_value", &L.value.tomato}, {"onion_time", &L.time.onion},     {"tomato_time", &L.time.tomato}};
    if (numbers.count(key))
        *numbers.at(key) = read_number(v, field);
    else if (key == "start_all_orders")
        L.all_orders = read_orders(v, field);
    else if (key == "start_bonus_orders")
        L.bonus_orders = read_orders(v, field);
    else if (key == "rew_shaping_params")
        read_shaping(L, v, source);
    else if (key == "order_bonus")
        L.order_bonus = read_number(v, field);
    else if (key == "old_dynamics" && v.is_boolean())
        L.old_dynamics = v.get<bool>();
    else if (key == "recipe_values")
        L.value.list = read_numbers(v, field);
    else if (key == "recipe_times")
        L.time.list = read_numbers(v, field);
    else if (key != "num_items_for_soup" || v != 3)
        throw Error(field + " = " + v.dump() +
                    " is not supported; expected grid, start_all_orders, "
                    "start_bonus_orders, rew_shaping_params, cook_time, delivery_reward, onion_/tomato_value, "
                    "onion_/tomato_time, recipe_values, recipe_times, order_bonus, old_dynamics, num_items_for_soup=3");
}

/// Line (1-based) of the grid's first row in a .layout file.
size_t grid_line(const std::string& text) {
    size_t key = text.find("grid");
    size_t quote = key == std::string::npos ? 0 : text.find_first_of("\"'", key + 5);
    return size_t(std::count(text.begin(), text.begin() + long(std::min(quote, text.size())), '\n')) + 1;
}

void need_both(const RecipeSetting& s, const std::string& layout, const std::string& what) {
    if (s.onion.has_value() != s.tomato.has_value())
        throw Error(layout + ": must specify both onion_" + what + " and tomato_" + what);
}

void need_one_form(const RecipeSetting& s, const std::string& layout, const std::string& keys) {
    if ((s.tomato && (s.all || s.list.size())) || (s.all && s.list.size()))
        throw Error(layout + ": " + keys + " exclude each other");
}

/// A recipe's quantity by overcooked_ai's precedence, 20 when the layout gives
/// none; Python's `if x:` skips zeros. `orders` is parallel to s.list.
double amount(const RecipeSetting& s, uint32_t recipe, const std::vector<uint32_t>& orders) {
    size_t at = size_t(std::find(orders.begin(), orders.end(), recipe) - orders.begin());
    if (s.all && *s.all != 0) return *s.all;
    if (at < orders.size() && at < s.list.size()) return s.list[at];
    if (s.onion && *s.onion != 0 && s.tomato && *s.tomato != 0) return recipe % 4 * *s.onion + recipe / 4 * *s.tomato;
    return 20;
}

} // namespace

Layout parse_layout_file(const std::string& text, const std::string& source) {
    json dict;
    try {
        const std::string as_json = python_to_json(text, source);
        check_json_depth(as_json, source);
        dict = json::parse(as_json);
    } catch (const json::exception& e) { throw Error(source + ": not a valid layout dict (" + e.what() + ")"); }
    if (!dict.is_object() || !dict.contains("grid") || !dict["grid"].is_string())
        throw Error(source + ": expected a dict with a \"grid\" string");
    Layout L;
    read_grid(L, split_rows(dict["grid"].get<std::string>(), '\n'), source, grid_line(text));
    for (auto& [key, value] : dict.items())
        if (key != "grid") read_setting(L, key, value, source);
    for (auto [list, key] : {std::pair{&L.value.list, "recipe_values"}, {&L.time.list, "recipe_times"}})
        if (list->size() && list->size() != L.all_orders.size())
            throw Error(source + ": " + key + " has " + std::to_string(list->size()) +
                        " entries; expected one per start_all_orders entry (" + std::to_string(L.all_orders.size()) +
                        ")");
    return L;
}

Layout parse_layout_grid(const std::string& grid) {
    bool bars = grid.find('\n') == std::string::npos && grid.find('|') != std::string::npos;
    std::vector<std::string> rows = split_rows(grid, bars ? '|' : '\n');
    while (!rows.empty() && rows.back().empty()) rows.pop_back();
    size_t skipped = size_t(std::find_if(rows.begin(), rows.end(), [](auto& r) { return !r.empty(); }) - rows.begin());
    rows.erase(rows.begin(), rows.begin() + long(skipped));
    Layout L;
    L.name = "layout_grid";
    L.all_orders = {3}; // the classic kitchens' one order, 3 onions (so old_dynamics works too)
    read_grid(L, rows, "layout_grid", skipped + 1);
    return L;
}

std::vector<uint32_t> sorted_orders(std::vector<uint32_t> orders) {
    // overcooked_ai's Recipe.__int__: a recipe with both onions and tomatoes
    // sorts after every single-ingredient one.
    auto key = [](uint32_t r) { return (r % 4 && r / 4 ? r * 16 : 0) + r; };
    std::sort(orders.begin(), orders.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    return orders;
}

std::vector<uint32_t> effective_orders(const Layout& L) {
    std::vector<uint32_t> out = L.all_orders;
    if (out.empty())
        for (uint32_t r = 0; r < kNumRecipes; ++r)
            if (r % 4 + r / 4 >= 1 && r % 4 + r / 4 <= 3) out.push_back(r);
    return sorted_orders(out);
}

void fill_recipes(Config& cfg, const Layout& L) {
    need_both(L.time, L.name, "time");
    need_both(L.value, L.name, "value");
    need_one_form(L.value, L.name, "delivery_reward, recipe_values and onion_/tomato_value");
    need_one_form(L.time, L.name, "cook_time, recipe_times and onion_/tomato_time");
    std::vector<uint32_t> orders = effective_orders(L);
    for (uint32_t r = 0; r < kNumRecipes; ++r) {
        if (r % 4 + r / 4 == 0 || r % 4 + r / 4 > 3) continue;
        double time = amount(L.time, r, L.all_orders);
        if (time != std::floor(time) || time < 0 || time > 250)
            throw Error("overcooked: the cook time of recipe (" + std::to_string(r % 4) + " onions, " +
                        std::to_string(r / 4) + " tomatoes) is " + std::to_string(time) +
                        "; expected a whole number of ticks in [0, 250]");
        bool ordered = std::count(orders.begin(), orders.end(), r) > 0;
        bool bonus = std::count(L.bonus_orders.begin(), L.bonus_orders.end(), r) > 0;
        cfg.cook_time[r] = uint8_t(time);
        cfg.delivery[r] = ordered ? float(amount(L.value, r, L.all_orders) * (bonus ? L.order_bonus : 1)) : 0;
    }
}

} // namespace overcooked
