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

/// Four floats, or four lane masks (-1 or 0), of one vector register
/// (GCC's and Clang's vector extensions; SSE2 on x86-64, NEON on Arm).
using V4f = float __attribute__((vector_size(16)));
using V4i = int32_t __attribute__((vector_size(16)));
/// m ? a : b per lane.
inline V4f pick(V4i m, V4f a, V4f b) { return V4f((m & V4i(a)) | (~m & V4i(b))); }

/// phys::detail::box_surface_param for four rays at once: the same operations
/// on each lane (IEEE per lane, as the scalar ones), so the same bits.
inline void slab_step4(V4f o, V4f d, V4f e, V4f& enter, V4f& exit, V4i& dead) {
    const V4f t1 = (-e - o) / d, t2 = (e - o) / d; // a flat lane's quotients are not read
    const V4i swap = t1 > t2;
    const V4f lo = pick(swap, t2, t1), hi = pick(swap, t1, t2);
    const V4i flat = d == V4f{0.0f, 0.0f, 0.0f, 0.0f};
    dead |= flat & ((o < -e) | (o > e));
    enter = pick(~flat & (lo > enter), lo, enter);
    exit = pick(~flat & (hi < exit), hi, exit);
    const V4f zero{0.0f, 0.0f, 0.0f, 0.0f}, far = zero + phys::detail::kFar;
    dead |= (enter > exit) | (exit < zero) | (enter > far);
}

/// An agent's listed (ray, box) pairs in the ray loop's order (ray by ray,
/// each ray's bodies in scene order), each box's exact test made for all of
/// them four at a time (solve): box_span's operations with no branch
/// (phys::detail::box_surface_param, slab_step4). The ray loop (cast_listed)
/// then reads pair p's distance in its turn and applies the reach it has then
/// (a value past it is a miss, as box_span's early exit would have made it),
/// so the answer is the same bits. A box pair past the capacity is tested in
/// the ray loop as before.
struct BoxRays {
    static constexpr uint32_t kCapacity = 512;
    uint32_t n = 0;
    V4f ox[kCapacity / 4], oy[kCapacity / 4], oz[kCapacity / 4], dx[kCapacity / 4], dy[kCapacity / 4],
        dz[kCapacity / 4], ex[kCapacity / 4], ey[kCapacity / 4], ez[kCapacity / 4], t[kCapacity / 4];
    /// Ray origin o and direction d in the box's frame, e its half extents.
    void push(Vec3 o, Vec3 d, Vec3 e) {
        if (n == kCapacity) return;
        const uint32_t v = n / 4, k = n % 4;
        ox[v][k] = o.x, oy[v][k] = o.y, oz[v][k] = o.z, dx[v][k] = d.x, dy[v][k] = d.y, dz[v][k] = d.z;
        ex[v][k] = e.x, ey[v][k] = e.y, ez[v][k] = e.z;
        ++n;
    }
    float distance(uint32_t p) const { return t[p / 4][p % 4]; }
    void solve() {
        for (uint32_t p = n; p % 4 != 0; ++p) { // the last vector's unused lanes: a plain ray, not read
            const uint32_t v = p / 4, k = p % 4;
            ox[v][k] = oy[v][k] = oz[v][k] = dy[v][k] = dz[v][k] = 0.0f;
            dx[v][k] = ex[v][k] = ey[v][k] = ez[v][k] = 1.0f;
        }
        const V4f zero{0.0f, 0.0f, 0.0f, 0.0f}, none = zero - 1.0f;
        for (uint32_t v = 0; v < (n + 3) / 4; ++v) {
            V4f enter = zero - phys::detail::kFar, exit = zero + phys::detail::kFar;
            V4i dead{0, 0, 0, 0};
            slab_step4(ox[v], dx[v], ex[v], enter, exit, dead);
            slab_step4(oy[v], dy[v], ey[v], enter, exit, dead);
            slab_step4(oz[v], dz[v], ez[v], enter, exit, dead);
            t[v] = pick(dead, none, pick(enter >= zero, enter, exit));
        }
    }
};

} // namespace hide_and_seek
