#pragma once
// Narrowphase: contact manifolds (up to 4 points) for every pair of sphere,
// capsule, box and plane. Each test gets shape A and shape B (A's kind <= B's)
// and returns the normal from A to B with points midway between the surfaces
// and their depths (> 0: overlapping), including points up to `margin` apart
// (depth > -margin), so a resting manifold keeps all its points while the
// solver holds it at depth 0. Plain float code, fixed order.

#include "physics/body.hpp"

namespace phys {

/// A shape placed in the world.
struct Placed {
    Shape shape;
    Vec3 x;
    Quat q;
};

ORRERY_HD inline void add_point(Manifold& m, Vec3 p, float depth) {
    if (m.count < kMaxManifold) {
        m.p[m.count] = p;
        m.depth[m.count] = depth;
        m.count += 1;
    }
}

/// Spheres at ca (radius ra) and cb (radius rb).
ORRERY_HD inline Manifold spheres(Vec3 ca, float ra, Vec3 cb, float rb, float margin) {
    Manifold m{};
    Vec3 d = cb - ca;
    float dist = length(d);
    float depth = ra + rb - dist;
    if (depth <= -margin) return m;
    m.n = dist > 1e-9f ? d * (1.0f / dist) : Vec3{0.0f, 0.0f, 1.0f};
    add_point(m, ca + m.n * (ra - 0.5f * depth), depth);
    return m;
}

/// End points of a capsule's segment.
struct Segment {
    Vec3 a, b;
};
ORRERY_HD inline Segment segment_of(const Placed& c) {
    Vec3 axis = rotate(c.q, Vec3{0.0f, 0.0f, c.shape.dims.y});
    return {c.x - axis, c.x + axis};
}
/// Point of segment s closest to p.
ORRERY_HD inline Vec3 closest_on_segment(Segment s, Vec3 p) {
    Vec3 d = s.b - s.a;
    float dd = dot(d, d);
    float t = dd > 1e-12f ? clamp_f(dot(p - s.a, d) / dd, 0.0f, 1.0f) : 0.0f;
    return s.a + d * t;
}
/// Closest points of two segments (Ericson, Real-Time Collision Detection 5.1.9).
ORRERY_HD inline Segment closest_between(Segment s1, Segment s2) {
    Vec3 d1 = s1.b - s1.a, d2 = s2.b - s2.a, r = s1.a - s2.a;
    float a = dot(d1, d1), e = dot(d2, d2), f = dot(d2, r);
    float s = 0.0f, t = 0.0f;
    if (a <= 1e-12f && e <= 1e-12f) return {s1.a, s2.a};
    if (a <= 1e-12f) {
        t = clamp_f(f / e, 0.0f, 1.0f);
    } else {
        float c = dot(d1, r);
        if (e <= 1e-12f) {
            s = clamp_f(-c / a, 0.0f, 1.0f);
        } else {
            float b = dot(d1, d2), denom = a * e - b * b;
            s = denom > 1e-12f ? clamp_f((b * f - c * e) / denom, 0.0f, 1.0f) : 0.0f;
            t = (b * s + f) / e;
            if (t < 0.0f) {
                t = 0.0f;
                s = clamp_f(-c / a, 0.0f, 1.0f);
            } else if (t > 1.0f) {
                t = 1.0f;
                s = clamp_f((b - c) / a, 0.0f, 1.0f);
            }
        }
    }
    return {s1.a + d1 * s, s2.a + d2 * t};
}

/// A sphere (center c, radius r) against box b.
ORRERY_HD inline Manifold sphere_box(Vec3 c, float r, const Placed& b, float margin) {
    Manifold m{};
    Vec3 e = b.shape.dims, local = unrotate(b.q, c - b.x);
    Vec3 clamped{clamp_f(local.x, -e.x, e.x), clamp_f(local.y, -e.y, e.y), clamp_f(local.z, -e.z, e.z)};
    Vec3 d = local - clamped;
    float dist = length(d);
    Vec3 n_local; // from the sphere into the box
    float depth;
    Vec3 surface;
    if (dist > 1e-9f) {
        if (dist >= r + margin) return m;
        n_local = d * (-1.0f / dist);
        depth = r - dist;
        surface = clamped;
    } else { // center inside: leave through the nearest face
        float gaps[3] = {e.x - abs_of(local.x), e.y - abs_of(local.y), e.z - abs_of(local.z)};
        uint32_t k = gaps[0] <= gaps[1] && gaps[0] <= gaps[2] ? 0 : (gaps[1] <= gaps[2] ? 1 : 2);
        float sign = axis_of(local, k) < 0.0f ? -1.0f : 1.0f;
        n_local = Vec3{k == 0 ? -sign : 0.0f, k == 1 ? -sign : 0.0f, k == 2 ? -sign : 0.0f};
        depth = r + gaps[k];
        surface = local - n_local * gaps[k];
    }
    m.n = rotate(b.q, n_local);
    add_point(m, b.x + rotate(b.q, surface) + m.n * (0.5f * depth), depth);
    return m;
}

/// Shape a's deepest points below plane p (a sphere, capsule or box).
ORRERY_HD inline Manifold against_plane(const Placed& a, const Placed& p, float margin) {
    Manifold m{};
    Vec3 up = rotate(p.q, Vec3{0.0f, 0.0f, 1.0f});
    m.n = -up;
    auto sphere_at = [&](Vec3 c, float r) {
        float depth = r - dot(c - p.x, up);
        if (depth > -margin) add_point(m, c - up * (r - 0.5f * depth), depth);
    };
    if (a.shape.kind == ShapeKind::kSphere) {
        sphere_at(a.x, a.shape.dims.x);
    } else if (a.shape.kind == ShapeKind::kCapsule) {
        Segment s = segment_of(a);
        sphere_at(s.a, a.shape.dims.x);
        sphere_at(s.b, a.shape.dims.x);
    } else if (a.shape.kind == ShapeKind::kBox) {
        // The four deepest corners below the plane, deepest first (a box touches a plane with at most 4).
        Vec3 e = a.shape.dims;
        Vec3 corner[8];
        float depth[8];
        for (uint32_t i = 0; i < 8; ++i) {
            Vec3 c{(i & 1) ? e.x : -e.x, (i & 2) ? e.y : -e.y, (i & 4) ? e.z : -e.z};
            corner[i] = a.x + rotate(a.q, c);
            depth[i] = -dot(corner[i] - p.x, up);
        }
        for (uint32_t k = 0; k < kMaxManifold; ++k) {
            uint32_t best = 8;
            for (uint32_t i = 0; i < 8; ++i)
                if (depth[i] > -margin && (best == 8 || depth[i] > depth[best])) best = i;
            if (best == 8) break;
            add_point(m, corner[best] + up * (0.5f * depth[best]), depth[best]);
            depth[best] = -3.4e38f;
        }
    }
    return m;
}

/// A capsule against a box: the segment's ends and its point nearest the box
/// centre as spheres (exact for a capsule lying on or standing on a face).
ORRERY_HD inline Manifold capsule_box(const Placed& c, const Placed& b, float margin) {
    Segment s = segment_of(c);
    Vec3 probes[3] = {s.a, s.b, closest_on_segment(s, b.x)};
    Manifold out{};
    for (uint32_t i = 0; i < 3; ++i) {
        Manifold m = sphere_box(probes[i], c.shape.dims.x, b, margin);
        if (m.count == 0) continue;
        if (out.count == 0) out.n = m.n;
        add_point(out, m.p[0], m.depth[0]);
    }
    return out;
}

ORRERY_HD inline Manifold box_box(const Placed& a, const Placed& b, float margin);

/// Contacts between two placed shapes with a.kind <= b.kind: normal from `a` to `b`.
ORRERY_HD inline Manifold collide_ordered(const Placed& a, const Placed& b, float margin) {
    ShapeKind ka = a.shape.kind, kb = b.shape.kind;
    if (kb == ShapeKind::kPlane) {
        if (ka == ShapeKind::kPlane) return Manifold{};
        return against_plane(a, b, margin);
    }
    if (ka == ShapeKind::kSphere) {
        if (kb == ShapeKind::kSphere) return spheres(a.x, a.shape.dims.x, b.x, b.shape.dims.x, margin);
        if (kb == ShapeKind::kCapsule)
            return spheres(a.x, a.shape.dims.x, closest_on_segment(segment_of(b), a.x), b.shape.dims.x, margin);
        return sphere_box(a.x, a.shape.dims.x, b, margin);
    }
    if (ka == ShapeKind::kCapsule) {
        if (kb == ShapeKind::kBox) return capsule_box(a, b, margin);
        Segment sa = segment_of(a), sb = segment_of(b);
        Segment c = closest_between(sa, sb);
        Manifold m = spheres(c.a, a.shape.dims.x, c.b, b.shape.dims.x, margin);
        // Side by side: the other end of the overlap too, so the pair cannot roll about one point.
        Vec3 da = normalize_or(sa.b - sa.a, Vec3{0, 0, 1}), db = normalize_or(sb.b - sb.a, Vec3{0, 0, 1});
        if (m.count == 1 && abs_of(dot(da, db)) > 0.999f) {
            Vec3 ends[2] = {closest_on_segment(sa, sb.a), closest_on_segment(sa, sb.b)};
            for (Vec3 pa : ends) {
                Manifold e = spheres(pa, a.shape.dims.x, closest_on_segment(sb, pa), b.shape.dims.x, margin);
                if (e.count && length(e.p[0] - m.p[0]) > 1e-4f) add_point(m, e.p[0], e.depth[0]);
            }
        }
        return m;
    }
    return box_box(a, b, margin);
}

/// Contacts between two placed shapes of any kinds: normal from `a` to `b`.
ORRERY_HD inline Manifold collide(const Placed& a, const Placed& b, float margin = 0.0f) {
    if (uint32_t(a.shape.kind) <= uint32_t(b.shape.kind)) return collide_ordered(a, b, margin);
    Manifold m = collide_ordered(b, a, margin);
    m.n = -m.n;
    return m;
}

namespace detail {
/// Clips convex polygon `in` (n points) to dot(p, axis) <= limit; returns the
/// new count, at most n + 1 (an edge is cut only where its ends lie strictly
/// either side, so a point on the plane is never repeated).
ORRERY_HD inline uint32_t clip(const Vec3* in, uint32_t n, Vec3* out, Vec3 axis, float limit) {
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; ++i) {
        Vec3 p = in[i], q = in[(i + 1) % n];
        float dp = dot(p, axis) - limit, dq = dot(q, axis) - limit;
        if (dp <= 0.0f) out[k++] = p;
        if ((dp < 0.0f && dq > 0.0f) || (dp > 0.0f && dq < 0.0f)) out[k++] = p + (q - p) * (dp / (dp - dq));
    }
    return k;
}
} // namespace detail

