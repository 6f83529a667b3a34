#pragma once
// A simulator's step as an XLA FFI (custom call) target, so orrery.jax's step
// runs inside jax.jit and lax.scan as one XLA op with no Python callback: the
// handler steps reading the action buffer XLA gives it and writing the outputs
// into XLA's result buffers (XLA owns them) with Simulator::step_reading: on
// the CPU the actions are range-checked there and copied in, the outputs
// copied out; on CUDA the staged step reads and writes them in place from its
// copies in and back (one launch, no copy), queued on XLA's stream itself or
// ordered after and before it by events (StreamOrder): no host
// synchronisation, as a PyTorch step.

#include <pybind11/pybind11.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "engine/simulator.hpp"
#include "python/src/stream_order.hpp"

namespace orrery::python {

/// What one FFI call steps: a simulator, its action tensor and the four outputs
/// (obs, reward, terminated, truncated), or none for the in-place step. Python passes its address to the call
/// as the "handle" attribute and keeps it alive while jitted code may run.
struct FfiStepper {
    std::shared_ptr<Simulator> sim;
    std::mutex* mutex = nullptr;        ///< the Python wrapper's: engine calls on one simulator are serialised
    std::unique_ptr<StreamOrder> order; ///< CUDA only: its own event pair with XLA's stream
    TensorView input;
    std::vector<TensorView> outputs;

    /// Calls the handler has finished (stepped or failed): XLA may run it on
    /// a thread of its own after the Python call that dispatched it returns,
    /// so Env.step waits for this count (the step queued, not run) before
    /// anything else reaches the simulator.
    std::atomic<uint64_t> calls{0};
    /// The last failed call's message, until take_error().
    void finish(const std::string& failed) {
        if (!failed.empty()) {
            std::lock_guard<std::mutex> lock(error_mutex);
            error = failed;
        }
        calls.fetch_add(1, std::memory_order_release);
    }
    std::string take_error() {
        std::lock_guard<std::mutex> lock(error_mutex);
        return std::exchange(error, {});
    }

  private:
    std::mutex error_mutex;
    std::string error;
};

/// The handler as a PyCapsule for jax.ffi.register_ffi_target(..., platform="cpu").
pybind11::capsule xla_ffi_cpu_step_handler();
/// The CUDA handler, for jax.ffi.register_ffi_target(..., platform="CUDA").
pybind11::capsule xla_ffi_cuda_step_handler();
/// The handlers of the step alone (no results: the outputs stay in the
/// simulator's tensors), for Env.step with JAX actions; their stepper has no outputs.
pybind11::capsule xla_ffi_cpu_step_in_place_handler();
pybind11::capsule xla_ffi_cuda_step_in_place_handler();

} // namespace orrery::python
