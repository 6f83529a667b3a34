#pragma once
// The columnar store every backend shares. One table per archetype, one column
// per component; the rows of world w live in the fixed slab
// [w * capacity, (w + 1) * capacity), so a column is a dense
// [worlds, capacity, ...] tensor at a fixed address. These structs are plain
// data: the CPU executor reads them from host memory, the megakernel from
// device memory, with the same code.

#include "ecs/types.hpp"

namespace orrery {

inline constexpr uint32_t kMaxComponents = 32;
inline constexpr uint32_t kMaxArchetypes = 8;
inline constexpr uint32_t kMaxRowsPerWorld = 1u << 24; ///< rows fit the handle's 24-bit row field

/// Per-world error codes a step may record (first error in a world wins).
enum class ErrorCode : uint32_t {
    kNone = 0,
    kCapacityOverflow = 1, ///< create() found no free row in the world's slab
    kStaleEntity = 2,      ///< a system destroyed an entity whose handle was stale
    kBadAction = 3,        ///< an action value out of range reached a system
    kEnvBase = 256,        ///< env-specific codes start here
};

/// Generation-checked handle to an entity of one world. Handles are relative to
/// their world, so a world copied into another slot keeps valid handles.
struct Entity {
    uint32_t index = 0; ///< archetype << 24 | row within the world's slab
    uint32_t gen = 0;   ///< 0 is never live: Entity{} is the null handle

    ORRERY_HD constexpr uint32_t archetype() const { return index >> 24; }
    ORRERY_HD constexpr uint32_t row() const { return index & 0xFFFFFFu; }
    ORRERY_HD constexpr bool is_null() const { return gen == 0; }
    ORRERY_HD static constexpr Entity make(uint32_t arch, uint32_t row, uint32_t gen) {
        return Entity{(arch << 24) | row, gen};
    }
};
static_assert(sizeof(Entity) == 8, "Entity is two words");

/// Bookkeeping and columns of one archetype over all worlds.
struct ArchetypeTable {
    uint32_t capacity = 0;          ///< rows per world
    uint32_t singleton = 0;         ///< 1: row 0 is always live (per-world state)
    uint32_t* generation = nullptr; ///< [worlds * capacity], starts at 1
    uint8_t* alive = nullptr;       ///< [worlds * capacity]
    uint8_t* doomed = nullptr;      ///< [worlds * capacity] destroy requested, applied at a barrier
    uint32_t* free_rows = nullptr;  ///< [worlds * capacity] free rows, the lowest on top
    int32_t* free_top = nullptr;    ///< [worlds] entries in free_rows (negative while exhausted)
    uint32_t* high_water = nullptr; ///< [worlds] rows ever handed out (may pass capacity transiently)
    uint32_t* live = nullptr;       ///< [worlds] live rows
    uint8_t* columns[kMaxComponents] = {}; ///< column base, nullptr where absent
};

/// Engine-owned per-world state; part of every snapshot.
struct WorldMeta {
    uint64_t seed = 0;
    uint32_t episode = 0;
    uint32_t step = 0;  ///< steps taken in this episode
    uint32_t flags = 0; ///< WorldFlag bits
    uint32_t identity = 0; ///< RNG key: the world's index at reset; travels with copies
};
static_assert(sizeof(WorldMeta) == 24, "WorldMeta is checkpointed byte for byte");

enum WorldFlag : uint32_t {
    kSkipStep = 1u,  ///< this step reset the world: env step systems do not run
    kResetting = 2u, ///< the world is being reset in this step: init systems run
    /// An entity was created or destroyed since the world's last destruction
    /// barrier: only then has the barrier work to do (it is idempotent otherwise).
    kEntitiesChanged = 4u,
};

/// Every column and counter of a simulator, in one backend's memory space.
struct Storage {
    uint32_t num_worlds = 0;
    uint32_t num_archetypes = 0;
    uint32_t num_components = 0;
    uint32_t config_bytes = 0;
    uint32_t row_bytes[kMaxComponents] = {}; ///< bytes one row of each component takes
    ArchetypeTable tables[kMaxArchetypes];
    WorldMeta* meta = nullptr;      ///< [worlds]
    uint32_t* errors = nullptr;     ///< [worlds] ErrorCode, first one wins
    uint8_t* terminated = nullptr;  ///< [worlds] set by the env, cleared at the next step
    uint8_t* truncated = nullptr;   ///< [worlds]
    uint8_t* reset_request = nullptr; ///< [worlds] set by the host before a reset pass
    const uint8_t* config = nullptr; ///< env config blob, read-only during a step
    uint32_t num_finals = 0;          ///< exported outputs kept as final_<name> (same-step reset)
    uint32_t final_bytes[kMaxComponents] = {}; ///< bytes per world of each such export
    const uint8_t* final_src[kMaxComponents] = {};
    uint8_t* final_dst[kMaxComponents] = {};
};

/// A component whose rows are arrays sized at registration (ArrayOf<E>).
template <class T> struct Array {
    typename T::Element* data = nullptr;
    uint32_t size = 0;
    ORRERY_HD typename T::Element& operator[](uint32_t i) const { return data[i]; }
};

namespace detail {
template <class T, class = void> struct IsArrayComponent {
    static constexpr bool value = false;
};
template <class T> struct IsArrayComponent<T, decltype((void)T::kIsArray)> {
    static constexpr bool value = T::kIsArray;
};
} // namespace detail

/// Storage access for one world: entity lookup, creation, deferred destruction
/// and queries. Safe to use from several threads on the same world.
class WorldView {
  public:
    ORRERY_HD WorldView(const Storage& s, uint32_t world) : s_(&s), world_(world) {}

