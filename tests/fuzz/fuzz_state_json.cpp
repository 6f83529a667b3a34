// Fuzzes Overcooked's set_state JSON: a rejected dict leaves the world as it
// was; an accepted one must step and serialise cleanly.

#include <cstdint>
#include <string>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    orrery::Simulator& sim = orrery::fuzz::simulator("overcooked");
    const std::vector<uint64_t> before = orrery::fuzz::hashes(sim);
    try {
        sim.set_state_json(1, std::string(reinterpret_cast<const char*>(data), size));
    } catch (const orrery::Error&) {
        orrery::fuzz::require_untouched(sim, before, "state dict");
        return 0;
    }
    orrery::fuzz::exercise(sim);
    return 0;
}
