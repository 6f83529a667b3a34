// The CUDA backend. Construction loads the driver and NVRTC, allocates one
// device block sized from the storage layout, compiles (or loads from the
// cache) the env's kernels for the GPU present, and puts the Storage struct in
// __constant__ memory once; after that a pass is one kernel launch (the staged
// kernels' one argument: where to read a caller's input column, for
// run_reading), so steps queue back to back and can be captured in a CUDA graph.

#include "engine/cuda/cuda_backend.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <future>
#include <map>
#include <thread>
#include <type_traits>

#include "engine/cuda/device_sources.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"

namespace orrery {

namespace cuda {

namespace {

bool same_ops(const std::vector<Op>& a, const std::vector<Op>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].kind != b[i].kind || a[i].node != b[i].node || a[i].phase != b[i].phase) return false;
    return true;
}

std::string version_text(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

void check_driver_supports_nvrtc() {
    int drv = driver_version(), rtc = nvrtc_version();
    if (drv / 1000 >= rtc / 1000) return;
    throw Error("the NVIDIA driver is too old: it supports CUDA " + version_text(drv) + ", but NVRTC (" + nvrtc_path() +
                ") is CUDA " + version_text(rtc) +
                " and its binaries would not load; update the driver or set ORRERY_NVRTC to an NVRTC of CUDA " +
                std::to_string(drv / 1000) + ".x");
}

/// `req` carrying the simulator's compile settings (cache, source dump, logging).
CompileRequest with_settings(CompileRequest req, const GpuOptions& gpu) {
    req.cache_dir = gpu.cache_dir;
    req.dump_source_dir = gpu.dump_source_dir;
    req.verbose = gpu.verbose;
    req.source_dir = gpu.source_dir;
    req.extra_options = gpu.nvrtc_options; // after EnvSpec::fast_compile: its own --Ofast-compile wins
    // A pool smaller than the resident teams makes teams wait for a slot,
    // which a team waiting in Lanes::align() (device/storage.cuh), or a thread
    // waiting for its warp-mates after taking one (device/scratch.cuh), would
    // never give back: both leave those waits out under this define.
    if (gpu.scratch_slots)
        req.extra_options += std::string(req.extra_options.empty() ? "" : " ") + "-DORRERY_SCRATCH_MAY_WAIT";
    req.driver_version = driver_version();
    return req;
}

/// Threads a block of a direct or per-node launch of `threads` threads: at
/// most `most`, small enough that a small batch still spreads over every SM.
unsigned spread_block(unsigned long long threads, unsigned sms, unsigned most) {
    const unsigned long long per_sm = (threads + sms - 1) / sms;
    return unsigned(std::clamp<unsigned long long>((per_sm + 31) / 32 * 32, 32, most));
}

/// Blocks of `block` threads for `threads` threads of `worlds` worlds;
/// throws where a launch cannot have that many.
unsigned grid_of(unsigned long long threads, unsigned block, unsigned long long worlds) {
    if ((threads + block - 1) / block > 0x7fffffffull)
        throw Error("num_worlds " + std::to_string(worlds) + " needs more GPU blocks than a launch allows");
    return unsigned((threads + block - 1) / block);
}

} // namespace

bool runs_per_node(const EnvSpec& spec, const SimOptions& opts) {
    return opts.per_node_launches || (spec.prefer_per_node && !opts.gpu.megakernel);
}

DeviceInfo device_info(int index) {
    const DriverApi& d = driver();
    int count = 0;
    ORRERY_CU(d.cuDeviceGetCount(&count));
    if (count == 0) throw Error("the NVIDIA driver found no CUDA device");
    if (index < 0 || index >= count)
        throw Error("CUDA device " + std::to_string(index) + " was asked for, but this machine has " +
                    std::to_string(count) + " (valid: cuda:0 to cuda:" + std::to_string(count - 1) + ")");
    CUdevice dev = 0;
    ORRERY_CU(d.cuDeviceGet(&dev, index));
    DeviceInfo info;
    info.index = index;
    char name[256] = {};
    ORRERY_CU(d.cuDeviceGetName(name, sizeof(name) - 1, dev));
    info.name = name;
    int major = 0, minor = 0;
    ORRERY_CU(d.cuDeviceGetAttribute(&major, kAttrComputeMajor, dev));
    ORRERY_CU(d.cuDeviceGetAttribute(&minor, kAttrComputeMinor, dev));
    ORRERY_CU(d.cuDeviceGetAttribute(&info.multiprocessors, kAttrMultiprocessorCount, dev));
    info.arch = major * 10 + minor;
    return info;
}

CudaBackend::CudaBackend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout, const SimOptions& opts,
                         int index)
    : started_(std::chrono::steady_clock::now()), env_name_(spec.name()), gpu_(opts.gpu), step_ops_(plan.step),
      reset_ops_(plan.reset) {
    const DriverApi& d = driver();
    pack_serial_ = spec.pack_serial;
    info_ = device_info(index);
    check_driver_supports_nvrtc();
    ORRERY_CU(d.cuDeviceGet(&dev_, index));
    // Decide the form first: only the kernels that will run are compiled.
    // Per-node when asked for, or when the env prefers it and the megakernel was not asked for.
    const bool per_node = runs_per_node(spec, opts);
    const unsigned lanes = world_lanes_for(spec, gpu_.world_lanes);
    // Teams: the env's block (EnvSpec::team_block_threads) unless the
    // caller's options name one; the kernels are compiled to fit it.
    const unsigned team_block = team_block_for(spec, gpu_.team_block_threads);
    check_team_order(gpu_.order_teams);
    check_launch_lanes(gpu_.pack_serial, gpu_.wide_lanes, gpu_.pack_teams);
    check_printf_mb(gpu_.printf_mb);
    if (per_node) { // its kernels need nothing of the device: NVRTC starts while the context is made
        source_ = generate_kernels(spec, plan, KernelForm::kPerNode, lanes, team_block, gpu_.fuse_serial);
        start_compiles(spec);
    }
    ORRERY_CU(d.cuDevicePrimaryCtxRetain(&ctx_, dev_));
    try {
        bind_current();
        // Device printf's buffer (GpuOptions::printf_mb): the driver's 1 MB
        // holds about 5 steps of 1,024 worlds' phase-clock lines.
        if (gpu_.printf_mb) ORRERY_CU(d.cuCtxSetLimit(kLimitPrintfFifoSize, size_t(gpu_.printf_mb) << 20));
        ORRERY_CU(d.cuStreamCreate(&own_stream_, kStreamNonBlocking));
        stream_ = own_stream_;
        size_t bytes = std::max<size_t>(layout.total_bytes, 64);
        CUresult r = d.cuMemAlloc(&memory_, bytes);
        if (r == kCudaErrorOutOfMemory) {
            size_t free_bytes = 0, total = 0;
            d.cuMemGetInfo(&free_bytes, &total);
            throw Error("out of device memory: " + std::to_string(opts.num_worlds) + " worlds of '" + spec.name() +
                        "' need " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(index) + " (" +
                        info_.name + "), which has " + std::to_string(free_bytes) + " free of " +
                        std::to_string(total) + "; lower num_worlds");
        }
        ORRERY_CU(r);
        ORRERY_CU(d.cuMemsetD8Async(memory_, 0, bytes, stream_));
        storage_ = layout.bind(reinterpret_cast<uint8_t*>(memory_), nullptr);
        unsigned stage_worlds = per_node ? 0 : choose_stage_worlds(spec, layout);
        if (!per_node)
            source_ = generate_kernels(spec, plan, stage_worlds ? KernelForm::kStaged : KernelForm::kDirect, lanes,
                                       team_block); // the staged form ignores it
        // Direct and per-node kernels: source_.lanes threads per world; blocks
        // small enough that small batches still spread over every SM.
        const unsigned long long threads = (unsigned long long)opts.num_worlds * source_.lanes;
        block_ = spread_block(threads, unsigned(info_.multiprocessors), source_.lanes == 1 ? 128u : team_block);
        if (source_.lanes > 32) block_ = source_.lanes; // a block per world
        grid_ = grid_of(threads, block_, opts.num_worlds);
        threads_ = threads;
        fit_team_shared(spec);
        load_module(spec);
        // Every generated kernel waits for the one ahead before reading any
        // world (orrery_wait_for_previous_pass), so each may be launched
        // programmatically: on sm_90 and newer, with a driver of CUDA 12.3 or
        // newer (whose stream capture keeps such launches as graph edges).
        pdl_ = info_.arch >= 90 && d.cuLaunchKernelEx && driver_version() >= 12030 && gpu_.programmatic_launch;
        if (stage_worlds) plan_staging(spec, layout, stage_worlds);
        allocate_team_order(spec);
        allocate_scratch();
    } catch (...) {
        release();
        throw;
    }
}

