// Megakernel source generation. Worlds are independent, so one thread runs one
// world through every op of a pass in order: no grid barrier is needed between
// dependent nodes, and a node is skipped by its device-side phase condition.
// The per-node mode emits the same ops as one kernel each.

#include "engine/cuda/codegen.hpp"

#include <algorithm>
#include <sstream>

#include "engine/cuda/device_sources.hpp"

namespace orrery::cuda {

namespace {

const char* phase_name(Phase p) {
    switch (p) {
    case Phase::kInit: return "kInit";
    case Phase::kStep: return "kStep";
    case Phase::kObserve: return "kObserve";
    case Phase::kReobserve: return "kReobserve";
    }
    return "kStep";
}

/// C type spelling of an exported element type under NVRTC (ecs/base.hpp's aliases).
std::string element_type(DType t) {
    std::string n = dtype_name(t);
    if (n == "float32") return "float";
    return "orrery::" + n + "_t";
}

/// The call that runs lane `lane` of `lanes` of a lane op on world `w`; a
/// team given `block_threads` (an aligned per-node kernel's count) gets it
/// for Lanes::align.
/// `shared`, when not empty, is the team's region of shared memory for its
/// scratch kept on chip (EnvSpec::scratch_shared).
std::string lane_call(const Op& op, const std::string& w, const std::string& lane, const std::string& lanes,
                      const std::string& block_threads = "", const std::string& shared = "") {
    if (op.kind == OpKind::kClearOutputs)
        return "orrery::clear_outputs(s, " + w + ", orrery_cleared_outputs, ORRERY_NUM_CLEARED_OUTPUTS, " + lane +
               ", " + lanes + ");";
    if (op.node->system.kind == NodeKind::kPerWorldTeam) // its lanes meet at __syncwarp (orrery_lanes' mask)
        return std::string(op.node->scratch.empty() ? "orrery::run_world_team" : "orrery_run_team_scratch") + "<&" +
               qualified_system_name(op.node->system) + ">(s, " + w + ", " +
               (lanes == "1"            ? std::string("orrery::Lanes{}")
                : block_threads.empty() ? "orrery_lanes(" + lane + ", " + lanes + ")"
                                        : "orrery_lanes_in_block(" + lane + ", " + lanes + ", " + block_threads + ")") +
               (shared.empty() || op.node->scratch.empty() ? std::string() : ", " + shared) + ");";
    const char* run = op.node->system.kind == NodeKind::kPerEntityLanes ? "run_each_lane" : "run_world_lane";
    return std::string("orrery::") + run + "<&" + qualified_system_name(op.node->system) + ">(s, " + w + ", " + lane +
           ", " + lanes + ");";
}

/// `check_inputs`: the step pass range-checks the user's inputs (not when the
/// step draws them itself, SimOptions::random_inputs).
std::string op_statement(const Op& op, AutoReset mode, bool check_inputs) {
    switch (op.kind) {
    case OpKind::kBeginStep:
        return "orrery::begin_step(s, w, orrery::AutoReset(" + std::to_string(int(mode)) + "));" +
               (check_inputs ? " orrery_check_inputs(s, w);" : "");
    case OpKind::kRandomInputs:
        return "orrery::draw_random_inputs(s, w, orrery_random_input_table, ORRERY_NUM_RANDOM_INPUTS);";
    case OpKind::kEndStep: return "orrery::end_step(s, w);";
    case OpKind::kFinishSameStep: return "orrery::finish_same_step(s, w);";
    case OpKind::kBeginRequestedReset: return "orrery::begin_requested_reset(s, w);";
    case OpKind::kClearOutputs:
        return std::string("if (orrery::phase_active(s, w, orrery::Phase::") + phase_name(op.phase) + ")) " +
               lane_call(op, "w", "0", "1");
    case OpKind::kNode: break;
    }
    const SystemRef& sys = op.node->system;
    std::string call;
    if (sys.kind == NodeKind::kApplyDestroys)
        call = "orrery::apply_destroys(s, w);";
    else if (sys.kind == NodeKind::kPerWorld) // with scratch: a slot taken and given back around it
        call = std::string(op.node->scratch.empty() ? "orrery::run_world" : "orrery_run_world_scratch") + "<&" +
               qualified_system_name(sys) + ">(s, w);";
    else if (is_lane_kind(sys.kind))
        call = lane_call(op, "w", "0", "1"); // one thread, every lane
    else
        call = "orrery::run_each<&" + qualified_system_name(sys) + ">(s, w);";
    return std::string("if (orrery::phase_active(s, w, orrery::Phase::") + phase_name(op.phase) + ")) " + call +
           " // " + sys.name;
}

/// What an engine op is called in a per-node program's label.
const char* op_label(OpKind kind) {
    switch (kind) {
    case OpKind::kBeginStep: return "begin step";
    case OpKind::kRandomInputs: return "random inputs";
    case OpKind::kEndStep: return "end step";
    case OpKind::kFinishSameStep: return "finish same step";
    case OpKind::kBeginRequestedReset: return "begin requested reset";
    case OpKind::kClearOutputs: return "clear outputs";
    case OpKind::kNode: break;
    }
    return "node";
}

} // namespace

uint32_t team_shared_bytes(const EnvSpec& spec, const NodeSpec& node) {
    if (node.scratch_shared.empty()) return 0;
    uint64_t mask = 0; // every node's: a team's region is laid out from Storage's one mask (shared_scratch_offset)
    for (const NodeSpec& n : spec.nodes())
        for (uint32_t c : n.scratch_shared) mask |= uint64_t(1) << c;
    uint32_t bytes = 0;
    for (uint32_t c = 0; c < spec.component_specs().size() && c < kMaxComponents; ++c)
        if ((mask >> c) & 1u) bytes += (spec.component_specs()[c].row_bytes + 15u) / 16u * 16u;
    return bytes;
}

namespace {

unsigned pow2_at_least(unsigned n) {
    unsigned p = 1;
    while (p < n) p *= 2;
    return p;
}

unsigned pow2_at_most(unsigned n) {
    unsigned p = 1;
    while (p * 2 <= n) p *= 2;
    return p;
}

} // namespace

unsigned op_lanes(const EnvSpec& spec, const Op& op, unsigned limit, unsigned world_lanes) {
    if (!is_lane_op(op)) return 1;
    unsigned want = world_lanes;
    if (op.kind == OpKind::kNode && op.node->system.kind == NodeKind::kPerWorldTeam) // one warp: __syncwarp
        return std::min(want, pow2_at_most(std::min(limit, 32u)));
    if (op.kind == OpKind::kNode && op.node->system.kind == NodeKind::kPerEntityLanes && op.node->system.query) {
        // As many lanes as the largest archetype it runs over has rows.
        std::vector<uint32_t> ids = op.node->system.query();
        unsigned rows = 1;
        for (const ArchetypeSpec& a : spec.archetype_specs()) {
            bool match = true;
            for (uint32_t id : ids)
                match = match && std::find(a.components.begin(), a.components.end(), id) != a.components.end();
            if (match) rows = std::max(rows, a.capacity);
        }
        want = pow2_at_least(rows);
    }
    return std::min(want, limit);
}

unsigned stage_storage_words(const EnvSpec& spec) {
    Storage s;
    s.num_archetypes = uint32_t(spec.archetype_specs().size());
    return unsigned((s.used_bytes() + 15) / 16 * 16 / 8);
}

void check_team_order(uint32_t order_teams) {
    if (order_teams > 2)
        throw Error("GpuOptions::order_teams (ORRERY_CUDA_ORDER_TEAMS) is " + std::to_string(order_teams) +
                    "; expected 0 (never), 1 (past one wave of blocks) or 2 (always)");
}

void check_launch_lanes(uint32_t pack_serial, uint32_t wide_lanes, uint32_t pack_teams) {
    auto check_pack = [](uint32_t value, const char* field) {
        if (value > 2)
            throw Error(std::string(field) + " is " + std::to_string(value) +
                        "; expected 0 (never), 1 (past one wave) or 2 (always)");
    };
    check_pack(pack_serial, "GpuOptions::pack_serial (ORRERY_CUDA_PACK_SERIAL)");
    check_pack(pack_teams, "GpuOptions::pack_teams (ORRERY_CUDA_PACK_TEAMS)");
    if (wide_lanes > kMaxWorldLanes || (wide_lanes & (wide_lanes - 1)) != 0)
        throw Error("GpuOptions::wide_lanes (ORRERY_CUDA_WIDE_LANES) is " + std::to_string(wide_lanes) +
                    "; expected 0 (chosen at launch) or a power of two from 1 to " + std::to_string(kMaxWorldLanes));
}

void check_printf_mb(uint32_t printf_mb) {
    if (printf_mb > 4096)
        throw Error("GpuOptions::printf_mb (ORRERY_CUDA_PRINTF_MB) is " + std::to_string(printf_mb) +
                    "; expected 0 (the driver's 1 MB) or 1 to 4096 megabytes");
}

unsigned team_block_for(const EnvSpec& spec, unsigned gpu_team_block_threads) {
    const unsigned b = gpu_team_block_threads ? gpu_team_block_threads : spec.team_block_threads;
    if (b % 32u || b > 1024u)
        throw Error(std::string(gpu_team_block_threads ? "GpuOptions::team_block_threads (ORRERY_CUDA_BLOCK_THREADS)"
                                                       : "EnvSpec::team_block_threads of env '" + spec.name() + "'") +
                    " is " + std::to_string(b) + "; expected 0 (the engine's 256) or a multiple of 32 up to 1024");
    return b ? b : 256u;
}

unsigned world_lanes_for(const EnvSpec& spec, unsigned gpu_world_lanes) {
    if (gpu_world_lanes) return gpu_world_lanes; // generate_kernels checks it
    const uint32_t l = spec.world_lanes;
    if (l > 32 || (l & (l - 1)) != 0)
        throw Error("EnvSpec::world_lanes of env '" + spec.name() + "' is " + std::to_string(l) +
                    "; expected 0 (the engine's " + std::to_string(kWorldLanes) + ") or a power of two from 1 to 32");
    return l ? l : kWorldLanes;
}

unsigned direct_lanes(const EnvSpec& spec, const Plan& plan, unsigned world_lanes) {
    unsigned n = 1;
    for (const std::vector<Op>* ops : {&plan.step, &plan.reset})
        for (const Op& op : *ops) n = std::max(n, op_lanes(spec, op, kMaxWorldLanes, world_lanes));
    return n;
}

namespace {

// The staged kernels' body around the per-env ops; the runtime they call
// (orrery_stage_begin, orrery_stage) is device/stage.cuh.
// Both take the same launch argument (CudaBackend::launch_staged, OrreryStageArgs):
// a region the load reads from another address, regions also written elsewhere
// after the copy back, or neither.
const char* kStagedHead = R"((const __grid_constant__ OrreryStageArgs orrery_args) {
    extern __shared__ __align__(16) unsigned char orrery_smem[];
    const unsigned first = blockIdx.x * orrery_stage_plan.worlds_per_block;
    const unsigned total = orrery_storage().num_worlds;
    if (first >= total) return;
    const unsigned count = min(orrery_stage_plan.worlds_per_block, total - first);
    const orrery::Storage& s = orrery_stage_begin(orrery_smem, first, count, ORRERY_STEP_PASS, ORRERY_PROLOGUE_CLEAR,
                                                        orrery_args.input_region, orrery_args.input_base);
    const orrery::uint32_t w = threadIdx.x;
    // Lane ops give each world `lanes` of the block's threads.
    const unsigned lanes = blockDim.x / orrery_stage_plan.worlds_per_block;
    (void)lanes;
)";

// The kernel that orders a node's worlds by cost (EnvSpec::order_teams), one
// block of kOrderThreads before each launch of the node's kernel: a counting
// sort of the worlds by their hints (Ctx::cost_hint), the costliest bucket
// first, so a block's teams get worlds of like cost and the costliest blocks
// start first. Within a bucket the order is whichever thread's shared atomic
// came first: it decides which team runs a world, never a result.
const char* kOrderKernel = R"(() {
    __shared__ unsigned at[orrery::kCostBuckets];
    orrery_wait_for_previous_pass(); // launched programmatically (sm_90+): the kernel before has finished
    orrery_let_next_pass_launch();
    const orrery::Storage& s = orrery_storage();
    const unsigned n = s.num_worlds, last = orrery::kCostBuckets - 1u;
    for (unsigned k = threadIdx.x; k < orrery::kCostBuckets; k += blockDim.x) at[k] = 0;
    __syncthreads();
    for (unsigned w = threadIdx.x; w < n; w += blockDim.x) atomicAdd(&at[last - min(s.team_cost[w], last)], 1u);
    __syncthreads();
    if (threadIdx.x < 32u) { // the buckets' starts: a lane sums its kCostBuckets / 32 in a row, then the warp scans
        constexpr unsigned per = orrery::kCostBuckets / 32u;
        unsigned mine = 0;
        for (unsigned k = 0; k < per; ++k) mine += at[threadIdx.x * per + k];
        unsigned before = mine;
        for (unsigned d = 1; d < 32u; d *= 2) {
            const unsigned v = __shfl_up_sync(0xffffffffu, before, d);
            if (threadIdx.x >= d) before += v;
        }
        before -= mine;
        for (unsigned k = 0; k < per; ++k) {
            const unsigned c = at[threadIdx.x * per + k];
            at[threadIdx.x * per + k] = before;
            before += c;
        }
    }
    __syncthreads();
    for (unsigned w = threadIdx.x; w < n; w += blockDim.x)
        s.team_order[atomicAdd(&at[last - min(s.team_cost[w], last)], 1u)] = w;
}
)";

