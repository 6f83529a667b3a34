// StreamOrder over the CUDA driver API that the engine loads at run time.

#include "python/src/stream_order.hpp"

#include "engine/cuda/driver_api.hpp"

namespace orrery::python {

using namespace cuda; // the driver API types and driver()

struct StreamOrder::Impl {
    CUdevice dev = 0;
    CUcontext ctx = nullptr;
    CUstream engine = nullptr;
    CUevent caller_done = nullptr, engine_done = nullptr;
    Backend* backend = nullptr;

    /// The engine's stream now: it may be a caller's, after CudaBackend::use_stream.
    CUstream engine_stream() const { return reinterpret_cast<CUstream>(backend->native_stream()); }
    void bind() const { ORRERY_CU(driver().cuCtxSetCurrent(ctx)); }
};

StreamOrder::StreamOrder(Simulator& sim) : impl_(std::make_unique<Impl>()) {
    Backend* backend = &sim.backend();
    if (backend->device() != DeviceKind::kCuda)
        throw Error("stream ordering needs a CUDA simulator; this one is on the CPU");
    const DriverApi& d = driver();
    Impl& m = *impl_;
    m.backend = backend;
    ORRERY_CU(d.cuDeviceGet(&m.dev, backend->device_index()));
    ORRERY_CU(d.cuDevicePrimaryCtxRetain(&m.ctx, m.dev));
    m.bind();
    if (d.cuEventCreate(&m.caller_done, kEventDisableTiming) != 0 ||
        d.cuEventCreate(&m.engine_done, kEventDisableTiming) != 0) {
        if (m.caller_done) d.cuEventDestroy(m.caller_done);
        d.cuDevicePrimaryCtxRelease(m.dev);
        throw Error("cuEventCreate failed while ordering the simulator's stream against the caller's");
    }
}

StreamOrder::~StreamOrder() {
    // Teardown never throws. Events recorded on a stream may be destroyed at once:
    // the driver frees them when the work completes.
    const DriverApi& d = driver();
    d.cuCtxSetCurrent(impl_->ctx);
    d.cuEventDestroy(impl_->caller_done);
    d.cuEventDestroy(impl_->engine_done);
    d.cuDevicePrimaryCtxRelease(impl_->dev);
}

void StreamOrder::copy_on_caller(void* dst, uintptr_t src, size_t n, uintptr_t caller) {
    impl_->bind();
    ORRERY_CU(driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), CUdeviceptr(src), n,
                                         reinterpret_cast<CUstream>(caller)));
}

void StreamOrder::engine_waits_for(uintptr_t caller) {
    const Impl& m = *impl_;
    auto stream = reinterpret_cast<CUstream>(caller);
    if (stream == m.engine_stream()) return;
    m.bind();
    ORRERY_CU(driver().cuEventRecord(m.caller_done, stream));
    ORRERY_CU(driver().cuStreamWaitEvent(m.engine_stream(), m.caller_done, 0));
}

void StreamOrder::caller_waits_for_engine(uintptr_t caller) {
    const Impl& m = *impl_;
    auto stream = reinterpret_cast<CUstream>(caller);
    if (stream == m.engine_stream()) return;
    m.bind();
    ORRERY_CU(driver().cuEventRecord(m.engine_done, m.engine_stream()));
    ORRERY_CU(driver().cuStreamWaitEvent(stream, m.engine_done, 0));
}

} // namespace orrery::python
