#pragma once
// The registration table of an env: its components, archetypes, config, the
// task graph of its systems and the tensors it exports. One table drives ECS
// storage, the CPU executor, megakernel generation, the Python binding and the
// viewer; an env states each fact here once.

#include <cstring>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "engine/ctx.hpp"
#include "engine/draw.hpp"
#include "engine/error.hpp"

namespace orrery {

/// Runs one node over the worlds in [begin, end) where `phase` is active; a
/// lane node runs as `lanes` lanes, one after another. `scratch` is the
/// calling thread's slot of step scratch (EnvSpec::scratch), for every world.
using CpuNodeFn = void (*)(const Storage&, uint32_t begin, uint32_t end, Phase phase, uint32_t lanes, uint8_t* scratch);

/// A system as the task graph sees it: its name (the C++ function name, used by
/// the megakernel generator) and its CPU entry point.
struct SystemRef {
    const char* name;
    NodeKind kind;
    CpuNodeFn cpu;
    /// __PRETTY_FUNCTION__ of detail::system_signature<&fn>: holds the qualified
    /// name ("tag::spawn") the megakernel generator must spell. Null for built-ins.
    const char* (*signature)() = nullptr;
    /// Per-entity systems: the component ids of their parameters (the archetypes
    /// they run over, and so how many lanes the GPU gives them). Null otherwise.
    std::vector<uint32_t> (*query)() = nullptr;
};

namespace detail {
template <auto F> void cpu_world_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t, uint8_t* scratch) {
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(s, w, p)) run_world<F>(s, w, scratch);
}
template <auto F> void cpu_each_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t, uint8_t*) {
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(s, w, p)) run_each<F>(s, w);
}
template <auto F> void cpu_lanes_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t lanes, uint8_t*) {
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(s, w, p))
            for (uint32_t lane = 0; lane < lanes; ++lane) run_world_lane<F>(s, w, lane, lanes);
}
template <auto F>
void cpu_each_lanes_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t lanes, uint8_t*) {
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(s, w, p))
            for (uint32_t lane = 0; lane < lanes; ++lane) run_each_lane<F>(s, w, lane, lanes);
}
/// Runs body(l) for every lane l of a team of `lanes`, each on a thread of
/// its own, meeting at one barrier: how the CPU honours Lanes::sync() when
/// SimOptions::cpu_lanes > 1 (a test of lane independence, not a speed-up).
void run_lane_team(uint32_t lanes, const std::function<void(const Lanes&)>& body);
template <auto F>
void cpu_team_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t lanes, uint8_t* scratch) {
    auto worlds = [&](const Lanes& l) {
        for (uint32_t w = b; w < e; ++w) {
            if (!phase_active(s, w, p)) continue;
            run_world_team<F>(s, w, l, scratch);
            if (scratch) l.sync(); // every lane is done with the slot before the next world's run rewrites it
        }
    };
    if (lanes == 1) return worlds(Lanes{});
    run_lane_team(lanes, worlds);
}
inline void cpu_destroy_node(const Storage& s, uint32_t b, uint32_t e, Phase p, uint32_t, uint8_t*) {
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(s, w, p)) apply_destroys(s, w);
}
template <auto F> const char* system_signature() { return __PRETTY_FUNCTION__; }
template <class... Ps> std::vector<uint32_t> query_ids(void (*)(Ctx&, Ps...)) {
    return {component_id<typename Fetch<Ps>::Component>...};
}
template <auto F> std::vector<uint32_t> system_query() { return query_ids(F); }
template <class T> const char* type_signature() { return __PRETTY_FUNCTION__; }
/// "Position" from type_signature<tag::Position>()'s "[with T = tag::Position]"
/// (GCC) or "[T = tag::Position]" (Clang): the name without its namespaces.
std::string short_type_name(const char* signature);
} // namespace detail

/// A per-world system: `void fn(orrery::Ctx&)`.
#define ORRERY_PER_WORLD(fn)                                                                                           \
    ::orrery::SystemRef {                                                                                              \
#fn, ::orrery::NodeKind::kPerWorld, &::orrery::detail::cpu_world_node < &fn>,                                  \
            &::orrery::detail::system_signature < &fn>                                                                 \
    }