CUmodule CudaBackend::load_cubin(const CompileRequest& req, const std::string& cubin) {
    const DriverApi& d = driver();
    CUmodule m = nullptr;
    CUresult r = d.cuModuleLoadData(&m, cubin.data());
    if (r != kCudaSuccess)
        throw Error("cannot load the compiled " + req.label + " on cuda:" + std::to_string(info_.index) + " (" +
                    info_.name + ", sm_" + std::to_string(info_.arch) + "): " + cu_error_text(r) +
                    (r == kCudaErrorUnsupportedPtxVersion ? "; the driver is older than NVRTC" : ""));
    modules_.push_back(m); // unloaded in release(), also when a later step here throws
    CUdeviceptr sym = 0;
    size_t sym_bytes = 0;
    ORRERY_CU(d.cuModuleGetGlobal(&sym, &sym_bytes, m, kStorageSymbol));
    if (sym_bytes != sizeof(Storage))
        throw Error("Storage is " + std::to_string(sizeof(Storage)) + " bytes on the host but " +
                    std::to_string(sym_bytes) + " under NVRTC; ecs/storage.hpp must lay out identically");
    ORRERY_CU(d.cuMemcpyHtoDAsync(sym, &storage_, sizeof(Storage), stream_));
    return m;
}

void CudaBackend::start_compiles(const EnvSpec& spec) {
    // The per-node form: every kernel its own NVRTC program and module, the
    // programs compiled in parallel (a cold start waits for the slowest one,
    // not for the sum); the other forms: one program.
    std::vector<CompileRequest>& reqs = first_.reqs;
    if (source_.per_node) { // the kernels of one node share a program (node_group_requests)
        NodeGroups groups = node_group_requests(spec, source_, info_.arch);
        for (CompileRequest& r : groups.reqs) {
            reqs.push_back(with_settings(std::move(r), gpu_));
            reqs.back().log_compile = gpu_.verbose; // one line for all below
        }
        program_of_kernel_ = std::move(groups.program);
        program_nodes_ = std::move(groups.nodes);
    } else {
        reqs.push_back(with_settings(kernel_request(spec, source_, info_.arch), gpu_));
        program_of_kernel_.assign(source_.step_kernels.size() + source_.reset_kernels.size(), 0);
    }
    // A cold start steps first on kernels compiled at GpuOptions::cold_start_level
    // while the full ones compile behind; a swap needs to see graph captures.
    first_.start = driver().cuStreamIsCapturing ? plan_start(reqs, gpu_.cold_start_level) : StartPlan{reqs, {}};
    first_.t0 = std::chrono::steady_clock::now();
    // NVRTC only (no driver call), on threads of its own, while the caller goes on.
    first_.modules = std::async(std::launch::async, [reqs = first_.start.first, threads = gpu_.compile_threads] {
        return compile_modules(reqs, threads);
    });
}

void CudaBackend::load_module(const EnvSpec& spec) {
    if (!first_.modules.valid()) start_compiles(spec);
    std::vector<CompiledModule> ms = first_.modules.get();
    const StartPlan& start = first_.start;
    std::vector<CompileRequest>& reqs = first_.reqs;
    stats_ = {std::chrono::duration<double>(std::chrono::steady_clock::now() - first_.t0).count(), true,
              ms.front().cache_path};
    stats_.programs = ms.size();
    size_t compiled = 0, slowest = 0; // of the programs compiled, not loaded from the cache
    for (size_t i = 0; i < ms.size(); ++i) {
        stats_.from_cache = stats_.from_cache && ms[i].from_cache;
        if (ms[i].from_cache) continue;
        if (compiled++ == 0 || ms[i].seconds > ms[slowest].seconds) slowest = i;
    }
    const unsigned threads = unsigned(std::min<size_t>(
        gpu_.compile_threads ? gpu_.compile_threads : std::max(1u, std::thread::hardware_concurrency()), ms.size()));
    if (!start.background.empty()) {
        stats_.first_level = gpu_.cold_start_level;
        stats_.background_programs = start.background.size();
    }
    if (source_.per_node && compiled)
        std::fprintf(stderr,
                     "orrery: NVRTC compiled '%s' per-node kernels for sm_%d in %.2f s (%zu of %zu programs%s, "
                     "%u threads; slowest %s, %.2f s)\n",
                     spec.name().c_str(), info_.arch, stats_.compile_seconds, compiled, ms.size(),
                     start.background.empty() ? "" : (" at --Ofast-compile=" + gpu_.cold_start_level).c_str(), threads,
                     program_nodes_[slowest].c_str(), ms[slowest].seconds);
    // Kernels in launch order, step then reset (KernelSource::programs' order).
    const size_t steps = source_.step_kernels.size();
    step_program_.assign(program_of_kernel_.begin(), program_of_kernel_.begin() + steps);
    reset_program_.assign(program_of_kernel_.begin() + steps, program_of_kernel_.end());
    step_fns_.assign(source_.step_kernels.size(), nullptr);
    reset_fns_.assign(source_.reset_kernels.size(), nullptr);
    for (size_t i = 0; i < ms.size(); ++i) install_program(i, load_cubin(start.first[i], ms[i].cubin));
    module_ = modules_.front();
    ORRERY_CU(driver().cuStreamSynchronize(stream_));
    if (start.background.empty()) return;
    // The full compiles, the programs that took longest at the quick level
    // first (so the slowest is not left to start last), on the same threads.
    std::vector<size_t> order = start.background;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ms[a].seconds > ms[b].seconds; });
    std::vector<CompileRequest> full;
    for (size_t p : order) {
        full.push_back(reqs[p]);
        full.back().log_compile = gpu_.verbose;
    }
    full_requests_ = std::move(reqs);
    background_program_ = order;
    // By default a core fewer than the machine has: the thread that steps keeps one.
    const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
    const unsigned behind = gpu_.compile_threads ? gpu_.compile_threads : std::max(1u, cores - 1);
    background_ = std::make_unique<BackgroundCompiles>(std::move(full), behind);
    std::fprintf(stderr,
                 "orrery: stepping '%s' on kernels compiled at --Ofast-compile=%s; compiling %zu program%s fully "
                 "on background threads (ORRERY_NVRTC_BACKGROUND=0 compiles them first)\n",
                 spec.name().c_str(), gpu_.cold_start_level.c_str(), order.size(), order.size() == 1 ? "" : "s");
}

