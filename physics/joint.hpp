#pragma once
// Joints: welds (hide-and-seek's grab), hinges and sliders between two bodies
// or a body and the world. Systems make and break them in any step with the
// functions here; simulate() finds their bodies again each step and solves
// them as soft constraints inside the substeps, before the contacts, warm
// started from the impulses kept in the world's Joints list. solver.hpp
// includes this file at its end.

#include "physics/solver.hpp"

namespace phys {

inline constexpr uint32_t kNoBody = 0xFFFFFFFEu;  ///< a joint's body is not among this step's bodies
inline constexpr uint32_t kNoJoint = 0xFFFFFFFFu; ///< find_joint found none

// --- making and breaking (from a per-world system: one writer per world) -------------------

/// Rotation taking +z to unit `axis`.
ORRERY_HD inline Quat z_to(Vec3 axis) {
    if (axis.z < -0.999999f) return {0.0f, 1.0f, 0.0f, 0.0f}; // half a turn about x
    return normalize({1.0f + axis.z, -axis.y, axis.x, 0.0f}); // 1 + z.axis, z x axis
}

/// The pose of e now, the world frame for the null entity; `ok` false when e is stale or has no Pose.
struct PoseNow {
    Pose pose;
    bool ok;
};
ORRERY_HD inline PoseNow pose_now(Ctx& ctx, Entity e) {
    if (e.is_null()) return {{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 0.0f}}, true};
    const Pose* p = ctx.get<Pose>(e);
    if (!p) return {{{0.0f, 0.0f, 0.0f}, {1.0f, 0.0f, 0.0f, 0.0f}}, false};
    return {*p, true};
}

/// A joint of `kind` between a at pose pa and b at pose pb (either null: the
/// world, its pose the identity) whose frame sits at world point `anchor` with
/// its z axis along unit world `axis`: a hinge's angle and a slider's offset
/// are 0 in these poses. The axis turns with a, so a carries a slider's rail:
/// make a the world (or the heavier body) for a rail fixed in the world.
/// Set limits (limited()) or a tag before add_joint.
ORRERY_HD inline Joint joint_from(JointKind kind, Entity a, Pose pa, Entity b, Pose pb, Vec3 anchor, Vec3 axis) {
    Joint j{};
    Quat frame = z_to(axis);
    j.a = a, j.b = b, j.kind = kind;
    j.fa = {unrotate(pa.q, anchor - pa.p), conj(pa.q) * frame};
    j.fb = {unrotate(pb.q, anchor - pb.p), conj(pb.q) * frame};
    j.ia = j.ib = kNoBody;
    return j;
}

/// joint_from with the bodies' poses now. Returns a joint between two null
/// entities (which add_joint refuses) when either body is stale.
ORRERY_HD inline Joint joint_at(Ctx& ctx, JointKind kind, Entity a, Entity b, Vec3 anchor, Vec3 axis) {
    PoseNow pa = pose_now(ctx, a), pb = pose_now(ctx, b);
    if (!pa.ok || !pb.ok) return Joint{};
    return joint_from(kind, a, pa.pose, b, pb.pose, anchor, axis);
}

/// j with its hinge angle (rad) or slider offset (m) kept within [lower, upper].
ORRERY_HD inline Joint limited(Joint j, float lower, float upper) {
    j.flags |= kJointLimited;
    j.lower = lower, j.upper = upper;
    return j;
}

// A joint made or removed moves the GPU's cost hint at once
// (ORRERY_PHYS_JOINT_HINT=0, an NVRTC define: only simulate's own hint).
#ifndef ORRERY_PHYS_JOINT_HINT
#define ORRERY_PHYS_JOINT_HINT 1
#endif

/// Appends j to the world's joints. False when j joins a body to itself or
/// the world to the world, when the list is full (which records
/// ErrorCode::kBufferOverflow), or when the env did not declare j's kind
/// (PhysicsOptions::joint_kinds; records kErrorUndeclaredJoint).
ORRERY_HD inline bool add_joint(Ctx& ctx, const Joint& j) {
    if (j.a.index == j.b.index && j.a.gen == j.b.gen) return false;
    if (uint32_t(j.kind) > uint32_t(JointKind::kSlider) ||
        !(ctx.asset<Settings>()[0].joint_kinds & joint_kind_bit(j.kind))) {
        ctx.fail(kErrorUndeclaredJoint);
        return false;
    }
    if (!ctx.single_buffer<PhysicsWorld, Joints>().push(j)) return false;
    if (ORRERY_PHYS_JOINT_HINT) ctx.add_cost_hint(int32_t(kJointCost)); // this step's simulate solves it (step_cost)
    return true;
}

