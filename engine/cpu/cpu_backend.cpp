// The CPU executor. Worlds are independent, so a pass is one parallel_for over
// chunks of worlds, each chunk running every op of the pass in order: no
// barrier between nodes, and a chunk's state stays in cache across nodes. A
// node call covers a whole chunk, so there is no per-entity indirect call.

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "engine/cpu/cpu_backend.hpp"
#include "engine/host_cpu.hpp"

namespace orrery {

namespace {
/// `bytes` (a multiple of 64) of host memory for the worlds' state, 64-byte
/// aligned; from 4 MB on, 2 MB aligned and advised onto transparent huge
/// pages. A step touches every column a world has (hide-and-seek: about 45,
/// each on a page of its own), so with 4 KB pages a batch past the TLB's reach
/// spends time in page walks: 2 MB pages made hide-and-seek's CPU step about
/// 2 % faster at 1,024 worlds and Overcooked's 7.5 % at 65,536
/// (docs/perf-notes.md row 82). The advice is only
/// that: where the kernel declines it (THP off, no Linux) the pages stay 4 KB
/// and nothing else changes, so its result is not an error.
uint8_t* allocate_worlds(size_t bytes) {
    constexpr size_t kHuge = size_t(2) << 20;
    if (bytes < 2 * kHuge) return static_cast<uint8_t*>(std::aligned_alloc(64, bytes ? bytes : 64));
    const size_t whole = (bytes + kHuge - 1) / kHuge * kHuge; // aligned_alloc: a multiple of the alignment
    void* p = std::aligned_alloc(kHuge, whole);
#if defined(MADV_HUGEPAGE)
    if (p) (void)madvise(p, whole, MADV_HUGEPAGE);
#endif
    return static_cast<uint8_t*>(p);
}
} // namespace

void CpuBackend::run_ops(const std::vector<Op>& ops, uint32_t b, uint32_t e, uint32_t worker) const {
    const Storage& s = storage_;
    for (size_t i = 0; i < ops.size(); ++i) {
        const Op& op = ops[i];
        if (is_lane_op(op)) {
            // A run of lane ops (clear an output, then rebuild it) goes a few
            // worlds at a time, so their outputs are still in L1 for the next op;
            // op by op over a whole chunk they were evicted in between (28 % slower
            // past the L3 on Overcooked).
            size_t end = i;
            while (end < ops.size() && is_lane_op(ops[end])) ++end;
            for (uint32_t t = b; t < e; t += kLaneTile)
                for (size_t k = i; k < end; ++k) run_lane_op(ops[k], t, std::min(e, t + kLaneTile), worker);
            i = end - 1;
            continue;
        }
        switch (op.kind) {
        case OpKind::kBeginStep:
            for (uint32_t w = b; w < e; ++w) begin_step(s, w, mode_);
            break;
        case OpKind::kRandomInputs:
            for (uint32_t w = b; w < e; ++w)
                draw_random_inputs(s, w, random_inputs_.data(), uint32_t(random_inputs_.size()));
            break;
        case OpKind::kEndStep:
            for (uint32_t w = b; w < e; ++w) end_step(s, w);
            break;
        case OpKind::kFinishSameStep:
            for (uint32_t w = b; w < e; ++w) finish_same_step(s, w);
            break;
        case OpKind::kBeginRequestedReset:
            for (uint32_t w = b; w < e; ++w) begin_requested_reset(s, w);
            break;
        case OpKind::kClearOutputs: break; // a lane op, above
        case OpKind::kNode:
            op.node->system.cpu(s, b, e, op.phase, lanes_, op.node->scratch.empty() ? nullptr : scratch_slot(worker));
            break;
        }
    }
}

void CpuBackend::run_lane_op(const Op& op, uint32_t b, uint32_t e, uint32_t worker) const {
    if (op.kind == OpKind::kNode)
        return op.node->system.cpu(storage_, b, e, op.phase, lanes_,
                                   op.node->scratch.empty() ? nullptr : scratch_slot(worker));
    for (uint32_t w = b; w < e; ++w)
        if (phase_active(storage_, w, op.phase))
            clear_outputs(storage_, w, cleared_.data(), uint32_t(cleared_.size()), 0, 1);
}

CpuBackend::CpuBackend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout, uint32_t threads,
                       uint32_t lanes)
    : pool_(threads), mode_(plan.autoreset), random_inputs_(random_input_table(spec)),
      cleared_(cleared_output_table(spec)), lanes_(lanes) {
    if (lanes == 0) throw Error("cpu_lanes is 0; expected at least 1");
    // 64-byte aligned and zeroed: every column starts on a cache line.
    size_t bytes = (layout.total_bytes + 63) / 64 * 64;
    memory_ = allocate_worlds(bytes);
    if (!memory_) throw Error("cannot allocate " + std::to_string(bytes) + " bytes of host memory for the worlds");
    std::memset(memory_, 0, bytes);
    config_ = spec.config_bytes();
    storage_ = layout.bind(memory_, config_.empty() ? nullptr : config_.data());
    num_worlds_ = storage_.num_worlds;
    if (size_t slot = storage_.scratch_slot_bytes) { // contents are the node's to write: zeroed only to start alike
        storage_.scratch_slots = pool_.threads();
        size_t pool = (slot * storage_.scratch_slots + 63) / 64 * 64;
        scratch_ = static_cast<uint8_t*>(std::aligned_alloc(64, pool));
        if (!scratch_) {
            std::free(memory_);
            throw Error("cannot allocate " + std::to_string(pool) + " bytes of host memory for the step scratch");
        }
        std::memset(scratch_, 0, pool);
        storage_.scratch = scratch_;
    }
    // Chunks small enough to balance across threads, large enough to amortise
    // the node calls. One thread takes equal chunks (at most 256 worlds, for
    // the cache). More take guided ones, claimed in order: each 1/(2 x
    // threads) of the worlds left, from 1 to 256, so a pass ends on small
    // chunks and no thread waits out another's large last one (two threads,
    // 256 hide-and-seek worlds: docs/perf-notes.md row 89), while a cheap
    // env's step keeps large chunks for most of its worlds.
    const uint32_t t = pool_.threads();
    starts_.push_back(0);
    for (uint32_t b = 0; b < num_worlds_;) {
        const uint32_t left = num_worlds_ - b;
        const uint32_t n = t == 1 ? num_worlds_ / 8 + 1 : (left + 2 * t - 1) / (2 * t);
        b += std::min(left, std::max(1u, std::min(256u, n)));
        starts_.push_back(b);
    }
}

