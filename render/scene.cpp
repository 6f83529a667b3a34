// Builds a Scene from one world's state and the env's DrawSpec: reads each
// declared field from the world's columns, picks styles by value and emits
// instanced quads (2-D view) or meshes (3-D view).

#include "render/scene.hpp"

#include <cmath>
#include <cstring>

#include "engine/error.hpp"

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#include <stb/stb_easy_font.h>
#pragma GCC diagnostic pop

namespace orrery::render {
namespace {

uint32_t scalar_size(ScalarType t) {
    switch (t) {
    case ScalarType::kU8:
    case ScalarType::kI8: return 1;
    case ScalarType::kU16:
    case ScalarType::kI16: return 2;
    default: return 4;
    }
}

/// The scalar at `p`; integers keep only the bits of `mask` (as two's complement).
float read_scalar(const uint8_t* p, ScalarType t, uint32_t mask) {
    switch (t) {
    case ScalarType::kU8: return float(uint32_t(*p) & mask);
    case ScalarType::kI8: return float(int32_t(int8_t(*p)) & int32_t(mask));
    case ScalarType::kU16: {
        uint16_t v;
        std::memcpy(&v, p, 2);
        return float(uint32_t(v) & mask);
    }
    case ScalarType::kI16: {
        int16_t v;
        std::memcpy(&v, p, 2);
        return float(int32_t(v) & int32_t(mask));
    }
    case ScalarType::kI32: {
        int32_t v;
        std::memcpy(&v, p, 4);
        return float(v & int32_t(mask));
    }
    case ScalarType::kU32: {
        uint32_t v;
        std::memcpy(&v, p, 4);
        return float(v & mask);
    }
    case ScalarType::kF32: {
        float v;
        std::memcpy(&v, p, 4);
        return v;
    }
    }
    return 0.0f;
}

/// Darker or lighter variant for text and markers drawn on top of `c`.
Rgba contrast(Rgba c) {
    int luma = (c.r * 299 + c.g * 587 + c.b * 114) / 1000;
    return luma > 140 ? Rgba{20, 20, 24, 255} : Rgba{245, 245, 245, 255};
}

void add_quad(Scene& s, float cx, float cy, float hx, float hy, Rgba c, Prim p, float angle = 0.0f) {
    s.shapes.push_back({cx, cy, hx, hy, angle, pack(c), uint32_t(p), 0.0f});
}

Prim prim_of(Shape s) {
    switch (s) {
    case Shape::kCircle:
    case Shape::kSphere: return Prim::kCircle;
    case Shape::kTriangle: return Prim::kTriangle;
    case Shape::kRing: return Prim::kRing;
    default: return Prim::kSquare;
    }
}

std::string expand_label(const std::string& label, uint32_t row) {
    std::string out;
    for (char ch : label) out += ch == '#' ? std::to_string(row) : std::string(1, ch);
    return out;
}

/// A progress bar under a mark of size `size` centred at (cx, cy).
void add_bar(Scene& s, float cx, float cy, float size, float value) {
    if (!(value > 0.0f)) return;
    value = value > 1.0f ? 1.0f : value;
    float w = 0.45f * size, h = 0.07f * size, y = cy + 0.36f * size;
    add_quad(s, cx, y, w, h, {30, 30, 30, 255}, Prim::kSquare);
    float fill = (w - 0.02f * size) * value;
    add_quad(s, cx - (w - 0.02f * size) + fill, y, fill, h * 0.6f, {250, 200, 40, 255}, Prim::kSquare);
}

/// One mark: a shape (2-D) or mesh (3-D), with its label, heading and bar.
struct Mark {
    const Style* style;
    float x, y, z, size;
    std::string label;
    float sx = 0.0f, sy = 0.0f, sz = 0.0f; ///< per-axis extents; 0: `size`
    bool has_heading = false;
    float hx = 0.0f, hy = 0.0f;
    float bar = 0.0f;
};

void add_mark(Scene& s, const Mark& m) {
    const Style& st = *m.style;
    if (s.view == DrawSpec::View::k3D) {
        Mesh mesh = (st.shape == Shape::kCircle || st.shape == Shape::kSphere) ? Mesh::kSphere : Mesh::kCube;
        float yaw = m.has_heading ? std::atan2(m.hy, m.hx) : 0.0f;
        float sx = m.sx > 0.0f ? m.sx : m.size, sy = m.sy > 0.0f ? m.sy : m.size, sz = m.sz > 0.0f ? m.sz : m.size;
        s.meshes[size_t(mesh)].push_back({m.x, m.y, m.z + 0.5f * sz, yaw, sx, sy, sz, pack(st.color)});
        return;
    }
    float r = 0.5f * m.size;
    float angle = m.has_heading && (m.sx > 0.0f || m.sy > 0.0f) ? std::atan2(m.hy, m.hx) : 0.0f;
    add_quad(s, m.x, m.y, m.sx > 0.0f ? 0.5f * m.sx : r, m.sy > 0.0f ? 0.5f * m.sy : r, st.color, prim_of(st.shape),
             angle);
    if (m.has_heading) {
        float len = std::sqrt(m.hx * m.hx + m.hy * m.hy);
        if (len > 0.0f) {
            float ux = m.hx / len, uy = m.hy / len;
            add_quad(s, m.x + ux * 0.62f * r, m.y + uy * 0.62f * r, 0.34f * r, 0.34f * r, contrast(st.color),
                     Prim::kTriangle, std::atan2(uy, ux));
        }
    }
    if (!m.label.empty()) add_text(s, m.label, m.x, m.y, 0.42f * m.size, contrast(st.color), 0.9f * m.size);
    add_bar(s, m.x, m.y, m.size, m.bar);
}

void add_entities(Scene& s, const EntityDraw& d, const Ctx& ctx) {
    const ArchetypeTable& t = ctx.storage().tables[d.archetype];
    uint32_t end = min_of(t.high_water[ctx.world()], t.capacity);
    for (uint32_t row = 0; row < end; ++row) {
        if (!t.alive[ctx.slot(t, row)]) continue;
        int32_t v = d.style_by.present() ? int32_t(std::lround(read_field(d.style_by, ctx, d.archetype, row))) : 0;
        const Style* st = d.styles.find(v);
        if (!st || st->shape == Shape::kNone) continue;
        Mark m{st,
               read_field(d.x, ctx, d.archetype, row) + d.dx,
               read_field(d.y, ctx, d.archetype, row) + d.dy,
               read_field(d.z, ctx, d.archetype, row),
               st->size,
               expand_label(st->label, row)};
        if (d.cell.present() && d.cell_width > 0) {
            uint32_t c = uint32_t(std::lround(read_field(d.cell, ctx, d.archetype, row)));
            m.x = (float(c % d.cell_width) + 0.5f) * d.cell_size + d.dx;
            m.y = (float(c / d.cell_width) + 0.5f) * d.cell_size + d.dy;
        }
        if (d.heading.present()) {
            float h = read_field(d.heading, ctx, d.archetype, row);
            if (d.headings.empty()) {
                m.has_heading = true;
                m.hx = std::cos(h);
                m.hy = std::sin(h);
            } else if (int32_t i = int32_t(std::lround(h)); i >= 0 && size_t(i) < d.headings.size()) {
                m.has_heading = true;
                m.hx = d.headings[size_t(i)][0];
                m.hy = d.headings[size_t(i)][1];
            }
        }
        if (d.bar.present()) m.bar = read_field(d.bar, ctx, d.archetype, row);
        m.sx = read_field(d.size_x, ctx, d.archetype, row);
        m.sy = read_field(d.size_y, ctx, d.archetype, row);
        m.sz = read_field(d.size_z, ctx, d.archetype, row);
        add_mark(s, m);
    }
}

void add_grid(Scene& s, const GridDraw& g, const Ctx& ctx) {
    uint32_t stride = g.stride ? g.stride : scalar_size(g.cells.type);
    uint32_t bar_stride = g.bar_stride ? g.bar_stride : scalar_size(g.bar.type);
    uint32_t at_stride = g.at_stride ? g.at_stride : scalar_size(g.at.type);
    uint32_t n = g.count ? g.count : g.width * g.height;
    for (uint32_t i = 0; i < n && g.width > 0; ++i) {
        int32_t v = int32_t(std::lround(read_field(g.cells, ctx, g.archetype, 0, i, stride)));
        const Style* st = g.styles.find(v);
        if (!st || st->shape == Shape::kNone) continue;
        uint32_t cell = g.count ? uint32_t(std::lround(read_field(g.at, ctx, g.archetype, 0, i, at_stride))) : i;
        float cx = (g.x0 + float(cell % g.width) + 0.5f) * g.cell_size;
        float cy = (g.y0 + float(cell / g.width) + 0.5f) * g.cell_size;
        Mark m{st, cx, cy, 0.0f, st->size * g.cell_size, expand_label(st->label, i)};
        if (s.view == DrawSpec::View::k3D) m.z = -m.size; // tiles sit just below the floor plane
        if (g.bar.present()) m.bar = read_field(g.bar, ctx, g.archetype, 0, i, bar_stride);
        add_mark(s, m);
    }
}

/// Field `f` moved `k` floats on: the k-th float of a vector member.
Field nth(Field f, uint32_t k) {
    f.offset += 4 * k;
    return f;
}

std::array<float, 3> read3(const Field& f, const Ctx& ctx, uint32_t arch, uint32_t row) {
    return {read_field(f, ctx, arch, row), read_field(nth(f, 1), ctx, arch, row),
            read_field(nth(f, 2), ctx, arch, row)};
}

std::array<float, 4> read_quat(const Field& f, const Ctx& ctx, uint32_t arch, uint32_t row) {
    if (!f.present()) return {1.0f, 0.0f, 0.0f, 0.0f};
    std::array<float, 4> q{};
    for (uint32_t k = 0; k < 4; ++k) q[k] = read_field(nth(f, k), ctx, arch, row);
    float n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
    if (!(n > 1e-6f)) return {1.0f, 0.0f, 0.0f, 0.0f}; // an unset pose reads as zeros
    for (float& c : q) c /= n;
    return q;
}

Rgba body_color(const BodyDraw& d, const Ctx& ctx, uint32_t row) {
    if (d.rgba.present()) {
        Field f = d.rgba;
        f.type = ScalarType::kU32;
        uint32_t v = uint32_t(read_field(f, ctx, d.archetype, row));
        return {uint8_t(v), uint8_t(v >> 8), uint8_t(v >> 16), uint8_t(v >> 24)};
    }
    for (const ColorRule& rule : d.color_rules) {
        int32_t v = int32_t(std::lround(read_field(rule.by, ctx, d.archetype, row)));
        for (const auto& [value, c] : rule.colors)
            if (value == v) return c;
    }
    return d.color;
}

Instance3D placed(const BodyRef& b, float sx, float sy, float sz, Rgba c) {
    Instance3D i{b.p[0], b.p[1], b.p[2], 0.0f, sx, sy, sz, pack(c)};
    i.qw = b.q[0], i.qx = b.q[1], i.qy = b.q[2], i.qz = b.q[3];
    return i;
}

Rgba brighter(Rgba c) {
    auto up = [](uint8_t v) { return uint8_t(v + (255 - v) / 2); };
    return {up(c.r), up(c.g), up(c.b), c.a};
}

/// The 12 edges of the box of half extents `h` placed by `q` at `p`.
void add_box_lines(Scene& s, const std::array<float, 3>& p, const std::array<float, 4>& q,
                   const std::array<float, 3>& h, Rgba c) {
    std::array<float, 3> corner[8];
    for (int i = 0; i < 8; ++i) {
        std::array<float, 3> local{i & 1 ? h[0] : -h[0], i & 2 ? h[1] : -h[1], i & 4 ? h[2] : -h[2]};
        std::array<float, 3> w = rotate(q, local);
        corner[i] = {p[0] + w[0], p[1] + w[1], p[2] + w[2]};
    }
    for (int i = 0; i < 8; ++i)
        for (int bit = 1; bit < 8; bit <<= 1)
            if (!(i & bit)) {
                s.lines.push_back({{corner[i][0], corner[i][1], corner[i][2]}, pack(c)});
                s.lines.push_back({{corner[i | bit][0], corner[i | bit][1], corner[i | bit][2]}, pack(c)});
            }
}

void add_segment(Scene& s, const Segment& g) {
    s.lines.push_back({{g.a[0], g.a[1], g.a[2]}, pack(g.color)});
    s.lines.push_back({{g.b[0], g.b[1], g.b[2]}, pack(g.color)});
}

/// An arrow from `a` to `b` with a two-stroke head in the vertical plane through it.
void add_arrow(Scene& s, const std::array<float, 3>& a, const std::array<float, 3>& b, Rgba c) {
    add_segment(s, {a, b, c});
    float d[3] = {b[0] - a[0], b[1] - a[1], b[2] - a[2]};
    float len = std::sqrt(d[0] * d[0] + d[1] * d[1] + d[2] * d[2]);
    if (!(len > 1e-6f)) return;
    for (float& x : d) x /= len;
    float side[3] = {-d[1], d[0], 0.0f}; // horizontal normal; vertical arrows get one in x
    float sl = std::sqrt(side[0] * side[0] + side[1] * side[1]);
    if (sl < 1e-3f) side[0] = 1.0f, side[1] = 0.0f, sl = 1.0f;
    float k = 0.25f * len;
    for (float sign : {-1.0f, 1.0f}) {
        std::array<float, 3> tip{b[0] - k * d[0] + sign * 0.5f * k * side[0] / sl,
                                 b[1] - k * d[1] + sign * 0.5f * k * side[1] / sl, b[2] - k * d[2]};
        add_segment(s, {b, tip, c});
    }
}

/// Half extents and bounding radius of a solid; false for solids drawn as nothing.
BodyRef body_ref(const BodyDraw& d, const Ctx& ctx, uint32_t row, Solid solid, const std::array<float, 3>& dims) {
    BodyRef b;
    b.archetype = d.archetype, b.row = row, b.solid = solid;
    b.p = read3(d.position, ctx, d.archetype, row);
    b.q = read_quat(d.orientation, ctx, d.archetype, row);
    switch (solid) {
    case Solid::kSphere: b.half = {dims[0], dims[0], dims[0]}; break;
    case Solid::kCapsule: b.half = {dims[0], dims[0], dims[0] + dims[1]}; break;
    case Solid::kBox: b.half = dims; break;
    default: break;
    }
    b.bound = std::sqrt(b.half[0] * b.half[0] + b.half[1] * b.half[1] + b.half[2] * b.half[2]);
    if (solid == Solid::kSphere) b.bound = dims[0];
    if (solid == Solid::kCapsule) b.bound = dims[0] + dims[1];
    return b;
}

/// Appends hull `index`'s triangles once per scene; returns where they are.
std::pair<uint32_t, uint32_t> hull_range(Scene& s, const BodyDraw& d, const Ctx& ctx, uint32_t index,
                                         std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>>& cache,
                                         float& bound, std::array<float, 3>& half) {
    for (const auto& [i, range] : cache)
        if (i == index) {
            bound = 0.0f, half = {0.0f, 0.0f, 0.0f};
            for (uint32_t v = range.first; v < range.first + range.second; ++v)
                for (int k = 0; k < 3; ++k) half[k] = std::fmax(half[k], std::fabs(s.hull_vertices[v].p[k]));
            bound = std::sqrt(half[0] * half[0] + half[1] * half[1] + half[2] * half[2]);
            return range;
        }
    HullMesh m = d.hull_mesh ? d.hull_mesh(ctx, index) : HullMesh{};
    uint32_t first = uint32_t(s.hull_vertices.size());
    half = {0.0f, 0.0f, 0.0f};
    for (size_t v = 0; v < m.corners.size(); ++v) {
        const auto& n = m.normals[v / 3 < m.normals.size() ? v / 3 : 0];
        s.hull_vertices.push_back({{m.corners[v][0], m.corners[v][1], m.corners[v][2]}, {n[0], n[1], n[2]}, 0.0f});
        for (int k = 0; k < 3; ++k) half[k] = std::fmax(half[k], std::fabs(m.corners[v][k]));
    }
    bound = std::sqrt(half[0] * half[0] + half[1] * half[1] + half[2] * half[2]);
    std::pair<uint32_t, uint32_t> range{first, uint32_t(s.hull_vertices.size()) - first};
    cache.push_back({index, range});
    return range;
}

void add_body(Scene& s, const BodyDraw& d, const Ctx& ctx, uint32_t row, bool selected,
              std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>>& hull_cache) {
    int32_t kind = int32_t(std::lround(read_field(d.kind, ctx, d.archetype, row)));
    Solid solid = Solid::kNone;
    for (const auto& [value, sd] : d.solids)
        if (value == kind) solid = sd;
    if (solid == Solid::kNone) return;
    std::array<float, 3> dims = read3(d.dims, ctx, d.archetype, row);
    BodyRef b = body_ref(d, ctx, row, solid, dims);
    Rgba c = body_color(d, ctx, row);
    if (selected) c = brighter(c);
    float extent = std::fmax(s.bounds[2] - s.bounds[0], s.bounds[3] - s.bounds[1]);
    switch (solid) {
    case Solid::kSphere:
        s.meshes[size_t(Mesh::kSphere)].push_back(placed(b, 2 * dims[0], 2 * dims[0], 2 * dims[0], c));
        break;
    case Solid::kCapsule: {
        Instance3D i = placed(b, 2 * dims[0], 2 * dims[0], 2 * dims[0], c);
        i.half_length = dims[1];
        s.meshes[size_t(Mesh::kCapsule)].push_back(i);
        break;
    }
    case Solid::kBox:
        s.meshes[size_t(Mesh::kCube)].push_back(placed(b, 2 * dims[0], 2 * dims[1], 2 * dims[2], c));
        break;
    case Solid::kPlane: {
        // A square 4x the bounds' extent, centred where the bounds' centre falls on the plane.
        std::array<float, 3> n = rotate(b.q, {0.0f, 0.0f, 1.0f});
        float cx = 0.5f * (s.bounds[0] + s.bounds[2]) - b.p[0], cy = 0.5f * (s.bounds[1] + s.bounds[3]) - b.p[1];
        float along = cx * n[0] + cy * n[1];
        b.p = {b.p[0] + cx - along * n[0], b.p[1] + cy - along * n[1], b.p[2] - along * n[2]};
        Instance3D i = placed(b, 4.0f * extent, 4.0f * extent, 1.0f, c);
        i.flags = kGridFlag;
        s.meshes[size_t(Mesh::kPlane)].push_back(i);
        b.half = {2.0f * extent, 2.0f * extent, 0.0f};
        b.bound = 0.0f; // not picked: it is everywhere behind the bodies
        break;
    }
    case Solid::kHull: {
        uint32_t index = uint32_t(std::lround(dims[0] < 0.0f ? 0.0f : dims[0]));
        auto [first, count] = hull_range(s, d, ctx, index, hull_cache, b.bound, b.half);
        if (!count) return; // the table has no such hull: nothing to draw or pick
        s.hulls.push_back({first, count, placed(b, 1.0f, 1.0f, 1.0f, c)});
        break;
    }
    default: break;
    }
    // Which instance draws it (the entity's-eye camera hides its own body).
    if (solid == Solid::kHull) {
        b.mesh = int32_t(Mesh::kCount), b.instance = uint32_t(s.hulls.size()) - 1;
    } else {
        Mesh m = solid == Solid::kSphere    ? Mesh::kSphere
                 : solid == Solid::kCapsule ? Mesh::kCapsule
                 : solid == Solid::kBox     ? Mesh::kCube
                                            : Mesh::kPlane;
        b.mesh = int32_t(m), b.instance = uint32_t(s.meshes[size_t(m)].size()) - 1;
    }
    s.bodies.push_back(b);
}

void add_bodies(Scene& s, const BodyDraw& d, const Ctx& ctx, const SceneOptions& o) {
    const ArchetypeTable& t = ctx.storage().tables[d.archetype];
    uint32_t end = min_of(t.high_water[ctx.world()], t.capacity);
    std::vector<std::pair<uint32_t, std::pair<uint32_t, uint32_t>>> hull_cache;
    const bool bounds = o.has("bounds"), velocities = o.has("velocities") && d.velocity.present();
    for (uint32_t row = 0; row < end; ++row) {
        if (!t.alive[ctx.slot(t, row)]) continue;
        size_t before = s.bodies.size();
        const bool selected = o.selected_archetype == int32_t(d.archetype) && o.selected_row == row;
        add_body(s, d, ctx, row, selected, hull_cache);
        if (s.bodies.size() == before) continue;
        const BodyRef& b = s.bodies.back();
        if (b.solid == Solid::kPlane) continue;
        if (selected) add_box_lines(s, b.p, b.q, b.half, {255, 230, 60, 255});
        if (bounds) { // the world-axis box the broadphase would test
            std::array<float, 3> h{};
            for (int k = 0; k < 3; ++k) {
                std::array<float, 3> e{};
                e[size_t(k)] = 1.0f;
                std::array<float, 3> r = rotate(b.q, e);
                for (int j = 0; j < 3; ++j) h[size_t(j)] += std::fabs(r[size_t(j)]) * b.half[size_t(k)];
            }
            add_box_lines(s, b.p, {1.0f, 0.0f, 0.0f, 0.0f}, h, {250, 250, 120, 255});
        }
        if (velocities) {
            std::array<float, 3> v = read3(d.velocity, ctx, d.archetype, row);
            const float k = 0.5f; // seconds of travel the arrow shows
            add_arrow(s, b.p, {b.p[0] + k * v[0], b.p[1] + k * v[1], b.p[2] + k * v[2]}, {80, 230, 250, 255});
        }
    }
}

} // namespace

std::array<float, 3> rotate(const std::array<float, 4>& q, const std::array<float, 3>& v) {
    // v + 2 u x (u x v + w v), u the vector part
    float w = q[0], ux = q[1], uy = q[2], uz = q[3];
    float tx = uy * v[2] - uz * v[1] + w * v[0], ty = uz * v[0] - ux * v[2] + w * v[1],
          tz = ux * v[1] - uy * v[0] + w * v[2];
    return {v[0] + 2.0f * (uy * tz - uz * ty), v[1] + 2.0f * (uz * tx - ux * tz), v[2] + 2.0f * (ux * ty - uy * tx)};
}

std::vector<std::string> overlay_names(const DrawSpec& draw) {
    std::vector<std::string> out;
    if (!draw.bodies.empty()) out.push_back("bounds");
    for (const BodyDraw& b : draw.bodies)
        if (b.velocity.present()) {
            out.push_back("velocities");
            break;
        }
    for (const OverlayDraw& o : draw.overlays) out.push_back(o.name);
    return out;
}

SceneOptions default_scene_options(const DrawSpec& draw) {
    SceneOptions o;
    for (const OverlayDraw& d : draw.overlays)
        if (d.on) o.overlays.push_back(d.name);
    return o;
}

float read_field(const Field& f, const Ctx& ctx, uint32_t arch, uint32_t row, uint32_t index, uint32_t stride) {
    if (!f.present()) return f.bias;
    if (f.component == Field::kRow) return float(row) * f.scale + f.bias;
    const Storage& s = ctx.storage();
    size_t at = size_t(f.offset) + size_t(index) * stride;
    const uint8_t* p = nullptr;
    if (f.component == Field::kConfig) {
        if (at + scalar_size(f.type) > s.config_bytes) return f.bias;
        p = s.config + at;
    } else {
        const ArchetypeTable& t = s.tables[arch];
        const uint8_t* col = t.columns[f.component];
        uint32_t bytes = s.row_bytes[f.component];
        if (!col || at + scalar_size(f.type) > bytes) return f.bias;
        p = col + size_t(ctx.slot(t, row)) * bytes + at;
    }
    return read_scalar(p, f.type, f.mask) * f.scale + f.bias;
}

void add_text(Scene& scene, const std::string& text, float cx, float cy, float height, Rgba color, float max_width) {
    std::vector<char> chars(text.begin(), text.end());
    chars.push_back('\0');
    struct Vertex {
        float x, y, z;
        unsigned char c[4];
    };
    std::vector<Vertex> v(chars.size() * 64 * 4);
    int quads = stb_easy_font_print(0.0f, 0.0f, chars.data(), nullptr, v.data(), int(v.size() * sizeof(Vertex)));
    // Glyphs span about 7 units from the top of caps to the baseline.
    float k = height / 7.0f;
    float w = float(stb_easy_font_width(chars.data())) * k;
    if (max_width > 0.0f && w > max_width) { // shrink long labels to fit their mark
        k *= max_width / w;
        height *= max_width / w;
        w = max_width;
    }
    float x0 = cx - 0.5f * w, y0 = cy - 0.5f * height;
    for (int q = 0; q < quads; ++q) {
        const Vertex* a = &v[size_t(q) * 4];
        float qx0 = a[0].x, qy0 = a[0].y, qx1 = a[2].x, qy1 = a[2].y;
        add_quad(scene, x0 + 0.5f * (qx0 + qx1) * k, y0 + 0.5f * (qy0 + qy1) * k, 0.5f * (qx1 - qx0) * k,
                 0.5f * (qy1 - qy0) * k, color, Prim::kSquare);
    }
}

StatusLines status_of(const DrawSpec& draw, const Ctx& ctx) {
    StatusLines out{{}, draw.background};
    for (const StatusDraw& d : draw.statuses) {
        std::string line = d.text ? d.text(ctx) : std::string();
        if (line.empty()) continue;
        out.lines.push_back(std::move(line));
        // Mixed in integers, rounded: the same colour on every front end.
        auto mix = [k = uint32_t(d.tint.a)](uint8_t a, uint8_t b) {
            return uint8_t((uint32_t(a) * (255u - k) + uint32_t(b) * k + 127u) / 255u);
        };
        Rgba& bg = out.background;
        bg = {mix(bg.r, d.tint.r), mix(bg.g, d.tint.g), mix(bg.b, d.tint.b), bg.a};
    }
    return out;
}

Scene build_scene(const DrawSpec& draw, const Ctx& ctx) { return build_scene(draw, ctx, default_scene_options(draw)); }

Scene build_scene(const DrawSpec& draw, const Ctx& ctx, const SceneOptions& options) {
    Scene s;
    s.view = draw.view;
    s.bounds = draw.bounds;
    StatusLines status = status_of(draw, ctx);
    s.background = status.background;
    s.status = std::move(status.lines);
    s.light = draw.light;
    for (const GridDraw& g : draw.grids) add_grid(s, g, ctx);
    for (const EntityDraw& e : draw.entities) add_entities(s, e, ctx);
    for (const BodyDraw& b : draw.bodies) add_bodies(s, b, ctx, options);
    std::vector<Segment> segments;
    for (const OverlayDraw& o : draw.overlays) {
        if (!o.segments || !options.has(o.name)) continue;
        segments.clear();
        o.segments(ctx, segments);
        for (const Segment& g : segments) add_segment(s, g);
    }
    // 3-D: the status lines as a heads-up display across the top of the frame
    // (2-D marks are framed by the bounds over the 3-D view), so recordings show them.
    const float w = draw.bounds[2] - draw.bounds[0], h = 0.045f * (draw.bounds[3] - draw.bounds[1]);
    for (size_t i = 0; i < s.status.size() && s.view == DrawSpec::View::k3D; ++i)
        add_text(s, s.status[i], draw.bounds[0] + 0.5f * w, draw.bounds[1] + (float(i) + 0.8f) * h, 0.7f * h,
                 {255, 235, 120, 255}, 0.95f * w);
    return s;
}

namespace {

void check_field(const EnvSpec& spec, const Field& f, uint32_t arch, uint32_t extent, const std::string& what) {
    if (!f.present() || f.component == Field::kRow) return;
    uint32_t bytes = 0;
    if (f.component == Field::kConfig) {
        bytes = uint32_t(spec.config_bytes().size());
    } else {
        const auto& comps = spec.component_specs();
        const auto& archs = spec.archetype_specs();
        if (f.component < 0 || size_t(f.component) >= comps.size())
            throw Error("draw: " + what + " names component " + std::to_string(f.component) + ", expected < " +
                        std::to_string(comps.size()));
        const auto& have = archs.at(arch).components;
        bool found = false;
        for (uint32_t c : have) found = found || c == uint32_t(f.component);
        if (!found)
            throw Error("draw: " + what + " reads component " + comps[size_t(f.component)].name + ", which archetype " +
                        archs[arch].name + " lacks");
        bytes = comps[size_t(f.component)].row_bytes;
    }
    if (f.offset + extent > bytes)
        throw Error("draw: " + what + " reads bytes [" + std::to_string(f.offset) + ", " +
                    std::to_string(f.offset + extent) + ") of a " + std::to_string(bytes) + "-byte row");
}

} // namespace

void validate_draw(const EnvSpec& spec) {
    const DrawSpec& d = spec.draw;
    size_t n_arch = spec.archetype_specs().size();
    for (size_t i = 0; i < d.entities.size(); ++i) {
        const EntityDraw& e = d.entities[i];
        std::string what = "entities[" + std::to_string(i) + "]";
        if (e.archetype >= n_arch)
            throw Error("draw: " + what + ".archetype is " + std::to_string(e.archetype) + ", expected < " +
                        std::to_string(n_arch));
        for (const Field* f :
             {&e.x, &e.y, &e.z, &e.cell, &e.style_by, &e.heading, &e.bar, &e.size_x, &e.size_y, &e.size_z})
            check_field(spec, *f, e.archetype, scalar_size(f->type), what);
    }
    for (size_t i = 0; i < d.bodies.size(); ++i) {
        const BodyDraw& b = d.bodies[i];
        std::string what = "bodies[" + std::to_string(i) + "]";
        if (b.archetype >= n_arch)
            throw Error("draw: " + what + ".archetype is " + std::to_string(b.archetype) + ", expected < " +
                        std::to_string(n_arch));
        if (!b.position.present()) throw Error("draw: " + what + ".position is absent; expected a field of 3 floats");
        check_field(spec, b.position, b.archetype, 12, what + ".position");
        check_field(spec, b.orientation, b.archetype, 16, what + ".orientation");
        check_field(spec, b.kind, b.archetype, scalar_size(b.kind.type), what + ".kind");
        check_field(spec, b.dims, b.archetype, 12, what + ".dims");
        check_field(spec, b.velocity, b.archetype, 12, what + ".velocity");
        check_field(spec, b.rgba, b.archetype, 4, what + ".rgba");
        for (size_t k = 0; k < b.color_rules.size(); ++k)
            check_field(spec, b.color_rules[k].by, b.archetype, scalar_size(b.color_rules[k].by.type),
                        what + ".color_rules[" + std::to_string(k) + "]");
        for (const auto& [value, solid] : b.solids)
            if (solid == Solid::kHull && !b.hull_mesh)
                throw Error("draw: " + what + " maps kind " + std::to_string(value) +
                            " to Solid::kHull but has no hull_mesh to read hulls with");
    }
    for (size_t i = 0; i < d.grids.size(); ++i) {
        const GridDraw& g = d.grids[i];
        std::string what = "grids[" + std::to_string(i) + "]";
        if (g.cells.component != Field::kConfig && g.archetype >= n_arch)
            throw Error("draw: " + what + ".archetype is " + std::to_string(g.archetype) + ", expected < " +
                        std::to_string(n_arch));
        uint32_t n = g.count ? g.count : g.width * g.height;
        auto extent = [&](const Field& f, uint32_t stride) {
            uint32_t size = scalar_size(f.type);
            return (n - 1) * (stride ? stride : size) + size;
        };
        if (g.count && !g.at.present()) throw Error("draw: " + what + " is sparse (count > 0) but has no `at` field");
        if (n == 0) continue;
        check_field(spec, g.cells, g.archetype, extent(g.cells, g.stride), what + ".cells");
        check_field(spec, g.bar, g.archetype, extent(g.bar, g.bar_stride), what + ".bar");
        check_field(spec, g.at, g.archetype, extent(g.at, g.at_stride), what + ".at");
    }
    for (size_t i = 0; i < d.key_parts.size(); ++i) {
        const KeyPart& k = d.key_parts[i];
        std::string what = "draw: key_parts[" + std::to_string(i) + "]";
        if (k.key == Key::kNoop || uint32_t(k.key) >= kKeyCount)
            throw Error(what + ".key is " + std::to_string(int(k.key)) +
                        "; expected a key from Key::kUp to Key::kSecond");
        if (k.part >= d.key_rest.size())
            throw Error(what + ".part is " + std::to_string(k.part) + "; expected < " +
                        std::to_string(d.key_rest.size()) + " (key_rest's length, the action row's)");
    }
}

} // namespace orrery::render
