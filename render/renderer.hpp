#pragma once
// The one renderer both front ends use: a render pass, the instanced 2-D shape
// pipeline, the 3-D mesh pipeline (lit by one sun, with a shadow map), overlay
// lines, and the per-frame instance buffers. The
// offscreen recorder and the window differ only in the framebuffer they give it.

#include <array>
#include <vector>

#include "render/scene.hpp"
#include "render/vk_context.hpp"

namespace orrery::render {

/// The view: 2-D zoom and pan over the scene's bounds, or a 3-D camera: an orbit
/// around the bounds' centre, straight down on it, or through an entity's eyes.
struct Camera {
    enum class Mode : uint8_t { kOrbit, kTop, kEye };
    Mode mode = Mode::kOrbit;         ///< 3-D only
    float zoom = 1.0f;                ///< 2-D: 1 frames the bounds
    float pan_x = 0.0f, pan_y = 0.0f; ///< 2-D: world units; 3-D orbit and top: the target's offset from the centre
    float yaw = -2.2f, pitch = 0.75f; ///< 3-D orbit: radians
    float distance = 0.0f;            ///< 3-D orbit and top: 0 picks one from the bounds
    float fov = 0.8f;                 ///< 3-D orbit and top: vertical field of view, radians
    /// Entity's eye: where it stands and looks (the front end fills these from
    /// the entity's pose every frame), its horizontal field of view and the near
    /// plane (beyond the entity's own body).
    std::array<float, 3> eye{0.0f, 0.0f, 0.0f}, forward{1.0f, 0.0f, 0.0f};
    float eye_fov = 2.3561945f; ///< 135 degrees, hide-and-seek's vision cone
    float eye_near = 0.05f;
    bool operator==(const Camera&) const = default;
};

/// A 3-D camera's placement: eye, right, up and forward unit vectors, the
/// tangents of the half fields of view, and the depth range.
struct CameraFrame {
    std::array<float, 3> eye, right, up, forward;
    float tan_x, tan_y, near, far;
};
/// Where the 3-D camera `cam` stands for a scene of `bounds` drawn in `w` x `h` pixels.
CameraFrame camera_frame(const std::array<float, 4>& bounds, const Camera& cam, uint32_t w, uint32_t h);
/// Column-major 4x4 view-projection of a camera frame (Vulkan clip space: y down, depth in [0, 1]).
std::array<float, 16> view_proj(const CameraFrame& f);
/// Orthographic view-projection of the sun (`light`: towards it) over `bounds`, for the shadow map.
std::array<float, 16> light_view_proj(const std::array<float, 4>& bounds, const std::array<float, 3>& light);
/// The body of `scene` under pixel (px, py) of a `w` x `h` view (0, 0 top left):
/// the nearest one the ray from the eye through that pixel hits, as an index
/// into scene.bodies, or -1. Planes are never picked.
int32_t pick_body(const Scene& scene, const Camera& cam, uint32_t w, uint32_t h, float px, float py);
/// Aims an entity's-eye camera from the body of `archetype` row `row` in
/// `scene`: at its position, looking along its body +x, and hides that body
/// (the eye is inside it). False, with both untouched, when there is no such body.
bool aim_eye(Scene& scene, uint32_t archetype, uint32_t row, Camera& cam);
/// Where world point `p` lands in a `w` x `h` view: pixel x, y and clip w (> 0 in front).
std::array<float, 3> project(const std::array<float, 16>& view_proj, const std::array<float, 3>& p, uint32_t w,
                             uint32_t h);

/// 2-D transform from world units to clip space: clip = world * scale + offset.
struct Transform2D {
    float scale[2];
    float offset[2];
};
/// The 2-D transform that frames `bounds` (with a small margin) in `w` x `h`
/// pixels keeping the aspect ratio, then applies the camera's zoom and pan.
Transform2D frame_bounds(const std::array<float, 4>& bounds, const Camera& cam, uint32_t w, uint32_t h);

/// Column-major 4x4 view-projection of the camera (any mode; the name is older than the modes).
std::array<float, 16> orbit_view_proj(const std::array<float, 4>& bounds, const Camera& cam, uint32_t w, uint32_t h);

class Renderer {
  public:
    static constexpr VkFormat kDepthFormat = VK_FORMAT_D32_SFLOAT;

