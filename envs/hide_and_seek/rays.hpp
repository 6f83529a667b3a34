#pragma once
// The world's bodies as rays see them, gathered once per step into a compact
// list (the ray scene) so lidar, vision and rewards walk it instead of the
// entity tables. Each ray tests a body's bounding sphere first, then the
// physics module's exact shape test (physics/query.hpp: MuJoCo's mj_ray
// conventions; the ramps' wedge hulls read from the shared hull table, passed
// as `hulls`: phys::hull_set(ctx)). Plain float code in a fixed order (both
// backends agree).

#include "physics/query.hpp"

namespace hide_and_seek {
using orrery::uint32_t;
using phys::Quat;
using phys::Vec3;

inline constexpr float kNoHit = 3.0e38f;

/// A body in the ray scene: its placed shape, bounding radius and Entity::index.
struct RayBody {
    phys::Placed body;
    float bound;
    uint32_t index;
};
static_assert(sizeof(RayBody) == 52);

ORRERY_HD inline RayBody ray_body_of(const phys::Shape& s, Vec3 x, Quat q, uint32_t index, const phys::HullSet& hulls) {
    return {{s, x, q}, phys::detail::query_bound(s, hulls), index};
}

/// The bounding-sphere test of a body of radius `bound` whose centre is m
/// from the ray's origin (mm = dot(m, m)) and at `proj` = dot(m, dir) along
/// it: behind the ray, beyond `best`, or aside of it.
ORRERY_HD inline bool bound_misses(float proj, float mm, float bound, float best) {
    // One branch for the three rejections (each is plain float arithmetic on
    // finite values, so evaluating all of them changes no answer; it spares
    // the CPU two hard-to-predict branches per body).
    bool behind = proj + bound<0.0f, beyond = proj - bound> best;
    bool aside = mm - proj * proj > bound * bound;
    return behind | beyond | aside;
}

/// Whether the ray from `o` along unit `dir` misses b's bounding sphere or
/// meets it beyond `best` (ray_body's test before the exact one).
ORRERY_HD inline bool misses_bound(const RayBody& b, Vec3 o, Vec3 dir, float best) {
    Vec3 m = b.body.x - o;
    return bound_misses(phys::dot(m, dir), phys::dot(m, m), b.bound, best);
}

/// Distance along unit `dir` from `o` to body b (where it leaves b when o is
/// inside), or kNoHit; a body whose bounding sphere the ray misses, or meets
/// beyond `best`, is skipped before the exact test.
/// `local_origin`: o in b's frame, made once by a caller casting many rays
/// from o (phys::ray_distance's; the same bits), or null.
ORRERY_HD inline float ray_body(const RayBody& b, Vec3 o, Vec3 dir, float best, const phys::HullSet& hulls,
                                const Vec3* local_origin = nullptr) {
    if (misses_bound(b, o, dir, best)) return kNoHit;
    float t = phys::ray_distance(b.body, o, dir, best, hulls, local_origin); // ray_shape's distance, no normal
    return t < 0.0f ? kNoHit : t;
}

} // namespace hide_and_seek
