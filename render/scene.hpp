#pragma once
// A frame as flat lists of instances, built on the host from one world's state
// and the env's DrawSpec. No Vulkan here: both front ends hand the same Scene to
// the Renderer, and tests can check a scene without a GPU.

#include <array>
#include <string>
#include <vector>

#include "engine/ctx.hpp"
#include "engine/env.hpp"

namespace orrery::render {

/// 2-D primitive kinds the shape shader knows (the fragment shader's switch).
enum class Prim : uint32_t { kSquare = 0, kCircle = 1, kTriangle = 2, kRing = 3 };

/// One instanced quad: centre, half extents, rotation (radians), RGBA8 colour
/// (r in the low byte) and primitive. Matches the shape shader's inputs.
struct Instance2D {
    float cx, cy, hx, hy;
    float angle;
    uint32_t color;
    uint32_t prim;
    float pad;
};
static_assert(sizeof(Instance2D) == 32, "instance stride is fixed in the pipeline");

/// One instanced mesh: position, yaw about +z, per-axis scale, RGBA8 colour.
struct Instance3D {
    float x, y, z, yaw;
    float sx, sy, sz;
    uint32_t color;
};
static_assert(sizeof(Instance3D) == 32, "instance stride is fixed in the pipeline");

enum class Mesh : uint32_t { kCube = 0, kSphere = 1, kCount = 2 };

/// Everything one frame draws.
struct Scene {
    DrawSpec::View view = DrawSpec::View::k2D;
    std::array<float, 4> bounds = {0.0f, 0.0f, 1.0f, 1.0f};
    Rgba background;
    std::vector<Instance2D> shapes;                                   ///< 2-D marks, in painter's order
    std::array<std::vector<Instance3D>, size_t(Mesh::kCount)> meshes; ///< 3-D marks by mesh
};

/// RGBA8 packed with r in the low byte (the layout of an R8G8B8A8 texel).
inline uint32_t pack(Rgba c) { return uint32_t(c.r) | uint32_t(c.g) << 8 | uint32_t(c.b) << 16 | uint32_t(c.a) << 24; }

/// Checks a draw table against its env: archetypes, components and offsets
/// exist. Throws orrery::Error naming the bad entry.
void validate_draw(const EnvSpec& spec);

/// Builds the scene of the world `ctx` views (a Simulator::read_world copy).
Scene build_scene(const DrawSpec& draw, const Ctx& ctx);

/// Appends `text` centred at (cx, cy), `height` world units tall (smaller when
/// it would be wider than `max_width` > 0), as squares (stb_easy_font's
/// segments), so labels need no font texture.
void add_text(Scene& scene, const std::string& text, float cx, float cy, float height, Rgba color,
              float max_width = 0.0f);

/// Reads field `f` of row `row` of archetype `arch` in the world `ctx` views.
float read_field(const Field& f, const Ctx& ctx, uint32_t arch, uint32_t row, uint32_t stride_index = 0,
                 uint32_t stride = 0);

} // namespace orrery::render
