// The XLA FFI handler behind orrery.jax.make_step (see xla_ffi.hpp).

#include "python/src/xla_ffi.hpp"

#include <cstring>

#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace orrery::python {
namespace {

ffi::Error wrong_size(const std::string& what, size_t got, size_t want) {
    return ffi::Error(ffi::ErrorCode::kInvalidArgument, "orrery step: " + what + " has " + std::to_string(got) +
                                                            " bytes; expected " + std::to_string(want));
}

ffi::Error step(ffi::AnyBuffer actions, ffi::Result<ffi::AnyBuffer> obs, ffi::Result<ffi::AnyBuffer> reward,
                ffi::Result<ffi::AnyBuffer> terminated, ffi::Result<ffi::AnyBuffer> truncated, uint64_t handle) {
    auto* s = reinterpret_cast<FfiStepper*>(handle);
    if (!s || !s->sim || s->outputs.size() != 4)
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, "orrery step: bad handle");
    if (actions.size_bytes() != s->input.bytes()) return wrong_size("actions", actions.size_bytes(), s->input.bytes());
    ffi::Result<ffi::AnyBuffer>* outs[4] = {&obs, &reward, &terminated, &truncated};
    for (size_t k = 0; k < 4; ++k)
        if ((*outs[k])->size_bytes() != s->outputs[k].bytes())
            return wrong_size("result '" + s->outputs[k].name + "'", (*outs[k])->size_bytes(), s->outputs[k].bytes());
    try {
        std::lock_guard<std::mutex> lock(*s->mutex);
        std::memcpy(s->input.data, actions.untyped_data(), s->input.bytes());
        s->sim->step(); // on the CPU a bad action value throws here, before any world changes
        for (size_t k = 0; k < 4; ++k)
            std::memcpy((*outs[k])->untyped_data(), s->outputs[k].data, s->outputs[k].bytes());
    } catch (const std::exception& e) {
        return ffi::Error(ffi::ErrorCode::kInvalidArgument, std::string("orrery step: ") + e.what());
    }
    return ffi::Error::Success();
}

} // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(orrery_xla_ffi_cpu_step, step,
                              ffi::Ffi::Bind()
                                  .Arg<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Ret<ffi::AnyBuffer>()
                                  .Attr<uint64_t>("handle"));

pybind11::capsule xla_ffi_cpu_step_handler() {
    return pybind11::capsule(reinterpret_cast<void*>(&orrery_xla_ffi_cpu_step));
}

} // namespace orrery::python
