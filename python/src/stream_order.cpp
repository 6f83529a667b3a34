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
    bool follow = true; ///< GpuOptions::follow_caller_stream
    /// The simulator came back to its own stream while that stream was being
    /// captured: the work queued before on the stream it left (recorded in
    /// `left`) is waited for once the capture is over.
    bool wait_for_left = false;
    CUevent left = nullptr;

    /// 0 when `stream` is not being captured into a CUDA graph.
    int capturing(CUstream stream) const {
        int status = 0;
        ORRERY_CU(driver().cuStreamIsCapturing(stream, &status));
        return status;
    }

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
    m.follow = sim.options().gpu.follow_caller_stream && d.cuStreamIsCapturing;
    ORRERY_CU(d.cuDeviceGet(&m.dev, backend->device_index()));
    ORRERY_CU(d.cuDevicePrimaryCtxRetain(&m.ctx, m.dev));
    m.bind();
    if (d.cuEventCreate(&m.caller_done, kEventDisableTiming) != 0 ||
        d.cuEventCreate(&m.engine_done, kEventDisableTiming) != 0 ||
        d.cuEventCreate(&m.left, kEventDisableTiming) != 0) {
        if (m.caller_done) d.cuEventDestroy(m.caller_done);
        if (m.engine_done) d.cuEventDestroy(m.engine_done);
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
    d.cuEventDestroy(impl_->left);
    d.cuDevicePrimaryCtxRelease(impl_->dev);
}

void StreamOrder::copy_on_caller(void* dst, uintptr_t src, size_t n, uintptr_t caller) {
    impl_->bind();
    ORRERY_CU(driver().cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst), CUdeviceptr(src), n,
                                         reinterpret_cast<CUstream>(caller)));
}

bool StreamOrder::follow(uintptr_t caller) {
    Impl& m = *impl_;
    if (!m.follow) return false;
    const DriverApi& d = driver();
    auto stream = reinterpret_cast<CUstream>(caller);
    const auto own = reinterpret_cast<CUstream>(m.backend->own_stream());
    m.bind();
    if (m.wait_for_left && !m.capturing(own)) { // the capture that held it back is over
        ORRERY_CU(d.cuStreamWaitEvent(own, m.left, 0));
        m.wait_for_left = false;
    }
    if (stream == m.engine_stream()) return true;
    if (!m.capturing(stream)) {
        m.backend->follow_stream(caller); // one event: the caller's stream after the engine's work so far
        return true;
    }
    // A capture: the engine goes back to its own stream, which the events then
    // join to the capture (a stream the caller was using, such as the legacy
    // default stream, could not be captured).
    if (m.engine_stream() != own) {
        if (!m.capturing(own)) {
            m.backend->follow_stream(m.backend->own_stream());
        } else { // its own stream is the one captured: wait for the work it leaves after the capture
            ORRERY_CU(d.cuEventRecord(m.left, m.engine_stream()));
            m.backend->follow_stream(m.backend->own_stream(), false);
            m.wait_for_left = true;
        }
    }
    return stream == own;
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

bool StreamOrder::capturing(uintptr_t stream) const {
    if (!driver().cuStreamIsCapturing) return false; // a driver too old to capture
    impl_->bind();
    return impl_->capturing(reinterpret_cast<CUstream>(stream)) != 0;
}

} // namespace orrery::python
