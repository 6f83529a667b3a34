// Fuzzes load_checkpoint as a forger would: the input's last four bytes are
// replaced by the CRC-32 of the rest, so mutations get past the checksum and
// reach the header, length and field checks. The first byte picks the env
// (fuzz::simulator_for: tag, Overcooked, two physics scenes, hide-and-seek).

#include <zlib.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 5) return 0;
    orrery::Simulator& sim = orrery::fuzz::simulator_for(data[0]);
    std::string file(reinterpret_cast<const char*>(data + 1), size - 1);
    uint32_t crc = uint32_t(crc32(0L, reinterpret_cast<const Bytef*>(file.data()), uInt(file.size() - 4)));
    std::memcpy(file.data() + file.size() - 4, &crc, 4);
    static const std::string path = "/tmp/orrery_fuzz_checkpoint_" + std::to_string(::getpid());
    FILE* f = std::fopen(path.c_str(), "wb");
    if (!f) return 0;
    std::fwrite(file.data(), 1, file.size(), f);
    std::fclose(f);
    const std::vector<uint64_t> before = orrery::fuzz::hashes(sim);
    try {
        sim.load_checkpoint(path);
    } catch (const orrery::Error&) {
        orrery::fuzz::require_untouched(sim, before, "checkpoint");
        return 0;
    }
    orrery::fuzz::exercise(sim);
    return 0;
}
