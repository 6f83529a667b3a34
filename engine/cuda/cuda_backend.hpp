#pragma once
// The CUDA backend: every world in one device allocation, each pass one launch
// of an NVRTC-compiled megakernel (or one launch per op, for comparison), all
// queued on the backend's stream with no host synchronisation in run().

#include <chrono>
#include <future>
#include <map>
#include <set>
#include <memory>
#include <string>
#include <vector>

#include "engine/cuda/background_compile.hpp"
#include "engine/cuda/codegen.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/simulator.hpp"

namespace orrery {

/// Installs the CUDA backend factory (make_backend calls it; calling it again is harmless).
void register_cuda_backend();

namespace cuda {

/// Facts about a CUDA device, read without creating a context.
struct DeviceInfo {
    int index = 0;
    std::string name;
    int arch = 0; ///< compute capability * 10
    int multiprocessors = 0;
};

/// True when the backend runs one kernel per node: asked for
/// (SimOptions::per_node_launches), or preferred by the env
/// (EnvSpec::prefer_per_node) and the megakernel not asked for (GpuOptions::megakernel).
bool runs_per_node(const EnvSpec& spec, const SimOptions& opts);

/// Reads device `index`; throws orrery::Error when the driver or device is unavailable.
DeviceInfo device_info(int index);

/// Source of the kernel that gathers one world's regions for a snapshot (device/gather.cuh,
/// compiled with NVRTC at the first CudaBackend::request_snapshot).
const char* world_gather_source();
/// Most regions one gather launch copies; worlds with more are copied region by region.
inline constexpr uint32_t kMaxGatherRegions = 64;

/// How the backend's module was obtained (for logs and benchmarks).
struct ModuleStats {
    double compile_seconds = 0; ///< what the first step waited for
    bool from_cache = false;
    std::string cache_path;
    size_t programs = 0; ///< NVRTC programs (the per-node form: one per node, node_group_requests)
    /// A cold start at GpuOptions::cold_start_level: the programs compiled
    /// first at that level and fully in the background ("" and 0 otherwise).
    std::string first_level;
    size_t background_programs = 0;
    size_t swapped_programs = 0;   ///< of those, swapped in so far
    size_t failed_programs = 0;    ///< of those, failed (their quick binary stays; reported once each)
    double background_seconds = 0; ///< from the backend's construction to the last swap
};

class CudaBackend final : public Backend {
  public:
    CudaBackend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout, const SimOptions& opts, int index);
    ~CudaBackend() override;

    DeviceKind device() const override { return DeviceKind::kCuda; }
    int device_index() const override { return info_.index; }
    std::string describe() const override;
    const Storage& storage() const override { return storage_; }
    void run(const std::vector<Op>& ops) override;
    /// The staged step reads `in.source` in place of its column while it loads
    /// its worlds, and writes up to kMaxStageOutputs of `outs` from its copy
    /// back (its launch argument, no copy launch), when the address is 16-byte
    /// aligned and names a whole staged region; otherwise a device copy is
    /// queued before (the input) or after (an output) the step.
    void run_reading(const std::vector<Op>& ops, const InputSource& in,
                     const std::vector<OutputCopy>& outs = {}) override;
    void copy_to_host(void* dst, const void* src, size_t n) override;
    void copy_from_host(void* dst, const void* src, size_t n) override;
    void copy_within(void* dst, const void* src, size_t n) override;
    void synchronize() override;
    uintptr_t native_stream() const override { return reinterpret_cast<uintptr_t>(stream_); }
    /// The step-scratch pool: a slot per team that can be resident at once.
    ScratchPool scratch_pool() const override {
        ScratchPool p = scratch_pool_;
        p.shared_use = shared_use_;
        p.order_bytes = storage_.team_order ? team_order_bytes() : 0;
        return p;
    }
    uintptr_t own_stream() const override { return reinterpret_cast<uintptr_t>(own_stream_); }
    void follow_stream(uintptr_t stream, bool ordered = true) override;
    /// Gathers the world's regions into a device staging buffer on the step
    /// stream with one kernel launch (so the copy falls between two passes),
    /// then copies that to pinned host memory on a second stream; the step
    /// stream never waits. Not for use while the step stream is being captured
    /// into a CUDA graph. The first call compiles the gather kernel (cached).
    bool request_snapshot(const std::vector<Region>& regions, uint32_t world) override;
    /// Queries the copy's event; never waits.
    bool poll_snapshot(std::vector<uint8_t>& out) override;
    /// Waits for the fully optimised kernels of a cold start still compiling
    /// (GpuOptions::cold_start_level) and swaps them in; nothing when none is.
    /// Not inside a graph capture of the stream (then it returns at once).
    void finish_compiles() override;