const char* kStagedTail = R"(    orrery_stage<false>(orrery_smem, first, count);
    if (orrery_args.num_outputs) orrery_stage_outputs(orrery_smem, first, count, orrery_args);
}
)";

/// Per-input loop over the world's whole slab: `body` sees `p` (the world's
/// elements), `n` (their count) and `i`.
void emit_input_loops(std::ostringstream& out, const EnvSpec& spec, const std::string& body) {
    for (const ExportSpec& e : spec.exports()) {
        auto range = spec.input_ranges().find(e.name);
        if (!e.input || range == spec.input_ranges().end()) continue;
        const ComponentSpec& c = spec.component_specs()[e.component];
        if (c.dtype == DType::kF32) continue;
        std::string type = element_type(c.dtype);
        uint32_t per_row = c.row_bytes / uint32_t(dtype_size(c.dtype));
        out << "    { // " << e.name << "\n"
            << "        using T = " << type << ";\n"
            << "        const orrery::ArchetypeTable& t = s.tables[" << e.archetype << "];\n"
            << "        const orrery::uint32_t n = t.capacity * " << per_row << "u;\n"
            << "        " << type << "* p = reinterpret_cast<" << type << "*>(t.columns[" << e.component
            << "]) + orrery::size_t(w) * n;\n"
            << "        const long long lo = " << range->second.first << "LL, hi = " << range->second.second << "LL;\n"
            << "        (void)lo; (void)hi;\n"
            << "        for (orrery::uint32_t i = 0; i < n; ++i) { " << body << " }\n"
            << "    }\n";
    }
}

