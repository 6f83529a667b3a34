#pragma once
// Vectors, quaternions and the few transcendental functions physics needs,
// written in plain float arithmetic with a fixed evaluation order, so g++
// (-ffp-contract=off) and NVRTC (-fmad=false) give bitwise-equal results.
// sqrtf and division are IEEE-exact on both; sin/cos are ours, not libm's.

#include "ecs/base.hpp"

namespace phys {
using orrery::int32_t;
using orrery::uint32_t;

inline constexpr float kPi = 3.14159265358979f;

// Inlined wherever the host compiler meets it: GCC's inliner left rotate out
// of line in the solver's integrate pass once the unit held the CPU's batch
// solve (physics/solve_batch.hpp), and the calls cost 2 % of hide-and-seek's
// CPU step. NVRTC decides for itself.
#if defined(ORRERY_DEVICE_CODE)
#define ORRERY_PHYS_INLINE
#else
#define ORRERY_PHYS_INLINE [[gnu::always_inline]]
#endif

/// IEEE square root (correctly rounded on both backends).
ORRERY_HD inline float sqrt_of(float x) {
#if defined(__CUDACC_RTC__) || defined(__CUDACC__)
    return sqrtf(x);
#else
    return __builtin_sqrtf(x);
#endif
}
// ORRERY_PHYS_FMA=1 (a define of both compilers: NVRTC's through
// ORRERY_NVRTC_OPTIONS, the host's through the build) rounds the module's
// products and sums written as mul_add once, as one fused multiply-add (IEEE's
// fma: the same bits on both backends); 0 rounds them twice, as written. With
// 0 every mul_add below gives the bits of the plain expression it stands for.
#ifndef ORRERY_PHYS_FMA
#define ORRERY_PHYS_FMA 0
#endif
/// a * b + c.
ORRERY_PHYS_INLINE ORRERY_HD inline float mul_add(float a, float b, float c) {
#if ORRERY_PHYS_FMA && (defined(__CUDACC_RTC__) || defined(__CUDACC__))
    return fmaf(a, b, c);
#elif ORRERY_PHYS_FMA
    return __builtin_fmaf(a, b, c);
#else
    return a * b + c;
#endif
}
ORRERY_HD inline float abs_of(float x) { return x < 0.0f ? -x : x; }
ORRERY_HD inline float min_f(float a, float b) { return a < b ? a : b; }
ORRERY_HD inline float max_f(float a, float b) { return a < b ? b : a; }
ORRERY_HD inline float clamp_f(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

struct SinCos {
    float s, c;
};

/// sin and cos of x (radians, |x| < 1e5): Cody-Waite reduction to [-pi/4, pi/4]
/// and minimax polynomials (error < 2 ulp there), the same bits on CPU and GPU.
ORRERY_HD inline SinCos sin_cos(float x) {
    float k = x * 0.636619772f; // 2/pi
    int32_t q = int32_t(k < 0.0f ? k - 0.5f : k + 0.5f);
    float fq = float(q);
    float r = x - fq * 1.5703125f; // pi/2 split in three exactly representable parts
    r = r - fq * 4.83751297e-4f;
    r = r - fq * 7.54978995e-8f;
    float r2 = r * r;
    float s = r + r * r2 * (-1.66666546e-1f + r2 * (8.33216087e-3f + r2 * (-1.95152959e-4f)));
    float c = 1.0f - 0.5f * r2 + r2 * r2 * (4.16666456e-2f + r2 * (-1.38873163e-3f + r2 * 2.44331571e-5f));
    switch (q & 3) {
    case 0: return {s, c};
    case 1: return {c, -s};
    case 2: return {-s, -c};
    default: return {-c, s};
    }
}

struct Vec3 {
    float x, y, z;
};

ORRERY_HD inline Vec3 operator+(Vec3 a, Vec3 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
ORRERY_HD inline Vec3 operator-(Vec3 a, Vec3 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
ORRERY_HD inline Vec3 operator-(Vec3 a) { return {-a.x, -a.y, -a.z}; }
ORRERY_HD inline Vec3 operator*(Vec3 a, float s) { return {a.x * s, a.y * s, a.z * s}; }
ORRERY_HD inline Vec3 operator*(float s, Vec3 a) { return {a.x * s, a.y * s, a.z * s}; }
ORRERY_HD inline Vec3& operator+=(Vec3& a, Vec3 b) { return a = a + b; }
ORRERY_HD inline Vec3& operator-=(Vec3& a, Vec3 b) { return a = a - b; }
/// Component-wise product (per-axis inverse masses, locks).
ORRERY_HD inline Vec3 mul(Vec3 a, Vec3 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
/// a * s + c.
ORRERY_PHYS_INLINE ORRERY_HD inline Vec3 mul_add(Vec3 a, float s, Vec3 c) {
    return {mul_add(a.x, s, c.x), mul_add(a.y, s, c.y), mul_add(a.z, s, c.z)};
}
/// mul(a, b) + c.
ORRERY_PHYS_INLINE ORRERY_HD inline Vec3 mul_add(Vec3 a, Vec3 b, Vec3 c) {
    return {mul_add(a.x, b.x, c.x), mul_add(a.y, b.y, c.y), mul_add(a.z, b.z, c.z)};
}
ORRERY_PHYS_INLINE ORRERY_HD inline float dot(Vec3 a, Vec3 b) {
    return mul_add(a.z, b.z, mul_add(a.y, b.y, a.x * b.x));
}
ORRERY_PHYS_INLINE ORRERY_HD inline Vec3 cross(Vec3 a, Vec3 b) {
    return {mul_add(a.y, b.z, -(a.z * b.y)), mul_add(a.z, b.x, -(a.x * b.z)), mul_add(a.x, b.y, -(a.y * b.x))};
}
ORRERY_HD inline float length(Vec3 a) { return sqrt_of(dot(a, a)); }
/// Whether any coordinate of a is other than zero (exactly, no rounding).
ORRERY_HD inline bool nonzero(Vec3 a) { return a.x != 0.0f || a.y != 0.0f || a.z != 0.0f; }
/// a / |a|, or `fallback` when a is (nearly) zero.
ORRERY_HD inline Vec3 normalize_or(Vec3 a, Vec3 fallback) {
    float l = length(a);
    return l > 1e-12f ? a * (1.0f / l) : fallback;
}
/// Component i (0, 1, 2) of a.
ORRERY_HD inline float axis_of(Vec3 a, uint32_t i) { return i == 0 ? a.x : (i == 1 ? a.y : a.z); }

/// Unit quaternion w + xi + yj + zk.
struct Quat {
    float w, x, y, z;
};

ORRERY_HD inline Quat operator*(Quat a, Quat b) {
    return {mul_add(-a.z, b.z, mul_add(-a.y, b.y, mul_add(-a.x, b.x, a.w * b.w))),
            mul_add(-a.z, b.y, mul_add(a.y, b.z, mul_add(a.x, b.w, a.w * b.x))),
            mul_add(a.z, b.x, mul_add(a.y, b.w, mul_add(-a.x, b.z, a.w * b.y))),
            mul_add(a.z, b.w, mul_add(-a.y, b.x, mul_add(a.x, b.y, a.w * b.z)))};
}
ORRERY_HD inline Quat conj(Quat q) { return {q.w, -q.x, -q.y, -q.z}; }
ORRERY_HD inline Quat normalize(Quat q) {
    float l = sqrt_of(mul_add(q.z, q.z, mul_add(q.y, q.y, mul_add(q.x, q.x, q.w * q.w))));
    if (l < 1e-12f) return {1.0f, 0.0f, 0.0f, 0.0f};
    float s = 1.0f / l;
    return {q.w * s, q.x * s, q.y * s, q.z * s};
}
/// v rotated by unit quaternion q.
ORRERY_PHYS_INLINE ORRERY_HD inline Vec3 rotate(Quat q, Vec3 v) {
    Vec3 u{q.x, q.y, q.z};
    Vec3 t = cross(u, v) * 2.0f;
    return mul_add(t, q.w, v) + cross(u, t);
}
/// v rotated by the inverse of q (world to body frame).
ORRERY_PHYS_INLINE ORRERY_HD inline Vec3 unrotate(Quat q, Vec3 v) { return rotate(conj(q), v); }
/// Rotation of `angle` radians about unit `axis`.
ORRERY_HD inline Quat axis_angle(Vec3 axis, float angle) {
    SinCos h = sin_cos(0.5f * angle);
    return {h.c, axis.x * h.s, axis.y * h.s, axis.z * h.s};
}
/// q advanced by angular velocity w over time h (first order, renormalised).
ORRERY_HD inline Quat integrate(Quat q, Vec3 w, float h) {
    Quat d = Quat{0.0f, w.x, w.y, w.z} * q;
    float s = 0.5f * h;
    return normalize({mul_add(d.w, s, q.w), mul_add(d.x, s, q.x), mul_add(d.y, s, q.y), mul_add(d.z, s, q.z)});
}

} // namespace phys
