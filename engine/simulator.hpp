#pragma once
// The public host API: a batch of worlds of one env on one device. Step and
// reset them, read and write their exported tensors (fixed addresses for the
// simulator's life), save, restore and copy worlds, checkpoint to disk.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/env.hpp"
#include "engine/fair_mutex.hpp"
#include "engine/world_ops.hpp"

namespace orrery {

enum class DeviceKind : uint8_t { kCpu, kCuda };

/// GpuOptions::stage_blocks_per_sm's default: the share of an SM the staged
/// kernel's __launch_bounds__ are written for.
inline constexpr uint32_t kDefaultStageBlocksPerSm = 2;

/// How the CUDA backend builds and launches its kernels. The defaults suit
/// every env; the fields are for benchmarks, tests and profiling (docs/gpu.md).
/// The engine reads no environment variable for them: the command-line tools
/// and the Python package map the ORRERY_* variables onto these fields
/// (options_from_environment, engine/options.hpp).
struct GpuOptions {
    /// Stage each block's worlds in shared memory when 16 fit (else, or when
    /// false, the direct megakernel runs on global memory). ORRERY_CUDA_STAGE=0.
    bool stage = true;
    /// Worlds per staged block, rounded up to a multiple of 16 (at most 256);
    /// 0 chooses from the batch and the device. ORRERY_CUDA_STAGE_WORLDS.
    uint32_t stage_worlds = 0;
    /// Staged blocks meant to be resident per SM: a block gets at most this
    /// share of the SM's shared memory (0 counts as 1). ORRERY_CUDA_STAGE_BLOCKS.
    uint32_t stage_blocks_per_sm = kDefaultStageBlocksPerSm;
    /// Launch every kernel (the staged passes, the direct megakernel, the
    /// per-node kernels) as a programmatic dependent launch where the GPU
    /// (sm_90+) and driver (CUDA 12.3+) allow: it is dispatched while the one
    /// ahead runs and waits for it before touching a world. Results do not
    /// depend on it. ORRERY_CUDA_PDL=0 turns it off.
    bool programmatic_launch = true;
    /// Compile cache directory; "" is $XDG_CACHE_HOME/orrery, else ~/.cache/orrery. ORRERY_CACHE_DIR.
    std::string cache_dir;
    /// When set, each generated source is written to DIR/orrery_kernels.cu
    /// before NVRTC compiles it (for profilers' line info). ORRERY_DUMP_SOURCE.
    std::string dump_source_dir;
    /// Log compile-cache hits on stderr (compiles are always logged). ORRERY_VERBOSE.
    bool verbose = false;
    /// Where an env header not built into the library is also looked for
    /// (an env outside the tree). ORRERY_SOURCE_DIR.
    std::string source_dir;
    /// More NVRTC options, whitespace-separated, after Orrery's own: for
    /// tuning, e.g. "--maxrregcount=128". Part of the compile cache's key.
    /// Options that would change float results (-fmad, -ftz, -prec-div,
    /// -prec-sqrt, -use_fast_math) or the architecture or language are
    /// refused with an error naming them. ORRERY_NVRTC_OPTIONS.
    std::string nvrtc_options;
    /// Threads a world's lane nodes get in the direct and per-node kernels (a
    /// power of two from 1 to 32; an ORRERY_PER_WORLD_TEAM's team, the clears
    /// of its outputs); 0 is the default, 16. Results do not depend on it.
    /// ORRERY_CUDA_LANES.
    uint32_t world_lanes = 0;
    /// Slots of step scratch (EnvSpec::scratch); 0 sizes the pool to the teams
    /// that can be resident at once (SMs x resident teams per SM, from the
    /// occupancy API, at most one per world). A smaller pool is for tests:
    /// teams then wait for a slot, and slots pass between worlds more often.
    /// Results do not depend on it. ORRERY_CUDA_SCRATCH_SLOTS.
    uint32_t scratch_slots = 0;
    /// Run the megakernel even for an env that prefers the per-node form
    /// (EnvSpec::prefer_per_node). ORRERY_CUDA_PER_NODE=0.
    bool megakernel = false;
    /// Host threads compiling the per-node form's kernels, each its own NVRTC
    /// program (0: one per hardware thread). ORRERY_NVRTC_THREADS.
    uint32_t compile_threads = 0;
    /// Cold start: the kernels the compile cache lacks are first compiled at
    /// this NVRTC --Ofast-compile level ("min", "mid", "max": a few times
    /// quicker to compile, the same results, a slower step), so stepping starts
    /// early, while the fully optimised kernels compile on background host
    /// threads (compile_threads of them), are cached, and are swapped in
    /// between two steps (never inside a graph capture). "" compiles them
    /// fully before the first step. Not used when the env or nvrtc_options
    /// set a level. ORRERY_NVRTC_BACKGROUND (0 for "", or a level).
    std::string cold_start_level = "max";
    /// Python on CUDA: the engine queues its work on the caller's (PyTorch's
    /// current) stream, moving there once with one event, so each step needs
    /// no events between the two streams; off, each ordered call waits on the
    /// caller's stream and back with two events. ORRERY_CUDA_FOLLOW=0.
    bool follow_caller_stream = true;
    /// Direct and per-node kernels: each kernel's threads per block chosen
    /// from the occupancy API, the size (a whole number of teams, at most the
    /// default) that keeps the most warps resident; off (the default), every
    /// kernel takes the default block (team_block_threads, else 256 threads,
    /// for teams; 128 for one lane). Off by default because it measured slower: hide-and-seek's
    /// physics step (164 registers: one 256-thread block, 8 warps an SM, or
    /// three of 128, 12 warps) lost 13-29 % on an H200 with 12 warps, its
    /// instruction fetch and L1 already the limit (docs/perf-notes.md row
    /// 36). Results do not depend on it. ORRERY_CUDA_FIT_BLOCKS=1.
    bool fit_blocks = false;
    /// Per-node kernels with teams in blocks above 256 threads: every kernel
    /// but those whose teams align (Lanes::align: phys::simulate) launched
    /// in the block of whole teams that keeps the most warps resident, as
    /// fit_blocks does for all. Nothing but the aligned kernels needs the
    /// env's large block, and a kernel of more than 64 registers holds one
    /// such block an SM: hide-and-seek's observation (72 registers) runs 16
    /// warps an SM in blocks of 512, and runs 28 in blocks of 128: OpenAI's
    /// game +7.5 / +9.1 / +9.4 % at 16,384 / 65,536 / 262,144 worlds on an
    /// H100, gpu_hideseek +3.5 %, the crowd -0.2 % (docs/perf-notes.md row
    /// 113). Results do not depend on it. ORRERY_CUDA_FIT_FREE=0 turns it off.
    bool fit_free_blocks = true;
    /// Direct and per-node kernels with teams: the most threads a block may
    /// have (a multiple of 32 up to 1,024; 0: the env's
    /// EnvSpec::team_block_threads, else 256). A larger block puts more of
    /// the teams that align (Lanes::align) on one SM where the kernel's
    /// registers allow it (a kernel that cannot hold it gets the largest
    /// block of whole teams that fits). Results do not depend on it.
    /// ORRERY_CUDA_BLOCK_THREADS.
    uint32_t team_block_threads = 0;
    /// Per-node kernels of nodes that keep scratch on chip
    /// (EnvSpec::scratch_shared): each team of a block gets its region of the
    /// block's shared memory, when the block's regions fit the device's
    /// limit. Off: that scratch stays in the slot (global memory, through L1).
    /// Results do not depend on it. ORRERY_CUDA_TEAM_SHARED=0.
    bool team_shared = true;
    /// Per-node kernels of a node that orders its teams (EnvSpec::order_teams):
    /// before each launch, one block orders the worlds by their cost hints
    /// (Ctx::cost_hint), costliest first, and the kernel's teams take them in
    /// that order, so a block's teams, which wait for each other at
    /// Lanes::align, hold worlds of like cost. 1 (the default): only where
    /// the launch has more blocks than the GPU holds at once (the first
    /// kernel's occupancy), since in one wave the order only gathers the
    /// costliest worlds onto the same SMs (8.5 % slower for hide-and-seek at
    /// 1,024 worlds on an H200); 2: always; 0: never, team t runs world t.
    /// Results do not depend on it. ORRERY_CUDA_ORDER_TEAMS=N.
    uint32_t order_teams = 1;
    /// Per-node kernels of serial nodes (a world's work on one thread) in a
    /// form whose teams are 2 to 32 lanes: 1 (the default) runs them 32
    /// worlds a warp where the env asks (EnvSpec::pack_serial) and a world a
    /// warp would take more than one wave of the kernel's resident threads,
    /// else a world a warp (lane 0 at work, the shortest chain a world);
    /// 2: always packed; 0: never. Results do not depend on it.
    /// ORRERY_CUDA_PACK_SERIAL=N.
    uint32_t pack_serial = 1;
    /// Per-node kernels of team nodes that keep no step scratch
    /// (ORRERY_PER_WORLD_TEAM) in a form whose teams are 2 to 32 lanes: 1
    /// (the default) runs them as teams of one lane, 32 worlds a warp, by
    /// pack_serial's rule (where the env asks and the form's teams would take
    /// more than one wave), else in teams of the form's lanes; 2: always one
    /// lane; 0: never. Such a kernel's teams never align in the block
    /// (Lanes::align does nothing there). Results do not depend on it: a
    /// team node's result does not depend on its team's size.
    /// ORRERY_CUDA_PACK_TEAMS=N.
    uint32_t pack_teams = 1;
    /// Per-node kernels of lane nodes that no team runs (ORRERY_PER_WORLD_LANES,
    /// per-entity lanes, the output clears) in a form whose teams are 2 to
    /// 32 lanes: the threads a world such a kernel gets, a power of two up
    /// to 256 (past 32 a world's lanes span warps; never below the form's
    /// lanes, never above what the node can use). 0 (the default) chooses
    /// at launch the most that one wave of the kernel's resident threads
    /// holds at this batch, so a small batch spreads a world's rays over
    /// more of the idle GPU. Results do not depend on it.
    /// ORRERY_CUDA_WIDE_LANES=N.
    uint32_t wide_lanes = 0;
    /// Per-node form with teams of 2 to 32 lanes: each run of consecutive
    /// serial ops that keep no scratch (the engine's begin and end of a step,
    /// the random actions, spawn, an env's serial nodes) is one kernel, a
    /// world's ops one after another on its lane 0 as in the megakernel,
    /// instead of a kernel each: fewer launches and kernel boundaries a step
    /// (hide-and-seek's 13 step kernels become 7). Results do not depend on
    /// it. ORRERY_CUDA_FUSE_SERIAL=0 turns it off.
    bool fuse_serial = true;
    /// Device printf's buffer in megabytes, 1 to 4096 (0, the default: the
    /// driver's 1 MB), for kernels built to print: phys::PhaseClock with
    /// ORRERY_PHYS_CLOCKS_EVERY=1 prints a line a world a step, and what
    /// overflows the buffer between synchronizations is lost. A debugging
    /// setting. ORRERY_CUDA_PRINTF_MB=N.
    uint32_t printf_mb = 0;
};

/// How a simulator is created.
struct SimOptions {
    uint32_t num_worlds = 1;
    uint32_t threads = 0; ///< CPU worker threads; 0 uses every hardware thread
    AutoReset autoreset = AutoReset::kNextStep;
    std::string device = "cpu"; ///< "cpu", "cuda", "cuda:N" or "auto" (CUDA when usable)
    /// GPU: one launch per node instead of the megakernel (whatever the env
    /// prefers; EnvSpec::prefer_per_node). ORRERY_CUDA_PER_NODE=1.
    bool per_node_launches = false;
    /// Each step first fills every ranged input (the actions) with uniform random
    /// values from the world's RNG, on the device that steps (benchmarks and
    /// smoke runs: no host traffic per step). The values are readable afterwards
    /// in the input tensors and are the same on every backend.
    bool random_inputs = false;
    /// CPU: lanes each ORRERY_PER_WORLD_LANES node runs as, one after another.
    /// A lane system's result must not depend on its lane count; tests set this
    /// above 1 to check that on the CPU (the GPU gives a world up to 16 lanes).
    uint32_t cpu_lanes = 1;
    GpuOptions gpu; ///< the CUDA backend's kernel form and compile settings
};

/// An exported tensor: dense, row-major, at a fixed address for the simulator's life.
struct TensorView {
    std::string name;
    void* data = nullptr;
    DType dtype = DType::kU8;
    std::vector<int64_t> shape; ///< [worlds, rows, dims...] or [worlds]
    DeviceKind device = DeviceKind::kCpu;
    int device_index = 0;
    bool input = false; ///< users write it before step() (actions)
    /// The shape users see (the Python package's views; the same bytes as
    /// `shape`): [worlds], then rows unless the archetype is a singleton, then
    /// dims unless the component is a single scalar. Computed once, here.
    std::vector<int64_t> user_shape;
    size_t bytes() const;
};

/// Bytes of device or host memory per archetype, from the declared capacities.
struct MemoryReport {
    struct Row {
        std::string archetype;
        uint32_t capacity;
        size_t bytes_per_world;
        size_t bytes;
    };
    std::vector<Row> archetypes;
    /// Each archetype's columns: plain, array or buffer rows; exported or not.
    struct ComponentRow {
        std::string component; ///< "Archetype.Component"
        const char* kind;
        size_t bytes_per_world;
        size_t bytes;
        bool exported;
    };
    std::vector<ComponentRow> components;
    size_t engine_bytes = 0; ///< per-world meta, flags, error codes, final buffers
    size_t asset_bytes = 0;  ///< shared read-only assets (one copy, not per world)
    /// Step scratch (EnvSpec::scratch): each component's bytes in a slot.
    struct ScratchRow {
        std::string component;
        const char* kind;
        size_t bytes;
    };
    std::vector<ScratchRow> scratch;
    size_t scratch_slot_bytes = 0; ///< one slot (components 16-byte aligned)
    uint32_t scratch_slots = 0;    ///< slots the backend allocated (Backend::scratch_pool)
    std::string scratch_basis;     ///< why that many ("one per CPU thread", "132 SMs x 48 resident teams")
    size_t scratch_bytes = 0;      ///< the pool, its slot bitmap included
    /// A team's region of the scratch it may keep in shared memory (EnvSpec::scratch_shared)
    size_t scratch_shared_bytes = 0;
    std::string scratch_shared_use; ///< the backend's use of it ("" when none)
    size_t team_order_bytes = 0;    ///< GPU: each world's cost hint and the order (EnvSpec::order_teams), 0 when none
    size_t total_bytes = 0;         ///< every world, the engine's arrays, the assets, the scratch pool and the order
    std::string to_string() const;
};

/// One op of a pass: an engine op, or an env node run in a phase.
struct Op {
    OpKind kind;
    const NodeSpec* node = nullptr;
    Phase phase = Phase::kStep;
};

/// Ops whose work can be split into lanes (an output's clearing, lane systems):
/// the staged GPU megakernel spreads them over a world's threads, the CPU
/// executor runs a run of them a few worlds at a time.
inline bool is_lane_op(const Op& op) {
    return op.kind == OpKind::kClearOutputs || (op.kind == OpKind::kNode && is_lane_kind(op.node->system.kind));
}

/// The ordered ops of the step pass and of the reset pass, derived from the
/// env's graph. Backends execute these; the megakernel generator emits them.
struct Plan {
    std::vector<Op> step;
    std::vector<Op> reset;
    AutoReset autoreset = AutoReset::kNextStep;
};
/// `random_inputs` adds the kRandomInputs op after kBeginStep (SimOptions::random_inputs).
Plan make_plan(const EnvSpec& spec, AutoReset mode, bool random_inputs = false);

/// The ranged integer inputs of `spec`, in input_ranges() order, as
/// draw_random_inputs reads them. Throws if a range is wider than 2^32 values.
std::vector<RandomInput> random_input_table(const EnvSpec& spec);

/// The outputs of `spec` declared Output::kClearedEachStep, as clear_outputs reads them.
std::vector<ClearedOutput> cleared_output_table(const EnvSpec& spec);

/// A per-world region of storage: `count` bytes at base + world * count.
struct Region {
    uint8_t* base;
    size_t bytes_per_world;
};

/// Where every array of Storage lives, relative to one allocation.
struct StorageLayout {
    size_t total_bytes = 0;
    Storage bind(uint8_t* base, const uint8_t* config) const; ///< pointers into `base`
    std::vector<Region> regions(const Storage& s) const;      ///< what a world snapshot holds
    MemoryReport report;
    struct Offsets;
    std::shared_ptr<Offsets> offsets;
};
StorageLayout make_layout(const EnvSpec& spec, uint32_t num_worlds, AutoReset mode);

/// One input column read from elsewhere for one step (Simulator::step_reading):
/// `bytes` at `source`, laid out as the column at `column`, in the backend's memory.
struct InputSource {
    void* column = nullptr;
    const void* source = nullptr;
    size_t bytes = 0;
};

/// A tensor's values after a step, also written to `dst` (Simulator::step_reading):
/// `bytes` from the tensor at `column` to `dst`, in the backend's memory.
struct OutputCopy {
    const void* column = nullptr;
    void* dst = nullptr;
    size_t bytes = 0;
};

/// Runs passes over the worlds in one memory space. The CPU backend is always
/// present; the CUDA backend is loaded when a GPU is asked for.
class Backend {
  public:
    virtual ~Backend() = default;
    virtual DeviceKind device() const = 0;
    virtual int device_index() const { return 0; }
    /// Human-readable device description (model, threads).
    virtual std::string describe() const = 0;
    /// Storage pointers valid in this backend's memory space.
    virtual const Storage& storage() const = 0;
    /// Runs a pass (plan.step or plan.reset) over every world; may return before it completes.
    virtual void run(const std::vector<Op>& ops) = 0;
    /// Runs the step pass `ops` with `in.column`'s values taken from `in.source`
    /// (which the column holds afterwards), then writes each of `outs` to its
    /// `dst`. This version copies them in first and out after; the CUDA
    /// backend's staged step reads and writes them where they are instead,
    /// and the CPU backend moves each chunk of worlds' share on the thread
    /// stepping that chunk, just before and after its ops.
    virtual void run_reading(const std::vector<Op>& ops, const InputSource& in,
                             const std::vector<OutputCopy>& outs = {}) {
        if (in.source != in.column) copy_within(in.column, in.source, in.bytes);
        run(ops);
        for (const OutputCopy& o : outs) copy_within(o.dst, o.column, o.bytes);
    }
    /// Copies between host memory and this backend's memory (either pointer may be the backend's).
    virtual void copy_to_host(void* dst, const void* src, size_t n) = 0;
    virtual void copy_from_host(void* dst, const void* src, size_t n) = 0;
    virtual void copy_within(void* dst, const void* src, size_t n) = 0;
    /// Waits for queued work.
    virtual void synchronize() = 0;
    /// The step-scratch pool (EnvSpec::scratch) the backend allocated: slots,
    /// bytes (bitmap included) and why that many slots.
    struct ScratchPool {
        uint32_t slots = 0;
        size_t bytes = 0;
        std::string basis;
        std::string shared_use; ///< where scratch kept on chip went (EnvSpec::scratch_shared), "" when nowhere
        size_t order_bytes = 0; ///< the teams' order by cost and its hints (EnvSpec::order_teams), 0 when not made
    };
    virtual ScratchPool scratch_pool() const { return {}; }
    /// The native stream this backend queues its work on, as an integer (a
    /// CUstream on the GPU), so a caller can order its own work against it
    /// without host synchronisation; 0 where there is none (the CPU), and 0
    /// on the GPU too while it follows the legacy default stream
    /// (follow_stream(0): PyTorch's default stream).
    virtual uintptr_t native_stream() const { return 0; }
    /// The stream the backend made for itself (native_stream() until
    /// follow_stream moves it); 0 where there is none.
    virtual uintptr_t own_stream() const { return 0; }
    /// Queues all further work on native stream `stream` of this backend's
    /// device (own_stream() to come back), after the work queued so far,
    /// without waiting on the host: one event on the old stream that the new
    /// one waits for. For a caller that keeps its own work on one stream (the
    /// Python binding follows PyTorch's current stream, so a step needs no
    /// events). Neither stream may be in a CUDA graph capture, and `stream`
    /// must outlive its use. With `ordered` false no event is queued (the
    /// caller orders the two streams itself). Nothing on the CPU.
    virtual void follow_stream(uintptr_t stream, bool ordered = true) { (void)stream, (void)ordered; }