    /// The world's index in the batch.
    ORRERY_HD uint32_t world() const { return world_; }
    ORRERY_HD const Storage& storage() const { return *s_; }

    /// True when `e` names a live entity of this world (a stale handle is false).
    ORRERY_HD bool valid(Entity e) const {
        if (e.is_null() || e.archetype() >= s_->num_archetypes) return false;
        const ArchetypeTable& t = s_->tables[e.archetype()];
        if (e.row() >= t.capacity) return false;
        uint32_t r = slot(t, e.row());
        return t.alive[r] && t.generation[r] == e.gen;
    }

    /// Component T of `e`, or nullptr when the handle is stale or lacks T.
    template <class T> ORRERY_HD T* get(Entity e) const {
        if (!valid(e)) return nullptr;
        uint8_t* col = s_->tables[e.archetype()].columns[component_id<T>];
        if (!col) return nullptr;
        return reinterpret_cast<T*>(col) + slot(s_->tables[e.archetype()], e.row());
    }

    /// Array component T of `e` (empty when stale or absent).
    template <class T> ORRERY_HD Array<T> array(Entity e) const {
        if (!valid(e)) return {};
        return array_at<T>(e.archetype(), e.row());
    }

    /// Component T of archetype A at `row` of this world, live or not (row < capacity).
    template <class A, class T> ORRERY_HD T& at(uint32_t row) const {
        static_assert(has_component<A, T>, "archetype lacks this component");
        const ArchetypeTable& t = s_->tables[archetype_id<A>];
        return reinterpret_cast<T*>(t.columns[component_id<T>])[slot(t, row)];
    }

    /// Per-world state: component T of row 0 of singleton archetype A.
    template <class A, class T> ORRERY_HD T& single() const { return at<A, T>(0); }

    /// Live entities of archetype A in this world.
    template <class A> ORRERY_HD uint32_t count() const {
        return s_->tables[archetype_id<A>].live[world_];
    }

    /// Creates an entity of archetype A with zeroed components. Returns the null
    /// handle and records kCapacityOverflow when the world's slab is full.
    template <class A> ORRERY_HD Entity create() const { return create_in(archetype_id<A>); }

    /// Requests destruction of `e`; applied at the next destruction barrier, so
    /// the entity stays readable until then. Returns false for a stale handle.
    ORRERY_HD bool destroy(Entity e) const {
        if (!valid(e)) return false;
        const ArchetypeTable& t = s_->tables[e.archetype()];
        t.doomed[slot(t, e.row())] = 1;
        atomic_or(&s_->meta[world_].flags, kEntitiesChanged);
        return true;
    }

    /// Calls f(Entity) for each live entity of archetype A, in row order.
    template <class A, class F> ORRERY_HD void each(F&& f) const {
        constexpr uint32_t a = archetype_id<A>;
        const ArchetypeTable& t = s_->tables[a];
        uint32_t end = min_of(t.high_water[world_], t.capacity);
        for (uint32_t row = 0; row < end; ++row) {
            uint32_t r = slot(t, row);
            if (t.alive[r]) f(Entity::make(a, row, t.generation[r]));
        }
    }

    /// Records `code` for this world (the first code recorded in a step wins).
    ORRERY_HD void fail(uint32_t code) const { atomic_set_if_zero(&s_->errors[world_], code); }

    /// Global row index of `row` in table `t` for this world.
    ORRERY_HD uint32_t slot(const ArchetypeTable& t, uint32_t row) const {
        return world_ * t.capacity + row;
    }

