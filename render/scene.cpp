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

} // namespace

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

Scene build_scene(const DrawSpec& draw, const Ctx& ctx) {
    Scene s;
    s.view = draw.view;
    s.bounds = draw.bounds;
    s.background = draw.background;
    for (const GridDraw& g : draw.grids) add_grid(s, g, ctx);
    for (const EntityDraw& e : draw.entities) add_entities(s, e, ctx);
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
}

} // namespace orrery::render
