// Pipelines and draw recording shared by the window and the offscreen target.
// Shaders are compiled to SPIR-V at build time and embedded (shaders/*.h).

#include "render/renderer.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "line3d_frag.h"
#include "line3d_vert.h"
#include "mesh3d_frag.h"
#include "mesh3d_vert.h"
#include "shape2d_frag.h"
#include "shape2d_vert.h"

namespace orrery::render {
namespace {

using V3 = std::array<float, 3>;

void add_cube(std::vector<Vertex3D>& v) {
    // Six faces, two triangles each, counter-clockwise seen from outside.
    const float f[6][3] = {{1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0}, {0, 0, 1}, {0, 0, -1}};
    for (const auto& n : f) {
        int a = n[0] != 0 ? 0 : n[1] != 0 ? 1 : 2;
        int b = (a + 1) % 3, c = (a + 2) % 3;
        float s = n[a];
        float quad[4][2] = {{-0.5f, -0.5f}, {0.5f, -0.5f}, {0.5f, 0.5f}, {-0.5f, 0.5f}};
        int order[6] = {0, 1, 2, 0, 2, 3};
        for (int k : order) {
            Vertex3D x{};
            x.p[a] = 0.5f * s;
            x.p[b] = quad[k][0] * s;
            x.p[c] = quad[k][1];
            x.n[0] = n[0], x.n[1] = n[1], x.n[2] = n[2];
            v.push_back(x);
        }
    }
}

/// A sphere of radius 0.5 in stacks from +z to -z. With `capsule`, the upper
/// half moves with +half length and the lower with -half length, and a band of
/// two rings at the equator joins them (the cylinder).
void add_sphere(std::vector<Vertex3D>& v, bool capsule) {
    const int slices = 24, stacks = 16; // even: the equator is a ring
    auto at = [&](int i, int j, float seg) {
        float th = 3.14159265f * float(j) / stacks, ph = 6.2831853f * float(i) / slices;
        Vertex3D x{};
        x.n[0] = std::sin(th) * std::cos(ph), x.n[1] = std::sin(th) * std::sin(ph), x.n[2] = std::cos(th);
        for (int k = 0; k < 3; ++k) x.p[k] = 0.5f * x.n[k];
        x.seg = capsule ? seg : 0.0f;
        return x;
    };
    for (int j = 0; j < stacks; ++j) {
        float seg = j < stacks / 2 ? 1.0f : -1.0f;
        for (int i = 0; i < slices; ++i) {
            Vertex3D a = at(i, j, seg), b = at(i + 1, j, seg), c = at(i + 1, j + 1, seg), d = at(i, j + 1, seg);
            for (const Vertex3D& x : {a, d, c, a, c, b}) v.push_back(x);
        }
    }
    if (!capsule) return;
    for (int i = 0; i < slices; ++i) { // the cylinder between the two equator rings
        Vertex3D a = at(i, stacks / 2, 1.0f), b = at(i + 1, stacks / 2, 1.0f), c = at(i + 1, stacks / 2, -1.0f),
                 d = at(i, stacks / 2, -1.0f);
        for (const Vertex3D& x : {a, d, c, a, c, b}) v.push_back(x);
    }
}

/// A unit square in the xy plane facing +z (floors: scaled, the grid drawn on it).
void add_plane(std::vector<Vertex3D>& v) {
    const float c[6][2] = {{-0.5f, -0.5f}, {0.5f, -0.5f}, {0.5f, 0.5f}, {-0.5f, -0.5f}, {0.5f, 0.5f}, {-0.5f, 0.5f}};
    for (const auto& p : c) v.push_back({{p[0], p[1], 0.0f}, {0.0f, 0.0f, 1.0f}, 0.0f});
}

VkShaderModule module(VkDevice dev, const uint32_t* code, size_t bytes) {
    VkShaderModuleCreateInfo ci{VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO};
    ci.codeSize = bytes;
    ci.pCode = code;
    VkShaderModule m;
    ORRERY_VK(vkCreateShaderModule(dev, &ci, nullptr, &m));
    return m;
}

/// The fixed-function state the pipelines share, differing in topology, depth,
/// blending and stages (the shadow pipeline has no fragment shader).
struct PipelineDesc {
    const uint32_t* vert;
    size_t vert_bytes;
    const uint32_t* frag; ///< null: depth only
    size_t frag_bytes;
    std::vector<VkVertexInputBindingDescription> bindings;
    std::vector<VkVertexInputAttributeDescription> attributes;
    VkPrimitiveTopology topology;
    bool depth;
    bool depth_bias = false;
};

VkPipeline make_pipeline(VkDevice dev, VkRenderPass pass, VkPipelineLayout layout, const PipelineDesc& d) {
    VkShaderModule vs = module(dev, d.vert, d.vert_bytes);
    VkShaderModule fs = d.frag ? module(dev, d.frag, d.frag_bytes) : VK_NULL_HANDLE;
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
    if (d.depth_bias) // keeps lit surfaces from shadowing themselves (acne)
        rs.depthBiasEnable = VK_TRUE, rs.depthBiasConstantFactor = 2.0f, rs.depthBiasSlopeFactor = 2.5f;
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
    cb.attachmentCount = d.frag ? 1 : 0, cb.pAttachments = &blend;
    VkDynamicState dyn[2] = {VK_DYNAMIC_STATE_VIEWPORT, VK_DYNAMIC_STATE_SCISSOR};
    VkPipelineDynamicStateCreateInfo dy{VK_STRUCTURE_TYPE_PIPELINE_DYNAMIC_STATE_CREATE_INFO};
    dy.dynamicStateCount = 2, dy.pDynamicStates = dyn;
    VkGraphicsPipelineCreateInfo ci{VK_STRUCTURE_TYPE_GRAPHICS_PIPELINE_CREATE_INFO};
    ci.stageCount = d.frag ? 2 : 1, ci.pStages = stages;
    ci.pVertexInputState = &vi, ci.pInputAssemblyState = &ia, ci.pViewportState = &vp;
    ci.pRasterizationState = &rs, ci.pMultisampleState = &ms, ci.pDepthStencilState = &ds;
    ci.pColorBlendState = &cb, ci.pDynamicState = &dy;
    ci.layout = layout, ci.renderPass = pass;
    VkPipeline p;
    VkResult r = vkCreateGraphicsPipelines(dev, VK_NULL_HANDLE, 1, &ci, nullptr, &p);
    vkDestroyShaderModule(dev, vs, nullptr);
    if (fs) vkDestroyShaderModule(dev, fs, nullptr);
    ORRERY_VK(r);
    return p;
}

V3 sub(V3 a, V3 b) { return {a[0] - b[0], a[1] - b[1], a[2] - b[2]}; }
V3 add(V3 a, V3 b) { return {a[0] + b[0], a[1] + b[1], a[2] + b[2]}; }
V3 mul(V3 a, float k) { return {a[0] * k, a[1] * k, a[2] * k}; }
V3 cross(V3 a, V3 b) { return {a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]}; }
float dot(V3 a, V3 b) { return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]; }
V3 norm(V3 a) {
    float l = std::sqrt(dot(a, a));
    return l > 0.0f ? V3{a[0] / l, a[1] / l, a[2] / l} : V3{0.0f, 0.0f, 1.0f};
}
/// A right vector for looking along `f` with z up (x when looking straight up or down).
V3 right_of(V3 f) {
    V3 s = cross(f, {0.0f, 0.0f, 1.0f});
    return dot(s, s) > 1e-8f ? norm(s) : V3{1.0f, 0.0f, 0.0f};
}

