// Megakernel source generation. Worlds are independent, so one thread runs one
// world through every op of a pass in order: no grid barrier is needed between
// dependent nodes, and a node is skipped by its device-side phase condition.
// The per-node mode emits the same ops as one kernel each.

#include "engine/cuda/codegen.hpp"

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

std::string op_statement(const Op& op, AutoReset mode, bool step_pass) {
    switch (op.kind) {
    case OpKind::kBeginStep:
        return "orrery::begin_step(s, w, orrery::AutoReset(" + std::to_string(int(mode)) + "));" +
               (step_pass ? " orrery_check_inputs(s, w);" : "");
    case OpKind::kEndStep: return "orrery::end_step(s, w);";
    case OpKind::kFinishSameStep: return "orrery::finish_same_step(s, w);";
    case OpKind::kBeginRequestedReset: return "orrery::begin_requested_reset(s, w);";
    case OpKind::kNode: break;
    }
    const SystemRef& sys = op.node->system;
    std::string call;
    if (sys.kind == NodeKind::kApplyDestroys) call = "orrery::apply_destroys(s, w);";
    else if (sys.kind == NodeKind::kPerWorld) call = "orrery::run_world<&" + qualified_system_name(sys) + ">(s, w);";
    else call = "orrery::run_each<&" + qualified_system_name(sys) + ">(s, w);";
    return std::string("if (orrery::phase_active(s, w, orrery::Phase::") + phase_name(op.phase) + ")) " + call +
           " // " + sys.name;
}

const char* kPrologue = R"(
__constant__ __align__(16) unsigned char orrery_storage_bytes[sizeof(orrery::Storage)];

__device__ __forceinline__ const orrery::Storage& orrery_storage() {
    return *reinterpret_cast<const orrery::Storage*>(orrery_storage_bytes);
}
)";

// Staging: a block copies its worlds' every per-world array into shared memory
// (coalesced), runs the ops there against a block-local Storage whose pointers
// point into shared memory, and copies everything back. One world's thread then
// waits on shared-memory latency instead of L2 latency on each dependent access.
const char* kStagePrologue = R"(
struct OrreryStageRegion { unsigned long long base, bytes_per_world, smem; };
struct OrreryStagePlan { unsigned num_regions, worlds_per_block, smem_bytes, reserved; };
__constant__ OrreryStageRegion orrery_stage_regions[ORRERY_MAX_STAGE_REGIONS];
__constant__ OrreryStagePlan orrery_stage_plan;
// The block-local Storage: pointers hold shared-memory offsets (0: absent).
__constant__ __align__(16) unsigned char orrery_stage_storage[sizeof(orrery::Storage)];

__device__ __forceinline__ void orrery_copy(unsigned char* dst, const unsigned char* src, unsigned long long n) {
    if (((unsigned long long)dst | (unsigned long long)src | n) % 4 == 0) {
        unsigned* d = reinterpret_cast<unsigned*>(dst);
        const unsigned* s = reinterpret_cast<const unsigned*>(src);
        for (unsigned long long i = threadIdx.x; i < n / 4; i += blockDim.x) d[i] = s[i];
    } else {
        for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
    }
}

template <bool kIn> __device__ void orrery_stage(unsigned char* smem, unsigned first, unsigned count) {
    for (unsigned r = 0; r < orrery_stage_plan.num_regions; ++r) {
        const OrreryStageRegion& g = orrery_stage_regions[r];
        unsigned char* global = reinterpret_cast<unsigned char*>(g.base) + g.bytes_per_world * first;
        if (kIn) orrery_copy(smem + g.smem, global, g.bytes_per_world * count);
        else orrery_copy(global, smem + g.smem, g.bytes_per_world * count);
    }
}

template <class T> __device__ __forceinline__ void orrery_rebase(T*& p, unsigned char* smem) {
    if (p) p = reinterpret_cast<T*>(smem + reinterpret_cast<unsigned long long>(p));
}

__device__ const orrery::Storage& orrery_stage_begin(unsigned char* smem, unsigned first, unsigned count) {
    const unsigned* tmpl = reinterpret_cast<const unsigned*>(orrery_stage_storage);
    for (unsigned i = threadIdx.x; i < sizeof(orrery::Storage) / 4; i += blockDim.x)
        reinterpret_cast<unsigned*>(smem)[i] = tmpl[i];
    orrery_stage<true>(smem, first, count);
    __syncthreads();
    orrery::Storage& s = *reinterpret_cast<orrery::Storage*>(smem);
    if (threadIdx.x == 0) {
        s.num_worlds = count;
        for (unsigned a = 0; a < s.num_archetypes; ++a) {
            orrery::ArchetypeTable& t = s.tables[a];
            orrery_rebase(t.generation, smem); orrery_rebase(t.alive, smem); orrery_rebase(t.doomed, smem);
            orrery_rebase(t.free_rows, smem); orrery_rebase(t.free_top, smem);
            orrery_rebase(t.high_water, smem); orrery_rebase(t.live, smem);
            for (unsigned c = 0; c < orrery::kMaxComponents; ++c) orrery_rebase(t.columns[c], smem);
        }
        orrery_rebase(s.meta, smem); orrery_rebase(s.errors, smem); orrery_rebase(s.terminated, smem);
        orrery_rebase(s.truncated, smem); orrery_rebase(s.reset_request, smem);
        for (unsigned i = 0; i < s.num_finals; ++i) {
            orrery_rebase(s.final_src[i], smem);
            s.final_dst[i] += orrery::size_t(s.final_bytes[i]) * first; // final buffers stay in global memory
        }
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
    const orrery::Storage& s = orrery_stage_begin(orrery_smem, first, count);
    const orrery::uint32_t w = threadIdx.x;
    if (w < count) {
)";

const char* kStagedTail = R"(    }
    __syncthreads();
    orrery_stage<false>(orrery_smem, first, count);
}
)";

