#pragma once
// Megakernel generation: turns an env's Plan (the ordered ops of the step and
// reset passes) into CUDA source that NVRTC compiles. The source includes the
// env's own systems header, so the GPU runs the very functions the CPU runs.

#include <string>
#include <vector>

#include "engine/simulator.hpp"

namespace orrery::cuda {

/// Generated CUDA source and the kernels it defines, in launch order.
struct KernelSource {
    std::string text;                      ///< the whole translation unit
    std::string env_header;                ///< include name of the env's systems header
    std::vector<std::string> step_kernels; ///< one megakernel, or one kernel per op
    std::vector<std::string> reset_kernels;
    bool per_node = false;
};

/// Name of the __constant__ array holding the Storage struct (set once after load).
inline constexpr const char* kStorageSymbol = "orrery_storage_bytes";
/// Kernel that fills every ranged input tensor with uniform random values (benchmarks).
inline constexpr const char* kRandomInputsKernel = "orrery_random_inputs";

/// Generates the kernels for `plan`: one kernel per pass (one thread per world),
/// or with `per_node` one kernel per op, for comparison. Throws orrery::Error
/// if a system's C++ name cannot be determined.
KernelSource generate_kernels(const EnvSpec& spec, const Plan& plan, bool per_node);

/// The fully qualified C++ name of a system ("tag::spawn"), as the generated
/// source must spell it.
std::string qualified_system_name(const SystemRef& s);

} // namespace orrery::cuda
