#pragma once
// Convex hulls (issue #14: a ramp is a wedge hull). The hull table is a shared
// read-only asset (one copy for every world, built on the host by
// build_hulls() in hull_build.cpp); this header reads it on both backends: the
// narrowphase of a hull against every shape, mass properties, and pure ray and
// closest-point queries. Plain float code in a fixed order, no libm.

#include "physics/collide.hpp"

namespace phys {
using orrery::Span;

inline constexpr uint32_t kMaxHullVertices = 32; ///< per hull (the builder refuses more)
inline constexpr uint32_t kMaxFaceCorners = 16;  ///< per face (clipping buffers are sized from it)

/// The hull table as systems read it (ctx.asset of the four hull components).
struct HullSet {
    Span<HullInfo> info;
    Span<Vec3> points;
    Span<HullFace> faces;
    Span<uint32_t> indices;
};
ORRERY_HD inline HullSet hull_set(const orrery::WorldView& ctx) {
    return {ctx.asset<Hulls>(), ctx.asset<HullPoints>(), ctx.asset<HullFaces>(), ctx.asset<HullIndices>()};
}

/// The shape of hull number `index` of the table.
ORRERY_HD inline Shape hull_shape(uint32_t index) { return {ShapeKind::kHull, {float(index), 0.0f, 0.0f}}; }
/// Whether `s` is a hull the table holds.
ORRERY_HD inline bool hull_valid(const HullSet& hulls, Shape s) {
    return s.kind == ShapeKind::kHull && s.dims.x >= 0.0f && s.dims.x < float(hulls.info.size) &&
           float(uint32_t(s.dims.x)) == s.dims.x;
}
/// Bounding radius of a hull shape about its body origin (0 when the table lacks it).
ORRERY_HD inline float hull_bound(const HullSet& hulls, Shape s) {
    return hull_valid(hulls, s) ? hulls.info[uint32_t(s.dims.x)].bound : 0.0f;
}

/// Mass properties of a hull at `density` (kg/m^3), principal axes = body axes.
ORRERY_HD inline MassProps hull_mass(const HullInfo& h, float density) {
    float m = density * h.volume;
    if (!(m > 0.0f)) return {0.0f, {0.0f, 0.0f, 0.0f}};
    Vec3 I = h.inertia * density;
    return {1.0f / m, {1.0f / I.x, 1.0f / I.y, 1.0f / I.z}};
}
/// mass_of() for every shape, hulls included.
ORRERY_HD inline MassProps mass_of(Shape s, float density, const HullSet& hulls) {
    if (s.kind != ShapeKind::kHull) return mass_of(s, density);
    return hull_valid(hulls, s) ? hull_mass(hulls.info[uint32_t(s.dims.x)], density) : MassProps{};
}
/// mass_given() for every shape, hulls included.
ORRERY_HD inline MassProps mass_given(Shape s, float mass, const HullSet& hulls) {
    MassProps unit = mass_of(s, 1.0f, hulls);
    if (unit.inv_mass <= 0.0f || mass <= 0.0f) return unit;
    float scale = unit.inv_mass * mass;
    return {1.0f / mass, unit.inv_inertia * (1.0f / scale)};
}
/// The body pose of a hull whose vertices' given frame is placed at (p, q):
/// the body origin is the centroid and its axes the principal axes.
ORRERY_HD inline Pose hull_pose(const HullInfo& h, Vec3 p, Quat q) { return {p + rotate(q, h.offset), q * h.frame}; }

/// A box or a hull in its body frame: vertices, faces (planes and corners),
/// edge directions and edges, as SAT, clipping and the queries read them.
struct Convex {
    const HullSet* set;
    HullInfo info; ///< a hull's entry
    Vec3 half;     ///< a box's half extents
    bool box;

