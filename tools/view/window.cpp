// GLFW window, swapchain and ImGui set-up for orrery-view. One frame in flight:
// a viewer draws one small scene, so latency matters more than overlap.

#include "tools/view/window.hpp"

#include <cstring>
#include <thread>

#define GLFW_INCLUDE_VULKAN
#include <GLFW/glfw3.h>
#include <backends/imgui_impl_glfw.h>
#include <backends/imgui_impl_vulkan.h>
#include <imgui.h>

namespace orrery::render {
namespace {

std::string g_glfw_error; // GLFW reports errors through a C callback
bool g_damaged = false;   // the window system asked for the contents again (one window per process)

void on_glfw_error(int, const char* what) { g_glfw_error = what ? what : "unknown GLFW error"; }

void append(std::vector<uint8_t>& out, const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
}

void check_imgui_vk(VkResult r) {
    if (r != VK_SUCCESS) vk_fail("ImGui Vulkan backend", r, __FILE__, __LINE__);
}

} // namespace

Window::Window(const std::string& title, uint32_t width, uint32_t height, const std::string& vk_device) {
    glfwSetErrorCallback(on_glfw_error);
    if (!glfwInit())
        throw Error("cannot open a window: no display (" + g_glfw_error +
                    "). Run under a desktop session or xvfb-run, or use orrery-record for offscreen frames");
    if (!glfwVulkanSupported()) {
        glfwTerminate();
        throw Error("cannot open a window: no Vulkan loader or driver; install libvulkan1 and a driver "
                    "(mesa-vulkan-drivers for lavapipe), or use orrery-record");
    }
    glfwWindowHint(GLFW_CLIENT_API, GLFW_NO_API);
    window_ = glfwCreateWindow(int(width), int(height), title.c_str(), nullptr, nullptr);
    if (!window_) {
        glfwTerminate();
        throw Error("cannot open a window: " + g_glfw_error);
    }
    glfwSetWindowRefreshCallback(window_, [](GLFWwindow*) { g_damaged = true; });
    VulkanOptions opts;
    uint32_t n = 0;
    const char** ext = glfwGetRequiredInstanceExtensions(&n);
    for (uint32_t i = 0; i < n; ++i) opts.instance_extensions.emplace_back(ext[i]);
    GLFWwindow* w = window_;
    opts.make_surface = [w](VkInstance inst) {
        VkSurfaceKHR s;
        ORRERY_VK(glfwCreateWindowSurface(inst, w, nullptr, &s));
        return s;
    };
    opts.device = vk_device;
    vk_ = std::make_unique<VulkanContext>(opts);
    VkDevice dev = vk_->device();
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = vk_->command_pool(), ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY, ai.commandBufferCount = 1;
    ORRERY_VK(vkAllocateCommandBuffers(dev, &ai, &cmd_));
    VkSemaphoreCreateInfo si{VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO};
    ORRERY_VK(vkCreateSemaphore(dev, &si, nullptr, &acquired_));
    ORRERY_VK(vkCreateSemaphore(dev, &si, nullptr, &rendered_));
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    fi.flags = VK_FENCE_CREATE_SIGNALED_BIT;
    ORRERY_VK(vkCreateFence(dev, &fi, nullptr, &fence_));
    create_swapchain();
    renderer_ = std::make_unique<Renderer>(*vk_, format_, VK_IMAGE_LAYOUT_PRESENT_SRC_KHR);
    destroy_swapchain(); // framebuffers need the renderer's pass: build them again
    create_swapchain();
    init_imgui();
}

Window::~Window() {
    if (vk_) {
        VkDevice dev = vk_->device();
        vkDeviceWaitIdle(dev);
        if (imgui_ready_) {
            ImGui_ImplVulkan_Shutdown();
            ImGui_ImplGlfw_Shutdown();
            ImGui::DestroyContext();
        }
        if (imgui_pool_) vkDestroyDescriptorPool(dev, imgui_pool_, nullptr);
        destroy_swapchain();
        vk_->destroy(readback_);
        vkDestroySemaphore(dev, acquired_, nullptr);
        vkDestroySemaphore(dev, rendered_, nullptr);
        vkDestroyFence(dev, fence_, nullptr);
        renderer_.reset();
        vk_.reset();
    }
    if (window_) glfwDestroyWindow(window_);
    glfwTerminate();
}

bool Window::should_close() const { return glfwWindowShouldClose(window_); }

void Window::create_swapchain() {
    VkPhysicalDevice phys = vk_->physical();
    VkSurfaceKHR surface = vk_->surface();
    VkSurfaceCapabilitiesKHR caps;
    ORRERY_VK(vkGetPhysicalDeviceSurfaceCapabilitiesKHR(phys, surface, &caps));
    uint32_t nf = 0;
    ORRERY_VK(vkGetPhysicalDeviceSurfaceFormatsKHR(phys, surface, &nf, nullptr));
    std::vector<VkSurfaceFormatKHR> formats(nf);
    ORRERY_VK(vkGetPhysicalDeviceSurfaceFormatsKHR(phys, surface, &nf, formats.data()));
    if (format_ == VK_FORMAT_UNDEFINED) {
        format_ = formats.at(0).format;
        for (const auto& f : formats) // UNORM: colours appear exactly as declared, as offscreen
            if (f.format == VK_FORMAT_B8G8R8A8_UNORM || f.format == VK_FORMAT_R8G8B8A8_UNORM) format_ = f.format;
    }
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window_, &fw, &fh);
    extent_ = caps.currentExtent.width != UINT32_MAX ? caps.currentExtent : VkExtent2D{uint32_t(fw), uint32_t(fh)};
    if (extent_.width == 0 || extent_.height == 0) return; // minimised
    min_images_ = std::max(2u, caps.minImageCount);
    VkSwapchainCreateInfoKHR ci{VK_STRUCTURE_TYPE_SWAPCHAIN_CREATE_INFO_KHR};
    ci.surface = surface, ci.minImageCount = min_images_ + 1;
    if (caps.maxImageCount && ci.minImageCount > caps.maxImageCount) ci.minImageCount = caps.maxImageCount;
    ci.imageFormat = format_, ci.imageColorSpace = VK_COLOR_SPACE_SRGB_NONLINEAR_KHR, ci.imageExtent = extent_;
    ci.imageArrayLayers = 1;
    can_copy_ = (caps.supportedUsageFlags & VK_IMAGE_USAGE_TRANSFER_SRC_BIT) != 0;
    ci.imageUsage = VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | (can_copy_ ? VK_IMAGE_USAGE_TRANSFER_SRC_BIT : 0);
    ci.imageSharingMode = VK_SHARING_MODE_EXCLUSIVE, ci.preTransform = caps.currentTransform;
    ci.compositeAlpha = VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, ci.presentMode = VK_PRESENT_MODE_FIFO_KHR;
    ci.clipped = VK_TRUE;
    VkDevice dev = vk_->device();
    ORRERY_VK(vkCreateSwapchainKHR(dev, &ci, nullptr, &swapchain_));
    uint32_t ni = 0;
    ORRERY_VK(vkGetSwapchainImagesKHR(dev, swapchain_, &ni, nullptr));
    images_.resize(ni);
    ORRERY_VK(vkGetSwapchainImagesKHR(dev, swapchain_, &ni, images_.data()));
    if (!renderer_) return;
    depth_ = vk_->create_image(extent_.width, extent_.height, Renderer::kDepthFormat,
                               VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, VK_IMAGE_ASPECT_DEPTH_BIT);
    for (VkImage img : images_) {
        VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
        vi.image = img, vi.viewType = VK_IMAGE_VIEW_TYPE_2D, vi.format = format_;
        vi.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        VkImageView view;
        ORRERY_VK(vkCreateImageView(dev, &vi, nullptr, &view));
        views_.push_back(view);
        VkImageView att[2] = {view, depth_.view};
        VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
        fi.renderPass = renderer_->render_pass(), fi.attachmentCount = 2, fi.pAttachments = att;
        fi.width = extent_.width, fi.height = extent_.height, fi.layers = 1;
        VkFramebuffer fb;
        ORRERY_VK(vkCreateFramebuffer(dev, &fi, nullptr, &fb));
        framebuffers_.push_back(fb);
    }
}

