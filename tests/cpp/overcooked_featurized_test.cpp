// Overcooked's optional featurized observation (featurized=1) matches
// overcooked_ai's featurize_state(state, mlam, num_pots=2) value for value: the
// recorded episodes of tests/data/overcooked/featurized are replayed and all 96
// features of both players compared after every step (and after loading the
// state into a fresh simulator with set_state_json every 50 steps). Also: the option's
// errors, its absence by default, and an NVRTC compile of the featurized spec.

#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"
#include "envs/overcooked/overcooked.hpp"
#include "envs/registry.hpp"

namespace {

using nlohmann::json;
const std::string kDataDir = std::string(ORRERY_SOURCE_DIR) + "/tests/data/overcooked/featurized/";
constexpr uint32_t kWorlds = 3; // every world replays the same episode: batching must not mix them
constexpr size_t kFeatures = 96;

std::vector<json> read_lines(const std::string& path) {
    gzFile f = gzopen(path.c_str(), "rb");
    if (!f) throw std::runtime_error("cannot open " + path);
    std::string text;
    char buf[1 << 16];
    int n;
    while ((n = gzread(f, buf, sizeof buf)) > 0) text.append(buf, size_t(n));
    gzclose(f);
    std::vector<json> lines;
    for (size_t b = 0, e; b < text.size(); b = e + 1) {
        e = text.find('\n', b);
        if (e == std::string::npos) e = text.size();
        if (e > b) lines.push_back(json::parse(text.substr(b, e - b)));
    }
    return lines;
}

std::unique_ptr<orrery::Simulator> make(orrery::EnvOptions opts, uint32_t worlds = kWorlds) {
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.num_worlds = worlds;
    o.threads = 2;
    return std::make_unique<orrery::Simulator>(orrery::make_env_spec("overcooked", opts), o);
}

/// Compares every world's featurized_obs with the recorded features of one step.
void expect_features(orrery::Simulator& sim, const json& step, int& mismatches) {
    const float* got = static_cast<const float*>(sim.tensor("featurized_obs").data);
    for (uint32_t w = 0; w < kWorlds; ++w)
        for (size_t i = 0; i < 2; ++i)
            for (size_t k = 0; k < kFeatures; ++k) {
                float want = step["f"][i][k].get<float>(), have = got[(w * 2 + i) * kFeatures + k];
                if (want == have || ++mismatches > 10) continue;
                ADD_FAILURE() << "t=" << step["t"] << " world " << w << " player " << i << " feature " << k
                              << ": overcooked_ai " << want << ", Orrery " << have;
            }
}

void replay(const std::string& file) {
    SCOPED_TRACE(file);
    std::vector<json> lines = read_lines(kDataDir + file);
    const json& header = lines.at(0);
    ASSERT_EQ(lines.size(), header["steps"].get<size_t>() + 2);
    const orrery::EnvOptions opts = {{"layout", header["layout"].get<std::string>()},
                                     {"old_dynamics", header["old_dynamics"].get<bool>() ? "true" : "false"},
                                     {"horizon", "100000"},
                                     {"featurized", "1"}};
    auto sim = make(opts);
    auto loaded = make(opts); // set_state_json must refresh featurized_obs too
    ASSERT_EQ(sim->tensor("featurized_obs").shape, (std::vector<int64_t>{kWorlds, 2, int64_t(kFeatures)}));
    int mismatches = 0;
    expect_features(*sim, lines[1], mismatches);
    for (size_t t = 2; t < lines.size() && mismatches == 0; ++t) {
        int32_t* action = static_cast<int32_t*>(sim->tensor("action").data);
        for (uint32_t w = 0; w < kWorlds; ++w)
            for (size_t i = 0; i < 2; ++i) action[w * 2 + i] = lines[t]["a"][i].get<int32_t>();
        sim->step();
        sim->check_errors();
        expect_features(*sim, lines[t], mismatches);
        if (t % 50 != 0) continue;
        for (uint32_t w = 0; w < kWorlds; ++w) loaded->set_state_json(w, sim->get_state_json(w));
        expect_features(*loaded, lines[t], mismatches);
    }
    EXPECT_EQ(mismatches, 0);
}

TEST(OvercookedFeaturized, CrampedRoomOld) { replay("cramped_room_old.jsonl.gz"); }
TEST(OvercookedFeaturized, AsymmetricAdvantagesOld) { replay("asymmetric_advantages_old.jsonl.gz"); }
TEST(OvercookedFeaturized, CoordinationRingOld) { replay("coordination_ring_old.jsonl.gz"); }
TEST(OvercookedFeaturized, ForcedCoordinationOld) { replay("forced_coordination_old.jsonl.gz"); }
TEST(OvercookedFeaturized, CounterCircuitOld) { replay("counter_circuit_o_1order_old.jsonl.gz"); }
TEST(OvercookedFeaturized, CrampedRoomNew) { replay("cramped_room_new.jsonl.gz"); }

TEST(OvercookedFeaturized, BadValueIsRejected) {
    std::string msg;
    try {
        make({{"featurized", "2"}});
    } catch (const orrery::Error& e) { msg = e.what(); }
    EXPECT_NE(msg.find("featurized=2"), std::string::npos) << msg;
    EXPECT_NE(msg.find("expected true or false"), std::string::npos) << msg;
}

TEST(OvercookedFeaturized, AbsentByDefault) {
    for (const char* value : {"", "0"}) {
        orrery::EnvOptions opts;
        if (*value) opts["featurized"] = value;
        auto sim = make(opts, 1);
        for (const orrery::TensorView& t : sim->tensors()) EXPECT_EQ(t.name.find("featurized"), std::string::npos);
        EXPECT_THROW(sim->tensor("featurized_obs"), orrery::Error);
        EXPECT_EQ(sim->spec().archetype_specs().size(), 2u); // Chef and Kitchen only
        ASSERT_EQ(sim->spec().component_specs().size(), 9u); // the table from before the option
        EXPECT_EQ(sim->spec().component_specs().back().name, "Counters");
        EXPECT_EQ(sim->spec().config_bytes().size(), sizeof(overcooked::Config));
    }
    auto featurized = make({{"featurized", "1"}}, 1);
    EXPECT_EQ(featurized->spec().archetype_specs().size(), 3u);
    EXPECT_EQ(featurized->spec().component_specs().size(), 10u);
    EXPECT_EQ(featurized->spec().config_bytes().size(), sizeof(overcooked::FeatConfig));
}

// The GPU path of the featurized spec is compiled by NVRTC (no GPU needed).
TEST(OvercookedFeaturized, NvrtcCompilesMegakernel) {
    try {
        orrery::cuda::nvrtc();
    } catch (const orrery::Error& e) { GTEST_SKIP() << "NVRTC missing: " << e.what(); }
    orrery::register_builtin_envs();
    for (const char* layout : {"cramped_room", "counter_circuit_o_1order"}) {
        orrery::EnvSpec spec = orrery::make_env_spec("overcooked", {{"layout", layout}, {"featurized", "1"}});
        orrery::Plan plan = orrery::make_plan(spec, orrery::AutoReset::kNextStep, true);
        orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, orrery::cuda::KernelForm::kStaged);
        EXPECT_NE(k.text.find("observe_features"), std::string::npos);
        orrery::cuda::CompileRequest req;
        req.label = "overcooked featurized test";
        req.source = k.text;
        req.env_header = k.env_header;
        req.arch = 90;
        req.use_cache = false;
        orrery::cuda::CompiledModule m;
        ASSERT_NO_THROW(m = orrery::cuda::compile_module(req)) << layout;
        EXPECT_EQ(m.cubin.substr(0, 4), "\x7f"
                                        "ELF");
        EXPECT_NE(m.cubin.find(k.staged_step_kernel), std::string::npos);
        EXPECT_FALSE(m.from_cache);
    }
}

} // namespace
