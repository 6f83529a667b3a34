// The XLA FFI handler behind orrery.jax.make_step (see xla_ffi.hpp).

#include "python/src/xla_ffi.hpp"

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

struct CUstream_st; // CUstream, as the CUDA driver's header declares it

namespace orrery::python {
namespace {

ffi::Error wrong_size(const std::string& what, size_t got, size_t want) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "orrery step: " + what + " has " + std::to_string(got) +
                                                            " bytes; expected " + std::to_string(want));
}

/// XLA's result buffers of one call: the four outputs, or none (an in-place step).
struct Results {
    ffi::Result<ffi::AnyBuffer>* at[4] = {};
    size_t count = 0;
};

/// The stepper behind `handle` when it and every buffer XLA gave are what it
/// was made for (nullptr and `error` set otherwise).
FfiStepper* checked(uint64_t handle, bool cuda, const ffi::AnyBuffer& actions, const Results& outs, ffi::Error& error) {
    auto* s = reinterpret_cast<FfiStepper*>(handle);
    if (!s || !s->sim || s->outputs.size() != outs.count || (s->order != nullptr) != cuda) {
        error = ffi::Error(ffi::ErrorCode::kInvalidArgument, std::string("orrery step: bad handle (not a ") +
                                                                 (cuda ? "CUDA" : "CPU") + " stepper of " +
                                                                 std::to_string(outs.count) + " outputs)");
        return nullptr;
    }
    if (actions.size_bytes() != s->input.bytes()) {
        error = wrong_size("actions", actions.size_bytes(), s->input.bytes());
        return nullptr;
    }
    for (size_t k = 0; k < outs.count; ++k)
        if ((*outs.at[k])->size_bytes() != s->outputs[k].bytes()) {
            error =
                wrong_size("result '" + s->outputs[k].name + "'", (*outs.at[k])->size_bytes(), s->outputs[k].bytes());
            return nullptr;
        }
    return s;
}

/// XLA's result buffers as the step's output copies: each of the stepper's outputs into its result.
std::vector<OutputCopy> result_copies(const FfiStepper& s, const Results& outs) {
    std::vector<OutputCopy> copies;
    for (size_t k = 0; k < outs.count; ++k)
        copies.push_back({s.outputs[k].data, (*outs.at[k])->untyped_data(), s.outputs[k].bytes()});
    return copies;
}

/// Checks the call, then runs `body(stepper)` under the simulator's lock; an
/// exception becomes an FFI error of `code`.
template <class F>
ffi::Error run_step(uint64_t handle, bool cuda, const ffi::AnyBuffer& actions, const Results& outs, ffi::ErrorCode code,
                    F body) {
    ffi::Error error = ffi::Error::Success();
    FfiStepper* s = checked(handle, cuda, actions, outs, error);
    if (!s) return error;
    std::string failed;
    try {
        std::lock_guard<std::mutex> lock(*s->mutex);
        body(*s);
    } catch (const std::exception& e) { failed = e.what(); }
    s->finish(failed);
    if (!failed.empty()) return ffi::Error(code, "orrery step: " + failed);
    return ffi::Error::Success();
}

ffi::Error cpu_step(ffi::AnyBuffer actions, ffi::Result<ffi::AnyBuffer> obs, ffi::Result<ffi::AnyBuffer> reward,
                    ffi::Result<ffi::AnyBuffer> terminated, ffi::Result<ffi::AnyBuffer> truncated, uint64_t handle) {
    Results outs = {{&obs, &reward, &terminated, &truncated}, 4};
    return run_step(handle, false, actions, outs, ffi::ErrorCode::kInvalidArgument, [&](FfiStepper& s) {
        // Checked where XLA holds them, then copied in: a bad value throws before
        // anything changes. The outputs are copied into XLA's results after the step.
        s.sim->step_reading(s.input.name, actions.untyped_data(), result_copies(s, outs));
    });
}