/// A __constant__ array `name` of `type` holding `rows` (initialisers), with its
/// length as the macro `count`; a null pointer when there are none.
void emit_constant_table(std::ostringstream& out, const std::string& type, const std::string& name,
                         const std::string& count, const std::vector<std::string>& rows) {
    out << "\n#define " << count << " " << rows.size() << "u\n";
    if (rows.empty()) {
        out << "__constant__ const " << type << "* " << name << " = nullptr;\n";
        return;
    }
    out << "__constant__ " << type << " " << name << "[] = {\n";
    for (const std::string& r : rows) out << "    {" << r << "},\n";
    out << "};\n";
}

/// The tables draw_random_inputs (SimOptions::random_inputs) and clear_outputs
/// (Output::kClearedEachStep) read.
void emit_op_tables(std::ostringstream& out, const EnvSpec& spec) {
    std::vector<std::string> rows;
    for (const RandomInput& r : random_input_table(spec))
        rows.push_back(std::to_string(r.archetype) + "u, " + std::to_string(r.component) + "u, " +
                       std::to_string(r.elements) + "u, " + std::to_string(r.elem_bytes) + "u, " +
                       std::to_string(r.lo) + "LL, " + std::to_string(r.hi) + "LL");
    emit_constant_table(out, "orrery::RandomInput", "orrery_random_input_table", "ORRERY_NUM_RANDOM_INPUTS", rows);
    rows.clear();
    for (const ClearedOutput& c : cleared_output_table(spec))
        rows.push_back(std::to_string(c.archetype) + "u, " + std::to_string(c.component) + "u, " +
                       std::to_string(c.bytes_per_world) + "u");
    emit_constant_table(out, "orrery::ClearedOutput", "orrery_cleared_outputs", "ORRERY_NUM_CLEARED_OUTPUTS", rows);
}