/// A per-world system split into lanes: `void fn(orrery::Ctx&, uint32_t lane,
/// uint32_t lanes)` does lane `lane`'s share of the world's work (cells lane,
/// lane + lanes, ...). The engine picks `lanes` (the GPU's staged megakernel
/// gives a world the block's spare threads and runs its lanes at once; the CPU
/// runs one lane unless SimOptions::cpu_lanes says otherwise), so the result
/// must not depend on it: a lane writes only bytes no other lane of the node
/// reads or writes. Use it for wide, independent work such as building an
/// observation; anything serial belongs in a per-world system before it.
#define ORRERY_PER_WORLD_LANES(fn)                                                                                     \
    ::orrery::SystemRef {                                                                                              \
#fn, ::orrery::NodeKind::kPerWorldLanes, &::orrery::detail::cpu_lanes_node < &fn>,                             \
            &::orrery::detail::system_signature < &fn>                                                                 \
    }
/// A per-world system whose lanes meet between phases: `void fn(orrery::Ctx&,
/// const orrery::Lanes& l)` runs on l.count lanes of a world at once, and
/// l.sync() is a barrier among them (the GPU's __syncwarp over the world's
/// threads; the CPU runs one lane, where sync() does nothing, unless
/// SimOptions::cpu_lanes asks for more, which it runs as threads). Between
/// two syncs a lane writes only bytes no other lane reads or writes, so the
/// result does not depend on l.count; every lane makes the same sync() calls.
/// Use it for serial-looking work with wide phases (the physics step).
#define ORRERY_PER_WORLD_TEAM(fn)                                                                                      \
    ::orrery::SystemRef {                                                                                              \
#fn, ::orrery::NodeKind::kPerWorldTeam, &::orrery::detail::cpu_team_node < &fn>,                               \
            &::orrery::detail::system_signature < &fn>                                                                 \
    }
/// A per-entity system: `void fn(orrery::Ctx&, A&, const B&, orrery::Array<C>, ...)`.
#define ORRERY_PER_ENTITY(fn)                                                                                          \
    ::orrery::SystemRef {                                                                                              \
#fn, ::orrery::NodeKind::kPerEntity, &::orrery::detail::cpu_each_node < &fn>,                                  \
            &::orrery::detail::system_signature < &fn>, &::orrery::detail::system_query < &fn>                         \
    }

/// A per-entity system whose calls for different entities of one world may run
/// at once (the GPU's staged megakernel gives each world several threads; the
/// CPU runs rows in order unless SimOptions::cpu_lanes says otherwise). It may
/// write only its own entity's components and must not create or destroy
/// entities, draw from a stream another entity's call also draws from, or read
/// what the node writes for another entity.
#define ORRERY_PER_ENTITY_LANES(fn)                                                                                    \
    ::orrery::SystemRef {                                                                                              \
#fn, ::orrery::NodeKind::kPerEntityLanes, &::orrery::detail::cpu_each_lanes_node < &fn>,                       \
            &::orrery::detail::system_signature < &fn>, &::orrery::detail::system_query < &fn>                         \
    }

/// Element type of an exported tensor (DLPack codes follow from it).
enum class DType : uint8_t { kU8, kI8, kU16, kI16, kI32, kU32, kF32, kI64 };
size_t dtype_size(DType t);
const char* dtype_name(DType t);

template <class E> constexpr DType dtype_of() {
    if constexpr (std::is_same_v<E, uint8_t> || std::is_same_v<E, bool>)
        return DType::kU8;
    else if constexpr (std::is_same_v<E, int8_t>)
        return DType::kI8;
    else if constexpr (std::is_same_v<E, uint16_t>)
        return DType::kU16;
    else if constexpr (std::is_same_v<E, int16_t>)
        return DType::kI16;
    else if constexpr (std::is_same_v<E, int32_t>)
        return DType::kI32;
    else if constexpr (std::is_same_v<E, uint32_t>)
        return DType::kU32;
    else if constexpr (std::is_same_v<E, float>)
        return DType::kF32;
    else if constexpr (std::is_same_v<E, int64_t>)
        return DType::kI64;
    else
        static_assert(sizeof(E) == 0, "unsupported element type");
}

