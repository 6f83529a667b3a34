#pragma once
// Queries against a world's rigid bodies: ray casts (first hit, distance,
// entity, normal) for lidar and line of sight, and closest-distance queries
// for grabbing. Pure functions of one shape, then loops over a world's bodies
// read straight from their components (so they see the poses of now, also at
// reset, before the solver has run). Device-safe (g++ and NVRTC), no libm, a
// fixed body order: a query's answer depends only on its input and the
// world, so lanes may share a batch of queries in any split (for_lane_share).

#include "physics/solver.hpp"

namespace phys {

/// A ray: origin, unit direction, and the farthest distance it looks (m).
struct Ray {
    Vec3 origin, dir;
    float max_distance;
};

/// Where a ray meets one shape: distance along the ray and the world-frame
/// outward surface normal there. `hit` is false when it misses within reach.
struct ShapeHit {
    bool hit;
    float distance;
    Vec3 normal;
};

/// A point on a shape's surface nearest to a query point, and the signed
/// distance from the query point to the surface (negative inside, zero on it).
struct SurfacePoint {
    Vec3 point;
    float distance;
};

namespace detail {
/// Ray parameters inside a solid: [enter, exit], empty when enter > exit.
struct Span {
    float enter, exit;
};
inline constexpr float kFar = 3.4e38f;
ORRERY_HD inline Span empty_span() { return {kFar, -kFar}; }
ORRERY_HD inline bool is_empty(Span s) { return s.enter > s.exit; }
/// The smallest interval holding both (exact for pieces of one convex solid, whose spans overlap).
ORRERY_HD inline Span join(Span a, Span b) {
    if (is_empty(a)) return b;
    if (is_empty(b)) return a;
    return {min_f(a.enter, b.enter), max_f(a.exit, b.exit)};
}

/// Ball of radius r at c. The discriminant is r^2 - |perpendicular offset|^2,
/// not b^2 - c, which loses the small difference of two large numbers when
/// the ray starts metres away (Haines et al., Ray Tracing Gems, ch. 7).
ORRERY_HD inline Span ball_span(Vec3 o, Vec3 d, Vec3 c, float r) {
    Vec3 oc = o - c;
    float tc = -dot(oc, d);
    Vec3 perp = oc + d * tc;
    float disc = r * r - dot(perp, perp);
    if (disc < 0.0f) return empty_span();
    float w = sqrt_of(disc);
    return {tc - w, tc + w};
}

/// Slab |o + t d| <= e along one axis; `axis_hit` tells which slab bounds the span.
struct SlabSpan {
    Span span;
    uint32_t enter_axis, exit_axis;
};

/// Axis-aligned box of half extents e at the origin (the box's own frame).
/// The span only narrows axis by axis, so once it is empty, behind the ray
/// (exit < 0) or starts past `reach`, the remaining axes cannot give a hit
/// within reach and it returns empty at once: surface_param reads no hit
/// either way (ray_shape's answer is the same bit for bit).
ORRERY_HD inline SlabSpan box_span(Vec3 o, Vec3 d, Vec3 e, float reach = kFar) {
    SlabSpan s{{-kFar, kFar}, 3, 3};
    for (uint32_t i = 0; i < 3; ++i) {
        float oi = axis_of(o, i), di = axis_of(d, i), ei = axis_of(e, i);
        if (di == 0.0f) {
            if (oi < -ei || oi > ei) return {empty_span(), 3, 3};
            continue;
        }
        float t1 = (-ei - oi) / di, t2 = (ei - oi) / di;
        if (t1 > t2) {
            float t = t1;
            t1 = t2, t2 = t;
        }
        if (t1 > s.span.enter) s.span.enter = t1, s.enter_axis = i;
        if (t2 < s.span.exit) s.span.exit = t2, s.exit_axis = i;
        if (s.span.enter > s.span.exit || s.span.exit < 0.0f || s.span.enter > reach) return {empty_span(), 3, 3};
    }
    return s;
}

/// One slab of box_surface_param: box_span's axis step with its early exits
/// kept in `dead` (& and | rather than && and ||: no branch).
ORRERY_HD inline void slab_step(float o, float d, float e, float& enter, float& exit, uint32_t& dead) {
    const float t1 = (-e - o) / d, t2 = (e - o) / d;
    const bool swap = t1 > t2;
    const float lo = swap ? t2 : t1, hi = swap ? t1 : t2;
    const bool flat = d == 0.0f; // box_span's parallel slab: o inside it or no hit
    dead |= uint32_t(flat & ((o < -e) | (o > e)));
    enter = ((!flat) & (lo > enter)) ? lo : enter;
    exit = ((!flat) & (hi < exit)) ? hi : exit;
    dead |= uint32_t((enter > exit) | (exit < 0.0f) | (enter > kFar));
}

/// surface_param(box_span(o, d, e)) with no branch: every axis computed and
/// the early exits kept as a flag, the same float operations in the same
/// order, so the same bits (physics_query_test checks), for loops over many
/// rays that the compiler runs several to a vector instruction (hide-and-seek's
/// CPU lidar, through physics/ray_batch.hpp's BoxRays). < 0: no surface ahead.
/// Reach r is the caller's: box_span(o, d, e, r)'s early exit drops only spans
/// entered past r, so reading a value > r as a miss gives ray_shape's answer.
ORRERY_HD inline float box_surface_param(float ox, float oy, float oz, float dx, float dy, float dz, float ex, float ey,
                                         float ez) {
    float enter = -kFar, exit = kFar;
    uint32_t dead = 0;
    slab_step(ox, dx, ex, enter, exit, dead);
    slab_step(oy, dy, ey, enter, exit, dead);
    slab_step(oz, dz, ez, enter, exit, dead);
    return dead ? -1.0f : (enter >= 0.0f ? enter : exit);
}

/// Whether q is exactly the identity (a body in the world's axes: the walls).
/// unrotate(q, v) is then v but for the sign of a zero component, which
/// box_span never reads (a zero direction component is a flat slab, and
/// -e - 0 is -e - -0), so a box's ray test may take the world-frame ray as it
/// is: the same bits (the CPU's ray tests do; physics_query_test checks).
ORRERY_HD inline bool unturned(Quat q) { return q.w == 1.0f && q.x == 0.0f && q.y == 0.0f && q.z == 0.0f; }
/// v in the frame of a box turned by q, as its ray test reads it:
/// unrotate(q, v), or v as it is when q is unturned (the same distance bits),
/// on both backends (on an H100 the GPU's rays stepped no faster or slower
/// for the short way: docs/perf-notes.md row 107).
ORRERY_HD inline Vec3 into_box_frame(Quat q, Vec3 v) {
    if (unturned(q)) return v;
    return unrotate(q, v);
}

/// Capsule of radius r around the segment z in [-h, h] (its own frame): the
/// cylinder's span clipped to the segment's slab, joined with both end balls.
ORRERY_HD inline Span capsule_span(Vec3 o, Vec3 d, float r, float h) {
    Span cyl{-kFar, kFar};
    float a = d.x * d.x + d.y * d.y;
    if (a < 1e-12f) { // along the axis: inside the infinite cylinder or never
        if (o.x * o.x + o.y * o.y > r * r) cyl = empty_span();
    } else {
        float tc = -(o.x * d.x + o.y * d.y) / a;
        float px = o.x + d.x * tc, py = o.y + d.y * tc;
        float disc = r * r - (px * px + py * py);
        if (disc < 0.0f) {
            cyl = empty_span();
        } else {
            float w = sqrt_of(disc / a);
            cyl = {tc - w, tc + w};
        }
    }
    if (!is_empty(cyl)) {
        if (d.z == 0.0f) {
            if (o.z < -h || o.z > h) cyl = empty_span();
        } else {
            float t1 = (-h - o.z) / d.z, t2 = (h - o.z) / d.z;
            cyl = {max_f(cyl.enter, min_f(t1, t2)), min_f(cyl.exit, max_f(t1, t2))};
        }
    }
    Span caps = join(ball_span(o, d, Vec3{0.0f, 0.0f, -h}, r), ball_span(o, d, Vec3{0.0f, 0.0f, h}, r));
    return join(is_empty(cyl) ? empty_span() : cyl, caps);
}

/// Where a ray that spans [enter, exit] of a solid is first on its surface, as
/// MuJoCo's mj_ray: the entry, or the exit when it starts inside; < 0: none.
ORRERY_HD inline float surface_param(Span s) {
    if (is_empty(s) || s.exit < 0.0f) return -1.0f;
    return s.enter >= 0.0f ? s.enter : s.exit;
}
} // namespace detail

/// Whether the queries below know a shape kind (every kind today; a hull the
/// table lacks is never hit and never nearest). Kinds they do not know are
/// never hit and never nearest: query_unhandled_kind() is that path.
ORRERY_HD inline bool query_handles(ShapeKind k) {
    return k == ShapeKind::kSphere || k == ShapeKind::kCapsule || k == ShapeKind::kBox || k == ShapeKind::kPlane ||
           k == ShapeKind::kHull;
}
/// The answer for a shape kind the queries do not handle: no hit.
ORRERY_HD inline ShapeHit query_unhandled_kind() { return {false, 0.0f, {0.0f, 0.0f, 0.0f}}; }

namespace detail {
/// ray_shape, and with kNormal false ray_distance: the same formulas in the
/// same order, so the distance is the same bits either way; without the
/// normal, its rotation and normalisation are left out (the hit's n is zero).
/// `local_origin`, when given, is unrotate(s.q, o - s.x) made by the caller
/// (the same bits), for a caller casting many rays from one point at s.
/// `local_dir`, likewise, unrotate(s.q, d), for a caller casting one
/// direction at s from many points.
template <bool kNormal>
ORRERY_HD inline ShapeHit ray_shape_impl(const Placed& s, Vec3 o, Vec3 d, float max_distance, const HullSet& hulls,
                                         const Vec3* local_origin = nullptr, const Vec3* local_dir = nullptr) {
    ShapeHit miss{false, 0.0f, {0.0f, 0.0f, 0.0f}};
    switch (s.shape.kind) {
    case ShapeKind::kSphere: {
        float t = surface_param(ball_span(o, d, s.x, s.shape.dims.x));
        if (t < 0.0f || t > max_distance) return miss;
        if constexpr (!kNormal) return {true, t, {0.0f, 0.0f, 0.0f}};
        return {true, t, normalize_or((o + d * t) - s.x, -d)};
    }
    case ShapeKind::kCapsule: {
        Vec3 lo = local_origin ? *local_origin : unrotate(s.q, o - s.x), ld = local_dir ? *local_dir : unrotate(s.q, d);
        float h = s.shape.dims.y;
        float t = surface_param(capsule_span(lo, ld, s.shape.dims.x, h));
        if (t < 0.0f || t > max_distance) return miss;
        if constexpr (!kNormal) return {true, t, {0.0f, 0.0f, 0.0f}};
        Vec3 p = lo + ld * t;
        Vec3 axis{0.0f, 0.0f, clamp_f(p.z, -h, h)};
        return {true, t, rotate(s.q, normalize_or(p - axis, -ld))};
    }
    case ShapeKind::kBox: {
        Vec3 lo = local_origin ? *local_origin : into_box_frame(s.q, o - s.x);
        Vec3 ld = local_dir ? *local_dir : into_box_frame(s.q, d);
        SlabSpan sl = box_span(lo, ld, s.shape.dims, max_distance);
        float t = surface_param(sl.span);
        if (t < 0.0f || t > max_distance) return miss;
        if constexpr (!kNormal) return {true, t, {0.0f, 0.0f, 0.0f}};
        bool entering = sl.span.enter >= 0.0f;
        uint32_t k = entering ? sl.enter_axis : sl.exit_axis;
        if (k > 2) return {true, t, -d}; // a zero direction: no slab bounds the span
        // Entering through a face, its normal faces the ray; leaving, it points along it.
        float sign = (axis_of(ld, k) < 0.0f) == entering ? 1.0f : -1.0f;
        Vec3 n{k == 0 ? sign : 0.0f, k == 1 ? sign : 0.0f, k == 2 ? sign : 0.0f};
        return {true, t, rotate(s.q, n)};
    }
    case ShapeKind::kPlane: {
        Vec3 up = rotate(s.q, Vec3{0.0f, 0.0f, 1.0f});
        float dn = dot(d, up), h = dot(o - s.x, up);
        if (!(dn < 0.0f) || h < 0.0f) return miss;
        float t = -h / dn;
        if (t > max_distance) return miss;
        return {true, t, up};
    }
    case ShapeKind::kHull: {
        if constexpr (!kNormal) {
            if (!hull_valid(hulls, s.shape)) return miss;
            HullHit h = ray_vs_convex(convex_of(s.shape, hulls), local_origin ? *local_origin : unrotate(s.q, o - s.x),
                                      local_dir ? *local_dir : unrotate(s.q, d), max_distance);
            return h.hit ? ShapeHit{true, h.t, {0.0f, 0.0f, 0.0f}} : miss;
        }
        HullHit h = ray_vs_hull(hulls, s, o, d, max_distance);
        return h.hit ? ShapeHit{true, h.t, h.n} : miss;
    }
    default: return query_unhandled_kind();
    }
}
} // namespace detail

/// First point where ray (o, unit d) meets shape s at distance <= max_distance.
/// A ray starting inside a solid hits where it leaves (as MuJoCo's mj_ray),
/// the normal there pointing out of the shape, along the ray. Planes are
/// one-sided, as MuJoCo's: hit only by rays from above travelling down. Hulls
/// are read from `hulls` (hull_set(ctx); physics/hull.hpp's ray_vs_hull).
ORRERY_HD inline ShapeHit ray_shape(const Placed& s, Vec3 o, Vec3 d, float max_distance,
                                    const HullSet& hulls = HullSet{}) {
    return detail::ray_shape_impl<true>(s, o, d, max_distance, hulls);
}

/// ray_shape's distance alone, for callers that want only the first hit's
/// distance (hide-and-seek's ray scene): ray_shape without the normal's
/// rotation and normalisation, the distance bit for bit (physics_query_test
/// checks). < 0: a miss within max_distance (a hit can read -0.0f, as
/// ray_shape's distance can).
/// `local_origin`, `local_dir`: as ray_shape_impl's (unrotate(s.q, o - s.x),
/// made once for many rays from o; unrotate(s.q, d), once for many rays along d).
ORRERY_HD inline float ray_distance(const Placed& s, Vec3 o, Vec3 d, float max_distance,
                                    const HullSet& hulls = HullSet{}, const Vec3* local_origin = nullptr,
                                    const Vec3* local_dir = nullptr) {
    ShapeHit h = detail::ray_shape_impl<false>(s, o, d, max_distance, hulls, local_origin, local_dir);
    return h.hit ? h.distance : -1.0f;
}

/// The point of shape s's surface nearest to p, and p's signed distance to it
/// (negative inside a solid; below a plane, negative by the height). Hulls
/// are read from `hulls` (physics/hull.hpp's closest_point_on_hull).
ORRERY_HD inline SurfacePoint closest_on_shape(const Placed& s, Vec3 p, const HullSet& hulls = HullSet{}) {
    auto on_ball = [](Vec3 c, float r, Vec3 q) {
        Vec3 d = q - c;
        float l = length(d);
        Vec3 n = l > 1e-12f ? d * (1.0f / l) : Vec3{0.0f, 0.0f, 1.0f};
        return SurfacePoint{c + n * r, l - r};
    };
    switch (s.shape.kind) {
    case ShapeKind::kSphere: return on_ball(s.x, s.shape.dims.x, p);
    case ShapeKind::kCapsule: return on_ball(closest_on_segment(segment_of(s), p), s.shape.dims.x, p);
    case ShapeKind::kBox: {
        Vec3 e = s.shape.dims, l = unrotate(s.q, p - s.x);
        Vec3 c{clamp_f(l.x, -e.x, e.x), clamp_f(l.y, -e.y, e.y), clamp_f(l.z, -e.z, e.z)};
        Vec3 out = l - c;
        if (out.x != 0.0f || out.y != 0.0f || out.z != 0.0f) return {s.x + rotate(s.q, c), length(out)};
        // Inside: the nearest face (the first of equals, x before y before z).
        float gaps[3] = {e.x - abs_of(l.x), e.y - abs_of(l.y), e.z - abs_of(l.z)};
        uint32_t k = gaps[0] <= gaps[1] && gaps[0] <= gaps[2] ? 0 : (gaps[1] <= gaps[2] ? 1 : 2);
        float face = axis_of(l, k) < 0.0f ? -axis_of(e, k) : axis_of(e, k);
        Vec3 f{k == 0 ? face : l.x, k == 1 ? face : l.y, k == 2 ? face : l.z};
        return {s.x + rotate(s.q, f), -gaps[k]};
    }
    case ShapeKind::kPlane: {
        Vec3 up = rotate(s.q, Vec3{0.0f, 0.0f, 1.0f});
        float h = dot(p - s.x, up);
        return {p - up * h, h};
    }
    case ShapeKind::kHull: { // a hull the table lacks: never nearest
        HullClosest c = closest_point_on_hull(hulls, s, p);
        return {c.p, c.distance};
    }
    default: return {p, detail::kFar}; // query_handles(kind) is false: never nearest
    }
}

/// Signed distance from p to shape s's surface (negative inside).
ORRERY_HD inline float distance_to_shape(const Placed& s, Vec3 p, const HullSet& hulls = HullSet{}) {
    return closest_on_shape(s, p, hulls).distance;
}

// --- queries against a world ------------------------------------------------

/// Kinds of bodies a query passes through (bits of QueryFilter::skip).
enum : uint32_t {
    kSkipPlanes = 1,    ///< plane shapes (hide-and-seek: rays never see the floor)
    kSkipStatic = 2,    ///< static bodies (walls; also a locked box while it is static)
    kSkipKinematic = 4, ///< kinematic bodies
    kSkipDynamic = 8,   ///< dynamic bodies
};

/// Which bodies a world query sees: all but `exclude` (the caster; null:
/// none) and the kinds whose kSkip bits are set.
struct QueryFilter {
    Entity exclude{};
    uint32_t skip = 0;
};

/// Accepts every body; the default of the queries' `accept` predicate.
struct AnyBody {
    ORRERY_HD bool operator()(Entity) const { return true; }
};

/// First hit of a ray in a world: the entity (null when none), the distance
/// (the ray's max_distance when none) and the world-frame surface normal.
struct RayHit {
    Entity entity;
    float distance;
    Vec3 normal;
    ORRERY_HD bool hit() const { return !entity.is_null(); }
};

/// The closest body's entity (null when none is within reach), the signed
/// distance from the query point to its surface, and the nearest surface point.
struct Nearest {
    Entity entity;
    float distance;
    Vec3 point;
};

namespace detail {
/// Calls f(entity, pose, shape, kind) for each live rigid body of world w,
/// archetypes in id order, rows in order (the solver's gather order).
template <class F> ORRERY_HD void each_body(const orrery::WorldView& w, F&& f) {
    const orrery::Storage& s = w.storage();
    for (uint32_t a = 0; a < s.num_archetypes; ++a) {
        const orrery::ArchetypeTable& t = s.tables[a];
        const orrery::uint8_t* poses = t.columns[orrery::component_id<Pose>];
        const orrery::uint8_t* shapes = t.columns[orrery::component_id<Shape>];
        const orrery::uint8_t* kinds = t.columns[orrery::component_id<BodyType>];
        if (!poses || !shapes || !kinds) continue;
        uint32_t end = orrery::min_of(t.high_water[w.world()], t.capacity);
        for (uint32_t row = 0; row < end; ++row) {
            uint32_t r = w.slot(t, row);
            if (!t.alive[r]) continue;
            f(Entity::make(a, row, t.generation[r]), reinterpret_cast<const Pose*>(poses)[r],
              reinterpret_cast<const Shape*>(shapes)[r], reinterpret_cast<const BodyType*>(kinds)[r].kind);
        }
    }
}

ORRERY_HD inline bool same_entity(Entity a, Entity b) { return a.index == b.index && a.gen == b.gen; }

/// Whether the filter lets body e (of this shape and kind) through.
ORRERY_HD inline bool passes(const QueryFilter& f, Entity e, ShapeKind shape, BodyKind kind) {
    if (!f.exclude.is_null() && same_entity(e, f.exclude)) return false;
    if ((f.skip & kSkipPlanes) && shape == ShapeKind::kPlane) return false;
    uint32_t bit =
        kind == BodyKind::kStatic ? kSkipStatic : (kind == BodyKind::kKinematic ? kSkipKinematic : kSkipDynamic);
    return (f.skip & bit) == 0;
}

/// Conservative bounding-sphere radius (bound_of with slack for rounding); < 0: unbounded.
ORRERY_HD inline float query_bound(Shape s, const HullSet& hulls = HullSet{}) { // hulls: pass hull_set(ctx)
    float b = s.kind == ShapeKind::kHull ? hull_bound(hulls, s) : bound_of(s);
    return b < 0.0f ? b : b * 1.001f + 1e-5f;
}
} // namespace detail

/// The first body a ray meets in world w within its max_distance, among those
/// `filter` lets through and `accept(entity)` accepts. Ties go to the body
/// first in the solver's order. Each body is tested exactly, after a
/// bounding-sphere test that never rejects a hit.
template <class Accept = AnyBody>
ORRERY_HD RayHit cast_ray(const orrery::WorldView& w, const Ray& ray, QueryFilter filter = {}, Accept accept = {}) {
    RayHit best{Entity{}, ray.max_distance, {0.0f, 0.0f, 0.0f}};
    const HullSet hulls = hull_set(w);
    detail::each_body(w, [&](Entity e, const Pose& pose, const Shape& shape, BodyKind kind) {
        if (!detail::passes(filter, e, shape.kind, kind)) return;
        float bound = detail::query_bound(shape, hulls);
        if (bound >= 0.0f) {
            Vec3 oc = pose.p - ray.origin;
            float tc = dot(oc, ray.dir);
            if (tc + bound < 0.0f || tc - bound > best.distance) return;
            Vec3 perp = oc - ray.dir * tc;
            if (dot(perp, perp) > bound * bound) return;
        }
        if (!accept(e)) return;
        ShapeHit h = ray_shape(Placed{shape, pose.p, pose.q}, ray.origin, ray.dir, best.distance, hulls);
        if (h.hit && (best.entity.is_null() || h.distance < best.distance)) best = {e, h.distance, h.normal};
    });
    return best;
}

/// Whether `target` is the first body on the segment from a to b (b its
/// centre, say), casting from a with `filter` (exclude the looker): OpenAI's
/// line-of-sight rule, a target counts as seen if the ray's first hit is it.
ORRERY_HD inline bool in_sight(const orrery::WorldView& w, Vec3 a, Vec3 b, Entity target, QueryFilter filter = {}) {
    Vec3 d = b - a;
    float l = length(d);
    if (l <= 0.0f) return true;
    RayHit h = cast_ray(w, Ray{a, d * (1.0f / l), l}, filter);
    return detail::same_entity(h.entity, target);
}

/// The body whose surface is nearest to p, within `radius` (signed distance
/// <= radius; inside counts, as negative), among those `filter` lets through
/// and `accept(entity)` accepts. Ties go to the body first in order.
template <class Accept = AnyBody>
ORRERY_HD Nearest closest_body(const orrery::WorldView& w, Vec3 p, float radius, QueryFilter filter = {},
                               Accept accept = {}) {
    Nearest best{Entity{}, radius, p};
    const HullSet hulls = hull_set(w);
    detail::each_body(w, [&](Entity e, const Pose& pose, const Shape& shape, BodyKind kind) {
        if (!detail::passes(filter, e, shape.kind, kind) || !query_handles(shape.kind)) return;
        float bound = detail::query_bound(shape, hulls);
        if (bound >= 0.0f && length(pose.p - p) - bound > best.distance) return;
        if (!accept(e)) return;
        SurfacePoint sp = closest_on_shape(Placed{shape, pose.p, pose.q}, p, hulls);
        if (sp.distance <= best.distance && (best.entity.is_null() || sp.distance < best.distance))
            best = {e, sp.distance, sp.point};
    });
    return best;
}

// --- batches over lanes ------------------------------------------------------

/// Calls f(i) for lane `lane`'s share of items [begin, end): those with
/// i % lanes == lane. A lane-parallel system (ORRERY_PER_WORLD_LANES) numbers
/// its queries once (say agent * rays + k) and writes answer i only to slot
/// i: each answer is computed by the same code from the same inputs whatever
/// the lane count, so any split gives the serial loop's bytes.
template <class F> ORRERY_HD void for_lane_share(uint32_t begin, uint32_t end, uint32_t lane, uint32_t lanes, F&& f) {
    if (lanes == 0 || begin >= end) return;
    uint32_t first = begin + (lane + lanes - begin % lanes) % lanes;
    for (uint32_t i = first; i < end; i += lanes) f(i);
}

/// Ray k of `count` lidar rays from `origin` in the horizontal plane at
/// world-fixed angles 2 pi k / count (ray 0 along +x, counter-clockwise), as
/// OpenAI's hide-and-seek lidar.
ORRERY_HD inline Ray lidar_ray(Vec3 origin, uint32_t k, uint32_t count, float range) {
    SinCos sc = sin_cos(2.0f * kPi * float(k) / float(count));
    return Ray{origin, Vec3{sc.c, sc.s, 0.0f}, range};
}

} // namespace phys