    /// Queues a copy of world `world`'s `regions` (their bytes one after the
    /// other) as they will be once all work queued so far has run, and returns
    /// without waiting for that work. One request is pending at a time, from
    /// this call until poll_snapshot() hands its bytes over: a request while one
    /// is pending queues nothing and returns false (it is refused, never
    /// replaces the pending one). This version copies at once after
    /// synchronize(), which suits the CPU backend.
    virtual bool request_snapshot(const std::vector<Region>& regions, uint32_t world);
    /// Never waits: true, with `out` holding the requested bytes, once the pending
    /// copy has landed (then nothing is pending); false while it is in flight or
    /// when nothing was requested. The Simulator may call it from a watcher
    /// thread while run() executes on another (never together with
    /// request_snapshot): it must touch only the snapshot's own state.
    virtual bool poll_snapshot(std::vector<uint8_t>& out);
    /// Waits for kernels still compiling behind the first steps (the CUDA
    /// backend's cold start, GpuOptions::cold_start_level) and puts them in
    /// use; nothing elsewhere. Benchmarks call it so that they time the
    /// kernels a warm start runs.
    /// @warning Between steps, from the thread that steps (it swaps kernels).
    virtual void finish_compiles() {}

  private:
    std::vector<uint8_t> host_snapshot_; ///< the base version's landed copy
    bool host_snapshot_pending_ = false;
};

/// Creates a backend for `opts.device`. Throws orrery::Error when the device is
/// unavailable (for "cuda"), logs a line and falls back to the CPU for "auto".
std::unique_ptr<Backend> make_backend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout,
                                      const SimOptions& opts);

