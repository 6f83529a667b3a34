#pragma once
// Checkpoint files and the check of untrusted world bytes. A checkpoint is
// streamed to and from disk one world at a time; every world it holds, like
// every snapshot given to restore_world, is checked field by field before any
// of it reaches the simulator (the CRC catches accidents, not intent).

#include <cstdint>
#include <string>

#include "engine/env.hpp"

namespace orrery {

/// Checks the engine's bookkeeping of world `w` in `s` (alive, doomed and
/// generation of every row, high-water mark, live count, free list, flags,
/// terminated/truncated) against the declared capacities; throws orrery::Error
/// naming the archetype, row and field and the value expected.
void check_world_storage(const EnvSpec& spec, const Storage& s, uint32_t w);

/// Checkpoint format: magic "ORRERYCK", u32 version, u32 header length, the
/// header (Simulator's schema text: env, options, sizes), u64 payload length
/// (num_worlds * snapshot bytes), each world's snapshot, CRC-32 of all before it.
inline constexpr uint32_t kCheckpointVersion = 2;
/// Longest header a checkpoint may declare.
inline constexpr uint32_t kMaxCheckpointHeader = 1u << 20;

} // namespace orrery