namespace detail {
template <class T, class = void> struct ElementOf { using type = uint8_t; };
template <class T> struct ElementOf<T, std::void_t<typename T::Element>> { using type = typename T::Element; };
template <class T, class = void> struct HasElement : std::false_type {};
template <class T> struct HasElement<T, std::void_t<typename T::Element>> : std::true_type {};
} // namespace detail

/// What a component's rows hold.
enum class ComponentKind : uint8_t {
    kPlain,  ///< one struct per row
    kArray,  ///< ArrayOf<E>: an array of E per row, its shape set by EnvSpec::dims
    kBuffer, ///< BufferOf<E>: a count and up to N structs per row, N set by EnvSpec::capacity
    kAsset,  ///< AssetOf<E>: no rows; shared read-only data set by EnvSpec::asset
};

struct ComponentSpec {
    std::string name;
    uint32_t row_bytes = 0; ///< 0 until an array component's dims are set
    DType dtype = DType::kU8;
    std::vector<uint32_t> dims; ///< shape of one row in elements
    bool is_array = false;
    ComponentKind kind = ComponentKind::kPlain;
    uint32_t element_bytes = 0; ///< sizeof(Element) of arrays, buffers and assets
    uint32_t element_align = 1; ///< alignof(Element) of assets
};

struct ArchetypeSpec {
    std::string name;
    uint32_t capacity = 0;
    bool singleton = false;
    std::vector<uint32_t> components;
};

/// Node handle returned by EnvSpec::add, used to state dependencies.
struct NodeId {
    uint32_t index;
};

struct NodeSpec {
    SystemRef system;
    Phase phase;
    std::vector<uint32_t> deps;           ///< indices of nodes of the same phase this one waits for
    std::vector<uint32_t> scratch;        ///< component ids of its step scratch (EnvSpec::scratch)
    std::vector<uint32_t> scratch_shared; ///< those of `scratch` a GPU team keeps on chip (EnvSpec::scratch_shared)
    bool order_teams = false;             ///< the GPU orders its worlds by cost hint (EnvSpec::order_teams)
    /// At most this many registers a thread in its own GPU kernel (EnvSpec::bound_registers); 0: no bound.
    uint32_t registers = 0;
};

/// The nodes a new node waits for. EnvSpec::add's default, Deps::previous(),
/// waits for every earlier node of the phase (the safe choice); a list names
/// exactly the nodes it reads results of, so independent lane nodes may share
/// one barrier on the GPU; `{}` waits for none.
class Deps {
  public:
    Deps() = default;
    Deps(std::initializer_list<NodeId> ids) : ids_(ids) {}
    Deps(std::vector<NodeId> ids) : ids_(std::move(ids)) {}
    static Deps previous() {
        Deps d;
        d.previous_ = true;
        return d;
    }
    bool is_previous() const { return previous_; }
    const std::vector<NodeId>& ids() const { return ids_; }

  private:
    std::vector<NodeId> ids_;
    bool previous_ = false;
};

/// What a step does to an exported output's previous contents.
enum class Output : uint8_t {
    kKept,              ///< systems may read it or write only part of it
    kRewrittenEachStep, ///< the observe nodes write all of it, for every world, every step
    /// The engine zeroes it in every world whose observe nodes are about to run
    /// (each step, and on reset); the observe nodes then write only its non-zero
    /// elements. For sparse encodings (one-hot grids): the clearing is spread
    /// over the GPU block's threads instead of lengthening one world's thread,
    /// and in a staged GPU step it is done before the step's first node. Nodes
    /// before the observe nodes must neither read nor write it (the GPU parity
    /// tests, which compare every output every step, catch a node that does).
    kClearedEachStep,
};

/// A tensor the env shares with its users: a whole column, [worlds, capacity, dims...].
struct ExportSpec {
    std::string name;
    uint32_t archetype;
    uint32_t component;
    bool input;                    ///< written by the user (actions), read by systems
    Output output = Output::kKept; ///< not kKept: the GPU step does not load it first
};

