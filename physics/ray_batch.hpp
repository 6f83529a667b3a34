#pragma once
// Host only (NVRTC never includes it): many rays against boxes at once, for
// callers on one CPU thread casting batches of rays (hide-and-seek's lidar).
// The same float operations per ray as query.hpp's box test, on four rays a
// vector instruction, so the same bits.

#include "physics/query.hpp"
#include "physics/simd.hpp"

namespace phys {
using orrery::int32_t;

namespace detail {
/// box_surface_param for four rays at once: the same operations
/// on each lane (IEEE per lane, as the scalar ones), so the same bits.
inline void slab_step4(V4f o, V4f d, V4f e, V4f& enter, V4f& exit, V4i& dead) {
    const V4f t1 = (-e - o) / d, t2 = (e - o) / d; // a flat lane's quotients are not read
    const V4i swap = t1 > t2;
    const V4f lo = pick(swap, t2, t1), hi = pick(swap, t1, t2);
    const V4i flat = d == V4f{0.0f, 0.0f, 0.0f, 0.0f};
    dead |= flat & ((o < -e) | (o > e));
    enter = pick(~flat & (lo > enter), lo, enter);
    exit = pick(~flat & (hi < exit), hi, exit);
    const V4f zero{0.0f, 0.0f, 0.0f, 0.0f}, far = zero + detail::kFar;
    dead |= (enter > exit) | (exit < zero) | (enter > far);
}

/// box_surface_param for four rays at once (slab_step4 per axis): the
/// distance, or < 0 with no surface ahead. BoxRays and hide-and-seek's walls
/// (envs/hide_and_seek/lidar_cull.hpp) both take it from here.
inline V4f box_surface_param4(V4f ox, V4f oy, V4f oz, V4f dx, V4f dy, V4f dz, V4f ex, V4f ey, V4f ez) {
    const V4f zero{0.0f, 0.0f, 0.0f, 0.0f};
    V4f enter = zero - kFar, exit = zero + kFar;
    V4i dead{0, 0, 0, 0};
    slab_step4(ox, dx, ex, enter, exit, dead);
    slab_step4(oy, dy, ey, enter, exit, dead);
    slab_step4(oz, dz, ez, enter, exit, dead);
    return pick(dead, zero - 1.0f, pick(enter >= zero, enter, exit));
}
/// box_surface_param4 for level rays (every lane's dz == 0) from a point
/// inside the box's z slab (-ez <= oz <= ez): the z slab is then flat on
/// every lane, so it leaves enter and exit as they are, and its checks repeat
/// the y slab's; the x and y slabs alone give the same bits. A point outside
/// the z slab is dead on every lane (the caller skips the box).
inline V4f box_surface_param4_level(V4f ox, V4f oy, V4f dx, V4f dy, V4f ex, V4f ey) {
    const V4f zero{0.0f, 0.0f, 0.0f, 0.0f};
    V4f enter = zero - kFar, exit = zero + kFar;
    V4i dead{0, 0, 0, 0};
    slab_step4(ox, dx, ex, enter, exit, dead);
    slab_step4(oy, dy, ey, enter, exit, dead);
    return pick(dead, zero - 1.0f, pick(enter >= zero, enter, exit));
}

} // namespace detail

/// Rays against boxes, each in the box's own frame (ray_shape's local origin
/// and direction), their exact tests made four at a time (solve): box_span's
/// operations with no branch (detail::box_surface_param, slab_step4), the
/// distance or < 0 with no reach. A caller casting rays through a scene reads
/// ray p's distance in its turn against the reach it has then: a value past
/// it is a miss, as box_span's early exit would have made it, so its answer is
/// ray_distance's bits (hide-and-seek's CPU lidar gathers an agent's listed
/// (ray, box) pairs in its ray loop's order). Rays past the capacity are not
/// kept (n stays at kCapacity): the caller tests those itself.
struct BoxRays {
    static constexpr uint32_t kCapacity = 512;
    uint32_t n = 0;
    detail::V4f ox[kCapacity / 4], oy[kCapacity / 4], oz[kCapacity / 4], dx[kCapacity / 4], dy[kCapacity / 4],
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
        for (uint32_t v = 0; v < (n + 3) / 4; ++v)
            t[v] = detail::box_surface_param4(ox[v], oy[v], oz[v], dx[v], dy[v], dz[v], ex[v], ey[v], ez[v]);
    }
};

} // namespace phys
