// options_from_environment: each documented ORRERY_* variable (docs/gpu.md)
// lands on its SimOptions::gpu field with the meaning it has always had, and
// nothing changes when none is set. The engine itself reads none of them.

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "engine/options.hpp"

namespace {

const char* const kVariables[] = {
    "ORRERY_CUDA_STAGE",       "ORRERY_CUDA_STAGE_WORLDS",  "ORRERY_CUDA_STAGE_BLOCKS", "ORRERY_CUDA_PDL",
    "ORRERY_CACHE_DIR",        "ORRERY_DUMP_SOURCE",        "ORRERY_VERBOSE",           "ORRERY_SOURCE_DIR",
    "ORRERY_NVRTC_OPTIONS",    "ORRERY_CUDA_LANES",         "ORRERY_CUDA_PER_NODE",     "ORRERY_NVRTC_THREADS",
    "ORRERY_CUDA_FOLLOW",      "ORRERY_CUDA_SCRATCH_SLOTS", "ORRERY_NVRTC_BACKGROUND",  "ORRERY_CUDA_FIT_BLOCKS",
    "ORRERY_CUDA_TEAM_SHARED", "ORRERY_CUDA_BLOCK_THREADS", "ORRERY_CUDA_ORDER_TEAMS",  "ORRERY_CUDA_FIT_FREE",
    "ORRERY_CUDA_PACK_SERIAL", "ORRERY_CUDA_WIDE_LANES",    "ORRERY_CUDA_PACK_TEAMS",   "ORRERY_CUDA_FUSE_SERIAL",
    "ORRERY_CUDA_PRINTF_MB"};

/// Clears the variables for one test and puts the caller's values back after it.
class Environment : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* v : kVariables) {
            if (const char* old = std::getenv(v)) saved_.emplace_back(v, old);
            unsetenv(v);
        }
    }
    void TearDown() override {
        for (const char* v : kVariables) unsetenv(v);
        for (const auto& [name, value] : saved_) setenv(name.c_str(), value.c_str(), 1);
    }
    std::vector<std::pair<std::string, std::string>> saved_;
};

TEST_F(Environment, NothingSetKeepsTheDefaultsAndTheBase) {
    orrery::SimOptions base;
    base.num_worlds = 7;
    base.gpu.stage_worlds = 48;
    orrery::SimOptions o = orrery::options_from_environment(base);
    EXPECT_EQ(o.num_worlds, 7u);
    EXPECT_TRUE(o.gpu.stage);
    EXPECT_EQ(o.gpu.stage_worlds, 48u);
    EXPECT_EQ(o.gpu.stage_blocks_per_sm, 2u);
    EXPECT_TRUE(o.gpu.programmatic_launch);
    EXPECT_EQ(o.gpu.cache_dir, "");
    EXPECT_EQ(o.gpu.dump_source_dir, "");
    EXPECT_FALSE(o.gpu.verbose);
    EXPECT_EQ(o.gpu.source_dir, "");
    EXPECT_EQ(o.gpu.nvrtc_options, "");
    EXPECT_EQ(o.gpu.world_lanes, 0u);
    EXPECT_EQ(o.gpu.scratch_slots, 0u);
    EXPECT_FALSE(o.gpu.megakernel);
    EXPECT_EQ(o.gpu.compile_threads, 0u);
    EXPECT_EQ(o.gpu.cold_start_level, "max");
    EXPECT_FALSE(o.per_node_launches);
    EXPECT_TRUE(o.gpu.follow_caller_stream);
}