void Window::destroy_swapchain() {
    VkDevice dev = vk_->device();
    vkDeviceWaitIdle(dev);
    for (VkFramebuffer fb : framebuffers_) vkDestroyFramebuffer(dev, fb, nullptr);
    for (VkImageView v : views_) vkDestroyImageView(dev, v, nullptr);
    framebuffers_.clear(), views_.clear(), images_.clear();
    vk_->destroy(depth_);
    if (swapchain_) vkDestroySwapchainKHR(dev, swapchain_, nullptr);
    swapchain_ = VK_NULL_HANDLE;
    presented_ = false; // new images hold nothing yet: the next frame is drawn
}

void Window::init_imgui() {
    VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 16};
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.flags = VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, pi.maxSets = 16;
    pi.poolSizeCount = 1, pi.pPoolSizes = &size;
    ORRERY_VK(vkCreateDescriptorPool(vk_->device(), &pi, nullptr, &imgui_pool_));
    IMGUI_CHECKVERSION();
    ImGui::CreateContext();
    ImGui::GetIO().IniFilename = nullptr; // no imgui.ini beside the user's files
    ImGui::StyleColorsDark();
    ImGui_ImplGlfw_InitForVulkan(window_, true);
    ImGui_ImplVulkan_InitInfo info{};
    info.Instance = vk_->instance(), info.PhysicalDevice = vk_->physical(), info.Device = vk_->device();
    info.QueueFamily = vk_->queue_family(), info.Queue = vk_->queue(), info.DescriptorPool = imgui_pool_;
    info.MinImageCount = min_images_, info.ImageCount = uint32_t(std::max<size_t>(images_.size(), min_images_));
    info.MSAASamples = VK_SAMPLE_COUNT_1_BIT, info.CheckVkResultFn = check_imgui_vk;
    ImGui_ImplVulkan_Init(&info, renderer_->render_pass());
    imgui_ready_ = true;
    vk_->submit_and_wait([](VkCommandBuffer cmd) { ImGui_ImplVulkan_CreateFontsTexture(cmd); });
    ImGui_ImplVulkan_DestroyFontUploadObjects();
}