/// How an env's reward is meant; every adapter reports it so.
enum class RewardMode : uint8_t {
    kPerAgent, ///< each agent's reward row is its own (+1 / -1 in a chase)
    kTeam,     ///< every agent's row holds the one team reward (Overcooked's soups)
};

/// What an env's tensors mean, for the Python adapters (spaces, rewards) and the
/// viewer's labels. Declared in the registration table, so an env built outside
/// this tree declares them the same way.
struct EnvFacts {
    RewardMode reward = RewardMode::kPerAgent;
    std::vector<std::string> action_meanings; ///< the name of each action value, from the range's low end
    /// Entries along the first per-agent axis of "obs": the channels of a
    /// [C, H, W] grid, or a vector's entries. Empty: unnamed.
    std::vector<std::string> obs_names;
    /// Bounds of each such entry (the same length as obs_names, or empty for the dtype's range).
    std::vector<float> obs_low, obs_high;
};

/// The registration table of one env. Build it in the env's factory function.
class EnvSpec {
  public:
    /// `source` is the header holding the env's components and systems, relative
    /// to the repository root; the megakernel generator includes it.
    EnvSpec(std::string name, std::string source) : name_(std::move(name)), source_(std::move(source)) {}

    /// Registers every component of the env's ORRERY_COMPONENTS list.
    template <class... Ts> void components(List<Ts...>) { (component<Ts>(), ...); }

    /// Sets the row shape of array component T (required before simulation).
    template <class T> void dims(std::vector<uint32_t> dims) {
        static_assert(detail::IsArrayComponent<T>::value, "dims<T>() is for ArrayOf<...> components");
        ComponentSpec& c = components_.at(component_id<T>);
        uint32_t n = 1;
        for (uint32_t d : dims) n *= d;
        c.dims = std::move(dims);
        c.row_bytes = n * uint32_t(sizeof(typename T::Element));
    }

    /// Sets how many elements each row of buffer component T holds (required
    /// before simulation). Pushing past it records ErrorCode::kBufferOverflow.
    /// `element_bytes` (0: sizeof the element) makes room for an element of
    /// that size instead, for an element whose GPU layout is larger than the
    /// host's (a padding field only under ORRERY_DEVICE_CODE; phys::SolverBody).
    template <class T> void capacity(uint32_t n, size_t element_bytes = 0) {
        static_assert(detail::IsBufferComponent<T>::value, "capacity<T>() is for BufferOf<...> components");
        ComponentSpec& c = components_.at(component_id<T>);
        const size_t each = element_bytes > sizeof(typename T::Element) ? element_bytes : sizeof(typename T::Element);
        size_t bytes = kBufferHeaderBytes + size_t(n) * each;
        bytes = (bytes + 7) / 8 * 8;
        if (n == 0 || bytes > (size_t(1) << 30))
            throw Error("env '" + name_ + "': buffer '" + c.name + "' capacity " + std::to_string(n) +
                        " is outside [1, " + std::to_string(((size_t(1) << 30) - 8) / each) + "]");
        c.dims = {n};
        c.row_bytes = uint32_t(bytes);
    }

    /// Sets shared read-only asset T: `count` elements every world reads and no
    /// world writes, uploaded once (ctx.asset<T>() reads them).
    template <class T> void asset(const typename T::Element* data, size_t count) {
        static_assert(detail::IsAssetComponent<T>::value, "asset<T>() is for AssetOf<...> components");
        static_assert(std::is_trivially_copyable_v<typename T::Element>, "asset elements must be trivially copyable");
        if (count > (size_t(1) << 30) / sizeof(typename T::Element))
            throw Error("env '" + name_ + "': asset '" + components_.at(component_id<T>).name + "' has " +
                        std::to_string(count) + " elements; at most 2^30 bytes");
        std::vector<uint8_t>& bytes = assets_[component_id<T>];
        bytes.resize(count * sizeof(typename T::Element));
        if (count) std::memcpy(bytes.data(), data, bytes.size());
    }
    template <class T> void asset(const std::vector<typename T::Element>& v) { asset<T>(v.data(), v.size()); }