/// Welds b to a (either null: to the world) in the relative pose they have
/// now, about their midpoint (a body's centre, with the world): a grab.
/// False as add_joint, or when a body is stale.
ORRERY_HD inline bool weld(Ctx& ctx, Entity a, Entity b, uint32_t tag = 0) {
    PoseNow pa = pose_now(ctx, a), pb = pose_now(ctx, b);
    Vec3 mid = b.is_null() ? pa.pose.p : a.is_null() ? pb.pose.p : (pa.pose.p + pb.pose.p) * 0.5f;
    Joint j = joint_at(ctx, JointKind::kWeld, a, b, mid, {0.0f, 0.0f, 1.0f});
    j.tag = tag;
    return add_joint(ctx, j);
}

ORRERY_HD inline bool same_pair(const Joint& j, Entity a, Entity b) {
    auto eq = [](Entity x, Entity y) { return x.index == y.index && x.gen == y.gen; };
    return (eq(j.a, a) && eq(j.b, b)) || (eq(j.a, b) && eq(j.b, a));
}

/// Index of the first joint between a and b (either order), or kNoJoint.
ORRERY_HD inline uint32_t find_joint(Ctx& ctx, Entity a, Entity b) {
    Buffer<Joints> joints = ctx.single_buffer<PhysicsWorld, Joints>();
    for (uint32_t k = 0; k < joints.size(); ++k)
        if (same_pair(joints[k], a, b)) return k;
    return kNoJoint;
}

/// Removes every joint between a and b (either order), keeping the others'
/// order; returns how many went. A grab's release.
ORRERY_HD inline uint32_t remove_joints(Ctx& ctx, Entity a, Entity b) {
    Buffer<Joints> joints = ctx.single_buffer<PhysicsWorld, Joints>();
    uint32_t n = joints.size();
    joints.clear(); // compacted in place: each kept joint moves to an index at or below its own
    for (uint32_t k = 0; k < n; ++k) {
        Joint j = joints[k];
        if (!same_pair(j, a, b)) joints.push(j);
    }
    const uint32_t gone = n - joints.size();
    if (ORRERY_PHYS_JOINT_HINT) ctx.add_cost_hint(-int32_t(gone * kJointCost));
    return gone;
}

// --- the solver's part (called by simulate and step_bodies) --------------------------------

/// Index of e in this step's bodies, kWorldBody for the null entity, kNoBody when absent.
ORRERY_HD inline uint32_t body_index(Buffer<Bodies> bodies, Entity e) {
    if (e.is_null()) return kWorldBody;
    for (uint32_t i = 0; i < bodies.size(); ++i)
        if (bodies[i].entity.index == e.index && bodies[i].entity.gen == e.gen) return i;
    return kNoBody;
}

/// Finds each joint's bodies among this step's; joints whose body is gone
/// (destroyed, or not a body any more) are dropped, the rest keep their order.
ORRERY_HD inline void resolve_joints(Buffer<Bodies> bodies, Buffer<Joints> joints) {
    uint32_t n = joints.size();
    joints.clear();
    for (uint32_t k = 0; k < n; ++k) {
        Joint j = joints[k];
        j.ia = body_index(bodies, j.a);
        j.ib = body_index(bodies, j.b);
        if (j.ia != kNoBody && j.ib != kNoBody && !(j.ia == kWorldBody && j.ib == kWorldBody)) joints.push(j);
    }
}

/// The world as a body: static, at the origin, unmoved by any impulse.
ORRERY_HD inline SolverBody world_body() {
    SolverBody w{};
    w.kind = BodyKind::kStatic;
    w.q = w.q0 = {1.0f, 0.0f, 0.0f, 0.0f};
    return w;
}