void emit_input_helpers(std::ostringstream& out, const EnvSpec& spec) {
    emit_op_tables(out, spec);
    // Inputs are range-checked on the device (the host never reads them): a bad
    // value records kBadAction and the world does not step.
    out << "\n__device__ void orrery_check_inputs(const orrery::Storage& s, orrery::uint32_t w) {\n"
        << "    if (s.meta[w].flags & orrery::kSkipStep) return;\n"
        << "    bool bad = false;\n";
    emit_input_loops(out, spec, "const long long v = (long long)p[i]; bad = bad || v < lo || v > hi;");
    out << "    if (bad) {\n"
        << "        orrery::WorldView(s, w).fail(orrery::uint32_t(orrery::ErrorCode::kBadAction));\n"
        << "        s.meta[w].flags |= orrery::kSkipStep;\n"
        << "    }\n}\n";
}

/// True when op `y` must see everything op `x` (earlier in the pass) wrote:
/// engine ops and destruction barriers order everything, nodes of different
/// phases are ordered, and within a phase a node waits for what it declared
/// (EnvSpec::add's deps, by default every earlier node).
bool needs_order(const EnvSpec& spec, const Op& x, const Op& y) {
    auto engine = [](const Op& op) {
        return op.kind != OpKind::kNode || op.node->system.kind == NodeKind::kApplyDestroys;
    };
    if (engine(x) || engine(y) || x.phase != y.phase) return true;
    const NodeSpec* base = spec.nodes().data();
    return spec.depends_on(uint32_t(y.node - base), uint32_t(x.node - base));
}

/// Emits ops in order, with a barrier (`sync`) before an op that must see what
/// an op run on other threads since the last barrier wrote. Serial ops run on
/// the world's own thread, so one after another needs none. `open`/`close`
/// wrap a run of serial ops; `lane` emits a lane op.
template <class Serial, class Lane>
void emit_ordered(std::ostringstream& out, const EnvSpec& spec, const std::vector<Op>& ops,
                  const std::vector<Op>::const_iterator skip, const std::string& sync, const std::string& open_text,
                  Serial serial, Lane lane) {
    std::vector<const Op*> pending; // run since the last barrier
    bool pending_lanes = false, open = false;
    for (auto it = ops.begin(); it != ops.end(); ++it) {
        const Op& op = *it;
        if (it == skip) {
            out << (open ? "        " : "    ") << "// clear outputs: done in the prologue\n";
            continue;
        }
        const bool is_lane = is_lane_op(op);
        bool wait = false;
        for (const Op* x : pending) wait = wait || ((is_lane || pending_lanes) && needs_order(spec, *x, op));
        if ((wait || is_lane) && open) {
            out << "    }\n";
            open = false;
        }
        if (wait) {
            out << "    " << sync << " // before " << (op.node ? op.node->system.name : "engine op") << "\n";
            pending.clear();
            pending_lanes = false;
        }
        if (is_lane) {
            lane(op);
            pending_lanes = true;
        } else {
            if (!open) out << "    " << open_text << "\n";
            open = true;
            serial(op);
        }
        pending.push_back(&op);
    }
    if (open) out << "    }\n";
    if (pending_lanes || !pending.empty()) out << "    " << sync << " // end of pass\n";
}

