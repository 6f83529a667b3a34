// Pinned determinism (Box2D-style): each shipped env runs a fixed scenario
// (seed, 37 worlds, 400 steps across several episode ends, actions from a
// formula) in each autoreset mode, and the state hash after steps 1, 100 and 400
// is compared with constants written below. Every CPU thread and lane count,
// the CUDA backend and, for one world's hash, every batch size must give the
// same constants, so any change to results shows up in review as a changed pin.
// docs/decisions.md ("Pinned determinism hashes") says how to update them.

#include <gtest/gtest.h>

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "gpu_support.hpp"

namespace {

using orrery::AutoReset;
using orrery::Simulator;

constexpr uint64_t kSeed = 20240613;
constexpr uint32_t kWorlds = 37;      ///< odd, so thread chunks and GPU blocks end part-way
constexpr uint32_t kWiderWorlds = 64; ///< the second batch size world 0's hash is checked at
constexpr uint32_t kSteps = 400;
constexpr uint32_t kPinnedSteps[] = {1, 100, 400}; ///< 100: after every world's first episode end

/// FNV-1a 64, written here rather than Simulator::state_hash: that one hashes
/// the snapshot regions, whose order and contents (free lists, counters) follow
/// the engine's bookkeeping layout, which may change without changing results.
/// This one reads only what an env or a user can observe, in an order fixed
/// here, so a pin moves only when results do.
struct Fnv1a {
    uint64_t h = 14695981039346656037ull;
    void bytes(const void* p, size_t n) {
        const auto* b = static_cast<const uint8_t*>(p);
        for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
    }
    /// Integers as little-endian bytes of a fixed width, whatever their C++ type.
    void u32(uint32_t v) {
        const uint8_t b[4] = {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
        bytes(b, 4);
    }
    void u64(uint64_t v) {
        u32(uint32_t(v));
        u32(uint32_t(v >> 32));
    }
};

uint64_t splitmix64(uint64_t x) {
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/// One env configuration. Horizons are shortened so 400 steps cross several
/// episode ends (auto-resets) in every world.
struct Scenario {
    const char* name;
    const char* env;
    orrery::EnvOptions options;
};

const std::vector<Scenario>& scenarios() {
    static const std::vector<Scenario> all = {
        {"tag", "tag", {{"horizon", "60"}}},
        {"cramped_room", "overcooked", {{"layout", "cramped_room"}, {"horizon", "90"}}},
        {"asymmetric_advantages", "overcooked", {{"layout", "asymmetric_advantages"}, {"horizon", "90"}}},
        {"coordination_ring", "overcooked", {{"layout", "coordination_ring"}, {"horizon", "90"}}},
        {"forced_coordination", "overcooked", {{"layout", "forced_coordination"}, {"horizon", "90"}}},
        {"counter_circuit_o_1order", "overcooked", {{"layout", "counter_circuit_o_1order"}, {"horizon", "90"}}},
        // Random starts draw from the RNG at every reset; the featurizer adds an archetype.
        // The physics module's crowd: 30 bodies with random starts in a walled room, pushed by the action.
        {"physics_crowd", "physics_scenes", {{"scene", "crowd"}, {"horizon", "60"}}},
        // Hide-and-seek: random rooms, teams of 1-3 each, boxes, ramps, grab and lock.
        {"hide_and_seek",
         "hide_and_seek",
         {{"horizon", "60"},
          {"prep_steps", "20"},
          {"min_hiders", "1"},
          {"max_hiders", "3"},
          {"min_seekers", "1"},
          {"max_seekers", "3"}}},
        {"cramped_room_random_featurized",
         "overcooked",
         {{"layout", "cramped_room"}, {"horizon", "90"}, {"start", "random"}, {"featurized", "true"}}},
    };
    return all;
}

/// The pinned constants of one scenario in one autoreset mode: the batch hash
/// after each of kPinnedSteps, and world 0's own hash after the last.
struct Pin {
    const char* scenario;
    AutoReset mode;
    uint64_t batch[3];
    uint64_t world0;
};

// clang-format off
const Pin kPins[] = {
    {"tag", AutoReset::kNextStep, {0x21041407ae7f1a11, 0x1b4c45319e84fa1e, 0x8004210c7ba73759}, 0x8208ed06581cbbb8},
    {"tag", AutoReset::kSameStep, {0xfdd8248a70cee892, 0x3fc05394296fee2f, 0x020d11d53c437429}, 0x8dc65ad05632e534},
    {"tag", AutoReset::kDisabled, {0x21041407ae7f1a11, 0xeb9b595f56b6da4d, 0x702c77bc85ca2506}, 0x79a7dea25fc2edfc},
    {"cramped_room", AutoReset::kNextStep, {0x5e0c0d284148c9ca, 0xa7421be9e311f229, 0x9949d4063fb0d75e}, 0x0af1a264605366fc},
    {"cramped_room", AutoReset::kSameStep, {0xe3afd195fcf42ce5, 0x8509e15593c0cbbe, 0x1f72e03bc59703d8}, 0xa4635cc6d5277314},
    {"cramped_room", AutoReset::kDisabled, {0x5e0c0d284148c9ca, 0x114951b975167a60, 0x7e194bc9dcf156a3}, 0xa69a8716b15ddb54},
    {"asymmetric_advantages", AutoReset::kNextStep, {0x4bbaa22c83d23aef, 0x931ea896b7837098, 0x2f49e0938506f096}, 0x6232c751c1ce2aa9},
    {"asymmetric_advantages", AutoReset::kSameStep, {0xee5b7363879f7594, 0xa555e38dceb8a963, 0xaf7a8c907e4ecc11}, 0x1e401d0a56fb6ed9},
    {"asymmetric_advantages", AutoReset::kDisabled, {0x4bbaa22c83d23aef, 0x8cbcbcd9bea79ea9, 0xee420d65389ddcf2}, 0x604101b14d9dabe1},
    {"coordination_ring", AutoReset::kNextStep, {0x7fce4718b4ef57fe, 0x3059c3c7a0e8634f, 0x63829b0c9ab69805}, 0x88d59a51b6ad14a3},
    {"coordination_ring", AutoReset::kSameStep, {0x3386cda5cf8a2924, 0x8e0713c3f58abc70, 0xf826b4bdb8b86137}, 0x7b8f67d5e1da7083},
    {"coordination_ring", AutoReset::kDisabled, {0x7fce4718b4ef57fe, 0x1f800821dd46505c, 0x4f084a4c5d800654}, 0x3a281fc709f2992b},
    {"forced_coordination", AutoReset::kNextStep, {0x22bac9ee6d653005, 0xb2d0ab275c7ebc1f, 0x22dd9cc762321fe5}, 0x20fc319db9d4f814},
    {"forced_coordination", AutoReset::kSameStep, {0x7fd6ad450c3b0c85, 0x726203b7b79dc6d9, 0x14b85b752e61557b}, 0xbad14d6b55442b30},
    {"forced_coordination", AutoReset::kDisabled, {0x22bac9ee6d653005, 0x723e408533de12b8, 0xc481e2d4cd413cb6}, 0x713b7c6010401a24},
    {"counter_circuit_o_1order", AutoReset::kNextStep, {0x90e7ca914a98b654, 0x30ec08fb9d0a967d, 0xbf84de8d06faf7d1}, 0xe76a5d19d110b4f3},
    {"counter_circuit_o_1order", AutoReset::kSameStep, {0x695f002189c3a1a5, 0xf3be9b77c6e3a05d, 0xb5aed0f0e46b3fcf}, 0xe10e23bdcd64836b},
    {"counter_circuit_o_1order", AutoReset::kDisabled, {0x90e7ca914a98b654, 0xe4670f2c49320970, 0x31563941cb2f05a2}, 0x874862cec58f51cb},
    {"physics_crowd", AutoReset::kNextStep, {0xa2994fe19934f503, 0xb0cec3a41d1c004f, 0xd9357e272946335d}, 0x4be109bfeafcf50b},
    {"physics_crowd", AutoReset::kSameStep, {0x5b5c3a07941e0026, 0x5b2e39fc4e77eb8e, 0x0255bdf99df8f9a4}, 0x170ae23a01a68266},
    {"physics_crowd", AutoReset::kDisabled, {0xa2994fe19934f503, 0x60385a37ffc12c9d, 0x58975cd759c7ac2e}, 0xe48675d153e85375},
    {"hide_and_seek", AutoReset::kNextStep, {0x270b712dfa487ac3, 0xe363c841203081b4, 0xb4ddb727d45277b2}, 0x4c2814f2007f4948},
    {"hide_and_seek", AutoReset::kSameStep, {0xe4ca2ef84f523762, 0xed09c4a9a29854b9, 0xffdbf16bb1971d03}, 0x48e6e0935e80a986},
    {"hide_and_seek", AutoReset::kDisabled, {0x270b712dfa487ac3, 0x33d9d06def5d1e37, 0x3f00d3afcbf63b53}, 0xe30cccfbd68229df},
    {"cramped_room_random_featurized", AutoReset::kNextStep, {0x0efef5c67ee87b9c, 0xf7cfe7fb983c623d, 0x1f5c7bd55047724d}, 0xe49070d4d316b88c},
    {"cramped_room_random_featurized", AutoReset::kSameStep, {0xa9e0099ec94a1f60, 0x878b86038bf02b23, 0x1f35bfdaf7e5f668}, 0xa9be5d77f0300f81},
    {"cramped_room_random_featurized", AutoReset::kDisabled, {0x0efef5c67ee87b9c, 0xb3aa82ca20a33a57, 0xd194082df7dd885f}, 0xe828c8be79862e34},
};
// clang-format on

const char* mode_name(AutoReset m) {
    const char* names[] = {"kNextStep", "kSameStep", "kDisabled"};
    return names[int(m)];
}

/// How GoogleTest names a pin in its messages.
void PrintTo(const Pin& pin, std::ostream* os) { *os << pin.scenario << ", AutoReset::" << mode_name(pin.mode); }

const Scenario& scenario_of(const Pin& pin) {
    for (const Scenario& s : scenarios())
        if (pin.scenario == std::string(s.name)) return s;
    throw orrery::Error(std::string("no scenario named ") + pin.scenario);
}

template <class T> std::vector<T> fetch(Simulator& sim, const void* src, size_t count) {
    std::vector<T> out(count);
    sim.backend().copy_to_host(out.data(), src, count * sizeof(T));
    return out;
}

/// Each world's hash of its observable state: per archetype (by id), each
/// present component's column (by id) over the world's whole slab, live rows
/// or not, then the slab's generations and alive bytes; then the WorldMeta
/// fields by name, the world's error code and its slice of every exported
/// tensor (by name). No engine struct is hashed whole, so reordering Storage
/// or raising kMaxComponents leaves it unchanged.
std::vector<uint64_t> world_hashes(Simulator& sim) {
    sim.synchronize();
    const orrery::Storage& s = sim.backend().storage();
    const uint32_t W = sim.num_worlds();
    std::vector<Fnv1a> h(W);
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const orrery::ArchetypeTable& t = s.tables[a];
        for (uint32_t c = 0; c < s.num_components; ++c) {
            if (!t.columns[c]) continue;
            size_t n = size_t(t.capacity) * s.row_bytes[c];
            std::vector<uint8_t> col = fetch<uint8_t>(sim, t.columns[c], n * W);
            for (uint32_t w = 0; w < W; ++w) h[w].bytes(col.data() + w * n, n);
        }
        std::vector<uint32_t> gen = fetch<uint32_t>(sim, t.generation, size_t(t.capacity) * W);
        std::vector<uint8_t> alive = fetch<uint8_t>(sim, t.alive, size_t(t.capacity) * W);
        for (uint32_t w = 0; w < W; ++w)
            for (uint32_t r = 0; r < t.capacity; ++r) {
                h[w].u32(gen[size_t(w) * t.capacity + r]);
                h[w].bytes(&alive[size_t(w) * t.capacity + r], 1);
            }
    }
    std::vector<orrery::WorldMeta> meta = fetch<orrery::WorldMeta>(sim, s.meta, W);
    std::vector<uint32_t> errors = fetch<uint32_t>(sim, s.errors, W);
    for (uint32_t w = 0; w < W; ++w) {
        h[w].u64(meta[w].seed);
        h[w].u32(meta[w].episode);
        h[w].u32(meta[w].step);
        h[w].u32(meta[w].flags);
        h[w].u32(meta[w].identity);
        h[w].u32(errors[w]);
    }
    std::vector<const orrery::TensorView*> tensors;
    for (const orrery::TensorView& t : sim.tensors()) tensors.push_back(&t);
    std::sort(tensors.begin(), tensors.end(), [](auto* x, auto* y) { return x->name < y->name; });
    for (const orrery::TensorView* t : tensors) {
        size_t n = t->bytes() / W;
        std::vector<uint8_t> bytes = fetch<uint8_t>(sim, t->data, t->bytes());
        for (uint32_t w = 0; w < W; ++w) h[w].bytes(bytes.data() + w * n, n);
    }
    std::vector<uint64_t> out(W);
    for (uint32_t w = 0; w < W; ++w) out[w] = h[w].h;
    return out;
}

/// The batch's hash: FNV-1a over the world hashes in world order.
uint64_t batch_hash(const std::vector<uint64_t>& worlds) {
    Fnv1a h;
    for (uint64_t w : worlds) h.u64(w);
    return h.h;
}

/// Writes step `step`'s actions: element i of world w's slice of each ranged
/// input is lo + splitmix64(input, w, step, i) mod (hi - lo + 1), so a world's
/// actions do not depend on the batch size.
void write_actions(Simulator& sim, uint32_t step) {
    uint64_t input = 0;
    for (const auto& [name, range] : sim.spec().input_ranges()) {
        const orrery::TensorView& t = sim.tensor(name);
        const size_t elem = orrery::dtype_size(t.dtype);
        const size_t per_world = t.bytes() / elem / sim.num_worlds();
        const uint64_t span = uint64_t(range.second - range.first) + 1;
        std::vector<uint8_t> host(t.bytes());
        for (uint32_t w = 0; w < sim.num_worlds(); ++w)
            for (size_t i = 0; i < per_world; ++i) {
                uint64_t bits = splitmix64(splitmix64(splitmix64(splitmix64(input) ^ w) ^ step) ^ i);
                int64_t v = range.first + int64_t(bits % span);
                // Little-endian: the low `elem` bytes of v are its value in the tensor's type.
                std::memcpy(&host[(w * per_world + i) * elem], &v, elem);
            }
        sim.backend().copy_from_host(t.data, host.data(), host.size());
        ++input;
    }
}

/// Worlds that ended in the last step, for AutoReset::kDisabled (the user's reset call).
std::vector<uint8_t> finished(Simulator& sim) {
    const uint32_t W = sim.num_worlds();
    std::vector<uint8_t> term = fetch<uint8_t>(sim, sim.tensor("terminated").data, W);
    std::vector<uint8_t> trunc = fetch<uint8_t>(sim, sim.tensor("truncated").data, W);
    for (uint32_t w = 0; w < W; ++w) term[w] = term[w] || trunc[w];
    return term;
}

struct RunResult {
    uint64_t batch[3] = {};
    std::vector<uint64_t> worlds; ///< every world's hash after the last step
    uint32_t episode_ends = 0;    ///< in world 0, to check the scenario crosses several
};

/// Runs the fixed scenario of `pin` on `opts` (device, threads, lanes, worlds).
RunResult run(const Pin& pin, orrery::SimOptions opts) {
    const Scenario& sc = scenario_of(pin);
    orrery::register_builtin_envs();
    opts.autoreset = pin.mode;
    Simulator sim(orrery::make_env_spec(sc.env, sc.options), opts);
    sim.reset(kSeed);
    RunResult out;
    size_t next_pin = 0;
    for (uint32_t step = 0; step < kSteps; ++step) {
        if (step > 0) {
            std::vector<uint8_t> done = finished(sim);
            out.episode_ends += done[0];
            if (pin.mode == AutoReset::kDisabled && std::count(done.begin(), done.end(), 1) > 0) sim.reset_worlds(done);
        }
        write_actions(sim, step);
        sim.step();
        sim.check_errors();
        if (next_pin < 3 && step + 1 == kPinnedSteps[next_pin]) {
            out.worlds = world_hashes(sim);
            out.batch[next_pin++] = batch_hash(out.worlds);
        }
    }
    return out;
}

orrery::SimOptions options(const std::string& device, uint32_t worlds, uint32_t threads, uint32_t lanes) {
    orrery::SimOptions o;
    o.device = device;
    o.num_worlds = worlds;
    o.threads = threads;
    o.cpu_lanes = lanes;
    return o;
}

/// The pin's row as it would be written in kPins, for a deliberate update.
std::string pin_row(const Pin& pin, const RunResult& r) {
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "    {\"%s\", AutoReset::%s, {0x%016" PRIx64 ", 0x%016" PRIx64 ", 0x%016" PRIx64 "}, 0x%016" PRIx64
                  "},",
                  pin.scenario, mode_name(pin.mode), r.batch[0], r.batch[1], r.batch[2], r.worlds[0]);
    return buf;
}

/// Compares a run with its pins; on a mismatch prints the row that would pin it.
void expect_pinned(const Pin& pin, const RunResult& r, const std::string& what) {
    bool same = r.worlds[0] == pin.world0;
    for (int i = 0; i < 3; ++i) same = same && r.batch[i] == pin.batch[i];
    EXPECT_TRUE(same) << what << ": the state hashes differ from the pinned ones. If the change is intended, "
                      << "replace the row in kPins with\n"
                      << pin_row(pin, r) << "\nand give the reason in the "
                      << "commit message (docs/decisions.md, \"Pinned determinism hashes\").";
}

class PinnedHash : public ::testing::TestWithParam<Pin> {};

std::string pin_name(const ::testing::TestParamInfo<Pin>& info) {
    return std::string(info.param.scenario) + "_" + (mode_name(info.param.mode) + 1);
}

// The CPU backend with 1 and 2 threads and 1 and 3 lanes: one set of constants.
TEST_P(PinnedHash, Cpu) {
    const Pin& pin = GetParam();
    for (uint32_t threads : {1u, 2u})
        for (uint32_t lanes : {1u, 3u}) {
            RunResult r = run(pin, options("cpu", kWorlds, threads, lanes));
            expect_pinned(pin, r, "cpu, " + std::to_string(threads) + " threads, " + std::to_string(lanes) + " lanes");
            EXPECT_GE(r.episode_ends, 3u) << "the scenario should cross several episode ends";
        }
}

// A world's hash does not depend on how many worlds share the batch.
TEST_P(PinnedHash, CpuWorldHashIgnoresBatchSize) {
    const Pin& pin = GetParam();
    RunResult narrow = run(pin, options("cpu", kWorlds, 2, 1));
    RunResult wide = run(pin, options("cpu", kWiderWorlds, 2, 1));
    RunResult single = run(pin, options("cpu", 1, 1, 1));
    EXPECT_EQ(wide.worlds[0], pin.world0);
    EXPECT_EQ(single.worlds[0], pin.world0);
    for (uint32_t w = 0; w < kWorlds; ++w) EXPECT_EQ(wide.worlds[w], narrow.worlds[w]) << "world " << w;
}

// The CUDA backend gives the CPU's constants, bit for bit (floats included).
TEST_P(PinnedHash, Cuda) {
    REQUIRE_GPU();
    const Pin& pin = GetParam();
    expect_pinned(pin, run(pin, options("cuda", kWorlds, 2, 1)), "cuda");
    EXPECT_EQ(run(pin, options("cuda", kWiderWorlds, 2, 1)).worlds[0], pin.world0) << "cuda, 64 worlds";
}

INSTANTIATE_TEST_SUITE_P(Determinism, PinnedHash, ::testing::ValuesIn(kPins), pin_name);

// Every shipped env and every scenario is pinned in every autoreset mode.
TEST(Determinism, EveryEnvAndModeIsPinned) {
    orrery::register_builtin_envs();
    std::set<std::string> pinned_envs;
    for (const Scenario& sc : scenarios())
        for (AutoReset mode : {AutoReset::kNextStep, AutoReset::kSameStep, AutoReset::kDisabled}) {
            bool found = false;
            for (const Pin& pin : kPins) found = found || (pin.scenario == std::string(sc.name) && pin.mode == mode);
            EXPECT_TRUE(found) << sc.name << " has no pin for AutoReset::" << mode_name(mode);
            pinned_envs.insert(sc.env);
        }
    for (const auto& [env, summary] : orrery::registered_envs())
        EXPECT_TRUE(pinned_envs.count(env)) << "env '" << env << "' has no pinned scenario";
}

} // namespace
