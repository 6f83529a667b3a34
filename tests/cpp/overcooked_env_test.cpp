// Overcooked beyond the reference trajectories: tensor shapes, start modes,
// options, the JSON state codec's checks and malformed layouts. Every bad
// input must raise orrery::Error naming the line or field and leave the
// simulator's state untouched.

#include <gtest/gtest.h>

#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {

using nlohmann::json;
const std::string kDataDir = std::string(ORRERY_SOURCE_DIR) + "/tests/data/overcooked/";

std::unique_ptr<orrery::Simulator> make(orrery::EnvOptions opts, uint32_t worlds = 2) {
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.num_worlds = worlds;
    o.threads = 2;
    return std::make_unique<orrery::Simulator>(orrery::make_env_spec("overcooked", opts), o);
}

/// The message of the orrery::Error that `f` throws ("" if it does not throw).
template <class F> std::string error_of(F&& f) {
    try {
        f();
    } catch (const orrery::Error& e) { return e.what(); }
    return "";
}

std::string layout_error(const std::string& grid) {
    return error_of([&] { make({{"layout_grid", grid}}); });
}

int32_t* actions(orrery::Simulator& sim) { return static_cast<int32_t*>(sim.tensor("action").data); }
const float* floats(orrery::Simulator& sim, const char* name) {
    return static_cast<const float*>(sim.tensor(name).data);
}

TEST(Overcooked, TensorShapes) {
    auto sim = make({{"layout", "asymmetric_advantages"}}, 3);
    EXPECT_EQ(sim->tensor("obs").shape, (std::vector<int64_t>{3, 2, 26, 5, 9}));
    EXPECT_EQ(sim->tensor("action").shape, (std::vector<int64_t>{3, 2}));
    for (const char* name : {"reward", "sparse_r_by_agent", "shaped_r_by_agent"})
        EXPECT_EQ(sim->tensor(name).shape, (std::vector<int64_t>{3, 2})) << name;
    EXPECT_EQ(sim->tensor("obs").dtype, orrery::DType::kU8);
}

TEST(Overcooked, StandardStartFacesNorthAtTheLayoutDigits) {
    auto sim = make({{"layout", "forced_coordination"}});
    json s = json::parse(sim->get_state_json(1));
    EXPECT_EQ(s["players"][0]["position"], json::array({3, 1}));
    EXPECT_EQ(s["players"][1]["position"], json::array({1, 2}));
    for (int p = 0; p < 2; ++p) {
        EXPECT_EQ(s["players"][p]["orientation"], json::array({0, -1}));
        EXPECT_TRUE(s["players"][p]["held_object"].is_null());
    }
    EXPECT_TRUE(s["objects"].empty());
    EXPECT_EQ(s["timestep"], 0);
}

TEST(Overcooked, RandomStartsUseDistinctFloorCellsAndFollowTheSeed) {
    auto sim = make({{"layout", "counter_circuit_o_1order"}, {"start", "random"}}, 64);
    std::set<std::string> seen;
    std::vector<std::string> first;
    for (uint32_t w = 0; w < 64; ++w) {
        json s = json::parse(sim->get_state_json(w));
        EXPECT_NE(s["players"][0]["position"], s["players"][1]["position"]);
        EXPECT_EQ(s["players"][0]["orientation"], json::array({0, -1}));
        seen.insert(s["players"].dump());
        first.push_back(s["players"].dump());
    }
    EXPECT_GT(seen.size(), 16u); // 14 floor cells, 182 ordered pairs
    sim->reset(0);
    for (uint32_t w = 0; w < 64; ++w) EXPECT_EQ(json::parse(sim->get_state_json(w))["players"].dump(), first[w]);
    sim->reset(1);
    size_t same = 0;
    for (uint32_t w = 0; w < 64; ++w) same += json::parse(sim->get_state_json(w))["players"].dump() == first[w];
    EXPECT_LT(same, 64u);
}

TEST(Overcooked, JaxmarlStartsUseItsCellsAndRandomFacing) {
    auto sim = make({{"layout", "cramped_room"}, {"start", "jaxmarl"}}, 32);
    std::set<std::string> facings;
    for (uint32_t w = 0; w < 32; ++w) {
        json s = json::parse(sim->get_state_json(w));
        EXPECT_EQ(s["players"][0]["position"], json::array({1, 1}));
        EXPECT_EQ(s["players"][1]["position"], json::array({3, 1}));
        facings.insert(s["players"][0]["orientation"].dump());
    }
    EXPECT_EQ(facings.size(), 4u);
    EXPECT_NE(error_of([] {
                  make({{"layout_grid", "XXPXX|O12 O|X   X|XDXSX"}, {"start", "jaxmarl"}});
              }).find("classic"),
              std::string::npos);
}

