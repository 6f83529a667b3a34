#pragma once
// The device runtime code kept in engine/cuda/device/*.cuh, embedded into the
// library as text at build time (embed_device.cmake): codegen.cpp pastes it
// into every generated kernel source, and the world-gather kernel is compiled
// from it. Each is its file less the file's first comment block.

namespace orrery::cuda {

/// device/storage.cuh: the __constant__ Storage every kernel reads.
extern const char* const kStorageCuh;
/// device/scratch.cuh: taking and giving back slots of step scratch (EnvSpec::scratch).
extern const char* const kScratchCuh;
/// device/stage.cuh: the staged megakernel's copies into and out of shared memory.
extern const char* const kStageCuh;
/// device/gather.cuh: the kernel that gathers one world for a snapshot (a whole source).
extern const char* const kGatherCuh;

} // namespace orrery::cuda
