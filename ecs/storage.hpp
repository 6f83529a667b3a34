#pragma once
// The columnar store every backend shares. One table per archetype, one column
// per component; the rows of world w live in the fixed slab
// [w * capacity, (w + 1) * capacity), so a column is a dense
// [worlds, capacity, ...] tensor at a fixed address. These structs are plain
// data: the CPU executor reads them from host memory, the megakernel from
// device memory, with the same code.

#include "ecs/types.hpp"

namespace orrery {

// Limits sized for physics + hide-and-seek with room to spare (gpu_hideseek
// registers about 40 component types and 10 archetypes across its modules).
// A staged GPU block copies only the Storage header and the tables the env
// uses (Storage::used_bytes), so unused slots cost constant memory, not time.
inline constexpr uint32_t kMaxComponents = 64;
inline constexpr uint32_t kMaxArchetypes = 16;
inline constexpr uint32_t kMaxFinals = 32;             ///< outputs kept as final_<name> (same-step autoreset)
inline constexpr uint32_t kMaxRowsPerWorld = 1u << 24; ///< rows fit the handle's 24-bit row field
inline constexpr uint32_t kCostBuckets = 256; ///< distinct cost hints a team order tells apart (Ctx::cost_hint)
static_assert(kCostBuckets % 32 == 0, "the team order scans its buckets a warp's share a lane");

/// Per-world error codes a step may record (first error in a world wins).
enum class ErrorCode : uint32_t {
    kNone = 0,
    kCapacityOverflow = 1, ///< create() found no free row in the world's slab
    kStaleEntity = 2,      ///< a system destroyed an entity whose handle was stale
    kBadAction = 3,        ///< an action value out of range reached a system
    kBufferOverflow = 4,   ///< Buffer::push found the row's buffer full (raise its capacity)
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
    uint32_t capacity = 0;                 ///< rows per world
    uint32_t singleton = 0;                ///< 1: row 0 is always live (per-world state)
    uint32_t* generation = nullptr;        ///< [worlds * capacity], starts at 1
    uint8_t* alive = nullptr;              ///< [worlds * capacity]
    uint8_t* doomed = nullptr;             ///< [worlds * capacity] destroy requested, applied at a barrier
    uint32_t* free_rows = nullptr;         ///< [worlds * capacity] free rows, the lowest on top
    int32_t* free_top = nullptr;           ///< [worlds] entries in free_rows (negative while exhausted)
    uint32_t* high_water = nullptr;        ///< [worlds] rows ever handed out (may pass capacity transiently)
    uint32_t* live = nullptr;              ///< [worlds] live rows
    uint8_t* columns[kMaxComponents] = {}; ///< column base, nullptr where absent
};

/// Engine-owned per-world state; part of every snapshot.
struct WorldMeta {
    uint64_t seed = 0;
    uint32_t episode = 0;
    uint32_t step = 0;     ///< steps taken in this episode
    uint32_t flags = 0;    ///< WorldFlag bits
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
/// The tables come last: a GPU block that copies Storage into shared memory
/// copies only used_bytes(), the header and the num_archetypes tables in use.
struct Storage {
    uint32_t num_worlds = 0;
    uint32_t num_archetypes = 0;
    uint32_t num_components = 0;
    uint32_t config_bytes = 0;
    WorldMeta* meta = nullptr;        ///< [worlds]
    uint32_t* errors = nullptr;       ///< [worlds] ErrorCode, first one wins
    uint8_t* terminated = nullptr;    ///< [worlds] set by the env, cleared at the next step
    uint8_t* truncated = nullptr;     ///< [worlds]
    uint8_t* reset_request = nullptr; ///< [worlds] set by the host before a reset pass
    const uint8_t* config = nullptr;  ///< env config blob, read-only during a step
    /// Shared read-only assets (AssetOf components): an AssetEntry per component
    /// id, then the data. One copy for every world, never staged; null when none.
    const uint8_t* assets = nullptr;
    /// Step scratch (EnvSpec::scratch): bit c marks component c as a node's
    /// scratch, held in no world. A slot holds every such component in id
    /// order, each at a 16-byte boundary (scratch_offset); the backend's pool
    /// holds a slot per worker that can run at once (a CPU thread, a resident
    /// GPU team), not one per world.
    uint64_t scratch_components = 0;
    /// Those of scratch_components a GPU team keeps in its block's shared
    /// memory where the backend gives it some (EnvSpec::scratch_shared): laid
    /// out as a slot is (shared_scratch_offset), one region per team.
    uint64_t scratch_shared_components = 0;
    /// GPU: bytes of a team's region the per-node kernels hand out (the
    /// components of scratch_shared_components that fit a block, which the
    /// CUDA backend keeps in the mask); 0: every team finds them in its slot.
    uint32_t scratch_shared_team_bytes = 0;
    uint8_t* scratch = nullptr;       ///< the pool: scratch_slots slots of scratch_slot_bytes
    uint32_t* scratch_busy = nullptr; ///< GPU: bit i set while a team holds slot i (null on the CPU)
    uint32_t scratch_slots = 0;
    uint32_t scratch_slot_bytes = 0;
    /// GPU, an env with a node whose teams are ordered by cost
    /// (EnvSpec::order_teams): [worlds] each world's last cost hint
    /// (Ctx::cost_hint), and [worlds] the order the node's kernel takes the
    /// worlds in (a team a world, costliest first). In no world: a schedule,
    /// never a result. Null elsewhere.
    uint32_t* team_cost = nullptr;
    uint32_t* team_order = nullptr;
    uint32_t num_finals = 0;               ///< exported outputs kept as final_<name> (same-step reset)
    uint32_t final_bytes[kMaxFinals] = {}; ///< bytes per world of each such export
    const uint8_t* final_src[kMaxFinals] = {};
    uint8_t* final_dst[kMaxFinals] = {};
    uint32_t row_bytes[kMaxComponents] = {}; ///< bytes one row of each component takes
    ArchetypeTable tables[kMaxArchetypes];