    template <class T> ORRERY_HD Array<T> array_at(uint32_t arch, uint32_t row) const {
        const ArchetypeTable& t = s_->tables[arch];
        uint8_t* col = t.columns[component_id<T>];
        if (!col) return {};
        uint32_t bytes = s_->row_bytes[component_id<T>];
        Array<T> out;
        out.data = reinterpret_cast<typename T::Element*>(col + size_t(slot(t, row)) * bytes);
        out.size = bytes / sizeof(typename T::Element);
        return out;
    }

    ORRERY_HD Entity create_in(uint32_t arch) const;

  protected:
    const Storage* s_;
    uint32_t world_;
};

ORRERY_HD inline Entity WorldView::create_in(uint32_t arch) const {
    const ArchetypeTable& t = s_->tables[arch];
    atomic_or(&s_->meta[world_].flags, kEntitiesChanged); // even on overflow: the barrier clamps high_water
    int32_t top = atomic_sub(&t.free_top[world_], 1);
    uint32_t row;
    if (top > 0) {
        row = t.free_rows[slot(t, 0) + uint32_t(top - 1)];
    } else {
        row = atomic_add(&t.high_water[world_], 1);
        if (row >= t.capacity) {
            fail(uint32_t(ErrorCode::kCapacityOverflow));
            return Entity{};
        }
    }
    uint32_t r = slot(t, row);
    if (t.generation[r] == 0) t.generation[r] = 1; // generation 0 is the null handle's
    for (uint32_t c = 0; c < s_->num_components; ++c) {
        uint8_t* col = t.columns[c];
        if (!col) continue;
        uint32_t bytes = s_->row_bytes[c];
        uint8_t* p = col + size_t(r) * bytes;
        for (uint32_t i = 0; i < bytes; ++i) p[i] = 0;
    }
    t.doomed[r] = 0;
    t.alive[r] = 1;
    atomic_add(&t.live[world_], 1);
    return Entity::make(arch, row, t.generation[r]);
}

/// The destruction barrier for one world: frees doomed rows (bumping their
/// generation so old handles go stale) and rebuilds the free list, lowest row on
/// top, so allocation order is deterministic.
ORRERY_HD inline void apply_destroys(const Storage& s, uint32_t w) {
    // Nothing created or destroyed since the last barrier: it would rewrite the
    // same free lists and counts, so skip the walk over every row.
    if (!(s.meta[w].flags & kEntitiesChanged)) return;
    s.meta[w].flags &= ~uint32_t(kEntitiesChanged);
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const ArchetypeTable& t = s.tables[a];
        uint32_t base = w * t.capacity;
        uint32_t end = min_of(t.high_water[w], t.capacity);
        t.high_water[w] = end;
        uint32_t live = 0;
        int32_t top = 0;
        for (uint32_t row = end; row-- > 0;) {
            uint32_t r = base + row;
            if (t.doomed[r]) {
                t.doomed[r] = 0;
                if (t.alive[r]) t.generation[r] += 1;
                t.alive[r] = 0;
            }
            if (t.alive[r]) {
                ++live;
            } else {
                t.free_rows[base + uint32_t(top++)] = row;
            }
        }
        t.free_top[w] = top;
        t.live[w] = live;
    }
}

/// Empties one world: every row freed, singletons re-created. Generations of
/// live rows are bumped so handles from the last episode go stale; `fresh`
/// instead restarts every generation, so the world's state no longer depends
/// on its history: generations, free list and every row's components are
/// zeroed (a full reset: same seed, same bytes).
ORRERY_HD inline void clear_world(const Storage& s, uint32_t w, bool fresh = false) {
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const ArchetypeTable& t = s.tables[a];
        uint32_t base = w * t.capacity;
        for (uint32_t row = 0; row < t.capacity; ++row) {
            uint32_t r = base + row;
            if (fresh) {
                t.generation[r] = 0;
                t.free_rows[r] = 0;
                for (uint32_t c = 0; c < s.num_components; ++c) {
                    if (!t.columns[c]) continue;
                    uint8_t* p = t.columns[c] + size_t(r) * s.row_bytes[c];
                    for (uint32_t i = 0; i < s.row_bytes[c]; ++i) p[i] = 0;
                }
            } else if (t.alive[r]) {
                t.generation[r] += 1;
            }
            t.alive[r] = 0;
            t.doomed[r] = 0;
        }
        t.high_water[w] = 0;
        t.free_top[w] = 0;
        t.live[w] = 0;
        if (t.singleton) WorldView(s, w).create_in(a);
    }
}

} // namespace orrery
