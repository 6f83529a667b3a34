// Must not compile (tests/CMakeLists.txt checks the message): two modules that
// do not build on each other both number their components from 0, so an env
// composing both would give two components one id.
#include "ecs/storage.hpp"

namespace left {
struct A {
    int v;
};
ORRERY_COMPONENTS(A);
} // namespace left
namespace right {
struct B {
    int v;
};
ORRERY_COMPONENTS(B);
} // namespace right
namespace both {
struct C {
    int v;
};
ORRERY_COMPONENTS(left::OrreryComponents, right::OrreryComponents, C);
} // namespace both