    /// A renderer drawing into `color_format` images left in `final_layout`.
    /// shadow_size: the shadow map's side in texels, 64 to 8192; 0 picks 2048 on a GPU, 1024 on a CPU device.
    Renderer(const VulkanContext& vk, VkFormat color_format, VkImageLayout final_layout, uint32_t shadow_size = 0);
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
    /// A 3-D scene's shadow map is rendered first, before the pass begins, unless
    /// the map already holds the uploaded scene's (the same bodies, light and
    /// bounds as the scene whose map was recorded last: only the camera or
    /// the overlays changed).
    void begin_and_draw(VkCommandBuffer cmd, VkFramebuffer fb, VkExtent2D extent, const Scene& scene, const Camera& cam,
                        VkRect2D view = {}) const;

    /// Side of the square shadow map, texels: 2048 on a GPU; 1024 on a CPU
    /// driver (lavapipe), where the map's depth pass is most of a frame's cost.
    uint32_t shadow_size() const { return shadow_size_; }
    /// Shadow-map passes recorded so far (frames whose map was kept are not counted).
    uint64_t shadow_passes() const { return shadow_passes_; }

  private:
    void create_pass(VkFormat color_format, VkImageLayout final_layout);
    void create_shadow_target(uint32_t size);
    void create_descriptors();
    void create_pipelines();
    void create_meshes();
    void ensure(Buffer& b, VkDeviceSize bytes);
    void draw_meshes(VkCommandBuffer cmd, VkPipeline pipeline, uint32_t pass) const;

    const VulkanContext& vk_;
    VkRenderPass pass_ = VK_NULL_HANDLE, shadow_pass_ = VK_NULL_HANDLE;
    VkPipelineLayout layout2d_ = VK_NULL_HANDLE, layout3d_ = VK_NULL_HANDLE;
    VkPipeline shapes_ = VK_NULL_HANDLE, meshes_ = VK_NULL_HANDLE, shadows_ = VK_NULL_HANDLE, lines_ = VK_NULL_HANDLE;
    uint32_t shadow_size_ = 2048;
    Image shadow_map_;
    VkFramebuffer shadow_fb_ = VK_NULL_HANDLE;
    VkSampler shadow_sampler_ = VK_NULL_HANDLE;
    VkDescriptorSetLayout set_layout_ = VK_NULL_HANDLE;
    VkDescriptorPool pool_ = VK_NULL_HANDLE;
    VkDescriptorSet set_ = VK_NULL_HANDLE;
    Buffer frame_;    ///< the 3-D pipelines' uniforms (cameras, light), written per frame
    Buffer vertices_; ///< cube, sphere, capsule, plane (Vertex3D)
    std::array<uint32_t, size_t(Mesh::kCount)> mesh_first_{}, mesh_count_{};
    Buffer instances2d_, instances3d_, hull_vertices_, lines_buffer_;
    uint32_t n2d_ = 0, n_lines_ = 0;
    std::array<uint32_t, size_t(Mesh::kCount)> n3d_{};
    std::vector<std::pair<uint32_t, uint32_t>> hull_draws_; ///< first vertex, count per hull instance
    /// What the shadow map was last rendered from (the casters, light and bounds);
    /// `shadow_current_`: the uploaded scene's are the same, so its pass can be skipped.
    std::array<std::vector<Instance3D>, size_t(Mesh::kCount)> shadow_meshes_;
    std::vector<HullInstance> shadow_hulls_;
    std::vector<Vertex3D> shadow_hull_vertices_;
    std::array<float, 4> shadow_bounds_{};
    std::array<float, 3> shadow_light_{};
    bool shadow_current_ = false;
    mutable bool shadow_recorded_ = false; ///< a shadow pass of the stored casters has been recorded
    mutable uint64_t shadow_passes_ = 0;
};

} // namespace orrery::render
