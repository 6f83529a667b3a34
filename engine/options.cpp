// options_from_environment: ORRERY_* variables onto SimOptions::gpu, with the
// meanings they have always had (a switch that is on by default is off only
// when set to "0"; one that is off by default is on only when set to "1").

#include "engine/options.hpp"

#include <cstdlib>
#include <cstring>

namespace orrery {

namespace {

/// True when environment variable `name` is set to "0" (a switch turned off).
bool env_off(const char* name) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, "0") == 0;
}

/// True when environment variable `name` is set to "1" (a switch turned on).
bool env_on(const char* name) {
    const char* v = std::getenv(name);
    return v && std::strcmp(v, "1") == 0;
}

/// The variable as an unsigned number when set and non-empty, else `fallback`.
uint32_t env_unsigned(const char* name, uint32_t fallback) {
    const char* v = std::getenv(name);
    return v && *v ? uint32_t(std::strtoul(v, nullptr, 10)) : fallback;
}

/// The variable's text when set and non-empty, else `fallback`.
std::string env_text(const char* name, const std::string& fallback) {
    const char* v = std::getenv(name);
    return v && *v ? std::string(v) : fallback;
}

} // namespace

SimOptions options_from_environment(SimOptions base) {
    GpuOptions& g = base.gpu;
    if (env_off("ORRERY_CUDA_STAGE")) g.stage = false;
    g.stage_worlds = env_unsigned("ORRERY_CUDA_STAGE_WORLDS", g.stage_worlds);
    g.stage_blocks_per_sm = env_unsigned("ORRERY_CUDA_STAGE_BLOCKS", g.stage_blocks_per_sm);
    if (env_off("ORRERY_CUDA_PDL")) g.programmatic_launch = false;
    g.cache_dir = env_text("ORRERY_CACHE_DIR", g.cache_dir);
    g.dump_source_dir = env_text("ORRERY_DUMP_SOURCE", g.dump_source_dir);
    if (std::getenv("ORRERY_VERBOSE")) g.verbose = true;
    g.source_dir = env_text("ORRERY_SOURCE_DIR", g.source_dir);
    g.nvrtc_options = env_text("ORRERY_NVRTC_OPTIONS", g.nvrtc_options);
    g.world_lanes = env_unsigned("ORRERY_CUDA_LANES", g.world_lanes);
    g.scratch_slots = env_unsigned("ORRERY_CUDA_SCRATCH_SLOTS", g.scratch_slots);
    g.compile_threads = env_unsigned("ORRERY_NVRTC_THREADS", g.compile_threads);
    if (env_off("ORRERY_NVRTC_BACKGROUND"))
        g.cold_start_level.clear();
    else
        g.cold_start_level = env_text("ORRERY_NVRTC_BACKGROUND", g.cold_start_level);
    if (env_on("ORRERY_CUDA_PER_NODE")) base.per_node_launches = true;
    if (env_off("ORRERY_CUDA_PER_NODE")) g.megakernel = true; // the env's preference overruled
    if (env_off("ORRERY_CUDA_FOLLOW")) g.follow_caller_stream = false;
    if (env_on("ORRERY_CUDA_FIT_BLOCKS")) g.fit_blocks = true;
    if (env_off("ORRERY_CUDA_FIT_BLOCKS")) g.fit_blocks = false;
    if (env_off("ORRERY_CUDA_FIT_FREE")) g.fit_free_blocks = false;
    if (env_on("ORRERY_CUDA_FIT_FREE")) g.fit_free_blocks = true;
    g.team_block_threads = env_unsigned("ORRERY_CUDA_BLOCK_THREADS", g.team_block_threads);
    if (env_off("ORRERY_CUDA_TEAM_SHARED")) g.team_shared = false;
    if (env_on("ORRERY_CUDA_TEAM_SHARED")) g.team_shared = true;
    g.order_teams = env_unsigned("ORRERY_CUDA_ORDER_TEAMS", g.order_teams);
    g.pack_serial = env_unsigned("ORRERY_CUDA_PACK_SERIAL", g.pack_serial);
    g.pack_teams = env_unsigned("ORRERY_CUDA_PACK_TEAMS", g.pack_teams);
    g.wide_lanes = env_unsigned("ORRERY_CUDA_WIDE_LANES", g.wide_lanes);
    if (env_off("ORRERY_CUDA_FUSE_SERIAL")) g.fuse_serial = false;
    g.printf_mb = env_unsigned("ORRERY_CUDA_PRINTF_MB", g.printf_mb);
    return base;
}

} // namespace orrery
