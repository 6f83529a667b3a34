#pragma once
// What a system sees: one world's storage plus the engine's per-world services
// (episode and step counters, random numbers, the env config, episode ends and
// error codes), and the adapters that run a system over worlds or entities.
// Compiles under g++, nvcc and NVRTC; the CPU executor and the megakernel call
// the same run_world / run_each instantiations.

#include "ecs/storage.hpp"
#include "engine/rng.hpp"

namespace orrery {

/// How a node maps onto worlds and entities.
enum class NodeKind : uint8_t {
    kPerWorld,       ///< F(Ctx&) once per world
    kPerEntity,      ///< F(Ctx&, components...) per live entity having those components
    kApplyDestroys,  ///< built-in destruction barrier
    kPerWorldLanes,  ///< F(Ctx&, lane, lanes) per world, its lanes possibly at once
    kPerEntityLanes, ///< as kPerEntity, several entities of one world possibly at once
    kPerWorldTeam,   ///< F(Ctx&, const Lanes&) per world, its lanes at once, meeting at Lanes::sync()
};

/// Nodes whose work the staged GPU megakernel spreads over a world's lanes.
ORRERY_HD inline bool is_lane_kind(NodeKind k) {
    return k == NodeKind::kPerWorldLanes || k == NodeKind::kPerEntityLanes || k == NodeKind::kPerWorldTeam;
}

/// One lane of a world's team (ORRERY_PER_WORLD_TEAM): which lane this call
/// is, how many the world has, and the barrier between its phases.
struct Lanes {
    uint32_t lane = 0;              ///< 0..count-1
    uint32_t count = 1;             ///< the world's lanes, chosen by the engine (1 on the CPU by default)
    uint32_t mask = 0;              ///< GPU: the world's threads in their warp (__syncwarp's mask)
    void (*wait_)(void*) = nullptr; ///< CPU with SimOptions::cpu_lanes > 1: the team's barrier
    void* team_ = nullptr;
    /// GPU, per-node kernels with teams of a whole warp: the threads of the
    /// block's teams that run this node (align()'s count); 0 elsewhere.
    uint32_t block_threads = 0;

    /// Waits until every lane of the world has reached this call, and makes
    /// what each wrote before it visible to all after it. Every lane must make
    /// the same sequence of calls (no sync under a lane-dependent branch).
    ORRERY_HD void sync() const {
#if defined(__CUDA_ARCH__)
        if (count > 1) __syncwarp(mask);
#else
        if (wait_) wait_(team_);
#endif
    }

    /// Waits until every team of this GPU block that runs the node has
    /// reached this call (a barrier over those teams; no data is exchanged).
    /// Teams that start a phase of a large node together run the same code
    /// at once, so the SM fetches each instruction once for all of them:
    /// phys::simulate aligns before each substep, +30 % on an H200
    /// (docs/perf-notes.md row 37), and before its solve and relax passes
    /// too, +12 % more (row 49). Every team must make the same number of
    /// calls. Only per-node kernels whose teams are whole warps align (the
    /// engine counts the block's teams before the node starts); elsewhere,
    /// and on the CPU, it does nothing.
    ORRERY_HD void align() const {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 700 // barrier 1 (0 is __syncthreads'), counted a thread at a time
        if (block_threads) asm volatile("barrier.sync 1, %0;" ::"r"(block_threads) : "memory");
#elif defined(__CUDA_ARCH__)
        if (block_threads) asm volatile("bar.sync 1, %0;" ::"r"(block_threads) : "memory");
#endif
    }
};

/// Which part of a step a node belongs to. kReobserve is the observe list run a
/// second time, only in worlds reset late in the step (same-step autoreset).
enum class Phase : uint8_t { kInit, kStep, kObserve, kReobserve };

/// Whether nodes of `phase` run in world w during this step.
ORRERY_HD inline bool phase_active(const Storage& s, uint32_t w, Phase phase) {
    uint32_t f = s.meta[w].flags;
    switch (phase) {
    case Phase::kInit: return (f & kResetting) != 0;
    case Phase::kStep: return (f & kSkipStep) == 0;
    case Phase::kObserve: return true;
    case Phase::kReobserve: return (f & kResetting) != 0;
    }
    return false;
}

/// The context every system receives: a WorldView plus engine services.
class Ctx : public WorldView {
  public:
    ORRERY_HD Ctx(const Storage& s, uint32_t world) : WorldView(s, world) {}

    /// Episodes this world has started since the last full reset (0-based).
    ORRERY_HD uint32_t episode() const { return s_->meta[world_].episode; }
    /// Steps taken in the current episode before this one (0 during reset).
    ORRERY_HD uint32_t step() const { return s_->meta[world_].step; }
    /// The entity a per-entity system is running for (null in per-world systems).
    ORRERY_HD Entity self() const { return self_; }

