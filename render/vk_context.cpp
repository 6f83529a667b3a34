// Vulkan instance and device selection with clear errors: a machine without a
// driver gets an install hint rather than a bare VkResult.

#include "render/vk_context.hpp"

#include <cstring>
#include <map>
#include <mutex>

namespace orrery::render {

const char* vk_result_name(VkResult r) {
    switch (r) {
#define ORRERY_VK_CASE(x)                                                                                              \
    case x: return #x;
        ORRERY_VK_CASE(VK_SUCCESS)
        ORRERY_VK_CASE(VK_NOT_READY)
        ORRERY_VK_CASE(VK_TIMEOUT)
        ORRERY_VK_CASE(VK_INCOMPLETE)
        ORRERY_VK_CASE(VK_SUBOPTIMAL_KHR)
        ORRERY_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
        ORRERY_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        ORRERY_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
        ORRERY_VK_CASE(VK_ERROR_DEVICE_LOST)
        ORRERY_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
        ORRERY_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
        ORRERY_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
        ORRERY_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
        ORRERY_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
        ORRERY_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
        ORRERY_VK_CASE(VK_ERROR_SURFACE_LOST_KHR)
        ORRERY_VK_CASE(VK_ERROR_OUT_OF_DATE_KHR)
#undef ORRERY_VK_CASE
    default: return "VkResult(other)";
    }
}

void vk_fail(const char* call, VkResult r, const char* file, int line) {
    throw Error(std::string("Vulkan: ") + call + " failed with " + vk_result_name(r) + " (" + file + ":" +
                std::to_string(line) + ")");
}

namespace {
constexpr const char* kInstallHint =
    "install a Vulkan driver (on Debian: apt-get install mesa-vulkan-drivers for the lavapipe CPU "
    "driver, or the NVIDIA driver for a GPU)";

const char* type_name(VkPhysicalDeviceType t) {
    switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "cpu";
    default: return "other";
    }
}

int type_rank(VkPhysicalDeviceType t) {
    return t == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 0 : t == VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU ? 1 : 2;
}
} // namespace

VulkanContext::VulkanContext(const VulkanOptions& opts) {
    try {
        create_instance(opts);
        if (opts.make_surface) surface_ = opts.make_surface(instance_);
        pick_device(opts);
    } catch (...) {
        release();
        throw;
    }
}

namespace {

/// One instance per set of instance extensions, kept for the life of the
/// process: creating an instance loads and probes every installed driver (tens
/// of milliseconds), and keeping the drivers loaded lets sanitizers attribute
/// the allocations some drivers never free to their library (suppressed below).
struct InstanceCache {
    std::mutex mutex;
    std::map<std::string, VkInstance> instances;
};
InstanceCache& instance_cache() {
    static InstanceCache* cache = new InstanceCache; // never destroyed: drivers stay loaded until exit
    return *cache;
}

} // namespace

void VulkanContext::create_instance(const VulkanOptions& opts) {
    std::string key;
    for (const auto& e : opts.instance_extensions) key += e + ";";
    InstanceCache& cache = instance_cache();
    std::lock_guard<std::mutex> lock(cache.mutex);
    if (auto it = cache.instances.find(key); it != cache.instances.end()) {
        instance_ = it->second;
        return;
    }
    VkApplicationInfo app{VK_STRUCTURE_TYPE_APPLICATION_INFO};
    app.pApplicationName = "orrery";
    app.apiVersion = VK_API_VERSION_1_1;
    std::vector<const char*> ext;
    for (const auto& e : opts.instance_extensions) ext.push_back(e.c_str());
    VkInstanceCreateInfo ci{VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO};
    ci.pApplicationInfo = &app;
    ci.enabledExtensionCount = uint32_t(ext.size());
    ci.ppEnabledExtensionNames = ext.data();
    VkResult r = vkCreateInstance(&ci, nullptr, &instance_);
    if (r == VK_ERROR_INCOMPATIBLE_DRIVER || r == VK_ERROR_INITIALIZATION_FAILED)
        throw Error(std::string("Vulkan: no driver found (vkCreateInstance: ") + vk_result_name(r) + "); " +
                    kInstallHint);
    if (r == VK_ERROR_EXTENSION_NOT_PRESENT)
        throw Error("Vulkan: the driver lacks the window-system extensions the viewer needs; use "
                    "orrery-record for offscreen frames");
    ORRERY_VK(r);
    cache.instances[key] = instance_;
}