    /// Bytes from the start of Storage through the last table in use.
    ORRERY_HD size_t used_bytes() const;
};

ORRERY_HD inline size_t Storage::used_bytes() const {
    return size_t(reinterpret_cast<const char*>(&tables[num_archetypes]) - reinterpret_cast<const char*>(this));
}

/// Byte offset of scratch component `id` in a slot: the scratch components
/// before it in id order, each rounded up to 16 bytes. With kMaxComponents:
/// the bytes of a slot.
ORRERY_HD inline uint32_t scratch_offset(const Storage& s, uint32_t id) {
    uint32_t at = 0;
    for (uint32_t c = 0; c < id && c < kMaxComponents; ++c)
        if ((s.scratch_components >> c) & 1u) at += (s.row_bytes[c] + 15u) / 16u * 16u;
    return at;
}

/// Byte offset of scratch component `id` in a team's shared-memory region
/// (Storage::scratch_shared_components, laid out as scratch_offset lays out a
/// slot). With kMaxComponents: the bytes of a team's region.
ORRERY_HD inline uint32_t shared_scratch_offset(const Storage& s, uint32_t id) {
    uint32_t at = 0;
    for (uint32_t c = 0; c < id && c < kMaxComponents; ++c)
        if ((s.scratch_shared_components >> c) & 1u) at += (s.row_bytes[c] + 15u) / 16u * 16u;
    return at;
}

/// Where one asset's elements sit in Storage::assets: `count` elements at byte `offset`.
struct AssetEntry {
    uint32_t offset = 0;
    uint32_t count = 0;
};

/// Marks a shared read-only asset: data every world reads and no world writes
/// (collision hulls, layout tables). Listed with the components for its id, put
/// in no archetype; set with EnvSpec::asset<T>, read with ctx.asset<T>().
template <class E> struct AssetOf {
    using Element = E;
    static constexpr bool kIsAsset = true;
};

/// Read-only view of an asset. On the GPU its elements are loaded through the
/// read-only data cache (every world reads the same bytes).
template <class E> struct Span {
    const E* data = nullptr;
    uint32_t size = 0;
    ORRERY_HD E operator[](uint32_t i) const {
#if defined(ORRERY_ON_DEVICE)
        if constexpr (sizeof(E) % 4 == 0 && alignof(E) >= 4) {
            E out;
            const unsigned* src = reinterpret_cast<const unsigned*>(data + i);
            unsigned* dst = reinterpret_cast<unsigned*>(&out);
            for (unsigned k = 0; k < sizeof(E) / 4; ++k) dst[k] = __ldg(src + k);
            return out;
        } else {
            return data[i];
        }
#else
        return data[i];
#endif
    }
};

/// Marks a component whose rows are lists of up to N structs (contacts, ray
/// hits, BVH nodes), N set at registration with EnvSpec::capacity<T>(N).
/// Systems see it as Buffer<T>. A row holds a count, then the elements.
template <class E> struct BufferOf {
    using Element = E;
    static constexpr bool kIsBuffer = true;
};
/// Bytes before a buffer row's first element (its count, padded).
inline constexpr uint32_t kBufferHeaderBytes = 8;

/// One row's buffer: a bounded list. One writer at a time (a per-world system,
/// or a per-entity system on its own entity's row).
template <class T> struct Buffer {
    using E = typename T::Element;
    uint32_t* count_ = nullptr;
    E* items_ = nullptr;
    uint32_t capacity_ = 0;
    uint32_t* error_ = nullptr; ///< the world's error code

    ORRERY_HD uint32_t size() const { return count_ ? min_of(*count_, capacity_) : 0u; }
    ORRERY_HD uint32_t capacity() const { return capacity_; }
    ORRERY_HD E& operator[](uint32_t i) const { return items_[i]; }
    ORRERY_HD void clear() const {
        if (count_) *count_ = 0;
    }
    /// Appends `e`. When the buffer is full, records ErrorCode::kBufferOverflow
    /// for the world (the first error wins) and returns false.
    ORRERY_HD bool push(const E& e) const {
        if (!count_) return false;
        if (*count_ >= capacity_) {
            atomic_set_if_zero(error_, uint32_t(ErrorCode::kBufferOverflow));
            return false;
        }
        items_[(*count_)++] = e;
        return true;
    }
    /// Sets the count to n; the elements keep what they hold. Past the
    /// capacity it sets the capacity, records kBufferOverflow and returns false.
    ORRERY_HD bool resize(uint32_t n) const {
        if (!count_) return false;
        *count_ = min_of(n, capacity_);
        if (n <= capacity_) return true;
        atomic_set_if_zero(error_, uint32_t(ErrorCode::kBufferOverflow));
        return false;
    }
};

/// A component whose rows are arrays sized at registration (ArrayOf<E>).
template <class T> struct Array {
    typename T::Element* data = nullptr;
    uint32_t size = 0;
    ORRERY_HD typename T::Element& operator[](uint32_t i) const { return data[i]; }
};

namespace detail {
template <class T, class = void> struct IsArrayComponent { static constexpr bool value = false; };
template <class T> struct IsArrayComponent<T, decltype((void)T::kIsArray)> {
    static constexpr bool value = T::kIsArray;
};
template <class T, class = void> struct IsBufferComponent { static constexpr bool value = false; };
template <class T> struct IsBufferComponent<T, decltype((void)T::kIsBuffer)> {
    static constexpr bool value = T::kIsBuffer;
};
template <class T, class = void> struct IsAssetComponent { static constexpr bool value = false; };
template <class T> struct IsAssetComponent<T, decltype((void)T::kIsAsset)> {
    static constexpr bool value = T::kIsAsset;
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
    template <class A> ORRERY_HD uint32_t count() const { return s_->tables[archetype_id<A>].live[world_]; }

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

    /// Whether archetype table t has every component Ts (each_with's match).
    template <class... Ts> ORRERY_HD static bool has_columns(const ArchetypeTable& t) {
        const uint32_t ids[] = {component_id<Ts>...};
        bool match = true;
        for (uint32_t id : ids) match = match && t.columns[id] != nullptr;
        return match;
    }

    /// Calls f(Entity) for each live entity, in every archetype that has all of
    /// the components Ts, archetype by archetype in id order, rows in order.
    template <class... Ts, class F> ORRERY_HD void each_with(F&& f) const {
        for (uint32_t a = 0; a < s_->num_archetypes; ++a) {
            const ArchetypeTable& t = s_->tables[a];
            if (!has_columns<Ts...>(t)) continue;
            uint32_t end = min_of(t.high_water[world_], t.capacity);
            for (uint32_t row = 0; row < end; ++row) {
                uint32_t r = slot(t, row);
                if (t.alive[r]) f(Entity::make(a, row, t.generation[r]));
            }
        }
    }

#if defined(__CUDA_ARCH__)
    /// each_with on the 32 lanes of a whole warp (all of them call it, `lane`
    /// their own): f(i, e) for the i-th entity of each_with's order, called on
    /// one lane each, 32 rows at a time (a ballot and a count of the lanes
    /// before keep the order). Returns how many there are, on every lane.
    template <class... Ts, class F> __device__ uint32_t each_with_warp(F&& f, uint32_t lane) const {
        uint32_t n = 0;
        for (uint32_t a = 0; a < s_->num_archetypes; ++a) {
            const ArchetypeTable& t = s_->tables[a];
            if (!has_columns<Ts...>(t)) continue;
            const uint32_t end = min_of(t.high_water[world_], t.capacity);
            for (uint32_t base = 0; base < end; base += 32) {
                const uint32_t row = base + lane, r = slot(t, row);
                const bool live = row < end && t.alive[r];
                const uint32_t found = __ballot_sync(0xFFFFFFFFu, live);
                if (live) f(n + uint32_t(__popc(found & ((1u << lane) - 1u))), Entity::make(a, row, t.generation[r]));
                n += uint32_t(__popc(found));
            }
        }
        return n;
    }
#endif

    /// Frees every entity of archetype A in this world at once (per-step
    /// temporaries such as contacts): their handles go stale and the next
    /// create<A>() starts again at row 0. Call it from a per-world system
    /// while no other lane of the world reads A. Singletons are left alone.
    template <class A> ORRERY_HD void clear() const {
        const ArchetypeTable& t = s_->tables[archetype_id<A>];
        if (t.singleton) return;
        uint32_t end = min_of(t.high_water[world_], t.capacity);
        for (uint32_t row = 0; row < end; ++row) {
            uint32_t r = slot(t, row);
            if (t.alive[r]) t.generation[r] += 1;
            t.alive[r] = 0;
            t.doomed[r] = 0;
        }
        t.high_water[world_] = 0;
        t.free_top[world_] = 0;
        t.live[world_] = 0;
    }

    /// Buffer component T of `e` (empty when stale or absent).
    template <class T> ORRERY_HD Buffer<T> buffer(Entity e) const {
        if (!valid(e)) return {};
        return buffer_at<T>(e.archetype(), e.row());
    }
    /// Buffer component T of singleton archetype A (per-world scratch).
    template <class A, class T> ORRERY_HD Buffer<T> single_buffer() const {
        static_assert(has_component<A, T>, "archetype lacks this component");
        return buffer_at<T>(archetype_id<A>, 0);
    }

    /// Elements one row of buffer component T holds (its registered capacity).
    template <class T> ORRERY_HD uint32_t buffer_capacity() const {
        static_assert(detail::IsBufferComponent<T>::value, "buffer_capacity<T>() is for BufferOf<...> components");
        uint32_t bytes = s_->row_bytes[component_id<T>];
        return bytes < kBufferHeaderBytes ? 0u : (bytes - kBufferHeaderBytes) / uint32_t(sizeof(typename T::Element));
    }

    /// Shared read-only asset T (an AssetOf component), the same for every world.
    template <class T> ORRERY_HD Span<typename T::Element> asset() const {
        static_assert(detail::IsAssetComponent<T>::value, "asset<T>() needs an AssetOf<...> component");
        if (!s_->assets) return {};
        const AssetEntry* table = reinterpret_cast<const AssetEntry*>(s_->assets);
        Span<AssetEntry> entries{table, s_->num_components};
        AssetEntry e = entries[component_id<T>];
        return {reinterpret_cast<const typename T::Element*>(s_->assets + e.offset), e.count};
    }

    /// Records `code` for this world (the first code recorded in a step wins).
    ORRERY_HD void fail(uint32_t code) const { atomic_set_if_zero(&s_->errors[world_], code); }

    /// Global row index of `row` in table `t` for this world.
    ORRERY_HD uint32_t slot(const ArchetypeTable& t, uint32_t row) const { return world_ * t.capacity + row; }

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

    template <class T> ORRERY_HD Buffer<T> buffer_at(uint32_t arch, uint32_t row) const {
        const ArchetypeTable& t = s_->tables[arch];
        uint8_t* col = t.columns[component_id<T>];
        if (!col) return {};
        uint32_t bytes = s_->row_bytes[component_id<T>];
        uint8_t* p = col + size_t(slot(t, row)) * bytes;
        Buffer<T> out;
        out.count_ = reinterpret_cast<uint32_t*>(p);
        out.items_ = reinterpret_cast<typename T::Element*>(p + kBufferHeaderBytes);
        out.capacity_ = (bytes - kBufferHeaderBytes) / uint32_t(sizeof(typename T::Element));
        out.error_ = &s_->errors[world_];
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
