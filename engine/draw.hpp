#pragma once
// What an env draws, declared as data in its registration table (EnvSpec::draw):
// which fields place an archetype's entities, how a value picks a shape and
// colour, which per-world grids form the background, and which keys map to
// which actions. The viewer and recorder in render/ read only this table, so no
// env needs viewer code of its own. Host-only (std containers).

#include <array>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "ecs/types.hpp"

namespace orrery {
class Ctx;
}

namespace orrery {

/// What one mark looks like. 2-D shapes are drawn as flat instanced quads;
/// kCube and kSphere are meshes of the 3-D view.
enum class Shape : uint8_t { kNone, kSquare, kCircle, kTriangle, kRing, kCube, kSphere };

/// An 8-bit sRGB colour.
struct Rgba {
    uint8_t r = 0, g = 0, b = 0, a = 255;
};

/// Scalar types a drawn field may have (derived from the member's C++ type).
enum class ScalarType : uint8_t { kU8, kI8, kU16, kI16, kI32, kU32, kF32 };

template <class E> constexpr ScalarType scalar_type_of() {
    if constexpr (std::is_same_v<E, uint8_t> || std::is_same_v<E, bool> || std::is_same_v<E, char>)
        return ScalarType::kU8;
    else if constexpr (std::is_same_v<E, int8_t>)
        return ScalarType::kI8;
    else if constexpr (std::is_same_v<E, uint16_t>)
        return ScalarType::kU16;
    else if constexpr (std::is_same_v<E, int16_t>)
        return ScalarType::kI16;
    else if constexpr (std::is_same_v<E, int32_t> || std::is_enum_v<E>)
        return ScalarType::kI32;
    else if constexpr (std::is_same_v<E, uint32_t>)
        return ScalarType::kU32;
    else if constexpr (std::is_same_v<E, float>)
        return ScalarType::kF32;
    else
        static_assert(sizeof(E) == 0, "drawn fields must be 8/16/32-bit integers or float");
}

/// A number read from an entity's row (or from the env config): the scalar at
/// `offset` bytes into component `component`, then `value * scale + bias`.
/// An absent field (component == kAbsent) reads as `bias`.
struct Field {
    static constexpr int32_t kAbsent = -1;
    static constexpr int32_t kConfig = -2; ///< read from the env's config blob
    static constexpr int32_t kRow = -3;    ///< the entity's row (its agent index), not stored data
    int32_t component = kAbsent;
    uint32_t offset = 0;
    ScalarType type = ScalarType::kF32;
    float scale = 1.0f;
    float bias = 0.0f;
    uint32_t mask = 0xFFFFFFFFu; ///< integer fields: bits kept before scaling (packed item bytes)
    bool present() const { return component != kAbsent; }
    /// This field keeping only the bits of `m`.
    Field masked(uint32_t m) const {
        Field f = *this;
        f.mask = m;
        return f;
    }
};

namespace detail {
template <class C, class M> uint32_t member_offset(M C::*member) {
    alignas(C) unsigned char storage[sizeof(C)] = {};
    const C* object = reinterpret_cast<const C*>(storage);
    return uint32_t(reinterpret_cast<const unsigned char*>(&(object->*member)) - storage);
}
} // namespace detail

/// Field `member` of component C (an array member means its first element):
/// `field(&Position::x)`, `field(&Cell::x, 1.0f, 0.5f)` to centre on a grid cell.
template <class C, class M> Field field(M C::*member, float scale = 1.0f, float bias = 0.0f) {
    using E = std::remove_cv_t<std::remove_all_extents_t<M>>;
    return Field{int32_t(component_id<C>), detail::member_offset(member), scalar_type_of<E>(), scale, bias};
}

/// The first float of struct member `member` of component C (a vector or
/// quaternion of floats): `floats(&phys::Pose::p)` reads p.x, then p.y, p.z.
template <class C, class M> Field floats(M C::*member) {
    static_assert(sizeof(M) % sizeof(float) == 0, "floats() reads members made of floats");
    return Field{int32_t(component_id<C>), detail::member_offset(member), ScalarType::kF32, 1.0f, 0.0f};
}

/// Field `member` of the env's config struct (static per simulator, e.g. a layout's terrain).
template <class C, class M> Field config_field(M C::*member, float scale = 1.0f, float bias = 0.0f) {
    using E = std::remove_cv_t<std::remove_all_extents_t<M>>;
    return Field{Field::kConfig, detail::member_offset(member), scalar_type_of<E>(), scale, bias};
}

/// The elements of array component C (ArrayOf<E>), starting at element `first`.
template <class C> Field elements(uint32_t first = 0, float scale = 1.0f, float bias = 0.0f) {
    using E = typename C::Element;
    return Field{int32_t(component_id<C>), first * uint32_t(sizeof(E)), scalar_type_of<E>(), scale, bias};
}

/// The entity's row in its archetype (agent index): colours per agent.
inline Field row_index() { return Field{Field::kRow, 0, ScalarType::kU32, 1.0f, 0.0f}; }

/// A constant (an absent field reads as its bias).
inline Field constant(float v) { return Field{Field::kAbsent, 0, ScalarType::kF32, 1.0f, v}; }

/// How one value looks: shape, colour, size in world units, and a short label
/// (`#` in a label is replaced by the entity's row, i.e. its agent index).
struct Style {
    Shape shape = Shape::kNone;
    Rgba color;
    float size = 1.0f;
    std::string label;
};

/// Styles picked by an integer value; values without a style draw nothing.
struct Palette {
    std::vector<std::pair<int32_t, Style>> entries;
    /// Adds (or replaces) the style of `value`; returns *this for chaining.
    Palette& set(int32_t value, Style s) {
        for (auto& e : entries) {
            if (e.first != value) continue;
            e.second = std::move(s);
            return *this;
        }
        entries.emplace_back(value, std::move(s));
        return *this;
    }
    /// The style of `value`, or nullptr.
    const Style* find(int32_t value) const {
        for (const auto& e : entries)
            if (e.first == value) return &e.second;
        return nullptr;
    }
};

/// One mark per live entity of an archetype. Several marks may draw the same
/// archetype (a chef's body, then the item it holds, offset and smaller).
struct EntityDraw {
    uint32_t archetype = 0;
    Field x, y, z; ///< position in world units (2-D: y grows downwards)
    /// Alternatively a grid cell index (y * cell_width + x): the mark sits at the
    /// cell's centre, (x + 0.5, y + 0.5) * cell_size. Used when present.
    Field cell;
    uint32_t cell_width = 0;
    float cell_size = 1.0f;
    Field style_by; ///< integer that picks a style; absent: the style of value 0
    Palette styles;
    float dx = 0.0f, dy = 0.0f; ///< offset of the mark from the position
    /// Orientation marker: an integer index into `headings` (unit vectors), or
    /// radians when `headings` is empty. Absent: no marker.
    Field heading;
    std::vector<std::array<float, 2>> headings;
    Field bar; ///< progress in [0, 1] drawn as a bar under the mark; absent or <= 0: none
    /// Per-axis extents in world units (boxes of different sizes); absent: the style's size.
    Field size_x, size_y, size_z;

