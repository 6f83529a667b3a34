// The orrery._core extension: one Simulator class over the C++ engine, the env
// registry, and Tensor views (tensor.cpp). The pure-Python package `orrery`
// builds the user API (make, Env, adapters) on top of this thin layer.

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <time.h>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/options.hpp"
#include "engine/plugin.hpp"
#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "python/src/stream_order.hpp"
#include "python/src/tensor.hpp"
#include "python/src/xla_ffi.hpp"
#ifdef ORRERY_PYTHON_RENDER
#include "render/render.hpp"
#endif

namespace py = pybind11;

namespace orrery::python {

namespace {

AutoReset parse_autoreset(const std::string& mode) {
    if (mode == "next_step") return AutoReset::kNextStep;
    if (mode == "same_step") return AutoReset::kSameStep;
    if (mode == "disabled") return AutoReset::kDisabled;
    throw Error("autoreset='" + mode + "' is not understood; expected 'next_step', 'same_step' or 'disabled'");
}

const char* autoreset_name(AutoReset mode) {
    switch (mode) {
    case AutoReset::kNextStep: return "next_step";
    case AutoReset::kSameStep: return "same_step";
    case AutoReset::kDisabled: return "disabled";
    }
    return "?";
}

/// Owns the simulator through a shared pointer that every Tensor also holds,
/// so close() drops this handle while live views keep the memory valid.
class PySimulator {
  public:
    PySimulator(const std::string& env, const EnvOptions& options, uint32_t num_worlds, const std::string& device,
                const std::string& autoreset, uint32_t threads) {
        SimOptions o = options_from_environment(); // the ORRERY_* variables of docs/gpu.md
        if (num_worlds == 0) throw Error("num_worlds=0 is invalid; expected an integer >= 1");
        o.num_worlds = num_worlds;
        o.device = device;
        o.autoreset = parse_autoreset(autoreset);
        o.threads = threads;
        EnvSpec spec = make_env_spec(env, options);
        py::gil_scoped_release unlocked;
        sim_ = std::make_shared<Simulator>(std::move(spec), std::move(o));
    }

    /// The live simulator; throws orrery::Error once closed.
    std::shared_ptr<Simulator> get() const {
        if (!sim_) throw Error("this env is closed; make a new one with orrery.make()");
        return sim_;
    }
    void close() {
        order_.reset();
        sim_.reset();
    }
    bool closed() const { return !sim_; }

    py::dict tensors() const {
        std::shared_ptr<Simulator> s = get();
        py::dict out;
        for (const TensorView& v : s->tensors()) out[py::str(v.name)] = Tensor(s, v);
        return out;
    }

    py::list exports() const;
    py::dict memory_report() const;
    std::shared_ptr<FfiStepper> ffi_stepper(const std::string& input, const std::vector<std::string>& outputs) const;

    /// Serialises engine calls: they run without the GIL, and a Simulator is
    /// not safe to drive from two threads at once.
    std::mutex& mutex() const { return mutex_; }

    /// Events between a CUDA simulator's stream and callers' streams, made at
    /// the first ordered call (under mutex()).
    StreamOrder& order(Simulator& s) const {
        if (!order_) order_ = std::make_unique<StreamOrder>(s);
        return *order_;
    }

