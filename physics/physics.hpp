#pragma once
// The physics module's device-side surface, for an env's header: components,
// the RigidBody bundle, the PhysicsWorld singleton, the systems and the
// queries (ray casts, closest bodies). Compiles under g++ and NVRTC. The host
// side (PhysicsOptions, add_to) is module.hpp.

#include "physics/query.hpp"
#include "physics/solver.hpp" // and, through it, physics/joint.hpp
