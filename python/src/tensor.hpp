#pragma once
// A Python-visible view of one exported simulator tensor. It shares the
// simulator's memory (no copy) and keeps the simulator alive while any view,
// NumPy array or DLPack consumer still points into it.

#include <pybind11/pybind11.h>

#include <memory>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "python/src/dlpack.hpp"

namespace orrery::python {

class StreamOrder;

/// Element types a view can carry: the engine's, plus bool (a 0/1 byte view).
struct ElementType {
    const char* name;    ///< NumPy name: "uint8", "bool", ...
    const char* typestr; ///< array-interface type string: "|u1", "<f4", ...
    DLDataType dl;
    size_t size;
};
ElementType element_type(DType t);
/// The element type named `name` ("bool", "float32", ...); throws orrery::TypeError if unknown.
ElementType element_type(const std::string& name);

/// A dense row-major view into simulator memory.
class Tensor {
  public:
    Tensor(std::shared_ptr<Simulator> owner, const TensorView& v);

    /// The same memory with another shape and/or a same-sized element type
    /// (uint8 may be viewed as bool); throws orrery::Error if sizes disagree.
    Tensor view(const std::string& dtype, const std::vector<int64_t>& shape) const;

    const std::string& name() const { return name_; }
    const ElementType& dtype() const { return dtype_; }
    const std::vector<int64_t>& shape() const { return shape_; }
    /// TensorView::user_shape: the shape the package shows users (a view's is its shape).
    const std::vector<int64_t>& user_shape() const { return user_shape_; }
    uintptr_t data_ptr() const { return reinterpret_cast<uintptr_t>(data_); }
    DLDevice dl_device() const;
    bool is_input() const { return input_; }
    size_t nbytes() const;
    /// Waits for the owning simulator's queued work (before a device export).
    void synchronize_producer() const { owner_->synchronize(); }
    /// Makes CUDA stream `stream` (a DLPack consumer's: 1 and 2 are the legacy
    /// and per-thread default streams) wait for the simulator's queued work with
    /// an event, so the host does not wait; while `stream` is being captured
    /// into a CUDA graph (an outside event cannot be waited on there) it waits
    /// on the host instead. The events are made at the first call.
    void order_consumer(uintptr_t stream) const;

    /// A DLPack capsule over this memory; `versioned` picks the 1.x ABI.
    /// `owner` is the Python object kept alive until the consumer lets go.
    static pybind11::object to_dlpack(pybind11::object owner, bool versioned);
    pybind11::dict array_interface() const;

  private:
    std::shared_ptr<Simulator> owner_;
    mutable std::shared_ptr<StreamOrder> order_; ///< for order_consumer, made at its first call
    std::string name_;
    void* data_ = nullptr;
    ElementType dtype_;
    std::vector<int64_t> shape_, user_shape_;
    DeviceKind device_ = DeviceKind::kCpu;
    int device_index_ = 0;
    bool input_ = false;
};

/// Registers the Tensor class on module `m`.
void bind_tensor(pybind11::module_& m);

} // namespace orrery::python
