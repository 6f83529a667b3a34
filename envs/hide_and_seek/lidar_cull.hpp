#pragma once
// Host only (NVRTC never includes it): which scene bodies each of an agent's
// lidar rays can meet, worked out once per agent, so the CPU's ray loop (one
// lane per world) skips the bodies whose bounding-sphere test (ray_body) is
// certain to reject the ray. The GPU runs one ray per lane and keeps the
// plain loop over every body.

#include "envs/hide_and_seek/rays.hpp"

namespace hide_and_seek {
using orrery::uint64_t;

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
struct LidarCandidates {
    uint64_t bodies[kFanRays];
    bool ok;
};
inline LidarCandidates lidar_candidates(const RayBody* bodies, uint32_t n, Vec3 o, uint32_t skip,
                                        const Vec3 (&dir)[kFanRays]) {
    LidarCandidates c{};
    c.ok = n <= 64;
    if (!c.ok) return c;
    float dx[kFanRays], dy[kFanRays], dz[kFanRays];
    for (uint32_t k = 0; k < kFanRays; ++k) dx[k] = dir[k].x, dy[k] = dir[k].y, dz[k] = dir[k].z;
    for (uint32_t i = 0; i < n; ++i) {
        if (bodies[i].index == skip) continue;
        const Vec3 m = bodies[i].body.x - o;
        const float mm = phys::dot(m, m), bound = bodies[i].bound;
        uint32_t keep[kFanRays];
        for (uint32_t k = 0; k < kFanRays; ++k) // phys::dot(m, dir[k]), term by term
            keep[k] = bound_misses(m.x * dx[k] + m.y * dy[k] + m.z * dz[k], mm, bound, kNoHit) ? 0u : 1u;
        for (uint32_t k = 0; k < kFanRays; ++k) c.bodies[k] |= uint64_t(keep[k]) << i;
    }
    return c;
}

} // namespace hide_and_seek
