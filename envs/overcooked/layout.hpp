#pragma once
// Host-side Overcooked kitchens: overcooked_ai .layout files and bare grids
// parsed and checked (errors name the line), the recipe rules resolved into
// Config's per-recipe tables, and the JSON state codec. Device code never sees
// this file.

#include <array>
#include <optional>
#include <string>
#include <vector>

#include "engine/env.hpp"
#include "envs/overcooked/overcooked.hpp"

namespace overcooked {

/// One recipe quantity (cook time or value) as overcooked_ai's Recipe takes it:
/// one number for every recipe, per-ingredient amounts, or a list per order.
struct RecipeSetting {
    std::optional<double> all, onion, tomato; ///< cook_time/delivery_reward, onion_/tomato_time or _value
    std::vector<double> list;                 ///< recipe_times/recipe_values, parallel to all_orders
};

/// A kitchen as overcooked_ai describes it (OvercookedGridworld parameters).
struct Layout {
    std::string name;
    uint32_t width = 0, height = 0;
    std::vector<std::string> terrain;               ///< rows, player digits replaced by floor
    std::array<uint32_t, kNumPlayers> start{};      ///< start cell (y * width + x) per player
    std::vector<uint32_t> all_orders, bonus_orders; ///< recipe indices; empty all_orders: every recipe
    double order_bonus = 2;
    RecipeSetting time, value;
    double placement_in_pot = 3, dish_pickup = 3, soup_pickup = 5;
    bool old_dynamics = false;
};

/// The built-in layouts (envs/overcooked/layouts/*.layout), by overcooked_ai name.
const std::map<std::string, std::string>& builtin_layouts();

/// Parses the text of an overcooked_ai .layout file (a Python dict literal).
/// `source` names the file in errors, which also give the line.
Layout parse_layout_file(const std::string& text, const std::string& source);
/// Parses a bare grid: rows separated by newlines or '|'.
Layout parse_layout_grid(const std::string& grid);

/// Fills Config's cook time and sparse reward of every recipe (onions + 4 *
/// tomatoes) by overcooked_ai's Recipe rules; throws orrery::Error on
/// contradictory settings or a cook time that is not a whole tick in [0, 250].
void fill_recipes(Config& cfg, const Layout& layout);

/// All orders a kitchen accepts (every recipe when the layout lists none),
/// sorted as overcooked_ai sorts Recipe objects.
std::vector<uint32_t> effective_orders(const Layout& layout);
/// Recipe indices sorted as overcooked_ai sorts Recipe objects (by Recipe.__int__).
std::vector<uint32_t> sorted_orders(std::vector<uint32_t> orders);

/// What an ingredient name adds to a recipe index (onion 1, tomato 4); throws
/// orrery::Error naming `field` for any other name.
template <class Json> uint32_t ingredient_weight(const Json& name, const std::string& field) {
    if (name != "onion" && name != "tomato")
        throw orrery::Error(field + ": unknown ingredient " + name.dump() + "; expected \"onion\" or \"tomato\"");
    return name == "onion" ? 1 : 4;
}

/// Checks one world's kitchen in a host copy (a snapshot or checkpoint being
/// loaded) against the layout: both chefs alive on distinct floor cells facing
/// N/S/E/W, every held, counter and pot item one the rules can make, pot ticks
/// within the recipe's cook time, unused pot and counter slots empty. Throws
/// orrery::Error naming the field.
void validate_kitchen(const orrery::Ctx& ctx);

/// Throws orrery::Error naming `field` when JSON `text` nests arrays and objects
/// deeper than kMaxJsonDepth (the parser and dump() recurse).
void check_json_depth(const std::string& text, const std::string& field);
inline constexpr uint32_t kMaxJsonDepth = 64;

/// The JSON state codec (overcooked_ai OvercookedState.to_dict schema).
struct StateCodec {
    std::vector<uint32_t> all_orders, bonus_orders;
    bool featurized = false; ///< from_json also refreshes featurized_obs
    std::string to_json(orrery::Ctx& ctx) const;
    /// Replaces the world's state; throws orrery::Error naming the bad field.
    void from_json(orrery::Ctx& ctx, const std::string& text) const;
};

} // namespace overcooked