void VulkanContext::pick_device(const VulkanOptions& opts) {
    uint32_t n = 0;
    ORRERY_VK(vkEnumeratePhysicalDevices(instance_, &n, nullptr));
    if (n == 0) throw Error(std::string("Vulkan: no physical device found; ") + kInstallHint);
    std::vector<VkPhysicalDevice> devs(n);
    ORRERY_VK(vkEnumeratePhysicalDevices(instance_, &n, devs.data()));
    const std::string& want = opts.device;
    int best = -1, best_rank = 99;
    std::string names;
    for (uint32_t i = 0; i < n; ++i) {
        VkPhysicalDeviceProperties p;
        vkGetPhysicalDeviceProperties(devs[i], &p);
        names += std::string(names.empty() ? "" : ", ") + std::to_string(i) + ": " + p.deviceName;
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, nullptr);
        std::vector<VkQueueFamilyProperties> fams(nf);
        vkGetPhysicalDeviceQueueFamilyProperties(devs[i], &nf, fams.data());
        int family = -1;
        for (uint32_t f = 0; f < nf && family < 0; ++f) {
            VkBool32 present = VK_TRUE;
            if (surface_) vkGetPhysicalDeviceSurfaceSupportKHR(devs[i], f, surface_, &present);
            if ((fams[f].queueFlags & VK_QUEUE_GRAPHICS_BIT) && present) family = int(f);
        }
        if (family < 0) continue;
        // "cpu" and "gpu" name a kind of device: a software rasteriser such as
        // lavapipe, which draws on host cores and leaves a busy GPU to the steps
        // (docs/viewer.md, "Watching on a compute GPU"), or any hardware GPU.
        bool kind = (want == "cpu" && p.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) ||
                    (want == "gpu" && type_rank(p.deviceType) < 2);
        bool named = !want.empty() && (kind || want == std::to_string(i) || std::strstr(p.deviceName, want.c_str()));
        int rank = want.empty() ? type_rank(p.deviceType) : (named ? 0 : 99);
        if (rank < best_rank) {
            best = int(i), best_rank = rank, family_ = uint32_t(family);
            device_name_ = std::string(p.deviceName) + ", " + type_name(p.deviceType);
        }
    }
    if (best < 0 || best_rank == 99)
        throw Error("Vulkan: no usable device" + (want.empty() ? std::string() : " matching device='" + want + "'") +
                    " with a graphics" + (surface_ ? " and present" : "") + " queue (devices: " + names + ")");
    physical_ = devs[size_t(best)];
    float priority = 1.0f;
    VkDeviceQueueCreateInfo q{VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO};
    q.queueFamilyIndex = family_;
    q.queueCount = 1;
    q.pQueuePriorities = &priority;
    const char* swapchain = VK_KHR_SWAPCHAIN_EXTENSION_NAME;
    VkDeviceCreateInfo ci{VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO};
    ci.queueCreateInfoCount = 1;
    ci.pQueueCreateInfos = &q;
    ci.enabledExtensionCount = surface_ ? 1 : 0;
    ci.ppEnabledExtensionNames = &swapchain;
    ORRERY_VK(vkCreateDevice(physical_, &ci, nullptr, &device_));
    vkGetDeviceQueue(device_, family_, 0, &queue_);
    VkCommandPoolCreateInfo pc{VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO};
    pc.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pc.queueFamilyIndex = family_;
    ORRERY_VK(vkCreateCommandPool(device_, &pc, nullptr, &pool_));
}

VulkanContext::~VulkanContext() { release(); }

void VulkanContext::release() {
    if (device_) {
        vkDeviceWaitIdle(device_);
        if (pool_) vkDestroyCommandPool(device_, pool_, nullptr);
        vkDestroyDevice(device_, nullptr);
    }
    if (surface_) vkDestroySurfaceKHR(instance_, surface_, nullptr); // the instance stays cached
    device_ = VK_NULL_HANDLE, pool_ = VK_NULL_HANDLE, surface_ = VK_NULL_HANDLE, instance_ = VK_NULL_HANDLE;
}

uint32_t VulkanContext::memory_type(uint32_t bits, VkMemoryPropertyFlags props) const {
    VkPhysicalDeviceMemoryProperties mp;
    vkGetPhysicalDeviceMemoryProperties(physical_, &mp);
    for (uint32_t i = 0; i < mp.memoryTypeCount; ++i)
        if ((bits & (1u << i)) && (mp.memoryTypes[i].propertyFlags & props) == props) return i;
    throw Error("Vulkan: no memory type with the properties the renderer needs");
}

VkDeviceMemory VulkanContext::allocate(const VkMemoryRequirements& req, VkMemoryPropertyFlags props) const {
    VkMemoryAllocateInfo ai{VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO};
    ai.allocationSize = req.size;
    ai.memoryTypeIndex = memory_type(req.memoryTypeBits, props);
    VkDeviceMemory memory = VK_NULL_HANDLE;
    ORRERY_VK(vkAllocateMemory(device_, &ai, nullptr, &memory));
    return memory;
}

