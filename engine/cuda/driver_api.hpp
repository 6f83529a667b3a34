#pragma once
// The CUDA driver API and NVRTC, loaded with dlopen at first use (DESIGN
// decision 10: the library links neither, so it loads on machines without a
// driver). Only the handful of types and enum values Orrery needs are declared
// here; every call goes through ORRERY_CU / ORRERY_NVRTC, which throw an
// orrery::Error naming the file, line, call and error (plus NVRTC's log).

#include <cstddef>
#include <string>

namespace orrery::cuda {

// --- driver API subset (values match cuda.h) --------------------------------
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st*;
using CUmodule = struct CUmod_st*;
using CUfunction = struct CUfunc_st*;
using CUstream = struct CUstream_st*;
using CUgraph = struct CUgraph_st*;
using CUgraphExec = struct CUgraphExec_st*;
using CUevent = struct CUevent_st*;

inline constexpr CUresult kCudaSuccess = 0;
inline constexpr CUresult kCudaErrorOutOfMemory = 2;
inline constexpr CUresult kCudaErrorSystemDriverMismatch = 803;
inline constexpr CUresult kCudaErrorNoDevice = 100;
inline constexpr CUresult kCudaErrorUnsupportedPtxVersion = 222;
inline constexpr CUresult kCudaErrorNotReady = 600;
inline constexpr int kAttrMultiprocessorCount = 16;
inline constexpr int kLimitPrintfFifoSize = 1; ///< CU_LIMIT_PRINTF_FIFO_SIZE
inline constexpr int kAttrComputeMajor = 75;
inline constexpr int kAttrComputeMinor = 76;
inline constexpr int kAttrMaxSharedPerBlockOptin = 97;
inline constexpr int kAttrMaxSharedPerMultiprocessor = 81;
inline constexpr int kFuncAttrMaxDynamicShared = 8;
inline constexpr unsigned kStreamNonBlocking = 1;
inline constexpr unsigned kEventDisableTiming = 2;
inline constexpr int kCaptureModeThreadLocal = 1;
/// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: the launch may start
/// before the kernel ahead of it in the stream has finished (programmatic
/// dependent launch, sm_90+); the kernel's griddepcontrol.wait orders it.
inline constexpr int kLaunchAttrProgrammaticStreamSerialization = 6;

/// cuda.h's CUlaunchAttribute: an id, padding to 8 bytes, a 64-byte value union.
struct CUlaunchAttribute {
    int id;
    char pad[4];
    union {
        char bytes[64];
        int programmatic_stream_serialization_allowed;
    } value;
};
static_assert(sizeof(CUlaunchAttribute) == 72, "must match cuda.h's CUlaunchAttribute");
/// cuda.h's CUlaunchConfig.
struct CUlaunchConfig {
    unsigned grid_x, grid_y, grid_z, block_x, block_y, block_z, shared_bytes;
    CUstream stream;
    CUlaunchAttribute* attrs;
    unsigned num_attrs;
};
static_assert(sizeof(CUlaunchConfig) == 56, "must match cuda.h's CUlaunchConfig");

/// Driver entry points, resolved by name (the _v2 symbols where cuda.h maps to them).
struct DriverApi {
    CUresult (*cuInit)(unsigned);
    CUresult (*cuDriverGetVersion)(int*);
    CUresult (*cuGetErrorName)(CUresult, const char**);
    CUresult (*cuGetErrorString)(CUresult, const char**);
    CUresult (*cuDeviceGetCount)(int*);
    CUresult (*cuDeviceGet)(CUdevice*, int);
    CUresult (*cuDeviceGetName)(char*, int, CUdevice);
    CUresult (*cuDeviceGetAttribute)(int*, int, CUdevice);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext*, CUdevice);
    CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
    CUresult (*cuCtxSetCurrent)(CUcontext);
    CUresult (*cuCtxSetLimit)(int, size_t);
    CUresult (*cuMemAlloc)(CUdeviceptr*, size_t);
    CUresult (*cuMemFree)(CUdeviceptr);
    CUresult (*cuMemGetInfo)(size_t*, size_t*);
    CUresult (*cuMemsetD8Async)(CUdeviceptr, unsigned char, size_t, CUstream);
    CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void*, size_t, CUstream);
    CUresult (*cuMemcpyDtoHAsync)(void*, CUdeviceptr, size_t, CUstream);
    CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
    CUresult (*cuModuleLoadData)(CUmodule*, const void*);
    CUresult (*cuModuleUnload)(CUmodule);
    CUresult (*cuModuleGetFunction)(CUfunction*, CUmodule, const char*);
    CUresult (*cuModuleGetGlobal)(CUdeviceptr*, size_t*, CUmodule, const char*);
    CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
    CUresult (*cuOccupancyMaxActiveBlocksPerMultiprocessor)(int*, CUfunction, int, size_t);
    CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                               CUstream, void**, void**);
    /// CUDA 12.0+; null when the driver lacks it (then no programmatic launches).
    CUresult (*cuLaunchKernelEx)(const CUlaunchConfig*, CUfunction, void**, void**);
    CUresult (*cuStreamCreate)(CUstream*, unsigned);
    CUresult (*cuStreamDestroy)(CUstream);
    CUresult (*cuStreamSynchronize)(CUstream);
    CUresult (*cuStreamBeginCapture)(CUstream, int);
    /// Optional: *status 0 when `stream` is not being captured (1 active, 2 invalidated).
    CUresult (*cuStreamIsCapturing)(CUstream, int* status);
    CUresult (*cuStreamEndCapture)(CUstream, CUgraph*);
    CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec*, CUgraph, unsigned long long);
    CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
    CUresult (*cuGraphExecDestroy)(CUgraphExec);
    CUresult (*cuGraphDestroy)(CUgraph);
    /// Optional (tests count a captured graph's nodes): nodes may be null to count only.
    CUresult (*cuGraphGetNodes)(CUgraph, void** nodes, size_t* count);
    CUresult (*cuMemAllocHost)(void**, size_t);
    CUresult (*cuMemFreeHost)(void*);
    CUresult (*cuEventCreate)(CUevent*, unsigned);
    CUresult (*cuEventDestroy)(CUevent);
    CUresult (*cuEventRecord)(CUevent, CUstream);
    CUresult (*cuEventQuery)(CUevent);
    CUresult (*cuEventSynchronize)(CUevent);
    CUresult (*cuStreamWaitEvent)(CUstream, CUevent, unsigned);
};