/// Up to three constraint directions (world frame); `count` of them in use.
struct Rows {
    Vec3 dir[3];
    uint32_t count;
};
ORRERY_HD inline Rows world_rows() { return {{{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}}, 3}; }
/// The two directions across unit `axis` (what a hinge or slider constrains).
ORRERY_HD inline Rows rows_across(Vec3 axis) {
    Tangents t = tangents_of(axis);
    return {{t.t1, t.t2, axis}, 2};
}
/// v's part along the rows in use.
ORRERY_HD inline Vec3 project(const Rows& r, Vec3 v) {
    Vec3 out{0.0f, 0.0f, 0.0f};
    for (uint32_t i = 0; i < r.count; ++i) out += r.dir[i] * dot(r.dir[i], v);
    return out;
}
ORRERY_HD inline Vec3 times(const Vec3 K[3], Vec3 v) { return {dot(K[0], v), dot(K[1], v), dot(K[2], v)}; }

/// The impulse x (world frame, along the rows) with K x = rhs along the rows,
/// K symmetric positive semi-definite. A row along which neither body can
/// move (a zero diagonal: locked axes, static bodies) gets no impulse.
ORRERY_HD inline Vec3 solve_rows(const Vec3 K[3], const Rows& r, Vec3 rhs) {
    Vec3 kd[3];
    bool on[3];
    for (uint32_t i = 0; i < 3; ++i) {
        kd[i] = times(K, r.dir[i]);
        on[i] = i < r.count && dot(r.dir[i], kd[i]) > 0.0f;
    }
    // The system in the rows' basis; a row not in use is the identity's, with nothing to solve.
    Vec3 m[3];
    for (uint32_t k = 0; k < 3; ++k) {
        float e[3];
        for (uint32_t i = 0; i < 3; ++i) e[i] = on[k] && on[i] ? dot(r.dir[k], kd[i]) : (k == i ? 1.0f : 0.0f);
        m[k] = {e[0], e[1], e[2]};
    }
    Vec3 b{on[0] ? dot(r.dir[0], rhs) : 0.0f, on[1] ? dot(r.dir[1], rhs) : 0.0f, on[2] ? dot(r.dir[2], rhs) : 0.0f};
    // Nearly singular (motion allowed only along a direction between the rows,
    // as locked world axes across a tilted hinge give): each row on its own.
    float det = dot(m[0], cross(m[1], m[2])), diagonal = m[0].x * m[1].y * m[2].z;
    Vec3 x = det > 1e-4f * diagonal ? solve_3x3(m, b) : Vec3{b.x / m[0].x, b.y / m[1].y, b.z / m[2].z};
    return r.dir[0] * x.x + r.dir[1] * x.y + r.dir[2] * x.z;
}

/// The world-frame inverse inertias of a and b, summed: the angular constraints' K.
struct Mat3 {
    Vec3 row[3];
};
ORRERY_HD inline Mat3 angular_mass(const SolverBody& a, const SolverBody& b) {
    return {{a.inv_inertia_world[0] + b.inv_inertia_world[0], a.inv_inertia_world[1] + b.inv_inertia_world[1],
             a.inv_inertia_world[2] + b.inv_inertia_world[2]}};
}
/// K of a point constraint at offsets ra, rb: the change of b's point's
/// velocity relative to a's per unit impulse (symmetric, so its columns are its rows).
ORRERY_HD inline Mat3 point_mass(const SolverBody& a, const SolverBody& b, Vec3 ra, Vec3 rb) {
    Mat3 K;
    const Vec3 unit[3] = {{1.0f, 0.0f, 0.0f}, {0.0f, 1.0f, 0.0f}, {0.0f, 0.0f, 1.0f}};
    for (uint32_t i = 0; i < 3; ++i) {
        Vec3 e = unit[i];
        K.row[i] = mul(a.inv_mass_damped, e) + mul(b.inv_mass_damped, e) +
                   cross(inv_inertia_times(a, cross(ra, e)), ra) + cross(inv_inertia_times(b, cross(rb, e)), rb);
    }
    return K;
}

/// Turns a and b by angular impulse L (a gets -L, b gets +L).
ORRERY_HD inline void apply_angular(SolverBody& a, SolverBody& b, Vec3 L) {
    if (moves(a)) a.w -= inv_inertia_times(a, L);
    if (moves(b)) b.w += inv_inertia_times(b, L);
}

