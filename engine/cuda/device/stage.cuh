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
// codegen.cpp pastes this file into every generated kernel source (it is not
// #included); the embedding (embed_device.cmake) leaves out this first comment
// block and the blank line after it, and the rest is the source text exactly.

struct OrreryStageRegion {
    unsigned long long base, bytes_per_world, smem, flags;
};
// The staged kernels' launch argument (CudaBackend::launch_staged): region
// input_region is loaded from input_base (a caller's input read in place), and
// output_region[k] is also written to output_base[k] after the copy back (a
// caller's result buffer), k < num_outputs.
struct OrreryStageArgs {
    unsigned input_region, num_outputs;
    unsigned long long input_base;
    unsigned output_region[4];
    unsigned long long output_base[4];
};
struct OrreryStagePlan {
    unsigned num_regions, worlds_per_block, smem_bytes, config_smem, storage_words;
};
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
struct __align__(16) OrreryWide {
    unsigned w[4];
};

/// Regions the step pass does not load: outputs it rewrites in full.
__device__ __forceinline__ bool orrery_stage_skips(unsigned r) { return orrery_stage_regions[r].flags & 1; }

/// Pieces of `Unit` size region r has in this block: whole-region 16-byte pieces
/// when its span is 16-byte aligned and sized, otherwise bytes.
template <class Unit>
__device__ __forceinline__ unsigned long long orrery_stage_pieces(unsigned r, unsigned first, unsigned count,
                                                                  bool skip) {
    const OrreryStageRegion& g = orrery_stage_regions[r];
    if (skip && orrery_stage_skips(r)) return 0;
    const unsigned long long n = g.bytes_per_world * count, at = g.base + g.bytes_per_world * first;
    const bool wide = ((at | n) % 16) == 0;
    if (sizeof(Unit) == 16) return wide ? n / 16 : 0;
    return wide ? 0 : n;
}

// With kIn and `skip`, regions flagged 1 (outputs the step rewrites) are not
// loaded; with kIn, region `in_region` is loaded from `in_base` in place of its
// own base (a caller's input column laid out as it, 16-byte aligned as it).
template <class Unit, bool kIn>
__device__ __forceinline__ void orrery_stage_pass(unsigned char* smem, unsigned first, unsigned count, bool skip,
                                                  unsigned in_region, unsigned long long in_base) {
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
                const unsigned long long base = kIn && r == in_region ? in_base : g.base;
                Unit* global = reinterpret_cast<Unit*>(base + g.bytes_per_world * first) + (j - start);
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

template <bool kIn>
__device__ __forceinline__ void orrery_stage_full(unsigned char* smem, const unsigned* end, unsigned in_region,
                                                  unsigned long long in_base) {
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
        if (threadIdx.x >= end[mid])
            r = mid + 1;
        else
            hi = mid;
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
            const unsigned long long base = kIn && r == in_region ? in_base : g.base;
            OrreryWide* global = reinterpret_cast<OrreryWide*>(base + g.bytes_per_world * block) + (j - start);
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

// `in_region`, `in_base`: as orrery_stage_pass (loads only; ORRERY_NO_STAGE_INPUT: none).
#define ORRERY_NO_STAGE_INPUT 0xffffffffu
template <bool kIn>
__device__ __forceinline__ void orrery_stage(unsigned char* smem, unsigned first, unsigned count, bool skip = false,
                                             unsigned in_region = ORRERY_NO_STAGE_INPUT,
                                             unsigned long long in_base = 0) {
    if (count == orrery_stage_plan.worlds_per_block) {
        orrery_stage_full<kIn>(smem, kIn && skip ? orrery_stage_end_load : orrery_stage_end_all, in_region, in_base);
        return;
    }
    orrery_stage_pass<OrreryWide, kIn>(smem, first, count, skip, in_region, in_base); // the last, partial block
    orrery_stage_pass<unsigned char, kIn>(smem, first, count, skip, in_region, in_base);
}

// After the copy back: the block's span of each region args.output_region[k]
// also goes from shared memory to args.output_base[k] (laid out as the region,
// 16-byte aligned), 16 bytes a piece where the span allows, else bytes.
__device__ __forceinline__ void orrery_stage_outputs(const unsigned char* smem, unsigned first, unsigned count,
                                                     const OrreryStageArgs& args) {
    for (unsigned k = 0; k < args.num_outputs; ++k) {
        const OrreryStageRegion& g = orrery_stage_regions[args.output_region[k]];
        const unsigned long long n = g.bytes_per_world * count;
        unsigned char* dst = reinterpret_cast<unsigned char*>(args.output_base[k] + g.bytes_per_world * first);
        const unsigned char* src = smem + g.smem;
        if (((reinterpret_cast<unsigned long long>(dst) | n) % 16) == 0) {
            for (unsigned long long i = threadIdx.x; i < n / 16; i += blockDim.x)
                reinterpret_cast<OrreryWide*>(dst)[i] = reinterpret_cast<const OrreryWide*>(src)[i];
        } else {
            for (unsigned long long i = threadIdx.x; i < n; i += blockDim.x) dst[i] = src[i];
        }
    }
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
// zeroes its cleared outputs here instead of in a clear op. Region `in_region`
// is loaded from `in_base` (the kernel's launch arguments): a caller's input
// read in place, which the copy back then leaves in the region's own column.
__device__ const orrery::Storage& orrery_stage_begin(unsigned char* smem, unsigned first, unsigned count, bool step,
                                                     bool clear, unsigned in_region, unsigned long long in_base) {
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
    for (unsigned i = g.config_bytes / 4 * 4 + threadIdx.x; i < g.config_bytes; i += blockDim.x)
        config[i] = g.config[i];
    if (step && clear) orrery_stage_clear(smem, count);
    // Everything above reads only what no kernel writes (the template, the
    // config) and writes only this block's shared memory, so under a
    // programmatic launch it overlaps the pass ahead of this one; from here
    // on the worlds are read.
    orrery_wait_for_previous_pass();
    orrery_stage<true>(smem, first, count, step, in_region, in_base);
    __syncthreads();
    orrery_let_next_pass_launch();
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