/// Creates a CUDA backend on device `index`; set by the CUDA backend when it is built in.
using CudaBackendFactory = std::unique_ptr<Backend> (*)(const EnvSpec&, const Plan&, const StorageLayout&,
                                                        const SimOptions&, int index);
void set_cuda_backend_factory(CudaBackendFactory f);

/// A saved world: every per-world region, byte for byte.
struct WorldSnapshot {
    std::vector<uint8_t> bytes;
};

/// What a world view (Simulator::poll_world_view) shows.
struct LaggedView {
    uint32_t world = 0;
    uint64_t step = 0;  ///< Simulator::steps_taken() when it was requested: the state after that many steps
    uint64_t lag = 0;   ///< steps taken since: how far the view trails the batch
    bool fresh = false; ///< it landed during this poll (else an earlier view is shown again)
};

class Simulator;

/// Uniformly random values for every ranged input tensor of `sim` (xorshift64
/// advancing `state`): one host buffer per input, in input_ranges() order, laid
/// out like the tensor. For benchmarks, tools and tests that need actions.
std::vector<std::vector<uint8_t>> random_inputs(const Simulator& sim, uint64_t& state);

/// A batch of worlds of one env.
class Simulator {
  public:
    Simulator(EnvSpec spec, SimOptions opts);
    ~Simulator();
    Simulator(const Simulator&) = delete;
    Simulator& operator=(const Simulator&) = delete;