TEST_F(Environment, EveryVariableSetsItsField) {
    setenv("ORRERY_CUDA_STAGE", "0", 1);
    setenv("ORRERY_CUDA_STAGE_WORLDS", "80", 1);
    setenv("ORRERY_CUDA_STAGE_BLOCKS", "3", 1);
    setenv("ORRERY_CUDA_PDL", "0", 1);
    setenv("ORRERY_CACHE_DIR", "/tmp/cache", 1);
    setenv("ORRERY_DUMP_SOURCE", "/tmp/dump", 1);
    setenv("ORRERY_VERBOSE", "", 1); // set at all is on
    setenv("ORRERY_SOURCE_DIR", "/src", 1);
    setenv("ORRERY_NVRTC_OPTIONS", "--maxrregcount=128", 1);
    setenv("ORRERY_CUDA_LANES", "8", 1);
    setenv("ORRERY_CUDA_PER_NODE", "1", 1);
    setenv("ORRERY_CUDA_SCRATCH_SLOTS", "3", 1);
    setenv("ORRERY_NVRTC_THREADS", "3", 1);
    setenv("ORRERY_CUDA_FOLLOW", "0", 1);
    setenv("ORRERY_NVRTC_BACKGROUND", "mid", 1);
    setenv("ORRERY_CUDA_FIT_BLOCKS", "1", 1);
    setenv("ORRERY_CUDA_FIT_FREE", "0", 1);
    setenv("ORRERY_CUDA_TEAM_SHARED", "0", 1);
    setenv("ORRERY_CUDA_BLOCK_THREADS", "384", 1);
    setenv("ORRERY_CUDA_ORDER_TEAMS", "2", 1);
    setenv("ORRERY_CUDA_PACK_SERIAL", "0", 1);
    setenv("ORRERY_CUDA_WIDE_LANES", "64", 1);
    setenv("ORRERY_CUDA_PACK_TEAMS", "2", 1);
    setenv("ORRERY_CUDA_FUSE_SERIAL", "0", 1);
    EXPECT_TRUE(orrery::SimOptions{}.gpu.fuse_serial);
    EXPECT_EQ(orrery::SimOptions{}.gpu.pack_serial, 1u);
    EXPECT_EQ(orrery::SimOptions{}.gpu.wide_lanes, 0u);
    EXPECT_EQ(orrery::SimOptions{}.gpu.pack_teams, 1u);
    EXPECT_FALSE(orrery::SimOptions{}.gpu.fit_blocks);
    EXPECT_TRUE(orrery::SimOptions{}.gpu.fit_free_blocks);
    EXPECT_EQ(orrery::SimOptions{}.gpu.order_teams, 1u);
    EXPECT_EQ(orrery::SimOptions{}.gpu.team_block_threads, 0u);
    EXPECT_TRUE(orrery::SimOptions{}.gpu.team_shared);
    orrery::SimOptions o = orrery::options_from_environment();
    EXPECT_TRUE(o.gpu.fit_blocks);
    EXPECT_FALSE(o.gpu.fit_free_blocks);
    EXPECT_FALSE(o.gpu.team_shared);
    EXPECT_EQ(o.gpu.order_teams, 2u);
    EXPECT_EQ(o.gpu.pack_serial, 0u);
    EXPECT_EQ(o.gpu.wide_lanes, 64u);
    EXPECT_EQ(o.gpu.pack_teams, 2u);
    EXPECT_FALSE(o.gpu.fuse_serial);
    EXPECT_EQ(o.gpu.team_block_threads, 384u);
    EXPECT_FALSE(o.gpu.stage);
    EXPECT_EQ(o.gpu.stage_worlds, 80u);
    EXPECT_EQ(o.gpu.stage_blocks_per_sm, 3u);
    EXPECT_FALSE(o.gpu.programmatic_launch);
    EXPECT_EQ(o.gpu.cache_dir, "/tmp/cache");
    EXPECT_EQ(o.gpu.dump_source_dir, "/tmp/dump");
    EXPECT_TRUE(o.gpu.verbose);
    EXPECT_EQ(o.gpu.source_dir, "/src");
    EXPECT_EQ(o.gpu.nvrtc_options, "--maxrregcount=128");
    EXPECT_EQ(o.gpu.world_lanes, 8u);
    EXPECT_EQ(o.gpu.scratch_slots, 3u);
    EXPECT_EQ(o.gpu.compile_threads, 3u);
    EXPECT_EQ(o.gpu.cold_start_level, "mid");
    EXPECT_TRUE(o.per_node_launches);
    EXPECT_FALSE(o.gpu.follow_caller_stream);
    EXPECT_FALSE(o.gpu.megakernel);
}

// ORRERY_CUDA_PER_NODE=0 asks for the megakernel even where the env prefers
// one kernel per node (EnvSpec::prefer_per_node); unset leaves it to the env.
TEST_F(Environment, PerNodeZeroAsksForTheMegakernel) {
    setenv("ORRERY_CUDA_PER_NODE", "0", 1);
    orrery::SimOptions o = orrery::options_from_environment();
    EXPECT_TRUE(o.gpu.megakernel);
    EXPECT_FALSE(o.per_node_launches);
}

TEST_F(Environment, SwitchesChangeOnlyAtZeroOrOne) {
    setenv("ORRERY_CUDA_STAGE", "1", 1);
    setenv("ORRERY_CUDA_PDL", "no", 1);
    setenv("ORRERY_CUDA_PER_NODE", "yes", 1);
    setenv("ORRERY_CUDA_FOLLOW", "false", 1);
    orrery::SimOptions o = orrery::options_from_environment();
    EXPECT_TRUE(o.gpu.stage);
    EXPECT_TRUE(o.gpu.follow_caller_stream);
    EXPECT_TRUE(o.gpu.programmatic_launch);
    EXPECT_FALSE(o.per_node_launches) << "a switch that is off by default turns on only at 1";
}

// ORRERY_NVRTC_BACKGROUND=0 turns the cold start's background compile off
// (everything compiled fully before the first step); any other value names the level.
TEST_F(Environment, BackgroundZeroCompilesFullyFirst) {
    setenv("ORRERY_NVRTC_BACKGROUND", "0", 1);
    EXPECT_EQ(orrery::options_from_environment().gpu.cold_start_level, "");
    setenv("ORRERY_NVRTC_BACKGROUND", "min", 1);
    EXPECT_EQ(orrery::options_from_environment().gpu.cold_start_level, "min");
}

} // namespace
