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

/// Distance along unit `dir` from `o` to an oriented box (half extents e, centre
/// c, orientation q): the slab test in the box frame; 0 when o is inside.
ORRERY_HD inline float ray_box(Vec3 o, Vec3 dir, Vec3 c, Quat q, Vec3 e) {
    Vec3 lo = phys::unrotate(q, o - c), ld = phys::unrotate(q, dir);
    float t0 = 0.0f, t1 = kNoHit;
    for (uint32_t i = 0; i < 3; ++i) {
        float p = phys::axis_of(lo, i), d = phys::axis_of(ld, i), h = phys::axis_of(e, i);
        if (phys::abs_of(d) < 1e-12f) {
            if (p < -h || p > h) return kNoHit;
            continue;
        }
        float inv = 1.0f / d, a = (-h - p) * inv, b = (h - p) * inv;
        if (a > b) {
            float s = a;
            a = b, b = s;
        }
        t0 = phys::max_f(t0, a);
        t1 = phys::min_f(t1, b);
        if (t0 > t1) return kNoHit;
    }
    return t0;
}

/// Distance from `o` along `dir` to `shape` placed at pose (x, q); planes never count.
ORRERY_HD inline float ray_shape(Vec3 o, Vec3 dir, const phys::Shape& s, Vec3 x, Quat q) {
    switch (s.kind) {
    case phys::ShapeKind::kSphere: return ray_sphere(o, dir, x, s.dims.x);
    case phys::ShapeKind::kBox: return ray_box(o, dir, x, q, s.dims);
    default: return kNoHit;
    }
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