void CudaBackend::install_program(size_t p, CUmodule m) {
    const DriverApi& d = driver();
    for (size_t i = 0; i < step_fns_.size(); ++i)
        if (step_program_[i] == p) {
            ORRERY_CU(d.cuModuleGetFunction(&step_fns_[i], m, source_.step_kernels[i].c_str()));
            set_team_shared(step_fns_[i], source_.step_kernels[i]);
            find_order(step_fns_[i], m, source_.step_kernels[i]);
            note_aligned(step_fns_[i], source_.step_kernels[i]);
            note_launch_lanes(step_fns_[i], source_.step_kernels[i]);
        }
    for (size_t i = 0; i < reset_fns_.size(); ++i)
        if (reset_program_[i] == p) {
            ORRERY_CU(d.cuModuleGetFunction(&reset_fns_[i], m, source_.reset_kernels[i].c_str()));
            set_team_shared(reset_fns_[i], source_.reset_kernels[i]);
            find_order(reset_fns_[i], m, source_.reset_kernels[i]);
            note_aligned(reset_fns_[i], source_.reset_kernels[i]);
            note_launch_lanes(reset_fns_[i], source_.reset_kernels[i]);
        }
    if (source_.per_node) return;
    module_ = m; // one program: the megakernel's
    if (staged_) upload_staging(m);
}

bool CudaBackend::capturing() const {
    int status = 0;
    return driver().cuStreamIsCapturing(stream_, &status) != kCudaSuccess || status != 0;
}

void CudaBackend::finish_compiles() {
    if (!background_) return;
    bind_current();
    swap_in_compiled(true);
}

void CudaBackend::swap_in_compiled(bool wait) {
    // Between two passes, in stream order: a new module's __constant__ Storage
    // is written on the stream before its first launch, and the passes queued
    // before keep their modules. Never inside a capture (the graph would hold
    // the copies, and a capture forbids some of these calls).
    if (capturing()) return;
    std::vector<BackgroundCompiles::Finished> done = wait ? background_->wait_all() : background_->take_finished();
    for (BackgroundCompiles::Finished& f : done) {
        const size_t p = background_program_[f.index];
        if (f.error.empty()) {
            try {
                install_program(p, load_cubin(full_requests_[p], f.module.cubin));
                ++stats_.swapped_programs;
                continue;
            } catch (const Error& e) { f.error = e.what(); }
        }
        ++stats_.failed_programs; // reported once; the quick binary stays in use
        std::fprintf(stderr,
                     "orrery: warning: the background compile of %s failed; it keeps running as compiled at "
                     "--Ofast-compile=%s (the same results, slower): %s\n",
                     full_requests_[p].label.c_str(), stats_.first_level.c_str(), f.error.c_str());
    }
    if (done.empty()) return;
    fit_scratch_pool();
    if (background_->outstanding() > 0) return;
    stats_.background_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    std::fprintf(stderr,
                 "orrery: '%s' now runs its fully optimised kernels (%zu of %zu swapped in, %.2f s after start)\n",
                 env_name_.c_str(), stats_.swapped_programs, stats_.background_programs, stats_.background_seconds);
    background_.reset(); // its threads have finished: joined at once
}

unsigned CudaBackend::resident_scratch_teams_per_sm() const {
    const DriverApi& d = driver();
    auto has_scratch = [](const Op& op) { return op.kind == OpKind::kNode && !op.node->scratch.empty(); };
    auto teams = [&](CUfunction f, unsigned block, unsigned smem, unsigned teams_per_block) {
        int blocks = 0;
        ORRERY_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, int(block), smem));
        return unsigned(std::max(blocks, 0)) * teams_per_block;
    };
    unsigned most = 0;
    const std::vector<Op>* passes[] = {&step_ops_, &reset_ops_};
    for (int p = 0; p < 2; ++p) {
        const std::vector<Op>& ops = *passes[p];
        if (std::none_of(ops.begin(), ops.end(), has_scratch)) continue;
        if (staged_) { // a team per world of the block
            most = std::max(most,
                            teams(p == 0 ? step_staged_ : reset_staged_, stage_threads_, stage_smem_, stage_worlds_));
            continue;
        }
        const std::vector<CUfunction>& fns = p == 0 ? step_fns_ : reset_fns_;
        for (size_t i = 0; i < fns.size(); ++i) { // per-node: only the kernels of scratch nodes
            if (source_.per_node && !has_scratch(ops[first_op_of(p == 0, i)])) continue;
            const unsigned block = block_for(fns[i]);
            most = std::max(most, teams(fns[i], block, shared_for(fns[i], block), std::max(1u, block / source_.lanes)));
        }
    }
    return most;
}

void CudaBackend::allocate_scratch() {
    const DriverApi& d = driver();
    if (!storage_.scratch_slot_bytes) return; // no step scratch: the modules have their Storage
    {
        // A slot per team that can run at once, never more than the worlds.
        const unsigned per_sm = resident_scratch_teams_per_sm();
        const unsigned long long resident = (unsigned long long)per_sm * unsigned(info_.multiprocessors);
        unsigned slots = unsigned(std::min<unsigned long long>(std::max(resident, 1ull), storage_.num_worlds));
        std::string basis = std::to_string(info_.multiprocessors) + " SMs x " + std::to_string(per_sm) +
                            " resident teams" + (resident > storage_.num_worlds ? ", at most one per world" : "");
        if (gpu_.scratch_slots) {
            slots = gpu_.scratch_slots;
            basis = "GpuOptions::scratch_slots";
        }
        const size_t bitmap = (size_t(slots) + 31) / 32 * 4, at = (bitmap + 255) / 256 * 256;
        const size_t bytes = at + size_t(slots) * storage_.scratch_slot_bytes;
        CUresult r = d.cuMemAlloc(&scratch_, bytes);
        if (r == kCudaErrorOutOfMemory)
            throw Error("out of device memory: the step scratch of '" + env_name_ + "' needs " + std::to_string(bytes) +
                        " bytes (" + std::to_string(slots) + " slots of " +
                        std::to_string(storage_.scratch_slot_bytes) + ") on cuda:" + std::to_string(info_.index) +
                        "; lower num_worlds");
        ORRERY_CU(r);
        ORRERY_CU(d.cuMemsetD8Async(scratch_, 0, bytes, stream_)); // the bitmap: every slot free
        storage_.scratch_busy = reinterpret_cast<uint32_t*>(scratch_);
        storage_.scratch = reinterpret_cast<uint8_t*>(scratch_ + at);
        storage_.scratch_slots = slots;
        scratch_pool_ = {slots, bytes, basis};
    }
    upload_storage_everywhere();
    ORRERY_CU(d.cuStreamSynchronize(stream_));
}

void CudaBackend::upload_storage_everywhere() {
    // Every module has its own __constant__ Storage (the per-node form: one per
    // kernel; after a cold start's swap, the swapped-out modules too: a graph may still run them).
    const DriverApi& d = driver();
    for (CUmodule m : modules_) {
        CUdeviceptr sym = 0;
        size_t sym_bytes = 0;
        ORRERY_CU(d.cuModuleGetGlobal(&sym, &sym_bytes, m, kStorageSymbol));
        ORRERY_CU(d.cuMemcpyHtoDAsync(sym, &storage_, sizeof(Storage), stream_));
    }
}