    /// The asset region as Storage::assets holds it: an AssetEntry per
    /// component, then each asset's bytes (16-byte aligned). Empty when the env
    /// declares no AssetOf component.
    std::vector<uint8_t> asset_blob() const;

    /// Declares archetype A with `capacity` rows per world. A singleton holds
    /// per-world state: capacity 1, its one row always live.
    template <class A> void archetype(uint32_t capacity, bool singleton = false) {
        uint32_t id = archetype_id<A>;
        if (archetypes_.size() <= id) archetypes_.resize(id + 1);
        ArchetypeSpec& a = archetypes_[id];
        a.name = A::kName;
        a.capacity = singleton ? 1 : capacity;
        a.singleton = singleton;
        a.components = ids_of(typename A::Components{});
    }

    /// Stores the env's config struct; systems read it with ctx.config<C>().
    template <class C> void config(const C& c) {
        static_assert(std::is_trivially_copyable_v<C>, "config must be trivially copyable");
        config_.resize(sizeof(C));
        std::memcpy(config_.data(), &c, sizeof(C));
    }

    /// Adds a system to a phase; it runs after `deps` (nodes of the same
    /// phase), by default after every earlier node of the phase.
    NodeId add(Phase phase, SystemRef s, Deps deps = Deps::previous());
    /// Declares components Ts as node `node`'s step scratch: storage that lives
    /// only while the node runs in one world. It is in no world (not in
    /// snapshots, checkpoints, hashes or world views); the backend keeps a slot
    /// of it per worker that can run at once (a CPU thread, a resident GPU
    /// team), and a world's run of the node gets whichever slot is free, holding
    /// what another world left. So the node must write every byte before it
    /// reads it: then no result depends on the slot (the CPU/GPU parity and
    /// batch-size tests check it). Read with ctx.scratch<T>() or
    /// ctx.scratch_buffer<T>(); size buffers with capacity<T>(n). Only
    /// ORRERY_PER_WORLD and ORRERY_PER_WORLD_TEAM nodes have scratch, and its
    /// components belong to no archetype.
    template <class... Ts> void scratch(NodeId node) {
        static_assert(sizeof...(Ts) > 0, "scratch<Ts...>() names at least one component");
        static_assert((!detail::IsAssetComponent<Ts>::value && ...), "assets are shared data, not scratch");
        if (node.index >= nodes_.size()) throw Error("env '" + name_ + "': scratch<...>() names no node of this env");
        for (uint32_t id : {component_id<Ts>...}) nodes_[node.index].scratch.push_back(id);
    }
    /// Asks that step scratch Ts of `node` (declared with scratch<Ts...>()
    /// first; an ORRERY_PER_WORLD_TEAM node) be kept on chip: where the GPU
    /// runs the node in its own kernel with teams of a whole warp (the
    /// per-node form), each team of a block gets its own copy of Ts in the
    /// block's shared memory, when the block's copies fit the device's limit
    /// (GpuOptions::team_shared). There a pass over them waits on no cache:
    /// phys::simulate keeps its bodies so. Elsewhere (the CPU, the megakernels,
    /// too large a region) they stay in the slot. Where they live changes no
    /// result: the node writes them before reading them, as all scratch.
    template <class... Ts> void scratch_shared(NodeId node) {
        static_assert(sizeof...(Ts) > 0, "scratch_shared<Ts...>() names at least one component");
        if (node.index >= nodes_.size())
            throw Error("env '" + name_ + "': scratch_shared<...>() names no node of this env");
        for (uint32_t id : {component_id<Ts>...}) nodes_[node.index].scratch_shared.push_back(id);
    }
    /// Asks that the GPU hand ORRERY_PER_WORLD_TEAM node `node`'s teams
    /// their worlds by cost: where the node runs in a kernel of its own with
    /// teams of a whole warp (the per-node form), a small kernel before each
    /// launch orders the worlds by the hint each world's last run left
    /// (Ctx::cost_hint), costliest first, and the block's teams take them in
    /// that order. Teams that align (Lanes::align) wait for their block's
    /// slowest, so like costs a block wait less; phys::simulate asks for it.
    /// Which team runs a world changes no result. At most one node of an env
    /// (the hints are one per world). GpuOptions::order_teams turns it off.
    void order_teams(NodeId node);
    /// Asks that `node`'s own GPU kernel (the per-node form; not a fused
    /// run of serial nodes, not the megakernels) keep at most `registers`
    /// registers a thread (`__maxnreg__`, NVRTC 12.4 and newer), 16 to 255,
    /// so that an SM holds more of its warps. For a lane node whose lanes
    /// are chosen at launch, one wave then gives a world more of them at a
    /// small batch: hide-and-seek's observation at 1,024 worlds gets 128
    /// lanes at 64 registers where its own 71 gave 64 (docs/perf-notes.md
    /// row 131). Bound only a node you measured: under its need the kernel
    /// spills to local memory, and over it the compiler may take more than
    /// it would have (Overcooked's observation: 40 unbounded, 52 under 64).
    /// No result depends on it.
    void bound_registers(NodeId node, uint32_t registers);
    /// Adds the destruction barrier to a phase (one is appended to every phase
    /// that lacks one at its end). It waits for every earlier node.
    NodeId add_destroy_barrier(Phase phase);
    /// True when node `later` waits, directly or through others, for node `earlier`.
    bool depends_on(uint32_t later, uint32_t earlier) const;

