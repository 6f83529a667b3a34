// Step scratch (EnvSpec::scratch) on the GPU: the pool holds a slot per team
// that can be resident at once (SMs x resident teams per SM, from the
// occupancy API; CudaBackend::allocate_scratch), not one per world. A world's
// team takes a free slot when its node starts and gives it back when the node
// ends; which slot it gets changes no result, because a node writes its
// scratch before reading it. The pool's fields are read from the __constant__
// Storage (orrery_storage), never from a staged block's copy.
// codegen.cpp pastes this file into every generated kernel source (it is not
// #included); the embedding (embed_device.cmake) leaves out this first comment
// block and the blank line after it, and the rest is the source text exactly.

// Takes a free slot: a bit of the busy bitmap claimed with atomicOr. The scan
// starts at the share of the bitmap that matches this SM's place among the
// SMs, so teams of different SMs seldom contend for one word. The pool holds
// a slot for every team that can be resident, so one is free; a pool made
// smaller on purpose (GpuOptions::scratch_slots) makes the team wait here
// for a holder, which never waits on anything, to give one back.
__device__ __noinline__ unsigned char* orrery_scratch_take() {
    const orrery::Storage& g = orrery_storage();
    const unsigned slots = g.scratch_slots, words = (slots + 31u) / 32u;
    const unsigned tail = slots % 32u ? (1u << (slots % 32u)) - 1u : 0xffffffffu; // valid bits of the last word
    unsigned sm = 0, sms = 1;
    asm("mov.u32 %0, %%smid;" : "=r"(sm));
    asm("mov.u32 %0, %%nsmid;" : "=r"(sms));
    unsigned word = unsigned((unsigned long long)(sm % max(sms, 1u)) * slots / max(sms, 1u)) / 32u;
    for (;;) {
        for (unsigned k = 0; k < words; ++k, word = word + 1u == words ? 0u : word + 1u) {
            const unsigned valid = word + 1u == words ? tail : 0xffffffffu;
            unsigned seen = *reinterpret_cast<volatile unsigned*>(g.scratch_busy + word);
            while (unsigned free = ~seen & valid) {
                const unsigned b = unsigned(__ffs(int(free))) - 1u, bit = 1u << b;
                const unsigned before = atomicOr(g.scratch_busy + word, bit);
                if (!(before & bit)) {
                    __threadfence(); // the slot's last holder finished with it before giving it back
                    return g.scratch + (unsigned long long)(word * 32u + b) * g.scratch_slot_bytes;
                }
                seen = before | bit;
            }
        }
#if __CUDA_ARCH__ >= 700
        __nanosleep(200);
#endif
    }
}

// Gives slot `slot` back once the team's writes to it are done.
__device__ __forceinline__ void orrery_scratch_give_back(unsigned char* slot) {
    const orrery::Storage& g = orrery_storage();
    const unsigned i = unsigned((slot - g.scratch) / g.scratch_slot_bytes);
    __threadfence();
    atomicAnd(g.scratch_busy + i / 32u, ~(1u << (i % 32u)));
}

// A pool smaller than the resident teams (GpuOptions::scratch_slots: the
// backend then defines ORRERY_SCRATCH_MAY_WAIT) leaves the warp's threads
// apart after taking: a thread that holds a slot must not wait for one that
// is still taking, or 3 slots held by threads of 3 warps, each waiting at
// the __syncwarp below for a warp-mate that waits for a slot, would never be
// given back (Module.GpuMatchesTheCpuInEveryKernelForm hung so).
#if defined(ORRERY_SCRATCH_MAY_WAIT)
#define ORRERY_SCRATCH_MEET(together) (void)(together)
#else
#define ORRERY_SCRATCH_MEET(together) __syncwarp(together)
#endif

// A per-world node with scratch on world w: take a slot, run, give it back.
// The warp's threads meet again after taking (orrery_scratch_take's loop ends
// at different times in different threads): without it they would run the
// node apart, each group issuing its own instructions, for the whole node.
template <auto F>
__device__ __forceinline__ void orrery_run_world_scratch(const orrery::Storage& s, orrery::uint32_t w) {
    const unsigned together = __activemask(); // the threads that start this node together
    unsigned char* slot = orrery_scratch_take();
    ORRERY_SCRATCH_MEET(together);
    orrery::run_world<F>(s, w, slot);
    orrery_scratch_give_back(slot);
}

// A team node with scratch: the team's lane 0 takes the slot and hands it to
// its lanes (consecutive threads of one warp); after a sync it gives it back.
// The teams sharing a warp meet again after taking: their lane 0s leave the
// take at different times, and teams left apart issue the whole node's
// instructions twice, once per team (the H200 profile of phys::simulate:
// 8.4 threads a warp instruction, against 13.3 before step scratch).
// `shared`: the team's region of the block's shared memory for the scratch
// it keeps on chip (EnvSpec::scratch_shared), or null.
template <auto F>
__device__ __forceinline__ void orrery_run_team_scratch(const orrery::Storage& s, orrery::uint32_t w,
                                                        const orrery::Lanes& l, unsigned char* shared = nullptr) {
    const unsigned together = __activemask(); // the warp's threads that start this node together
    unsigned long long slot = 0;
    if (l.lane == 0) slot = reinterpret_cast<unsigned long long>(orrery_scratch_take());
    if (l.count > 1) slot = __shfl_sync(l.mask, slot, (threadIdx.x & 31u) - l.lane);
    ORRERY_SCRATCH_MEET(together);
    orrery::run_world_team<F>(s, w, l, reinterpret_cast<unsigned char*>(slot), shared);
    l.sync(); // every lane is done with the slot
    if (l.lane == 0) orrery_scratch_give_back(reinterpret_cast<unsigned char*>(slot));
}

// The team's region of the block's dynamic shared memory for the scratch it
// keeps on chip: Storage::scratch_shared_team_bytes a team (the components
// the backend found room for), a team a warp (the per-node form's aligned
// kernels), or null when there is none or the launch gave the block too
// little for this team (the backend gives none when GpuOptions::team_shared
// is off or nothing fits; the node then finds that scratch in its slot).
extern __shared__ __align__(16) unsigned char orrery_team_shared[];
__device__ __forceinline__ unsigned char* orrery_team_shared_region() {
    const unsigned bytes = orrery_storage().scratch_shared_team_bytes;
    unsigned given = 0;
    asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(given));
    const unsigned team = threadIdx.x / 32u;
    return bytes && (team + 1u) * bytes <= given ? orrery_team_shared + team * bytes : nullptr;
}