CpuBackend::~CpuBackend() {
    std::free(memory_);
    std::free(scratch_);
}

uint8_t* CpuBackend::scratch_slot(uint32_t worker) const {
    return scratch_ ? scratch_ + size_t(worker) * storage_.scratch_slot_bytes : nullptr;
}

Backend::ScratchPool CpuBackend::scratch_pool() const {
    if (!scratch_) return {};
    return {storage_.scratch_slots, size_t(storage_.scratch_slots) * storage_.scratch_slot_bytes, "one per CPU thread"};
}

std::string CpuBackend::describe() const {
    const std::string arch = host_arch();
    return "cpu (" + std::to_string(pool_.threads()) + " threads" + (arch.empty() ? "" : ", " + arch) + ")";
}

void CpuBackend::run(const std::vector<Op>& ops) {
    pool_.parallel_for(chunks(),
                       [&](uint32_t c, uint32_t worker) { run_ops(ops, starts_[c], starts_[c + 1], worker); });
}

void CpuBackend::run_reading(const std::vector<Op>& ops, const InputSource& in, const std::vector<OutputCopy>& outs) {
    // Every exported tensor is world-major (its worlds' bytes one after the
    // other), so a chunk's share is one contiguous run of each. A size that
    // does not split by world, or a source or destination partly over its
    // column (chunks would overwrite what others still read), takes the base
    // version, which moves each whole.
    auto apart = [](const void* a, const void* b, size_t n) {
        auto x = reinterpret_cast<uintptr_t>(a), y = reinterpret_cast<uintptr_t>(b);
        return x == y || x + n <= y || y + n <= x;
    };
    bool split = in.bytes % num_worlds_ == 0 && apart(in.source, in.column, in.bytes);
    for (const OutputCopy& o : outs) split = split && o.bytes % num_worlds_ == 0 && apart(o.dst, o.column, o.bytes);
    if (!split) return Backend::run_reading(ops, in, outs);
    pool_.parallel_for(chunks(), [&](uint32_t c, uint32_t worker) {
        const uint32_t b = starts_[c], e = starts_[c + 1];
        auto share = [&](size_t bytes) { return std::pair{bytes / num_worlds_ * b, bytes / num_worlds_ * (e - b)}; };
        if (in.source != in.column) {
            auto [at, n] = share(in.bytes);
            std::memcpy(static_cast<uint8_t*>(in.column) + at, static_cast<const uint8_t*>(in.source) + at, n);
        }
        run_ops(ops, b, e, worker);
        for (const OutputCopy& o : outs) {
            if (o.dst == o.column) continue;
            auto [at, n] = share(o.bytes);
            std::memcpy(static_cast<uint8_t*>(o.dst) + at, static_cast<const uint8_t*>(o.column) + at, n);
        }
    });
}

void CpuBackend::copy_to_host(void* dst, const void* src, size_t n) { std::memmove(dst, src, n); }
void CpuBackend::copy_from_host(void* dst, const void* src, size_t n) { std::memmove(dst, src, n); }
void CpuBackend::copy_within(void* dst, const void* src, size_t n) { std::memmove(dst, src, n); }

} // namespace orrery