/// Box against box: separating axes (3 + 3 faces, 9 edge pairs), then the
/// incident face clipped against the reference face (face contact, up to 4
/// points kept: deepest, farthest from it, then the widest spread) or the
/// closest points of two edges (edge contact, 1 point).
ORRERY_HD inline Manifold box_box(const Placed& a, const Placed& b, float margin) {
    Manifold m{};
    Vec3 A[3] = {rotate(a.q, {1, 0, 0}), rotate(a.q, {0, 1, 0}), rotate(a.q, {0, 0, 1})};
    Vec3 B[3] = {rotate(b.q, {1, 0, 0}), rotate(b.q, {0, 1, 0}), rotate(b.q, {0, 0, 1})};
    Vec3 ea = a.shape.dims, eb = b.shape.dims, t = b.x - a.x;
    auto overlap = [&](Vec3 L) {
        float ra = axis_of(ea, 0) * abs_of(dot(A[0], L)) + axis_of(ea, 1) * abs_of(dot(A[1], L)) +
                   axis_of(ea, 2) * abs_of(dot(A[2], L));
        float rb = axis_of(eb, 0) * abs_of(dot(B[0], L)) + axis_of(eb, 1) * abs_of(dot(B[1], L)) +
                   axis_of(eb, 2) * abs_of(dot(B[2], L));
        return ra + rb - abs_of(dot(t, L));
    };
    float best = 3.4e38f;
    uint32_t best_axis = 0;
    Vec3 best_L{0, 0, 1};
    for (uint32_t i = 0; i < 6; ++i) {
        Vec3 L = i < 3 ? A[i] : B[i - 3];
        float o = overlap(L);
        if (o <= -margin) return m;
        if (o < best) best = o, best_axis = i, best_L = L;
    }
    float face_best = best;
    for (uint32_t i = 0; i < 3; ++i)
        for (uint32_t j = 0; j < 3; ++j) {
            Vec3 c = cross(A[i], B[j]);
            float l = length(c);
            if (l < 1e-4f) continue; // parallel edges: a face axis decides
            Vec3 L = c * (1.0f / l);
            float o = overlap(L);
            if (o <= -margin) return m;
            // Prefer faces unless an edge axis is clearly shallower (stable manifolds when resting).
            if (o < 0.95f * face_best - 1e-3f && o < best) best = o, best_axis = 6 + 3 * i + j, best_L = L;
        }
    m.n = dot(best_L, t) < 0.0f ? -best_L : best_L; // from a to b
    if (best_axis >= 6) {
        uint32_t i = (best_axis - 6) / 3, j = (best_axis - 6) % 3;
        Vec3 pa = a.x, pb = b.x;
        for (uint32_t k = 0; k < 3; ++k) {
            if (k != i) pa += A[k] * (dot(A[k], m.n) > 0.0f ? axis_of(ea, k) : -axis_of(ea, k));
            if (k != j) pb += B[k] * (dot(B[k], m.n) < 0.0f ? axis_of(eb, k) : -axis_of(eb, k));
        }
        Segment c = closest_between({pa - A[i] * axis_of(ea, i), pa + A[i] * axis_of(ea, i)},
                                    {pb - B[j] * axis_of(eb, j), pb + B[j] * axis_of(eb, j)});
        add_point(m, (c.a + c.b) * 0.5f, best);
        return m;
    }
    // Face contact: reference box R (its face normal nf points toward the other), incident box I.
    bool ref_a = best_axis < 3;
    const Placed& R = ref_a ? a : b;
    const Placed& I = ref_a ? b : a;
    const Vec3* RA = ref_a ? A : B;
    const Vec3* IA = ref_a ? B : A;
    Vec3 nf = ref_a ? m.n : -m.n;
    uint32_t rk = best_axis % 3;
    uint32_t ik = 0;
    float most = -1.0f;
    for (uint32_t k = 0; k < 3; ++k)
        if (abs_of(dot(IA[k], nf)) > most) most = abs_of(dot(IA[k], nf)), ik = k;
    float s = dot(IA[ik], nf) > 0.0f ? -1.0f : 1.0f;
    uint32_t i1 = (ik + 1) % 3, i2 = (ik + 2) % 3;
    Vec3 fc = I.x + IA[ik] * (s * axis_of(I.shape.dims, ik));
    Vec3 u = IA[i1] * axis_of(I.shape.dims, i1), v = IA[i2] * axis_of(I.shape.dims, i2);
    Vec3 poly[8] = {fc + u + v, fc - u + v, fc - u - v, fc + u - v};
    Vec3 tmp[8];
    uint32_t n = 4;
    uint32_t r1 = (rk + 1) % 3, r2 = (rk + 2) % 3;
    Vec3 planes[4] = {RA[r1], -RA[r1], RA[r2], -RA[r2]};
    float limits[4] = {axis_of(R.shape.dims, r1), axis_of(R.shape.dims, r1), axis_of(R.shape.dims, r2),
                       axis_of(R.shape.dims, r2)};
    for (uint32_t k = 0; k < 4 && n > 0; ++k) {
        // Planes through R's centre: shift by dot(R.x, axis).
        n = detail::clip(poly, n, tmp, planes[k], limits[k] + dot(R.x, planes[k]));
        for (uint32_t q = 0; q < n; ++q) poly[q] = tmp[q];
    }
    float face = dot(R.x, nf) + axis_of(R.shape.dims, rk);
    float depth[8];
    uint32_t kept = 0;
    for (uint32_t q = 0; q < n; ++q) {
        float d = face - dot(poly[q], nf);
        if (d > -margin) poly[kept] = poly[q], depth[kept++] = d;
    }
    // Keep 4: the deepest, the farthest from it, then the two spreading the area most either side.
    uint32_t pick[4] = {0, 0, 0, 0}, np = 0;
    if (kept > 0) {
        for (uint32_t q = 1; q < kept; ++q)
            if (depth[q] > depth[pick[0]]) pick[0] = q;
        np = 1;
    }
    if (kept > 1) {
        float far = -1.0f;
        for (uint32_t q = 0; q < kept; ++q) {
            Vec3 d = poly[q] - poly[pick[0]];
            if (dot(d, d) > far) far = dot(d, d), pick[1] = q;
        }
        np = 2;
    }
    if (kept > 2) {
        float lo = 0.0f, hi = 0.0f;
        uint32_t ilo = kept, ihi = kept;
        for (uint32_t q = 0; q < kept; ++q) {
            float area = dot(cross(poly[pick[1]] - poly[pick[0]], poly[q] - poly[pick[0]]), nf);
            if (area > hi) hi = area, ihi = q;
            if (area < lo) lo = area, ilo = q;
        }
        if (ihi < kept) pick[np++] = ihi;
        if (ilo < kept) pick[np++] = ilo;
    }
    for (uint32_t k = 0; k < np; ++k) add_point(m, poly[pick[k]] + nf * (0.5f * depth[pick[k]]), depth[pick[k]]);
    return m;
}

} // namespace phys
