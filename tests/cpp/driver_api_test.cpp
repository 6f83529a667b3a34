// engine/cuda/driver_api.hpp declares the few driver types Orrery passes by
// pointer instead of including cuda.h (DESIGN decision 10). Where the toolkit's
// cuda.h is present (CI has it), their layouts are checked against it here: a
// mismatch would hand the driver garbage at launch time, on the GPU only.

#include <gtest/gtest.h>

#include <cstddef>

#include "engine/cuda/driver_api.hpp"

#if defined(ORRERY_HAVE_CUDA_H)
#include <cuda.h>

namespace oc = orrery::cuda;

TEST(DriverApi, LaunchConfigMatchesCudaH) {
    static_assert(sizeof(oc::CUlaunchConfig) == sizeof(::CUlaunchConfig));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, grid_x), offsetof(::CUlaunchConfig, gridDimX));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, block_x), offsetof(::CUlaunchConfig, blockDimX));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, shared_bytes), offsetof(::CUlaunchConfig, sharedMemBytes));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, stream), offsetof(::CUlaunchConfig, hStream));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, attrs), offsetof(::CUlaunchConfig, attrs));
    EXPECT_EQ(offsetof(oc::CUlaunchConfig, num_attrs), offsetof(::CUlaunchConfig, numAttrs));
}

TEST(DriverApi, LaunchAttributeMatchesCudaH) {
    static_assert(sizeof(oc::CUlaunchAttribute) == sizeof(::CUlaunchAttribute));
    EXPECT_EQ(offsetof(oc::CUlaunchAttribute, value), offsetof(::CUlaunchAttribute, value));
    EXPECT_EQ(oc::kLaunchAttrProgrammaticStreamSerialization,
              int(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION));
    ::CUlaunchAttribute theirs{};
    EXPECT_EQ(static_cast<const void*>(&theirs.value.programmaticStreamSerializationAllowed),
              static_cast<const void*>(&theirs.value));
}

TEST(DriverApi, EnumValuesMatchCudaH) {
    EXPECT_EQ(oc::kAttrMultiprocessorCount, int(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT));
    EXPECT_EQ(oc::kAttrComputeMajor, int(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR));
    EXPECT_EQ(oc::kAttrComputeMinor, int(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR));
    EXPECT_EQ(oc::kAttrMaxSharedPerBlockOptin, int(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
    EXPECT_EQ(oc::kAttrMaxSharedPerMultiprocessor, int(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
    EXPECT_EQ(oc::kFuncAttrMaxDynamicShared, int(CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES));
    EXPECT_EQ(oc::kStreamNonBlocking, unsigned(CU_STREAM_NON_BLOCKING));
    EXPECT_EQ(oc::kEventDisableTiming, unsigned(CU_EVENT_DISABLE_TIMING));
    EXPECT_EQ(oc::kCaptureModeThreadLocal, int(CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    EXPECT_EQ(oc::kCudaErrorOutOfMemory, int(CUDA_ERROR_OUT_OF_MEMORY));
    EXPECT_EQ(oc::kCudaErrorSystemDriverMismatch, int(CUDA_ERROR_SYSTEM_DRIVER_MISMATCH));
    EXPECT_EQ(oc::kCudaErrorNoDevice, int(CUDA_ERROR_NO_DEVICE));
    EXPECT_EQ(oc::kCudaErrorUnsupportedPtxVersion, int(CUDA_ERROR_UNSUPPORTED_PTX_VERSION));
    EXPECT_EQ(oc::kCudaErrorNotReady, int(CUDA_ERROR_NOT_READY));
}
#else
TEST(DriverApi, LaunchConfigMatchesCudaH) { GTEST_SKIP() << "no cuda.h at configure time (CUDA toolkit absent)"; }
#endif
