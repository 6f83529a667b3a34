// Megakernel source generation. Worlds are independent, so one thread runs one
// world through every op of a pass in order: no grid barrier is needed between
// dependent nodes, and a node is skipped by its device-side phase condition.
// The per-node mode emits the same ops as one kernel each.

#include "engine/cuda/codegen.hpp"

#include <algorithm>
#include <sstream>

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

/// The call that runs lane `lane` of `lanes` of a lane op on world `w`.
std::string lane_call(const Op& op, const std::string& w, const std::string& lane, const std::string& lanes) {
    if (op.kind == OpKind::kClearOutputs)
        return "orrery::clear_outputs(s, " + w + ", orrery_cleared_outputs, ORRERY_NUM_CLEARED_OUTPUTS, " + lane +
               ", " + lanes + ");";
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
    if (sys.kind == NodeKind::kApplyDestroys) call = "orrery::apply_destroys(s, w);";
    else if (sys.kind == NodeKind::kPerWorld) call = "orrery::run_world<&" + qualified_system_name(sys) + ">(s, w);";
    else if (is_lane_kind(sys.kind)) call = lane_call(op, "w", "0", "1"); // one thread, every lane
    else call = "orrery::run_each<&" + qualified_system_name(sys) + ">(s, w);";
    return std::string("if (orrery::phase_active(s, w, orrery::Phase::") + phase_name(op.phase) + ")) " + call +
           " // " + sys.name;
}

unsigned pow2_at_least(unsigned n) {
    unsigned p = 1;
    while (p < n) p *= 2;
    return p;
}

} // namespace