    /// The stream all work is queued on (for graph capture by callers).
    CUstream stream() const { return stream_; }
    /// Queues all further work on `stream` (for example the caller's framework
    /// stream, so a step joins its graph capture); nullptr returns to the
    /// backend's own stream. Waits for the work already queued first.
    /// @warning `stream` must belong to this device's primary context and outlive its use here.
    void use_stream(CUstream stream);
    /// Worlds per block of a pass (one thread per world; a staged block has more threads, which all copy).
    unsigned block_size() const { return staged_ ? stage_worlds_ : block_; }
    /// True when the megakernel stages each block's worlds in shared memory.
    bool staged() const { return staged_; }
    /// True when the kernels are launched as programmatic dependent launches
    /// (sm_90+, unless GpuOptions::programmatic_launch is off): a kernel's
    /// launch (and a staged pass's first copies) overlap the kernel ahead of it.
    bool programmatic_launch() const { return pdl_; }
    const ModuleStats& module_stats() const { return stats_; }
    const KernelSource& kernel_source() const { return source_; }

  private:
    /// Starts compiling (or loading from the cache) the first kernels of source_
    /// on host threads: NVRTC only, so it may run while the context is made.
    void start_compiles(const EnvSpec& spec);
    /// Waits for them (start_compiles first if it was not called), loads the
    /// modules and starts a cold start's background compiles.
    void load_module(const EnvSpec& spec);
    /// Uses `m`, loaded from program `p`'s binary, for that program's kernels.
    void install_program(size_t p, CUmodule m);
    /// Swaps in the background compiles that have finished (all of them with
    /// `wait`), at a step boundary and outside any graph capture; modules
    /// swapped out stay loaded (a graph or queued work may use them).
    void swap_in_compiled(bool wait);
    /// True while the stream is being captured into a graph (or cannot tell).
    bool capturing() const;
    /// Regrows the step-scratch pool when the swapped-in kernels fit more teams per SM.
    void fit_scratch_pool();
    /// Sizes and allocates the step-scratch pool once the kernels are loaded
    /// (their occupancy sizes it), then puts its place in every module's __constant__ Storage.
    void allocate_scratch();
    /// Writes storage_ into every module's __constant__ Storage (stream-ordered).
    void upload_storage_everywhere();
    /// Teams of the kernels running scratch nodes that can be resident on one SM.
    unsigned resident_scratch_teams_per_sm() const;
    /// Loads one compiled program and sets its __constant__ Storage.
    CUmodule load_cubin(const CompileRequest& req, const std::string& cubin);
    /// Worlds per staged block, or 0 to run the direct megakernel (from the layout and the device).
    unsigned choose_stage_worlds(const EnvSpec& spec, const StorageLayout& layout) const;
    /// Plans the staging tables of `block`-world blocks and uploads them into the loaded module.
    void plan_staging(const EnvSpec& spec, const StorageLayout& layout, unsigned block);
    /// Uploads the staging tables into module `m` and takes its staged kernels.
    void upload_staging(CUmodule m);
    void launch(CUfunction f, void** params);
    /// One launch on the stream, programmatic when pdl_.
    void launch_one(CUfunction f, unsigned grid, unsigned block, unsigned smem, void** params);
    /// Chooses the scratch a team keeps on chip (EnvSpec::scratch_shared):
    /// the longest run of the components asked for, in the order asked, whose
    /// regions fit a block (GpuOptions::team_shared); sets storage_'s mask
    /// and a team's bytes before any module is loaded.
    void fit_team_shared(const EnvSpec& spec);
    /// Gives kernel `f` (named `kernel`) a region of shared memory per team
    /// when KernelSource::team_shared_kernels lists it and fit_team_shared
    /// kept any; records the bytes a team.
    void set_team_shared(CUfunction f, const std::string& kernel);
    /// Finds the kernel that orders kernel f's worlds (EnvSpec::order_teams) in f's module m, when f has one.
    void find_order(CUfunction f, CUmodule m, const std::string& kernel);
    /// Storage::team_cost and team_order, where a node orders its teams and
    /// GpuOptions::order_teams asks for it at this launch size.
    void allocate_team_order(const EnvSpec& spec);
    /// What the order takes: each world's hint, then its place in the order.
    size_t team_order_bytes() const { return size_t(storage_.num_worlds) * 2 * sizeof(uint32_t); }
    /// Dynamic shared memory a launch of `f` in blocks of `block` threads gets.
    unsigned shared_for(CUfunction f, unsigned block) const;
    /// One staged pass with its launch argument (StageArgs).
    void launch_staged(CUfunction f, const StageArgs& args);
    /// The staged region whose base is `column` and spans `bytes` over every world, or kNoStageInput.
    unsigned stage_region_of(const void* column, size_t bytes) const;
    void bind_current() const;
    void release() noexcept;
    void reserve_snapshot(size_t bytes);
    void load_gather();
    void gather(const std::vector<Region>& regions, uint32_t world);
    void release_snapshot() noexcept;