/// The step queued on XLA's stream itself (StreamOrder::follow: the engine
/// moves there with one event, once), or where it may not move, on the
/// engine's stream after (an event) XLA's queued work and before (an event)
/// XLA's next; either way reading the actions in XLA's buffer in place and
/// writing the outputs into XLA's results (Simulator::step_reading: the staged
/// step does both from its copies in and back, one launch and no copy).
/// XLA's later work on its stream, a reuse of the actions buffer included,
/// follows the step. A bad action
/// value is not seen on the host here: the world records ErrorCode::kBadAction
/// and skips the step, as any CUDA step does.
ffi::Error cuda_step_into(CUstream_st* stream, const ffi::AnyBuffer& actions, const Results& outs, uint64_t handle) {
    return run_step(handle, true, actions, outs, ffi::ErrorCode::kInternal, [&](FfiStepper& s) {
        const auto caller = reinterpret_cast<uintptr_t>(stream);
        // The staged step writes XLA's results from its copy back: one launch, no copies.
        const std::vector<OutputCopy> copies = result_copies(s, outs);
        if (s.order->follow(caller)) {
            s.sim->step_reading(s.input.name, actions.untyped_data(), copies);
        } else {
            s.order->engine_waits_for(caller);
            s.sim->step_reading(s.input.name, actions.untyped_data(), copies);
            s.order->caller_waits_for_engine(caller);
        }
    });
}

ffi::Error cuda_step(CUstream_st* stream, ffi::AnyBuffer actions, ffi::Result<ffi::AnyBuffer> obs,
                     ffi::Result<ffi::AnyBuffer> reward, ffi::Result<ffi::AnyBuffer> terminated,
                     ffi::Result<ffi::AnyBuffer> truncated, uint64_t handle) {
    return cuda_step_into(stream, actions, {{&obs, &reward, &terminated, &truncated}, 4}, handle);
}

/// The step alone, its outputs left in the simulator's tensors: Env.step with
/// a JAX array of actions. The actions are read where XLA holds them (on the
/// GPU by the step's kernel, on XLA's stream as above), and XLA keeps that
/// buffer alive and unwritten until the step has read it, as for any operand.
/// Its one result has no elements: through it XLA reports a call that failed
/// before the handler ran (Python waits for FfiStepper::calls, or for that).
ffi::Error cpu_step_in_place(ffi::AnyBuffer actions, ffi::Result<ffi::AnyBuffer>, uint64_t handle) {
    return run_step(handle, false, actions, Results{}, ffi::ErrorCode::kInvalidArgument,
                    [&](FfiStepper& s) { s.sim->step_reading(s.input.name, actions.untyped_data()); });
}

ffi::Error cuda_step_in_place(CUstream_st* stream, ffi::AnyBuffer actions, ffi::Result<ffi::AnyBuffer>,
                              uint64_t handle) {
    return cuda_step_into(stream, actions, Results{}, handle);
}

} // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(orrery_xla_ffi_cpu_step_in_place, cpu_step_in_place,
                              ffi::Ffi::Bind().Arg<ffi::AnyBuffer>().Ret<ffi::AnyBuffer>().Attr<uint64_t>("handle"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(orrery_xla_ffi_cuda_step_in_place, cuda_step_in_place,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream_st*>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<uint64_t>("handle"));

XLA_FFI_DEFINE_HANDLER_SYMBOL(orrery_xla_ffi_cpu_step, cpu_step,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<uint64_t>("handle"));

// Not marked command-buffer compatible: XLA runs it as a plain custom call,
// never inside a CUDA graph of its own (the step's events are made outside it).
XLA_FFI_DEFINE_HANDLER_SYMBOL(orrery_xla_ffi_cuda_step, cuda_step,
                              ffi::Ffi::Bind()
                                  .Ctx<ffi::PlatformStream<CUstream_st*>>()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<uint64_t>("handle"));

pybind11::capsule xla_ffi_cpu_step_handler() {
    return pybind11::capsule(reinterpret_cast<void*>(&orrery_xla_ffi_cpu_step));
}

pybind11::capsule xla_ffi_cuda_step_handler() {
    return pybind11::capsule(reinterpret_cast<void*>(&orrery_xla_ffi_cuda_step));
}

pybind11::capsule xla_ffi_cpu_step_in_place_handler() {
    return pybind11::capsule(reinterpret_cast<void*>(&orrery_xla_ffi_cpu_step_in_place));
}

pybind11::capsule xla_ffi_cuda_step_in_place_handler() {
    return pybind11::capsule(reinterpret_cast<void*>(&orrery_xla_ffi_cuda_step_in_place));
}

} // namespace orrery::python