unsigned op_lanes(const EnvSpec& spec, const Op& op, unsigned limit) {
    if (!is_lane_op(op)) return 1;
    unsigned want = kWorldLanes;
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

unsigned direct_lanes(const EnvSpec& spec, const Plan& plan) {
    unsigned n = 1;
    for (const std::vector<Op>* ops : {&plan.step, &plan.reset})
        for (const Op& op : *ops) n = std::max(n, op_lanes(spec, op, kMaxWorldLanes));
    return n;
}

namespace {

const char* kPrologue = R"(
__constant__ __align__(16) unsigned char orrery_storage_bytes[sizeof(orrery::Storage)];

__device__ __forceinline__ const orrery::Storage& orrery_storage() {
    return *reinterpret_cast<const orrery::Storage*>(orrery_storage_bytes);
}
)";

// Staging: a block copies its worlds' every per-world array into shared memory,
// runs the ops there against a block-local Storage whose pointers point into
// shared memory, and copies everything back. One world's thread then waits on
// shared-memory latency instead of L2 latency on each dependent access.
//
// The copies decide the speed at large batches (docs/perf-notes.md): the block
// has more threads than worlds, all of them copy, and each thread issues
// ORRERY_STAGE_UNROLL loads before its first store, numbering the 16-byte
// pieces of all regions as one sequence so that small regions do not each cost
// a round trip. A region whose span in this block is not 16-byte aligned and
// sized (odd bytes per world, or the last partial block) goes byte by byte.
const char* kStagePrologue = R"(
struct OrreryStageRegion { unsigned long long base, bytes_per_world, smem, flags; };
struct OrreryStagePlan { unsigned num_regions, worlds_per_block, smem_bytes, config_smem, storage_words; };
__constant__ OrreryStageRegion orrery_stage_regions[ORRERY_MAX_STAGE_REGIONS];
__constant__ OrreryStagePlan orrery_stage_plan;
// The block-local Storage: pointers hold shared-memory offsets (0: absent);
// bit i of the mask marks 8-byte word i of Storage as such a pointer.
// In global memory, not __constant__: every thread of a block reads a different
// word of it, which the constant cache would serve one address at a time (ncu:
// a tenth of a 1,024-world step's warp samples); global loads coalesce.
__device__ __align__(16) unsigned char orrery_stage_storage[sizeof(orrery::Storage)];
__constant__ unsigned orrery_stage_pointer_mask[(sizeof(orrery::Storage) / 8 + 31) / 32];

#define ORRERY_STAGE_UNROLL 4
struct __align__(16) OrreryWide { unsigned w[4]; };

/// Regions the step pass does not load: outputs it rewrites in full.
__device__ __forceinline__ bool orrery_stage_skips(unsigned r) { return orrery_stage_regions[r].flags & 1; }

/// Pieces of `Unit` size region r has in this block: whole-region 16-byte pieces
/// when its span is 16-byte aligned and sized, otherwise bytes.
template <class Unit> __device__ __forceinline__ unsigned long long orrery_stage_pieces(unsigned r, unsigned first,
                                                                                     unsigned count, bool skip) {
    const OrreryStageRegion& g = orrery_stage_regions[r];
    if (skip && orrery_stage_skips(r)) return 0;
    const unsigned long long n = g.bytes_per_world * count, at = g.base + g.bytes_per_world * first;
    const bool wide = ((at | n) % 16) == 0;
    if (sizeof(Unit) == 16) return wide ? n / 16 : 0;
    return wide ? 0 : n;
}


// With kIn and `skip`, regions flagged 1 (outputs the step rewrites) are not loaded.
template <class Unit, bool kIn> __device__ __forceinline__ void orrery_stage_pass(unsigned char* smem, unsigned first,
                                                                                  unsigned count, bool skip) {
    constexpr unsigned U = ORRERY_STAGE_UNROLL;
    const unsigned nr = orrery_stage_plan.num_regions;
    unsigned r = 0;
    skip = kIn && skip;
    unsigned long long start = 0, pieces = nr ? orrery_stage_pieces<Unit>(0, first, count, skip) : 0;
    unsigned long long j = threadIdx.x;
    for (;;) {
        Unit* dst[U];
        const Unit* src[U];
        bool ok[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            while (r < nr && j >= start + pieces) {
                start += pieces;
                if (++r < nr) pieces = orrery_stage_pieces<Unit>(r, first, count, skip);
            }
            ok[u] = r < nr;
            if (ok[u]) {
                const OrreryStageRegion& g = orrery_stage_regions[r];
                Unit* global = reinterpret_cast<Unit*>(g.base + g.bytes_per_world * first) + (j - start);
                Unit* shared = reinterpret_cast<Unit*>(smem + g.smem) + (j - start);
                dst[u] = kIn ? shared : global;
                src[u] = kIn ? global : shared;
                j += blockDim.x;
            }
        }
        Unit v[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u)
            if (ok[u]) v[u] = *src[u];
#pragma unroll
        for (unsigned u = 0; u < U; ++u)
            if (ok[u]) *dst[u] = v[u];
        if (!ok[U - 1]) return;
    }
}

// A full block (worlds_per_block worlds, a multiple of 16) has every region's
// span 16-byte aligned and sized, so its pieces are numbered from host-made
// tables: end[r] is one past region r's last piece. The step's load table
// leaves out outputs the step rewrites (never read, so never loaded).
__constant__ unsigned orrery_stage_end_load[ORRERY_MAX_STAGE_REGIONS];
__constant__ unsigned orrery_stage_end_all[ORRERY_MAX_STAGE_REGIONS];

template <bool kIn> __device__ __forceinline__ void orrery_stage_full(unsigned char* smem, const unsigned* end) {
    constexpr unsigned U = ORRERY_STAGE_UNROLL;
    const unsigned nr = orrery_stage_plan.num_regions;
    const unsigned total = nr ? end[nr - 1] : 0;
    const unsigned long long block = blockIdx.x * (unsigned long long)orrery_stage_plan.worlds_per_block;
    // The region of this thread's first piece by binary search (a warp's threads
    // read the same entries at first, so the constant cache broadcasts), then a
    // walk forward: a linear walk from region 0 was most of a small block's
    // copy instructions (docs/perf-notes.md, row 14).
    unsigned r = 0, hi = nr ? nr - 1 : 0;
    while (r < hi) {
        const unsigned mid = (r + hi) / 2;
        if (threadIdx.x >= end[mid]) r = mid + 1;
        else hi = mid;
    }
    unsigned start = r ? end[r - 1] : 0;
    for (unsigned j0 = threadIdx.x; j0 < total; j0 += U * blockDim.x) {
        OrreryWide* dst[U];
        const OrreryWide* src[U];
        bool ok[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u) {
            const unsigned j = j0 + u * blockDim.x;
            ok[u] = j < total;
            if (!ok[u]) continue;
            while (j >= end[r]) start = end[r++];
            const OrreryStageRegion& g = orrery_stage_regions[r];
            OrreryWide* global = reinterpret_cast<OrreryWide*>(g.base + g.bytes_per_world * block) + (j - start);
            OrreryWide* shared = reinterpret_cast<OrreryWide*>(smem + g.smem) + (j - start);
            dst[u] = kIn ? shared : global;
            src[u] = kIn ? global : shared;
        }
        OrreryWide v[U];
#pragma unroll
        for (unsigned u = 0; u < U; ++u)
            if (ok[u]) v[u] = *src[u];
#pragma unroll
        for (unsigned u = 0; u < U; ++u)
            if (ok[u]) *dst[u] = v[u];
    }
}

template <bool kIn> __device__ __forceinline__ void orrery_stage(unsigned char* smem, unsigned first, unsigned count,
                                                                 bool skip = false) {
    if (count == orrery_stage_plan.worlds_per_block) {
        orrery_stage_full<kIn>(smem, kIn && skip ? orrery_stage_end_load : orrery_stage_end_all);
        return;
    }
    orrery_stage_pass<OrreryWide, kIn>(smem, first, count, skip); // the last, partial block
    orrery_stage_pass<unsigned char, kIn>(smem, first, count, skip);
}

// Programmatic dependent launch (sm_90+, CudaBackend launches passes with it):
// a pass may be launched while the one before it still runs. Its blocks copy
// the template and config, then wait here until the pass before has finished
// and its writes are visible; once past the wait they let the pass after them
// launch, so at most one pass waits ahead of the running one. Without the
// launch attribute both are no-ops.
__device__ __forceinline__ void orrery_wait_for_previous_pass() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

/// Zeroes the shared copies of the block's Output::kClearedEachStep outputs
/// (flag 2), which the step pass never loads: the clear op before the step's
/// observe nodes, done before anything is read.
__device__ __forceinline__ void orrery_stage_clear(unsigned char* smem, unsigned count) {
    const unsigned nr = orrery_stage_plan.num_regions;
    for (unsigned r = 0; r < nr; ++r) {
        const OrreryStageRegion& g = orrery_stage_regions[r];
        if (!(g.flags & 2)) continue;
        const unsigned n = unsigned(g.bytes_per_world) * count;
        OrreryWide* p = reinterpret_cast<OrreryWide*>(smem + g.smem); // region offsets are 16-byte aligned
        for (unsigned i = threadIdx.x; i < n / 16; i += blockDim.x) p[i] = OrreryWide{};
        for (unsigned i = n / 16 * 16 + threadIdx.x; i < n; i += blockDim.x) smem[g.smem + i] = 0;
    }
}

// `step`: the step pass, which need not load outputs it rewrites; `clear`: it
// zeroes its cleared outputs here instead of in a clear op.
__device__ const orrery::Storage& orrery_stage_begin(unsigned char* smem, unsigned first, unsigned count, bool step,
                                                     bool clear) {
    // The header and the tables in use (Storage::used_bytes): the env's, not
    // kMaxArchetypes'. A compile-time count, so the loop unrolls, copied 16
    // bytes per thread: one round of loads for a 256-thread block up to 4 KB.
    const ulonglong2* tmpl = reinterpret_cast<const ulonglong2*>(orrery_stage_storage);
    ulonglong2* local = reinterpret_cast<ulonglong2*>(smem);
    const unsigned long long base = reinterpret_cast<unsigned long long>(smem);
    for (unsigned i = threadIdx.x; i < ORRERY_STAGE_STORAGE_WORDS / 2; i += blockDim.x) {
        ulonglong2 v = tmpl[i];
        const unsigned bits = orrery_stage_pointer_mask[i / 16] >> (2 * i % 32);
        if ((bits & 1u) && v.x) v.x += base;
        if ((bits & 2u) && v.y) v.y += base;
        local[i] = v;
    }
    // The env config: read-only and the same for every world, but read on every
    // step; from shared memory its reads do not contend with the copies for L1.
    const orrery::Storage& g = orrery_storage();
    unsigned char* config = smem + orrery_stage_plan.config_smem;
    for (unsigned i = threadIdx.x; i < g.config_bytes / 4; i += blockDim.x)
        reinterpret_cast<unsigned*>(config)[i] = reinterpret_cast<const unsigned*>(g.config)[i];
    for (unsigned i = g.config_bytes / 4 * 4 + threadIdx.x; i < g.config_bytes; i += blockDim.x) config[i] = g.config[i];
    if (step && clear) orrery_stage_clear(smem, count);
    // Everything above reads only what no kernel writes (the template, the
    // config) and writes only this block's shared memory, so under a
    // programmatic launch it overlaps the pass ahead of this one; from here
    // on the worlds are read.
    orrery_wait_for_previous_pass();
    orrery_stage<true>(smem, first, count, step);
    __syncthreads();
    orrery::Storage& s = *reinterpret_cast<orrery::Storage*>(smem);
    if (threadIdx.x == 0) {
        s.num_worlds = count;
        if (g.config) s.config = config;
        for (unsigned i = 0; i < s.num_finals; ++i) // final buffers stay in global memory
            s.final_dst[i] += orrery::size_t(s.final_bytes[i]) * first;
    }
    __syncthreads();
    return s;
}
)";

