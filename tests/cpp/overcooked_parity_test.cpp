// Overcooked matches overcooked_ai step for step: every recorded trajectory in
// tests/data/overcooked is replayed, free-running and teacher-forced, the four
// files of one (layout, dynamics) pair batched as four worlds of one simulator.
// States, per-agent rewards, truncation and the full lossless observation are
// compared after every step. Set ORRERY_OVERCOOKED_DATA to a folder of more
// files of the same kind (with its manifest.json, and <layout>.layout files for
// kitchens that are not built in) to replay those too.

#include <gtest/gtest.h>
#include <zlib.h>

#include <fstream>
#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {

using nlohmann::json;
const std::string kDataDir = std::string(ORRERY_SOURCE_DIR) + "/tests/data/overcooked/";
const char* kBuiltin[] = {"cramped_room", "asymmetric_advantages", "coordination_ring", "forced_coordination",
                          "counter_circuit_o_1order"};

struct Trajectory {
    std::string file;
    json header;
    std::vector<json> steps;
};

std::string read_gzip(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    std::string out;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, size_t(n));
    gzclose(f);
    return out;
}

Trajectory load(const std::string& dir, const std::string& file) {
    Trajectory t{file, {}, {}};
    std::string text = read_gzip(dir + file);
    for (size_t b = 0, e; b < text.size(); b = e + 1) {
        e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        if (e == b) continue;
        json line = json::parse(text.substr(b, e - b));
        if (line["type"] == "header")
            t.header = line;
        else if (line["type"] == "step")
            t.steps.push_back(line);
    }
    return t;
}

/// The manifest's files for one (layout, dynamics) pair.
json manifest(const std::string& dir) {
    std::ifstream in(dir + "manifest.json");
    return json::parse(in);
}

std::vector<Trajectory> load_group(const std::string& dir, const std::string& layout, const std::string& dynamics) {
    std::vector<Trajectory> out;
    const json m = manifest(dir);
    for (const json& f : m["files"])
        if (f["layout"] == layout && f["dynamics"] == dynamics) out.push_back(load(dir, f["file"]));
    return out;
}

/// A host copy of an exported tensor (the simulator may live on the GPU).
template <class T> std::vector<T> host(orrery::Simulator& sim, const char* name) {
    const orrery::TensorView& t = sim.tensor(name);
    std::vector<T> out(t.bytes() / sizeof(T));
    sim.synchronize();
    sim.backend().copy_to_host(out.data(), t.data, t.bytes());
    return out;
}

std::unique_ptr<orrery::Simulator> make_sim(const std::string& dir, const std::string& layout,
                                            const std::string& dynamics, uint32_t worlds,
                                            const std::string& device = "cpu") {
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.num_worlds = worlds;
    o.threads = 2;
    o.device = device;
    orrery::EnvOptions opts = {{"layout", layout}, {"old_dynamics", dynamics == "old" ? "true" : "false"}};
    if (std::find(std::begin(kBuiltin), std::end(kBuiltin), layout) == std::end(kBuiltin)) {
        opts.erase("layout");
        opts["layout_file"] = dir + layout + ".layout";
    }
    return std::make_unique<orrery::Simulator>(orrery::make_env_spec("overcooked", opts), o);
}

/// "" when the states agree; objects compare as a set keyed by position.
std::string state_diff(const json& got, const json& want) {
    if (got["players"] != want["players"])
        return "players: got " + got["players"].dump() + ", want " + want["players"].dump();
    if (got["timestep"] != want["timestep"])
        return "timestep: got " + got["timestep"].dump() + ", want " + want["timestep"].dump();
    auto by_cell = [](const json& list) {
        std::map<std::string, json> m;
        for (const json& o : list) m[o["position"].dump()] = o;
        return m;
    };
    if (by_cell(got["objects"]) != by_cell(want["objects"]) || got["objects"].size() != want["objects"].size())
        return "objects: got " + got["objects"].dump() + ", want " + want["objects"].dump();
    if (got["all_orders"] != want["all_orders"] || got["bonus_orders"] != want["bonus_orders"])
        return "orders: got " + got["all_orders"].dump() + ", want " + want["all_orders"].dump();
    return "";
}