/// Where a joint's two frames are now: the anchors' offsets from each body's
/// centre, the frames' orientations, the free axis (a's frame z) and b's
/// anchor relative to a's.
struct JointGeometry {
    Vec3 ra, rb, axis, d;
    Quat qa, qb;
};
ORRERY_HD inline JointGeometry geometry_of(const SolverBody& a, const SolverBody& b, const Joint& j) {
    JointGeometry g;
    g.ra = rotate(a.q, j.fa.p), g.rb = rotate(b.q, j.fb.p);
    g.qa = a.q * j.fa.q, g.qb = b.q * j.fb.q;
    g.axis = rotate(g.qa, {0.0f, 0.0f, 1.0f});
    g.d = (b.x + g.rb) - (a.x + g.ra);
    // A slider's linear rows act at b's anchor, which a carries along its axis.
    if (j.kind == JointKind::kSlider) g.ra = g.ra + g.d;
    return g;
}

/// Angle (rad, in [-pi, pi]) of y / x's direction: octant reduction, then
/// atan(t) for |t| <= tan(pi/8) by its series to t^15 (error below 1e-7).
ORRERY_HD inline float angle_of(float y, float x) {
    float ax = abs_of(x), ay = abs_of(y);
    if (ax == 0.0f && ay == 0.0f) return 0.0f;
    bool swap = ay > ax;
    float t = swap ? ax / ay : ay / ax; // in [0, 1]
    float base = 0.0f;
    if (t > 0.41421356f) base = 0.25f * kPi, t = (t - 1.0f) / (t + 1.0f);
    float t2 = t * t;
    float p = -1.0f / 15.0f;
    p = p * t2 + 1.0f / 13.0f;
    p = p * t2 - 1.0f / 11.0f;
    p = p * t2 + 1.0f / 9.0f;
    p = p * t2 - 1.0f / 7.0f;
    p = p * t2 + 1.0f / 5.0f;
    p = p * t2 - 1.0f / 3.0f;
    float a = base + (t + t * t2 * p);
    if (swap) a = 0.5f * kPi - a;
    if (x < 0.0f) a = kPi - a;
    return y < 0.0f ? -a : a;
}

/// How far a joint is along its free axis: the hinge's angle of b's frame
/// about a's z (rad, in [-pi, pi]) or the slider's offset along it (m).
ORRERY_HD inline float joint_position(const JointGeometry& g, JointKind kind) {
    if (kind == JointKind::kSlider) return dot(g.axis, g.d);
    Quat r = conj(g.qa) * g.qb;
    if (r.w < 0.0f) r = {-r.w, -r.x, -r.y, -r.z};
    return 2.0f * angle_of(r.z, r.w); // the twist about z
}

// A weld (hide-and-seek's grab) solves its rows along the world axes
// directly (solve_weld): its K is the rows' system, the point constraint's K
// is made in closed form (weld_point_mass), and only the geometry a weld
// reads is computed. With ORRERY_PHYS_WELD_ROWS=0 (an NVRTC or compiler
// define, solver.hpp) it takes the general rows of solve_joint, the same
// model in other rounding (docs/perf-notes.md row 62).

/// Each substep starts from the impulses joint j last ended with.
ORRERY_HD inline void warm_start_joint(SolverBody& a, SolverBody& b, const Joint& j) {
    if (ORRERY_PHYS_WELD_ROWS && is_weld(j)) { // the anchors alone: the same bits as below
        apply_impulse(a, b, j.linear_impulse, rotate(a.q, j.fa.p), rotate(b.q, j.fb.p));
        apply_angular(a, b, j.angular_impulse);
        return;
    }
    JointGeometry g = geometry_of(a, b, j);
    Vec3 limit = g.axis * (j.lower_impulse - j.upper_impulse);
    apply_impulse(a, b, j.linear_impulse + (j.kind == JointKind::kSlider ? limit : Vec3{0, 0, 0}), g.ra, g.rb);
    apply_angular(a, b, j.angular_impulse + (j.kind == JointKind::kHinge ? limit : Vec3{0, 0, 0}));
}

