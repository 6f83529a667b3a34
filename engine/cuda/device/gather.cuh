// The kernel that gathers one world's regions into a staging buffer for a
// snapshot (CudaBackend::request_snapshot), compiled on its own at the first request.
// cuda_backend.cpp compiles this file's text as a whole source; the embedding
// (embed_device.cmake) leaves out this first comment block and the blank line
// after it, and the rest is the source text exactly.

// One block per region copies world `world`'s bytes of that region into `out`.
struct GatherRegion {
    unsigned long long src, bytes, dst;
};
struct GatherTable {
    unsigned long long world, count;
    GatherRegion regions[64];
};
extern "C" __global__ void orrery_gather_world(const __grid_constant__ GatherTable t, unsigned char* out) {
    const GatherRegion g = t.regions[blockIdx.x];
    const unsigned char* src = reinterpret_cast<const unsigned char*>(g.src) + g.bytes * t.world;
    for (unsigned long long i = threadIdx.x; i < g.bytes; i += blockDim.x) out[g.dst + i] = src[i];
}
