// Pipelines and draw recording shared by the window and the offscreen target.
// Shaders are compiled to SPIR-V at build time and embedded (shaders/*.h).

#include "render/renderer.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "mesh3d_frag.h"
#include "mesh3d_vert.h"
#include "shape2d_frag.h"
#include "shape2d_vert.h"

namespace orrery::render {
namespace {

struct Vertex {
    float p[3];
    float n[3];
};

void add_cube(std::vector<Vertex>& v) {
    // Six faces, two triangles each, counter-clockwise seen from outside.
    const float f[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    for (const auto& n : f) {
        int a = n[0] != 0 ? 0 : n[1] != 0 ? 1 : 2;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        float s = n[a];
        float quad[4][2] = {{-0.5f, -0.5f}, {0.5f, -0.5f}, {0.5f, 0.5f}, {-0.5f, 0.5f}};
        int order[6] = {0, 1, 2, 0, 2, 3};
        for (int k : order) {
            Vertex x{};
            x.p[a] = 0.5f * s;
            x.p[b] = quad[k][0] * s;
            x.p[c] = quad[k][1];
            x.n[0] = n[0], x.n[1] = n[1], x.n[2] = n[2];
            v.push_back(x);
        }
    }
}

void add_sphere(std::vector<Vertex>& v) {
    const int slices = 16, stacks = 10;
    auto at = [](int i, int j) {
        float th = 3.14159265f * float(j) / stacks, ph = 6.2831853f * float(i) / slices;
        Vertex x{};
        x.n[0] = std::sin(th) * std::cos(ph), x.n[1] = std::sin(th) * std::sin(ph), x.n[2] = std::cos(th);
        for (int k = 0; k < 3; ++k) x.p[k] = 0.5f * x.n[k];
        return x;
    };
    for (int j = 0; j < stacks; ++j) {
        for (int i = 0; i < slices; ++i) {
            Vertex a = at(i, j), b = at(i + 1, j), c = at(i + 1, j + 1), d = at(i, j + 1);
            for (const Vertex& x : {a, d, c, a, c, b}) v.push_back(x);
        }
    }
}

VkShaderModule module(VkDevice dev, const uint32_t* code, size_t bytes) {
    VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = bytes;
    ci.pCode = code;
    VkShaderModule m;
    ORRERY_VK(vkCreateShaderModule(dev, &ci, nullptr, &m));
    return m;
}

/// The fixed-function state both pipelines share, differing in topology, depth and blending.
struct PipelineDesc {
    const uint32_t* vert;
    size_t vert_bytes;
    const uint32_t* frag;
    size_t frag_bytes;
    std::vector<VkVertexInputBindingDescription> bindings;
    std::vector<VkVertexInputAttributeDescription> attributes;
    VkPrimitiveTopology topology;
    bool depth;
};

VkPipeline make_pipeline(VkDevice dev, VkRenderPass pass, VkPipelineLayout layout, const PipelineDesc& d) {
    VkShaderModule vs = module(dev, d.vert, d.vert_bytes), fs = module(dev, d.frag, d.frag_bytes);
    VkPipelineShaderStageCreateInfo stages[2] = {{VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO},
                                                 {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO}};
    stages[0].stage = VK_SHADER_STAGE_VERTEX_BIT, stages[0].module = vs, stages[0].pName = "main";
    stages[1].stage = VK_SHADER_STAGE_FRAGMENT_BIT, stages[1].module = fs, stages[1].pName = "main";
    VkPipelineVertexInputStateCreateInfo vi{VK_STRUCTURE_TYPE_PIPELINE_VERTEX_INPUT_STATE_CREATE_INFO};
    vi.vertexBindingDescriptionCount = uint32_t(d.bindings.size());
    vi.pVertexBindingDescriptions = d.bindings.data();
    vi.vertexAttributeDescriptionCount = uint32_t(d.attributes.size());
    vi.pVertexAttributeDescriptions = d.attributes.data();
    VkPipelineInputAssemblyStateCreateInfo ia{VK_STRUCTURE_TYPE_PIPELINE_INPUT_ASSEMBLY_STATE_CREATE_INFO};
    ia.topology = d.topology;
    VkPipelineViewportStateCreateInfo vp{VK_STRUCTURE_TYPE_PIPELINE_VIEWPORT_STATE_CREATE_INFO};
    vp.viewportCount = 1, vp.scissorCount = 1;
    VkPipelineRasterizationStateCreateInfo rs{VK_STRUCTURE_TYPE_PIPELINE_RASTERIZATION_STATE_CREATE_INFO};
    rs.polygonMode = VK_POLYGON_MODE_FILL, rs.cullMode = VK_CULL_MODE_NONE, rs.lineWidth = 1.0f;
    VkPipelineMultisampleStateCreateInfo ms{VK_STRUCTURE_TYPE_PIPELINE_MULTISAMPLE_STATE_CREATE_INFO};
    ms.rasterizationSamples = VK_SAMPLE_COUNT_1_BIT;
    VkPipelineDepthStencilStateCreateInfo ds{VK_STRUCTURE_TYPE_PIPELINE_DEPTH_STENCIL_STATE_CREATE_INFO};
    ds.depthTestEnable = d.depth, ds.depthWriteEnable = d.depth, ds.depthCompareOp = VK_COMPARE_OP_LESS;
    VkPipelineColorBlendAttachmentState blend{};
    blend.blendEnable = VK_TRUE;
    blend.srcColorBlendFactor = VK_BLEND_FACTOR_SRC_ALPHA,
    blend.dstColorBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
    blend.colorBlendOp = VK_BLEND_OP_ADD;
    blend.srcAlphaBlendFactor = VK_BLEND_FACTOR_ONE, blend.dstAlphaBlendFactor = VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA;
    blend.alphaBlendOp = VK_BLEND_OP_ADD;
    blend.colorWriteMask = 0xF;
    VkPipelineColorBlendStateCreateInfo cb{VK_STRUCTURE_TYPE_PIPELINE_COLOR_BLEND_STATE_CREATE_INFO};
    cb.attachmentCount = 1, cb.pAttachments = &blend;
    VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
    VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
    dy.dynamicStateCount = 2, dy.pDynamicStates = dyn;
    VkGraphicsPipelineCreateInfo ci{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    ci.stageCount = 2, ci.pStages = stages;
    ci.pVertexInputState = &vi, ci.pInputAssemblyState = &ia, ci.pViewportState = &vp;
    ci.pRasterizationState = &rs, ci.pMultisampleState = &ms, ci.pDepthStencilState = &ds;
    ci.pColorBlendState = &cb, ci.pDynamicState = &dy;
    ci.layout = layout, ci.renderPass = pass;
    VkPipeline p;
    VkResult r = vkCreateGraphicsPipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
    vkDestroyShaderModule(dev, vs, nullptr);
    vkDestroyShaderModule(dev, fs, nullptr);
    ORRERY_VK(r);
    return p;
}

struct Vec3 {
    float x, y, z;
};
Vec3 sub(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
Vec3 cross(Vec3 a, Vec3 b) { return {a.y * b.z - a.z * b.y, a.z * b.x - a.x * b.z, a.x * b.y - a.y * b.x}; }
float dot(Vec3 a, Vec3 b) { return a.x * b.x + a.y * b.y + a.z * b.z; }
Vec3 norm(Vec3 a) {
    float l = std::sqrt(dot(a, a));
    return {a.x / l, a.y / l, a.z / l};
}

} // namespace

Transform2D frame_bounds(const std::array<float, 4>& b, const Camera& cam, uint32_t w, uint32_t h) {
    float bw = b[2] - b[0], bh = b[3] - b[1];
    float margin = 1.04f;
    float px = std::fmin(float(w) / (bw * margin), float(h) / (bh * margin)) * cam.zoom; // pixels per unit
    Transform2D t{};
    t.scale[0] = 2.0f * px / float(w);
    t.scale[1] = 2.0f * px / float(h);
    float cx = 0.5f * (b[0] + b[2]) + cam.pan_x, cy = 0.5f * (b[1] + b[3]) + cam.pan_y;
    t.offset[0] = -cx * t.scale[0];
    t.offset[1] = -cy * t.scale[1];
    return t;
}

std::array<float, 16> orbit_view_proj(const std::array<float, 4>& b, const Camera& cam, uint32_t w, uint32_t h) {
    Vec3 target{0.5f * (b[0] + b[2]), 0.5f * (b[1] + b[3]), 0.0f};
    float extent = std::fmax(b[2] - b[0], b[3] - b[1]);
    float dist = cam.distance > 0.0f ? cam.distance : 1.3f * extent / std::tan(0.5f * cam.fov);
    Vec3 eye{target.x + dist * std::cos(cam.pitch) * std::cos(cam.yaw),
             target.y + dist * std::cos(cam.pitch) * std::sin(cam.yaw), target.z + dist * std::sin(cam.pitch)};
    Vec3 f = norm(sub(target, eye));
    Vec3 s = norm(cross(f, {0.0f, 0.0f, 1.0f}));
    Vec3 u = cross(s, f);
    float view[16] = {s.x, u.x, -f.x, 0, s.y,          u.y,          -f.y,        0,
                      s.z, u.z, -f.z, 0, -dot(s, eye), -dot(u, eye), dot(f, eye), 1};
    float near = 0.01f * dist, far = 4.0f * dist + extent;
    float t = 1.0f / std::tan(0.5f * cam.fov), aspect = float(w) / float(h);
    // Vulkan clip space: y down, depth in [0, 1].
    float proj[16] = {t / aspect, 0, 0, 0, 0, -t, 0, 0, 0, 0, far / (near - far), -1, 0, 0, near * far / (near - far),
                      0};
    std::array<float, 16> out{};
    for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r)
            for (int k = 0; k < 4; ++k) out[size_t(c * 4 + r)] += proj[k * 4 + r] * view[c * 4 + k];
    return out;
}

Renderer::Renderer(const VulkanContext& vk, VkFormat color_format, VkImageLayout final_layout) : vk_(vk) {
    create_pass(color_format, final_layout);
    create_pipelines();
    create_meshes();
}

Renderer::~Renderer() {
    VkDevice dev = vk_.device();
    vkDeviceWaitIdle(dev);
    vk_.destroy(vertices_);
    vk_.destroy(instances2d_);
    vk_.destroy(instances3d_);
    vkDestroyPipeline(dev, shapes_, nullptr);
    vkDestroyPipeline(dev, meshes_, nullptr);
    vkDestroyPipelineLayout(dev, layout2d_, nullptr);
    vkDestroyPipelineLayout(dev, layout3d_, nullptr);
    vkDestroyRenderPass(dev, pass_, nullptr);
}

void Renderer::create_pass(VkFormat color_format, VkImageLayout final_layout) {
    VkAttachmentDescription att[2] = {};
    att[0].format = color_format, att[0].samples = VK_SAMPLE_COUNT_1_BIT;
    att[0].loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR, att[0].storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    att[0].stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE, att[0].stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att[0].initialLayout = VK_IMAGE_LAYOUT_UNDEFINED, att[0].finalLayout = final_layout;
    att[1] = att[0];
    att[1].format = kDepthFormat, att[1].storeOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att[1].finalLayout = VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL;
    VkAttachmentReference color{0, VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL};
    VkAttachmentReference depth{1, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub{};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.colorAttachmentCount = 1, sub.pColorAttachments = &color, sub.pDepthStencilAttachment = &depth;
    VkSubpassDependency dep{};
    dep.srcSubpass = VK_SUBPASS_EXTERNAL, dep.dstSubpass = 0;
    dep.srcStageMask = VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT;
    dep.dstStageMask = dep.srcStageMask;
    dep.dstAccessMask = VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    VkRenderPassCreateInfo ci{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    ci.attachmentCount = 2, ci.pAttachments = att, ci.subpassCount = 1, ci.pSubpasses = &sub;
    ci.dependencyCount = 1, ci.pDependencies = &dep;
    ORRERY_VK(vkCreateRenderPass(vk_.device(), &ci, nullptr, &pass_));
}

void Renderer::create_pipelines() {
    VkDevice dev = vk_.device();
    VkPushConstantRange push2d{VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(Transform2D)};
    VkPushConstantRange push3d{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, 80};
    VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    li.pushConstantRangeCount = 1, li.pPushConstantRanges = &push2d;
    ORRERY_VK(vkCreatePipelineLayout(dev, &li, nullptr, &layout2d_));
    li.pPushConstantRanges = &push3d;
    ORRERY_VK(vkCreatePipelineLayout(dev, &li, nullptr, &layout3d_));

    PipelineDesc d2{kShape2dVert,
                    sizeof(kShape2dVert),
                    kShape2dFrag,
                    sizeof(kShape2dFrag),
                    {{0, sizeof(Instance2D), VK_VERTEX_INPUT_RATE_INSTANCE}},
                    {{0, 0, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
                     {1, 0, VK_FORMAT_R32_SFLOAT, 16},
                     {2, 0, VK_FORMAT_R32_UINT, 20},
                     {3, 0, VK_FORMAT_R32_UINT, 24}},
                    VK_PRIMITIVE_TOPOLOGY_TRIANGLE_STRIP,
                    false};
    shapes_ = make_pipeline(dev, pass_, layout2d_, d2);
    PipelineDesc d3{
        kMesh3dVert,
        sizeof(kMesh3dVert),
        kMesh3dFrag,
        sizeof(kMesh3dFrag),
        {{0, sizeof(Vertex), VK_VERTEX_INPUT_RATE_VERTEX}, {1, sizeof(Instance3D), VK_VERTEX_INPUT_RATE_INSTANCE}},
        {{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0},
         {1, 0, VK_FORMAT_R32G32B32_SFLOAT, 12},
         {2, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
         {3, 1, VK_FORMAT_R32G32B32_SFLOAT, 16},
         {4, 1, VK_FORMAT_R32_UINT, 28}},
        VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
        true};
    meshes_ = make_pipeline(dev, pass_, layout3d_, d3);
}

void Renderer::create_meshes() {
    std::vector<Vertex> v;
    mesh_first_[size_t(Mesh::kCube)] = 0;
    add_cube(v);
    mesh_count_[size_t(Mesh::kCube)] = uint32_t(v.size());
    mesh_first_[size_t(Mesh::kSphere)] = uint32_t(v.size());
    add_sphere(v);
    mesh_count_[size_t(Mesh::kSphere)] = uint32_t(v.size()) - mesh_first_[size_t(Mesh::kSphere)];
    vertices_ = vk_.create_buffer(v.size() * sizeof(Vertex), VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    std::memcpy(vertices_.mapped, v.data(), v.size() * sizeof(Vertex));
}

void Renderer::ensure(Buffer& b, VkDeviceSize bytes) {
    if (b.size >= bytes && b.buffer) return;
    vk_.destroy(b);
    VkDeviceSize size = 4096;
    while (size < bytes) size *= 2;
    b = vk_.create_buffer(size, VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                          VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
}

void Renderer::upload(const Scene& scene) {
    n2d_ = uint32_t(scene.shapes.size());
    ensure(instances2d_, n2d_ * sizeof(Instance2D));
    if (n2d_) std::memcpy(instances2d_.mapped, scene.shapes.data(), n2d_ * sizeof(Instance2D));
    size_t total = 0;
    for (const auto& m : scene.meshes) total += m.size();
    ensure(instances3d_, total * sizeof(Instance3D));
    auto* dst = static_cast<Instance3D*>(instances3d_.mapped);
    for (size_t k = 0; k < scene.meshes.size(); ++k) {
        n3d_[k] = uint32_t(scene.meshes[k].size());
        if (n3d_[k]) std::memcpy(dst, scene.meshes[k].data(), n3d_[k] * sizeof(Instance3D));
        dst += n3d_[k];
    }
}

void Renderer::begin_and_draw(VkCommandBuffer cmd, VkFramebuffer fb, VkExtent2D extent, const Scene& scene,
                              const Camera& cam, VkRect2D view) const {
    VkClearValue clear[2] = {};
    const Rgba bg = scene.background;
    clear[0].color = {{bg.r / 255.0f, bg.g / 255.0f, bg.b / 255.0f, bg.a / 255.0f}};
    clear[1].depthStencil = {1.0f, 0};
    VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    bi.renderPass = pass_, bi.framebuffer = fb, bi.renderArea = {{0, 0}, extent};
    bi.clearValueCount = 2, bi.pClearValues = clear;
    vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
    if (view.extent.width == 0 || view.extent.height == 0) view = {{0, 0}, extent};
    VkViewport vp{
        float(view.offset.x), float(view.offset.y), float(view.extent.width), float(view.extent.height), 0.0f, 1.0f};
    VkRect2D sc = view;
    extent = view.extent; // the cameras frame the scene's own area
    vkCmdSetViewport(cmd, 0, 1, &vp);
    vkCmdSetScissor(cmd, 0, 1, &sc);
    uint32_t total3d = 0;
    for (uint32_t n : n3d_) total3d += n;
    if (total3d) {
        struct {
            std::array<float, 16> view_proj;
            float light[4];
        } push{orbit_view_proj(scene.bounds, cam, extent.width, extent.height), {0.4f, 0.3f, 0.85f, 0.0f}};
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, meshes_);
        vkCmdPushConstants(cmd, layout3d_, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(push),
                           &push);
        VkDeviceSize zero = 0, offset = 0;
        vkCmdBindVertexBuffers(cmd, 0, 1, &vertices_.buffer, &zero);
        for (size_t k = 0; k < n3d_.size(); ++k) {
            if (n3d_[k]) {
                vkCmdBindVertexBuffers(cmd, 1, 1, &instances3d_.buffer, &offset);
                vkCmdDraw(cmd, mesh_count_[k], n3d_[k], mesh_first_[k], 0);
            }
            offset += n3d_[k] * sizeof(Instance3D);
        }
    }
    if (n2d_) {
        Transform2D t = frame_bounds(scene.bounds, cam, extent.width, extent.height);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, shapes_);
        vkCmdPushConstants(cmd, layout2d_, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(t), &t);
        VkDeviceSize zero = 0;
        vkCmdBindVertexBuffers(cmd, 0, 1, &instances2d_.buffer, &zero);
        vkCmdDraw(cmd, 4, n2d_, 0, 0);
    }
}

} // namespace orrery::render
