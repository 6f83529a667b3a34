// Run-time loading of the CUDA driver and NVRTC, and the error checks every
// call goes through. Nothing here links against CUDA: a machine without a
// driver gets a clear orrery::Error when (and only when) a GPU is asked for.

#include "engine/cuda/driver_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <vector>

#include "engine/error.hpp"

namespace orrery::cuda {

namespace {

template <class F> void resolve(void* lib, F& fn, const char* name, std::string& missing) {
    fn = reinterpret_cast<F>(dlsym(lib, name));
    if (!fn) missing += std::string(missing.empty() ? "" : ", ") + name;
}

struct DriverState {
    DriverApi api{};
    int version = 0;
    std::string error; ///< non-empty when loading failed
};

void load_driver_symbols(void* lib, DriverApi& a, std::string& missing) {
    resolve(lib, a.cuInit, "cuInit", missing);
    resolve(lib, a.cuDriverGetVersion, "cuDriverGetVersion", missing);
    resolve(lib, a.cuGetErrorName, "cuGetErrorName", missing);
    resolve(lib, a.cuGetErrorString, "cuGetErrorString", missing);
    resolve(lib, a.cuDeviceGetCount, "cuDeviceGetCount", missing);
    resolve(lib, a.cuDeviceGet, "cuDeviceGet", missing);
    resolve(lib, a.cuDeviceGetName, "cuDeviceGetName", missing);
    resolve(lib, a.cuDeviceGetAttribute, "cuDeviceGetAttribute", missing);
    resolve(lib, a.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain", missing);
    resolve(lib, a.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2", missing);
    resolve(lib, a.cuCtxSetCurrent, "cuCtxSetCurrent", missing);
    resolve(lib, a.cuCtxSetLimit, "cuCtxSetLimit", missing);
    resolve(lib, a.cuMemAlloc, "cuMemAlloc_v2", missing);
    resolve(lib, a.cuMemFree, "cuMemFree_v2", missing);
    resolve(lib, a.cuMemGetInfo, "cuMemGetInfo_v2", missing);
    resolve(lib, a.cuMemsetD8Async, "cuMemsetD8Async", missing);
    resolve(lib, a.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2", missing);
    resolve(lib, a.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2", missing);
    resolve(lib, a.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2", missing);
    resolve(lib, a.cuModuleLoadData, "cuModuleLoadData", missing);
    resolve(lib, a.cuModuleUnload, "cuModuleUnload", missing);
    resolve(lib, a.cuModuleGetFunction, "cuModuleGetFunction", missing);
    resolve(lib, a.cuModuleGetGlobal, "cuModuleGetGlobal_v2", missing);
    resolve(lib, a.cuFuncSetAttribute, "cuFuncSetAttribute", missing);
    resolve(lib, a.cuOccupancyMaxActiveBlocksPerMultiprocessor, "cuOccupancyMaxActiveBlocksPerMultiprocessor", missing);
    resolve(lib, a.cuLaunchKernel, "cuLaunchKernel", missing);
    std::string optional; // entry points Orrery works without
    resolve(lib, a.cuLaunchKernelEx, "cuLaunchKernelEx", optional);
    resolve(lib, a.cuStreamCreate, "cuStreamCreate", missing);
    resolve(lib, a.cuStreamDestroy, "cuStreamDestroy_v2", missing);
    resolve(lib, a.cuStreamSynchronize, "cuStreamSynchronize", missing);
    resolve(lib, a.cuStreamBeginCapture, "cuStreamBeginCapture_v2", missing);
    resolve(lib, a.cuStreamEndCapture, "cuStreamEndCapture", missing);
    resolve(lib, a.cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags", missing);
    resolve(lib, a.cuGraphLaunch, "cuGraphLaunch", missing);
    resolve(lib, a.cuGraphExecDestroy, "cuGraphExecDestroy", missing);
    resolve(lib, a.cuGraphDestroy, "cuGraphDestroy", missing);
    resolve(lib, a.cuGraphGetNodes, "cuGraphGetNodes", optional);
    resolve(lib, a.cuStreamIsCapturing, "cuStreamIsCapturing", optional);
    resolve(lib, a.cuMemAllocHost, "cuMemAllocHost_v2", missing);
    resolve(lib, a.cuMemFreeHost, "cuMemFreeHost", missing);
    resolve(lib, a.cuEventCreate, "cuEventCreate", missing);
    resolve(lib, a.cuEventDestroy, "cuEventDestroy_v2", missing);
    resolve(lib, a.cuEventRecord, "cuEventRecord", missing);
    resolve(lib, a.cuEventQuery, "cuEventQuery", missing);
    resolve(lib, a.cuEventSynchronize, "cuEventSynchronize", missing);
    resolve(lib, a.cuStreamWaitEvent, "cuStreamWaitEvent", missing);
}

std::string init_message(CUresult r) {
    if (r == kCudaErrorNoDevice) return "the NVIDIA driver found no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)";
    if (r == kCudaErrorSystemDriverMismatch)
        return "the NVIDIA driver library libcuda.so.1 and the loaded kernel module are different versions (cuInit: "
               "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH); reboot, or reinstall the driver";
    return "cuInit failed with CUDA error " + std::to_string(r);
}

DriverState load_driver() {
    DriverState st;
    void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = dlerror();
        st.error = std::string("cannot load the NVIDIA driver library libcuda.so.1 (") + (why ? why : "?") +
                   "); is an NVIDIA driver installed?";
        return st;
    }
    std::string missing;
    load_driver_symbols(lib, st.api, missing);
    if (!missing.empty()) {
        st.error = "the NVIDIA driver is too old: libcuda.so.1 lacks " + missing +
                   " (Orrery needs a driver for CUDA 12.0 or newer)";
        return st;
    }
    CUresult r = st.api.cuInit(0);
    if (r != kCudaSuccess) {
        st.error = init_message(r);
        return st;
    }
    st.api.cuDriverGetVersion(&st.version);
    if (st.version < 12000)
        st.error = "the NVIDIA driver supports CUDA " + std::to_string(st.version / 1000) + "." +
                   std::to_string(st.version % 1000 / 10) + "; Orrery needs CUDA 12.0 or newer";
    return st;
}

const DriverState& driver_state() {
    static const DriverState st = load_driver();
    return st;
}

struct NvrtcState {
    NvrtcApi api{};
    int version = 0;
    std::string path, error;
};

/// Where NVRTC may be, first to last. ORRERY_NVRTC, like CUDA_HOME, locates a
/// library loaded once per process, so it is read here rather than being a
/// per-simulator option (docs/gpu.md, "Options").
std::vector<std::string> nvrtc_candidates() {
    std::vector<std::string> out;
    if (const char* p = std::getenv("ORRERY_NVRTC")) out.push_back(p);
    const char* names[] = {"libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so"};
    for (const char* n : names) out.push_back(n);
    std::vector<std::string> dirs;
    for (const char* var : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* d = std::getenv(var)) dirs.push_back(std::string(d) + "/lib64/");
    dirs.push_back("/usr/local/cuda/lib64/");
    for (const std::string& d : dirs)
        for (const char* n : names) out.push_back(d + n);
    return out;
}

void load_nvrtc_symbols(void* lib, NvrtcApi& a, std::string& missing) {
    resolve(lib, a.nvrtcVersion, "nvrtcVersion", missing);
    resolve(lib, a.nvrtcGetErrorString, "nvrtcGetErrorString", missing);
    resolve(lib, a.nvrtcGetNumSupportedArchs, "nvrtcGetNumSupportedArchs", missing);
    resolve(lib, a.nvrtcGetSupportedArchs, "nvrtcGetSupportedArchs", missing);
    resolve(lib, a.nvrtcCreateProgram, "nvrtcCreateProgram", missing);
    resolve(lib, a.nvrtcDestroyProgram, "nvrtcDestroyProgram", missing);
    resolve(lib, a.nvrtcCompileProgram, "nvrtcCompileProgram", missing);
    resolve(lib, a.nvrtcGetProgramLogSize, "nvrtcGetProgramLogSize", missing);
    resolve(lib, a.nvrtcGetProgramLog, "nvrtcGetProgramLog", missing);
    resolve(lib, a.nvrtcGetCUBINSize, "nvrtcGetCUBINSize", missing);
    resolve(lib, a.nvrtcGetCUBIN, "nvrtcGetCUBIN", missing);
}

NvrtcState load_nvrtc() {
    NvrtcState st;
    std::string tried;
    for (const std::string& c : nvrtc_candidates()) {
        void* lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            const char* why = dlerror();
            tried += "\n  " + c + ": " + (why ? why : "not found");
            continue;
        }
        std::string missing;
        load_nvrtc_symbols(lib, st.api, missing);
        if (!missing.empty()) {
            tried += "\n  " + c + ": lacks " + missing + " (NVRTC 12 or newer is needed)";
            continue;
        }
        int major = 0, minor = 0;
        st.api.nvrtcVersion(&major, &minor);
        st.version = major * 1000 + minor * 10;
        st.path = c;
        return st;
    }
    st.error = "cannot load NVRTC, which compiles the GPU megakernel at run time; install the CUDA "
               "toolkit (or the nvidia-cuda-nvrtc package) or set ORRERY_NVRTC to libnvrtc.so's path. Tried:" +
               tried;
    return st;
}

const NvrtcState& nvrtc_state() {
    static const NvrtcState st = load_nvrtc();
    return st;
}

} // namespace

const DriverApi& driver() {
    const DriverState& st = driver_state();
    if (!st.error.empty()) throw Error(st.error);
    return st.api;
}

int driver_version() {
    driver();
    return driver_state().version;
}

const NvrtcApi& nvrtc() {
    const NvrtcState& st = nvrtc_state();
    if (!st.error.empty()) throw Error(st.error);
    return st.api;
}

int nvrtc_version() {
    nvrtc();
    return nvrtc_state().version;
}

const std::string& nvrtc_path() {
    nvrtc();
    return nvrtc_state().path;
}

std::string cu_error_text(CUresult r) {
    const char* name = nullptr;
    const char* text = nullptr;
    const DriverState& st = driver_state();
    if (st.api.cuGetErrorName) st.api.cuGetErrorName(r, &name);
    if (st.api.cuGetErrorString) st.api.cuGetErrorString(r, &text);
    return std::string(name ? name : "CUDA error " + std::to_string(r)) + " (" + (text ? text : "no description") + ")";
}

void check_cu(CUresult r, const char* call, const char* file, int line) {
    if (r == kCudaSuccess) return;
    throw Error(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed: " + cu_error_text(r));
}

void check_nvrtc(nvrtcResult r, const char* call, const char* file, int line, nvrtcProgram prog) {
    if (r == 0) return;
    const NvrtcApi& api = nvrtc_state().api;
    std::string msg = std::string(file) + ":" + std::to_string(line) + ": " + call +
                      " failed: " + (api.nvrtcGetErrorString ? api.nvrtcGetErrorString(r) : "NVRTC error");
    size_t n = 0;
    if (prog && api.nvrtcGetProgramLogSize(prog, &n) == 0 && n > 1) {
        std::string log(n, '\0');
        api.nvrtcGetProgramLog(prog, log.data());
        log.resize(n - 1);
        msg += "\nNVRTC log:\n" + log;
    }
    throw Error(msg);
}

} // namespace orrery::cuda
