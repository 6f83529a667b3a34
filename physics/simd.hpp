#pragma once
// Host only (NVRTC never includes it): four floats to a vector instruction,
// for the module's CPU batches (ray_batch.hpp, solve_batch.hpp). GCC's and
// Clang's vector extensions: SSE2 on x86-64, NEON on Arm. Each operation is
// IEEE per lane, as the scalar one it stands for, so a batch written with
// the scalar code's operations in the scalar code's order gives its bits.

#include "ecs/base.hpp"
#include "physics/math.hpp"

namespace phys::detail {
using orrery::int32_t;

/// Four floats, or four lane masks (-1 or 0), of one vector register.
using V4f = float __attribute__((vector_size(16)));
using V4i = int32_t __attribute__((vector_size(16)));
/// m ? a : b per lane.
inline V4f pick(V4i m, V4f a, V4f b) { return V4f((m & V4i(a)) | (~m & V4i(b))); }
/// m ? 0 : a per lane.
inline V4f unless(V4i m, V4f a) { return V4f(~m & V4i(a)); }
/// m ? -a : a per lane (negation flips the sign bit alone, as the scalar's).
inline V4f negate_where(V4i m, V4f a) { return V4f(V4i(a) ^ (m & V4i{INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN})); }
/// Whether every lane of m is set.
inline bool all(V4i m) { return (m[0] & m[1] & m[2] & m[3]) != 0; }
/// f on every lane.
inline V4f splat(float f) { return V4f{f, f, f, f}; }

/// Four floats from p, which need not be aligned.
inline V4f load4(const float* p) {
    V4f v;
    __builtin_memcpy(&v, p, sizeof v);
    return v;
}
inline void store4(float* p, V4f v) { __builtin_memcpy(p, &v, sizeof v); }

/// Rows r0..r3 become columns: afterwards r_k holds element k of each row.
inline void transpose4(V4f& r0, V4f& r1, V4f& r2, V4f& r3) {
    const V4f t0 = __builtin_shufflevector(r0, r1, 0, 4, 1, 5), t1 = __builtin_shufflevector(r2, r3, 0, 4, 1, 5);
    const V4f t2 = __builtin_shufflevector(r0, r1, 2, 6, 3, 7), t3 = __builtin_shufflevector(r2, r3, 2, 6, 3, 7);
    r0 = __builtin_shufflevector(t0, t1, 0, 1, 4, 5), r1 = __builtin_shufflevector(t0, t1, 2, 3, 6, 7);
    r2 = __builtin_shufflevector(t2, t3, 0, 1, 4, 5), r3 = __builtin_shufflevector(t2, t3, 2, 3, 6, 7);
}

/// out[k] = float k of each of the four rows p[0..3] (k < N, N a multiple of
/// four; N floats are read at each row).
template <uint32_t N> inline void columns(const float* const p[4], V4f* out) {
    static_assert(N % 4 == 0, "whole vectors");
    for (uint32_t o = 0; o < N; o += 4) {
        V4f r0 = load4(p[0] + o), r1 = load4(p[1] + o), r2 = load4(p[2] + o), r3 = load4(p[3] + o);
        transpose4(r0, r1, r2, r3);
        out[o] = r0, out[o + 1] = r1, out[o + 2] = r2, out[o + 3] = r3;
    }
}

/// math.hpp's mul_add per lane: a * b + c, rounded once with ORRERY_PHYS_FMA.
[[gnu::always_inline]] inline V4f mul_add(V4f a, V4f b, V4f c) {
#if ORRERY_PHYS_FMA
    return V4f{phys::mul_add(a[0], b[0], c[0]), phys::mul_add(a[1], b[1], c[1]), phys::mul_add(a[2], b[2], c[2]),
               phys::mul_add(a[3], b[3], c[3])};
#else
    return a * b + c;
#endif
}

/// A Vec3 per lane, and the scalar Vec3's operations on it (math.hpp's, in their order).
struct V3x4 {
    V4f x, y, z;
};
inline V3x4 operator+(V3x4 a, V3x4 b) { return {a.x + b.x, a.y + b.y, a.z + b.z}; }
inline V3x4 operator-(V3x4 a, V3x4 b) { return {a.x - b.x, a.y - b.y, a.z - b.z}; }
inline V3x4 operator-(V3x4 a) { return {-a.x, -a.y, -a.z}; }
inline V3x4 operator*(V3x4 a, V4f s) { return {a.x * s, a.y * s, a.z * s}; }
inline V3x4 mul(V3x4 a, V3x4 b) { return {a.x * b.x, a.y * b.y, a.z * b.z}; }
[[gnu::always_inline]] inline V3x4 mul_add(V3x4 a, V4f s, V3x4 c) {
    return {mul_add(a.x, s, c.x), mul_add(a.y, s, c.y), mul_add(a.z, s, c.z)};
}
[[gnu::always_inline]] inline V3x4 mul_add(V3x4 a, V3x4 b, V3x4 c) {
    return {mul_add(a.x, b.x, c.x), mul_add(a.y, b.y, c.y), mul_add(a.z, b.z, c.z)};
}
[[gnu::always_inline]] inline V4f dot(V3x4 a, V3x4 b) { return mul_add(a.z, b.z, mul_add(a.y, b.y, a.x * b.x)); }
[[gnu::always_inline]] inline V3x4 cross(V3x4 a, V3x4 b) {
    return {mul_add(a.y, b.z, -(a.z * b.y)), mul_add(a.z, b.x, -(a.x * b.z)), mul_add(a.x, b.y, -(a.y * b.x))};
}
inline V3x4 pick(V4i m, V3x4 a, V3x4 b) { return {pick(m, a.x, b.x), pick(m, a.y, b.y), pick(m, a.z, b.z)}; }
/// math.hpp's max_f and abs_of per lane (abs_of(-0) is -0, as there).
inline V4f max4(V4f a, V4f b) { return pick(a < b, b, a); }
inline V4f abs4(V4f x) { return negate_where(x < splat(0.0f), x); }

} // namespace phys::detail