TEST(Overcooked, HorizonTruncatesAndShapingIsConfigurable) {
    auto sim = make({{"layout", "cramped_room"}, {"horizon", "3"}, {"placement_in_pot", "7"}}, 1);
    // Player 0 holds an onion, facing the pot at (2,0) from (2,1).
    sim->set_state_json(0, R"({"players":[{"position":[2,1],"orientation":[0,-1],
        "held_object":{"name":"onion","position":[2,1]}},{"position":[3,2],"orientation":[0,-1],"held_object":null}],
        "objects":[],"all_orders":[{"ingredients":["onion","onion","onion"]}],"timestep":1})");
    actions(*sim)[0] = 5;
    actions(*sim)[1] = 4;
    sim->step();
    EXPECT_EQ(floats(*sim, "shaped_r_by_agent")[0], 7.0f);
    EXPECT_EQ(floats(*sim, "shaped_r_by_agent")[1], 0.0f);
    const uint8_t* truncated = static_cast<const uint8_t*>(sim->tensor("truncated").data);
    EXPECT_EQ(truncated[0], 0);
    sim->step();
    EXPECT_EQ(truncated[0], 1);
    EXPECT_EQ(json::parse(sim->get_state_json(0))["timestep"], 3);
}

TEST(Overcooked, SetStateRefreshesTheObservation) {
    auto sim = make({{"layout", "cramped_room"}}, 1);
    sim->set_state_json(0, R"({"players":[{"position":[1,1],"orientation":[1,0],"held_object":null},
        {"position":[3,2],"orientation":[0,1],"held_object":{"name":"dish","position":[3,2]}}],
        "objects":[{"name":"onion","position":[0,2]}],"all_orders":[{"ingredients":["onion","onion","onion"]}],
        "timestep":370})");
    const uint8_t* obs = static_cast<const uint8_t*>(sim->tensor("obs").data);
    auto at = [&](int p, int c, int y, int x) { return obs[((p * 26 + c) * 4 + y) * 5 + x]; };
    EXPECT_EQ(at(0, 0, 1, 1), 1);  // self
    EXPECT_EQ(at(0, 4, 1, 1), 1);  // facing east
    EXPECT_EQ(at(1, 0, 2, 3), 1);  // player 1 sees itself first
    EXPECT_EQ(at(1, 8, 1, 1), 1);  // and the other facing east
    EXPECT_EQ(at(0, 23, 2, 0), 1); // the onion on the counter
    EXPECT_EQ(at(0, 22, 2, 3), 1); // the held dish
    EXPECT_EQ(at(0, 25, 0, 0), 1); // urgency: 30 steps left
}

TEST(Overcooked, StateRoundTripsBetweenWorlds) {
    auto sim = make({{"layout", "coordination_ring"}}, 2);
    const char* state =
        R"({"players":[{"position":[1,1],"orientation":[-1,0],"held_object":{"name":"soup","position":[1,1],
        "_ingredients":[{"name":"onion","position":[1,1]},{"name":"onion","position":[1,1]},{"name":"onion","position":[1,1]}],
        "cooking_tick":20,"is_cooking":false,"is_ready":true,"is_idle":false,"cook_time":20,"_cooking_tick":20}},
        {"position":[3,3],"orientation":[0,1],"held_object":null}],
        "objects":[{"name":"soup","position":[3,0],"_ingredients":[{"name":"onion","position":[3,0]}],"cooking_tick":-1},
                   {"name":"soup","state":["onion",3,5],"position":[4,1]},{"name":"dish","position":[0,1]}],
        "bonus_orders":[],"all_orders":[{"ingredients":["onion","onion","onion"]}],"timestep":12})";
    sim->set_state_json(0, state);
    sim->set_state_json(1, sim->get_state_json(0));
    EXPECT_EQ(sim->get_state_json(0), sim->get_state_json(1));
    json s = json::parse(sim->get_state_json(0));
    EXPECT_EQ(s["objects"].size(), 3u);
    EXPECT_EQ(s["players"][0]["held_object"]["is_ready"], true);
    for (const json& o : s["objects"]) {
        if (o["position"] == json::array({4, 1})) {
            EXPECT_EQ(o["cooking_tick"], 5); // the legacy form
        }
    }
}