const char* kStagedHead = R"(() {
    extern __shared__ __align__(16) unsigned char orrery_smem[];
    const unsigned first = blockIdx.x * orrery_stage_plan.worlds_per_block;
    const unsigned total = orrery_storage().num_worlds;
    if (first >= total) return;
    const unsigned count = min(orrery_stage_plan.worlds_per_block, total - first);
    const orrery::Storage& s = orrery_stage_begin(orrery_smem, first, count, ORRERY_STEP_PASS, ORRERY_PROLOGUE_CLEAR);
    const orrery::uint32_t w = threadIdx.x;
    // Lane ops give each world `lanes` of the block's threads.
    const unsigned lanes = blockDim.x / orrery_stage_plan.worlds_per_block;
    (void)lanes;
)";

const char* kStagedTail = R"(    orrery_stage<false>(orrery_smem, first, count);
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
            << "        const long long lo = " << range->second.first << "LL, hi = " << range->second.second
            << "LL;\n"
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
        for (const Op* x : pending)
            wait = wait || ((is_lane || pending_lanes) && needs_order(spec, *x, op));
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
               const char* pass, KernelForm form, unsigned lanes, std::vector<std::string>& names,
               std::string& staged) {
    bool step_pass = std::string(pass) == "step";
    bool draws = std::any_of(ops.begin(), ops.end(), [](const Op& op) { return op.kind == OpKind::kRandomInputs; });
    bool check_inputs = step_pass && !draws;
    // Direct and per-node kernels: `lanes` threads per world (a group inside one
    // warp); serial ops run on the group's lane 0, a lane op on as many of its
    // lanes as op_lanes gives it.
    auto head = [&](const std::string& name) {
        out << "\nextern \"C\" __global__ void " << name << "() {\n";
        if (lanes == 1) {
            out << "    const orrery::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;\n"
                << "    const orrery::Storage& s = orrery_storage();\n"
                << "    if (w >= s.num_worlds) return;\n";
            return;
        }
        out << "    const unsigned long long g = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
            << "    const orrery::uint32_t w = orrery::uint32_t(g / " << lanes << "u);\n"
            << "    const unsigned lane = unsigned(g % " << lanes << "u);\n"
            << "    const orrery::Storage& s = orrery_storage();\n"
            << "    if (w >= s.num_worlds) return; // the world's whole group leaves together\n";
        if (lanes > 32) { // a block per world: the group is the block, synchronised with __syncthreads
            out << "    (void)lane;\n";
            return;
        }
        out << "    const unsigned group = "
            << (lanes == 32 ? std::string("0xffffffffu") : std::to_string((1u << lanes) - 1) + "u << (threadIdx.x % 32u / " +
                                                               std::to_string(lanes) + "u * " + std::to_string(lanes) + "u)")
            << ";\n    (void)group; (void)lane;\n";
    };
    auto lane_line = [&](const Op& op) {
        if (lanes == 1) return "    " + op_statement(op, mode, check_inputs) + "\n";
        unsigned n = op_lanes(spec, op, lanes);
        return "    if (lane < " + std::to_string(n) + "u && orrery::phase_active(s, w, orrery::Phase::" +
               phase_name(op.phase) + ")) " + lane_call(op, "w", "lane", std::to_string(n) + "u") + " // " +
               (op.node ? op.node->system.name : "clear outputs") + ", " + std::to_string(n) + " lanes\n";
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
                out << "    // " << (op.node ? op.node->system.name : "clear outputs") << ", in lanes\n"
                    << "    for (unsigned i = threadIdx.x; i < count * lanes; i += blockDim.x)\n"
                    << "        if (orrery::phase_active(s, i / lanes, orrery::Phase::" << phase_name(op.phase)
                    << ")) " << lane_call(op, "i / lanes", "i % lanes", "lanes") << "\n";
            });
        out << kStagedTail << "#undef ORRERY_STEP_PASS\n#undef ORRERY_PROLOGUE_CLEAR\n";
        return;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
        std::string name = std::string("orrery_") + pass + "_op" + std::to_string(i);
        names.push_back(name);
        head(name);
        if (lanes == 1 || is_lane_op(ops[i])) out << lane_line(ops[i]);
        else out << "    if (lane == 0) " << op_statement(ops[i], mode, check_inputs) << "\n";
        out << "}\n";
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