    DeviceInfo info_;
    CUdevice dev_ = 0;
    CUcontext ctx_ = nullptr;
    CUstream stream_ = nullptr; ///< where work is queued: own_stream_ or the caller's
    CUstream own_stream_ = nullptr;
    CUevent moved_ = nullptr; ///< follow_stream's event: the old stream's work, which the new one waits for
    CUdeviceptr memory_ = 0;
    CUdeviceptr scratch_ = 0; ///< the step-scratch pool: the busy bitmap, then the slots
    CUdeviceptr order_ = 0;   ///< Storage::team_cost, then team_order (EnvSpec::order_teams)
    /// Each ordered node's kernel (swapped-out ones too) with the kernel that orders its worlds.
    std::map<CUfunction, CUfunction> order_of_;
    ScratchPool scratch_pool_;
    CUmodule module_ = nullptr;     ///< the megakernel's module (the per-node form: its first)
    std::vector<CUmodule> modules_; ///< every module loaded (the per-node form: one per kernel), swapped out or not
    std::vector<size_t> step_program_, reset_program_; ///< the program each step and reset kernel comes from
    std::vector<size_t> program_of_kernel_;            ///< the same, step kernels then reset kernels
    std::vector<std::string> program_nodes_;           ///< per-node form: the node of each program
    /// The compiles the first step waits for (start_compiles).
    struct FirstCompiles {
        std::vector<CompileRequest> reqs; ///< each program's fully optimised request
        StartPlan start;
        std::chrono::steady_clock::time_point t0;
        std::future<std::vector<CompiledModule>> modules;
    } first_;
    std::vector<CompileRequest> full_requests_;      ///< each program's fully optimised request
    std::unique_ptr<BackgroundCompiles> background_; ///< a cold start's full compiles still running
    std::vector<size_t> background_program_;         ///< the program of each background request
    std::chrono::steady_clock::time_point started_;
    std::string env_name_;
    Storage storage_;
    GpuOptions gpu_; ///< kernel form and compile settings (SimOptions::gpu)
    std::vector<Op> step_ops_, reset_ops_;
    KernelSource source_;
    std::vector<CUfunction> step_fns_, reset_fns_;
    CUfunction step_staged_ = nullptr, reset_staged_ = nullptr;
    bool staged_ = false;
    bool pdl_ = false;
    /// The index in its pass of the first op kernel `kernel` of the step
    /// (else reset) pass runs (KernelSource::step_first_op; 0 in the megakernel forms).
    size_t first_op_of(bool step, size_t kernel) const;
    std::string lanes_text() const;   ///< ", 8 lanes/world (observe 8, ...)" or ""
    std::string blocks_text() const;  ///< ", 256 threads/block (phys::simulate 128)"
    unsigned block_ = 128, grid_ = 1; ///< the default block (GpuOptions::fit_blocks) and its grid
    unsigned long long threads_ = 0;  ///< threads of a direct or per-node launch: worlds x lanes
    /// Each direct or per-node kernel's threads per block, found at its first
    /// use (block_for); a swapped-in kernel is a new function, found anew.
    mutable std::map<CUfunction, unsigned> blocks_; ///< block_for's memo (GpuOptions::fit_blocks only)
    unsigned block_for(CUfunction f) const;
    std::set<CUfunction> aligned_fns_; ///< the loaded kernels KernelSource::aligned_kernels names
    void note_aligned(CUfunction f, const std::string& kernel);
    /// A kernel whose threads a world are chosen at launch
    /// (KernelSource::launch_lanes): the shift it is passed, its block and grid.
    struct LaunchShape {
        unsigned shift = 0, block = 32, grid = 1;
    };
    std::map<CUfunction, LaunchShape> launch_shapes_;
    bool pack_serial_ = false; ///< the env's EnvSpec::pack_serial
    /// Finds f's launch shape when KernelSource::launch_lanes names `kernel`
    /// (GpuOptions::pack_serial, wide_lanes).
    void note_launch_lanes(CUfunction f, const std::string& kernel);
    std::map<CUfunction, unsigned> team_shared_; ///< bytes of a team's region, per kernel given one
    std::string shared_use_;                     ///< where scratch kept on chip went (ScratchPool::shared_use)
    unsigned stage_worlds_ = 0, stage_threads_ = 0, stage_grid_ = 0, stage_smem_ = 0;
    std::vector<StageRegion> stage_table_; ///< the staged regions, in the kernel's order
    /// What plan_staging uploads into the staged module (again into a swapped-in one).
    struct StageUpload {
        StagePlan plan{};
        Storage tmpl;
        std::vector<uint32_t> mask, end_load, end_all;
    } stage_upload_;
    ModuleStats stats_;
    // World snapshots (request_snapshot): created at the first request.
    CUstream copy_stream_ = nullptr; ///< device-to-host copies of snapshots, beside the step stream
    CUevent gathered_ = nullptr;     ///< the gather on the step stream is done
    CUevent landed_ = nullptr;       ///< the copy into pinned_ is done
    CUmodule gather_module_ = nullptr;
    CUfunction gather_fn_ = nullptr;
    CUdeviceptr staging_ = 0;
    uint8_t* pinned_ = nullptr;
    size_t snapshot_capacity_ = 0, snapshot_bytes_ = 0;
    bool snapshot_pending_ = false;
};

} // namespace cuda
} // namespace orrery