TEST(Overcooked, BadStateDictsNameTheFieldAndLeaveTheWorldUntouched) {
    auto sim = make({{"layout", "cramped_room"}}, 1);
    const std::string p1 = R"({"position":[3,1],"orientation":[0,-1],"held_object":null})";
    auto with = [&](const std::string& p0, const std::string& objects) {
        return "{\"players\":[" + p0 + "," + p1 + "],\"objects\":" + objects + ",\"timestep\":3}";
    };
    const std::string p0 = R"({"position":[1,2],"orientation":[0,-1],"held_object":null})";
    const std::pair<std::string, std::string> cases[] = {
        {with(p0, R"([{"name":"banana","position":[0,1]}])"), "objects[0].name"},
        {with(p0, R"([{"name":"onion","position":[7,1]}])"), "objects[0].position"},
        {with(p0, R"([{"name":"onion","position":[2,2]}])"), "is not a counter or a pot"},
        {with(p0, R"([{"name":"onion","position":[0,2]},{"name":"dish","position":[0,2]}])"),
         "two objects on one cell"},
        {with(p0, R"([{"name":"dish","position":[2,0]}])"), "only a soup can be in a pot"},
        {with(p0, R"([{"name":"soup","position":[0,2],"_ingredients":[{"name":"onion"}],"cooking_tick":-1}])"),
         "must be cooked"},
        {with(p0, R"([{"name":"soup","position":[2,0],"_ingredients":[{"name":"onion"},{"name":"onion"},
            {"name":"onion"},{"name":"onion"}]}])"),
         "objects[0]._ingredients"},
        {with(p0, R"([{"name":"soup","position":[2,0],"_ingredients":[{"name":"onion"}],"cooking_tick":21}])"),
         "cooking_tick"},
        {with(R"({"position":[0,0],"orientation":[0,-1],"held_object":null})", "[]"), "players[0].position"},
        {with(R"({"position":[3,1],"orientation":[0,-1],"held_object":null})", "[]"), "both players"},
        {with(R"({"position":[1,2],"orientation":[1,1],"held_object":null})", "[]"), "players[0].orientation"},
        {with(R"({"position":[1,2],"orientation":[0,-1],"held_object":{"name":"onion","position":[2,2]}})", "[]"),
         "players[0].held_object.position"},
        {R"({"players":[)" + p0 + "]}", "players"},
        {with(p0, "[]").substr(1), "not valid JSON"},
        {R"({"players":[)" + p0 + "," + p1 + R"(],"objects":[],"all_orders":[{"ingredients":["tomato"]}]})",
         "all_orders"},
    };
    uint64_t before = sim->state_hash(0);
    for (const auto& [text, field] : cases) {
        std::string msg = error_of([&] { sim->set_state_json(0, text); });
        EXPECT_NE(msg.find(field), std::string::npos) << "message '" << msg << "' should name " << field;
        EXPECT_EQ(sim->state_hash(0), before) << field;
    }
}

TEST(Overcooked, OutOfRangeActionIsRejectedBeforeAnyChange) {
    auto sim = make({{"layout", "cramped_room"}}, 2);
    actions(*sim)[3] = 6;
    uint64_t before = sim->state_hash(1); // the action column is part of the world
    std::string msg = error_of([&] { sim->step(); });
    EXPECT_NE(msg.find("'action'"), std::string::npos) << msg;
    EXPECT_EQ(sim->state_hash(1), before);
}

TEST(Overcooked, MalformedLayoutsNameTheLine) {
    EXPECT_NE(layout_error("XXPXX|O  2O|X1 X|XDXSX").find("line 3: ragged row"), std::string::npos);
    EXPECT_NE(layout_error("XXPXX|OZ 2O|X1  X|XDXSX").find("line 2, column 2: unknown symbol 'Z'"), std::string::npos);
    EXPECT_NE(layout_error("XX XX|O  2O|X1  X|XDXSX").find("line 1, column 3: walkable border"), std::string::npos);
    EXPECT_NE(layout_error("XXPXX|O   O|X   X|XDXSX").find("no player '1'"), std::string::npos);
    EXPECT_NE(layout_error("XXPXX|O1 2O|X 3 X|XDXSX").find("line 3, column 3: player '3'"), std::string::npos);
    EXPECT_NE(layout_error("XXPXX|O1 2O|X   X|XXXSX").find("no 'D'"), std::string::npos);
    std::string big = std::string(17, 'X') + "|X1" + std::string(13, ' ') + "2X";
    for (int i = 0; i < 14; ++i) big += "|X" + std::string(15, ' ') + "X";
    big += "|XXXXPXXXOXXXDXXSX";
    EXPECT_NE(layout_error(big).find("at most 256 cells"), std::string::npos) << layout_error(big);
    EXPECT_EQ(layout_error("\nXXPXX\nO  2O\nX1  X\nXDXSX\n"), ""); // newlines and blank edges are fine
}

