#pragma once
// The x86-64 level the host code was built for (cmake/HostArch.cmake).

namespace orrery {

/// The -march level of this build's host code ("x86-64-v3", "x86-64-v2"), or
/// "" for the compiler's default. The library checks when it loads that the
/// CPU runs it (engine/host_cpu.cpp).
const char* host_arch();

} // namespace orrery
