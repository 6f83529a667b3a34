#pragma once
// The windowed front end's plumbing: a GLFW window, its Vulkan swapchain and
// Dear ImGui, drawing a Scene with the shared Renderer and the UI on top.

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "render/renderer.hpp"

struct GLFWwindow;

namespace orrery::render {

/// A window showing scenes; the scene fills the area left of `panel_width` pixels.
class Window {
  public:
    /// Throws orrery::Error with a hint when there is no display or no Vulkan driver.
    Window(const std::string& title, uint32_t width, uint32_t height, const std::string& vk_device);
    ~Window();
    Window(const Window&) = delete;
    Window& operator=(const Window&) = delete;

    GLFWwindow* handle() const { return window_; }
    bool should_close() const;
    const std::string& device_name() const { return vk_->device_name(); }

    /// Polls events and starts an ImGui frame.
    void begin_frame();
    /// Renders the scene and the ImGui frame, then presents. When `screenshot`
    /// is given it receives this frame as RGBA8 (rows from the top) and its size.
    ///
    /// A frame equal to the last presented one (same scene, camera, panel width
    /// and ImGui draw data; the window neither resized nor damaged) is neither
    /// rendered nor presented: the display keeps showing the last image, and
    /// end_frame waits out a 60 Hz frame period instead of the present's. On a
    /// GPU that also steps a batch this leaves the device to the step between
    /// changes (a landed world view, a step, the mouse, a panel).
    void end_frame(const Scene& scene, const Camera& cam, uint32_t panel_width,
                   std::vector<uint8_t>* screenshot = nullptr, uint32_t* shot_w = nullptr, uint32_t* shot_h = nullptr);
    /// end_frame calls so far, and those that rendered and presented a frame.
    uint64_t frames() const { return frames_; }
    uint64_t renders() const { return renders_; }

  private:
    /// True when this frame would draw what the last presented one drew.
    bool unchanged(const Scene& scene, const Camera& cam, uint32_t panel_width);
    void create_swapchain();
    void destroy_swapchain();
    void init_imgui();
    void record(uint32_t image, const Scene& scene, const Camera& cam, uint32_t panel_width, bool shot);

    GLFWwindow* window_ = nullptr;
    std::unique_ptr<VulkanContext> vk_;
    std::unique_ptr<Renderer> renderer_;
    VkSwapchainKHR swapchain_ = VK_NULL_HANDLE;
    VkFormat format_ = VK_FORMAT_UNDEFINED;
    VkExtent2D extent_{};
    uint32_t min_images_ = 2;
    std::vector<VkImage> images_;
    std::vector<VkImageView> views_;
    std::vector<VkFramebuffer> framebuffers_;
    Image depth_;
    Buffer readback_;
    VkDescriptorPool imgui_pool_ = VK_NULL_HANDLE;
    VkCommandBuffer cmd_ = VK_NULL_HANDLE;
    VkSemaphore acquired_ = VK_NULL_HANDLE, rendered_ = VK_NULL_HANDLE;
    VkFence fence_ = VK_NULL_HANDLE;
    bool imgui_ready_ = false;
    bool can_copy_ = false; ///< swapchain images allow transfer reads (screenshots)
    /// The last presented frame: its scene, camera, panel width and ImGui draw data (vertices,
    /// indices and commands as bytes); `ui_` is this frame's, built by unchanged().
    bool presented_ = false;
    Scene last_scene_;
    Camera last_cam_;
    uint32_t last_panel_ = 0;
    std::vector<uint8_t> ui_, last_ui_;
    std::chrono::steady_clock::time_point next_idle_; ///< when a skipped frame's period ends
    uint64_t frames_ = 0, renders_ = 0;
};

} // namespace orrery::render
