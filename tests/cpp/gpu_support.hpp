#pragma once
// Shared by the CUDA tests: they need a GPU and NVRTC, and skip, saying why,
// where either is missing (CI has neither GPU nor driver).

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"

/// Empty when a GPU and NVRTC are usable, else why not.
inline std::string gpu_unavailable() {
    try {
        orrery::cuda::device_info(0);
        orrery::cuda::nvrtc();
        return "";
    } catch (const orrery::Error& e) { return e.what(); }
}

/// Skips the current test, with the reason, when gpu_unavailable() says so.
#define REQUIRE_GPU()                                                                                                  \
    do {                                                                                                               \
        std::string why_ = gpu_unavailable();                                                                          \
        if (!why_.empty()) GTEST_SKIP() << "no usable GPU: " << why_;                                                  \
    } while (0)

/// Compiles `k`, generated for `s`, with NVRTC for sm_90 past the compile
/// cache as the CUDA backend does (the per-node form: each kernel its own
/// program, in parallel) and expects cubins (ELF images) holding the kernels;
/// a compile error fails the test with NVRTC's message and the generated
/// source. Needs NVRTC only, no GPU.
inline void expect_nvrtc_compiles(const orrery::EnvSpec& s, const orrery::cuda::KernelSource& k) {
    std::vector<orrery::cuda::CompileRequest> reqs =
        k.per_node ? orrery::cuda::node_requests(s, k, 90)
                   : std::vector<orrery::cuda::CompileRequest>{orrery::cuda::kernel_request(s, k, 90)};
    for (orrery::cuda::CompileRequest& r : reqs) r.use_cache = false;
    try {
        std::vector<orrery::cuda::CompiledModule> ms = orrery::cuda::compile_modules(reqs);
        ASSERT_EQ(ms.size(), reqs.size());
        std::string all;
        for (const orrery::cuda::CompiledModule& m : ms) {
            EXPECT_EQ(m.cubin.substr(0, 4), "\x7f"
                                            "ELF");
            all += m.cubin;
        }
        for (const auto* names : {&k.step_kernels, &k.reset_kernels})
            for (const std::string& n : *names) EXPECT_NE(all.find(n), std::string::npos) << n;
    } catch (const orrery::Error& e) { FAIL() << e.what() << "\n--- generated source ---\n" << k.text; }
}