    /// Builder setters, each returning *this.
    EntityDraw& at(Field fx, Field fy, Field fz = {}) {
        x = fx;
        y = fy;
        z = fz;
        return *this;
    }
    EntityDraw& at_cell(Field index, uint32_t width, float size = 1.0f) {
        cell = index;
        cell_width = width;
        cell_size = size;
        return *this;
    }
    EntityDraw& style(Style s) {
        styles.set(0, std::move(s));
        return *this;
    }
    EntityDraw& style_of(Field by, Palette p) {
        style_by = by;
        styles = std::move(p);
        return *this;
    }
    EntityDraw& offset(float ox, float oy) {
        dx = ox;
        dy = oy;
        return *this;
    }
    EntityDraw& facing(Field h, std::vector<std::array<float, 2>> dirs = {}) {
        heading = h;
        headings = std::move(dirs);
        return *this;
    }
    EntityDraw& progress(Field b) {
        bar = b;
        return *this;
    }
    EntityDraw& sized(Field sx, Field sy, Field sz = {}) {
        size_x = sx;
        size_y = sy;
        size_z = sz;
        return *this;
    }
};

/// Integer values on a width x height grid, row-major, each drawn with the style
/// of its value centred in its cell, whose top-left corner is
/// (x0 + col, y0 + row) * cell_size; a style's size is a fraction of the cell.
/// Dense (value k is cell k: terrain) or sparse (value k sits on cell at[k]:
/// items of the counters, pots, whose cells a table lists).
struct GridDraw {
    uint32_t archetype = 0; ///< singleton archetype holding the values (unused for config fields)
    Field cells;            ///< value 0; field(), elements<>() or config_field() of an array
    uint32_t width = 0, height = 0;
    uint32_t stride = 0; ///< bytes from one value to the next; 0: the scalar's size
    float x0 = 0.0f, y0 = 0.0f, cell_size = 1.0f;
    Palette styles;
    Field bar; ///< progress of value k, in [0, 1] after scaling; <= 0: no bar
    uint32_t bar_stride = 0;
    uint32_t count = 0; ///< sparse: number of values; 0: dense (width * height)
    Field at;           ///< sparse: cell index of value k
    uint32_t at_stride = 0;

