// Device-side entity creation and destruction under contention: many threads
// of one block create entities in the same world at once (the atomics in
// ecs/storage.hpp's create_in), past capacity, then destroy half and reuse the
// freed rows through the free list. Compiled with NVRTC and launched directly,
// so the allocator is tested with real concurrency, not one thread per world.

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "gpu_support.hpp"

#define CHURN_STR2(...) #__VA_ARGS__
#define CHURN_STR(...) CHURN_STR2(__VA_ARGS__)
// One env text for the host and NVRTC, so both see the same component ids.
#define CHURN_ENV                                                                                                      \
    struct Value {                                                                                                     \
        orrery::uint32_t v;                                                                                            \
    };                                                                                                                 \
    ORRERY_COMPONENTS(Value);                                                                                          \
    ORRERY_ARCHETYPE(Thing, Value);                                                                                    \
    ORRERY_ARCHETYPES(Thing);

namespace churn {
CHURN_ENV
constexpr uint32_t kCapacity = 256;
orrery::EnvSpec make_spec() {
    orrery::EnvSpec s = ORRERY_ENV_SPEC("churn", "");
    s.archetype<Thing>(kCapacity);
    return s;
}
} // namespace churn

namespace {

using namespace orrery::cuda;

const char* kKernels = R"(
extern "C" __global__ void create_many(const orrery::Storage* s, orrery::Entity* out, unsigned per_world) {
    const unsigned w = blockIdx.x;
    orrery::WorldView view(*s, w);
    for (unsigned i = threadIdx.x; i < per_world; i += blockDim.x) {
        orrery::Entity e = view.create<churn::Thing>();
        out[w * per_world + i] = e;
        if (!e.is_null()) view.get<churn::Value>(e)->v = i + 1;
    }
}
extern "C" __global__ void destroy_odd(const orrery::Storage* s, const orrery::Entity* h, unsigned per_world) {
    const unsigned w = blockIdx.x;
    orrery::WorldView view(*s, w);
    for (unsigned i = threadIdx.x; i < per_world; i += blockDim.x) {
        orrery::Entity e = h[w * per_world + i];
        churn::Value* v = view.get<churn::Value>(e);
        if (v && (v->v & 1u)) view.destroy(e);
    }
}
extern "C" __global__ void barrier(const orrery::Storage* s) {
    if (threadIdx.x == 0) orrery::apply_destroys(*s, blockIdx.x);
}
)";

struct Device {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CUmodule module = nullptr;
    std::vector<CUdeviceptr> blocks;
    ~Device() {
        const DriverApi& d = driver();
        for (CUdeviceptr p : blocks) d.cuMemFree(p);
        if (module) d.cuModuleUnload(module);
        if (ctx) d.cuDevicePrimaryCtxRelease(dev);
    }
    CUdeviceptr alloc(size_t n) {
        CUdeviceptr p = 0;
        ORRERY_CU(driver().cuMemAlloc(&p, n));
        blocks.push_back(p);
        ORRERY_CU(driver().cuMemsetD8Async(p, 0, n, nullptr));
        return p;
    }
    template <class T> std::vector<T> read(const void* p, size_t count) {
        std::vector<T> out(count);
        ORRERY_CU(driver().cuMemcpyDtoHAsync(out.data(), CUdeviceptr(p), count * sizeof(T), nullptr));
        ORRERY_CU(driver().cuStreamSynchronize(nullptr));
        return out;
    }
    void launch(const char* name, unsigned worlds, void** params) {
        CUfunction f = nullptr;
        ORRERY_CU(driver().cuModuleGetFunction(&f, module, name));
        ORRERY_CU(driver().cuLaunchKernel(f, worlds, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr));
        ORRERY_CU(driver().cuStreamSynchronize(nullptr));
    }
};

} // namespace

/// The test kernels, compiled for the GPU present (or sm_90): NVRTC needs no
/// GPU, so this part runs wherever NVRTC is installed.
CompiledModule compile_kernels() {
    CompileRequest req;
    req.label = "allocator test kernels";
    req.source = std::string("#include \"engine/world_ops.hpp\"\nnamespace churn {\n") + CHURN_STR(CHURN_ENV) +
                 "\n}\n" + kKernels;
    req.arch = gpu_unavailable().empty() ? device_info(0).arch : 90;
    req.use_cache = false;
    return compile_module(req);
}