/// Column-major product a * b.
std::array<float, 16> mat_mul(const std::array<float, 16>& a, const std::array<float, 16>& b) {
    std::array<float, 16> out{};
    for (int c = 0; c < 4; ++c)
        for (int r = 0; r < 4; ++r)
            for (int k = 0; k < 4; ++k) out[size_t(c * 4 + r)] += a[size_t(k * 4 + r)] * b[size_t(c * 4 + k)];
    return out;
}

std::array<float, 16> look(V3 eye, V3 s, V3 u, V3 f) {
    return {s[0], u[0], -f[0], 0, s[1],         u[1],         -f[1],       0,
            s[2], u[2], -f[2], 0, -dot(s, eye), -dot(u, eye), dot(f, eye), 1};
}

/// Distance along the ray o + t d to where it enters the box of half extents h
/// (ray already in the box's frame), or -1.
float ray_box(V3 o, V3 d, V3 h) {
    float t0 = 0.0f, t1 = 1e30f;
    for (int k = 0; k < 3; ++k) {
        if (std::fabs(d[size_t(k)]) < 1e-12f) {
            if (std::fabs(o[size_t(k)]) > h[size_t(k)]) return -1.0f;
            continue;
        }
        float a = (-h[size_t(k)] - o[size_t(k)]) / d[size_t(k)], b = (h[size_t(k)] - o[size_t(k)]) / d[size_t(k)];
        t0 = std::fmax(t0, std::fmin(a, b));
        t1 = std::fmin(t1, std::fmax(a, b));
    }
    return t0 <= t1 ? t0 : -1.0f;
}

