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

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "python/src/stream_order.hpp"

namespace orrery::python {

/// What one FFI call steps: a simulator, its action tensor and the four outputs
/// (obs, reward, terminated, truncated). Python passes its address to the call
/// as the "handle" attribute and keeps it alive while jitted code may run.
struct FfiStepper {
    std::shared_ptr<Simulator> sim;
    std::mutex* mutex = nullptr;        ///< the Python wrapper's: engine calls on one simulator are serialised
    std::unique_ptr<StreamOrder> order; ///< CUDA only: its own event pair with XLA's stream
    TensorView input;
    std::vector<TensorView> outputs;
};

/// The handler as a PyCapsule for jax.ffi.register_ffi_target(..., platform="cpu").
pybind11::capsule xla_ffi_cpu_step_handler();
/// The CUDA handler, for jax.ffi.register_ffi_target(..., platform="CUDA").
pybind11::capsule xla_ffi_cuda_step_handler();

} // namespace orrery::python