// --- NVRTC subset -----------------------------------------------------------
using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;

/// NVRTC entry points.
struct NvrtcApi {
    nvrtcResult (*nvrtcVersion)(int*, int*);
    const char* (*nvrtcGetErrorString)(nvrtcResult);
    nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
    nvrtcResult (*nvrtcGetSupportedArchs)(int*);
    nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                      const char* const*);
    nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
    nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
    nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, size_t*);
    nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
    nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, size_t*);
    nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
};

/// The driver API, loaded and initialised (cuInit) once. Throws orrery::Error
/// with a clear reason when there is no driver, it is too old, or no device.
const DriverApi& driver();
/// The driver's CUDA version as major * 1000 + minor * 10 (driver() first).
int driver_version();
/// NVRTC, loaded once. Throws orrery::Error listing the paths tried.
const NvrtcApi& nvrtc();
/// NVRTC's version as major * 1000 + minor * 10.
int nvrtc_version();
/// Path NVRTC was loaded from (for logs).
const std::string& nvrtc_path();

/// Throws orrery::Error for a failed driver call: "file:line: call: NAME (text)".
void check_cu(CUresult r, const char* call, const char* file, int line);
/// Throws orrery::Error for a failed NVRTC call, with the program's log if any.
void check_nvrtc(nvrtcResult r, const char* call, const char* file, int line, nvrtcProgram prog);
/// "CUDA_ERROR_X (text)" for a driver result.
std::string cu_error_text(CUresult r);

} // namespace orrery::cuda

/// Checks a driver API call: ORRERY_CU(driver().cuMemAlloc(&p, n)).
#define ORRERY_CU(call) ::orrery::cuda::check_cu((call), #call, __FILE__, __LINE__)
/// Checks an NVRTC call; `prog` (or nullptr) supplies the compile log.
#define ORRERY_NVRTC(call, prog) ::orrery::cuda::check_nvrtc((call), #call, __FILE__, __LINE__, (prog))