/// "" when world w's observation equals the recorded non-zero entries.
std::string obs_diff(orrery::Simulator& sim, const std::vector<uint8_t>& obs, uint32_t w, const json& nz) {
    const orrery::TensorView& t = sim.tensor("obs");
    const int64_t C = t.shape[2], H = t.shape[3], W = t.shape[4];
    const size_t per_player = size_t(C * H * W);
    std::vector<uint8_t> want(2 * per_player, 0);
    for (size_t p = 0; p < 2; ++p)
        for (const json& e : nz[p]) // [x, y, channel, value]
            want[p * per_player + size_t(e[2].get<int64_t>() * H * W + e[1].get<int64_t>() * W + e[0].get<int64_t>())] =
                uint8_t(e[3].get<int>());
    const uint8_t* got = obs.data() + w * 2 * per_player;
    for (size_t i = 0; i < want.size(); ++i) {
        if (got[i] == want[i]) continue;
        size_t p = i / per_player, r = i % per_player;
        return "obs[player " + std::to_string(p) + ", channel " + std::to_string(r / (H * W)) + ", y " +
               std::to_string(r % (H * W) / W) + ", x " + std::to_string(r % W) + "] = " + std::to_string(got[i]) +
               ", want " + std::to_string(want[i]);
    }
    return "";
}

std::string reward_diff(const std::map<std::string, std::vector<float>>& rewards, uint32_t w, const json& step) {
    auto at = [&](const char* name, uint32_t p) { return rewards.at(name)[w * 2 + p]; };
    for (uint32_t p = 0; p < 2; ++p) {
        if (at("sparse_r_by_agent", p) != step["sparse_r_by_agent"][p].get<float>() ||
            at("shaped_r_by_agent", p) != step["shaped_r_by_agent"][p].get<float>() ||
            at("reward", p) != step["sparse_reward"].get<float>())
            return "rewards of player " + std::to_string(p) + ": sparse " + std::to_string(at("sparse_r_by_agent", p)) +
                   ", shaped " + std::to_string(at("shaped_r_by_agent", p)) + ", team " +
                   std::to_string(at("reward", p)) + "; want " + step["sparse_r_by_agent"].dump() + " " +
                   step["shaped_r_by_agent"].dump() + " " + step["sparse_reward"].dump();
    }
    return "";
}

void set_actions(orrery::Simulator& sim, const std::vector<Trajectory>& trajs, size_t t) {
    std::vector<int32_t> a(trajs.size() * 2);
    for (size_t w = 0; w < trajs.size(); ++w)
        for (size_t p = 0; p < 2; ++p) a[w * 2 + p] = trajs[w].steps[t]["joint_action"][p].get<int32_t>();
    sim.backend().copy_from_host(sim.tensor("action").data, a.data(), a.size() * sizeof(int32_t));
}

/// Compares every world after step t; returns false after reporting the first mismatch.
bool check_step(orrery::Simulator& sim, const std::vector<Trajectory>& trajs, size_t t) {
    std::vector<uint8_t> truncated = host<uint8_t>(sim, "truncated"), obs = host<uint8_t>(sim, "obs");
    std::map<std::string, std::vector<float>> rewards;
    for (const char* name : {"reward", "sparse_r_by_agent", "shaped_r_by_agent"})
        rewards[name] = host<float>(sim, name);
    for (uint32_t w = 0; w < trajs.size(); ++w) {
        const json& step = trajs[w].steps[t];
        std::string where = trajs[w].file + " step " + std::to_string(t) + ": ";
        std::string diff = state_diff(json::parse(sim.get_state_json(w)), step["state"]);
        if (diff.empty()) diff = reward_diff(rewards, w, step);
        if (diff.empty()) diff = obs_diff(sim, obs, w, step["lossless_nz"]);
        if (diff.empty() && truncated[w] != (t + 1 == 400)) diff = "truncated = " + std::to_string(truncated[w]);
        EXPECT_EQ(diff, "") << where;
        if (!diff.empty()) return false;
    }
    return true;
}

struct Group {
    std::string layout, dynamics;
};

void PrintTo(const Group& g, std::ostream* os) { *os << g.layout << " (" << g.dynamics << " dynamics)"; }

