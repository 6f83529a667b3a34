// The Storage struct every generated kernel reads: one __constant__ copy per
// module, set once by the host after the module loads (CudaBackend::load_module).
// codegen.cpp pastes this file into every generated kernel source (it is not
// #included); the embedding (embed_device.cmake) leaves out this first comment
// block and the blank line after it, and the rest is the source text exactly.

__constant__ __align__(16) unsigned char orrery_storage_bytes[sizeof(orrery::Storage)];

__device__ __forceinline__ const orrery::Storage& orrery_storage() {
    return *reinterpret_cast<const orrery::Storage*>(orrery_storage_bytes);
}
