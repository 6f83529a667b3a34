// The Storage struct every generated kernel reads: one __constant__ copy per
// module, set once by the host after the module loads (CudaBackend::load_module).
// codegen.cpp pastes this file into every generated kernel source (it is not
// #included); the embedding (embed_device.cmake) leaves out this first comment
// block and the blank line after it, and the rest is the source text exactly.

__constant__ __align__(16) unsigned char orrery_storage_bytes[sizeof(orrery::Storage)];

__device__ __forceinline__ const orrery::Storage& orrery_storage() {
    return *reinterpret_cast<const orrery::Storage*>(orrery_storage_bytes);
}

// A node's own kernel (the per-node form) under the env's register bound
// (EnvSpec::bound_registers): at most `n` registers a thread, where NVRTC
// has __maxnreg__ (12.4 and newer); otherwise, and with
// -DORRERY_CUDA_NODE_REGS=0 (an NVRTC define, for measuring against), the
// compiler's choice and the block's bound, as every other kernel.
#ifndef ORRERY_CUDA_NODE_REGS
#define ORRERY_CUDA_NODE_REGS 1
#endif
#if ORRERY_CUDA_NODE_REGS && (__CUDACC_VER_MAJOR__ > 12 || (__CUDACC_VER_MAJOR__ == 12 && __CUDACC_VER_MINOR__ >= 4))
#define ORRERY_NODE_REGS(n, ...) __maxnreg__(n)
#else
#define ORRERY_NODE_REGS(n, ...) __VA_ARGS__
#endif

// Programmatic dependent launch (sm_90+): CudaBackend launches the staged
// passes and the per-node kernels with it, so a kernel may be launched while
// the one before it still runs. It waits here, before it reads or writes any
// world, until the kernel before has finished and its writes are visible.
// Without the launch attribute these are no-ops.
__device__ __forceinline__ void orrery_wait_for_previous_pass() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

// Lets the kernel after this one launch once every block of this one has
// called it: its blocks are then dispatched (and wait at
// orrery_wait_for_previous_pass) while this one runs. A staged pass calls it
// after its blocks have loaded their worlds (docs/perf-notes.md, row 26), a
// per-node kernel right after its wait, so at most one kernel waits ahead of
// the running one.
__device__ __forceinline__ void orrery_let_next_pass_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

// Lane `lane` of a world's team of `count` threads (a power of two up to 32,
// consecutive and aligned within one warp): the Lanes an ORRERY_PER_WORLD_TEAM
// system gets, its sync() a __syncwarp over exactly those threads.
__device__ __forceinline__ orrery::Lanes orrery_lanes(unsigned lane, unsigned count) {
    orrery::Lanes l;
    l.lane = lane;
    l.count = count;
    l.mask = count >= 32u ? 0xffffffffu : ((1u << count) - 1u) << ((threadIdx.x & 31u) - lane);
    return l;
}

// The same for a per-node kernel whose teams are whole warps, with the
// threads of the block's teams that run the node (__syncthreads_count before
// it starts): Lanes::align() meets them. -DORRERY_SCRATCH_MAY_WAIT (the
// backend adds it when GpuOptions::scratch_slots makes teams wait for a
// slot, which a team held at the barrier would never give back) or
// -DORRERY_NO_BLOCK_ALIGN (for measuring against) leaves align() a no-op.
__device__ __forceinline__ orrery::Lanes orrery_lanes_in_block(unsigned lane, unsigned count, unsigned block_threads) {
    orrery::Lanes l = orrery_lanes(lane, count);
#if !defined(ORRERY_NO_BLOCK_ALIGN) && !defined(ORRERY_SCRATCH_MAY_WAIT)
    l.block_threads = block_threads;
#else
    (void)block_threads;
#endif
    return l;
}

// A team's size in the staged kernel, which gives each world `lanes` threads
// (not always a power of two): the largest power of two within lanes and a warp.
__device__ __forceinline__ unsigned orrery_team_lanes(unsigned lanes) {
    unsigned p = 1u;
    while (p * 2u <= lanes && p < 32u) p *= 2u;
    return p;
}