  private:
    std::shared_ptr<Simulator> sim_;
    mutable std::mutex mutex_;
    mutable std::unique_ptr<StreamOrder> order_;
};

py::list PySimulator::exports() const {
    std::shared_ptr<Simulator> s = get();
    const EnvSpec& spec = s->spec();
    py::list out;
    for (const ExportSpec& e : spec.exports()) {
        const ArchetypeSpec& a = spec.archetype_specs()[e.archetype];
        const ComponentSpec& c = spec.component_specs()[e.component];
        py::dict d;
        d["name"] = e.name;
        d["input"] = e.input;
        d["archetype"] = a.name;
        d["capacity"] = a.capacity;
        d["singleton"] = a.singleton;
        d["component"] = c.name;
        d["dims"] = c.dims;
        d["array"] = c.is_array;
        d["dtype"] = element_type(c.dtype).name;
        out.append(d);
    }
    return out;
}

std::shared_ptr<FfiStepper> PySimulator::ffi_stepper(const std::string& input,
                                                     const std::vector<std::string>& outputs) const {
    auto out = std::make_shared<FfiStepper>();
    out->sim = get();
    out->mutex = &mutex_;
    if (out->sim->backend().device() != DeviceKind::kCpu) out->order = std::make_unique<StreamOrder>(*out->sim);
    auto find = [&](const std::string& name) {
        for (const TensorView& v : out->sim->tensors())
            if (v.name == name) return v;
        throw Error("no tensor named '" + name + "' for the XLA FFI step");
    };
    out->input = find(input);
    for (const std::string& name : outputs) out->outputs.push_back(find(name));
    if (out->outputs.size() != 4 && !out->outputs.empty())
        throw Error("the XLA FFI step takes 4 outputs (obs, reward, terminated, truncated), or none (in place)");
    return out;
}

py::dict PySimulator::memory_report() const {
    MemoryReport r = get()->memory_report();
    py::list rows;
    for (const MemoryReport::Row& row : r.archetypes)
        rows.append(py::dict(py::arg("archetype") = row.archetype, py::arg("capacity") = row.capacity,
                             py::arg("bytes_per_world") = row.bytes_per_world, py::arg("bytes") = row.bytes));
    return py::dict(py::arg("archetypes") = rows, py::arg("engine_bytes") = r.engine_bytes,
                    py::arg("scratch_slot_bytes") = r.scratch_slot_bytes, py::arg("scratch_slots") = r.scratch_slots,
                    py::arg("scratch_bytes") = r.scratch_bytes, py::arg("total_bytes") = r.total_bytes,
                    py::arg("text") = r.to_string());
}

/// Runs `fn` on the live simulator with the GIL released (the CPU backend uses
/// its own threads; other Python threads may run meanwhile, but not on this
/// simulator: calls on one simulator are serialised).
template <class F> auto unlocked(const PySimulator& p, F fn) {
    std::shared_ptr<Simulator> s = p.get();
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(p.mutex());
    return fn(*s);
}

/// Raises `type` with `what`; bytes that are not UTF-8 (from a file or a
/// state given as bytes) become \xNN escapes instead of hiding the message.
void set_error(PyObject* type, const char* what) {
    PyObject* text = PyUnicode_DecodeUTF8(what, Py_ssize_t(std::strlen(what)), "backslashreplace");
    if (!text) return; // PyUnicode_DecodeUTF8 has set MemoryError
    PyErr_SetObject(type, text);
    Py_DECREF(text);
}

/// Like unlocked(), and on CUDA with a caller stream (PyTorch's current one)
/// `fn`'s work follows the caller's queued work and the caller's next work
/// follows it, with no host synchronisation, capturable in a graph: queued on
/// the caller's stream itself (StreamOrder::follow: no events once there), or,
/// where it may not move there, with two event waits. Without a stream (or on
/// the CPU) `fn` runs on the engine's current stream alone.
template <class F> void ordered(const PySimulator& p, std::optional<uintptr_t> stream, F fn) {
    unlocked(p, [&](Simulator& s) {
        if (!stream || s.backend().device() == DeviceKind::kCpu) return fn(s);
        StreamOrder& order = p.order(s);
        if (order.follow(*stream)) return fn(s); // queued on the caller's stream itself
        order.engine_waits_for(*stream);
        fn(s);
        order.caller_waits_for_engine(*stream);
    });
}

/// True when NumPy dtype `d` is engine dtype `t` (native byte order).
bool same_dtype(const py::dtype& d, DType t) {
    if (d.byteorder() == '>') return false;
    char kind = t == DType::kF32 ? 'f' : (t == DType::kU8 || t == DType::kU16 || t == DType::kU32) ? 'u' : 'i';
    return d.kind() == kind && size_t(d.itemsize()) == dtype_size(t);
}

template <class T> bool values_in(const void* data, size_t n, int64_t lo, int64_t hi) {
    const T* v = static_cast<const T*>(data);
    T low = n ? v[0] : T(0), high = low;
    for (size_t i = 0; i < n; ++i) { // min/max without early exit: vectorised
        low = std::min(low, v[i]);
        high = std::max(high, v[i]);
    }
    return int64_t(low) >= lo && int64_t(high) <= hi;
}

/// True when every value of integer input `t`'s bytes at `data` lies in its declared range.
bool input_in_range(const Simulator& s, const TensorView& t, const void* data) {
    auto range = s.spec().input_ranges().find(t.name);
    if (range == s.spec().input_ranges().end()) return true;
    auto [lo, hi] = range->second;
    size_t n = t.bytes() / dtype_size(t.dtype);
    switch (t.dtype) {
    case DType::kU8: return values_in<uint8_t>(data, n, lo, hi);
    case DType::kI8: return values_in<int8_t>(data, n, lo, hi);
    case DType::kU16: return values_in<uint16_t>(data, n, lo, hi);
    case DType::kI16: return values_in<int16_t>(data, n, lo, hi);
    case DType::kI32: return values_in<int32_t>(data, n, lo, hi);
    case DType::kU32: return values_in<uint32_t>(data, n, lo, hi);
    case DType::kI64: return values_in<int64_t>(data, n, lo, hi);
    case DType::kF32: return false;
    }
    return false;
}

/// CPU step from a NumPy array that is exactly input `name` (dtype, byte size,
/// C order) with every value in range: copied in and stepped. Returns false,
/// writing nothing, for anything else, so the caller's full checks name the fault.
bool step_host(const PySimulator& p, const std::string& name, const py::array& a) {
    std::shared_ptr<Simulator> s = p.get();
    if (s->backend().device() != DeviceKind::kCpu) return false;
    const TensorView& t = s->tensor(name);
    if (!t.input || t.dtype == DType::kF32 || !(a.flags() & py::array::c_style) || size_t(a.nbytes()) != t.bytes() ||
        !same_dtype(a.dtype(), t.dtype))
        return false;
    const void* src = a.data();
    py::gil_scoped_release release;
    std::lock_guard<std::mutex> lock(p.mutex());
    if (!input_in_range(*s, t, src)) return false;
    if (src != t.data) std::memcpy(t.data, src, t.bytes());
    s->step();
    return true;
}

/// CUDA step reading input `name` from device memory at `src` (its exact dtype
/// and size, checked by the caller) ordered after the caller's queued work and
/// before its next (Simulator::step_reading: the staged step reads it in place).
void step_reading(const PySimulator& p, uintptr_t stream, const std::string& name, uintptr_t src) {
    unlocked(p, [&](Simulator& s) {
        StreamOrder& order = p.order(s);
        if (order.follow(stream)) return s.step_reading(name, reinterpret_cast<const void*>(src));
        order.engine_waits_for(stream);
        s.step_reading(name, reinterpret_cast<const void*>(src));
        order.caller_waits_for_engine(stream);
    });
}

/// CPU time of the calling thread, in seconds (all of a step's work with one CPU thread).
double thread_seconds() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return double(t.tv_sec) + 1e-9 * double(t.tv_nsec);
}

/// (wall, calling thread's CPU) seconds per step of `orrery bench`'s own loop
/// (tools/orrery_cli.cpp): random actions drawn inside the step on a GPU, one of
/// 16 host action sets copied in before each step on the CPU; 8 warm-up steps,
/// then `steps` timed ones.
std::pair<double, double> engine_step_seconds(const std::string& env, const EnvOptions& options, uint32_t num_worlds,
                                              const std::string& device, uint32_t threads, uint32_t steps) {
    SimOptions o;
    o.num_worlds = num_worlds;
    o.threads = threads;
    o.device = device;
    o.random_inputs = device != "cpu";
    EnvSpec spec = make_env_spec(env, options);
    py::gil_scoped_release release;
    Simulator sim(std::move(spec), o);
    uint64_t rng = 0x9E3779B97F4A7C15ull;
    std::vector<std::vector<uint8_t>> pool;
    void* input = nullptr;
    if (!o.random_inputs) {
        for (int i = 0; i < 16; ++i) {
            std::vector<std::vector<uint8_t>> inputs = random_inputs(sim, rng);
            pool.push_back(inputs.empty() ? std::vector<uint8_t>() : inputs.front());
        }
        if (!sim.spec().input_ranges().empty()) input = sim.tensor(sim.spec().input_ranges().begin()->first).data;
    }
    auto run = [&](uint32_t n) {
        for (uint32_t i = 0; i < n; ++i) {
            if (input) sim.backend().copy_from_host(input, pool[i % 16].data(), pool[i % 16].size());
            sim.step();
        }
        sim.synchronize();
    };
    run(8);
    double c0 = thread_seconds();
    auto t0 = std::chrono::steady_clock::now();
    run(steps);
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    double cpu = thread_seconds() - c0;
    sim.check_errors();
    return {secs / steps, cpu / steps};
}

/// (wall, calling thread's CPU) seconds per step of `orrery bench`'s loop on this
/// simulator: before each step, input `name` is copied from the next of `count`
/// action sets at `pool` (consecutive, in the simulator's memory space: host on
/// the CPU, device on a GPU), or with `in_place` each step reads its set where
/// it is (Simulator::step_reading); `steps` timed steps after 8 warm-up ones.
std::pair<double, double> engine_loop(const PySimulator& p, const std::string& name, uintptr_t pool, uint32_t count,
                                      uint32_t steps, bool in_place) {
    std::pair<double, double> out;
    unlocked(p, [&](Simulator& s) {
        const TensorView& t = s.tensor(name);
        if (!t.input || count == 0) throw Error("engine_loop: '" + name + "' is not an input, or count is 0");
        const bool host = s.backend().device() == DeviceKind::kCpu;
        auto run = [&](uint32_t n) {
            for (uint32_t i = 0; i < n; ++i) {
                const void* src = reinterpret_cast<const void*>(pool + (i % count) * t.bytes());
                if (in_place) {
                    s.step_reading(name, src);
                    continue;
                }
                if (host)
                    s.backend().copy_from_host(t.data, src, t.bytes());
                else
                    s.backend().copy_within(t.data, src, t.bytes());
                s.step();
            }
            s.synchronize();
        };
        run(8);
        double c0 = thread_seconds();
        auto t0 = std::chrono::steady_clock::now();
        run(steps);
        double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        out = {secs / steps, (thread_seconds() - c0) / steps};
    });
    return out;
}

void translate_errors() {
    py::register_exception_translator([](std::exception_ptr p) {
        try {
            if (p) std::rethrow_exception(p);
        } catch (const TypeError& e) { set_error(PyExc_TypeError, e.what()); } catch (const Error& e) {
            set_error(PyExc_ValueError, e.what());
        }
    });
}

} // namespace

