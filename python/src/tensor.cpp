// Tensor views and their export through DLPack (legacy and 1.x capsules), the
// NumPy array interface (host) and the CUDA array interface (device).

#include "python/src/tensor.hpp"

#include "python/src/stream_order.hpp"

#include <pybind11/stl.h>

#include <type_traits>

namespace py = pybind11;

namespace orrery::python {

namespace {
constexpr ElementType kTypes[] = {
    {"uint8", "|u1", {kDLUInt, 8, 1}, 1},     {"int8", "|i1", {kDLInt, 8, 1}, 1},
    {"int32", "<i4", {kDLInt, 32, 1}, 4},     {"uint32", "<u4", {kDLUInt, 32, 1}, 4},
    {"float32", "<f4", {kDLFloat, 32, 1}, 4}, {"int64", "<i8", {kDLInt, 64, 1}, 8},
    {"uint16", "<u2", {kDLUInt, 16, 1}, 2},   {"int16", "<i2", {kDLInt, 16, 1}, 2},
    {"bool", "|b1", {kDLBool, 8, 1}, 1},
};

/// What a DLPack capsule owns: the managed tensor, its shape and strides, and a
/// reference to the Python view that keeps the simulator alive.
template <class Managed> struct Export {
    Managed managed{};
    std::vector<int64_t> shape, strides;
    PyObject* owner = nullptr;
};

template <class Managed> constexpr const char* capsule_name() {
    return std::is_same_v<Managed, DLManagedTensor> ? "dltensor" : "dltensor_versioned";
}

/// The DLPack deleter: consumers may call it from any thread, without the GIL.
template <class Managed> void delete_export(Managed* m) {
    auto* e = static_cast<Export<Managed>*>(m->manager_ctx);
    if (Py_IsInitialized()) {
        PyGILState_STATE g = PyGILState_Ensure();
        Py_XDECREF(e->owner);
        PyGILState_Release(g);
    }
    delete e;
}

/// Frees a capsule nobody consumed (a consumer renames it to "used_...").
template <class Managed> void capsule_destructor(PyObject* capsule) {
    if (!PyCapsule_IsValid(capsule, capsule_name<Managed>())) return;
    PyObject *type, *value, *trace;
    PyErr_Fetch(&type, &value, &trace);
    auto* m = static_cast<Managed*>(PyCapsule_GetPointer(capsule, capsule_name<Managed>()));
    if (m && m->deleter) m->deleter(m);
    PyErr_Restore(type, value, trace);
}

template <class Managed> py::object make_capsule(const Tensor& t, py::object owner) {
    auto* e = new Export<Managed>();
    e->shape = t.shape();
    e->strides.assign(e->shape.size(), 1);
    for (size_t i = e->shape.size(); i-- > 1;) e->strides[i - 1] = e->strides[i] * e->shape[i];
    DLTensor& d = e->managed.dl_tensor;
    d.data = reinterpret_cast<void*>(t.data_ptr());
    d.device = t.dl_device();
    d.ndim = int32_t(e->shape.size());
    d.dtype = t.dtype().dl;
    d.shape = e->shape.data();
    d.strides = e->strides.data();
    d.byte_offset = 0;
    if constexpr (std::is_same_v<Managed, DLManagedTensorVersioned>) {
        e->managed.version = {1, 0};
        e->managed.flags = 0; // writable: the action tensor is written in place
    }
    e->managed.manager_ctx = e;
    e->managed.deleter = &delete_export<Managed>;
    e->owner = owner.release().ptr();
    PyObject* cap = PyCapsule_New(&e->managed, capsule_name<Managed>(), &capsule_destructor<Managed>);
    if (!cap) {
        delete_export<Managed>(&e->managed);
        throw py::error_already_set();
    }
    return py::reinterpret_steal<py::object>(cap);
}
} // namespace

ElementType element_type(DType t) { return element_type(std::string(dtype_name(t))); }

ElementType element_type(const std::string& name) {
    for (const ElementType& e : kTypes)
        if (name == e.name) return e;
    throw TypeError("dtype='" + name +
                    "' is not supported; expected uint8, int8, uint16, int16, int32, uint32, float32, int64 or bool");
}

Tensor::Tensor(std::shared_ptr<Simulator> owner, const TensorView& v)
    : owner_(std::move(owner)), name_(v.name), data_(v.data), dtype_(element_type(v.dtype)), shape_(v.shape),
      user_shape_(v.user_shape), device_(v.device), device_index_(v.device_index), input_(v.input) {}

void Tensor::order_consumer(uintptr_t stream) const {
    if (!order_) order_ = std::make_shared<StreamOrder>(*owner_);
    if (order_->capturing(stream)) return synchronize_producer();
    order_->caller_waits_for_engine(stream);
}

size_t Tensor::nbytes() const {
    size_t n = dtype_.size;
    for (int64_t d : shape_) n *= size_t(d);
    return n;
}

Tensor Tensor::view(const std::string& dtype, const std::vector<int64_t>& shape) const {
    Tensor out = *this;
    out.dtype_ = element_type(dtype);
    bool same = std::string(out.dtype_.name) == dtype_.name;
    bool as_bool = std::string(dtype_.name) == "uint8" && std::string(out.dtype_.name) == "bool";
    if (!same && !as_bool)
        throw TypeError("tensor '" + name_ + "' of dtype " + dtype_.name + " cannot be viewed as " + dtype +
                        "; expected " + dtype_.name + (std::string(dtype_.name) == "uint8" ? " or bool" : ""));
    out.shape_ = out.user_shape_ = shape;
    size_t n = out.dtype_.size;
    for (int64_t d : shape) {
        if (d < 0) throw Error("view of '" + name_ + "': negative dimension " + std::to_string(d));
        // Checked multiply: a wrapped product must not pass for the tensor's size.
        if (__builtin_mul_overflow(n, size_t(d), &n))
            throw Error("view of '" + name_ + "': the shape's size overflows; expected a shape of " +
                        std::to_string(nbytes()) + " bytes");
    }
    if (n != nbytes())
        throw Error("view of '" + name_ + "' covers " + std::to_string(n) + " bytes; expected " +
                    std::to_string(nbytes()) + " (the tensor's size)");
    return out;
}

DLDevice Tensor::dl_device() const {
    if (device_ == DeviceKind::kCuda) return DLDevice{kDLCUDA, device_index_};
    return DLDevice{kDLCPU, 0};
}

py::object Tensor::to_dlpack(py::object owner, bool versioned) {
    const Tensor& t = owner.cast<const Tensor&>();
    if (versioned) return make_capsule<DLManagedTensorVersioned>(t, std::move(owner));
    return make_capsule<DLManagedTensor>(t, std::move(owner));
}

py::dict Tensor::array_interface() const {
    py::dict d;
    d["shape"] = py::tuple(py::cast(shape_));
    d["typestr"] = dtype_.typestr;
    d["data"] = py::make_tuple(data_ptr(), false);
    d["strides"] = py::none();
    d["version"] = 3;
    return d;
}

} // namespace orrery::python

