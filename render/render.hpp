#pragma once
// The public entry points of render/: offscreen frames of one world as RGBA8
// (for orrery-record, tests and Gymnasium's render_mode="rgb_array"). Only the
// chosen world is copied to the host (Simulator::read_world), never the batch.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "render/renderer.hpp"

namespace orrery::render {

/// How an offscreen renderer is created.
struct FrameOptions {
    uint32_t width = 512, height = 512;
    std::string device; ///< Vulkan device index or name substring; empty: best available
    /// Side of the square shadow map in texels, 64 to 8192; 0: the renderer's
    /// (2048 on a GPU, 1024 on a CPU device).
    uint32_t shadow_size = 0;
};

/// Renders scenes into an RGBA8 image and reads it back. Works wherever any
/// Vulkan driver exists (lavapipe included); needs no display.
///
/// A frame whose scene and camera equal the last rendered frame's is not
/// rendered again: render() hands back that frame's pixels without submitting
/// anything to the device. A watcher asking for 60 frames a second of a world
/// whose view changes ten times a second then renders ten of them, which
/// matters when the device also runs the simulator: on one GPU the renders
/// take turns with the kernels stepping the batch (docs/viewer.md, item 5).
class FrameRenderer {
  public:
    /// Throws orrery::Error when no Vulkan driver or device exists, or a size is 0.
    explicit FrameRenderer(FrameOptions opts = {});
    ~FrameRenderer();
    FrameRenderer(const FrameRenderer&) = delete;
    FrameRenderer& operator=(const FrameRenderer&) = delete;

    /// RGBA8 pixels of world `world`, width * height * 4 bytes, rows from the top.
    /// Throws orrery::Error when the world is out of range or the env draws nothing.
    std::vector<uint8_t> render(Simulator& sim, uint32_t world, const Camera& cam = {});
    /// RGBA8 pixels of an already built scene.
    std::vector<uint8_t> render(const Scene& scene, const Camera& cam = {});

    /// Frames handed out by render(), and those of them that were rendered
    /// (the others repeated the last rendered frame, its scene and camera unchanged).
    uint64_t frames() const { return frames_; }
    uint64_t renders() const { return renders_; }
    /// Renders that drew the 3-D shadow map (the others kept it: same casters, light and bounds).
    uint64_t shadow_passes() const;
    /// The shadow map's side in texels (FrameOptions::shadow_size, or the default).
    uint32_t shadow_size() const;

    uint32_t width() const { return opts_.width; }
    uint32_t height() const { return opts_.height; }
    /// The Vulkan device the frames come from.
    const std::string& device_name() const;

  private:
    struct Impl;
    FrameOptions opts_;
    std::unique_ptr<Impl> impl_;
    uint64_t frames_ = 0, renders_ = 0;
};

/// One frame of world `world` as RGBA8 (height rows of width * 4 bytes, top row
/// first), for Gymnasium's render_mode="rgb_array". Keeps one FrameRenderer per
/// size and Vulkan device (`vk_device`: VulkanOptions::device, "" chooses) for
/// the life of the process; safe to call from several threads (serialised).
std::vector<uint8_t> render_world_rgba(Simulator& sim, uint32_t world, uint32_t width = 512, uint32_t height = 512,
                                       const std::string& vk_device = "");

/// Builds the scene of world `world` of `sim` (reads only that world), with
/// the overlays `options` turns on (default: those the env turns on).
Scene scene_of(Simulator& sim, uint32_t world);
Scene scene_of(Simulator& sim, uint32_t world, const SceneOptions& options);

} // namespace orrery::render