TEST(Overcooked, LayoutFilesReportFileLines) {
    std::string path = ::testing::TempDir() + "overcooked_bad.layout";
    std::ofstream(path) << "{\n    \"grid\":  \"\"\"XXPXX\n                O  2O\n                X1 X\n"
                           "                XDXSX\"\"\",\n    \"rew_shaping_params\": None\n}\n";
    std::string msg = error_of([&] { make({{"layout_file", path}}); });
    EXPECT_NE(msg.find("line 4: ragged row"), std::string::npos) << msg;
    std::ofstream(path) << "{\"grid\": \"\"\"XXPXX\nO  2O\nX1  X\nXDXSX\"\"\", \"order_bonus\": float('inf')}";
    msg = error_of([&] { make({{"layout_file", path}}); });
    EXPECT_NE(msg.find("unsupported Python expression 'float'"), std::string::npos) << msg;
}

TEST(Overcooked, BadOptionsAreErrors) {
    EXPECT_NE(error_of([] { make({{"layout", "kitchen"}}); }).find("cramped_room"), std::string::npos);
    EXPECT_NE(error_of([] {
                  make({{"layout", "cramped_room"}, {"layout_grid", "XPX"}});
              }).find("only one"),
              std::string::npos);
    EXPECT_NE(error_of([] { make({{"start", "sideways"}}); }).find("start=sideways"), std::string::npos);
    EXPECT_NE(error_of([] {
                  make({{"layout_file", "/nonexistent.layout"}});
              }).find("cannot open layout_file"),
              std::string::npos);
    std::string tomato = kDataDir + "more/cramped_room_tomato.layout";
    EXPECT_NE(error_of([&] {
                  make({{"layout_file", tomato}, {"old_dynamics", "true"}});
              }).find("3 ingredients"),
              std::string::npos);
    EXPECT_EQ(error_of([&] { make({{"layout_file", tomato}}); }), "");
}

} // namespace

// The observe nodes are lane systems: the GPU runs a world's lanes at once, up
// to 16 of them. Run on the CPU as 1, 3 and 16 lanes (one after another), every
// step's observation must be the same bytes, on a layout with soups, counters
// and the urgency plane in play.
TEST(Overcooked, ObservationDoesNotDependOnTheLaneCount) {
    orrery::register_builtin_envs();
    std::vector<std::unique_ptr<orrery::Simulator>> sims;
    for (uint32_t lanes : {1u, 3u, 16u}) {
        orrery::SimOptions o;
        o.num_worlds = 8;
        o.threads = 1;
        o.cpu_lanes = lanes;
        o.random_inputs = true; // the same draws in every simulator
        sims.push_back(std::make_unique<orrery::Simulator>(
            orrery::make_env_spec("overcooked", {{"layout", "counter_circuit_o_1order"}, {"horizon", "60"}}), o));
        sims.back()->reset(7);
    }
    const size_t bytes = sims[0]->tensor("obs").bytes();
    size_t nonzero = 0;
    for (int step = 0; step < 300; ++step) {
        for (auto& sim : sims) sim->step();
        const uint8_t* want = static_cast<const uint8_t*>(sims[0]->tensor("obs").data);
        for (size_t i = 0; i < bytes; ++i) nonzero += want[i] != 0;
        for (size_t k = 1; k < sims.size(); ++k)
            ASSERT_EQ(0, std::memcmp(want, sims[k]->tensor("obs").data, bytes))
                << "lanes run " << k << ", step " << step;
    }
    EXPECT_GT(nonzero, 300u * 8 * 2 * 40); // terrain alone marks 40+ cells per chef
    EXPECT_THROW(
        {
            orrery::SimOptions o;
            o.cpu_lanes = 0;
            orrery::Simulator bad(orrery::make_env_spec("overcooked", {}), o);
        },
        orrery::Error);
}
