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