/// A soft row's coefficients: the bias velocity for error C, and how much of
/// the rigid impulse and of the accumulated one it takes (solver.hpp's Softness).
struct RowSoftness {
    float bias, mass_scale, impulse_scale;
};
ORRERY_HD inline RowSoftness soft_row(float C, Softness soft, bool bias) {
    if (!bias) return {0.0f, 1.0f, 0.0f};
    return {soft.bias_rate * C, soft.mass_scale, soft.impulse_scale};
}

/// One side of a limit: C >= 0 wanted (C = position - lower, or upper -
/// position), cdot its rate, k the inverse mass along it; the accumulated
/// impulse stays >= 0. Speculative while apart, as contacts are. Returns the impulse to apply.
ORRERY_HD inline float solve_limit(float C, float cdot, float k, float& accumulated, float inv_h, Softness soft,
                                   bool bias) {
    if (k <= 0.0f) return 0.0f;
    RowSoftness s{0.0f, 1.0f, 0.0f};
    if (C > 0.0f)
        s.bias = C * inv_h;
    else if (bias)
        s = soft_row(C, soft, true);
    float impulse = -s.mass_scale * (cdot + s.bias) / k - s.impulse_scale * accumulated;
    float total = max_f(accumulated + impulse, 0.0f);
    impulse = total - accumulated;
    accumulated = total;
    return impulse;
}

/// The limits of one hinge or slider.
ORRERY_HD inline void solve_joint_limits(SolverBody& a, SolverBody& b, Joint& j, float inv_h, Softness soft,
                                         bool bias) {
    JointGeometry g = geometry_of(a, b, j);
    float pos = joint_position(g, j.kind);
    bool hinge = j.kind == JointKind::kHinge;
    float k = hinge ? dot(g.axis, times(angular_mass(a, b).row, g.axis))
                    : inv_mass_along(a, g.ra, g.axis) + inv_mass_along(b, g.rb, g.axis);
    for (uint32_t side = 0; side < 2; ++side) {
        float sign = side == 0 ? 1.0f : -1.0f;
        float rate = hinge ? dot(g.axis, b.w - a.w) : dot(g.axis, relative_velocity(a, b, g.ra, g.rb));
        float C = side == 0 ? pos - j.lower : j.upper - pos;
        float& acc = side == 0 ? j.lower_impulse : j.upper_impulse;
        float impulse = sign * solve_limit(C, sign * rate, k, acc, inv_h, soft, bias);
        if (hinge)
            apply_angular(a, b, g.axis * impulse);
        else
            apply_impulse(a, b, g.axis * impulse, g.ra, g.rb);
    }
}

/// x with K x = rhs along the world axes that K moves (a positive diagonal:
/// solve_rows with world_rows(), whose dots with the unit rows are K's
/// entries themselves), K symmetric positive semi-definite; an axis K does
/// not move gets no impulse.
/// K's part of solve_axes, made once for many right-hand sides (solve_with).
ORRERY_HD inline AxesSolve axes_of(const Vec3 K[3]) {
    const bool on0 = K[0].x > 0.0f, on1 = K[1].y > 0.0f, on2 = K[2].z > 0.0f;
    // The system along the axes in use; an axis not in use is the identity's, with nothing to solve.
    const Vec3 rows[3] = {{on0 ? K[0].x : 1.0f, on0 && on1 ? K[0].y : 0.0f, on0 && on2 ? K[0].z : 0.0f},
                          {on1 && on0 ? K[1].x : 0.0f, on1 ? K[1].y : 1.0f, on1 && on2 ? K[1].z : 0.0f},
                          {on2 && on0 ? K[2].x : 0.0f, on2 && on1 ? K[2].y : 0.0f, on2 ? K[2].z : 1.0f}};
    // Cramer's rule with solve_rows' test for a nearly singular system
    // (each row on its own then), its cofactors made once for both.
    AxesSolve x;
    x.c0 = cross(rows[1], rows[2]), x.c1 = cross(rows[2], rows[0]), x.c2 = cross(rows[0], rows[1]);
    x.diagonal = {rows[0].x, rows[1].y, rows[2].z};
    const float det = dot(rows[0], x.c0), diagonal = rows[0].x * rows[1].y * rows[2].z;
    const bool alone = !(det > 1e-4f * diagonal);
    x.inv_det = alone ? 0.0f : 1.0f / det;
    x.on = (on0 ? 1u : 0u) | (on1 ? 2u : 0u) | (on2 ? 4u : 0u) | (alone ? 8u : 0u);
    return x;
}
/// solve_axes' answer for rhs from K's axes_of.
ORRERY_HD inline Vec3 solve_with(const AxesSolve& x, Vec3 rhs) {
    const Vec3 b{x.on & 1u ? rhs.x : 0.0f, x.on & 2u ? rhs.y : 0.0f, x.on & 4u ? rhs.z : 0.0f};
    if (x.on & 8u) return {b.x / x.diagonal.x, b.y / x.diagonal.y, b.z / x.diagonal.z};
    return (x.c0 * b.x + x.c1 * b.y + x.c2 * b.z) * x.inv_det;
}
ORRERY_HD inline Vec3 solve_axes(const Vec3 K[3], Vec3 rhs) { return solve_with(axes_of(K), rhs); }