    /// Random numbers keyed by (seed, world, episode, step, stream). The world
    /// key is the index the world had at reset, so a copied world draws the same
    /// numbers as its original. Use distinct streams for distinct purposes;
    /// per-entity systems should fold in the row.
    ORRERY_HD Rng rng(uint32_t stream = 0) const {
        const WorldMeta& m = s_->meta[world_];
        return Rng(m.seed, m.identity, m.episode, m.step, stream);
    }

    /// A scheduling hint from a node whose teams are ordered by cost
    /// (EnvSpec::order_teams): how long this world's next run of the node is
    /// likely to take, in the node's own units (the engine keeps
    /// kCostBuckets - 1 at most). The GPU hands the node's next launch the
    /// worlds costliest first, so a block's teams, which wait for each other
    /// at Lanes::align, get worlds of like cost. It changes which team runs a
    /// world, never a result; on the CPU it does nothing.
    ORRERY_HD void cost_hint(uint32_t cost) const {
        if (wants_cost_hint()) s_->team_cost[world_] = cost < kCostBuckets ? cost : kCostBuckets - 1u;
    }
    /// True where cost_hint is kept (a GPU that orders this env's teams): a
    /// node may skip working out a hint elsewhere.
    ORRERY_HD bool wants_cost_hint() const { return s_->team_cost != nullptr; }
    /// Moves the hint this world last left by `delta` (kept within 0 to
    /// kCostBuckets - 1): for a node that runs before the ordered one and
    /// changes what its next run costs (a joint made or removed before the
    /// physics step), so the order sees this step's work and not only the
    /// last. Like cost_hint, a schedule, never a result; nothing on the CPU.
    ORRERY_HD void add_cost_hint(int32_t delta) const {
        if (!wants_cost_hint()) return;
        const int32_t c = int32_t(s_->team_cost[world_]) + delta, last = int32_t(kCostBuckets - 1u);
        s_->team_cost[world_] = uint32_t(c < 0 ? 0 : c > last ? last : c);
    }

    /// The env's configuration struct, as registered with EnvSpec::config.
    template <class C> ORRERY_HD const C& config() const { return *reinterpret_cast<const C*>(s_->config); }

    /// Step scratch T of this node (EnvSpec::scratch): storage of this run of
    /// the node only, shared by the world's lanes, whose contents are left by
    /// whichever world used the slot last. Write before reading. Null in a node
    /// that declared no scratch and outside the step (world views, snapshots).
    /// Scratch the node keeps on chip (EnvSpec::scratch_shared) is in the
    /// team's shared memory where the GPU gave it a region, else in the slot.
    template <class T> ORRERY_HD T* scratch() const {
        if (!scratch_ || !((s_->scratch_components >> component_id<T>)&1u)) return nullptr;
        if (shared_ && ((s_->scratch_shared_components >> component_id<T>)&1u))
            return reinterpret_cast<T*>(shared_ + shared_scratch_offset(*s_, component_id<T>));
        return reinterpret_cast<T*>(scratch_ + scratch_offset(*s_, component_id<T>));
    }
    /// Step scratch buffer T (a BufferOf component declared with EnvSpec::scratch
    /// and sized with EnvSpec::capacity); empty where scratch<T>() is null. Its
    /// count is the slot's too: clear() or resize() it before reading.
    template <class T> ORRERY_HD Buffer<T> scratch_buffer() const {
        static_assert(detail::IsBufferComponent<T>::value, "scratch_buffer<T>() is for BufferOf<...> components");
        uint8_t* p = reinterpret_cast<uint8_t*>(scratch<T>());
        if (!p) return {};
        Buffer<T> out;
        out.count_ = reinterpret_cast<uint32_t*>(p);
        out.items_ = reinterpret_cast<typename T::Element*>(p + kBufferHeaderBytes);
        out.capacity_ = buffer_capacity<T>();
        out.error_ = &s_->errors[world_];
        return out;
    }

    /// Step scratch array T (an ArrayOf component declared with EnvSpec::scratch,
    /// shaped with EnvSpec::dims); empty where scratch<T>() is null.
    template <class T> ORRERY_HD Array<T> scratch_array() const {
        static_assert(detail::IsArrayComponent<T>::value, "scratch_array<T>() is for ArrayOf<...> components");
        Array<T> out;
        out.data = reinterpret_cast<typename T::Element*>(scratch<T>());
        out.size = out.data ? s_->row_bytes[component_id<T>] / uint32_t(sizeof(typename T::Element)) : 0u;
        return out;
    }