void emit_pass(std::ostringstream& out, const EnvSpec& spec, const std::vector<Op>& ops, AutoReset mode,
               const char* pass, KernelForm form, unsigned lanes, unsigned world_lanes, std::vector<std::string>& names,
               std::string& staged, size_t head_size, std::vector<NodeProgram>& programs,
               std::vector<std::pair<std::string, unsigned>>& team_shared,
               std::vector<std::pair<std::string, std::string>>& ordered_kernels,
               std::vector<std::string>& aligned_kernels, std::vector<LaunchLanes>& launch_lanes, unsigned block_bound,
               bool fuse_serial, std::vector<size_t>& first_op) {
    bool step_pass = std::string(pass) == "step";
    bool draws = std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::kRandomInputs; });
    bool check_inputs = step_pass && !draws;
    // Direct and per-node kernels: `lanes` threads per world (a group inside one
    // warp); serial ops run on the group's lane 0, a lane op on as many of its
    // lanes as op_lanes gives it.
    // `aligned`: a team node of a whole warp in the per-node form, whose kernel
    // counts the block's teams that run it before any thread leaves
    // (Lanes::align meets them).
    // `at_launch`: the kernel's threads a world come as its argument, the
    // shift of that power of two (KernelSource::launch_lanes).
    // `registers`: the node's register bound (EnvSpec::bound_registers; 0
    // none), through ORRERY_NODE_REGS (device/storage.cuh).
    auto head = [&](const std::string& name, const Op* aligned = nullptr, bool ordered = false, bool at_launch = false,
                    uint32_t registers = 0) {
        std::string bound =
            block_bound > 256 ? "__launch_bounds__(" + std::to_string(block_bound) + ", 1)" : std::string();
        if (registers) bound = "ORRERY_NODE_REGS(" + std::to_string(registers) + ", " + bound + ")";
        out << "\nextern \"C\" __global__ void " << (bound.empty() ? bound : bound + " ") << name
            << (at_launch ? "(const unsigned orrery_lane_shift) {\n" : "() {\n")
            << "    orrery_wait_for_previous_pass(); // launched programmatically (sm_90+): the kernel before has "
               "finished\n"
            << "    orrery_let_next_pass_launch();\n";
        if (at_launch) {
            out << "    const unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
                << "    const unsigned lanes_now = 1u << orrery_lane_shift; // chosen at launch\n"
                << "    const unsigned lane = unsigned(g) & (lanes_now - 1u);\n"
                << "    const orrery::Storage& s = orrery_storage();\n"
                << "    if ((g >> orrery_lane_shift) >= s.num_worlds) return; // the world's whole group leaves "
                   "together\n"
                << "    const orrery::uint32_t w = orrery::uint32_t(g >> orrery_lane_shift);\n";
            return;
        }
        if (lanes == 1) {
            out << "    const orrery::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;\n"
                << "    const orrery::Storage& s = orrery_storage();\n"
                << "    if (w >= s.num_worlds) return;\n";
            return;
        }
        out << "    const unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
            << "    const unsigned lane = unsigned(g % " << lanes << "u);\n"
            << "    const orrery::Storage& s = orrery_storage();\n";
        if (ordered) // team t runs the t-th world of the order (EnvSpec::order_teams), where one was made
            out << "    const orrery::uint32_t t = orrery::uint32_t(g / " << lanes << "u);\n"
                << "    const orrery::uint32_t w = s.team_order && t < s.num_worlds ? s.team_order[t] : t;\n";
        else
            out << "    const orrery::uint32_t w = orrery::uint32_t(g / " << lanes << "u);\n";
        if (aligned) {
            out << "    const bool runs = w < s.num_worlds && orrery::phase_active(s, w, orrery::Phase::"
                << phase_name(aligned->phase) << ");\n"
                << "    const unsigned block_threads = unsigned(__syncthreads_count(runs)); // every thread is here\n"
                << "    if (!runs) return; // the world's whole warp leaves together\n";
            return;
        }
        out << "    if (w >= s.num_worlds) return; // the world's whole group leaves together\n";
        if (lanes > 32) { // a block per world: the group is the block, synchronised with __syncthreads
            out << "    (void)lane;\n";
            return;
        }
        out << "    const unsigned group = "
            << (lanes == 32 ? std::string("0xffffffffu")
                            : std::to_string((1u << lanes) - 1) + "u << (threadIdx.x % 32u / " + std::to_string(lanes) +
                                  "u * " + std::to_string(lanes) + "u)")
            << ";\n    (void)group; (void)lane;\n";
    };
    // `n`: the op's lanes as a device expression, where not op_lanes' constant.
    auto lane_line = [&](const Op& op, const std::string& n = "") {
        if (lanes == 1) return "    " + op_statement(op, mode, check_inputs) + "\n";
        const std::string count = n.empty() ? std::to_string(op_lanes(spec, op, lanes, world_lanes)) + "u" : n;
        return "    if (lane < " + count + " && orrery::phase_active(s, w, orrery::Phase::" + phase_name(op.phase) +
               ")) " + lane_call(op, "w", "lane", count) + " // " + (op.node ? op.node->system.name : "clear outputs") +
               ", " + (n.empty() ? count + " lanes" : "lanes chosen at launch") + "\n";
    };
    if (form == KernelForm::kDirect) {
        std::string name = std::string("orrery_") + pass;
        names.push_back(name);
        head(name);
        if (lanes == 1) {
            for (const Op& op : ops) out << "    " << op_statement(op, mode, check_inputs) << "\n";
        } else {
            emit_ordered(
                out, spec, ops, ops.end(), lanes > 32 ? "__syncthreads();" : "__syncwarp(group);", "if (lane == 0) {",
                [&](const Op& op) { out << "        " << op_statement(op, mode, check_inputs) << "\n"; },
                [&](const Op& op) { out << lane_line(op); });
        }
        out << "}\n";
        return;
    }
    if (form == KernelForm::kStaged) {
        staged = std::string("orrery_") + pass + "_staged";
        // The step pass's first clear (phase kObserve: every world, before its
        // observe nodes) is done in the block's prologue: the step pass never
        // loads a cleared output, and nodes before the observe nodes neither
        // read nor write it (Output::kClearedEachStep).
        auto prologue_clear = std::find_if(ops.begin(), ops.end(), [&](const Op& op) {
            return step_pass && op.kind == OpKind::kClearOutputs && op.phase == Phase::kObserve;
        });
        out << "\n#define ORRERY_STEP_PASS " << (step_pass ? "true" : "false") << "\n"
            << "#define ORRERY_PROLOGUE_CLEAR " << (prologue_clear != ops.end() ? "true" : "false") << "\n"
            << "extern \"C\" __global__ void __launch_bounds__(" << kStageThreads << ", " << kStageMinBlocks << ") "
            << staged << kStagedHead;
        // Thread w runs world w's ops; a lane op runs on every thread (world
        // i / lanes, lane i % lanes); a barrier separates ops that depend on
        // each other across threads, and precedes the copy back.
        emit_ordered(
            out, spec, ops, prologue_clear, "__syncthreads();", "if (w < count) {",
            [&](const Op& op) { out << "        " << op_statement(op, mode, check_inputs) << "\n"; },
            [&](const Op& op) {
                if (op.kind == OpKind::kNode && op.node->system.kind == NodeKind::kPerWorldTeam) {
                    // A barrier inside: each thread holds exactly one (world, lane), a
                    // world's team is `team` threads aligned within one warp.
                    out << "    { // " << op.node->system.name << ", in a team of lanes\n"
                        << "        const unsigned team = orrery_team_lanes(lanes);\n"
                        << "        if (threadIdx.x < count * team && orrery::phase_active(s, threadIdx.x / team, "
                        << "orrery::Phase::" << phase_name(op.phase) << "))\n"
                        << "            " << lane_call(op, "threadIdx.x / team", "threadIdx.x % team", "team")
                        << "\n    }\n";
                    return;
                }
                out << "    // " << (op.node ? op.node->system.name : "clear outputs") << ", in lanes\n"
                    << "    for (unsigned i = threadIdx.x; i < count * lanes; i += blockDim.x)\n"
                    << "        if (orrery::phase_active(s, i / lanes, orrery::Phase::" << phase_name(op.phase) << ")) "
                    << lane_call(op, "i / lanes", "i % lanes", "lanes") << "\n";
            });
        out << kStagedTail << "#undef ORRERY_STEP_PASS\n#undef ORRERY_PROLOGUE_CLEAR\n";
        return;
    }
    // Per-node: each kernel is also a program of its own (the head, then it).
    const std::string shared_head = out.str().substr(0, head_size);
    const auto label_of = [](const Op& op) { return op.node ? std::string(op.node->system.name) : op_label(op.kind); };
    const auto has_scratch = [](const Op& op) { return op.kind == OpKind::kNode && !op.node->scratch.empty(); };
    for (size_t i = 0; i < ops.size(); ++i) {
        std::string name = std::string("orrery_") + pass + "_op" + std::to_string(i);
        names.push_back(name);
        first_op.push_back(i);
        const std::streamoff at = out.tellp();
        const Op& op = ops[i];
        // Threads a world chosen at launch: a serial op's kernel, a team
        // op's, and a lane op's that no team runs, each where it keeps no
        // scratch (a slot is a team's), in a form whose teams are 2 to 32
        // lanes; not a team node that orders its teams (they align).
        const bool team = op.kind == OpKind::kNode && op.node->system.kind == NodeKind::kPerWorldTeam;
        LaunchLanes ll{name, !is_lane_op(op), lanes, team};
        if (!ll.serial && !team) ll.most = op_lanes(spec, op, kMaxWorldLanes, kMaxWorldLanes);
        const bool at_launch = lanes > 1 && lanes <= 32 && !has_scratch(op) && !(team && op.node->order_teams) &&
                               (ll.serial || team || ll.most > lanes);
        if (at_launch) launch_lanes.push_back(ll);
        // Consecutive serial ops that take their lanes at launch fuse into
        // this one kernel (fuse_serial).
        size_t end = i + 1;
        if (fuse_serial && at_launch && ll.serial)
            while (end < ops.size() && !is_lane_op(ops[end]) && !has_scratch(ops[end])) ++end;
        if (end - i > 1) { // a run of serial ops, one after another on the world's lane 0
            head(name, nullptr, false, true);
            out << "    if (lane != 0) return; // serial ops, fused: " << end - i << "\n";
            NodeProgram p{name, "", "", {}};
            for (size_t j = i; j < end; ++j) {
                out << "    " << op_statement(ops[j], mode, check_inputs) << "\n";
                p.nodes.push_back(label_of(ops[j]));
                p.node += (j > i ? " + " : "") + p.nodes.back();
            }
            out << "}\n";
            p.text = shared_head + out.str().substr(size_t(at));
            programs.push_back(std::move(p));
            i = end - 1;
            continue;
        }
        // A team node of a whole warp whose lanes are the form's: its teams align in the block.
        const bool aligned = lanes == 32 && team && !at_launch && op_lanes(spec, op, lanes, world_lanes) == 32;
        const bool ordered = aligned && op.node->order_teams;
        if (aligned) aligned_kernels.push_back(name);
        head(name, aligned ? &op : nullptr, ordered, at_launch, op.node ? op.node->registers : 0u);
        // A team a warp: each may keep scratch in its block's shared memory,
        // where the launch gives the block a region per team (the backend
        // gives them to the kernels listed in team_shared_kernels).
        const uint32_t shared_bytes = aligned ? team_shared_bytes(spec, *op.node) : 0u;
        if (shared_bytes) team_shared.push_back({name, shared_bytes});
        if (aligned)
            out << "    "
                << lane_call(op, "w", "lane", "32u", "block_threads", shared_bytes ? "orrery_team_shared_region()" : "")
                << " // " << op.node->system.name << ", 32 lanes, aligned in the block"
                << (shared_bytes ? ", scratch kept on chip" : "") << "\n";
        else if (at_launch && team) // every lane of its team calls it; a team of one lane runs it alone
            out << "    if (orrery::phase_active(s, w, orrery::Phase::" << phase_name(op.phase) << ")) "
                << lane_call(op, "w", "lane", "lanes_now") << " // " << op.node->system.name
                << ", a team of lanes chosen at launch\n";
        else if (at_launch && !ll.serial)
            out << "    const unsigned n = min(" << ll.most << "u, lanes_now);\n" << lane_line(op, "n");
        else if (lanes == 1 || is_lane_op(ops[i]))
            out << lane_line(ops[i]);
        else
            out << "    if (lane == 0) {\n        " << op_statement(ops[i], mode, check_inputs) << "\n    }\n";
        out << "}\n";
        if (ordered) {
            ordered_kernels.push_back({name, name + "_order"});
            out << "\nextern \"C\" __global__ void __launch_bounds__(" << kOrderThreads << ") " << name << "_order"
                << kOrderKernel;
        }
        programs.push_back({name, label_of(ops[i]), shared_head + out.str().substr(size_t(at)), {label_of(ops[i])}});
    }
}

} // namespace