/// Generates env `name`'s staged megakernel and compiles it through NVRTC for
/// sm_`arch`, no GPU needed: how CI checks an env's device code on a CPU machine.
py::dict compile_gpu_kernels(const std::string& name, const EnvOptions& options, int arch) {
    EnvSpec spec = make_env_spec(name, options);
    Plan plan = make_plan(spec, AutoReset::kNextStep);
    cuda::KernelSource k = cuda::generate_kernels(spec, plan, cuda::KernelForm::kStaged);
    cuda::CompileRequest req;
    req.label = "'" + name + "' megakernel";
    req.source = k.text;
    req.env_header = k.env_header;
    if (!spec.header_root().empty()) req.header_roots.push_back(spec.header_root());
    req.arch = arch;
    req.use_cache = false;
    cuda::CompiledModule m;
    {
        py::gil_scoped_release release;
        m = cuda::compile_module(req);
    }
    py::dict out;
    out["cubin_bytes"] = m.cubin.size();
    out["seconds"] = m.seconds;
    out["kernels"] = std::vector<std::string>{k.staged_step_kernel, k.staged_reset_kernel};
    return out;
}

void bind_simulator(py::module_& m) {
    using Mask = py::array_t<uint8_t, py::array::c_style | py::array::forcecast>;
    using Self = const PySimulator&;
    auto cls =
        py::class_<PySimulator>(m, "Simulator", "A batch of worlds of one env (see orrery.make for the user API).");
    cls.def(py::init<const std::string&, const EnvOptions&, uint32_t, const std::string&, const std::string&,
                     uint32_t>(),
            py::arg("env"), py::arg("options"), py::arg("num_worlds"), py::arg("device") = "cpu",
            py::arg("autoreset") = "next_step", py::arg("threads") = 0)
        .def("close", &PySimulator::close, "Drops the simulator; live tensor views keep its memory valid.")
        .def_property_readonly("closed", &PySimulator::closed)
        .def_property_readonly("env_name", [](Self p) { return p.get()->spec().name(); })
        .def_property_readonly("num_worlds", [](Self p) { return p.get()->num_worlds(); })
        .def_property_readonly("autoreset", [](Self p) { return autoreset_name(p.get()->options().autoreset); })
        .def_property_readonly("backend", [](Self p) { return p.get()->backend().describe(); })
        .def_property_readonly("device",
                               [](Self p) {
                                   Backend& b = p.get()->backend();
                                   return b.device() == DeviceKind::kCpu ? std::string("cpu")
                                                                         : "cuda:" + std::to_string(b.device_index());
                               })
        // So Python can order the simulator's work against PyTorch's streams without host synchronisation.
        .def_property_readonly(
            "cuda_stream", [](Self p) { return p.get()->backend().own_stream(); },
            "The CUstream a CUDA simulator made for its work (0 on the CPU); ordered calls may move its work "
            "to the caller's stream (GpuOptions::follow_caller_stream).")
        .def_property_readonly("env_info", [](Self p) { return p.get()->spec().info(); })
        .def("tensors", &PySimulator::tensors, "Every exported tensor by name (views, no copies).")
        .def("exports", &PySimulator::exports, "The env's export table: archetype, capacity, dims of each tensor.")
        .def("input_ranges", [](Self p) { return p.get()->spec().input_ranges(); })
        .def("memory_report", &PySimulator::memory_report)
        .def("ffi_stepper", &PySimulator::ffi_stepper, py::arg("input"), py::arg("outputs"),
             "What an XLA FFI step call steps (its address is the call's 'handle'); keep it alive.")
        .def(
            "reset",
            [](Self p, uint64_t seed, std::optional<uintptr_t> stream) {
                ordered(p, stream, [&](Simulator& s) { s.reset(seed); });
            },
            py::arg("seed"), py::arg("stream") = py::none(),
            "stream: on CUDA, the caller's CUstream to order the reset after and before (None: none).")
        .def(
            "reset_worlds",
            [](Self p, Mask mask, std::optional<uintptr_t> stream) {
                std::vector<uint8_t> v(mask.data(), mask.data() + mask.size());
                ordered(p, stream, [&](Simulator& s) { s.reset_worlds(v); });
            },
            py::arg("mask"), py::arg("stream") = py::none())
        .def(
            "step", [](Self p, std::optional<uintptr_t> stream) { ordered(p, stream, [](Simulator& s) { s.step(); }); },
            py::arg("stream") = py::none(),
            "One step; on CUDA with `stream` (a CUstream, 0 the legacy default) ordered against that stream "
            "by two events, with no host synchronisation.")
        .def("engine_loop", &engine_loop, py::arg("input"), py::arg("pool"), py::arg("count"), py::arg("steps"),
             py::arg("in_place") = false,
             "(wall, thread CPU) seconds per step of orrery bench's loop on this simulator, copying input `input` "
             "from `count` consecutive sets at address `pool` before each step, or with `in_place` each step "
             "reading its set where it is (Simulator::step_reading) (benchmarks).")
        .def("step_host", &step_host, py::arg("input"), py::arg("array"),
             "CPU: copies a NumPy array of input `input`'s exact dtype and size, all values in range, and steps; "
             "False (nothing written) otherwise.")
        .def("step_reading", &step_reading, py::arg("stream"), py::arg("input"), py::arg("source"),
             "CUDA: one step ordered against `stream`, reading input `input` from device address `source` (the "
             "staged step reads it in place: no copy when it is 16-byte aligned). The caller checks the source's "
             "dtype, shape and device, and keeps it unchanged until work queued on `stream` after this call.")
        .def("synchronize", [](Self p) { unlocked(p, [](Simulator& s) { s.synchronize(); }); })
        .def("errors",
             [](Self p) {
                 std::vector<uint32_t> e = unlocked(p, [](Simulator& s) { return s.errors(); });
                 return py::array_t<uint32_t>(py::ssize_t(e.size()), e.data());
             })
        .def("check_errors", [](Self p) { unlocked(p, [](Simulator& s) { s.check_errors(); }); })
        .def(
            "save_world",
            [](Self p, uint32_t w) {
                WorldSnapshot snap = unlocked(p, [&](Simulator& s) { return s.save_world(w); });
                return py::bytes(reinterpret_cast<const char*>(snap.bytes.data()), snap.bytes.size());
            },
            py::arg("world"))
        .def(
            "restore_world",
            [](Self p, uint32_t w, const py::bytes& data) {
                std::string_view v = data;
                WorldSnapshot snap{std::vector<uint8_t>(v.begin(), v.end())};
                unlocked(p, [&](Simulator& s) { s.restore_world(w, snap); });
            },
            py::arg("world"), py::arg("snapshot"))
        .def(
            "copy_world",
            [](Self p, uint32_t a, uint32_t b) { unlocked(p, [&](Simulator& s) { s.copy_world(a, b); }); },
            py::arg("src"), py::arg("dst"))
        .def(
            "get_state_json",
            [](Self p, uint32_t w) { return unlocked(p, [&](Simulator& s) { return s.get_state_json(w); }); },
            py::arg("world"))
        .def(
            "set_state_json",
            [](Self p, uint32_t w, const std::string& j) {
                unlocked(p, [&](Simulator& s) { s.set_state_json(w, j); });
            },
            py::arg("world"), py::arg("state"))
        .def(
            "state_hash", [](Self p, uint32_t w) { return unlocked(p, [&](Simulator& s) { return s.state_hash(w); }); },
            py::arg("world"))
        .def(
            "save_checkpoint",
            [](Self p, const std::string& f) { unlocked(p, [&](Simulator& s) { s.save_checkpoint(f); }); },
            py::arg("path"))
        .def(
            "load_checkpoint",
            [](Self p, const std::string& f) { unlocked(p, [&](Simulator& s) { s.load_checkpoint(f); }); },
            py::arg("path"));
#ifdef ORRERY_PYTHON_RENDER
    // Present only where render/ was built: Env.render() checks for it.
    cls.def(
        "render",
        [](Self p, uint32_t w, uint32_t width, uint32_t height) {
            const char* vk = std::getenv("ORRERY_VK_DEVICE"); // as for orrery-view and orrery-record
            const std::string device = vk ? vk : "";
            std::vector<uint8_t> px =
                unlocked(p, [&](Simulator& s) { return render::render_world_rgba(s, w, width, height, device); });
            return py::bytes(reinterpret_cast<const char*>(px.data()), px.size());
        },
        py::arg("world"), py::arg("width") = 512, py::arg("height") = 512,
        "RGBA8 pixels of one world (height rows of width * 4 bytes, top row first), drawn offscreen.");
#endif
}

} // namespace orrery::python

