// The host code's instruction-set level (ORRERY_HOST_ARCH, cmake/HostArch.cmake)
// checked when the library loads: a binary built for x86-64-v3 and moved to an
// older CPU says so and exits, where it would otherwise stop on the first
// illegal instruction with no word of why. The check is the first constructor
// of the binary (priority 101, before every C++ static initialiser) and is
// itself compiled for the plain x86-64 baseline, so it runs on any x86-64 CPU.

#include "engine/host_cpu.hpp"

#include <cstdio>
#include <cstdlib>

#ifndef ORRERY_HOST_ARCH_LEVEL
#define ORRERY_HOST_ARCH_LEVEL ""
#endif

namespace orrery {

const char* host_arch() { return ORRERY_HOST_ARCH_LEVEL; }

} // namespace orrery

// GCC's __builtin_cpu_supports knows the level names (GCC 12); Clang builds
// (the fuzz targets) and builds at the compiler's default skip the check.
#if defined(ORRERY_HOST_ARCH_CHECK) && defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
__attribute__((constructor(101), target("arch=x86-64"))) static void orrery_check_host_cpu() {
    __builtin_cpu_init();
    if (__builtin_cpu_supports(ORRERY_HOST_ARCH_LEVEL)) return;
    std::fputs("orrery: this build's host code is compiled for " ORRERY_HOST_ARCH_LEVEL
               " (ORRERY_HOST_ARCH), which this CPU does not run. Build Orrery on this machine "
               "(ORRERY_HOST_ARCH=auto, the default, takes its level), or with -DORRERY_HOST_ARCH=x86-64-v2 "
               "or -DORRERY_HOST_ARCH= (the compiler's default) for older CPUs.\n",
               stderr);
    std::_Exit(70);
}
#endif