    /// Exports column T of archetype A: an output (obs, reward) or an input (actions).
    /// Exports column T of archetype A as output `name`. Declare
    /// Output::kRewrittenEachStep when the observe nodes write every element of
    /// it (every row of the capacity) in every world on every step, so its old
    /// contents are never read: a GPU step then skips loading them (for an
    /// observation, most of a step's memory traffic). The GPU parity tests
    /// catch a wrong declaration: the step would see zeros instead.
    /// Output::kClearedEachStep goes further: the engine zeroes it before the
    /// observe nodes run, and they write only its non-zero elements.
    template <class A, class T> void export_output(std::string name, Output output = Output::kKept) {
        static_assert(has_component<A, T>, "archetype lacks this component");
        static_assert(detail::HasElement<T>::value, "exported components declare `using Element = ...;`");
        static_assert(std::is_arithmetic_v<typename T::Element>, "only numeric components are exported");
        static_assert(!detail::IsBufferComponent<T>::value, "buffers are not exported");
        exports_.push_back({std::move(name), archetype_id<A>, component_id<T>, false, output});
    }
    template <class A, class T> void export_input(std::string name) {
        static_assert(has_component<A, T>, "archetype lacks this component");
        static_assert(detail::HasElement<T>::value, "exported components declare `using Element = ...;`");
        static_assert(std::is_arithmetic_v<typename T::Element>, "only numeric components are exported");
        static_assert(!detail::IsBufferComponent<T>::value, "buffers are not exported");
        exports_.push_back({std::move(name), archetype_id<A>, component_id<T>, true});
    }

    /// Range of valid values of an integer input tensor, checked before each step.
    void input_range(const std::string& name, int64_t lo, int64_t hi) { ranges_[name] = {lo, hi}; }

    /// Throws orrery::Error if the table is incomplete or inconsistent.
    void validate() const;
    /// Nodes of a phase in a dependency-respecting order.
    std::vector<const NodeSpec*> ordered(Phase phase) const;