/// Distance to where the ray o + t d (d unit) enters the sphere of radius r at c, or -1.
float ray_sphere(V3 o, V3 d, V3 c, float r) {
    V3 m = sub(o, c);
    float b = dot(m, d), cc = dot(m, m) - r * r;
    float disc = b * b - cc;
    if (disc < 0.0f) return -1.0f;
    float t = -b - std::sqrt(disc);
    return t >= 0.0f ? t : (cc <= 0.0f ? 0.0f : -1.0f);
}

/// Distance to the capsule (segment c +- h * axis, radius r), or -1: the nearest
/// hit of its two end spheres and its cylinder.
float ray_capsule(V3 o, V3 d, V3 c, V3 axis, float h, float r) {
    float best = -1.0f;
    auto keep = [&](float t) {
        if (t >= 0.0f && (best < 0.0f || t < best)) best = t;
    };
    keep(ray_sphere(o, d, add(c, mul(axis, h)), r));
    keep(ray_sphere(o, d, sub(c, mul(axis, h)), r));
    V3 m = sub(o, c);
    V3 dp = sub(d, mul(axis, dot(d, axis))), mp = sub(m, mul(axis, dot(m, axis)));
    float a = dot(dp, dp), b = dot(mp, dp), cc = dot(mp, mp) - r * r;
    if (a > 1e-12f && b * b - a * cc >= 0.0f) {
        float t = (-b - std::sqrt(b * b - a * cc)) / a;
        if (std::fabs(dot(add(m, mul(d, t)), axis)) <= h) keep(t);
    }
    return best;
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

CameraFrame camera_frame(const std::array<float, 4>& b, const Camera& cam, uint32_t w, uint32_t h) {
    float extent = std::fmax(b[2] - b[0], b[3] - b[1]);
    float aspect = float(w) / float(h);
    CameraFrame f{};
    if (cam.mode == Camera::Mode::kEye) {
        f.eye = cam.eye;
        f.forward = norm(cam.forward);
        f.right = right_of(f.forward);
        f.up = cross(f.right, f.forward);
        f.tan_x = std::tan(0.5f * std::fmin(cam.eye_fov, 3.0f));
        f.tan_y = f.tan_x / aspect;
        f.near = std::fmax(cam.eye_near, 1e-3f);
        f.far = 4.0f * extent + 10.0f;
        return f;
    }
    V3 target{0.5f * (b[0] + b[2]) + cam.pan_x, 0.5f * (b[1] + b[3]) + cam.pan_y, 0.0f};
    float dist = cam.distance > 0.0f ? cam.distance : 0.8f * extent / std::tan(0.5f * cam.fov);
    if (cam.mode == Camera::Mode::kTop) { // straight down, +x right and +y up on the screen
        f.eye = add(target, {0.0f, 0.0f, dist});
        f.forward = {0.0f, 0.0f, -1.0f};
        f.right = {1.0f, 0.0f, 0.0f};
        f.up = {0.0f, 1.0f, 0.0f};
    } else {
        f.eye = add(target, {dist * std::cos(cam.pitch) * std::cos(cam.yaw),
                             dist * std::cos(cam.pitch) * std::sin(cam.yaw), dist * std::sin(cam.pitch)});
        f.forward = norm(sub(target, f.eye));
        f.right = right_of(f.forward);
        f.up = cross(f.right, f.forward);
    }
    f.tan_y = std::tan(0.5f * cam.fov);
    f.tan_x = f.tan_y * aspect;
    if (cam.mode == Camera::Mode::kTop && cam.distance <= 0.0f) { // the bounds fill the view, 10 % spare
        dist = 0.55f * extent / std::fmin(f.tan_x, f.tan_y);
        f.eye = add(target, {0.0f, 0.0f, dist});
    }
    f.near = 0.01f * dist;
    f.far = 4.0f * dist + extent;
    return f;
}

std::array<float, 16> view_proj(const CameraFrame& f) {
    float n = f.near, fa = f.far;
    // Vulkan clip space: y down, depth in [0, 1].
    std::array<float, 16> proj = {1.0f / f.tan_x,    0, 0, 0, 0, -1.0f / f.tan_y, 0, 0, 0, 0, fa / (n - fa), -1, 0, 0,
                                  n * fa / (n - fa), 0};
    return mat_mul(proj, look(f.eye, f.right, f.up, f.forward));
}

std::array<float, 16> orbit_view_proj(const std::array<float, 4>& b, const Camera& cam, uint32_t w, uint32_t h) {
    return view_proj(camera_frame(b, cam, w, h));
}

std::array<float, 16> light_view_proj(const std::array<float, 4>& b, const std::array<float, 3>& light) {
    V3 c{0.5f * (b[0] + b[2]), 0.5f * (b[1] + b[3]), 0.0f};
    float half = 0.75f * std::fmax(b[2] - b[0], b[3] - b[1]) + 0.5f; // the bounds and a margin, any sun angle
    V3 l = norm(light);
    float dist = 4.0f * half;
    V3 eye = add(c, mul(l, dist)), f = mul(l, -1.0f);
    V3 s = right_of(f), u = cross(s, f);
    float n = 0.0f, fa = 2.0f * dist;
    std::array<float, 16> ortho = {1.0f / half,   0, 0, 0, 0, 1.0f / half, 0, 0, 0, 0, -1.0f / (fa - n), 0, 0, 0,
                                   -n / (fa - n), 1};
    return mat_mul(ortho, look(eye, s, u, f));
}

std::array<float, 3> project(const std::array<float, 16>& m, const std::array<float, 3>& p, uint32_t w, uint32_t h) {
    float cx = m[0] * p[0] + m[4] * p[1] + m[8] * p[2] + m[12], cy = m[1] * p[0] + m[5] * p[1] + m[9] * p[2] + m[13];
    float cw = m[3] * p[0] + m[7] * p[1] + m[11] * p[2] + m[15];
    return {(cx / cw * 0.5f + 0.5f) * float(w), (cy / cw * 0.5f + 0.5f) * float(h), cw};
}

int32_t pick_body(const Scene& scene, const Camera& cam, uint32_t w, uint32_t h, float px, float py) {
    CameraFrame f = camera_frame(scene.bounds, cam, w, h);
    float nx = 2.0f * px / float(w) - 1.0f, ny = 2.0f * py / float(h) - 1.0f; // ny grows downwards
    V3 d = norm(add(f.forward, add(mul(f.right, nx * f.tan_x), mul(f.up, -ny * f.tan_y))));
    int32_t best = -1;
    float best_t = 1e30f;
    for (size_t i = 0; i < scene.bodies.size(); ++i) {
        const BodyRef& b = scene.bodies[i];
        if (b.solid == Solid::kPlane || !(b.bound > 0.0f)) continue;
        // The ray in the body's frame: rotate by the conjugate quaternion.
        std::array<float, 4> inv{b.q[0], -b.q[1], -b.q[2], -b.q[3]};
        V3 o = rotate(inv, sub(f.eye, b.p)), dl = rotate(inv, d);
        float t = -1.0f;
        if (b.solid == Solid::kSphere)
            t = ray_sphere(o, dl, {0, 0, 0}, b.bound);
        else if (b.solid == Solid::kCapsule)
            t = ray_capsule(o, dl, {0, 0, 0}, {0, 0, 1}, b.half[2] - b.half[0], b.half[0]);
        else
            t = ray_box(o, dl, b.half); // boxes, and hulls by their bounding box
        if (t >= 0.0f && t < best_t) best_t = t, best = int32_t(i);
    }
    return best;
}

bool aim_eye(Scene& scene, uint32_t archetype, uint32_t row, Camera& cam) {
    for (const BodyRef& b : scene.bodies) {
        if (b.archetype != archetype || b.row != row) continue;
        cam.eye = b.p;
        cam.forward = rotate(b.q, {1.0f, 0.0f, 0.0f});
        cam.eye_near = 0.02f;
        Instance3D* own = b.mesh == int32_t(Mesh::kCount)           ? &scene.hulls[b.instance].at
                          : b.mesh >= 0 && b.solid != Solid::kPlane ? &scene.meshes[size_t(b.mesh)][b.instance]
                                                                    : nullptr; // a floor stays
        if (own) own->sx = own->sy = own->sz = 0.0f, own->half_length = 0.0f;  // degenerate: not drawn
        return true;
    }
    return false;
}

Renderer::Renderer(const VulkanContext& vk, VkFormat color_format, VkImageLayout final_layout, uint32_t shadow_size)
    : vk_(vk) {
    if (shadow_size != 0 && (shadow_size < 64 || shadow_size > 8192))
        throw Error("render: shadow_size is " + std::to_string(shadow_size) +
                    "; expected 0 (the default) or 64 to 8192");
    create_pass(color_format, final_layout);
    create_shadow_target(shadow_size);
    create_descriptors();
    create_pipelines();
    create_meshes();
}

Renderer::~Renderer() {
    VkDevice dev = vk_.device();
    vkDeviceWaitIdle(dev);
    for (Buffer* b : {&vertices_, &instances2d_, &instances3d_, &hull_vertices_, &lines_buffer_, &frame_})
        vk_.destroy(*b);
    for (VkPipeline p : {shapes_, meshes_, shadows_, lines_}) vkDestroyPipeline(dev, p, nullptr);
    vkDestroyPipelineLayout(dev, layout2d_, nullptr);
    vkDestroyPipelineLayout(dev, layout3d_, nullptr);
    vkDestroyDescriptorPool(dev, pool_, nullptr);
    vkDestroyDescriptorSetLayout(dev, set_layout_, nullptr);
    vkDestroySampler(dev, shadow_sampler_, nullptr);
    vkDestroyFramebuffer(dev, shadow_fb_, nullptr);
    vk_.destroy(shadow_map_);
    vkDestroyRenderPass(dev, shadow_pass_, nullptr);
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

void Renderer::create_shadow_target(uint32_t size) {
    VkDevice dev = vk_.device();
    VkAttachmentDescription att{};
    att.format = kDepthFormat, att.samples = VK_SAMPLE_COUNT_1_BIT;
    att.loadOp = VK_ATTACHMENT_LOAD_OP_CLEAR, att.storeOp = VK_ATTACHMENT_STORE_OP_STORE;
    att.stencilLoadOp = VK_ATTACHMENT_LOAD_OP_DONT_CARE, att.stencilStoreOp = VK_ATTACHMENT_STORE_OP_DONT_CARE;
    att.initialLayout = VK_IMAGE_LAYOUT_UNDEFINED, att.finalLayout = VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL;
    VkAttachmentReference depth{0, VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL};
    VkSubpassDescription sub{};
    sub.pipelineBindPoint = VK_PIPELINE_BIND_POINT_GRAPHICS;
    sub.pDepthStencilAttachment = &depth;
    // Last frame's reads of the map finish before this pass writes it; this
    // pass's writes land before the main pass's fragment shader reads them.
    VkSubpassDependency deps[2] = {};
    deps[0].srcSubpass = VK_SUBPASS_EXTERNAL, deps[0].dstSubpass = 0;
    deps[0].srcStageMask = VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT;
    deps[0].dstStageMask = VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT;
    deps[0].srcAccessMask = VK_ACCESS_SHADER_READ_BIT,
    deps[0].dstAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT;
    deps[1].srcSubpass = 0, deps[1].dstSubpass = VK_SUBPASS_EXTERNAL;
    deps[1].srcStageMask = VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT;
    deps[1].dstStageMask = VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT;
    deps[1].srcAccessMask = VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
    deps[1].dstAccessMask = VK_ACCESS_SHADER_READ_BIT;
    VkRenderPassCreateInfo ci{VK_STRUCTURE_TYPE_RENDER_PASS_CREATE_INFO};
    ci.attachmentCount = 1, ci.pAttachments = &att, ci.subpassCount = 1, ci.pSubpasses = &sub;
    ci.dependencyCount = 2, ci.pDependencies = deps;
    ORRERY_VK(vkCreateRenderPass(dev, &ci, nullptr, &shadow_pass_));
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(vk_.physical(), &props);
    shadow_size_ = size ? size : props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU ? 1024 : 2048;
    shadow_map_ = vk_.create_image(shadow_size_, shadow_size_, kDepthFormat,
                                   VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | VK_IMAGE_USAGE_SAMPLED_BIT,
                                   VK_IMAGE_ASPECT_DEPTH_BIT);
    VkFramebufferCreateInfo fi{VK_STRUCTURE_TYPE_FRAMEBUFFER_CREATE_INFO};
    fi.renderPass = shadow_pass_, fi.attachmentCount = 1, fi.pAttachments = &shadow_map_.view;
    fi.width = shadow_size_, fi.height = shadow_size_, fi.layers = 1;
    ORRERY_VK(vkCreateFramebuffer(dev, &fi, nullptr, &shadow_fb_));
    VkSamplerCreateInfo si{VK_STRUCTURE_TYPE_SAMPLER_CREATE_INFO};
    si.magFilter = VK_FILTER_NEAREST, si.minFilter = VK_FILTER_NEAREST;
    si.addressModeU = si.addressModeV = si.addressModeW = VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE;
    si.compareEnable = VK_TRUE, si.compareOp = VK_COMPARE_OP_LESS_OR_EQUAL;
    si.maxLod = 0.0f, si.borderColor = VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE;
    ORRERY_VK(vkCreateSampler(dev, &si, nullptr, &shadow_sampler_));
}

namespace {
/// The 3-D pipelines' uniforms (std140): the camera's and the sun's
/// view-projections, the direction towards the sun and the floor grid's spacing.
struct FrameUniforms {
    std::array<float, 16> view_proj, light_view_proj;
    float light[4];  ///< xyz towards the sun
    float params[4]; ///< x: grid spacing (world units)
};
} // namespace

void Renderer::create_descriptors() {
    VkDevice dev = vk_.device();
    VkDescriptorSetLayoutBinding b[2] = {};
    b[0].binding = 0, b[0].descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, b[0].descriptorCount = 1;
    b[0].stageFlags = VK_SHADER_STAGE_FRAGMENT_BIT;
    b[1].binding = 1, b[1].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, b[1].descriptorCount = 1;
    b[1].stageFlags = VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT;
    VkDescriptorSetLayoutCreateInfo li{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO};
    li.bindingCount = 2, li.pBindings = b;
    ORRERY_VK(vkCreateDescriptorSetLayout(dev, &li, nullptr, &set_layout_));
    VkDescriptorPoolSize sizes[2] = {{VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, 1},
                                     {VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1}};
    VkDescriptorPoolCreateInfo pi{VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO};
    pi.maxSets = 1, pi.poolSizeCount = 2, pi.pPoolSizes = sizes;
    ORRERY_VK(vkCreateDescriptorPool(dev, &pi, nullptr, &pool_));
    VkDescriptorSetAllocateInfo ai{VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO};
    ai.descriptorPool = pool_, ai.descriptorSetCount = 1, ai.pSetLayouts = &set_layout_;
    ORRERY_VK(vkAllocateDescriptorSets(dev, &ai, &set_));
    frame_ = vk_.create_buffer(sizeof(FrameUniforms), VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT,
                               VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    VkDescriptorImageInfo image{shadow_sampler_, shadow_map_.view, VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL};
    VkDescriptorBufferInfo buffer{frame_.buffer, 0, sizeof(FrameUniforms)};
    VkWriteDescriptorSet w[2] = {{VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}, {VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET}};
    w[0].dstSet = set_, w[0].dstBinding = 0, w[0].descriptorCount = 1;
    w[0].descriptorType = VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, w[0].pImageInfo = &image;
    w[1].dstSet = set_, w[1].dstBinding = 1, w[1].descriptorCount = 1;
    w[1].descriptorType = VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, w[1].pBufferInfo = &buffer;
    vkUpdateDescriptorSets(dev, 2, w, 0, nullptr);
}

void Renderer::create_pipelines() {
    VkDevice dev = vk_.device();
    VkPushConstantRange push2d{VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(Transform2D)};
    VkPushConstantRange push3d{VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, 16};
    VkPipelineLayoutCreateInfo li{VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO};
    li.pushConstantRangeCount = 1, li.pPushConstantRanges = &push2d;
    ORRERY_VK(vkCreatePipelineLayout(dev, &li, nullptr, &layout2d_));
    li.pPushConstantRanges = &push3d;
    li.setLayoutCount = 1, li.pSetLayouts = &set_layout_;
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
        {{0, sizeof(Vertex3D), VK_VERTEX_INPUT_RATE_VERTEX}, {1, sizeof(Instance3D), VK_VERTEX_INPUT_RATE_INSTANCE}},
        {{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0},
         {1, 0, VK_FORMAT_R32G32B32_SFLOAT, 12},
         {2, 0, VK_FORMAT_R32_SFLOAT, 24},
         {3, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 0},
         {4, 1, VK_FORMAT_R32G32B32_SFLOAT, 16},
         {5, 1, VK_FORMAT_R32_UINT, 28},
         {6, 1, VK_FORMAT_R32G32B32A32_SFLOAT, 32},
         {7, 1, VK_FORMAT_R32_SFLOAT, 48},
         {8, 1, VK_FORMAT_R32_UINT, 52}},
        VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST,
        true};
    meshes_ = make_pipeline(dev, pass_, layout3d_, d3);
    PipelineDesc ds = d3;
    ds.frag = nullptr, ds.frag_bytes = 0, ds.depth_bias = true;
    shadows_ = make_pipeline(dev, shadow_pass_, layout3d_, ds);
    PipelineDesc dl{kLine3dVert,
                    sizeof(kLine3dVert),
                    kLine3dFrag,
                    sizeof(kLine3dFrag),
                    {{0, sizeof(LineVertex), VK_VERTEX_INPUT_RATE_VERTEX}},
                    {{0, 0, VK_FORMAT_R32G32B32_SFLOAT, 0}, {1, 0, VK_FORMAT_R32_UINT, 12}},
                    VK_PRIMITIVE_TOPOLOGY_LINE_LIST,
                    false}; // overlays show through the bodies
    lines_ = make_pipeline(dev, pass_, layout3d_, dl);
}

void Renderer::create_meshes() {
    std::vector<Vertex3D> v;
    auto mesh = [&](Mesh m, auto&& fill) {
        mesh_first_[size_t(m)] = uint32_t(v.size());
        fill();
        mesh_count_[size_t(m)] = uint32_t(v.size()) - mesh_first_[size_t(m)];
    };
    mesh(Mesh::kCube, [&] { add_cube(v); });
    mesh(Mesh::kSphere, [&] { add_sphere(v, false); });
    mesh(Mesh::kCapsule, [&] { add_sphere(v, true); });
    mesh(Mesh::kPlane, [&] { add_plane(v); });
    vertices_ = vk_.create_buffer(v.size() * sizeof(Vertex3D), VK_BUFFER_USAGE_VERTEX_BUFFER_BIT,
                                  VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT);
    std::memcpy(vertices_.mapped, v.data(), v.size() * sizeof(Vertex3D));
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
    size_t total = scene.hulls.size();
    for (const auto& m : scene.meshes) total += m.size();
    ensure(instances3d_, total * sizeof(Instance3D));
    auto* dst = static_cast<Instance3D*>(instances3d_.mapped);
    for (size_t k = 0; k < scene.meshes.size(); ++k) {
        n3d_[k] = uint32_t(scene.meshes[k].size());
        if (n3d_[k]) std::memcpy(dst, scene.meshes[k].data(), n3d_[k] * sizeof(Instance3D));
        dst += n3d_[k];
    }
    hull_draws_.clear();
    for (const HullInstance& h : scene.hulls) {
        *dst++ = h.at;
        hull_draws_.push_back({h.first, h.count});
    }
    ensure(hull_vertices_, scene.hull_vertices.size() * sizeof(Vertex3D));
    if (!scene.hull_vertices.empty())
        std::memcpy(hull_vertices_.mapped, scene.hull_vertices.data(), scene.hull_vertices.size() * sizeof(Vertex3D));
    n_lines_ = uint32_t(scene.lines.size());
    ensure(lines_buffer_, n_lines_ * sizeof(LineVertex));
    if (n_lines_) std::memcpy(lines_buffer_.mapped, scene.lines.data(), n_lines_ * sizeof(LineVertex));
    shadow_current_ = shadow_recorded_ && scene.bounds == shadow_bounds_ && scene.light == shadow_light_ &&
                      scene.meshes == shadow_meshes_ && scene.hulls == shadow_hulls_ &&
                      scene.hull_vertices == shadow_hull_vertices_;
    if (!shadow_current_) {
        shadow_recorded_ = false;
        shadow_meshes_ = scene.meshes, shadow_hulls_ = scene.hulls, shadow_hull_vertices_ = scene.hull_vertices;
        shadow_bounds_ = scene.bounds, shadow_light_ = scene.light;
    }
}

void Renderer::draw_meshes(VkCommandBuffer cmd, VkPipeline pipeline, uint32_t pass) const {
    vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, pipeline);
    vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout3d_, 0, 1, &set_, 0, nullptr);
    uint32_t push[4] = {pass, 0, 0, 0};
    vkCmdPushConstants(cmd, layout3d_, VK_SHADER_STAGE_VERTEX_BIT | VK_SHADER_STAGE_FRAGMENT_BIT, 0, sizeof(push),
                       push);
    VkDeviceSize zero = 0, offset = 0;
    vkCmdBindVertexBuffers(cmd, 0, 1, &vertices_.buffer, &zero);
    vkCmdBindVertexBuffers(cmd, 1, 1, &instances3d_.buffer, &zero);
    uint32_t instance = 0;
    for (size_t k = 0; k < n3d_.size(); ++k) {
        if (n3d_[k]) vkCmdDraw(cmd, mesh_count_[k], n3d_[k], mesh_first_[k], instance);
        instance += n3d_[k];
    }
    if (hull_draws_.empty()) return;
    vkCmdBindVertexBuffers(cmd, 0, 1, &hull_vertices_.buffer, &offset);
    for (const auto& [first, count] : hull_draws_) vkCmdDraw(cmd, count, 1, first, instance++);
}