/// S(r)^T W S(r), with S(r) v = r x v and W a body's world inverse inertia
/// (symmetric): its point at offset r's velocity change per unit impulse
/// from turning, point_mass's cross(W (r x e), r) rows in closed form.
ORRERY_HD inline Mat3 turn_mass(const Vec3 W[3], Vec3 r) {
    // M = W S(r), by columns: W (r x e_x), W (r x e_y), W (r x e_z).
    Vec3 m0{W[0].y * r.z - W[0].z * r.y, W[1].y * r.z - W[1].z * r.y, W[2].y * r.z - W[2].z * r.y};
    Vec3 m1{W[0].z * r.x - W[0].x * r.z, W[1].z * r.x - W[1].x * r.z, W[2].z * r.x - W[2].x * r.z};
    Vec3 m2{W[0].x * r.y - W[0].y * r.x, W[1].x * r.y - W[1].y * r.x, W[2].x * r.y - W[2].y * r.x};
    // S(r)^T M = -S(r) M: entry (i, j) is -(r x m_j)_i; symmetric, so six of them.
    float xx = r.z * m0.y - r.y * m0.z, yy = r.x * m1.z - r.z * m1.x, zz = r.y * m2.x - r.x * m2.y;
    float xy = r.z * m1.y - r.y * m1.z, xz = r.z * m2.y - r.y * m2.z, yz = r.x * m2.z - r.z * m2.x;
    return {{{xx, xy, xz}, {xy, yy, yz}, {xz, yz, zz}}};
}

/// A weld's point constraint's K: both bodies' damped inverse masses on the
/// diagonal and their turn_mass at the anchors (point_mass's matrix).
ORRERY_HD inline Mat3 weld_point_mass(const SolverBody& a, const SolverBody& b, Vec3 ra, Vec3 rb) {
    Mat3 ta = turn_mass(a.inv_inertia_world, ra), tb = turn_mass(b.inv_inertia_world, rb);
    Vec3 m = a.inv_mass_damped + b.inv_mass_damped;
    Mat3 K;
    K.row[0] = ta.row[0] + tb.row[0], K.row[1] = ta.row[1] + tb.row[1], K.row[2] = ta.row[2] + tb.row[2];
    K.row[0].x += m.x, K.row[1].y += m.y, K.row[2].z += m.z;
    return K;
}