    /// Starts episode 0 in every world with `seed`.
    void reset(uint64_t seed);
    /// Starts a new episode in the worlds where mask[w] != 0 (mask has num_worlds entries).
    void reset_worlds(const std::vector<uint8_t>& mask);
    /// Advances every world one step. Input tensors are range-checked first; a bad
    /// value throws orrery::Error naming the tensor, world and value, before any change.
    void step();
    /// Like step(), with input tensor `name`'s values read from `data` (its
    /// dtype and layout, in the simulator's memory: host memory on the CPU,
    /// device memory on a GPU) instead of from the tensor, which holds them
    /// after the step as if they had been written there. On the CPU they are
    /// range-checked where they are (a bad value throws as in step(), nothing
    /// changed, the tensor included) and copied in. On a GPU nothing is copied
    /// when the staged megakernel runs and `data` is 16-byte aligned: the step
    /// reads `data` in place while it loads its worlds, and an out-of-range
    /// value is recorded per world (ErrorCode::kBadAction, that world not
    /// stepped) as in step(); otherwise a device copy is queued first. Either
    /// way the read is queued on the backend's stream: `data` must hold its
    /// values until the work queued there so far has run, and writes to it
    /// queued on that stream afterwards (or ordered after it) do not affect
    /// this step, while a write from another stream or the host before then
    /// races with the read.
    ///
    /// Each of `outputs` (an exported tensor's `data` and `bytes()`, and a
    /// destination laid out as it) is written to its `dst` after the step, as
    /// a copy queued after it would be: on a GPU the staged step writes up to
    /// four 16-byte aligned destinations from its copy back (no copy launch),
    /// the rest are device copies queued after it; on the CPU each chunk of
    /// worlds is written out by the thread that stepped it, from its cache. Throws orrery::Error,
    /// before anything changes, for a column or size that is no exported tensor's.
    void step_reading(const std::string& name, const void* data, const std::vector<OutputCopy>& outputs = {});
    /// Waits for the device (no-op on the CPU).
    void synchronize();