std::string qualified_system_name(const SystemRef& s) {
    if (!s.signature) return s.name;
    // GCC: "... [with auto F = tag::spawn]"; Clang: "... [F = &tag::spawn]".
    std::string sig = s.signature();
    size_t at = sig.rfind("F = ");
    size_t end = sig.rfind(']');
    if (at == std::string::npos || end == std::string::npos || end < at)
        throw Error("cannot read the C++ name of system '" + std::string(s.name) + "' from '" + sig + "'");
    std::string q = sig.substr(at + 4, end - at - 4);
    size_t semi = q.find(';');
    if (semi != std::string::npos) q.resize(semi);
    while (!q.empty() && (q.front() == '&' || q.front() == ' ')) q.erase(0, 1);
    while (!q.empty() && q.back() == ' ') q.pop_back();
    if (q.empty()) throw Error("cannot read the C++ name of system '" + std::string(s.name) + "'");
    return q;
}

std::vector<CompileRequest> node_requests(const EnvSpec& spec, const KernelSource& k, int arch) {
    std::vector<CompileRequest> out;
    for (const NodeProgram& p : k.programs) {
        CompileRequest req = kernel_request(spec, k, arch);
        req.label = "'" + spec.name() + "' per-node kernel " + p.kernel + " (" + p.node + ")";
        req.source = p.text;
        req.file_name = p.kernel + ".cu";
        out.push_back(std::move(req));
    }
    return out;
}