    /// Makes the grid sparse: `n` values, value k on cell `cell_of` + k.
    GridDraw& on_cells(Field cell_of, uint32_t n) {
        at = cell_of;
        count = n;
        return *this;
    }
    GridDraw& style_of(Palette p) {
        styles = std::move(p);
        return *this;
    }
    GridDraw& progress(Field b) {
        bar = b;
        return *this;
    }
};

/// The solids a 3-D body is drawn as (BodyDraw). A body's dims are read as three
/// floats: sphere radius x; capsule radius x and half length y of its segment
/// along the body's z; box half extents; plane: none (it lies through the
/// body's origin with normal body +z, drawn as a floor grid); hull: dims.x is
/// the hull's index in BodyDraw::hull_mesh's table.
enum class Solid : uint8_t { kNone, kSphere, kCapsule, kBox, kPlane, kHull };

/// Body-frame triangles of a convex hull, counter-clockwise seen from outside:
/// three corners per triangle, one outward normal per triangle.
struct HullMesh {
    std::vector<std::array<float, 3>> corners;
    std::vector<std::array<float, 3>> normals;
};

/// A line segment drawn over the 3-D view (overlays: contacts, rays, bounds), world units.
struct Segment {
    std::array<float, 3> a, b;
    Rgba color;
};

/// One colour rule of a body: the integer `by` reads picks a colour from
/// `colors`; a value without one falls through to the next rule.
struct ColorRule {
    Field by;
    std::vector<std::pair<int32_t, Rgba>> colors;
};

/// One 3-D body per live entity of an archetype, from a pose (position and
/// orientation quaternion) and a shape (kind and dims), lit and shadowed.
/// Physics envs declare it with physics/draw.hpp's draw_physics_bodies<A>().
struct BodyDraw {
    uint32_t archetype = 0;
    Field position;                                ///< first of three consecutive floats x, y, z (z up)
    Field orientation;                             ///< first of four consecutive floats w, x, y, z; absent: identity
    Field kind;                                    ///< integer picking the solid through `solids`
    Field dims;                                    ///< first of three consecutive floats (see Solid)
    std::vector<std::pair<int32_t, Solid>> solids; ///< kind value -> solid; values without one draw nothing
    std::vector<ColorRule> color_rules;            ///< tried in order; none matching: `color`
    Field rgba;                                    ///< packed r | g << 8 | b << 16 | a << 24 (u32); wins when present
    Rgba color{200, 200, 200, 255};
    Field velocity; ///< first of three consecutive floats; present: the velocity overlay draws it
    /// Hull `index`'s triangles from the world's assets (empty when it has none).
    std::function<HullMesh(const Ctx& ctx, uint32_t index)> hull_mesh;

    BodyDraw& pose(Field p, Field q = {}) {
        position = p;
        orientation = q;
        return *this;
    }
    BodyDraw& shape(Field k, Field d, std::vector<std::pair<int32_t, Solid>> map) {
        kind = k;
        dims = d;
        solids = std::move(map);
        return *this;
    }
    /// Adds a colour rule (a team field, a body type, a shape kind).
    BodyDraw& color_by(Field by, std::vector<std::pair<int32_t, Rgba>> colors) {
        color_rules.push_back({by, std::move(colors)});
        return *this;
    }
    BodyDraw& color_from(Field packed) {
        rgba = packed;
        return *this;
    }
    BodyDraw& moving(Field v) {
        velocity = v;
        return *this;
    }
};

/// A debug overlay the viewer toggles by name: segments computed from one world
/// (contact normals, lidar rays to their hit points, vision cones).
struct OverlayDraw {
    std::string name;
    bool on = false; ///< shown before the user toggles it
    std::function<void(const Ctx& ctx, std::vector<Segment>& out)> segments;
};

/// A line the view shows while a state of the world lasts (hide-and-seek's
/// preparation phase): `text(ctx)` returns it, or "" when the state does not
/// hold. While it does, the background is mixed with `tint` by tint.a / 255, so
/// recorded frames show it too.
struct StatusDraw {
    std::function<std::string(const Ctx& ctx)> text;
    Rgba tint{0, 0, 0, 0};
};

/// Names of a component's elements for the viewer's inspector ("px py pz qw
/// qx qy qz" for a pose), read in order; `types` empty: the component's own
/// element type for all.
struct ElementNames {
    uint32_t component = 0;
    std::vector<std::string> names;
    std::vector<ScalarType> types;
};

/// Keys the viewer maps to action values of the controlled agent: arrows or
/// WASD, space (E too where the env turns no agent), Q and E to turn, L.
enum class Key : uint8_t { kNoop, kUp, kDown, kLeft, kRight, kInteract, kTurnLeft, kTurnRight, kSecond };
inline constexpr uint32_t kKeyCount = 9;

/// A held key's share of a multi-part action: while `key` is down, element
/// `part` of the controlled agent's action row is `value`.
struct KeyPart {
    Key key = Key::kNoop;
    uint32_t part = 0;
    int32_t value = 0;
};

/// Everything the viewer needs to draw and play an env.
struct DrawSpec {
    enum class View : uint8_t { k2D, k3D };
    View view = View::k2D;
    /// World rectangle (x0, y0, x1, y1) the 2-D camera frames; in 3-D its centre
    /// is the orbit camera's target on the ground plane (z up).
    std::array<float, 4> bounds = {0.0f, 0.0f, 1.0f, 1.0f};
    Rgba background{24, 24, 30, 255};
    std::vector<GridDraw> grids;      ///< drawn first, in order
    std::vector<EntityDraw> entities; ///< then these, in order
    std::vector<BodyDraw> bodies;     ///< 3-D bodies (View::k3D)
    std::vector<OverlayDraw> overlays;
    std::vector<StatusDraw> statuses; ///< shown in the panel while they hold, in order
    /// Direction towards the sun of the 3-D view (need not be unit length).
    std::array<float, 3> light = {0.5f, 0.3f, 0.6f};
    /// Names of components' elements, shown by the viewer's inspector.
    std::vector<ElementNames> element_names;
    /// Tensors the viewer shows for the selected agent, and the one keys write.
    std::string obs = "obs", reward = "reward", action = "action";
    std::vector<std::pair<Key, int32_t>> keys; ///< e.g. {Key::kUp, 1}: the action value a key sends
    /// Multi-part actions (a row of several values each step, as hide-and-seek's
    /// move x, move y, turn, grab, lock), played while keys are held: each step
    /// the row is `key_rest` with every held key's part set (later parts in
    /// `key_parts` win). Empty: `keys`, one value a press.
    std::vector<int32_t> key_rest;
    std::vector<KeyPart> key_parts;
    std::vector<std::string> key_part_names; ///< the parts' names for the viewer's keys line

