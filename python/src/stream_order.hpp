#pragma once
// Orders a CUDA simulator's work after and before a caller's stream (PyTorch's
// current stream): by queuing it on that stream itself (follow: no events per
// call once there), or with two events made once (engine_waits_for,
// caller_waits_for_engine), so a Python step costs a few driver calls, never
// waits on the host, and joins a CUDA graph capture.

#include <cstddef>
#include <cstdint>
#include <memory>

#include "engine/simulator.hpp"

namespace orrery::python {

/// Event pair between one CUDA simulator's stream and any caller stream of its device.
class StreamOrder {
  public:
    /// Makes the events in the device's primary context (the one PyTorch and the engine share).
    /// Throws orrery::Error when `sim` is not on CUDA.
    explicit StreamOrder(Simulator& sim);
    ~StreamOrder();
    StreamOrder(const StreamOrder&) = delete;
    StreamOrder& operator=(const StreamOrder&) = delete;

    /// Queues an `n`-byte device-to-device copy from `src` to `dst` on `caller`,
    /// so it follows the caller's queued work (the kernel that wrote `src`).
    void copy_on_caller(void* dst, uintptr_t src, size_t n, uintptr_t caller);
    /// Puts the simulator's work on `caller` itself when GpuOptions::
    /// follow_caller_stream allows: true when the simulator's stream is now
    /// `caller` (queued work on either is ordered before what comes next; the
    /// move costs one event, once). False, ordering nothing, where it may not
    /// move: off by option, or `caller` is in a CUDA graph capture (an event
    /// from outside a capture cannot be waited on inside it), in which case
    /// the simulator is back on its own stream and the caller orders with the
    /// two events (which join the capture).
    bool follow(uintptr_t caller);
    /// Makes the simulator's stream wait for `caller`'s queued work.
    void engine_waits_for(uintptr_t caller);
    /// Makes `caller` wait for the simulator's queued work.
    void caller_waits_for_engine(uintptr_t caller);
    /// True while `stream` is being captured into a CUDA graph.
    bool capturing(uintptr_t stream) const;

  private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
};

} // namespace orrery::python