    const std::string& name() const { return name_; }
    const std::string& source() const { return source_; }
    /// Folder that `source` (and headers it includes that are not built into the
    /// library) is relative to, for an env or module kept outside this tree;
    /// empty for built-in envs. The GPU backend reads those headers from it.
    void set_header_root(std::string dir) { header_root_ = std::move(dir); }
    const std::string& header_root() const { return header_root_; }
    const std::vector<ComponentSpec>& component_specs() const { return components_; }
    const std::vector<ArchetypeSpec>& archetype_specs() const { return archetypes_; }
    const std::vector<NodeSpec>& nodes() const { return nodes_; }
    const std::vector<ExportSpec>& exports() const { return exports_; }
    const std::vector<uint8_t>& config_bytes() const { return config_; }
    const std::map<std::string, std::pair<int64_t, int64_t>>& input_ranges() const { return ranges_; }
    /// Optional JSON state exchange for the env (for example overcooked_ai's
    /// OvercookedState.to_dict schema). to_json reads one world; from_json
    /// writes one, throwing orrery::Error naming the bad field (the world is then
    /// left untouched by Simulator::set_state_json).
    std::function<std::string(Ctx&)> state_to_json;
    std::function<void(Ctx&, const std::string&)> state_from_json;
    /// Optional check of one world's env fields in a host copy (a snapshot being
    /// restored, a checkpoint being loaded), run after the engine has checked its
    /// entity bookkeeping; throws orrery::Error naming the field. Never runs in a step.
    std::function<void(const Ctx&)> validate_world;
    /// A module's check of one world's fields (phys::add_to adds the physics
    /// module's), given the spec to name archetypes in its messages. Every env
    /// composing the module gets it, whatever its own validate_world.
    using WorldCheck = std::function<void(const EnvSpec&, const Ctx&)>;
    /// Adds a module's world check; checks run in the order added, after the
    /// engine's and before validate_world. Never runs in a step.
    void add_world_check(WorldCheck check) { world_checks_.push_back(std::move(check)); }
    const std::vector<WorldCheck>& world_checks() const { return world_checks_; }

    /// The CUDA backend runs one kernel per node (the per-node form) unless
    /// the simulator asks for the megakernel (GpuOptions::megakernel): for an
    /// env measured faster that way on the GPU (docs/perf-notes.md). Results
    /// are the same in every form.
    bool prefer_per_node = false;
    /// Threads of a world's team (ORRERY_PER_WORLD_TEAM) and of its per-world
    /// lane nodes in the direct and per-node forms, for an env measured faster
    /// with a team size other than the engine's 16 (a power of two from 1 to
    /// 32; 0: the engine's). GpuOptions::world_lanes (ORRERY_CUDA_LANES)
    /// overrides it. Results are the same at every team size.
    uint32_t world_lanes = 0;
    /// The most threads a block of the direct and per-node forms' team
    /// kernels may have (a multiple of 32 up to 1,024; 0: the engine's 256),
    /// for an env whose teams align (Lanes::align) and measured faster with
    /// more of them in a block: a kernel whose registers or shared memory
    /// cannot hold that many on an SM gets the largest block of whole teams
    /// that fits. Small batches take smaller blocks, to reach every SM.
    /// GpuOptions::team_block_threads (ORRERY_CUDA_BLOCK_THREADS) overrides
    /// it. Results are the same at every block size.
    uint32_t team_block_threads = 0;
    /// The per-node form's serial nodes run 32 worlds a warp where a world a
    /// warp would take more than one wave of the GPU (GpuOptions::pack_serial,
    /// which overrides it), for an env measured faster that way: a serial
    /// node with little work a world issues one instruction for 32 worlds.
    /// One that walks many rows of its world reads each line once a world
    /// a warp, but 32 worlds a warp hold 32 worlds' lines in L1 at once:
    /// the physics crowd's serial nodes (push, grab, observe over its
    /// bodies) lost 5 and 11 % at 65,536 and 262,144 worlds on an H100,
    /// where hide-and-seek's gained 2.5 % (docs/perf-notes.md row 121).
    /// Results are the same either way.
    bool pack_serial = false;
    /// NVRTC's fast-compile level for this env's kernels ("min", "mid" or
    /// "max": `--Ofast-compile`, less optimisation for a shorter cold start;
    /// "" for none). Float results do not change: every float operation stays
    /// IEEE. An NVRTC older than 12.8 has no such option and compiles fully;
    /// GpuOptions::nvrtc_options "--Ofast-compile=0" undoes it.
    std::string fast_compile;

    /// Defines the GPU's kernels of this env are compiled with (`#define
    /// NAME VALUE` ahead of the env's header, so part of the compile
    /// cache's key), for a module to compile out code that this env can
    /// never run: phys::add_to sets ORRERY_PHYS_JOINT_KINDS from the joint
    /// kinds the env declares. The CPU build compiles every path, so a define
    /// must never change what the code computes, only which paths exist.
    /// Throws orrery::Error naming the define when NAME is no identifier or
    /// VALUE spans lines; a second call with the same NAME replaces the value.
    void device_define(const std::string& name, const std::string& value);
    const std::vector<std::pair<std::string, std::string>>& device_defines() const { return device_defines_; }