/// A weld: its frames turn together (three angular rows along the world
/// axes), then its anchors meet (three linear rows), as solve_joint's rows
/// for a weld in another rounding. g is the weld's geometry (weld_step: what
/// its bodies' poses give, made once while they do not move).
ORRERY_HD inline void solve_weld(SolverBody& a, SolverBody& b, Joint& j, Softness soft, bool bias, const WeldStep& g) {
    const RowSoftness s = soft_row(1.0f, soft, bias);
    Vec3 impulse =
        solve_with(g.angular, (b.w - a.w) + g.C * s.bias) * -s.mass_scale - j.angular_impulse * s.impulse_scale;
    j.angular_impulse += impulse;
    apply_angular(a, b, impulse);
    impulse = solve_with(g.point, relative_velocity(a, b, g.ra, g.rb) + g.d * s.bias) * -s.mass_scale -
              j.linear_impulse * s.impulse_scale;
    j.linear_impulse += impulse;
    apply_impulse(a, b, impulse, g.ra, g.rb);
}
/// A weld's geometry from its bodies' poses (and their world inertia and
/// damped masses, fixed through a step), for solve_weld and warm_start_weld.
ORRERY_HD inline WeldStep weld_step(const SolverBody& a, const SolverBody& b, const Joint& j) {
    WeldStep g;
    g.ra = rotate(a.q, j.fa.p), g.rb = rotate(b.q, j.fb.p);
    const Quat dq = (b.q * j.fb.q) * conj(a.q * j.fa.q); // a's frame to b's, world frame
    g.C = Vec3{dq.x, dq.y, dq.z} * (dq.w < 0.0f ? -2.0f : 2.0f);
    g.d = (b.x + g.rb) - (a.x + g.ra);
    g.angular = axes_of(angular_mass(a, b).row);
    g.point = axes_of(weld_point_mass(a, b, g.ra, g.rb).row);
    return g;
}
ORRERY_HD inline void solve_weld(SolverBody& a, SolverBody& b, Joint& j, Softness soft, bool bias) {
    solve_weld(a, b, j, soft, bias, weld_step(a, b, j));
}
/// warm_start_joint for a weld of geometry g.
ORRERY_HD inline void warm_start_weld(SolverBody& a, SolverBody& b, const Joint& j, const WeldStep& g) {
    apply_impulse(a, b, j.linear_impulse, g.ra, g.rb);
    apply_angular(a, b, j.angular_impulse);
}

/// One joint of any kind along its general rows: limits, then the angular
/// rows, then the linear ones (solve_joint's way for hinges and sliders).
ORRERY_HD inline void solve_joint_rows(SolverBody& a, SolverBody& b, Joint& j, float inv_h, Softness soft, bool bias) {
    if ((j.flags & kJointLimited) && j.kind != JointKind::kWeld) solve_joint_limits(a, b, j, inv_h, soft, bias);
    JointGeometry g = geometry_of(a, b, j);
    // Angular: the frames turn together (weld, slider), or only about the axis (hinge).
    Rows ang = j.kind == JointKind::kHinge ? rows_across(g.axis) : world_rows();
    Vec3 C;
    if (j.kind == JointKind::kHinge) {
        C = cross(g.axis, rotate(g.qb, {0.0f, 0.0f, 1.0f}));
    } else {
        Quat dq = g.qb * conj(g.qa); // a's frame to b's, world frame
        float s = dq.w < 0.0f ? -2.0f : 2.0f;
        C = Vec3{dq.x, dq.y, dq.z} * s;
    }
    RowSoftness s = soft_row(1.0f, soft, bias);
    Vec3 acc = project(ang, j.angular_impulse);
    Vec3 impulse =
        solve_rows(angular_mass(a, b).row, ang, (b.w - a.w) + C * s.bias) * -s.mass_scale - acc * s.impulse_scale;
    j.angular_impulse = acc + impulse;
    apply_angular(a, b, impulse);
    // Linear: the anchors meet (weld, hinge), or meet across the axis (slider).
    // g still holds: the angular impulse changed only the bodies' w.
    Rows lin = j.kind == JointKind::kSlider ? rows_across(g.axis) : world_rows();
    acc = project(lin, j.linear_impulse);
    impulse = solve_rows(point_mass(a, b, g.ra, g.rb).row, lin, relative_velocity(a, b, g.ra, g.rb) + g.d * s.bias) *
                  -s.mass_scale -
              acc * s.impulse_scale;
    j.linear_impulse = acc + impulse;
    apply_impulse(a, b, impulse, g.ra, g.rb);
}

/// One joint: limits, then the angular rows, then the linear ones (a weld:
/// solve_weld). With `bias`, position error is removed softly (a spring of
/// the joint hertz); without, only velocities are solved (the relax pass).
ORRERY_HD inline void solve_joint(SolverBody& a, SolverBody& b, Joint& j, float inv_h, Softness soft, bool bias) {
    if (ORRERY_PHYS_WELD_ROWS && is_weld(j)) return solve_weld(a, b, j, soft, bias);
    solve_joint_rows(a, b, j, inv_h, soft, bias);
}

} // namespace phys