TEST(CudaAlloc, CreateAndDestroyUnderContention) {
    try {
        nvrtc();
    } catch (const orrery::Error& e) { GTEST_SKIP() << e.what(); }
    CompiledModule m = compile_kernels();
    if (std::string why = gpu_unavailable(); !why.empty()) GTEST_SKIP() << "no usable GPU: " << why;
    const DriverApi& d = driver();
    Device dv;
    ORRERY_CU(d.cuDeviceGet(&dv.dev, 0));
    ORRERY_CU(d.cuDevicePrimaryCtxRetain(&dv.ctx, dv.dev));
    ORRERY_CU(d.cuCtxSetCurrent(dv.ctx));
    ORRERY_CU(d.cuModuleLoadData(&dv.module, m.cubin.data()));

    const uint32_t W = 64, first = 300, second = 200, cap = churn::kCapacity;
    orrery::StorageLayout layout = orrery::make_layout(churn::make_spec(), W, orrery::AutoReset::kNextStep);
    orrery::Storage s = layout.bind(reinterpret_cast<uint8_t*>(dv.alloc(layout.total_bytes)), nullptr);
    CUdeviceptr sp = dv.alloc(sizeof(s));
    ORRERY_CU(d.cuMemcpyHtoDAsync(sp, &s, sizeof(s), nullptr));
    CUdeviceptr handles = dv.alloc(sizeof(orrery::Entity) * W * first);
    const orrery::ArchetypeTable& t = s.tables[0];

    // 300 threads' worth of creates race for 256 rows in each world.
    unsigned n = first;
    void* p1[] = {&sp, &handles, &n};
    dv.launch("create_many", W, p1);
    auto h = dv.read<orrery::Entity>(reinterpret_cast<void*>(handles), W * first);
    auto live = dv.read<uint32_t>(t.live, W);
    auto errors = dv.read<uint32_t>(s.errors, W);
    for (uint32_t w = 0; w < W; ++w) {
        std::set<uint32_t> rows;
        for (uint32_t i = 0; i < first; ++i)
            if (!h[w * first + i].is_null()) rows.insert(h[w * first + i].row());
        ASSERT_EQ(rows.size(), cap) << "world " << w << ": every row handed out once";
        EXPECT_LT(*rows.rbegin(), cap);
        EXPECT_EQ(live[w], cap);
        EXPECT_EQ(errors[w], uint32_t(orrery::ErrorCode::kCapacityOverflow));
    }

    // Destroy the entities holding odd values, concurrently, then the barrier.
    void* p2[] = {&sp, &handles, &n};
    dv.launch("destroy_odd", W, p2);
    void* p3[] = {&sp};
    dv.launch("barrier", W, p3);
    live = dv.read<uint32_t>(t.live, W);
    auto free_top = dv.read<int32_t>(t.free_top, W);
    auto gens = dv.read<uint32_t>(t.generation, size_t(W) * cap);
    std::vector<std::set<uint32_t>> freed(W);
    for (uint32_t w = 0; w < W; ++w) {
        uint32_t odd = 0;
        for (uint32_t i = 0; i < first; ++i) {
            orrery::Entity e = h[w * first + i];
            if (e.is_null() || !((i + 1) & 1u)) continue;
            ++odd;
            freed[w].insert(e.row());
            EXPECT_EQ(gens[w * cap + e.row()], e.gen + 1) << "a destroyed row's generation moves on";
        }
        EXPECT_EQ(live[w], cap - odd);
        EXPECT_EQ(uint32_t(free_top[w]), odd);
    }

    // 200 creates race for the freed rows: exactly those rows come back, once each.
    ORRERY_CU(d.cuMemsetD8Async(CUdeviceptr(s.errors), 0, W * 4, nullptr));
    n = second;
    void* p4[] = {&sp, &handles, &n};
    dv.launch("create_many", W, p4);
    h = dv.read<orrery::Entity>(reinterpret_cast<void*>(handles), W * second);
    live = dv.read<uint32_t>(t.live, W);
    errors = dv.read<uint32_t>(s.errors, W);
    gens = dv.read<uint32_t>(t.generation, size_t(W) * cap);
    for (uint32_t w = 0; w < W; ++w) {
        std::set<uint32_t> rows;
        for (uint32_t i = 0; i < second; ++i) {
            orrery::Entity e = h[w * second + i];
            if (e.is_null()) continue;
            EXPECT_TRUE(rows.insert(e.row()).second) << "world " << w << " row " << e.row() << " given twice";
            EXPECT_EQ(e.gen, gens[w * cap + e.row()]);
        }
        EXPECT_EQ(rows, freed[w]) << "world " << w;
        EXPECT_EQ(live[w], cap);
        EXPECT_EQ(errors[w], freed[w].size() < second ? uint32_t(orrery::ErrorCode::kCapacityOverflow) : 0u);
    }
}
