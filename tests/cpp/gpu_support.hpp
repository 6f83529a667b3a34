#pragma once
// Shared by the CUDA tests: they need a GPU and NVRTC, and skip, saying why,
// where either is missing (CI has neither GPU nor driver).

#include <gtest/gtest.h>

#include <string>

#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"

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
