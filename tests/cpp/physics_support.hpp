#pragma once
// Shared by the physics tests that run the solver outside a world: buffers
// over memory of their own and the solver's scratch for step_bodies.

#include <cstdint>
#include <vector>

#include "physics/module.hpp"

/// A solver buffer over memory of its own (the solver run outside a world, as
/// simulate() holds its buffers in the world).
template <class T> struct OwnBuffer {
    std::vector<uint8_t> mem;
    uint32_t error = 0;
    orrery::Buffer<T> b;
    explicit OwnBuffer(uint32_t capacity) : mem(orrery::kBufferHeaderBytes + capacity * sizeof(typename T::Element)) {
        b.count_ = reinterpret_cast<uint32_t*>(mem.data());
        b.items_ = reinterpret_cast<typename T::Element*>(mem.data() + orrery::kBufferHeaderBytes);
        b.capacity_ = capacity;
        b.error_ = &error;
    }
};

/// The solver's scratch for step_bodies: pairs, their manifolds, the colour order, the colouring.
struct Scratch {
    OwnBuffer<phys::Pairs> pairs{64};
    OwnBuffer<phys::Manifolds> manifolds{64};
    OwnBuffer<phys::SolveOrder> order{80};
    OwnBuffer<phys::Joints> no_joints{1};
    phys::Colouring colouring{};
    phys::StepBuffers with(orrery::Buffer<phys::Bodies> bodies, orrery::Buffer<phys::Contacts> contacts,
                           orrery::Buffer<phys::ContactCache> cache, orrery::Buffer<phys::Joints> joints) {
        return {bodies, contacts, cache, joints, pairs.b, manifolds.b, order.b, &colouring};
    }
    phys::StepBuffers with(orrery::Buffer<phys::Bodies> bodies, orrery::Buffer<phys::Contacts> contacts,
                           orrery::Buffer<phys::ContactCache> cache) {
        return with(bodies, contacts, cache, no_joints.b);
    }
};