    /// What the viewer and recorder draw (render/ reads only this); empty by default.
    DrawSpec draw;

    /// How the reward is meant and what actions and observation entries are
    /// called (EnvFacts); per-agent and unnamed by default.
    EnvFacts facts;

    /// Free-form key/value description (layout name, sizes) recorded in checkpoints.
    std::map<std::string, std::string>& info() { return info_; }
    const std::map<std::string, std::string>& info() const { return info_; }

  private:
    template <class T> void component() {
        uint32_t id = component_id<T>;
        if (components_.size() <= id) components_.resize(id + 1);
        ComponentSpec& c = components_[id];
        c.name = detail::short_type_name(detail::type_signature<T>());
        if constexpr (detail::IsArrayComponent<T>::value || detail::IsBufferComponent<T>::value ||
                      detail::IsAssetComponent<T>::value) {
            using E = typename T::Element;
            static_assert(std::is_trivially_copyable_v<E>, "elements must be trivially copyable");
            c.is_array = detail::IsArrayComponent<T>::value;
            c.kind = detail::IsArrayComponent<T>::value    ? ComponentKind::kArray
                     : detail::IsBufferComponent<T>::value ? ComponentKind::kBuffer
                                                           : ComponentKind::kAsset;
            c.element_bytes = uint32_t(sizeof(E));
            c.element_align = uint32_t(alignof(E));
            if constexpr (std::is_arithmetic_v<E>)
                c.dtype = dtype_of<E>();
            else
                c.dtype = DType::kU8; // an array of structs: raw bytes, never exported
            static_assert(!detail::IsBufferComponent<T>::value || alignof(E) <= kBufferHeaderBytes,
                          "buffer elements may be aligned to at most 8 bytes");
        } else {
            static_assert(std::is_trivially_copyable_v<T>, "components must be trivially copyable");
            using E = typename detail::ElementOf<T>::type;
            c.dtype = dtype_of<E>();
            c.row_bytes = uint32_t(sizeof(T));
            c.dims = {uint32_t(sizeof(T) / sizeof(E))};
        }
    }
    template <class... Ts> std::vector<uint32_t> ids_of(List<Ts...>) { return {component_id<Ts>...}; }

    std::string name_, source_, header_root_;
    std::vector<std::pair<std::string, std::string>> device_defines_;
    std::vector<ComponentSpec> components_;
    std::vector<ArchetypeSpec> archetypes_;
    std::vector<NodeSpec> nodes_;
    std::vector<ExportSpec> exports_;
    std::vector<uint8_t> config_;
    std::map<std::string, std::pair<int64_t, int64_t>> ranges_;
    std::map<std::string, std::string> info_;
    std::map<uint32_t, std::vector<uint8_t>> assets_; ///< asset bytes by component id
    std::vector<WorldCheck> world_checks_;
};

/// Env options given by users at make() time, as strings (layout=..., agents=...).
using EnvOptions = std::map<std::string, std::string>;
/// Builds an env's registration table from user options; throws orrery::Error on bad options.
using EnvFactory = std::function<EnvSpec(const EnvOptions&)>;

/// Registers a named env factory (done once per env in envs/registry.cpp).
void register_env(const std::string& name, EnvFactory factory, std::string summary);
/// Builds the named env; throws orrery::Error naming the known envs if unknown.
EnvSpec make_env_spec(const std::string& name, const EnvOptions& options);
/// Names and one-line summaries of every registered env.
std::vector<std::pair<std::string, std::string>> registered_envs();

} // namespace orrery

/// Starts an env's registration table: `orrery::EnvSpec spec = ORRERY_ENV_SPEC("tag", "envs/tutorial/tag.hpp");`
/// Must be used inside the env's namespace so its component list (modules' included) is found.
#define ORRERY_ENV_SPEC(name, source)                                                                                  \
    [&] {                                                                                                              \
        ::orrery::EnvSpec s_(name, source);                                                                            \
        s_.components(OrreryComponents{});                                                                             \
        return s_;                                                                                                     \
    }()