void Window::begin_frame() {
    glfwPollEvents();
    ImGui_ImplVulkan_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
}

void Window::record(uint32_t image, const Scene& scene, const Camera& cam, uint32_t panel_width, bool shot) {
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ORRERY_VK(vkResetCommandBuffer(cmd_, 0));
    ORRERY_VK(vkBeginCommandBuffer(cmd_, &bi));
    uint32_t scene_w = extent_.width > panel_width + 64 ? extent_.width - panel_width : extent_.width;
    renderer_->begin_and_draw(cmd_, framebuffers_[image], extent_, scene, cam, {{0, 0}, {scene_w, extent_.height}});
    ImGui_ImplVulkan_RenderDrawData(ImGui::GetDrawData(), cmd_);
    vkCmdEndRenderPass(cmd_);
    if (shot) {
        VkImageMemoryBarrier b{VK_STRUCTURE_TYPE_IMAGE_MEMORY_BARRIER};
        b.srcAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT, b.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
        b.oldLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, b.newLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL;
        b.srcQueueFamilyIndex = b.dstQueueFamilyIndex = VK_QUEUE_FAMILY_IGNORED;
        b.image = images_[image], b.subresourceRange = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 1, 0, 1};
        vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 0,
                             nullptr, 0, nullptr, 1, &b);
        VkBufferImageCopy region{};
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {extent_.width, extent_.height, 1};
        vkCmdCopyImageToBuffer(cmd_, images_[image], VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, readback_.buffer, 1,
                               &region);
        b.srcAccessMask = VK_ACCESS_TRANSFER_READ_BIT, b.dstAccessMask = 0;
        b.oldLayout = VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, b.newLayout = VK_IMAGE_LAYOUT_PRESENT_SRC_KHR;
        vkCmdPipelineBarrier(cmd_, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0, 0, nullptr,
                             0, nullptr, 1, &b);
    }
    ORRERY_VK(vkEndCommandBuffer(cmd_));
}

bool Window::unchanged(const Scene& scene, const Camera& cam, uint32_t panel_width) {
    ui_.clear();
    if (const ImDrawData* d = ImGui::GetDrawData()) {
        append(ui_, &d->DisplayPos, sizeof(d->DisplayPos));
        append(ui_, &d->DisplaySize, sizeof(d->DisplaySize));
        append(ui_, &d->FramebufferScale, sizeof(d->FramebufferScale));
        for (int i = 0; i < d->CmdListsCount; ++i) {
            const ImDrawList* l = d->CmdLists[i];
            append(ui_, l->VtxBuffer.Data, size_t(l->VtxBuffer.Size) * sizeof(ImDrawVert));
            append(ui_, l->IdxBuffer.Data, size_t(l->IdxBuffer.Size) * sizeof(ImDrawIdx));
            for (const ImDrawCmd& c : l->CmdBuffer) {
                append(ui_, &c.ClipRect, sizeof(c.ClipRect));
                append(ui_, &c.TextureId, sizeof(c.TextureId));
                append(ui_, &c.VtxOffset, sizeof(c.VtxOffset));
                append(ui_, &c.IdxOffset, sizeof(c.IdxOffset));
                append(ui_, &c.ElemCount, sizeof(c.ElemCount));
            }
        }
    }
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window_, &fw, &fh);
    bool resized = uint32_t(fw) != extent_.width || uint32_t(fh) != extent_.height;
    return presented_ && swapchain_ && !g_damaged && !resized && panel_width == last_panel_ && cam == last_cam_ &&
           ui_ == last_ui_ && scene == last_scene_;
}