void CudaBackend::fit_scratch_pool() {
    if (!storage_.scratch_slot_bytes || gpu_.scratch_slots) return;
    const unsigned long long resident =
        (unsigned long long)resident_scratch_teams_per_sm() * unsigned(info_.multiprocessors);
    if (std::min<unsigned long long>(resident, storage_.num_worlds) <= storage_.scratch_slots) return;
    // The swapped-in kernels fit more teams than the pool has slots: a larger
    // pool, once the passes queued on the old one are done.
    const DriverApi& d = driver();
    ORRERY_CU(d.cuStreamSynchronize(stream_));
    const CUdeviceptr old = scratch_;
    const Storage before = storage_;
    const ScratchPool pool = scratch_pool_;
    try {
        allocate_scratch();
    } catch (const Error& e) { // the old pool stays: teams wait for slots, results are the same
        scratch_ = old;
        storage_ = before;
        scratch_pool_ = pool;
        upload_storage_everywhere();
        std::fprintf(stderr, "orrery: warning: keeping %u step-scratch slots: %s\n", storage_.scratch_slots, e.what());
        return;
    }
    ORRERY_CU(d.cuMemFree(old));
}

namespace {
size_t align16(size_t n) { return (n + 15) / 16 * 16; }

static_assert(kDefaultStageBlocksPerSm == kStageMinBlocks,
              "the default share of an SM is what the staged kernel's __launch_bounds__ assume");

/// Shared-memory offsets of each region for `block` worlds, then the config;
/// returns the total. `skip` lists the bases of outputs the step rewrites.
/// `cleared` those of Output::kClearedEachStep outputs.
size_t stage_layout(const std::vector<Region>& regions, unsigned block, size_t config_bytes,
                    const std::vector<const uint8_t*>& skip, const std::vector<const uint8_t*>& cleared,
                    size_t storage_bytes, std::vector<StageRegion>* out, unsigned* config_at = nullptr) {
    // The block-local Storage sits at offset 0: its header and the tables in use
    // (Storage::used_bytes); no code reads a table past num_archetypes.
    size_t at = align16(storage_bytes);
    auto has = [](const std::vector<const uint8_t*>& v, const uint8_t* p) {
        return std::find(v.begin(), v.end(), p) != v.end();
    };
    for (const Region& r : regions) {
        if (out)
            out->push_back(
                {reinterpret_cast<unsigned long long>(r.base), r.bytes_per_world, at,
                 (has(skip, r.base) ? kStageSkipLoadOnStep : 0) | (has(cleared, r.base) ? kStageClearOnStep : 0)});
        at += align16(size_t(block) * r.bytes_per_world);
    }
    if (config_at) *config_at = unsigned(at);
    return at + align16(config_bytes);
}

/// The block-local Storage template: each staged pointer replaced by its
/// shared-memory offset, and its 8-byte word marked in `mask`.
Storage stage_template(const Storage& s, const std::vector<StageRegion>& table, std::vector<uint32_t>& mask) {
    Storage t = s;
    mask.assign((sizeof(Storage) / 8 + 31) / 32, 0);
    auto remap = [&](auto*& p) {
        if (!p) return;
        for (const StageRegion& r : table)
            if (r.base == reinterpret_cast<unsigned long long>(p)) {
                p = reinterpret_cast<std::remove_reference_t<decltype(p)>>(static_cast<uintptr_t>(r.smem));
                size_t word = size_t(reinterpret_cast<const char*>(&p) - reinterpret_cast<const char*>(&t)) / 8;
                mask[word / 32] |= 1u << (word % 32);
                return;
            }
        throw Error("internal: a Storage array is missing from the staging table");
    };
    for (uint32_t a = 0; a < t.num_archetypes; ++a) {
        ArchetypeTable& x = t.tables[a];
        for (uint32_t** p : {&x.generation, &x.free_rows, &x.high_water, &x.live}) remap(*p);
        remap(x.alive);
        remap(x.doomed);
        remap(x.free_top);
        for (uint8_t*& c : x.columns) remap(c);
    }
    remap(t.meta);
    remap(t.errors);
    for (uint8_t** p : {&t.terminated, &t.truncated, &t.reset_request}) remap(*p);
    for (uint32_t i = 0; i < t.num_finals; ++i) remap(t.final_src[i]);
    return t;
}
} // namespace

namespace {
/// The arrays a staged block copies, the outputs the step pass need not load,
/// and those of them it zeroes in its prologue.
struct StageInputs {
    std::vector<Region> regions;
    std::vector<const uint8_t*> skip, cleared;
    StageInputs(const EnvSpec& spec, const StorageLayout& layout, const Storage& s) : regions(layout.regions(s)) {
        regions.push_back({s.reset_request, 1});
        for (const ExportSpec& e : spec.exports()) {
            if (e.input || e.output == Output::kKept) continue;
            skip.push_back(s.tables[e.archetype].columns[e.component]);
            if (e.output == Output::kClearedEachStep) cleared.push_back(skip.back());
        }
    }
};
} // namespace

unsigned CudaBackend::choose_stage_worlds(const EnvSpec& spec, const StorageLayout& layout) const {
    const DriverApi& d = driver();
    StageInputs in(spec, layout, storage_);
    const size_t config = storage_.config_bytes;
    auto bytes_for = [&](unsigned worlds) {
        return stage_layout(in.regions, worlds, config, in.skip, in.cleared, storage_.used_bytes(), nullptr);
    };
    if (in.regions.size() > kMaxStageRegions) return 0;
    // Staged unless GpuOptions::stage is off or a block of 16 worlds does not fit in shared memory.
    if (!gpu_.stage) return 0;
    int optin = 0, per_sm = 0;
    ORRERY_CU(d.cuDeviceGetAttribute(&optin, kAttrMaxSharedPerBlockOptin, dev_));
    ORRERY_CU(d.cuDeviceGetAttribute(&per_sm, kAttrMaxSharedPerMultiprocessor, dev_));
    // Blocks resident per SM (GpuOptions::stage_blocks_per_sm, default 2): while one block
    // runs its worlds another copies, so a block gets at most 1/k of the SM's shared
    // memory (less the 1 KB the hardware reserves per block).
    unsigned blocks_per_sm = std::max(1u, unsigned(gpu_.stage_blocks_per_sm));
    size_t budget = std::min<size_t>(size_t(optin), size_t(per_sm) / blocks_per_sm - 1024);
    const unsigned threads = kStageThreads;
    // Worlds per block: a multiple of 16 (every region's span 16-byte aligned),
    // at most the threads, at most what fits, and few enough that small batches
    // still spread over every SM.
    unsigned sms = unsigned(info_.multiprocessors);
    unsigned spread = (storage_.num_worlds + sms - 1) / sms;
    unsigned block = std::min(threads, std::max(16u, (spread + 15) / 16 * 16));
    if (unsigned forced = gpu_.stage_worlds) block = std::min(threads, (forced + 15) / 16 * 16);
    while (block > 16 && bytes_for(block) > budget) block -= 16;
    if (bytes_for(block) > size_t(optin)) return 0; // worlds too large: direct megakernel
    return block;
}