void free_running(const std::string& dir, const Group& g, const std::string& device = "cpu") {
    std::vector<Trajectory> trajs = load_group(dir, g.layout, g.dynamics);
    ASSERT_FALSE(trajs.empty());
    auto sim = make_sim(dir, g.layout, g.dynamics, uint32_t(trajs.size()), device);
    for (uint32_t w = 0; w < trajs.size(); ++w)
        ASSERT_EQ(state_diff(json::parse(sim->get_state_json(w)), trajs[w].header["start_state"]), "") << trajs[w].file;
    for (size_t t = 0; t < 400; ++t) {
        set_actions(*sim, trajs, t);
        sim->step();
        sim->check_errors();
        if (!check_step(*sim, trajs, t)) return;
    }
    // Next-step autoreset: the truncated world starts over from the start state.
    sim->step();
    for (uint32_t w = 0; w < trajs.size(); ++w)
        EXPECT_EQ(state_diff(json::parse(sim->get_state_json(w)), trajs[w].header["start_state"]), "") << trajs[w].file;
}

void teacher_forced(const std::string& dir, const Group& g, const std::string& device = "cpu") {
    std::vector<Trajectory> trajs = load_group(dir, g.layout, g.dynamics);
    ASSERT_FALSE(trajs.empty());
    auto sim = make_sim(dir, g.layout, g.dynamics, uint32_t(trajs.size()), device);
    for (size_t t = 0; t < 400; ++t) {
        for (uint32_t w = 0; w < trajs.size(); ++w)
            sim->set_state_json(w, (t == 0 ? trajs[w].header["start_state"] : trajs[w].steps[t - 1]["state"]).dump());
        set_actions(*sim, trajs, t);
        sim->step();
        if (!check_step(*sim, trajs, t)) return;
    }
}

class Parity : public ::testing::TestWithParam<Group> {};

TEST_P(Parity, FreeRunning) { free_running(kDataDir, GetParam()); }
TEST_P(Parity, TeacherForced) { teacher_forced(kDataDir, GetParam()); }

/// True when this build and machine can run a CUDA simulator.
bool cuda_available() {
    static const bool available = [] {
        try {
            make_sim(kDataDir, "cramped_room", "new", 1, "cuda");
            return true;
        } catch (const orrery::Error&) { return false; }
    }();
    return available;
}

TEST_P(Parity, FreeRunningOnCuda) {
    if (!cuda_available()) GTEST_SKIP() << "no usable CUDA device";
    free_running(kDataDir, GetParam(), "cuda");
}
TEST_P(Parity, TeacherForcedOnCuda) {
    if (!cuda_available()) GTEST_SKIP() << "no usable CUDA device";
    teacher_forced(kDataDir, GetParam(), "cuda");
}

void replay_folder(const std::string& dir) {
    std::set<std::pair<std::string, std::string>> groups;
    const json m = manifest(dir);
    for (const json& f : m["files"]) groups.insert({f["layout"].get<std::string>(), f["dynamics"].get<std::string>()});
    ASSERT_FALSE(groups.empty()) << dir << "manifest.json lists no files";
    for (const auto& [layout, dynamics] : groups) {
        SCOPED_TRACE(layout + " " + dynamics);
        free_running(dir, {layout, dynamics});
        teacher_forced(dir, {layout, dynamics});
    }
}

// Kitchens beyond the classic five: tomatoes, bonus orders, per-ingredient
// values and cook times, 1- and 2-onion orders (layout files in the folder).
TEST(OvercookedParity, LayoutFilesWithTomatoesAndBonusOrders) { replay_folder(kDataDir + "more/"); }

TEST(OvercookedParity, ExtraDataDir) {
    const char* env = std::getenv("ORRERY_OVERCOOKED_DATA");
    if (!env) GTEST_SKIP() << "ORRERY_OVERCOOKED_DATA is not set";
    replay_folder(std::string(env) + "/");
}

const Group kGroups[] = {
    {"cramped_room", "old"},
    {"cramped_room", "new"},
    {"asymmetric_advantages", "old"},
    {"asymmetric_advantages", "new"},
    {"coordination_ring", "old"},
    {"coordination_ring", "new"},
    {"forced_coordination", "old"},
    {"forced_coordination", "new"},
    {"counter_circuit_o_1order", "old"},
    {"counter_circuit_o_1order", "new"},
};
INSTANTIATE_TEST_SUITE_P(Reference, Parity, ::testing::ValuesIn(kGroups),
                         [](const auto& info) { return info.param.layout + "_" + info.param.dynamics; });

} // namespace
