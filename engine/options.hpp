#pragma once
// The one place where ORRERY_* environment variables become engine options.
// The engine reads no environment variable for its tuning (SimOptions::gpu
// holds every knob); the command-line tools, the benchmarks and the Python
// binding call this so the variables docs/gpu.md lists keep working for their
// users. Library users and tests set the fields directly.

#include "engine/simulator.hpp"

namespace orrery {

/// `base` with every documented variable that is set applied over it:
/// ORRERY_CUDA_STAGE=0 (gpu.stage off), ORRERY_CUDA_STAGE_WORLDS,
/// ORRERY_CUDA_STAGE_BLOCKS, ORRERY_CUDA_PDL=0, ORRERY_CACHE_DIR,
/// ORRERY_DUMP_SOURCE, ORRERY_VERBOSE (any value) and ORRERY_SOURCE_DIR.
SimOptions options_from_environment(SimOptions base = {});

} // namespace orrery