void Renderer::begin_and_draw(VkCommandBuffer cmd, VkFramebuffer fb, VkExtent2D extent, const Scene& scene,
                              const Camera& cam, VkRect2D view) const {
    if (view.extent.width == 0 || view.extent.height == 0) view = {{0, 0}, extent};
    uint32_t total3d = uint32_t(hull_draws_.size());
    for (uint32_t n : n3d_) total3d += n;
    const bool three_d = total3d > 0 || n_lines_ > 0;
    if (three_d) {
        FrameUniforms u{};
        u.view_proj = view_proj(camera_frame(scene.bounds, cam, view.extent.width, view.extent.height));
        u.light_view_proj = light_view_proj(scene.bounds, scene.light);
        float l = std::sqrt(scene.light[0] * scene.light[0] + scene.light[1] * scene.light[1] +
                            scene.light[2] * scene.light[2]);
        for (int k = 0; k < 3; ++k) u.light[k] = l > 0.0f ? scene.light[size_t(k)] / l : (k == 2 ? 1.0f : 0.0f);
        float extent3d = std::fmax(scene.bounds[2] - scene.bounds[0], scene.bounds[3] - scene.bounds[1]);
        u.params[0] = extent3d > 20.0f ? 5.0f : extent3d > 4.0f ? 1.0f : 0.25f; // about 4 to 20 lines across
        // Shadow lookups start 1.5 texels off the surface along its normal (no acne at grazing sun).
        u.params[1] = 1.5f * 2.0f * (0.75f * extent3d + 0.5f) / float(shadow_size_);
        std::memcpy(frame_.mapped, &u, sizeof(u));
    }
    if (three_d && !shadow_current_) {
        // The shadow map: depth from the sun, before the main pass.
        shadow_recorded_ = true;
        ++shadow_passes_;
        VkClearValue clear{};
        clear.depthStencil = {1.0f, 0};
        VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
        bi.renderPass = shadow_pass_, bi.framebuffer = shadow_fb_,
        bi.renderArea = {{0, 0}, {shadow_size_, shadow_size_}};
        bi.clearValueCount = 1, bi.pClearValues = &clear;
        vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
        VkViewport vp{0.0f, 0.0f, float(shadow_size_), float(shadow_size_), 0.0f, 1.0f};
        VkRect2D sc{{0, 0}, {shadow_size_, shadow_size_}};
        vkCmdSetViewport(cmd, 0, 1, &vp);
        vkCmdSetScissor(cmd, 0, 1, &sc);
        if (total3d) draw_meshes(cmd, shadows_, 1);
        vkCmdEndRenderPass(cmd);
    }
    VkClearValue clear[2] = {};
    const Rgba bg = scene.background;
    clear[0].color = {{bg.r / 255.0f, bg.g / 255.0f, bg.b / 255.0f, bg.a / 255.0f}};
    clear[1].depthStencil = {1.0f, 0};
    VkRenderPassBeginInfo bi{VK_STRUCTURE_TYPE_RENDER_PASS_BEGIN_INFO};
    bi.renderPass = pass_, bi.framebuffer = fb, bi.renderArea = {{0, 0}, extent};
    bi.clearValueCount = 2, bi.pClearValues = clear;
    vkCmdBeginRenderPass(cmd, &bi, VK_SUBPASS_CONTENTS_INLINE);
    VkViewport vp{
        float(view.offset.x), float(view.offset.y), float(view.extent.width), float(view.extent.height), 0.0f, 1.0f};
    VkRect2D sc = view;
    extent = view.extent; // the cameras frame the scene's own area
    vkCmdSetViewport(cmd, 0, 1, &vp);
    vkCmdSetScissor(cmd, 0, 1, &sc);
    if (total3d) draw_meshes(cmd, meshes_, 0);
    if (n_lines_) {
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, lines_);
        vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, layout3d_, 0, 1, &set_, 0, nullptr);
        VkDeviceSize zero = 0;
        vkCmdBindVertexBuffers(cmd, 0, 1, &lines_buffer_.buffer, &zero);
        vkCmdDraw(cmd, n_lines_, 1, 0, 0);
    }
    if (n2d_) {
        // In a 3-D view the 2-D marks are the heads-up display: framed by the bounds, never panned or zoomed.
        const bool hud = scene.view == DrawSpec::View::k3D;
        Transform2D t = frame_bounds(scene.bounds, hud ? Camera{} : cam, extent.width, extent.height);
        vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_GRAPHICS, shapes_);
        vkCmdPushConstants(cmd, layout2d_, VK_SHADER_STAGE_VERTEX_BIT, 0, sizeof(t), &t);
        VkDeviceSize zero = 0;
        vkCmdBindVertexBuffers(cmd, 0, 1, &instances2d_.buffer, &zero);
        vkCmdDraw(cmd, 4, n2d_, 0, 0);
    }
}

} // namespace orrery::render