    uint32_t num_worlds() const { return opts_.num_worlds; }
    const EnvSpec& spec() const { return spec_; }
    const SimOptions& options() const { return opts_; }
    Backend& backend() { return *backend_; }

    /// Every exported tensor, the engine's terminated/truncated/errors and, in
    /// same-step mode, final_<name> for each output.
    const std::vector<TensorView>& tensors() const { return tensors_; }
    /// The named tensor; throws orrery::Error listing the names if unknown.
    const TensorView& tensor(const std::string& name) const;

    /// Per-world error codes of the last step (ErrorCode values).
    std::vector<uint32_t> errors();
    /// Throws orrery::Error describing the first worlds with a nonzero error code.
    void check_errors();

    /// Saves, restores and copies single worlds. A restored world continues
    /// bit-exactly. restore_world treats the snapshot as untrusted: every field is
    /// checked first (engine bookkeeping, then the env's), and a bad one throws
    /// orrery::Error naming it, the world untouched.
    WorldSnapshot save_world(uint32_t world);
    void restore_world(uint32_t world, const WorldSnapshot& snap);
    void copy_world(uint32_t src, uint32_t dst);
    /// Calls fn with a Ctx over a host copy of world `world` (any backend). Use it
    /// for host-side inspection: JSON state export, viewers, tests.
    void read_world(uint32_t world, const std::function<void(Ctx&)>& fn);
    /// Queues a consistent copy of world `world`, taken between two passes once
    /// everything queued so far has run, and returns without waiting for it (on
    /// the GPU the step stream is never synchronised). False, queuing nothing,
    /// while an earlier request has not landed and been collected by
    /// poll_world_view. Throws orrery::Error for a bad `world`, state untouched.
    ///
    /// Threads: step(), reset(), reset_worlds() and the two world-view calls may
    /// be made from different threads (a training loop stepping, a watcher
    /// showing frames): they take one fair lock, so a call waits only for the
    /// calls that hold it or asked first (a stepping loop cannot starve a
    /// watcher), and a view is read through its own scratch storage. Only a
    /// request that queues a copy takes that lock: a refused request and
    /// poll_world_view (its fn included) never wait for a step, nor a step for
    /// them. Every other call belongs to one thread at a time.
    bool request_world_view(uint32_t world);
    /// Never waits: collects the requested copy if it has landed, then calls fn
    /// with a Ctx over the latest landed copy (possibly several steps old) and
    /// returns true; false, without calling fn, when no copy has landed yet.
    bool poll_world_view(const std::function<void(Ctx&, const LaggedView&)>& fn);
    /// Number of step() calls so far (a world view records it to show its lag).
    uint64_t steps_taken() const { return steps_taken_.load(std::memory_order_relaxed); }
    /// Like read_world, then writes the copy back. If fn throws, the world is
    /// left untouched and the exception propagates.
    void edit_world(uint32_t world, const std::function<void(Ctx&)>& fn);