void CudaBackend::upload_staging(CUmodule m) {
    const DriverApi& d = driver();
    const StageUpload& u = stage_upload_;
    auto upload = [&](const char* name, const void* data, size_t n) {
        CUdeviceptr sym = 0;
        size_t bytes = 0;
        ORRERY_CU(d.cuModuleGetGlobal(&sym, &bytes, m, name));
        if (bytes < n) throw Error(std::string("internal: __constant__ ") + name + " is too small");
        ORRERY_CU(d.cuMemcpyHtoDAsync(sym, data, n, stream_));
    };
    upload(kStageRegionsSymbol, stage_table_.data(), stage_table_.size() * sizeof(StageRegion));
    upload(kStagePlanSymbol, &u.plan, sizeof(u.plan));
    upload(kStageStorageSymbol, &u.tmpl, sizeof(u.tmpl));
    upload(kStagePointerMaskSymbol, u.mask.data(), u.mask.size() * sizeof(uint32_t));
    upload(kStageEndLoadSymbol, u.end_load.data(), u.end_load.size() * sizeof(uint32_t));
    upload(kStageEndAllSymbol, u.end_all.data(), u.end_all.size() * sizeof(uint32_t));
    ORRERY_CU(d.cuModuleGetFunction(&step_staged_, m, source_.staged_step_kernel.c_str()));
    ORRERY_CU(d.cuModuleGetFunction(&reset_staged_, m, source_.staged_reset_kernel.c_str()));
    ORRERY_CU(d.cuFuncSetAttribute(step_staged_, kFuncAttrMaxDynamicShared, int(stage_smem_)));
    ORRERY_CU(d.cuFuncSetAttribute(reset_staged_, kFuncAttrMaxDynamicShared, int(stage_smem_)));
}

void CudaBackend::plan_staging(const EnvSpec& spec, const StorageLayout& layout, unsigned block) {
    const DriverApi& d = driver();
    StageInputs in(spec, layout, storage_);
    const std::vector<Region>& regions = in.regions;
    const std::vector<const uint8_t*>& skip = in.skip;
    const size_t config = storage_.config_bytes;
    const unsigned threads = kStageThreads;
    std::vector<StageRegion> table;
    unsigned config_at = 0;
    const size_t storage_bytes = size_t(stage_storage_words(spec)) * 8; // as the kernel was generated
    stage_smem_ = unsigned(stage_layout(regions, block, config, skip, in.cleared, storage_bytes, &table, &config_at));
    StageUpload& u = stage_upload_;
    u.tmpl = stage_template(storage_, table, u.mask);
    u.plan = StagePlan{unsigned(table.size()), block, stage_smem_, config_at, unsigned(storage_bytes / 8)};
    // Piece tables of a full block: one past each region's last 16-byte piece,
    // counted across regions (the step's loads leave rewritten outputs out).
    uint64_t load = 0, all = 0;
    for (const StageRegion& r : table) {
        uint64_t pieces = r.bytes_per_world * block / 16;
        all += pieces;
        load += (r.flags & kStageSkipLoadOnStep) ? 0 : pieces;
        if (all > UINT32_MAX) throw Error("internal: a staged block has more than 2^32 pieces");
        u.end_load.push_back(uint32_t(load));
        u.end_all.push_back(uint32_t(all));
    }
    stage_table_ = table;
    upload_staging(module_);
    ORRERY_CU(d.cuStreamSynchronize(stream_));
    stage_worlds_ = block;
    stage_threads_ = threads;
    stage_grid_ = (storage_.num_worlds + block - 1) / block;
    staged_ = true;
}

CudaBackend::~CudaBackend() { release(); }

void CudaBackend::release() noexcept {
    // Teardown never throws; errors here would only hide the original one.
    background_.reset(); // cancels the compiles not started, waits for those running (no driver calls)
    if (!ctx_) return;
    const DriverApi& d = driver();
    d.cuCtxSetCurrent(ctx_);
    if (own_stream_) d.cuStreamSynchronize(own_stream_); // a caller's stream may be gone; cuMemFree waits anyway
    if (moved_ && stream_ != own_stream_ && d.cuEventRecord(moved_, stream_) == kCudaSuccess)
        d.cuEventSynchronize(moved_); // the followed stream's work on this memory
    if (moved_) d.cuEventDestroy(moved_);
    moved_ = nullptr;
    release_snapshot();
    for (CUmodule m : modules_) d.cuModuleUnload(m); // module_ is the first
    modules_.clear();
    if (memory_) d.cuMemFree(memory_);
    if (scratch_) d.cuMemFree(scratch_);
    if (order_) d.cuMemFree(order_);
    if (own_stream_) d.cuStreamDestroy(own_stream_);
    d.cuDevicePrimaryCtxRelease(dev_);
    module_ = nullptr;
    memory_ = 0;
    scratch_ = 0;
    order_ = 0;
    stream_ = own_stream_ = nullptr;
    ctx_ = nullptr;
}

void CudaBackend::bind_current() const { ORRERY_CU(driver().cuCtxSetCurrent(ctx_)); }

std::string CudaBackend::describe() const {
    return "cuda:" + std::to_string(info_.index) + " " + info_.name + " (sm_" + std::to_string(info_.arch) + ", " +
           (source_.per_node ? "per-node" + lanes_text()
            : staged_ ? "megakernel, " + std::to_string(stage_worlds_) + " worlds/block staged in shared memory, " +
                            std::to_string(stage_threads_ / stage_worlds_) + " lanes/world"
                      : "megakernel on global memory" + lanes_text()) +
           (pdl_ ? ", programmatic launch" : "") + (staged_ ? "" : blocks_text()) +
           (shared_use_.empty() ? "" : ", scratch " + shared_use_) +
           (storage_.team_order ? ", teams ordered by cost" : "") + ")";
}

size_t CudaBackend::first_op_of(bool step, size_t kernel) const {
    if (!source_.per_node) return 0; // one kernel a pass
    return (step ? source_.step_first_op : source_.reset_first_op)[kernel];
}

std::string CudaBackend::blocks_text() const {
    // The step kernels launched so far in blocks other than the default (GpuOptions::fit_blocks).
    std::string t = ", " + std::to_string(block_) + " threads/block";
    for (size_t i = 0; i < step_fns_.size(); ++i) {
        auto it = blocks_.find(step_fns_[i]);
        if (it == blocks_.end() || it->second == block_) continue;
        t += " (" + (source_.per_node ? source_.programs[i].node : std::string("step")) + " " +
             std::to_string(it->second) + ")";
    }
    return t;
}

std::string CudaBackend::lanes_text() const {
    if (source_.lanes == 1) return "";
    // A step kernel's lanes chosen at launch (KernelSource::launch_lanes), where it has them.
    auto at_launch = [&](const std::string& node) -> const LaunchShape* {
        for (size_t i = 0; i < step_fns_.size(); ++i) {
            const Op& op = step_ops_[first_op_of(true, i)];
            if (op.kind == OpKind::kNode && node == op.node->system.name)
                if (auto it = launch_shapes_.find(step_fns_[i]); it != launch_shapes_.end()) return &it->second;
        }
        return nullptr;
    };
    std::string t = ", " + std::to_string(source_.lanes) + " lanes/world (";
    for (size_t i = 0; i < source_.node_lanes.size(); ++i) {
        const std::string& node = source_.node_lanes[i].first;
        const LaunchShape* sh = at_launch(node);
        t += (i ? ", " : "") + node + " " + std::to_string(sh ? 1u << sh->shift : source_.node_lanes[i].second);
    }
    t += ")";
    size_t serial = 0, packed = 0; // the step's serial kernels, and those run 32 worlds a warp
    for (size_t i = 0; i < step_fns_.size(); ++i)
        if (auto it = launch_shapes_.find(step_fns_[i]);
            it != launch_shapes_.end() && !is_lane_op(step_ops_[first_op_of(true, i)]))
            ++serial, packed += it->second.shift == 0;
    if (serial)
        t += ", serial nodes " + std::string(packed == serial ? "32 worlds a warp"
                                             : packed == 0    ? "a world a warp"
                                                              : "mixed");
    return t;
}

