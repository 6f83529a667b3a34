#pragma once
// Megakernel generation: turns an env's Plan (the ordered ops of the step and
// reset passes) into CUDA source that NVRTC compiles. The source includes the
// env's own systems header, so the GPU runs the very functions the CPU runs.

#include <string>
#include <vector>

#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"

namespace orrery::cuda {

/// One kernel of the per-node form as a translation unit of its own: the
/// source's shared head (includes, Storage, tables, input checks) and that
/// kernel. The CUDA backend compiles these as separate NVRTC programs, in
/// parallel, each its own cache entry (docs/perf-notes.md, cold start).
struct NodeProgram {
    std::string kernel; ///< the kernel's name ("orrery_step_op7": its first op's index in the pass)
    /// What it runs, for labels and errors ("phys::simulate"; a run of fused
    /// serial ops: their names joined by " + ").
    std::string node;
    std::string text;
    std::vector<std::string> nodes; ///< each op it runs, in order (one, or a fused run's)
};

/// A per-node kernel whose threads a world the backend picks at launch (a
/// power of two, passed as its shift): a serial node's kernel (1, 32 worlds
/// a warp, or the form's `lanes`, a world a warp with lane 0 at work); a
/// team node's that keeps no scratch (1, a team of one lane and 32 worlds a
/// warp, or the form's `lanes`: its lanes meet at __syncwarp within their
/// warp either way, and Lanes::align does nothing); or a lane node's or
/// output clear's that no team runs (from the form's `lanes` up to `most`:
/// past 32 a world's lanes span warps, which such a node never
/// synchronises). Results do not depend on the choice: a lane node's result
/// does not depend on its lane count, nor a team node's on its team's size.
struct LaunchLanes {
    std::string kernel;
    bool serial = false; ///< a serial op (lane 0 runs it), else a lane op
    unsigned most = 1;   ///< the most threads a world that still do work (a power of two)
    bool team = false;   ///< a team node's (ORRERY_PER_WORLD_TEAM): the form's lanes or one
};

/// Generated CUDA source and the kernels it defines, in launch order.
struct KernelSource {
    std::string text;                      ///< the whole translation unit
    std::string env_header;                ///< include name of the env's systems header
    std::vector<std::string> step_kernels; ///< one megakernel, or one kernel per op or fused run of ops
    std::vector<std::string> reset_kernels;
    /// Per-node form: the index in the pass of each kernel's first op; kernel
    /// i runs ops [first[i], first[i + 1]) (one op, or a run of serial ops
    /// fused into one kernel, fuse_serial).
    std::vector<size_t> step_first_op, reset_first_op;
    std::string staged_step_kernel;  ///< megakernel that stages its block's worlds in shared memory
    std::string staged_reset_kernel; ///< (set only in KernelForm::kStaged, which has no other kernels)
    bool per_node = false;
    /// Per-node form: each kernel of `text` alone, in launch order (step, then reset).
    std::vector<NodeProgram> programs;
    /// Per-node form: the bytes of the shared head each program starts with.
    size_t program_head = 0;
    /// Direct and per-node forms: threads per world (1, or a power of two up
    /// to kMaxWorldLanes when the plan has lane ops; past 32, one block per
    /// world); the staged form sets its own.
    unsigned lanes = 1;
    /// Each lane node's lanes in the direct and per-node forms (for describe()).
    std::vector<std::pair<std::string, unsigned>> node_lanes;
    /// Per-node form: the kernels whose teams (a warp each) may keep scratch
    /// in the block's shared memory (EnvSpec::scratch_shared), with the bytes
    /// of a team's region. Such a kernel uses a team's region only when its
    /// launch gives the block dynamic shared memory for every team before it.
    std::vector<std::pair<std::string, unsigned>> team_shared_kernels;
    /// Per-node form: the kernels of nodes that order their teams
    /// (EnvSpec::order_teams), each with the one-block kernel of its program
    /// that writes Storage::team_order from the cost hints before it runs.
    std::vector<std::pair<std::string, std::string>> ordered_kernels;
    /// Per-node form: the kernels of team nodes whose teams align in the
    /// block (Lanes::align: a whole warp a world). Every other per-node
    /// kernel may run in any block of whole teams (GpuOptions::fit_free_blocks).
    std::vector<std::string> aligned_kernels;
    /// Per-node form with teams of 2 to 32 lanes: the kernels whose threads a
    /// world are chosen at launch (GpuOptions::pack_serial, pack_teams, wide_lanes) and
    /// passed as the kernel's one argument, the shift of that count (see
    /// LaunchLanes). Every other kernel takes `lanes` threads a world and no
    /// argument.
    std::vector<LaunchLanes> launch_lanes;
};

/// Lanes a per-world lane node or output clear gets in the direct and per-node
/// forms unless GpuOptions::world_lanes says otherwise.
inline constexpr unsigned kWorldLanes = 16;
/// Most lanes a world gets in the direct and per-node forms: up to 32 a group
/// inside one warp, beyond that a block per world.
inline constexpr unsigned kMaxWorldLanes = 256;

/// Lanes op `op` runs on in the direct and per-node forms, at most `limit`: 1
/// for serial ops; for a per-entity lane node, the rows of the largest
/// archetype it runs over (rounded up to a power of two; past 32 the world
/// gets a block of its own); else `world_lanes` (a team at most a warp).
unsigned op_lanes(const EnvSpec& spec, const Op& op, unsigned limit, unsigned world_lanes = kWorldLanes);
/// Bytes of a team's shared-memory region for `node`'s scratch kept on chip
/// (EnvSpec::scratch_shared; every such component of the env, laid out as
/// shared_scratch_offset does), 0 when it keeps none.
uint32_t team_shared_bytes(const EnvSpec& spec, const NodeSpec& node);
/// 8-byte words of Storage a staged block copies: the header and the env's
/// tables (Storage::used_bytes, rounded up to 16 bytes).
unsigned stage_storage_words(const EnvSpec& spec);
/// Threads per world of the direct and per-node kernels: the most any op uses.
unsigned direct_lanes(const EnvSpec& spec, const Plan& plan, unsigned world_lanes = kWorldLanes);
/// The team size the backend uses: GpuOptions::world_lanes when set, else
/// EnvSpec::world_lanes when set, else kWorldLanes.
unsigned world_lanes_for(const EnvSpec& spec, unsigned gpu_world_lanes);
/// The most threads a block of the direct and per-node forms' team kernels
/// gets: GpuOptions::team_block_threads when set, else the env's
/// EnvSpec::team_block_threads (0: the engine's 256). Throws orrery::Error
/// naming the field when it is not a multiple of 32 up to 1,024.
unsigned team_block_for(const EnvSpec& spec, unsigned gpu_team_block_threads);
/// Throws orrery::Error naming GpuOptions::order_teams unless it is 0, 1 or 2.
void check_team_order(uint32_t order_teams);
/// Throws orrery::Error naming GpuOptions::pack_serial or pack_teams unless
/// it is 0, 1 or 2, or GpuOptions::wide_lanes unless it is 0 or a power of
/// two up to kMaxWorldLanes.
void check_launch_lanes(uint32_t pack_serial, uint32_t wide_lanes, uint32_t pack_teams);
/// Throws orrery::Error naming GpuOptions::printf_mb unless it is 0 to 4,096.
void check_printf_mb(uint32_t printf_mb);

/// Which kernels a module holds: only the form that will run is compiled, so
/// a cold start pays NVRTC for one form.
enum class KernelForm : uint8_t {
    kStaged,  ///< one megakernel per pass, staging its block's worlds in shared memory
    kDirect,  ///< one megakernel per pass, on global memory
    kPerNode, ///< one kernel per op (correctness comparisons, measuring fusion)
};

/// Names of the __constant__ staging table (see StageRegion) and its plan.
inline constexpr const char* kStageRegionsSymbol = "orrery_stage_regions";
inline constexpr const char* kStagePlanSymbol = "orrery_stage_plan";
inline constexpr const char* kStageStorageSymbol = "orrery_stage_storage";
inline constexpr const char* kStagePointerMaskSymbol = "orrery_stage_pointer_mask";
inline constexpr const char* kStageEndLoadSymbol = "orrery_stage_end_load";
inline constexpr const char* kStageEndAllSymbol = "orrery_stage_end_all";
inline constexpr unsigned kMaxStageRegions = 320;
/// Threads of a staged block (all copy; the first worlds_per_block also step a
/// world each) and the blocks per SM its registers are bounded for.
inline constexpr unsigned kStageThreads = 256;
inline constexpr unsigned kStageMinBlocks = 2;
/// Threads of the one block that orders a node's worlds by cost (EnvSpec::order_teams).
inline constexpr unsigned kOrderThreads = 1024;

/// One per-world array the staged megakernel copies into shared memory: world
/// w's bytes are [base + w * bytes_per_world, +bytes_per_world); a block's
/// worlds land at shared offset `smem`. Mirrors the generated struct.
struct StageRegion {
    unsigned long long base, bytes_per_world, smem;
    unsigned long long flags; ///< kStageSkipLoadOnStep, kStageClearOnStep
};
/// The step pass does not load this region into shared memory (an output
/// declared Output::kRewrittenEachStep or kClearedEachStep, which the step writes in full).
inline constexpr unsigned long long kStageSkipLoadOnStep = 1;
/// An Output::kClearedEachStep output: the staged step pass zeroes its shared
/// copy in the block's prologue (under a programmatic launch, while the pass
/// ahead still runs) in place of the clear op before the observe nodes.
inline constexpr unsigned long long kStageClearOnStep = 2;
/// The staged kernels' launch arguments name at most one region that the
/// step's load reads from another address (Backend::run_reading); this index
/// names none.
inline constexpr unsigned kNoStageInput = 0xffffffffu;
/// Regions a staged pass also writes to other addresses after its copy back, at most.
inline constexpr unsigned kMaxStageOutputs = 4;
/// The staged kernels' one launch argument (mirrors the generated
/// OrreryStageArgs): region `input_region` is loaded from `input_base`, and
/// region `output_region[k]` is also written to `output_base[k]` (laid out as
/// the region, 16-byte aligned) for k < num_outputs.
struct StageArgs {
    unsigned input_region = kNoStageInput, num_outputs = 0;
    unsigned long long input_base = 0;
    unsigned output_region[kMaxStageOutputs] = {};
    unsigned long long output_base[kMaxStageOutputs] = {};
};
static_assert(sizeof(StageArgs) == 64, "must match the generated OrreryStageArgs");
/// Mirrors the generated OrreryStagePlan: the env config (read-only, the same
/// for every world) is staged too, at shared offset `config_smem`; the
/// block-local Storage is the first `storage_words` 8-byte words of Storage.
struct StagePlan {
    unsigned num_regions, worlds_per_block, smem_bytes, config_smem, storage_words;
};

/// Name of the __constant__ array holding the Storage struct (set once after load).
inline constexpr const char* kStorageSymbol = "orrery_storage_bytes";

/// Generates the kernels for `plan`: one kernel per pass (one thread per world),
/// or with `per_node` one kernel per op, for comparison. Throws orrery::Error
/// if a system's C++ name cannot be determined. `world_lanes` (a power of two,
/// 1 to 32) is what a per-world lane node gets in the direct and per-node forms.
/// `block_bound`, when above 256, is the most threads a block of the direct
/// or per-node kernels will have (EnvSpec::team_block_threads): each kernel
/// is compiled to fit such a block on an SM (__launch_bounds__).
/// `fuse_serial` (the per-node form with teams of 2 to 32 lanes): each run of
/// consecutive serial ops that keep no scratch becomes one kernel, its
/// world's ops one after another on the world's lane 0, as the direct
/// megakernel runs them (GpuOptions::fuse_serial).
KernelSource generate_kernels(const EnvSpec& spec, const Plan& plan, KernelForm form,
                              unsigned world_lanes = kWorldLanes, unsigned block_bound = 0, bool fuse_serial = true);

/// What compiling `k` (generated for `spec`) asks of NVRTC for sm_`arch`: its
/// source, the env header and the folder headers outside the library are read
/// from (EnvSpec::header_root). Cache, logging and driver settings are the caller's.
CompileRequest kernel_request(const EnvSpec& spec, const KernelSource& k, int arch);
/// The same for each of the per-node form's programs (KernelSource::programs),
/// in order; each label names the env and the node ("'tag' per-node kernel
/// orrery_step_op3 (move)").
std::vector<CompileRequest> node_requests(const EnvSpec& spec, const KernelSource& k, int arch);

/// The per-node form's programs as the CUDA backend compiles them: the kernels
/// that run a node in common (spawn in the step's and the reset pass's fused
/// serial runs, each apply_destroys...) share one program, the head once and
/// those kernels. Hide-and-seek: 10 kernels, 6 programs.
struct NodeGroups {
    std::vector<CompileRequest> reqs;                ///< one per program, in the order of its first kernel
    std::vector<size_t> program;                     ///< the program of each of k.programs
    std::vector<std::string> nodes;                  ///< the nodes each program runs, joined by ", " (for labels)
    std::vector<std::vector<std::string>> node_sets; ///< the same, one name each, no repeats
};
NodeGroups node_group_requests(const EnvSpec& spec, const KernelSource& k, int arch);

/// The fully qualified C++ name of a system ("tag::spawn"), as the generated
/// source must spell it.
std::string qualified_system_name(const SystemRef& s);

} // namespace orrery::cuda
