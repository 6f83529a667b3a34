#pragma once
// Shared by the fuzz targets: one long-lived simulator per env (made once, as
// a training process would), and the check that a rejected input left it as it was.

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace orrery::fuzz {

inline Simulator& simulator(const std::string& env, EnvOptions options = {}) {
    static std::map<std::string, std::unique_ptr<Simulator>> sims;
    std::string key = env;
    for (const auto& [k, v] : options) key += " " + k + "=" + v;
    std::unique_ptr<Simulator>& s = sims[key];
    if (!s) {
        register_builtin_envs();
        SimOptions o;
        o.num_worlds = 2;
        o.threads = 1;
        s = std::make_unique<Simulator>(make_env_spec(env, options), o);
        for (int t = 0; t < 7; ++t) s->step(); // something in flight: moved chefs, eaten pellets
    }
    return *s;
}

/// The envs the snapshot and checkpoint targets fuzz, picked by an input's
/// first byte modulo their count (0 tag and 1 Overcooked, as the committed
/// corpus was written): then the physics module's grab scene (two welds,
/// contacts) and hide-and-seek, and the crowd (one piece) with its two wedge hulls. The
/// physics envs are made small so that a world's bytes, and a two-world
/// checkpoint, stay within the fuzzer's input length.
inline Simulator& simulator_for(uint8_t pick) {
    switch (pick % 5) {
    case 0: return simulator("tag");
    case 1: return simulator("overcooked");
    case 2:
        return simulator("physics_scenes",
                         {{"scene", "grab"}, {"holders", "2"}, {"max_contacts", "8"}, {"max_joints", "4"}});
    case 3:
        return simulator("hide_and_seek", {{"hiders", "1"},
                                           {"seekers", "1"},
                                           {"min_boxes", "1"},
                                           {"max_boxes", "2"},
                                           {"ramps", "1"},
                                           {"max_rooms", "2"},
                                           {"max_contacts", "16"},
                                           {"prep_steps", "2"}});
    default:
        return simulator(
            "physics_scenes",
            {{"scene", "crowd"}, {"count", "1"}, {"ramps", "2"}, {"max_contacts", "12"}, {"max_joints", "2"}});
    }
}

inline std::vector<uint64_t> hashes(Simulator& sim) {
    std::vector<uint64_t> h;
    for (uint32_t w = 0; w < sim.num_worlds(); ++w) h.push_back(sim.state_hash(w));
    return h;
}

/// Aborts (a finding) when a rejected input changed the simulator.
inline void require_untouched(Simulator& sim, const std::vector<uint64_t>& before, const char* what) {
    if (hashes(sim) == before) return;
    std::fprintf(stderr, "fuzz: a rejected %s changed the simulator\n", what);
    std::abort();
}

/// After an accepted input: the worlds must step, serialise and report cleanly.
/// Actions are part of a world's bytes and are range-checked by step(), so the
/// harness writes valid ones first, as a training loop would.
inline void exercise(Simulator& sim) {
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    for (int t = 0; t < 3; ++t) {
        std::vector<std::vector<uint8_t>> inputs = random_inputs(sim, rng);
        size_t i = 0;
        for (const auto& entry : sim.spec().input_ranges()) {
            const TensorView& v = sim.tensor(entry.first);
            std::memcpy(v.data, inputs[i++].data(), v.bytes());
        }
        sim.step();
    }
    (void)sim.errors();
    if (sim.spec().state_to_json)
        for (uint32_t w = 0; w < sim.num_worlds(); ++w) (void)sim.get_state_json(w);
    sim.reset(1); // the next input starts from a known state
    for (int t = 0; t < 7; ++t) sim.step();
}

} // namespace orrery::fuzz