namespace orrery::python {

namespace {
std::string device_string(const Tensor& t) {
    DLDevice d = t.dl_device();
    return d.device_type == kDLCUDA ? "cuda:" + std::to_string(d.device_id) : "cpu";
}

/// The __dlpack__ keywords of the array API: a 1.x capsule when the consumer
/// says it understands one, no copies, no moves between devices.
py::object dlpack(py::object self, py::object stream, py::object max_version, py::object dl_device, py::object copy) {
    const Tensor& t = self.cast<const Tensor&>();
    DLDevice own = t.dl_device();
    if (!copy.is_none() && copy.cast<bool>())
        throw py::buffer_error("orrery tensor '" + t.name() +
                               "' is exported without copying; copy=True is not supported");
    if (!dl_device.is_none()) {
        auto want = dl_device.cast<std::pair<int, int>>();
        if (want.first != int(own.device_type) || want.second != own.device_id)
            throw py::buffer_error("orrery tensor '" + t.name() + "' lives on " + device_string(t) +
                                   "; it cannot be exported to another device");
    }
    bool versioned = false;
    if (!max_version.is_none()) versioned = max_version.cast<std::pair<int, int>>().first >= 1;
    // The consumer reads on its own stream (an int; -1: it wants no ordering),
    // which waits for the queued steps by an event (JAX takes a view per step:
    // no host wait). With no stream named, the host waits for them.
    if (own.device_type == kDLCUDA) {
        if (!py::isinstance<py::int_>(stream)) {
            t.synchronize_producer();
        } else if (long long s = stream.cast<long long>(); s != -1) {
            t.order_consumer(uintptr_t(s));
        }
    }
    return Tensor::to_dlpack(std::move(self), versioned);
}
} // namespace

void bind_tensor(py::module_& m) {
    py::class_<Tensor>(m, "Tensor", "A zero-copy view of one simulator tensor (DLPack, array interfaces).")
        .def_property_readonly("name", &Tensor::name)
        .def_property_readonly("shape", [](const Tensor& t) { return py::tuple(py::cast(t.shape())); })
        .def_property_readonly(
            "user_shape", [](const Tensor& t) { return py::tuple(py::cast(t.user_shape())); },
            "The shape orrery.Env shows (the engine's TensorView::user_shape).")
        .def_property_readonly("dtype", [](const Tensor& t) { return std::string(t.dtype().name); })
        .def_property_readonly("data_ptr", &Tensor::data_ptr)
        .def_property_readonly("nbytes", &Tensor::nbytes)
        .def_property_readonly("is_input", &Tensor::is_input)
        .def_property_readonly("device", &device_string)
        .def("view", &Tensor::view, py::arg("dtype"), py::arg("shape"),
             "The same memory with another shape, or uint8 seen as bool.")
        .def("__dlpack__", &dlpack, py::kw_only(), py::arg("stream") = py::none(), py::arg("max_version") = py::none(),
             py::arg("dl_device") = py::none(), py::arg("copy") = py::none())
        .def("__dlpack_device__",
             [](const Tensor& t) { return py::make_tuple(int(t.dl_device().device_type), t.dl_device().device_id); })
        .def_property_readonly("__array_interface__",
                               [](const Tensor& t) {
                                   if (t.dl_device().device_type != kDLCPU)
                                       throw py::attribute_error("__array_interface__: tensor is on " +
                                                                 device_string(t));
                                   return t.array_interface();
                               })
        .def_property_readonly("__cuda_array_interface__",
                               [](const Tensor& t) {
                                   if (t.dl_device().device_type != kDLCUDA)
                                       throw py::attribute_error("__cuda_array_interface__: tensor is on the host");
                                   t.synchronize_producer(); // the dict names no stream: data is ready now
                                   return t.array_interface();
                               })
        .def("__repr__", [](const Tensor& t) {
            std::string s = "orrery.Tensor('" + t.name() + "', shape=(";
            for (size_t i = 0; i < t.shape().size(); ++i) s += (i ? ", " : "") + std::to_string(t.shape()[i]);
            return s + (t.shape().size() == 1 ? ",)" : ")") + ", dtype=" + t.dtype().name +
                   ", device=" + device_string(t) + ")";
        });
}

} // namespace orrery::python