unsigned CudaBackend::block_for(CUfunction f) const {
    // The default: no lookup, no memo (every kernel fits a block of 256 threads).
    if ((!gpu_.fit_blocks && block_ <= 256u) || source_.lanes > 32) return block_;
    auto it = blocks_.find(f);
    if (it != blocks_.end()) return it->second;
    // A block larger than 256 (team_block_threads) shrinks, a team at a time,
    // to what f's registers and shared memory let one SM hold: a kernel
    // compiled at a fast-compile level may take more registers than the one
    // swapped in for it later.
    const unsigned smallest = std::max(32u, source_.lanes);
    unsigned fits = block_;
    for (; fits > smallest; fits -= smallest) {
        int blocks = 0;
        ORRERY_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, int(fits), shared_for(f, fits)));
        if (blocks > 0) break;
    }
    // Per-node, a kernel whose teams do not align (GpuOptions::fit_free_blocks)
    // is fitted as every kernel is with fit_blocks.
    const bool unaligned = gpu_.fit_free_blocks && source_.per_node && !aligned_fns_.count(f);
    if (!gpu_.fit_blocks && !unaligned) {
        blocks_.emplace(f, fits);
        return fits;
    }
    // The most resident warps per SM among blocks of that size, half of it,
    // ... down to one team or one warp; a tie keeps the larger block. Blocks
    // are whole teams, so a world's lanes never straddle two blocks.
    unsigned best = fits, best_warps = 0;
    for (unsigned b = fits; b >= smallest && b % smallest == 0; b /= 2) {
        int blocks = 0;
        ORRERY_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, f, int(b), shared_for(f, b)));
        const unsigned warps = unsigned(std::max(blocks, 0)) * (b / 32);
        if (warps > best_warps) best = b, best_warps = warps;
    }
    blocks_.emplace(f, best);
    return best;
}

void CudaBackend::fit_team_shared(const EnvSpec& spec) {
    // The components asked for, in the order the nodes named them (the most
    // wanted first); a team's region keeps the longest run of them whose
    // regions, one per team of the default block (the largest a launch
    // uses: block_for only shrinks it), fit the block's opt-in limit. The
    // rest stay in the slot. Where they live changes no result.
    const uint64_t asked = storage_.scratch_shared_components;
    storage_.scratch_shared_components = 0;
    storage_.scratch_shared_team_bytes = 0;
    if (!asked || !gpu_.team_shared || !source_.per_node || source_.team_shared_kernels.empty()) return;
    int optin = 0;
    ORRERY_CU(driver().cuDeviceGetAttribute(&optin, kAttrMaxSharedPerBlockOptin, dev_));
    const unsigned long long teams = block_ / 32u;
    std::vector<uint32_t> order;
    for (const NodeSpec& n : spec.nodes())
        for (uint32_t c : n.scratch_shared)
            if (std::find(order.begin(), order.end(), c) == order.end()) order.push_back(c);
    uint64_t kept = 0;
    uint32_t bytes = 0;
    std::string names, left;
    for (uint32_t c : order) {
        const uint32_t more = (storage_.row_bytes[c] + 15u) / 16u * 16u;
        const std::string& name = spec.component_specs()[c].name;
        if (left.empty() && teams * (bytes + more) <= (unsigned long long)optin) {
            kept |= uint64_t(1) << c, bytes += more;
            names += (names.empty() ? "" : ", ") + name;
        } else {
            left += (left.empty() ? "" : ", ") + name;
        }
    }
    storage_.scratch_shared_components = kept;
    storage_.scratch_shared_team_bytes = bytes;
    std::string node;
    for (const NodeProgram& p : source_.programs)
        if (p.kernel == source_.team_shared_kernels.front().first) node = p.node;
    shared_use_ = kept ? "shared memory of " + node + "'s blocks: " + std::to_string(teams) + " teams x " +
                             std::to_string(bytes) + " bytes (" + names + ")"
                       : "in the slot";
    if (!left.empty())
        shared_use_ += "; " + left + " in the slot (" + std::to_string(teams) + " teams' regions would exceed the " +
                       std::to_string(optin) + " bytes of shared memory a block may have)";
}

void CudaBackend::set_team_shared(CUfunction f, const std::string& kernel) {
    if (!storage_.scratch_shared_team_bytes) return;
    auto it = std::find_if(source_.team_shared_kernels.begin(), source_.team_shared_kernels.end(),
                           [&](const auto& k) { return k.first == kernel; });
    if (it == source_.team_shared_kernels.end()) return;
    const unsigned long long bytes = (unsigned long long)storage_.scratch_shared_team_bytes * (block_ / 32u);
    if (bytes > 48u * 1024u) ORRERY_CU(driver().cuFuncSetAttribute(f, kFuncAttrMaxDynamicShared, int(bytes)));
    team_shared_[f] = storage_.scratch_shared_team_bytes;
}

unsigned CudaBackend::shared_for(CUfunction f, unsigned block) const {
    auto it = team_shared_.find(f);
    return it == team_shared_.end() ? 0u : it->second * (block / 32u);
}

void CudaBackend::note_aligned(CUfunction f, const std::string& kernel) {
    if (std::find(source_.aligned_kernels.begin(), source_.aligned_kernels.end(), kernel) !=
        source_.aligned_kernels.end())
        aligned_fns_.insert(f);
}

void CudaBackend::note_launch_lanes(CUfunction f, const std::string& kernel) {
    auto it = std::find_if(source_.launch_lanes.begin(), source_.launch_lanes.end(),
                           [&](const LaunchLanes& l) { return l.kernel == kernel; });
    if (it == source_.launch_lanes.end()) return;
    // One wave: the threads the SMs hold at once in f's own block.
    const unsigned base = block_for(f);
    int per_sm = 0;
    ORRERY_CU(driver().cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, int(base), 0));
    const unsigned long long wave = (unsigned long long)std::max(per_sm, 1) * base * unsigned(info_.multiprocessors);
    const unsigned long long worlds = storage_.num_worlds;
    unsigned lanes = source_.lanes;
    if (it->serial || it->team) { // one lane a world (32 worlds a warp), or the form's lanes
        const uint32_t rule = it->team ? gpu_.pack_teams : gpu_.pack_serial;
        const bool pack = rule == 2 || (rule == 1 && pack_serial_ && worlds * source_.lanes > wave);
        if (pack) lanes = 1;
    } else if (gpu_.wide_lanes) { // as asked, within what the node can use
        lanes = std::max(source_.lanes, std::min(gpu_.wide_lanes, it->most));
    } else { // the most that one wave holds
        while (lanes * 2 <= it->most && worlds * lanes * 2 <= wave) lanes *= 2;
    }
    LaunchShape sh;
    while ((1u << sh.shift) < lanes) ++sh.shift;
    sh.block = spread_block(worlds * lanes, unsigned(info_.multiprocessors), base); // no larger than f's own
    sh.grid = grid_of(worlds * lanes, sh.block, worlds);
    launch_shapes_[f] = sh;
}

