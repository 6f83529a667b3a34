#pragma once
// The Vulkan instance, device and queue both front ends share, plus the few
// buffer/image helpers the renderer needs. Every Vulkan call that can fail goes
// through ORRERY_VK, which throws orrery::Error with the call and result.

#include <functional>
#include <string>
#include <vector>

#include <vulkan/vulkan.h>

#include "engine/error.hpp"

namespace orrery::render {

/// Name of a VkResult ("VK_ERROR_DEVICE_LOST").
const char* vk_result_name(VkResult r);
[[noreturn]] void vk_fail(const char* call, VkResult r, const char* file, int line);

#define ORRERY_VK(call)                                                                                                \
    do {                                                                                                               \
        VkResult orrery_vk_r_ = (call);                                                                                \
        if (orrery_vk_r_ != VK_SUCCESS) ::orrery::render::vk_fail(#call, orrery_vk_r_, __FILE__, __LINE__);            \
    } while (0)

/// How the context is created.
struct VulkanOptions {
    /// Instance extensions for presentation (from glfwGetRequiredInstanceExtensions); empty offscreen.
    std::vector<std::string> instance_extensions;
    /// Creates the window surface once the instance exists (windowed viewer only).
    std::function<VkSurfaceKHR(VkInstance)> make_surface;
    /// Physical device: index, name substring, "cpu" (a software rasteriser such
    /// as lavapipe) or "gpu" (a discrete or integrated GPU); empty picks a
    /// discrete, then an integrated GPU, then anything (lavapipe). The front ends let
    /// ORRERY_VK_DEVICE override it (tools/view/cli.hpp, vulkan_device).
    std::string device;
};

struct Buffer {
    VkBuffer buffer = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0;
    void* mapped = nullptr; ///< host-visible buffers stay mapped
};

struct Image {
    VkImage image = VK_NULL_HANDLE;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkImageView view = VK_NULL_HANDLE;
};

/// One device and one graphics queue (which also presents when a surface is given).
/// The VkInstance is shared per set of instance extensions and kept until exit.
class VulkanContext {
  public:
    /// Throws orrery::Error with an install hint when no Vulkan driver or device exists.
    explicit VulkanContext(const VulkanOptions& opts = {});
    ~VulkanContext();
    VulkanContext(const VulkanContext&) = delete;
    VulkanContext& operator=(const VulkanContext&) = delete;

    VkInstance instance() const { return instance_; }
    VkPhysicalDevice physical() const { return physical_; }
    VkDevice device() const { return device_; }
    VkQueue queue() const { return queue_; }
    uint32_t queue_family() const { return family_; }
    VkCommandPool command_pool() const { return pool_; }
    VkSurfaceKHR surface() const { return surface_; }
    /// The chosen device's name and type ("llvmpipe (LLVM 15.0.6, 256 bits), cpu").
    const std::string& device_name() const { return device_name_; }

    /// A buffer with its own memory; host-visible ones are mapped.
    Buffer create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags props) const;
    void destroy(Buffer& b) const;
    /// A 2-D image with memory and a view of `aspect`.
    Image create_image(uint32_t w, uint32_t h, VkFormat format, VkImageUsageFlags usage,
                       VkImageAspectFlags aspect) const;
    void destroy(Image& i) const;
    /// Records into a fresh command buffer with `fn`, submits it and waits.
    void submit_and_wait(const std::function<void(VkCommandBuffer)>& fn) const;

  private:
    uint32_t memory_type(uint32_t bits, VkMemoryPropertyFlags props) const;
    /// Device memory meeting `req` with `props` (a buffer's or an image's).
    VkDeviceMemory allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags props) const;
    void create_instance(const VulkanOptions& opts);
    void pick_device(const VulkanOptions& opts);
    void release();

    VkInstance instance_ = VK_NULL_HANDLE;
    VkSurfaceKHR surface_ = VK_NULL_HANDLE;
    VkPhysicalDevice physical_ = VK_NULL_HANDLE;
    VkDevice device_ = VK_NULL_HANDLE;
    VkQueue queue_ = VK_NULL_HANDLE;
    uint32_t family_ = 0;
    VkCommandPool pool_ = VK_NULL_HANDLE;
    std::string device_name_;
};

/// Empty when offscreen Vulkan rendering can start here; otherwise why not.
std::string vulkan_unavailable_reason();

} // namespace orrery::render