NodeGroups node_group_requests(const EnvSpec& spec, const KernelSource& k, int arch) {
    NodeGroups g;
    std::vector<std::string> kernels; // of each program, for its label
    for (const NodeProgram& p : k.programs) {
        const auto shares = [&](const std::vector<std::string>& set) {
            return std::any_of(p.nodes.begin(), p.nodes.end(),
                               [&](const std::string& n) { return std::find(set.begin(), set.end(), n) != set.end(); });
        };
        size_t at = size_t(std::find_if(g.node_sets.begin(), g.node_sets.end(), shares) - g.node_sets.begin());
        if (at == g.node_sets.size()) {
            CompileRequest req = kernel_request(spec, k, arch);
            req.source = p.text;
            req.file_name = p.kernel + ".cu";
            g.reqs.push_back(std::move(req));
            g.node_sets.emplace_back();
            kernels.push_back(p.kernel);
        } else { // a node in common: its kernel joins that program, after the head
            g.reqs[at].source += p.text.substr(k.program_head);
            kernels[at] += ", " + p.kernel;
        }
        for (const std::string& n : p.nodes)
            if (std::find(g.node_sets[at].begin(), g.node_sets[at].end(), n) == g.node_sets[at].end())
                g.node_sets[at].push_back(n);
        g.program.push_back(at);
    }
    for (const std::vector<std::string>& set : g.node_sets) {
        std::string joined;
        for (const std::string& n : set) joined += (joined.empty() ? "" : ", ") + n;
        g.nodes.push_back(joined);
    }
    for (size_t i = 0; i < g.reqs.size(); ++i)
        g.reqs[i].label = "'" + spec.name() + "' per-node kernel" +
                          (kernels[i].find(',') == std::string::npos ? " " : "s ") + kernels[i] + " (" + g.nodes[i] +
                          ")";
    return g;
}