void CudaBackend::find_order(CUfunction f, CUmodule m, const std::string& kernel) {
    for (const auto& [node_kernel, order_kernel] : source_.ordered_kernels)
        if (node_kernel == kernel) ORRERY_CU(driver().cuModuleGetFunction(&order_of_[f], m, order_kernel.c_str()));
}

void CudaBackend::allocate_team_order(const EnvSpec& spec) {
    if (order_of_.empty() || gpu_.order_teams == 0) return; // no node asks, or the caller said never
    // Past one wave: more blocks than the SMs hold at once (the first ordered kernel's occupancy).
    const DriverApi& d = driver();
    const CUfunction f = order_of_.begin()->first;
    const unsigned block = block_for(f);
    int per_sm = 0;
    ORRERY_CU(d.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, f, int(block), shared_for(f, block)));
    const unsigned long long blocks = (threads_ + block - 1) / block;
    if (gpu_.order_teams == 1 && blocks <= (unsigned long long)std::max(per_sm, 1) * unsigned(info_.multiprocessors))
        return;
    const size_t bytes = team_order_bytes();
    CUresult r = d.cuMemAlloc(&order_, bytes);
    if (r == kCudaErrorOutOfMemory)
        throw Error("out of device memory: ordering the teams of '" + spec.name() + "' needs " + std::to_string(bytes) +
                    " bytes on cuda:" + std::to_string(info_.index) +
                    "; lower num_worlds or set GpuOptions::order_teams = 0");
    ORRERY_CU(r);
    ORRERY_CU(d.cuMemsetD8Async(order_, 0, bytes, stream_)); // every hint 0 before the first run
    storage_.team_cost = reinterpret_cast<uint32_t*>(order_);
    storage_.team_order = storage_.team_cost + storage_.num_worlds;
    upload_storage_everywhere();
}

void CudaBackend::launch_one(CUfunction f, unsigned grid, unsigned block, unsigned smem, void** params) {
    if (pdl_) { // it may start while the kernel ahead finishes (GpuOptions::programmatic_launch)
        CUlaunchAttribute attr{};
        attr.id = kLaunchAttrProgrammaticStreamSerialization;
        attr.value.programmatic_stream_serialization_allowed = 1;
        CUlaunchConfig c{grid, 1, 1, block, 1, 1, smem, stream_, &attr, 1};
        ORRERY_CU(driver().cuLaunchKernelEx(&c, f, params, nullptr));
        return;
    }
    ORRERY_CU(driver().cuLaunchKernel(f, grid, 1, 1, block, 1, 1, smem, stream_, params, nullptr));
}

void CudaBackend::launch(CUfunction f, void** params) {
    if (auto at = launch_shapes_.find(f); at != launch_shapes_.end()) { // its threads a world as its argument
        unsigned shift = at->second.shift;
        void* args[] = {&shift};
        launch_one(f, at->second.grid, at->second.block, 0, args);
        return;
    }
    if (storage_.team_order) // the worlds by cost, then the node in that order
        if (auto o = order_of_.find(f); o != order_of_.end()) launch_one(o->second, 1, kOrderThreads, 0, nullptr);
    const unsigned block = block_for(f);
    const unsigned grid = block == block_ ? grid_ : unsigned((threads_ + block - 1) / block);
    launch_one(f, grid, block, shared_for(f, block), params);
}

void CudaBackend::run(const std::vector<Op>& ops) {
    bind_current();
    if (background_ && background_->has_finished()) swap_in_compiled(false); // a step boundary
    const std::vector<CUfunction>* fns = nullptr;
    if (same_ops(ops, step_ops_))
        fns = &step_fns_;
    else if (same_ops(ops, reset_ops_))
        fns = &reset_fns_;
    else
        throw Error("CudaBackend::run: this op list is neither the plan's step nor its reset pass");
    if (staged_) {
        launch_staged(fns == &step_fns_ ? step_staged_ : reset_staged_, StageArgs{});
        return;
    }
    for (CUfunction f : *fns) launch(f, nullptr);
}

void CudaBackend::launch_staged(CUfunction f, const StageArgs& args) {
    StageArgs copy = args;
    void* params[] = {&copy};
    launch_one(f, stage_grid_, stage_threads_, stage_smem_, params);
}

unsigned CudaBackend::stage_region_of(const void* column, size_t bytes) const {
    for (unsigned r = 0; r < stage_table_.size(); ++r) {
        const StageRegion& g = stage_table_[r];
        if (g.base == reinterpret_cast<unsigned long long>(column) && g.bytes_per_world * storage_.num_worlds == bytes)
            return r;
    }
    return kNoStageInput;
}

void CudaBackend::run_reading(const std::vector<Op>& ops, const InputSource& in, const std::vector<OutputCopy>& outs) {
    if (!staged_ || !same_ops(ops, step_ops_)) return Backend::run_reading(ops, in, outs);
    bind_current();
    if (background_ && background_->has_finished()) swap_in_compiled(false);
    // The staged step's load reads the input region from the caller's address
    // instead of its base: the same 16-byte pieces when both are 16-byte aligned
    // (the column is, as every staged region), and the copy back leaves the
    // values in the column. Outputs go from shared memory to the caller's
    // addresses too, after the copy back.
    StageArgs args;
    const auto aligned = [](const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; };
    if (in.source != in.column) {
        const unsigned r = aligned(in.source) ? stage_region_of(in.column, in.bytes) : kNoStageInput;
        if (r != kNoStageInput && !(stage_table_[r].flags & kStageSkipLoadOnStep)) {
            args.input_region = r;
            args.input_base = reinterpret_cast<unsigned long long>(in.source);
        } else {
            copy_within(in.column, in.source, in.bytes);
        }
    }
    size_t written[kMaxStageOutputs] = {}; // the indices in `outs` the step writes itself
    for (size_t k = 0; k < outs.size() && args.num_outputs < kMaxStageOutputs; ++k) {
        const unsigned r = aligned(outs[k].dst) ? stage_region_of(outs[k].column, outs[k].bytes) : kNoStageInput;
        if (r == kNoStageInput) continue;
        written[args.num_outputs] = k;
        args.output_region[args.num_outputs] = r;
        args.output_base[args.num_outputs++] = reinterpret_cast<unsigned long long>(outs[k].dst);
    }
    launch_staged(step_staged_, args);
    for (size_t k = 0; k < outs.size(); ++k)
        if (std::find(written, written + args.num_outputs, k) == written + args.num_outputs)
            copy_within(outs[k].dst, outs[k].column, outs[k].bytes);
}

void CudaBackend::copy_to_host(void* dst, const void* src, size_t n) {
    if (n == 0) return;
    bind_current();
    ORRERY_CU(driver().cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src), n, stream_));
    ORRERY_CU(driver().cuStreamSynchronize(stream_));
}

void CudaBackend::copy_from_host(void* dst, const void* src, size_t n) {
    if (n == 0) return;
    bind_current();
    // From pageable memory the driver stages `src` before returning, so the caller may reuse it.
    ORRERY_CU(driver().cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(dst), src, n, stream_));
}