    ORRERY_HD uint32_t num_vertices() const { return box ? 8u : info.num_vertices; }
    /// Box vertex i has bit 0, 1, 2 set where its x, y, z are positive.
    ORRERY_HD Vec3 vertex(uint32_t i) const {
        if (box) return {(i & 1u) ? half.x : -half.x, (i & 2u) ? half.y : -half.y, (i & 4u) ? half.z : -half.z};
        return set->points[info.first_point + i];
    }
    ORRERY_HD uint32_t num_faces() const { return box ? 6u : info.num_faces; }
    /// Box face f: normal along axis f / 2, positive for even f.
    ORRERY_HD HullFace face(uint32_t f) const {
        if (!box) return set->faces[info.first_face + f];
        uint32_t k = f >> 1;
        float s = (f & 1u) ? -1.0f : 1.0f;
        return {Vec3{k == 0 ? s : 0.0f, k == 1 ? s : 0.0f, k == 2 ? s : 0.0f}, axis_of(half, k), f, 4u};
    }
    /// Vertex number of corner c of face f (counter-clockwise seen from outside).
    ORRERY_HD uint32_t corner(const HullFace& f, uint32_t c) const {
        if (!box) return set->indices[f.first + c];
        uint32_t k = f.first >> 1, i1 = (k + 1) % 3, i2 = (k + 2) % 3;
        bool positive = (f.first & 1u) == 0;
        uint32_t cc = positive ? c : 3 - c; // (+,+), (-,+), (-,-), (+,-) in (axis i1, axis i2)
        uint32_t bits = (positive ? 1u << k : 0u) | ((cc == 0 || cc == 3) ? 1u << i1 : 0u) | (cc < 2 ? 1u << i2 : 0u);
        return bits;
    }
    ORRERY_HD uint32_t num_dirs() const { return box ? 3u : info.num_dirs; }
    ORRERY_HD Vec3 dir(uint32_t i) const {
        if (box) return {i == 0 ? 1.0f : 0.0f, i == 1 ? 1.0f : 0.0f, i == 2 ? 1.0f : 0.0f};
        return set->points[info.first_point + info.num_vertices + i];
    }
    ORRERY_HD uint32_t num_edges() const { return box ? 12u : info.num_edges; }
    struct Edge {
        uint32_t a, b, dir;
    };
    ORRERY_HD Edge edge(uint32_t e) const {
        if (box) {
            uint32_t k = e >> 2, i1 = (k + 1) % 3, i2 = (k + 2) % 3;
            uint32_t base = ((e & 1u) << i1) | (((e >> 1) & 1u) << i2);
            return {base, base | (1u << k), k};
        }
        uint32_t at = info.first_edge + 3 * e;
        return {set->indices[at], set->indices[at + 1], set->indices[at + 2]};
    }
};
/// The convex view of a placed box or (valid) hull.
ORRERY_HD inline Convex convex_of(Shape s, const HullSet& hulls) {
    Convex c{};
    c.set = &hulls;
    c.box = s.kind == ShapeKind::kBox;
    if (c.box)
        c.half = s.dims;
    else
        c.info = hulls.info[uint32_t(s.dims.x)];
    return c;
}

// --- queries (pure functions; physics/query.hpp dispatches to them) ----------

/// A ray's first hit: distance along the ray and the outward normal there.
struct HullHit {
    bool hit;
    float t;
    Vec3 n;
};
/// The ray origin + t dir (t in [0, max_t]; dir need not be unit, t scales
/// with it) against convex c, in c's body frame: where it enters, the face's
/// outward normal there. A ray starting inside hits where it leaves, the
/// normal pointing out, along the ray (as MuJoCo's mj_ray and physics/query.hpp).
ORRERY_HD inline HullHit ray_vs_convex(const Convex& c, Vec3 origin, Vec3 dir, float max_t) {
    const HullHit miss{false, 0.0f, {0.0f, 0.0f, 0.0f}};
    float t0 = -3.4e38f, t1 = 3.4e38f; // the span of the ray's line inside every face's half-space
    Vec3 n0{0.0f, 0.0f, 0.0f}, n1{0.0f, 0.0f, 0.0f};
    for (uint32_t f = 0; f < c.num_faces(); ++f) {
        HullFace F = c.face(f);
        float denom = dot(F.n, dir), dist = F.d - dot(F.n, origin); // dist >= 0: inside this face's half-space
        if (denom == 0.0f) {
            if (dist < 0.0f) return miss;
            continue;
        }
        float t = dist / denom;
        if (denom < 0.0f) {
            if (t > t0) t0 = t, n0 = F.n;
        } else if (t < t1) {
            t1 = t, n1 = F.n;
        }
        // The span only narrows: empty, behind the ray or starting past max_t, it stays a miss.
        if (t0 > t1 || t1 < 0.0f || t0 > max_t) return miss;
    }
    if (t0 > t1 || t1 < 0.0f) return miss;
    if (t0 >= 0.0f) return t0 <= max_t ? HullHit{true, t0, n0} : miss;
    return t1 <= max_t ? HullHit{true, t1, n1} : miss; // from inside: where it leaves
}
/// ray_vs_convex for hull (or box) h placed in the world: world normal.
ORRERY_HD inline HullHit ray_vs_hull(const HullSet& hulls, const Placed& h, Vec3 origin, Vec3 dir, float max_t) {
    if (h.shape.kind != ShapeKind::kBox && !hull_valid(hulls, h.shape)) return {false, 0.0f, {0.0f, 0.0f, 0.0f}};
    HullHit r = ray_vs_convex(convex_of(h.shape, hulls), unrotate(h.q, origin - h.x), unrotate(h.q, dir), max_t);
    r.n = rotate(h.q, r.n);
    return r;
}

/// The surface point nearest a point: the point, the outward normal there
/// (from the surface toward the query point outside), and the signed distance
/// (< 0 inside: the depth below the nearest face).
struct HullClosest {
    Vec3 p, n;
    float distance;
};
/// closest point of convex c's surface to `x`, all in c's body frame: inside,
/// the nearest face; outside, the nearest face interior or edge.
ORRERY_HD inline HullClosest closest_on_convex(const Convex& c, Vec3 x) {
    float worst = -3.4e38f;
    HullFace nearest{};
    for (uint32_t f = 0; f < c.num_faces(); ++f) {
        HullFace F = c.face(f);
        float s = dot(F.n, x) - F.d;
        if (s > worst) worst = s, nearest = F;
    }
    if (worst <= 0.0f) return {x - nearest.n * worst, nearest.n, worst};
    float best = 3.4e38f;
    Vec3 p = x;
    for (uint32_t f = 0; f < c.num_faces(); ++f) { // faces whose interior holds the projection
        HullFace F = c.face(f);
        float s = dot(F.n, x) - F.d;
        if (s <= 0.0f || s * s >= best) continue;
        Vec3 q = x - F.n * s;
        bool inside = true;
        for (uint32_t k = 0; k < F.count && inside; ++k) {
            Vec3 a = c.vertex(c.corner(F, k)), b = c.vertex(c.corner(F, (k + 1) % F.count));
            inside = dot(cross(b - a, F.n), q - a) <= 0.0f;
        }
        if (inside) best = s * s, p = q;
    }
    for (uint32_t e = 0; e < c.num_edges(); ++e) {
        Convex::Edge E = c.edge(e);
        Vec3 q = closest_on_segment({c.vertex(E.a), c.vertex(E.b)}, x);
        Vec3 d = x - q;
        if (dot(d, d) < best) best = dot(d, d), p = q;
    }
    float dist = sqrt_of(best);
    return {p, dist > 0.0f ? (x - p) * (1.0f / dist) : nearest.n, dist};
}
/// closest_on_convex for hull (or box) h placed in the world (world point and normal).
ORRERY_HD inline HullClosest closest_point_on_hull(const HullSet& hulls, const Placed& h, Vec3 x) {
    if (h.shape.kind != ShapeKind::kBox && !hull_valid(hulls, h.shape)) return {x, {0.0f, 0.0f, 1.0f}, 3.4e38f};
    HullClosest r = closest_on_convex(convex_of(h.shape, hulls), unrotate(h.q, x - h.x));
    return {h.x + rotate(h.q, r.p), rotate(h.q, r.n), r.distance};
}

// --- narrowphase ---------------------------------------------------------------

namespace detail {
/// Adds up to 4 of n candidate points to m: the deepest, the one farthest from
/// it, then the two spreading the area most either side of their line (about
/// axis `up`), as box_box keeps a face contact's points.
ORRERY_HD inline void add_spread(Manifold& m, const Vec3* p, const float* depth, uint32_t n, Vec3 up) {
    if (n == 0) return;
    uint32_t pick[4] = {0, 0, 0, 0}, np = 1;
    for (uint32_t q = 1; q < n; ++q)
        if (depth[q] > depth[pick[0]]) pick[0] = q;
    if (n > 1) {
        float far = -1.0f;
        for (uint32_t q = 0; q < n; ++q) {
            Vec3 d = p[q] - p[pick[0]];
            if (dot(d, d) > far) far = dot(d, d), pick[1] = q;
        }
        np = 2;
    }
    if (n > 2) {
        float lo = 0.0f, hi = 0.0f;
        uint32_t ilo = n, ihi = n;
        for (uint32_t q = 0; q < n; ++q) {
            float area = dot(cross(p[pick[1]] - p[pick[0]], p[q] - p[pick[0]]), up);
            if (area > hi) hi = area, ihi = q;
            if (area < lo) lo = area, ilo = q;
        }
        if (ihi < n) pick[np++] = ihi;
        if (ilo < n) pick[np++] = ilo;
    }
    for (uint32_t k = 0; k < np; ++k) add_point(m, p[pick[k]], depth[pick[k]]);
}
} // namespace detail

/// Hull h against plane p: its vertices below the plane (up to margin), 4 kept.
ORRERY_HD inline Manifold hull_plane(const Placed& h, const Convex& c, const Placed& p, float margin) {
    Manifold m{};
    Vec3 up = rotate(p.q, Vec3{0.0f, 0.0f, 1.0f});
    m.n = -up;
    Vec3 pts[kMaxHullVertices];
    float depth[kMaxHullVertices];
    uint32_t n = 0;
    for (uint32_t i = 0; i < c.num_vertices(); ++i) {
        Vec3 v = h.x + rotate(h.q, c.vertex(i));
        float d = -dot(v - p.x, up);
        if (d > -margin) pts[n] = v + up * (0.5f * d), depth[n++] = d;
    }
    detail::add_spread(m, pts, depth, n, up);
    return m;
}

/// Hull h against a sphere (centre x, radius r): normal from the hull to the sphere.
ORRERY_HD inline Manifold hull_sphere(const Placed& h, const Convex& c, Vec3 x, float r, float margin) {
    Manifold m{};
    HullClosest s = closest_on_convex(c, unrotate(h.q, x - h.x));
    if (s.distance >= r + margin) return m;
    float depth = r - s.distance;
    m.n = rotate(h.q, s.n);
    add_point(m, h.x + rotate(h.q, s.p) - m.n * (0.5f * depth), depth);
    return m;
}

/// Hull h against a sphere (o a sphere) or a capsule: the capsule's segment
/// ends and its point nearest the hull's centre as spheres (as capsule_box:
/// exact for a capsule lying on a face). One loop, so the kernel holds one copy.
ORRERY_HD inline Manifold hull_round(const Placed& h, const Convex& c, const Placed& o, float margin) {
    Vec3 probes[3] = {o.x, o.x, o.x};
    uint32_t n = 1;
    if (o.shape.kind == ShapeKind::kCapsule) {
        Segment s = segment_of(o);
        probes[0] = s.a, probes[1] = s.b, probes[2] = closest_on_segment(s, h.x), n = 3;
    }
    Manifold out{};
    for (uint32_t i = 0; i < n; ++i) {
        Manifold m = hull_sphere(h, c, probes[i], o.shape.dims.x, margin);
        if (m.count == 0) continue;
        if (out.count == 0) out.n = m.n;
        add_point(out, m.p[0], m.depth[0]);
    }
    return out;
}

/// The separating-axis result of two convex shapes, in A's frame.
struct ConvexAxes {
    float sep_a, sep_b, sep_e; ///< largest separation over A's faces, B's faces, edge pairs
    uint32_t face_a, face_b;
    uint32_t dir_a, dir_b;
    Vec3 edge_n; ///< the edge pair's axis, from A to B
    bool separated;
};
/// SAT over A's face normals, B's face normals and the cross products of
/// every pair of edge directions; va / vb are A's and B's vertices in A's frame.
ORRERY_HD inline ConvexAxes convex_axes(const Convex& A, const Vec3* va, const Convex& B, const Vec3* vb, Quat qr,
                                        Vec3 xr, float margin) {
    ConvexAxes r{-3.4e38f, -3.4e38f, -3.4e38f, 0, 0, 0, 0, {0, 0, 1}, true};
    uint32_t na = A.num_vertices(), nb = B.num_vertices();
    for (uint32_t f = 0; f < A.num_faces(); ++f) {
        HullFace F = A.face(f);
        float lo = 3.4e38f;
        for (uint32_t i = 0; i < nb; ++i) lo = min_f(lo, dot(F.n, vb[i]));
        float s = lo - F.d;
        if (s > margin) return r;
        if (s > r.sep_a) r.sep_a = s, r.face_a = f;
    }
    for (uint32_t f = 0; f < B.num_faces(); ++f) {
        HullFace F = B.face(f);
        Vec3 n = rotate(qr, F.n);
        float d = F.d + dot(n, xr), lo = 3.4e38f;
        for (uint32_t i = 0; i < na; ++i) lo = min_f(lo, dot(n, va[i]));
        float s = lo - d;
        if (s > margin) return r;
        if (s > r.sep_b) r.sep_b = s, r.face_b = f;
    }
    for (uint32_t i = 0; i < A.num_dirs(); ++i)
        for (uint32_t j = 0; j < B.num_dirs(); ++j) {
            Vec3 c = cross(A.dir(i), rotate(qr, B.dir(j)));
            float l = length(c);
            if (l < 1e-4f) continue; // parallel edges: a face axis decides
            Vec3 L = c * (1.0f / l);
            float amin = 3.4e38f, amax = -3.4e38f, bmin = 3.4e38f, bmax = -3.4e38f;
            for (uint32_t k = 0; k < na; ++k) amin = min_f(amin, dot(L, va[k])), amax = max_f(amax, dot(L, va[k]));
            for (uint32_t k = 0; k < nb; ++k) bmin = min_f(bmin, dot(L, vb[k])), bmax = max_f(bmax, dot(L, vb[k]));
            float s1 = bmin - amax, s2 = amin - bmax, s = max_f(s1, s2);
            if (s > margin) return r;
            if (s > r.sep_e) r.sep_e = s, r.dir_a = i, r.dir_b = j, r.edge_n = s1 >= s2 ? L : -L;
        }
    r.separated = false;
    return r;
}

/// The closest points of A's and B's supporting edges along axis n (A's frame): one point.
ORRERY_HD inline bool edge_contact(const Convex& A, const Vec3* va, const Convex& B, const Vec3* vb,
                                   const ConvexAxes& ax, Vec3& point) {
    Vec3 n = ax.edge_n;
    float best_a = -3.4e38f, best_b = 3.4e38f;
    Segment ea{}, eb{};
    for (uint32_t e = 0; e < A.num_edges(); ++e) {
        Convex::Edge E = A.edge(e);
        float s = dot(n, va[E.a] + va[E.b]);
        if (E.dir == ax.dir_a && s > best_a) best_a = s, ea = {va[E.a], va[E.b]};
    }
    for (uint32_t e = 0; e < B.num_edges(); ++e) {
        Convex::Edge E = B.edge(e);
        float s = dot(n, vb[E.a] + vb[E.b]);
        if (E.dir == ax.dir_b && s < best_b) best_b = s, eb = {vb[E.a], vb[E.b]};
    }
    if (best_a == -3.4e38f || best_b == 3.4e38f) return false;
    Segment c = closest_between(ea, eb);
    point = (c.a + c.b) * 0.5f;
    return true;
}

/// The incident face of I (vertices vi, A's frame, faces turned by qi, xi)
/// clipped against reference face F of R (vertices vr): candidate points
/// midway between the faces and their depths along F.n. Returns the count.
ORRERY_HD inline uint32_t clip_faces(const Convex& R, const Vec3* vr, HullFace F, const Convex& I, const Vec3* vi,
                                     Quat qi, Vec3* out, float* depth, float margin) {
    uint32_t inc = 0;
    float most = 3.4e38f;
    for (uint32_t f = 0; f < I.num_faces(); ++f) {
        float d = dot(rotate(qi, I.face(f).n), F.n);
        if (d < most) most = d, inc = f;
    }
    HullFace G = I.face(inc);
    Vec3 poly[2 * kMaxFaceCorners], tmp[2 * kMaxFaceCorners];
    uint32_t n = G.count < kMaxFaceCorners ? G.count : kMaxFaceCorners;
    for (uint32_t k = 0; k < n; ++k) poly[k] = vi[I.corner(G, k)];
    for (uint32_t k = 0; k < F.count && n > 0 && k < kMaxFaceCorners; ++k) {
        Vec3 a = vr[R.corner(F, k)], b = vr[R.corner(F, (k + 1) % F.count)];
        Vec3 side = cross(b - a, F.n); // outward across this edge of the reference face
        n = detail::clip(poly, n, tmp, side, dot(side, a));
        for (uint32_t q = 0; q < n; ++q) poly[q] = tmp[q];
    }
    uint32_t kept = 0;
    for (uint32_t q = 0; q < n; ++q) {
        float d = F.d - dot(poly[q], F.n);
        if (d > -margin) out[kept] = poly[q] + F.n * (0.5f * d), depth[kept++] = d;
    }
    return kept;
}

/// Convex against convex (box or hull, either side): SAT over face normals
/// and edge-pair axes, then the incident face clipped against the reference
/// face (up to 4 points kept) or, for an edge axis, the two edges' closest
/// points. Faces win unless an edge axis is clearly shallower (stable resting
/// manifolds), as in box_box. Normal from A to B.
ORRERY_HD inline Manifold convex_convex(const Placed& pa, const Convex& A, const Placed& pb, const Convex& B,
                                        float margin) {
    Manifold m{};
    Quat qr = conj(pa.q) * pb.q;
    Vec3 xr = unrotate(pa.q, pb.x - pa.x);
    Vec3 va[kMaxHullVertices], vb[kMaxHullVertices];
    for (uint32_t i = 0; i < A.num_vertices(); ++i) va[i] = A.vertex(i);
    for (uint32_t i = 0; i < B.num_vertices(); ++i) vb[i] = xr + rotate(qr, B.vertex(i));
    ConvexAxes ax = convex_axes(A, va, B, vb, qr, xr, margin);
    if (ax.separated) return m;
    bool ref_b = ax.sep_b > ax.sep_a + 5e-4f;
    float face = ref_b ? ax.sep_b : ax.sep_a;
    Vec3 pts[2 * kMaxFaceCorners];
    float depth[2 * kMaxFaceCorners];
    uint32_t n = 0;
    Vec3 nrm{0.0f, 0.0f, 1.0f};
    if (!(ax.sep_e > 0.95f * face + 1e-3f)) { // reference face R, incident shape I, all in A's frame
        const Convex& R = ref_b ? B : A;
        const Convex& I = ref_b ? A : B;
        HullFace F = R.face(ref_b ? ax.face_b : ax.face_a);
        if (ref_b) F.n = rotate(qr, F.n), F.d = F.d + dot(F.n, xr);
        n = clip_faces(R, ref_b ? vb : va, F, I, ref_b ? va : vb, ref_b ? Quat{1.0f, 0.0f, 0.0f, 0.0f} : qr, pts, depth,
                       margin);
        nrm = ref_b ? -F.n : F.n;
    }
    if (n == 0) { // an edge axis, or faces that clip to nothing: the edges' closest points
        Vec3 p;
        if (ax.sep_e == -3.4e38f || !edge_contact(A, va, B, vb, ax, p)) return m;
        m.n = rotate(pa.q, ax.edge_n);
        add_point(m, pa.x + rotate(pa.q, p), -ax.sep_e);
        return m;
    }
    for (uint32_t k = 0; k < n; ++k) pts[k] = pa.x + rotate(pa.q, pts[k]);
    m.n = rotate(pa.q, nrm);
    detail::add_spread(m, pts, depth, n, m.n);
    return m;
}

/// Hull h against any shape o: normal from h to o. A hull the table lacks touches nothing.
ORRERY_HD inline Manifold collide_hull(const Placed& h, const Placed& o, float margin, const HullSet& hulls) {
    ShapeKind k = o.shape.kind;
    if (!hull_valid(hulls, h.shape) || (k == ShapeKind::kHull && !hull_valid(hulls, o.shape))) return Manifold{};
    Convex c = convex_of(h.shape, hulls);
    if (k == ShapeKind::kPlane) return hull_plane(h, c, o, margin);
    if (k == ShapeKind::kSphere || k == ShapeKind::kCapsule) return hull_round(h, c, o, margin);
    return convex_convex(h, c, o, convex_of(o.shape, hulls), margin); // a box or a hull
}

/// Contacts between two placed shapes of any kinds, hulls included: normal from a to b.
ORRERY_HD inline Manifold collide_any(const Placed& a, const Placed& b, float margin, const HullSet& hulls) {
    if (a.shape.kind != ShapeKind::kHull && b.shape.kind != ShapeKind::kHull) return collide(a, b, margin);
    bool flip = a.shape.kind != ShapeKind::kHull; // one call site: the kernel holds one copy of the hull code
    Manifold m = collide_hull(flip ? b : a, flip ? a : b, margin, hulls);
    if (flip) m.n = -m.n;
    return m;
}

} // namespace phys
