#pragma once
// Host only (NVRTC never includes it): which scene bodies each of an agent's
// lidar rays can meet, worked out once per agent, so the CPU's ray loop (one
// lane per world) skips the bodies whose bounding-sphere test (ray_body) is
// certain to reject the ray. The GPU runs one ray per lane and keeps the
// plain loop over every body.

#include "envs/hide_and_seek/rays.hpp"
#include "physics/ray_batch.hpp"

namespace hide_and_seek {
using orrery::uint64_t;
using phys::BoxRays;

inline constexpr uint32_t kFanRays = 30; ///< kLidarRays (hide_and_seek.hpp; checked there)

/// For each ray of `dir` from `o`, bit i set when scene body i passes the
/// bounding-sphere test with no hit found yet (the body whose index is
/// `skip` never): misses_bound's own arithmetic (bound_misses, the same
/// float operations in the same order), so a body left out is one that
/// ray_body rejects whatever its `best` (behind and aside do not depend on
/// it, and beyond only rejects more as `best` falls). ok is false when the
/// scene exceeds 64 bodies: cast through every body then.
///
/// The rays' 30 tests of a body are one loop over the rays' components,
/// which the compiler runs 4 or 8 rays a vector instruction: the earlier
/// lists bounded each body's azimuth with libm's atan2 and acos instead
/// (docs/benchmarks.md, "The lidar's lists by the bounding test itself").
/// `proj[i][k]`: body i's dot(m, dir[k]) as misses_bound makes it, for the
/// ray loop's `beyond` test (cast_listed), where a listed body is neither
/// behind nor aside.
struct LidarCandidates {
    uint64_t bodies[kFanRays];
    bool ok;
    float proj[64][kFanRays];
};
inline LidarCandidates lidar_candidates(const RayBody* bodies, uint32_t n, Vec3 o, uint32_t skip,
                                        const Vec3 (&dir)[kFanRays]) {
    LidarCandidates c;
    for (uint64_t& b : c.bodies) b = 0;
    c.ok = n <= 64;
    if (!c.ok) return c;
    float dx[kFanRays], dy[kFanRays], dz[kFanRays];
    for (uint32_t k = 0; k < kFanRays; ++k) dx[k] = dir[k].x, dy[k] = dir[k].y, dz[k] = dir[k].z;
    for (uint32_t i = 0; i < n; ++i) {
        if (bodies[i].index == skip) continue;
        const Vec3 m = bodies[i].body.x - o;
        const float mm = phys::dot(m, m), bound = bodies[i].bound;
        uint32_t keep[kFanRays];
        float* proj = c.proj[i];
        for (uint32_t k = 0; k < kFanRays; ++k) { // phys::dot(m, dir[k]), term by term
            proj[k] = m.x * dx[k] + m.y * dy[k] + m.z * dz[k];
            keep[k] = bound_misses(proj[k], mm, bound, kNoHit) ? 0u : 1u;
        }
        for (uint32_t k = 0; k < kFanRays; ++k) c.bodies[k] |= uint64_t(keep[k]) << i;
    }
    return c;
}

/// Ray k's nearest hit among the scene's unturned boxes (the walls, and a box
/// at yaw 0) that `c` lists for it, or `range`, in `first[k]`; returns the
/// boxes' bits (body i: bit i), which the caller's walk then leaves out.
/// Rays from o along dir; an unturned box reads them in the world's axes, as
/// ray_shape does on the host (into_box_frame), so each box's 30 exact tests
/// are one loop over the rays with no gather: box_surface_param's operations
/// four rays a vector (box_surface_param4, as BoxRays), taken where listed, ahead
/// (>= 0) and nearer. That is cast_in's answer over these boxes in any order:
/// a listed box's distance, when it beats the nearest so far, is the same
/// bits whatever the reach, and the bounding test's margin (query_bound)
/// rejects as beyond only boxes whose distance could not beat it.
/// Level rays (every dz == 0, the openai variant's) take the z slab as one
/// test per box: from outside it every ray misses, from inside it the z slab
/// never moves a ray's span (box_surface_param4_level, the same bits).
inline uint64_t nearest_unturned_boxes(const RayBody* bodies, uint32_t n, Vec3 o, uint32_t skip,
                                       const Vec3 (&dir)[kFanRays], const LidarCandidates& c, float range,
                                       float (&first)[kFanRays]) {
    using phys::detail::pick, phys::detail::splat, phys::detail::V4f, phys::detail::V4i;
    if (!c.ok) return 0; // no lists: the caller casts through every body
    constexpr uint32_t kV = (kFanRays + 3) / 4;
    V4f dx[kV], dy[kV], dz[kV], best[kV];
    for (uint32_t v = 0; v < kV; ++v)
        for (uint32_t l = 0; l < 4; ++l) { // lanes past the fan: a plain ray, never taken
            const uint32_t k = 4 * v + l;
            const Vec3 d = k < kFanRays ? dir[k] : Vec3{1.0f, 0.0f, 0.0f};
            dx[v][l] = d.x, dy[v][l] = d.y, dz[v][l] = d.z;
        }
    for (V4f& b : best) b = splat(range);
    const V4f zero = splat(0.0f);
    bool level = true; // every ray's dz == 0 (the openai variant's): the z slab is a test per box
    for (uint32_t k = 0; k < kFanRays; ++k) level &= dir[k].z == 0.0f;
    uint64_t boxes = 0;
    for (uint32_t i = 0; i < n; ++i) {
        const phys::Placed& b = bodies[i].body;
        if (b.shape.kind != phys::ShapeKind::kBox || !phys::detail::unturned(b.q) || bodies[i].index == skip) continue;
        boxes |= uint64_t(1) << i;
        uint32_t rays = 0; // the rays whose list holds box i
        for (uint32_t k = 0; k < kFanRays; ++k) rays |= uint32_t(c.bodies[k] >> i & 1u) << k;
        const Vec3 lo = phys::detail::into_box_frame(b.q, o - b.x); // ray_shape's local origin, the same bits
        if (level && (lo.z < -b.shape.dims.z || lo.z > b.shape.dims.z)) continue; // every ray dead: none taken
        const V4f ox = splat(lo.x), oy = splat(lo.y), oz = splat(lo.z);
        const V4f ex = splat(b.shape.dims.x), ey = splat(b.shape.dims.y), ez = splat(b.shape.dims.z);
        for (uint32_t v = 0; v < kV; ++v) {
            const uint32_t four = rays >> (4 * v) & 0xFu;
            if (!four) continue;
            const V4i on{-int32_t(four & 1u), -int32_t(four >> 1 & 1u), -int32_t(four >> 2 & 1u),
                         -int32_t(four >> 3 & 1u)};
            const V4f t = level ? phys::detail::box_surface_param4_level(ox, oy, dx[v], dy[v], ex, ey)
                                : phys::detail::box_surface_param4(ox, oy, oz, dx[v], dy[v], dz[v], ex, ey, ez);
            const V4i take = on & (t >= zero) & (t < best[v]);
            best[v] = pick(take, t, best[v]);
        }
    }
    for (uint32_t k = 0; k < kFanRays; ++k) first[k] = best[k / 4][k % 4];
    return boxes;
}

/// Rays along fixed directions (the openai variant's world-fixed lidar, the
/// same for every agent) in each scene body's frame, each made when a ray
/// first meets the body's shape test and kept for the world's other agents:
/// unrotate(q, dir), the bits the shape test makes itself.
struct LocalDirs {
    uint32_t made[64] = {}; ///< bit k: local[i][k] holds ray k in body i's frame
    Vec3 local[64][kFanRays];
    const Vec3* of(uint32_t i, uint32_t k, Quat q, Vec3 dir) {
        if (!(made[i] >> k & 1u)) local[i][k] = phys::unrotate(q, dir), made[i] |= 1u << k;
        return &local[i][k];
    }
};

} // namespace hide_and_seek