void CudaBackend::copy_within(void* dst, const void* src, size_t n) {
    if (n == 0) return;
    bind_current();
    ORRERY_CU(
        driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), reinterpret_cast<CUdeviceptr>(src), n, stream_));
}

void CudaBackend::use_stream(CUstream stream) {
    synchronize();
    stream_ = stream ? stream : own_stream_;
}

void CudaBackend::follow_stream(uintptr_t stream, bool ordered) {
    auto next = reinterpret_cast<CUstream>(stream);
    if (next == stream_) return;
    if (!ordered) {
        stream_ = next;
        return;
    }
    bind_current();
    const DriverApi& d = driver();
    if (!moved_) ORRERY_CU(d.cuEventCreate(&moved_, kEventDisableTiming));
    ORRERY_CU(d.cuEventRecord(moved_, stream_));
    ORRERY_CU(d.cuStreamWaitEvent(next, moved_, 0));
    stream_ = next;
}

void CudaBackend::synchronize() {
    bind_current();
    ORRERY_CU(driver().cuStreamSynchronize(stream_));
}

namespace {
/// One region of a world gather; the kernel's GatherRegion has the same layout.
struct GatherRegion {
    unsigned long long src, bytes, dst; ///< region base, bytes per world, offset in the staging buffer
};
/// The gather kernel's by-value parameter (kernel parameters may hold 4 KiB; __grid_constant__
/// lets blocks index it without a local copy).
struct GatherTable {
    unsigned long long world, count;
    GatherRegion regions[kMaxGatherRegions];
};
static_assert(sizeof(GatherTable) == 16 + 24 * kMaxGatherRegions, "must match the kernel's layout");
constexpr const char* kGatherKernel = "orrery_gather_world";
} // namespace

const char* world_gather_source() { return kGatherCuh; }

void CudaBackend::load_gather() {
    CompileRequest gather;
    gather.label = "world gather kernel";
    gather.source = world_gather_source();
    gather.arch = info_.arch;
    CompileRequest req = with_settings(std::move(gather), gpu_);
    CompiledModule m = compile_module(req);
    const DriverApi& d = driver();
    if (!gather_module_) ORRERY_CU(d.cuModuleLoadData(&gather_module_, m.cubin.data()));
    ORRERY_CU(d.cuModuleGetFunction(&gather_fn_, gather_module_, kGatherKernel));
}

void CudaBackend::gather(const std::vector<Region>& regions, uint32_t world) {
    const DriverApi& d = driver();
    if (regions.size() > kMaxGatherRegions) { // rare: one copy per region
        size_t at = 0;
        for (const Region& r : regions) {
            CUdeviceptr src = reinterpret_cast<CUdeviceptr>(r.base + r.bytes_per_world * world);
            if (r.bytes_per_world) ORRERY_CU(d.cuMemcpyDtoDAsync(staging_ + at, src, r.bytes_per_world, stream_));
            at += r.bytes_per_world;
        }
        return;
    }
    if (!gather_fn_) load_gather(); // first request: compile (or load from the cache) once
    GatherTable t{};
    t.world = world;
    t.count = regions.size();
    size_t at = 0;
    for (size_t i = 0; i < regions.size(); ++i) {
        t.regions[i] = {reinterpret_cast<unsigned long long>(regions[i].base), regions[i].bytes_per_world, at};
        at += regions[i].bytes_per_world;
    }
    CUdeviceptr out = staging_;
    void* params[] = {&t, &out};
    ORRERY_CU(d.cuLaunchKernel(gather_fn_, unsigned(regions.size()), 1, 1, 128, 1, 1, 0, stream_, params, nullptr));
}

void CudaBackend::reserve_snapshot(size_t bytes) {
    const DriverApi& d = driver();
    if (!copy_stream_) ORRERY_CU(d.cuStreamCreate(&copy_stream_, kStreamNonBlocking));
    if (!gathered_) ORRERY_CU(d.cuEventCreate(&gathered_, kEventDisableTiming));
    if (!landed_) ORRERY_CU(d.cuEventCreate(&landed_, kEventDisableTiming));
    if (bytes <= snapshot_capacity_) return;
    // Nothing is pending here, so no copy still uses the old buffers.
    if (staging_) ORRERY_CU(d.cuMemFree(staging_));
    if (pinned_) ORRERY_CU(d.cuMemFreeHost(pinned_));
    staging_ = 0;
    pinned_ = nullptr;
    snapshot_capacity_ = 0;
    ORRERY_CU(d.cuMemAlloc(&staging_, bytes));
    void* host = nullptr;
    ORRERY_CU(d.cuMemAllocHost(&host, bytes));
    pinned_ = static_cast<uint8_t*>(host);
    snapshot_capacity_ = bytes;
}

void CudaBackend::release_snapshot() noexcept {
    // The context is current (release()); a copy in flight finishes before its buffers go.
    const DriverApi& d = driver();
    if (copy_stream_) d.cuStreamSynchronize(copy_stream_);
    if (gathered_) d.cuEventDestroy(gathered_);
    if (landed_) d.cuEventDestroy(landed_);
    if (staging_) d.cuMemFree(staging_);
    if (pinned_) d.cuMemFreeHost(pinned_);
    if (copy_stream_) d.cuStreamDestroy(copy_stream_);
    if (gather_module_) d.cuModuleUnload(gather_module_);
    gather_module_ = nullptr;
    gather_fn_ = nullptr;
    copy_stream_ = nullptr;
    gathered_ = landed_ = nullptr;
    staging_ = 0;
    pinned_ = nullptr;
    snapshot_capacity_ = 0;
    snapshot_pending_ = false;
}

bool CudaBackend::request_snapshot(const std::vector<Region>& regions, uint32_t world) {
    if (snapshot_pending_) return false; // refused: pinned_ still holds or awaits the pending copy
    bind_current();
    const DriverApi& d = driver();
    size_t total = 0;
    for (const Region& r : regions) total += r.bytes_per_world;
    if (total == 0) return false;
    reserve_snapshot(total);
    gather(regions, world); // in stream order after every queued pass, before any later one: consistent
    ORRERY_CU(d.cuEventRecord(gathered_, stream_));
    ORRERY_CU(d.cuStreamWaitEvent(copy_stream_, gathered_, 0));
    ORRERY_CU(d.cuMemcpyDtoHAsync(pinned_, staging_, total, copy_stream_));
    ORRERY_CU(d.cuEventRecord(landed_, copy_stream_));
    snapshot_bytes_ = total;
    snapshot_pending_ = true;
    return true;
}

bool CudaBackend::poll_snapshot(std::vector<uint8_t>& out) {
    if (!snapshot_pending_) return false;
    bind_current();
    CUresult r = driver().cuEventQuery(landed_);
    if (r == kCudaErrorNotReady) return false;
    ORRERY_CU(r);
    out.assign(pinned_, pinned_ + snapshot_bytes_);
    snapshot_pending_ = false;
    return true;
}

} // namespace cuda

namespace {
std::unique_ptr<Backend> make_cuda_backend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout,
                                           const SimOptions& opts, int index) {
    try {
        return std::make_unique<cuda::CudaBackend>(spec, plan, layout, opts, index);
    } catch (const Error& e) { throw Error("device='" + opts.device + "': " + e.what()); }
}
} // namespace

void register_cuda_backend() { set_cuda_backend_factory(&make_cuda_backend); }

} // namespace orrery
