#pragma once
// A frame as flat lists of instances, built on the host from one world's state
// and the env's DrawSpec. No Vulkan here: both front ends hand the same Scene to
// the Renderer, and tests can check a scene without a GPU.

#include <array>
#include <string>
#include <vector>

#include "engine/ctx.hpp"
#include "engine/env.hpp"

namespace orrery {
/// Colours compare channel by channel (Scene's comparison uses it).
inline bool operator==(const Rgba& a, const Rgba& b) { return a.r == b.r && a.g == b.g && a.b == b.b && a.a == b.a; }
} // namespace orrery

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
    bool operator==(const Instance2D&) const = default;
};
static_assert(sizeof(Instance2D) == 32, "instance stride is fixed in the pipeline");

/// One instanced mesh: position, yaw about +z, per-axis scale, RGBA8 colour,
/// then an orientation applied after the yaw (bodies' quaternions) and what
/// capsules and floors need.
struct Instance3D {
    float x, y, z, yaw;
    float sx, sy, sz;
    uint32_t color;
    float qw = 1.0f, qx = 0.0f, qy = 0.0f, qz = 0.0f;
    float half_length = 0.0f; ///< capsules: half the segment along the local z axis, world units
    uint32_t flags = 0;       ///< kGridFlag: the floor grid is drawn on it
    float pad[2] = {0.0f, 0.0f};
    bool operator==(const Instance3D&) const = default;
};
static_assert(sizeof(Instance3D) == 64, "instance stride is fixed in the pipeline");
inline constexpr uint32_t kGridFlag = 1;

enum class Mesh : uint32_t { kCube = 0, kSphere = 1, kCapsule = 2, kPlane = 3, kCount = 4 };

/// A vertex of a 3-D mesh: position, normal, and (capsules) which end of the
/// segment it moves with (-1, 0 or +1 times the instance's half length along z).
struct Vertex3D {
    float p[3];
    float n[3];
    float seg;
    bool operator==(const Vertex3D&) const = default;
};

/// A hull body: its triangles (Scene::hull_vertices[first, first + count), body
/// frame) and its placement.
struct HullInstance {
    uint32_t first, count;
    Instance3D at;
    bool operator==(const HullInstance&) const = default;
};

/// One end of an overlay line segment: world position and RGBA8 colour.
struct LineVertex {
    float p[3];
    uint32_t color;
    bool operator==(const LineVertex&) const = default;
};

/// A drawn body, kept for picking, the entity's-eye camera and the inspector.
struct BodyRef {
    uint32_t archetype = 0, row = 0;
    std::array<float, 3> p{};
    std::array<float, 4> q{1.0f, 0.0f, 0.0f, 0.0f}; ///< w, x, y, z
    Solid solid = Solid::kNone;
    std::array<float, 3> half{}; ///< half extents of its local bounding box
    float bound = 0.0f;          ///< bounding-sphere radius
    int32_t mesh = -1;           ///< the Mesh whose instance draws it; Mesh::kCount: Scene::hulls
    uint32_t instance = 0;       ///< index in that mesh's instances (or in Scene::hulls)
    bool operator==(const BodyRef&) const = default;
};

/// Everything one frame draws.
struct Scene {
    DrawSpec::View view = DrawSpec::View::k2D;
    std::array<float, 4> bounds = {0.0f, 0.0f, 1.0f, 1.0f};
    Rgba background;
    std::vector<Instance2D> shapes; ///< 2-D marks, in painter's order (3-D: the status HUD, fixed to the frame)
    std::array<std::vector<Instance3D>, size_t(Mesh::kCount)> meshes; ///< 3-D marks by mesh
    std::vector<Vertex3D> hull_vertices;                              ///< triangles of hulls, body frame
    std::vector<HullInstance> hulls;
    std::vector<LineVertex> lines;                   ///< overlay segments, two vertices each, drawn over the bodies
    std::vector<BodyRef> bodies;                     ///< BodyDraw bodies in draw order
    std::vector<std::string> status;                 ///< the DrawSpec::statuses that hold, their lines
    std::array<float, 3> light = {0.5f, 0.3f, 0.6f}; ///< towards the sun
    /// Member by member (floats by value): two equal scenes draw the same pixels
    /// under one camera, which is how FrameRenderer knows a frame need not be redrawn.
    bool operator==(const Scene&) const = default;
};

/// What a scene shows besides the declared marks: the overlays turned on, by
/// name (the env's OverlayDraw names, and the built-in "bounds" and "velocities").
struct SceneOptions {
    std::vector<std::string> overlays;
    int32_t selected_archetype = -1; ///< the body drawn highlighted: its archetype (-1: none) and row
    uint32_t selected_row = 0;
    bool has(const std::string& name) const {
        for (const auto& o : overlays)
            if (o == name) return true;
        return false;
    }
};

/// The overlays a draw table offers: the built-in ones, then the env's.
std::vector<std::string> overlay_names(const DrawSpec& draw);
/// The overlays shown before the user toggles any (OverlayDraw::on).
SceneOptions default_scene_options(const DrawSpec& draw);

/// RGBA8 packed with r in the low byte (the layout of an R8G8B8A8 texel).
inline uint32_t pack(Rgba c) { return uint32_t(c.r) | uint32_t(c.g) << 8 | uint32_t(c.b) << 16 | uint32_t(c.a) << 24; }

/// The lines of the draw table's statuses that hold in the world `ctx` views,
/// and the background they tint (DrawSpec::background when none does).
struct StatusLines {
    std::vector<std::string> lines;
    Rgba background;
};
StatusLines status_of(const DrawSpec& draw, const Ctx& ctx);

/// Checks a draw table against its env: archetypes, components and offsets
/// exist. Throws orrery::Error naming the bad entry.
void validate_draw(const EnvSpec& spec);

/// Builds the scene of the world `ctx` views (a Simulator::read_world copy).
Scene build_scene(const DrawSpec& draw, const Ctx& ctx);
Scene build_scene(const DrawSpec& draw, const Ctx& ctx, const SceneOptions& options);

/// Rotates `v` by the unit quaternion (w, x, y, z) `q`.
std::array<float, 3> rotate(const std::array<float, 4>& q, const std::array<float, 3>& v);

/// Appends `text` centred at (cx, cy), `height` world units tall (smaller when
/// it would be wider than `max_width` > 0), as squares (stb_easy_font's
/// segments), so labels need no font texture.
void add_text(Scene& scene, const std::string& text, float cx, float cy, float height, Rgba color,
              float max_width = 0.0f);

/// Reads field `f` of row `row` of archetype `arch` in the world `ctx` views.
float read_field(const Field& f, const Ctx& ctx, uint32_t arch, uint32_t row, uint32_t stride_index = 0,
                 uint32_t stride = 0);

} // namespace orrery::render
