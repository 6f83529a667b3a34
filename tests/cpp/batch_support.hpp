#pragma once
// Shared by the tests that compare whole batches (hide-and-seek's rule and
// parity tests, the physics playground): a batch's hash, its state as bytes,
// and a named tensor read back to the host, on either backend.

#include <cstdint>
#include <string>
#include <vector>

#include "engine/simulator.hpp"

/// FNV-1a over every world's whole state (Simulator::state_hash).
inline uint64_t batch_hash(orrery::Simulator& sim) {
    uint64_t h = 14695981039346656037ull;
    for (uint32_t w = 0; w < sim.num_worlds(); ++w) h = (h ^ sim.state_hash(w)) * 1099511628211ull;
    return h;
}

/// Every byte of the batch's state, what state_hash covers (StorageLayout's
/// regions) for all worlds at once: each archetype's columns and row
/// bookkeeping, world meta, errors and done flags. One copy per column;
/// state_hash copies world by world and region by region, which on a GPU made
/// the parity tests mostly memcpy calls.
inline std::vector<uint8_t> state_bytes(orrery::Simulator& sim) {
    sim.synchronize();
    const orrery::Storage& s = sim.backend().storage();
    const size_t W = s.num_worlds;
    std::vector<uint8_t> out;
    auto add = [&](const void* src, size_t n) {
        size_t at = out.size();
        out.resize(at + n);
        sim.backend().copy_to_host(out.data() + at, src, n);
    };
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const orrery::ArchetypeTable& t = s.tables[a];
        for (uint32_t c = 0; c < s.num_components; ++c)
            if (t.columns[c]) add(t.columns[c], size_t(t.capacity) * s.row_bytes[c] * W);
        add(t.generation, sizeof(uint32_t) * t.capacity * W);
        add(t.alive, size_t(t.capacity) * W);
        add(t.doomed, size_t(t.capacity) * W);
        add(t.free_rows, sizeof(uint32_t) * t.capacity * W);
        for (const void* counter : {static_cast<const void*>(t.free_top), static_cast<const void*>(t.high_water),
                                    static_cast<const void*>(t.live)})
            add(counter, sizeof(uint32_t) * W);
    }
    add(s.meta, sizeof(orrery::WorldMeta) * W);
    add(s.errors, sizeof(uint32_t) * W);
    add(s.terminated, W);
    add(s.truncated, W);
    return out;
}

/// Where two byte images first differ ("" when equal).
inline std::string first_difference(const std::vector<uint8_t>& a, const std::vector<uint8_t>& b) {
    if (a.size() != b.size()) return "sizes " + std::to_string(a.size()) + " and " + std::to_string(b.size());
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i] != b[i]) return "byte " + std::to_string(i) + " of " + std::to_string(a.size());
    return "";
}

/// Exported tensor `name` of the whole batch, read back to the host.
template <class T> std::vector<T> fetch(orrery::Simulator& sim, const std::string& name) {
    sim.synchronize();
    const orrery::TensorView& t = sim.tensor(name);
    std::vector<T> out(t.bytes() / sizeof(T));
    sim.backend().copy_to_host(out.data(), t.data, t.bytes());
    return out;
}