Buffer VulkanContext::create_buffer(VkDeviceSize size, VkBufferUsageFlags usage, VkMemoryPropertyFlags props) const {
    Buffer b;
    b.size = size;
    VkBufferCreateInfo ci{VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO};
    ci.size = size;
    ci.usage = usage;
    ORRERY_VK(vkCreateBuffer(device_, &ci, nullptr, &b.buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(device_, b.buffer, &req);
    b.memory = allocate(req, props);
    ORRERY_VK(vkBindBufferMemory(device_, b.buffer, b.memory, 0));
    if (props & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) ORRERY_VK(vkMapMemory(device_, b.memory, 0, size, 0, &b.mapped));
    return b;
}

void VulkanContext::destroy(Buffer& b) const {
    if (b.buffer) vkDestroyBuffer(device_, b.buffer, nullptr);
    if (b.memory) vkFreeMemory(device_, b.memory, nullptr);
    b = Buffer{};
}

Image VulkanContext::create_image(uint32_t w, uint32_t h, VkFormat format, VkImageUsageFlags usage,
                                  VkImageAspectFlags aspect) const {
    Image im;
    VkImageCreateInfo ci{VK_STRUCTURE_TYPE_IMAGE_CREATE_INFO};
    ci.imageType = VK_IMAGE_TYPE_2D;
    ci.format = format;
    ci.extent = {w, h, 1};
    ci.mipLevels = 1;
    ci.arrayLayers = 1;
    ci.samples = VK_SAMPLE_COUNT_1_BIT;
    ci.tiling = VK_IMAGE_TILING_OPTIMAL;
    ci.usage = usage;
    ORRERY_VK(vkCreateImage(device_, &ci, nullptr, &im.image));
    VkMemoryRequirements req;
    vkGetImageMemoryRequirements(device_, im.image, &req);
    im.memory = allocate(req, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT);
    ORRERY_VK(vkBindImageMemory(device_, im.image, im.memory, 0));
    VkImageViewCreateInfo vi{VK_STRUCTURE_TYPE_IMAGE_VIEW_CREATE_INFO};
    vi.image = im.image;
    vi.viewType = VK_IMAGE_VIEW_TYPE_2D;
    vi.format = format;
    vi.subresourceRange = {aspect, 0, 1, 0, 1};
    ORRERY_VK(vkCreateImageView(device_, &vi, nullptr, &im.view));
    return im;
}

void VulkanContext::destroy(Image& i) const {
    if (i.view) vkDestroyImageView(device_, i.view, nullptr);
    if (i.image) vkDestroyImage(device_, i.image, nullptr);
    if (i.memory) vkFreeMemory(device_, i.memory, nullptr);
    i = Image{};
}

void VulkanContext::submit_and_wait(const std::function<void(VkCommandBuffer)>& fn) const {
    VkCommandBufferAllocateInfo ai{VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO};
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    VkCommandBuffer cmd;
    ORRERY_VK(vkAllocateCommandBuffers(device_, &ai, &cmd));
    VkCommandBufferBeginInfo bi{VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    ORRERY_VK(vkBeginCommandBuffer(cmd, &bi));
    fn(cmd);
    ORRERY_VK(vkEndCommandBuffer(cmd));
    VkSubmitInfo si{VK_STRUCTURE_TYPE_SUBMIT_INFO};
    si.commandBufferCount = 1;
    si.pCommandBuffers = &cmd;
    VkFenceCreateInfo fi{VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VkFence fence;
    ORRERY_VK(vkCreateFence(device_, &fi, nullptr, &fence));
    VkResult r = vkQueueSubmit(queue_, 1, &si, fence);
    if (r == VK_SUCCESS) r = vkWaitForFences(device_, 1, &fence, VK_TRUE, UINT64_MAX);
    vkDestroyFence(device_, fence, nullptr);
    vkFreeCommandBuffers(device_, pool_, 1, &cmd);
    ORRERY_VK(r);
}

std::string vulkan_unavailable_reason() {
    try {
        VulkanContext probe;
        return {};
    } catch (const Error& e) { return e.what(); }
}

} // namespace orrery::render

// Sanitizer builds: some Vulkan drivers (Intel's and AMD's probing a machine
// without their GPU, lavapipe's LLVM) and the X11 client libraries keep
// allocations they never free. Suppress leaks inside those libraries only.
extern "C" const char* __lsan_default_suppressions() {
    return "leak:libvulkan_intel\nleak:libvulkan_radeon\nleak:libvulkan_lvp\nleak:libLLVM\n"
           "leak:libX11\nleak:libxcb\nleak:libglfw\n";
}