    /// The env's JSON form of one world's state (EnvSpec::state_to_json).
    std::string get_state_json(uint32_t world);
    /// Replaces one world's state from the env's JSON form; on error the world is untouched.
    void set_state_json(uint32_t world, const std::string& json);

    /// 64-bit FNV-1a hash of a world's whole state.
    uint64_t state_hash(uint32_t world);

    /// Writes every world to `path` atomically (temporary file, fsync, rename),
    /// streamed one world at a time (engine/checkpoint.cpp).
    void save_checkpoint(const std::string& path);
    /// Loads a checkpoint written for the same env, options and world count;
    /// throws orrery::Error for a corrupt, truncated or mismatched file (a
    /// differing env option is named), or any world whose fields fail the checks
    /// of restore_world, state untouched. Only a regular file is read, streamed.
    void load_checkpoint(const std::string& path);

    /// Bytes of every world, the engine's arrays, the assets and the backend's step-scratch pool.
    MemoryReport memory_report() const;

  private:
    void check_world(uint32_t w, const char* what) const;
    /// Range-checks every ranged input, reading `replaced`'s values at `data`.
    void check_inputs(const TensorView* replaced = nullptr, const void* data = nullptr);
    std::string schema_text() const;
    size_t snapshot_bytes() const;
    /// One world's region bytes into `into` (scratch_ or view_scratch_).
    void load_scratch(const uint8_t* bytes, const Storage& into);
    /// Checks one world's snapshot bytes field by field (engine bookkeeping,
    /// then EnvSpec::validate_world) in scratch_; throws orrery::Error.
    void check_snapshot(const uint8_t* bytes);
    /// check_snapshot's message, prefixed with "world N: ", or "" when the bytes pass.
    std::string world_error(const uint8_t* bytes, uint32_t world);
    /// Worlds [first, first + count) to or from host bytes laid out world after
    /// world (the snapshot layout), one backend copy per region (checkpoint.cpp).
    void copy_worlds_out(uint32_t first, uint32_t count, uint8_t* out);
    void copy_worlds_in(uint32_t first, uint32_t count, const uint8_t* in);

    EnvSpec spec_;
    SimOptions opts_;
    Plan plan_;
    StorageLayout layout_;
    std::unique_ptr<Backend> backend_;
    std::vector<Region> regions_;
    std::vector<TensorView> tensors_;
    StorageLayout scratch_layout_; ///< a one-world host layout for read/edit_world
    std::vector<uint8_t> scratch_memory_;
    Storage scratch_;
    FairMutex mutex_; ///< step/reset against the world-view calls (other threads), FIFO
    std::atomic<uint64_t> steps_taken_{0};
    std::mutex poll_mutex_; ///< one poll_world_view at a time: view_bytes_, view_scratch_ and its fn
    std::mutex view_mutex_; ///< the request state and the backend's snapshot (taken after mutex_, never before)
    std::vector<uint8_t> view_scratch_memory_;
    Storage view_scratch_;           ///< a one-world host copy for poll_world_view
    LaggedView view_, view_pending_; ///< the latest landed view and the requested one
    bool view_requested_ = false, view_landed_ = false;
    std::vector<uint8_t> view_bytes_; ///< the latest landed view's bytes
};

} // namespace orrery
