// The committed seed corpora of fuzz_checkpoint and fuzz_snapshot are current:
// each seed is what the fuzz target's simulator for its first byte accepts
// (so the fuzzer starts from valid files, not from inputs rejected at the
// header), and it fits the fuzzer's 64 KiB input limit. A change of a world's
// layout (a new component, a buffer's capacity) stales them: rewrite them with
//
//     ORRERY_WRITE_FUZZ_SEEDS=1 build/release/tests/fuzz_seeds_test
//
// from the repository root, and commit the files it names.

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

#include "tests/fuzz/fuzz_support.hpp"

namespace {
using namespace orrery;

struct Seed {
    const char* file; ///< the seed's name in both corpora
    uint8_t pick;     ///< its first byte: fuzz::simulator_for's choice
};
const Seed kSeeds[] = {
    {"tag", 0}, {"overcooked", 1}, {"physics_grab", 2}, {"hide_and_seek", 3}, {"physics_hulls", 4},
};
constexpr size_t kMaxInput = 65536; // tools/fuzz.sh's -max_len

std::string corpus(const char* target, const char* file) {
    return std::string(ORRERY_SOURCE_DIR) + "/tests/fuzz/corpus/" + target + "/" + file;
}

std::string read_all(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

void write_all(const std::string& path, const std::string& bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
    ASSERT_TRUE(out.good()) << "could not write " << path;
    std::printf("wrote %s (%zu bytes)\n", path.c_str(), bytes.size());
}

std::string temp_path(const char* what) {
    return std::string(::testing::TempDir()) + "orrery_seed_" + what + "_" + std::to_string(::getpid());
}

/// `pick` followed by `bytes`: a seed.
std::string seed(uint8_t pick, const std::string& bytes) {
    std::string out;
    out.reserve(bytes.size() + 1);
    out.push_back(char(pick));
    out.append(bytes);
    return out;
}

/// The seeds as the fuzz targets' simulators make them today.
void write_seeds() {
    for (const Seed& s : kSeeds) {
        Simulator& sim = fuzz::simulator_for(s.pick);
        const std::string path = temp_path("ckpt");
        sim.save_checkpoint(path);
        write_all(corpus("fuzz_checkpoint", s.file), seed(s.pick, read_all(path)));
        std::remove(path.c_str());
        WorldSnapshot snap = sim.save_world(0);
        write_all(corpus("fuzz_snapshot", s.file), seed(s.pick, std::string(snap.bytes.begin(), snap.bytes.end())));
    }
}

TEST(FuzzSeeds, EveryCommittedSeedIsAcceptedAndFitsTheInputLimit) {
    if (std::getenv("ORRERY_WRITE_FUZZ_SEEDS")) write_seeds();
    for (const Seed& s : kSeeds) {
        SCOPED_TRACE(s.file);
        Simulator& sim = fuzz::simulator_for(s.pick);

        // fuzz_checkpoint: byte 0 picks the simulator, the rest is the file
        // (its last four bytes the CRC, which the target recomputes anyway).
        std::string ckpt = read_all(corpus("fuzz_checkpoint", s.file));
        ASSERT_GT(ckpt.size(), 5u) << "missing or empty";
        EXPECT_LE(ckpt.size(), kMaxInput);
        EXPECT_EQ(uint8_t(ckpt[0]) % 5, s.pick);
        const std::string path = temp_path("load");
        write_all(path, ckpt.substr(1));
        try {
            sim.load_checkpoint(path);
        } catch (const Error& e) { ADD_FAILURE() << "the checkpoint seed is refused: " << e.what(); }
        std::remove(path.c_str());
        // A seed of a world in error (a full contact list, say) would start
        // the fuzzer from a world that no longer steps.
        EXPECT_EQ(sim.errors(), std::vector<uint32_t>(sim.num_worlds(), 0)) << "the seed's worlds hold errors";

        // fuzz_snapshot: byte 0 picks, the rest is world 0's snapshot bytes.
        std::string snap_bytes = read_all(corpus("fuzz_snapshot", s.file));
        ASSERT_FALSE(snap_bytes.empty()) << "missing";
        EXPECT_LE(snap_bytes.size(), kMaxInput);
        WorldSnapshot snap = sim.save_world(0);
        EXPECT_EQ(snap_bytes.size() - 1, snap.bytes.size()) << "the snapshot seed is not one world's bytes";
        std::memset(snap.bytes.data(), 0, snap.bytes.size());
        std::memcpy(snap.bytes.data(), snap_bytes.data() + 1, std::min(snap_bytes.size() - 1, snap.bytes.size()));
        try {
            sim.restore_world(1, snap);
        } catch (const Error& e) { ADD_FAILURE() << "the snapshot seed is refused: " << e.what(); }
    }
}

} // namespace
