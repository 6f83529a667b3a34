#pragma once
// Ray casts against the env's bodies, for lidar, vision, grab and lock. The
// physics module's query.hpp (ray casts over its bodies) is not in main yet:
// this is the small interface the env's systems call, so re-pointing it is a
// change here only. Plain float code in a fixed order (both backends agree).

#include "physics/physics.hpp"

namespace hide_and_seek {
using orrery::uint32_t;
using phys::Quat;
using phys::Vec3;

inline constexpr float kNoHit = 3.0e38f;

/// Distance along unit `dir` from `o` to the first point of a sphere of radius r
/// at c (0 when o is inside), or kNoHit.
ORRERY_HD inline float ray_sphere(Vec3 o, Vec3 dir, Vec3 c, float r) {
    Vec3 m = o - c;
    float b = phys::dot(m, dir), cc = phys::dot(m, m) - r * r;
    if (cc <= 0.0f) return 0.0f;
    if (b > 0.0f) return kNoHit;
    float disc = b * b - cc;
    if (disc < 0.0f) return kNoHit;
    return -b - phys::sqrt_of(disc);
}

/// A body as rays see it: every body here turns about z only (physics'
/// turn locks), so a box is its centre, half extents and yaw. Gathered once per
/// step into the world's ray scene; `bound` is a bounding sphere's radius.
struct RayBody {
    Vec3 c, e; ///< centre; half extents (box) or radius in e.x (sphere)
    float cos_yaw, sin_yaw, bound;
    uint32_t sphere; ///< 1: a sphere, 0: a box
    uint32_t index;  ///< the body's Entity::index
};
static_assert(sizeof(RayBody) == 44);

/// A RayBody for a sphere or box shape at pose (x, q) (q a turn about z).
ORRERY_HD inline RayBody ray_body_of(const phys::Shape& s, Vec3 x, Quat q, uint32_t index) {
    bool sphere = s.kind == phys::ShapeKind::kSphere;
    float bound = sphere ? s.dims.x : phys::length(s.dims);
    return {x, s.dims, q.w * q.w - q.z * q.z, 2.0f * q.w * q.z, bound + 1e-3f, sphere ? 1u : 0u, index};
}

/// Distance along unit `dir` from `o` to body b (0 when o is inside), or
/// kNoHit; bodies whose bounding sphere the ray misses, or meets beyond
/// `best`, are skipped first. Boxes: the slab test in the box's frame.
ORRERY_HD inline float ray_body(const RayBody& b, Vec3 o, Vec3 dir, float best) {
    Vec3 m = b.c - o;
    float proj = phys::dot(m, dir);
    if (proj + b.bound < 0.0f || proj - b.bound > best) return kNoHit;
    if (phys::dot(m, m) - proj * proj > b.bound * b.bound) return kNoHit;
    if (b.sphere) return ray_sphere(o, dir, b.c, b.e.x);
    Vec3 lo{-(b.cos_yaw * m.x + b.sin_yaw * m.y), b.sin_yaw * m.x - b.cos_yaw * m.y, -m.z};
    Vec3 ld{b.cos_yaw * dir.x + b.sin_yaw * dir.y, b.cos_yaw * dir.y - b.sin_yaw * dir.x, dir.z};
    float t0 = 0.0f, t1 = kNoHit;
    for (uint32_t i = 0; i < 3; ++i) {
        float p = phys::axis_of(lo, i), d = phys::axis_of(ld, i), h = phys::axis_of(b.e, i);
        if (phys::abs_of(d) < 1e-12f) {
            if (p < -h || p > h) return kNoHit;
            continue;
        }
        float inv = 1.0f / d, lo_t = (-h - p) * inv, hi_t = (h - p) * inv;
        t0 = phys::max_f(t0, phys::min_f(lo_t, hi_t));
        t1 = phys::min_f(t1, phys::max_f(lo_t, hi_t));
        if (t0 > t1) return kNoHit;
    }
    return t0;
}

/// Distance from point p to the surface of `shape` at (x, q) (0 inside): the
/// grab and lock range test (OpenAI measures from the agent's centre).
ORRERY_HD inline float distance_to_shape(Vec3 p, const phys::Shape& s, Vec3 x, Quat q) {
    if (s.kind == phys::ShapeKind::kSphere) return phys::max_f(phys::length(p - x) - s.dims.x, 0.0f);
    if (s.kind != phys::ShapeKind::kBox) return kNoHit;
    Vec3 l = phys::unrotate(q, p - x);
    Vec3 d{phys::max_f(phys::abs_of(l.x) - s.dims.x, 0.0f), phys::max_f(phys::abs_of(l.y) - s.dims.y, 0.0f),
           phys::max_f(phys::abs_of(l.z) - s.dims.z, 0.0f)};
    return phys::length(d);
}

} // namespace hide_and_seek
