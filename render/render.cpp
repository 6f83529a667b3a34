// The offscreen target: a colour and depth image, one framebuffer and a host
// buffer the frame is copied into, driven by the shared Renderer.

#include "render/render.hpp"

#include <cstring>
#include <map>
#include <mutex>
#include <tuple>

namespace orrery::render {

struct FrameRenderer::Impl {
    explicit Impl(const FrameOptions& o)
        : vk(VulkanOptions{{}, {}, o.device}),
          renderer(vk, VK_FORMAT_R8G8B8A8_UNORM, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, o.shadow_size) {
        color = vk.create_image(o.width, o.height, VK_FORMAT_R8G8B8A8_UNORM,
                                VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                VK_IMAGE_ASPECT_COLOR_BIT);
        depth = vk.create_image(o.width, o.height, Renderer::kDepthFormat, VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                                VK_IMAGE_ASPECT_DEPTH_BIT);
        VkImageView views[2] = {color.view, depth.view};
        VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
        fi.renderPass = renderer.render_pass(), fi.attachmentCount = 2, fi.pAttachments = views;
        fi.width = o.width, fi.height = o.height, fi.layers = 1;
        ORRERY_VK(vkCreateFramebuffer(vk.device(), &fi, nullptr, &framebuffer));
        readback = vk.create_buffer(VkDeviceSize(o.width) * o.height * 4, VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                                    VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    }
    ~Impl() {
        vkDeviceWaitIdle(vk.device());
        vkDestroyFramebuffer(vk.device(), framebuffer, nullptr);
        vk.destroy(color);
        vk.destroy(depth);
        vk.destroy(readback);
    }
    VulkanContext vk;
    Renderer renderer;
    Image color, depth;
    VkFramebuffer framebuffer = VK_NULL_HANDLE;
    Buffer readback;
    /// The last rendered frame: its scene, camera and pixels (a copy in ordinary
    /// memory: the readback buffer may be uncached); `drawn` false until one is complete.
    bool drawn = false;
    Scene last_scene;
    Camera last_cam;
    std::vector<uint8_t> last_pixels;
};

FrameRenderer::FrameRenderer(FrameOptions opts) : opts_(std::move(opts)) {
    if (opts_.width == 0 || opts_.height == 0 || opts_.width > 8192 || opts_.height > 8192)
        throw Error("render: width and height must be in [1, 8192], got " + std::to_string(opts_.width) + "x" +
                    std::to_string(opts_.height));
    impl_ = std::make_unique<Impl>(opts_);
}

FrameRenderer::~FrameRenderer() = default;

const std::string& FrameRenderer::device_name() const { return impl_->vk.device_name(); }

uint64_t FrameRenderer::shadow_passes() const { return impl_->renderer.shadow_passes(); }

uint32_t FrameRenderer::shadow_size() const { return impl_->renderer.shadow_size(); }

std::vector<uint8_t> FrameRenderer::render(const Scene& scene, const Camera& cam) {
    Impl& m = *impl_;
    ++frames_;
    if (m.drawn && cam == m.last_cam && scene == m.last_scene) return m.last_pixels; // nothing changed: the last frame
    m.drawn = false; // until this frame is complete (a throw below leaves nothing to repeat)
    m.renderer.upload(scene);
    VkExtent2D extent{opts_.width, opts_.height};
    m.vk.submit_and_wait([&](VkCommandBuffer cmd) {
        m.renderer.begin_and_draw(cmd, m.framebuffer, extent, scene, cam);
        vkCmdEndRenderPass(cmd);
        VkBufferImageCopy region{};
        region.imageSubresource = {VK_IMAGE_ASPECT_COLOR_BIT, 0, 0, 1};
        region.imageExtent = {opts_.width, opts_.height, 1};
        vkCmdCopyImageToBuffer(cmd, m.color.image, VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, m.readback.buffer, 1, &region);
        VkMemoryBarrier host{VK_STRUCTURE_TYPE_MEMORY_BARRIER};
        host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT, host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &host, 0, nullptr,
                             0, nullptr);
    });
    std::vector<uint8_t> out(size_t(opts_.width) * opts_.height * 4);
    std::memcpy(out.data(), m.readback.mapped, out.size());
    ++renders_;
    m.last_pixels = out;
    m.last_scene = scene;
    m.last_cam = cam;
    m.drawn = true;
    return out;
}

Scene scene_of(Simulator& sim, uint32_t world) { return scene_of(sim, world, default_scene_options(sim.spec().draw)); }

Scene scene_of(Simulator& sim, uint32_t world, const SceneOptions& options) {
    if (world >= sim.num_worlds())
        throw Error("render: world is " + std::to_string(world) + ", expected < " + std::to_string(sim.num_worlds()));
    if (sim.spec().draw.empty())
        throw Error("render: env '" + sim.spec().name() + "' declares nothing to draw (EnvSpec::draw is empty)");
    validate_draw(sim.spec());
    Scene scene;
    sim.read_world(world, [&](Ctx& ctx) { scene = build_scene(sim.spec().draw, ctx, options); });
    return scene;
}

std::vector<uint8_t> FrameRenderer::render(Simulator& sim, uint32_t world, const Camera& cam) {
    return render(scene_of(sim, world), cam);
}

std::vector<uint8_t> render_world_rgba(Simulator& sim, uint32_t world, uint32_t width, uint32_t height,
                                       const std::string& vk_device) {
    static std::mutex mutex;
    static std::map<std::tuple<uint32_t, uint32_t, std::string>, std::unique_ptr<FrameRenderer>> renderers;
    std::lock_guard<std::mutex> lock(mutex);
    Scene scene = scene_of(sim, world);
    auto& r = renderers[{width, height, vk_device}];
    if (!r) r = std::make_unique<FrameRenderer>(FrameOptions{width, height, vk_device});
    return r->render(scene);
}

} // namespace orrery::render