const char* kKernelHead = R"(() {
    const orrery::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;
    const orrery::Storage& s = orrery_storage();
    if (w >= s.num_worlds) return;
)";

/// Per-input loop over the world's whole slab: `body` sees `p` (the world's
/// elements), `n` (their count) and `i`.
void emit_input_loops(std::ostringstream& out, const EnvSpec& spec, const std::string& body) {
    uint32_t index = 0;
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
            << "        orrery::Rng rng(key, w, 0, 0, " << index++ << ");\n"
            << "        (void)rng; (void)lo; (void)hi;\n"
            << "        for (orrery::uint32_t i = 0; i < n; ++i) { " << body << " }\n"
            << "    }\n";
    }
}

void emit_input_helpers(std::ostringstream& out, const EnvSpec& spec) {
    // Inputs are range-checked on the device (the host never reads them): a bad
    // value records kBadAction and the world does not step.
    out << "\n__device__ void orrery_check_inputs(const orrery::Storage& s, orrery::uint32_t w) {\n"
        << "    if (s.meta[w].flags & orrery::kSkipStep) return;\n"
        << "    const unsigned long long key = 0;\n"
        << "    bool bad = false;\n";
    emit_input_loops(out, spec, "const long long v = (long long)p[i]; bad = bad || v < lo || v > hi;");
    out << "    if (bad) {\n"
        << "        orrery::WorldView(s, w).fail(orrery::uint32_t(orrery::ErrorCode::kBadAction));\n"
        << "        s.meta[w].flags |= orrery::kSkipStep;\n"
        << "    }\n}\n";
    out << "\nextern \"C\" __global__ void " << kRandomInputsKernel << "(unsigned long long key) {\n"
        << "    const orrery::uint32_t w = blockIdx.x * blockDim.x + threadIdx.x;\n"
        << "    const orrery::Storage& s = orrery_storage();\n"
        << "    if (w >= s.num_worlds) return;\n";
    emit_input_loops(out, spec,
                     "p[i] = T(lo + (long long)rng.below(orrery::uint32_t(hi - lo + 1)));");
    out << "}\n";
}

void emit_pass(std::ostringstream& out, const std::vector<Op>& ops, AutoReset mode, const char* pass,
               bool per_node, std::vector<std::string>& names, std::string& staged) {
    bool step_pass = std::string(pass) == "step";
    if (!per_node) {
        std::string name = std::string("orrery_") + pass;
        names.push_back(name);
        out << "\nextern \"C\" __global__ void " << name << kKernelHead;
        for (const Op& op : ops) out << "    " << op_statement(op, mode, step_pass) << "\n";
        out << "}\n";
        staged = name + "_staged";
        out << "\nextern \"C\" __global__ void " << staged << kStagedHead;
        for (const Op& op : ops) out << "        " << op_statement(op, mode, step_pass) << "\n";
        out << kStagedTail;
        return;
    }
    for (size_t i = 0; i < ops.size(); ++i) {
        std::string name = std::string("orrery_") + pass + "_op" + std::to_string(i);
        names.push_back(name);
        out << "\nextern \"C\" __global__ void " << name << kKernelHead << "    "
            << op_statement(ops[i], mode, step_pass) << "\n}\n";
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

KernelSource generate_kernels(const EnvSpec& spec, const Plan& plan, bool per_node) {
    KernelSource k;
    k.per_node = per_node;
    k.env_header = spec.source();
    std::ostringstream out;
    out << "// Generated by Orrery for env '" << spec.name() << "': "
        << (per_node ? "one kernel per op" : "one megakernel per pass") << ", autoreset mode "
        << int(plan.autoreset) << ".\n"
        << "#include \"" << spec.source() << "\"\n"
        << "#include \"engine/world_ops.hpp\"\n"
        << kPrologue;
    if (!per_node) out << "#define ORRERY_MAX_STAGE_REGIONS " << kMaxStageRegions << "\n" << kStagePrologue;
    emit_input_helpers(out, spec);
    emit_pass(out, plan.step, plan.autoreset, "step", per_node, k.step_kernels, k.staged_step_kernel);
    emit_pass(out, plan.reset, plan.autoreset, "reset", per_node, k.reset_kernels, k.staged_reset_kernel);
    k.text = out.str();
    return k;
}

} // namespace orrery::cuda