    /// Ends the episode: the env reached a terminal state.
    ORRERY_HD void terminate() const { s_->terminated[world_] = 1; }
    /// Ends the episode by a time limit or other cut that is not terminal.
    ORRERY_HD void truncate() const { s_->truncated[world_] = 1; }

    Entity self_{};
    uint8_t* scratch_ = nullptr; ///< this node's scratch slot (EnvSpec::scratch), null when it declared none
    uint8_t* shared_ = nullptr;  ///< GPU: the team's shared-memory region (EnvSpec::scratch_shared), else null
};

namespace detail {

template <class P> struct Fetch; // how a per-entity system parameter is read from a row
template <class T> struct Fetch<T&> {
    using Component = T;
    ORRERY_HD static T& get(const Ctx& c, uint32_t arch, uint32_t row) {
        const ArchetypeTable& t = c.storage().tables[arch];
        return reinterpret_cast<T*>(t.columns[component_id<T>])[c.slot(t, row)];
    }
};
template <class T> struct Fetch<const T&> {
    using Component = T;
    ORRERY_HD static const T& get(const Ctx& c, uint32_t arch, uint32_t row) { return Fetch<T&>::get(c, arch, row); }
};
template <class T> struct Fetch<Array<T>> {
    using Component = T;
    ORRERY_HD static Array<T> get(const Ctx& c, uint32_t arch, uint32_t row) {
        return c.template array_at<T>(arch, row);
    }
};

template <class T> struct Fetch<Buffer<T>> {
    using Component = T;
    ORRERY_HD static Buffer<T> get(const Ctx& c, uint32_t arch, uint32_t row) {
        return c.template buffer_at<T>(arch, row);
    }
};

/// Calls f on world w's live entities that have its components: rows lane,
/// lane + lanes, ... of each matching archetype.
template <class... Ps>
ORRERY_HD void each_entity(void (*f)(Ctx&, Ps...), const Storage& s, uint32_t w, uint32_t lane = 0,
                           uint32_t lanes = 1) {
    Ctx ctx(s, w);
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const ArchetypeTable& t = s.tables[a];
        bool match = true;
        uint32_t ids[] = {component_id<typename Fetch<Ps>::Component>..., 0u};
        for (uint32_t i = 0; i < sizeof...(Ps); ++i) match = match && t.columns[ids[i]] != nullptr;
        if (!match) continue;
        uint32_t end = min_of(t.high_water[w], t.capacity);
        for (uint32_t row = lane; row < end; row += lanes) {
            uint32_t r = ctx.slot(t, row);
            if (!t.alive[r]) continue;
            ctx.self_ = Entity::make(a, row, t.generation[r]);
            f(ctx, Fetch<Ps>::get(ctx, a, row)...);
        }
    }
}

} // namespace detail

/// Runs per-world system F on world w; `scratch` is its slot of step
/// scratch (EnvSpec::scratch), null when the node declared none.
template <auto F> ORRERY_HD void run_world(const Storage& s, uint32_t w, uint8_t* scratch = nullptr) {
    Ctx ctx(s, w);
    ctx.scratch_ = scratch;
    F(ctx);
}

/// Runs lane `lane` of `lanes` of per-world lane system F on world w.
template <auto F> ORRERY_HD void run_world_lane(const Storage& s, uint32_t w, uint32_t lane, uint32_t lanes) {
    Ctx ctx(s, w);
    F(ctx, lane, lanes);
}

/// Runs lane l.lane of per-world team system F on world w; every lane of the
/// team gets the same `scratch` slot (EnvSpec::scratch; null when none) and
/// the same `shared` region (EnvSpec::scratch_shared; null when none).
template <auto F>
ORRERY_HD void run_world_team(const Storage& s, uint32_t w, const Lanes& l, uint8_t* scratch = nullptr,
                              uint8_t* shared = nullptr) {
    Ctx ctx(s, w);
    ctx.scratch_ = scratch;
    ctx.shared_ = shared;
    F(ctx, l);
}

/// Runs per-entity system F over every live entity of world w whose archetype
/// has all of F's component parameters.
template <auto F> ORRERY_HD void run_each(const Storage& s, uint32_t w) { detail::each_entity(F, s, w); }

/// Lane `lane` of `lanes` of per-entity lane system F on world w: every lanes-th row.
template <auto F> ORRERY_HD void run_each_lane(const Storage& s, uint32_t w, uint32_t lane, uint32_t lanes) {
    detail::each_entity(F, s, w, lane, lanes);
}

} // namespace orrery