PYBIND11_MODULE(_core, m) {
    using namespace orrery::python;
    m.doc() = "Orrery's native core: simulators of batched game worlds and zero-copy tensor views.";
    orrery::register_builtin_envs();
    translate_errors();
    bind_tensor(m);
    py::class_<FfiStepper, std::shared_ptr<FfiStepper>>(m, "FfiStepper")
        .def_property_readonly("handle", [](const FfiStepper& s) { return reinterpret_cast<uintptr_t>(&s); })
        .def_property_readonly(
            "calls", [](const FfiStepper& s) { return s.calls.load(std::memory_order_acquire); },
            "Calls of the handler finished so far (stepped or failed).")
        .def("take_error", &FfiStepper::take_error, "The last failed call's message ('' if none), cleared.");
    m.def("xla_ffi_cpu_step_handler", &xla_ffi_cpu_step_handler,
          "The XLA FFI handler of a CPU simulator's step, for jax.ffi.register_ffi_target.");
    m.def("xla_ffi_cuda_step_handler", &xla_ffi_cuda_step_handler,
          "The XLA FFI handler of a CUDA simulator's step (platform 'CUDA'), for jax.ffi.register_ffi_target.");
    m.def("xla_ffi_cpu_step_in_place_handler", &xla_ffi_cpu_step_in_place_handler,
          "The XLA FFI handler of a CPU simulator's step with no results (the outputs stay in its tensors).");
    m.def("xla_ffi_cuda_step_in_place_handler", &xla_ffi_cuda_step_in_place_handler,
          "The XLA FFI handler of a CUDA simulator's step with no results (platform 'CUDA').");
    bind_simulator(m);
    m.def("engine_step_seconds", &engine_step_seconds, py::arg("env"), py::arg("options"), py::arg("num_worlds"),
          py::arg("device"), py::arg("threads"), py::arg("steps"),
          "(wall, calling thread's CPU) seconds per step of `orrery bench`'s loop on a simulator of its own "
          "(no Python per step).");
    m.def("list_envs", &orrery::registered_envs, "(name, summary) of every registered env.");
    m.def(
        "env_facts",
        [](const std::string& name, const orrery::EnvOptions& options) {
            const orrery::EnvFacts f = orrery::make_env_spec(name, options).facts;
            py::dict d;
            d["reward"] = f.reward == orrery::RewardMode::kTeam ? "team" : "per_agent";
            d["action_meanings"] = f.action_meanings;
            d["obs_names"] = f.obs_names;
            d["obs_low"] = f.obs_low;
            d["obs_high"] = f.obs_high;
            return d;
        },
        py::arg("name"), py::arg("options"),
        "What env `name` with `options` declares its tensors mean (EnvSpec::facts): reward mode, action and "
        "observation entry names, observation bounds.");
    m.def("load_plugin", &orrery::load_plugin, py::arg("path"),
          "Loads an env plugin (a shared library built with orrery_add_plugin); returns the envs it registered.");
    m.def("compile_gpu_kernels", &compile_gpu_kernels, py::arg("name"), py::arg("options"), py::arg("arch") = 90,
          "Compiles env `name`'s megakernel through NVRTC for sm_`arch` (no GPU needed); returns its size and time.");
}
