#pragma once
// The engine's own per-world operations between env nodes: starting a step,
// auto-reset, counting steps and keeping final observations. Backends call
// them in the order Plan gives; they compile under NVRTC too.

#include "engine/ctx.hpp"

namespace orrery {

/// When finished worlds are reset (Gymnasium's autoreset modes).
enum class AutoReset : uint8_t {
    kNextStep = 0, ///< the step after the end resets the world and ignores its actions
    kSameStep = 1, ///< the ending step resets at once; final_<name> keeps the last outputs
    kDisabled = 2, ///< worlds stay finished until reset() names them
};

/// Clears the world and marks it for the init nodes of this pass (`fresh`: a
/// full reset, see clear_world).
ORRERY_HD inline void begin_world_reset(const Storage& s, uint32_t w, uint32_t episode, bool fresh = false) {
    clear_world(s, w, fresh);
    WorldMeta& m = s.meta[w];
    m.episode = episode;
    m.step = 0;
    m.flags = kResetting | kSkipStep | kEntitiesChanged;
    s.terminated[w] = 0;
    s.truncated[w] = 0;
}

/// First op of a step: clears last step's errors and, in next-step mode,
/// starts the reset of worlds that finished in the previous step.
ORRERY_HD inline void begin_step(const Storage& s, uint32_t w, AutoReset mode) {
    s.errors[w] = 0;
    s.meta[w].flags &= kEntitiesChanged; // pending entity changes still need their barrier
    bool done = s.terminated[w] || s.truncated[w];
    if (done && mode == AutoReset::kNextStep) {
        begin_world_reset(s, w, s.meta[w].episode + 1);
        return;
    }
    if (done && mode == AutoReset::kDisabled) {
        s.meta[w].flags = kSkipStep | (s.meta[w].flags & kEntitiesChanged); // waits for reset()
        return;
    }
    s.terminated[w] = 0;
    s.truncated[w] = 0;
}

/// After the step nodes: counts the step in worlds that took it.
ORRERY_HD inline void end_step(const Storage& s, uint32_t w) {
    if (!(s.meta[w].flags & kSkipStep)) s.meta[w].step += 1;
}

/// Same-step mode, after the observe nodes: a world that just ended keeps its
/// outputs in the final_<name> buffers and is reset; the init and re-observe
/// nodes then build its next episode's first observation.
ORRERY_HD inline void finish_same_step(const Storage& s, uint32_t w) {
    if ((s.meta[w].flags & kSkipStep) || !(s.terminated[w] || s.truncated[w])) return;
    for (uint32_t i = 0; i < s.num_finals; ++i) {
        size_t n = s.final_bytes[i];
        const uint8_t* src = s.final_src[i] + n * w;
        uint8_t* dst = s.final_dst[i] + n * w;
        for (size_t k = 0; k < n; ++k) dst[k] = src[k];
    }
    uint8_t term = s.terminated[w], trunc = s.truncated[w];
    begin_world_reset(s, w, s.meta[w].episode + 1);
    s.terminated[w] = term; // the step still reports how the episode ended
    s.truncated[w] = trunc;
    s.meta[w].flags = kResetting | kEntitiesChanged;
}

/// First op of a reset pass: resets the worlds whose reset_request is set
/// (1: next episode, 2: episode 0 of a new seed already written to meta).
ORRERY_HD inline void begin_requested_reset(const Storage& s, uint32_t w) {
    uint8_t request = s.reset_request[w];
    s.meta[w].flags &= kEntitiesChanged;
    if (!request) return;
    s.errors[w] = 0;
    begin_world_reset(s, w, request == 2 ? 0 : s.meta[w].episode + 1, request == 2);
    s.meta[w].flags = kResetting | kEntitiesChanged;
    s.reset_request[w] = 0;
}

/// One ranged integer input (an action column) that SimOptions::random_inputs
/// fills with uniform draws each step.
struct RandomInput {
    uint32_t archetype, component;
    uint32_t elements;   ///< per world: capacity * elements per row
    uint32_t elem_bytes; ///< 1, 2, 4 or 8 (two's complement, little-endian)
    int64_t lo, hi;      ///< inclusive range
};

/// RNG stream of the i-th random input (far from the small streams envs use).
inline constexpr uint32_t kRandomInputStream = 0x52414E00u;

/// Fills every random input of world w with values uniform in its range, drawn
/// from the world's own stream keyed by (seed, identity, episode, step): the
/// same values on every backend, batch size and thread count.
ORRERY_HD inline void draw_random_inputs(const Storage& s, uint32_t w, const RandomInput* in, uint32_t n) {
    const WorldMeta& m = s.meta[w];
    for (uint32_t i = 0; i < n; ++i) {
        const RandomInput& r = in[i];
        Rng rng(m.seed, m.identity, m.episode, m.step, kRandomInputStream + i);
        uint8_t* base = s.tables[r.archetype].columns[r.component] + size_t(w) * r.elements * r.elem_bytes;
        uint32_t span = uint32_t(r.hi - r.lo + 1);
        for (uint32_t k = 0; k < r.elements; ++k) {
            uint64_t v = uint64_t(r.lo + int64_t(rng.below(span)));
            uint8_t* p = base + size_t(k) * r.elem_bytes; // aligned to its width: columns are
            switch (r.elem_bytes) {
            case 1: *p = uint8_t(v); break;
            case 2: *reinterpret_cast<uint16_t*>(p) = uint16_t(v); break;
            case 4: *reinterpret_cast<uint32_t*>(p) = uint32_t(v); break;
            default: *reinterpret_cast<uint64_t*>(p) = v; break;
            }
        }
    }
}

/// An output declared Output::kClearedEachStep: one world's span of it is
/// `bytes_per_world` contiguous bytes (capacity rows) of its column.
struct ClearedOutput {
    uint32_t archetype, component, bytes_per_world;
};

/// Lane `lane` of `lanes`'s share of zeroing world w's cleared outputs, before
/// its observe nodes run.
ORRERY_HD inline void clear_outputs(const Storage& s, uint32_t w, const ClearedOutput* out, uint32_t n, uint32_t lane,
                                    uint32_t lanes) {
    for (uint32_t i = 0; i < n; ++i) {
        const ClearedOutput& c = out[i];
        fill_bytes_lanes(s.tables[c.archetype].columns[c.component] + size_t(w) * c.bytes_per_world, 0,
                         c.bytes_per_world, lane, lanes);
    }
}

/// The engine ops that sit between env nodes in a pass over the worlds.
/// kClearOutputs runs in the worlds where its phase (kObserve or kReobserve) is active.
enum class OpKind : uint8_t {
    kBeginStep,
    kRandomInputs,
    kEndStep,
    kFinishSameStep,
    kBeginRequestedReset,
    kClearOutputs,
    kNode
};

} // namespace orrery