void Window::end_frame(const Scene& scene, const Camera& cam, uint32_t panel_width, std::vector<uint8_t>* screenshot,
                       uint32_t* shot_w, uint32_t* shot_h) {
    ImGui::Render();
    ++frames_;
    const auto period =
        std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(1.0 / 60));
    const bool same = unchanged(scene, cam, panel_width); // also keeps this frame's ImGui bytes
    if (same && !screenshot) {
        // The display keeps the last image; wait out a frame period as a present would have.
        auto now = std::chrono::steady_clock::now();
        if (next_idle_ < now || next_idle_ > now + period) next_idle_ = now + period;
        std::this_thread::sleep_until(next_idle_);
        next_idle_ += period;
        return;
    }
    next_idle_ = {};
    VkDevice dev = vk_->device();
    ORRERY_VK(vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX));
    if (!swapchain_) { // minimised or resized away: try again next frame
        destroy_swapchain();
        create_swapchain();
        return;
    }
    uint32_t image = 0;
    VkResult r = vkAcquireNextImageKHR(dev, swapchain_, UINT64_MAX, acquired_, VK_NULL_HANDLE, &image);
    if (r == VK_ERROR_OUT_OF_DATE_KHR) {
        destroy_swapchain();
        create_swapchain();
        return;
    }
    if (r != VK_SUBOPTIMAL_KHR) ORRERY_VK(r);
    bool shot = screenshot != nullptr;
    if (shot && !can_copy_)
        throw Error("screenshot: this display's swapchain images cannot be read back; use orrery-record");
    if (shot) {
        VkDeviceSize bytes = VkDeviceSize(extent_.width) * extent_.height * 4;
        if (readback_.size < bytes) {
            vk_->destroy(readback_);
            readback_ = vk_->create_buffer(bytes, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                           VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
        }
    }
    renderer_->upload(scene);
    record(image, scene, cam, panel_width, shot);
    ORRERY_VK(vkResetFences(dev, 1, &fence_));
    VkPipelineStageFlags wait = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT;
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.waitSemaphoreCount = 1, si.pWaitSemaphores = &acquired_, si.pWaitDstStageMask = &wait;
    si.commandBufferCount = 1, si.pCommandBuffers = &cmd_;
    si.signalSemaphoreCount = 1, si.pSignalSemaphores = &rendered_;
    ORRERY_VK(vkQueueSubmit(vk_->queue(), 1, &si, fence_));
    VkPresentInfoKHR pi{VK_STRUCTURE_TYPE_PRESENT_INFO_KHR};
    pi.waitSemaphoreCount = 1, pi.pWaitSemaphores = &rendered_;
    pi.swapchainCount = 1, pi.pSwapchains = &swapchain_, pi.pImageIndices = &image;
    r = vkQueuePresentKHR(vk_->queue(), &pi);
    ++renders_;
    presented_ = true;
    g_damaged = false;
    last_scene_ = scene;
    last_cam_ = cam;
    last_panel_ = panel_width;
    last_ui_.swap(ui_);
    if (shot) {
        ORRERY_VK(vkWaitForFences(dev, 1, &fence_, VK_TRUE, UINT64_MAX));
        size_t n = size_t(extent_.width) * extent_.height;
        screenshot->resize(n * 4);
        std::memcpy(screenshot->data(), readback_.mapped, n * 4);
        if (format_ == VK_FORMAT_B8G8R8A8_UNORM || format_ == VK_FORMAT_B8G8R8A8_SRGB)
            for (size_t i = 0; i < n; ++i) std::swap((*screenshot)[i * 4], (*screenshot)[i * 4 + 2]);
        for (size_t i = 0; i < n; ++i) (*screenshot)[i * 4 + 3] = 255; // the window is opaque
        *shot_w = extent_.width, *shot_h = extent_.height;
    }
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window_, &fw, &fh);
    bool resized = uint32_t(fw) != extent_.width || uint32_t(fh) != extent_.height;
    if (r == VK_ERROR_OUT_OF_DATE_KHR || r == VK_SUBOPTIMAL_KHR || resized) {
        destroy_swapchain();
        create_swapchain();
        ImGui_ImplVulkan_SetMinImageCount(min_images_);
    } else {
        ORRERY_VK(r);
    }
}

} // namespace orrery::render
