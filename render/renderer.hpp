#pragma once
// The one renderer both front ends use: a render pass, the instanced 2-D shape
// pipeline and the 3-D mesh pipeline, and the per-frame instance buffers. The
// offscreen recorder and the window differ only in the framebuffer they give it.

#include <array>

#include "render/scene.hpp"
#include "render/vk_context.hpp"

namespace orrery::render {

/// The view: 2-D zoom and pan over the scene's bounds, or a 3-D orbit camera
/// around the bounds' centre (z up).
struct Camera {
    float zoom = 1.0f;                ///< 2-D: 1 frames the bounds
    float pan_x = 0.0f, pan_y = 0.0f; ///< 2-D: world units
    float yaw = -2.2f, pitch = 0.75f; ///< 3-D: radians
    float distance = 0.0f;            ///< 3-D: 0 picks one from the bounds
    float fov = 0.8f;                 ///< 3-D: vertical field of view, radians
};

/// 2-D transform from world units to clip space: clip = world * scale + offset.
struct Transform2D {
    float scale[2];
    float offset[2];
};
/// The 2-D transform that frames `bounds` (with a small margin) in `w` x `h`
/// pixels keeping the aspect ratio, then applies the camera's zoom and pan.
Transform2D frame_bounds(const std::array<float, 4>& bounds, const Camera& cam, uint32_t w, uint32_t h);

/// Column-major 4x4 view-projection of the orbit camera (Vulkan clip space).
std::array<float, 16> orbit_view_proj(const std::array<float, 4>& bounds, const Camera& cam, uint32_t w, uint32_t h);

class Renderer {
  public:
    static constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;

    /// A renderer drawing into `color_format` images left in `final_layout`.
    Renderer(const VulkanContext& vk, VkFormat color_format, VkImageLayout final_layout);
    ~Renderer();
    Renderer(const Renderer&) = delete;
    Renderer& operator=(const Renderer&) = delete;

    /// The render pass framebuffers must be compatible with (colour, then depth).
    VkRenderPass render_pass() const { return pass_; }
    /// Copies a scene's instances into the renderer's buffers.
    /// @warning no command buffer drawing a previous upload may still be executing.
    void upload(const Scene& scene);
    /// Begins the render pass on `fb`, clears to the scene's background and draws
    /// the uploaded scene. The caller may record more (ImGui), then ends the pass.
    /// `view` is the part of the framebuffer the scene fills (all of it when empty).
    void begin_and_draw(VkCommandBuffer cmd, VkFramebuffer fb, VkExtent2D extent, const Scene& scene, const Camera& cam,
                        VkRect2D view = {}) const;

  private:
    void create_pass(VkFormat color_format, VkImageLayout final_layout);
    void create_pipelines();
    void create_meshes();
    void ensure(Buffer& b, VkDeviceSize bytes);

    const VulkanContext& vk_;
    VkRenderPass pass_ = VK_NULL_HANDLE;
    VkPipelineLayout layout2d_ = VK_NULL_HANDLE, layout3d_ = VK_NULL_HANDLE;
    VkPipeline shapes_ = VK_NULL_HANDLE, meshes_ = VK_NULL_HANDLE;
    Buffer vertices_; ///< cube then sphere (position, normal)
    std::array<uint32_t, size_t(Mesh::kCount)> mesh_first_{}, mesh_count_{};
    Buffer instances2d_, instances3d_;
    uint32_t n2d_ = 0;
    std::array<uint32_t, size_t(Mesh::kCount)> n3d_{};
};

} // namespace orrery::render
