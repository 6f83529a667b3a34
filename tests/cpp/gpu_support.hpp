#pragma once
// Shared by the CUDA tests: they need a GPU and NVRTC, and skip, saying why,
// where either is missing (CI has neither GPU nor driver).

#include <gtest/gtest.h>

#include <string>

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
/// cache and expects a cubin (an ELF image); a compile error fails the test
/// with NVRTC's message and the generated source. Needs NVRTC only, no GPU.
inline void expect_nvrtc_compiles(const orrery::EnvSpec& s, const orrery::cuda::KernelSource& k) {
    orrery::cuda::CompileRequest req = orrery::cuda::kernel_request(s, k, 90); // the env's header root too
    req.use_cache = false;
    try {
        EXPECT_EQ(orrery::cuda::compile_module(req).cubin.substr(0, 4), "\x7f"
                                                                        "ELF");
    } catch (const orrery::Error& e) { FAIL() << e.what() << "\n--- generated source ---\n" << k.text; }
}