KernelSource generate_kernels(const EnvSpec& spec, const Plan& plan, KernelForm form) {
    KernelSource k;
    k.lanes = form == KernelForm::kStaged ? 1 : direct_lanes(spec, plan);
    for (const std::vector<Op>* ops : {&plan.step, &plan.reset})
        for (const Op& op : *ops)
            if (op.kind == OpKind::kNode && is_lane_op(op) &&
                std::none_of(k.node_lanes.begin(), k.node_lanes.end(),
                             [&](const auto& n) { return n.first == op.node->system.name; }))
                k.node_lanes.push_back({op.node->system.name, op_lanes(spec, op, k.lanes)});
    const bool per_node = form == KernelForm::kPerNode;
    k.per_node = per_node;
    k.env_header = spec.source();
    std::ostringstream out;
    out << "// Generated by Orrery for env '" << spec.name() << "': "
        << (per_node ? "one kernel per op"
            : form == KernelForm::kStaged ? "one megakernel per pass, staged in shared memory"
                                          : "one megakernel per pass") << ", autoreset mode "
        << int(plan.autoreset) << ".\n"
        << "#include \"" << spec.source() << "\"\n"
        << "#include \"engine/world_ops.hpp\"\n"
        << kPrologue;
    if (form == KernelForm::kStaged)
        out << "#define ORRERY_MAX_STAGE_REGIONS " << kMaxStageRegions << "\n"
            << "#define ORRERY_STAGE_STORAGE_WORDS " << stage_storage_words(spec) << "u\n" << kStagePrologue;
    emit_input_helpers(out, spec);
    emit_pass(out, spec, plan.step, plan.autoreset, "step", form, k.lanes, k.step_kernels, k.staged_step_kernel);
    emit_pass(out, spec, plan.reset, plan.autoreset, "reset", form, k.lanes, k.reset_kernels, k.staged_reset_kernel);
    k.text = out.str();
    return k;
}

} // namespace orrery::cuda
