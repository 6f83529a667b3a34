// Fuzzes restore_world: the input, cut or zero-padded to the snapshot size so
// that mutations reach the fields, is restored into world 1 of tag,
// Overcooked, two physics scenes or hide-and-seek (the first byte picks the
// env: fuzz::simulator_for). Rejections must leave the simulator untouched;
// accepted snapshots must step cleanly.

#include <cstdint>
#include <cstring>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size == 0) return 0;
    orrery::Simulator& sim = orrery::fuzz::simulator_for(data[0]);
    orrery::WorldSnapshot snap = sim.save_world(0);
    std::memset(snap.bytes.data(), 0, snap.bytes.size());
    std::memcpy(snap.bytes.data(), data + 1, std::min(size - 1, snap.bytes.size()));
    const std::vector<uint64_t> before = orrery::fuzz::hashes(sim);
    try {
        sim.restore_world(1, snap);
    } catch (const orrery::Error&) {
        orrery::fuzz::require_untouched(sim, before, "snapshot");
        return 0;
    }
    orrery::fuzz::exercise(sim);
    return 0;
}