CompileRequest kernel_request(const EnvSpec& spec, const KernelSource& k, int arch) {
    const std::string& fast = spec.fast_compile;
    if (!fast.empty() && fast != "min" && fast != "mid" && fast != "max")
        throw Error("EnvSpec::fast_compile of env '" + spec.name() + "' is '" + fast +
                    "'; expected min, mid, max or empty (NVRTC's --Ofast-compile levels)");
    CompileRequest req;
    req.fast_compile = fast;
    req.label = "'" + spec.name() + "' " + (k.per_node ? "per-node kernels" : "megakernel");
    req.source = k.text;
    req.env_header = k.env_header;
    if (!spec.header_root().empty()) req.header_roots.push_back(spec.header_root());
    req.arch = arch;
    return req;
}

KernelSource generate_kernels(const EnvSpec& spec, const Plan& plan, KernelForm form, unsigned world_lanes,
                              unsigned block_bound, bool fuse_serial) {
    if (world_lanes == 0 || world_lanes > 32 || (world_lanes & (world_lanes - 1)) != 0)
        throw Error("GpuOptions::world_lanes (ORRERY_CUDA_LANES) is " + std::to_string(world_lanes) +
                    "; expected a power of two from 1 to 32");
    KernelSource k;
    if (form == KernelForm::kStaged) block_bound = 0; // the staged kernels bound their own blocks
    k.lanes = form == KernelForm::kStaged ? 1 : direct_lanes(spec, plan, world_lanes);
    for (const std::vector<Op>* ops : {&plan.step, &plan.reset})
        for (const Op& op : *ops)
            if (op.kind == OpKind::kNode && is_lane_op(op) &&
                std::none_of(k.node_lanes.begin(), k.node_lanes.end(),
                             [&](const auto& n) { return n.first == op.node->system.name; }))
                k.node_lanes.push_back({op.node->system.name, op_lanes(spec, op, k.lanes, world_lanes)});
    const bool per_node = form == KernelForm::kPerNode;
    k.per_node = per_node;
    k.env_header = spec.source();
    std::ostringstream out;
    out << "// Generated by Orrery for env '" << spec.name() << "': "
        << (per_node                      ? "one kernel per op"
            : form == KernelForm::kStaged ? "one megakernel per pass, staged in shared memory"
                                          : "one megakernel per pass")
        << ", autoreset mode " << int(plan.autoreset) << ".\n";
    for (const auto& [name, value] : spec.device_defines()) // EnvSpec::device_define, ahead of every header
        out << "#define " << name << " " << value << "\n";
    out << "#include \"" << spec.source() << "\"\n"
        << "#include \"engine/world_ops.hpp\"\n"
        << kStorageCuh;
    const bool scratch =
        std::any_of(spec.nodes().begin(), spec.nodes().end(), [](const NodeSpec& n) { return !n.scratch.empty(); });
    if (scratch) out << kScratchCuh;
    if (form == KernelForm::kStaged)
        out << "#define ORRERY_MAX_STAGE_REGIONS " << kMaxStageRegions << "\n"
            << "#define ORRERY_STAGE_STORAGE_WORDS " << stage_storage_words(spec) << "u\n"
            << kStageCuh;
    emit_input_helpers(out, spec);
    const size_t head_size = out.str().size();
    emit_pass(out, spec, plan.step, plan.autoreset, "step", form, k.lanes, world_lanes, k.step_kernels,
              k.staged_step_kernel, head_size, k.programs, k.team_shared_kernels, k.ordered_kernels, k.aligned_kernels,
              k.launch_lanes, block_bound, fuse_serial, k.step_first_op);
    emit_pass(out, spec, plan.reset, plan.autoreset, "reset", form, k.lanes, world_lanes, k.reset_kernels,
              k.staged_reset_kernel, head_size, k.programs, k.team_shared_kernels, k.ordered_kernels, k.aligned_kernels,
              k.launch_lanes, block_bound, fuse_serial, k.reset_first_op);
    k.text = out.str();
    if (per_node) k.program_head = head_size;
    return k;
}

} // namespace orrery::cuda
