#pragma once
// The physics module's device-side surface, for an env's header: components,
// the RigidBody bundle, the PhysicsWorld singleton and the systems. Compiles
// under g++ and NVRTC. The host side (PhysicsOptions, add_to) is module.hpp.

#include "physics/solver.hpp" // and, through it, physics/joint.hpp
