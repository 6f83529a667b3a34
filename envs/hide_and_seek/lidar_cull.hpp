#pragma once
// Host only (NVRTC never includes it): which scene bodies each of an agent's
// horizontal lidar rays can meet, worked out once per agent from the bodies'
// azimuths, so the CPU's ray loop (one lane per world) skips the bodies whose
// bounding-sphere test (ray_body) is certain to reject the ray. The GPU runs
// one ray per lane and keeps the plain loop over every body.

#include <cmath>

#include "envs/hide_and_seek/rays.hpp"

namespace hide_and_seek {
using orrery::int64_t;
using orrery::uint64_t;

inline constexpr uint32_t kFanRays = 30; ///< kLidarRays (hide_and_seek.hpp; checked there)
inline constexpr double kPiD = 3.14159265358979323846;

/// A fan of horizontal rays d_k at azimuths first + 2 pi k / 30, each within
/// `spread` radians of that; ok is false when the rays are not such a fan
/// (a component out of the plane, or not of unit length within 1e-4).
struct LidarFan {
    double first, spread;
    bool ok;
};

inline double wrap_angle(double a) { return a - 2.0 * kPiD * std::floor(a / (2.0 * kPiD) + 0.5); }

/// The fan of `dir` (the rays exactly as cast), azimuths from libm's atan2.
inline LidarFan lidar_fan(const Vec3 (&dir)[kFanRays]) {
    LidarFan fan{std::atan2(double(dir[0].y), double(dir[0].x)), 0.0, true};
    for (uint32_t k = 0; k < kFanRays; ++k) {
        const double x = dir[k].x, y = dir[k].y, len2 = x * x + y * y;
        fan.ok = fan.ok && dir[k].z == 0.0f && std::fabs(len2 - 1.0) <= 0.5e-4; // 1e-4 below
        double off = wrap_angle(std::atan2(y, x) - fan.first - 2.0 * kPiD * k / kFanRays);
        fan.spread = std::fmax(fan.spread, std::fabs(off));
    }
    fan.ok = fan.ok && fan.spread < 1e-3;
    return fan;
}

/// The rays k of `fan` whose azimuth may lie within `half` of `centre` (slack included).
inline uint32_t fan_rays_within(const LidarFan& fan, double centre, double half) {
    const double step = 2.0 * kPiD / kFanRays, slack = fan.spread + 1e-9;
    const double lo = std::ceil((centre - half - slack - fan.first) / step - 1e-9);
    const double hi = std::floor((centre + half + slack - fan.first) / step + 1e-9);
    if (!(hi - lo < kFanRays - 1)) return (1u << kFanRays) - 1; // also NaN
    if (hi < lo) return 0;
    // rays lo..hi (mod 30): a run of hi - lo + 1 bits from lo mod 30, wrapped
    const int64_t first = int64_t(lo) % int64_t(kFanRays);
    const uint64_t run = ((uint64_t(1) << uint32_t(hi - lo + 1)) - 1) << uint32_t(first < 0 ? first + kFanRays : first);
    return uint32_t((run | (run >> kFanRays)) & ((uint64_t(1) << kFanRays) - 1));
}

/// The rays of `fan` from `o` that may pass ray_body's bounding-sphere test
/// of `b` (with any best <= range): all of them unless the test is certain to
/// reject by `aside` or `behind`. libm may be used here: the answer only has
/// to be conservative, and the slack below covers ray_body's float rounding.
///
/// With m = b.x - o (the same float subtraction as ray_body), h = |m_xy|,
/// r = b.bound, u = 2^-24, a ray d (d.z = 0, 1 - 1e-4 <= |d|^2 <= 1 + 1e-4)
/// at angle D from m_xy has ray_body's dot(m, d) within 2u h |d| of
/// h |d| cos D, dot(m, m) >= h^2 (1 - 3u), and so
/// - `aside` holds when |cos D| < C = sqrt(((1 - 3u) - r^2 (1 + 3u) / h^2)
///   / ((1 + u)(1 + 1e-4))) - 2u (dot(m, m) - proj^2 then exceeds r^2
///   after rounding), and
/// - `behind` holds when cos D < -B, B = r / (h sqrt(1 - 1e-4)) + 2u.
/// Constants below round these up (1e-6 for 3u, 1e-9 for libm and double
/// rounding, far more than either needs).
inline uint32_t lidar_rays_of(const RayBody& b, Vec3 o, const LidarFan& fan) {
    constexpr uint32_t kAll = (1u << kFanRays) - 1;
    constexpr double kEta = 1e-4, kGamma = 1e-6;
    const Vec3 m = b.body.x - o;
    const double mx = m.x, my = m.y, r = b.bound, h2 = mx * mx + my * my;
    const bool tame = std::fabs(m.x) < 1e15f && std::fabs(m.y) < 1e15f && std::fabs(m.z) < 1e15f && r >= 0.0 &&
                      r < 1e15 && h2 > 1e-12; // finite, no overflow, away from the centre
    if (!tame) return kAll;
    const double h = std::sqrt(h2), phi = std::atan2(my, mx);
    const double k2 = ((1.0 - kGamma) - r * r * (1.0 + kGamma) / h2 * (1.0 + 1e-9)) / ((1.0 + kGamma) * (1.0 + kEta));
    const double c = k2 > 0.0 ? std::sqrt(k2) - kGamma - 1e-9 : -1.0;
    const double bb = r / (h * std::sqrt(1.0 - kEta)) * (1.0 + 1e-9) + kGamma + 1e-9;
    if (c <= 0.0) // no `aside`: only `behind` (cos D < -B) rejects
        return bb >= 1.0 ? kAll : fan_rays_within(fan, phi, kPiD - std::acos(bb));
    const double beta = std::acos(c) + 1e-9;
    uint32_t mask = fan_rays_within(fan, phi, beta); // cos D >= C
    if (bb >= c) {                                   // -B <= cos D <= -C: |D| in [pi - beta, pi - nu]
        const double nu = bb >= 1.0 ? 0.0 : std::fmax(0.0, std::acos(bb) - 1e-9);
        const double mid = kPiD - (beta + nu) / 2.0, half = (beta - nu) / 2.0;
        mask |= fan_rays_within(fan, phi + mid, half) | fan_rays_within(fan, phi - mid, half);
    }
    return mask;
}

/// For each ray of `fan`, bit i set when scene body i may pass its bounding
/// test (the body whose index is `skip` never); ok is false when the fan is
/// not one or the scene exceeds 64 bodies: cast through every body then.
struct LidarCandidates {
    uint64_t bodies[kFanRays];
    bool ok;
};
inline LidarCandidates lidar_candidates(const RayBody* bodies, uint32_t n, Vec3 o, uint32_t skip, const LidarFan& fan) {
    LidarCandidates c{};
    c.ok = fan.ok && n <= 64;
    if (!c.ok) return c;
    for (uint32_t i = 0; i < n; ++i) {
        if (bodies[i].index == skip) continue;
        for (uint32_t rays = lidar_rays_of(bodies[i], o, fan); rays; rays &= rays - 1)
            c.bodies[__builtin_ctz(rays)] |= uint64_t(1) << i;
    }
    return c;
}

} // namespace hide_and_seek