    /// The action row for the keys held (bit k of `held`: Key k is down).
    std::vector<int32_t> key_row(uint32_t held) const {
        std::vector<int32_t> row = key_rest;
        for (const KeyPart& k : key_parts)
            if (((held >> uint32_t(k.key)) & 1u) && k.part < row.size()) row[k.part] = k.value;
        return row;
    }
    /// Whether a key of `key_parts` is `key`.
    bool holds_key(Key key) const {
        for (const KeyPart& k : key_parts)
            if (k.key == key) return true;
        return false;
    }

    /// Starts a mark for archetype A: `spec.draw.entity<Agent>().at(...).style(...)`.
    template <class A> EntityDraw& entity() {
        entities.emplace_back();
        entities.back().archetype = archetype_id<A>;
        return entities.back();
    }
    /// Adds a background grid read from singleton archetype A (or from the config).
    template <class A> GridDraw& grid(Field cells, uint32_t width, uint32_t height) {
        grids.emplace_back();
        GridDraw& g = grids.back();
        g.archetype = archetype_id<A>;
        g.cells = cells;
        g.width = width;
        g.height = height;
        return g;
    }
    /// Starts a 3-D body draw for archetype A.
    template <class A> BodyDraw& body() {
        bodies.emplace_back();
        bodies.back().archetype = archetype_id<A>;
        return bodies.back();
    }
    /// Adds an overlay named `name`.
    OverlayDraw& overlay(std::string name, std::function<void(const Ctx&, std::vector<Segment>&)> fn, bool on = false) {
        overlays.push_back({std::move(name), on, std::move(fn)});
        return overlays.back();
    }
    /// Adds a status line (`text` returns "" while it does not hold) and the
    /// background tint that marks it.
    StatusDraw& status(std::function<std::string(const Ctx&)> text, Rgba tint = {0, 0, 0, 0}) {
        statuses.push_back({std::move(text), tint});
        return statuses.back();
    }
    /// Names the elements of component C for the inspector; `types` gives each
    /// element's scalar type where they differ (a shape's u32 kind, then floats).
    template <class C> void name_elements(std::vector<std::string> names, std::vector<ScalarType> types = {}) {
        element_names.push_back({component_id<C>, std::move(names), std::move(types)});
    }
    /// Adds a background grid read from the env's config (static terrain).
    GridDraw& config_grid(Field cells, uint32_t width, uint32_t height) {
        grids.emplace_back();
        GridDraw& g = grids.back();
        g.cells = cells;
        g.width = width;
        g.height = height;
        return g;
    }
    /// True when the env declared nothing to draw.
    bool empty() const { return grids.empty() && entities.empty() && bodies.empty(); }
};

} // namespace orrery
