#pragma once
// The solver: Box2D v3's soft step, in 3-D. Contacts are found once per env
// step (speculatively, up to a margin grown by the bodies' speed); each
// substep integrates velocities, warm-starts from the last substep's
// impulses, solves contacts with a soft (spring-damper) push, integrates
// positions, then relaxes without the push; restitution is applied once at
// the end. A world's lanes share each phase (bodies, pairs, then the
// constraints colour by colour, no two of a colour sharing a dynamic body),
// meeting at Lanes::sync() between phases; every result is made by the same
// code from the same inputs in an order fixed by the data, so it does not
// depend on the lane or thread count. physics/README.md says why this and
// not XPBD; docs/decisions.md why colours.

#include "physics/hull.hpp"

#if defined(ORRERY_PHYS_CLOCKS) && !defined(__CUDACC_RTC__)
#include <cstdio>
#endif
#if defined(ORRERY_PHYS_CLOCKS) && !defined(ORRERY_PHYS_CLOCKS_EVERY)
#define ORRERY_PHYS_CLOCKS_EVERY 128
#endif

// One CPU lane solves a colour's contact pairs, and moves its bodies, four
// at a time (solve_batch.hpp: the same bits). ORRERY_PHYS_BATCH_SOLVE=0 (a
// compiler define) keeps the one-at-a-time loops.
#ifndef ORRERY_PHYS_BATCH_SOLVE
#define ORRERY_PHYS_BATCH_SOLVE 1
#endif

namespace phys {
using orrery::Buffer;

/// Where a GPU team's physics step spends its time (bench/phys_phases.sh).
/// With ORRERY_PHYS_CLOCKS defined for an NVRTC build
/// (ORRERY_NVRTC_OPTIONS=-DORRERY_PHYS_CLOCKS=1), simulate's lane 0 adds up
/// the SM's clock cycles of each phase below (each ends at a sync, so the
/// team's slowest lane sets it) and prints them with the step's counts for
/// every ORRERY_PHYS_CLOCKS_EVERY-th world (128 unless defined; 1 for every
/// world, as bench/phys_phases.py's slowest-world table wants); defined for a
/// host build (CXXFLAGS), the same with the x86 time-stamp counter. Without
/// it nothing is compiled: mark() is empty.
enum Phase : uint32_t {
    kPhaseGather,    ///< gather, resolve joints
    kPhaseBegin,     ///< begin_bodies, wake_bodies
    kPhasePairs,     ///< broadphase
    kPhaseNarrow,    ///< narrowphase, a pair per lane
    kPhaseOrder,     ///< order_constraints (lane 0)
    kPhaseMake,      ///< contact points
    kPhaseAlign,     ///< waiting at each substep's Lanes::align() for the block's other teams
    kPhaseIntegrate, ///< integrate velocities and positions, every substep
    kPhaseWarm,      ///< warm start passes
    kPhaseSolve,     ///< solve passes
    kPhaseRelax,     ///< relax passes
    kPhaseEnd,       ///< restitution, remember_contacts, settle_bodies
    kPhaseScatter,   ///< scatter
    kPhases
};
struct PhaseClock {
#if defined(ORRERY_PHYS_CLOCKS)
    static ORRERY_HD long long now() {
#ifdef __CUDA_ARCH__
        return clock64();
#else
        return (long long)__builtin_ia32_rdtsc();
#endif
    }
    long long last = now(), cycles[kPhases] = {};
    ORRERY_HD void mark(uint32_t k) {
        const long long t = now();
        cycles[k] += t - last, last = t;
    }
#else
    ORRERY_HD void mark(uint32_t) {}
#endif
};
/// Ends phase k on clock c, if there is one.
ORRERY_HD inline void mark(PhaseClock* c, uint32_t k) {
    if (c) c->mark(k);
}

/// 1 on free axes, 0 on locked ones: bits `shift`..`shift+2` of a lock mask.
ORRERY_HD inline Vec3 free_axes(uint32_t locks, uint32_t shift) {
    return {(locks >> shift) & 1u ? 0.0f : 1.0f, (locks >> (shift + 1)) & 1u ? 0.0f : 1.0f,
            (locks >> (shift + 2)) & 1u ? 0.0f : 1.0f};
}

/// x with A x = rhs for the rows of A (Cramer's rule), or zero when A is singular.
ORRERY_HD inline Vec3 solve_3x3(const Vec3 rows[3], Vec3 rhs) {
    Vec3 c0 = cross(rows[1], rows[2]), c1 = cross(rows[2], rows[0]), c2 = cross(rows[0], rows[1]);
    float det = dot(rows[0], c0);
    if (det == 0.0f) return {0.0f, 0.0f, 0.0f};
    float inv = 1.0f / det;
    // The inverse's columns are c0, c1, c2 over det: x = (c0 rhs.x + c1 rhs.y + c2 rhs.z) / det.
    return (c0 * rhs.x + c1 * rhs.y + c2 * rhs.z) * inv;
}

// A body turning about z alone (OpenAI's agents and boxes) takes a short
// form of set_world_inertia that makes only W's zz entry, the one the locks
// leave: the same bits in it; the locked entries are +0 where the full form
// gave zeros of either sign, which no step result reads (=0, an NVRTC or
// compiler define: the full form for every body).
#ifndef ORRERY_PHYS_TURN_Z_INERTIA
#define ORRERY_PHYS_TURN_Z_INERTIA 1
#endif
/// Per world axis 1 / (m + h d): the inverse mass damped by AxisDamping's
/// rate r = d / m (the undamped one, bit for bit, without it).
ORRERY_HD inline Vec3 damped_inv_mass(Vec3 inv_mass, Vec3 r, float h) {
    return nonzero(r)
               ? Vec3{inv_mass.x / (1.0f + h * r.x), inv_mass.y / (1.0f + h * r.y), inv_mass.z / (1.0f + h * r.z)}
               : inv_mass;
}
/// set_world_inertia's short form for a body that turns about z alone; false
/// (b untouched) for any other body, and for the one case whose zero's sign
/// the short form cannot know (damped, with a zero zz entry).
ORRERY_HD inline bool set_turn_z_inertia(SolverBody& b, float h) {
    if ((b.locks & (kLockTurnX | kLockTurnY | kLockTurnZ)) != (kLockTurnX | kLockTurnY)) return false;
    // Row z of R (the z parts of its columns), and the full form's
    // dot(row_z * I^-1, row_z), its locks' factors 1 and 1 exact.
    const Vec3 rz{rotate(b.q, {1, 0, 0}).z, rotate(b.q, {0, 1, 0}).z, rotate(b.q, {0, 0, 1}).z};
    float w = dot(mul(rz, b.inv_inertia), rz);
    const Vec3 r = b.axis_rate, d = b.axis_angular;
    if (nonzero(d)) {
        // The full form's 3 x 3 solve of diag(1, 1, 1 + h w d.z), its other
        // entries zeros, leaves w * (1 / (1 + h w d.z)) (0 when singular).
        if (w == 0.0f) return false;
        const float det = 1.0f + h * w * d.z;
        w = det == 0.0f ? 0.0f : w * (1.0f / det);
    }
    b.inv_inertia_world[0] = b.inv_inertia_world[1] = Vec3{0.0f, 0.0f, 0.0f};
    b.inv_inertia_world[2] = Vec3{0.0f, 0.0f, w};
    b.inv_mass_damped = damped_inv_mass(b.inv_mass, r, h);
    return true;
}
ORRERY_HD inline void set_world_inertia_full(SolverBody& b, float h);
/// Sets how impulses move b for a step of substeps h, from its orientation
/// now: with AxisDamping's D, its damped mass M + h D (MuJoCo's implicit
/// damping; README, "Damping"). Per world axis the inverse mass 1 / (m + h d)
/// (inv_mass_damped), and the world-frame inverse inertia (P R I^-1 R^T P
/// with P removing locked rotation axes, exact when the free axis is a
/// principal axis, as for a box turning about z) becomes (W^-1 + h D)^-1 =
/// (1 + W h D)^-1 W, a 3 x 3 solve per column. Without AxisDamping both are
/// the undamped ones, bit for bit. The solver keeps them for the whole step,
/// as it keeps the contact anchors (Box2D).
ORRERY_HD inline void set_world_inertia(SolverBody& b, float h) {
    if (!ORRERY_PHYS_TURN_Z_INERTIA || !set_turn_z_inertia(b, h)) set_world_inertia_full(b, h);
}
/// set_world_inertia for any body: the full form.
ORRERY_HD inline void set_world_inertia_full(SolverBody& b, float h) {
    Vec3 m = free_axes(b.locks, 3);
    Vec3 c[3] = {rotate(b.q, {1, 0, 0}), rotate(b.q, {0, 1, 0}), rotate(b.q, {0, 0, 1})}; // columns of R
    for (uint32_t i = 0; i < 3; ++i) {
        Vec3 row_i{axis_of(c[0], i), axis_of(c[1], i), axis_of(c[2], i)};
        Vec3 scaled = mul(row_i, b.inv_inertia);
        float mi = axis_of(m, i);
        b.inv_inertia_world[i] =
            Vec3{dot(scaled, Vec3{c[0].x, c[1].x, c[2].x}) * m.x, dot(scaled, Vec3{c[0].y, c[1].y, c[2].y}) * m.y,
                 dot(scaled, Vec3{c[0].z, c[1].z, c[2].z}) * m.z} *
            mi;
    }
    Vec3 r = b.axis_rate, d = b.axis_angular;
    b.inv_mass_damped = damped_inv_mass(b.inv_mass, r, h);
    if (!nonzero(d)) return;
    const Vec3* W = b.inv_inertia_world;
    Vec3 rows[3] = {{1.0f + h * W[0].x * d.x, h * W[0].y * d.y, h * W[0].z * d.z},
                    {h * W[1].x * d.x, 1.0f + h * W[1].y * d.y, h * W[1].z * d.z},
                    {h * W[2].x * d.x, h * W[2].y * d.y, 1.0f + h * W[2].z * d.z}};
    Vec3 col[3]; // the damped inverse's columns: A^-1 times W's
    for (uint32_t j = 0; j < 3; ++j) col[j] = solve_3x3(rows, {axis_of(W[0], j), axis_of(W[1], j), axis_of(W[2], j)});
    for (uint32_t i = 0; i < 3; ++i)
        b.inv_inertia_world[i] = {axis_of(col[0], i), axis_of(col[1], i), axis_of(col[2], i)};
}

/// World-frame inverse inertia (as of the step's start) times v (b: a
/// SolverBody or a pass's HeldMass copy of one).
template <class B> ORRERY_HD inline Vec3 inv_inertia_times(const B& b, Vec3 v) {
    return {dot(b.inv_inertia_world[0], v), dot(b.inv_inertia_world[1], v), dot(b.inv_inertia_world[2], v)};
}

/// Generalised inverse mass of body b at offset r along unit direction n.
ORRERY_HD inline float inv_mass_along(const SolverBody& b, Vec3 r, Vec3 n) {
    Vec3 rn = cross(r, n);
    return dot(n, mul(b.inv_mass_damped, n)) + dot(rn, inv_inertia_times(b, rn));
}

/// Whether constraints change b's velocity (only dynamic bodies: the others
/// are read by constraints of one colour at once, so none may write them).
/// b: a SolverBody or a pass's HeldMass copy of one.
template <class B> ORRERY_HD inline bool moves(const B& b) { return b.kind == BodyKind::kDynamic; }

/// Whether b is stepped: dynamic and not asleep (an asleep body is in no pair or joint).
ORRERY_HD inline bool awake(const SolverBody& b) { return b.kind == BodyKind::kDynamic && !(b.sleep & kAsleep); }

/// A body's velocities with its masses (its kind, damped inverse mass and
/// world inverse inertia), held in registers while a pass solves one pair's
/// points (Motion below, on the GPU): the compiler otherwise loads the masses
/// again for each point's impulse, since it cannot tell them from the points
/// it stores. ORRERY_PHYS_HOLD_MASS=0 (an NVRTC define) holds the velocities
/// alone. The same arithmetic, so the same bits.
struct HeldMass {
    Vec3 v, w;
    BodyKind kind;
    Vec3 inv_mass_damped;
    Vec3 inv_inertia_world[3];
};
/// Where apply_impulse reads body b's masses: b itself, or the copy its
/// Motion holds.
template <class M> ORRERY_HD inline const SolverBody& masses_of(const SolverBody& b, const M&) { return b; }
ORRERY_HD inline const HeldMass& masses_of(const SolverBody&, const HeldMass& m) { return m; }

/// Changes the velocities ma and mb of bodies a and b (anything with v and
/// w: the bodies themselves, or a Motion below) by impulse p at offsets ra,
/// rb (a gets -p, b gets +p).
template <class M>
ORRERY_HD inline void apply_impulse(const SolverBody& a, M& ma, const SolverBody& b, M& mb, Vec3 p, Vec3 ra, Vec3 rb) {
    const auto& ka = masses_of(a, ma);
    const auto& kb = masses_of(b, mb);
    if (moves(ka)) {
        ma.v = mul_add(-ka.inv_mass_damped, p, ma.v);
        ma.w -= inv_inertia_times(ka, cross(ra, p));
    }
    if (moves(kb)) {
        mb.v = mul_add(kb.inv_mass_damped, p, mb.v);
        mb.w += inv_inertia_times(kb, cross(rb, p));
    }
}
ORRERY_HD inline void apply_impulse(SolverBody& a, SolverBody& b, Vec3 p, Vec3 ra, Vec3 rb) {
    apply_impulse(a, a, b, b, p, ra, rb);
}

/// Velocity of b's point at offset rb relative to a's point at ra, from
/// their velocities (the bodies themselves, or a Motion below).
template <class M> ORRERY_HD inline Vec3 relative_velocity(const M& a, const M& b, Vec3 ra, Vec3 rb) {
    return (b.v + cross(b.w, rb)) - (a.v + cross(a.w, ra));
}

/// A body's velocities while a pass solves one pair's points: held in
/// registers and written back once (Held), or the body's own fields
/// (InPlace). Held spares the GPU a round trip through memory between one
/// point's impulse and the next point's velocities (the compiler cannot tell
/// the two bodies and the points apart, so it reloads them); on the CPU the
/// copies cost more than they save (callgrind: +1.4 % instructions on
/// hide-and-seek). The same arithmetic in the same order either way, so the
/// same bits. ORRERY_PHYS_HOLD=0/1 (an NVRTC or compiler define) picks one.
struct Held {
    Vec3 v, w;
};
struct InPlace {
    Vec3& v;
    Vec3& w;
};
#ifndef ORRERY_PHYS_HOLD
#if defined(__CUDA_ARCH__)
#define ORRERY_PHYS_HOLD 1
#else
#define ORRERY_PHYS_HOLD 0
#endif
#endif
#ifndef ORRERY_PHYS_HOLD_MASS
#define ORRERY_PHYS_HOLD_MASS 1
#endif
#if ORRERY_PHYS_HOLD && ORRERY_PHYS_HOLD_MASS && defined(__CUDA_ARCH__)
using Motion = HeldMass;
ORRERY_HD inline HeldMass motion_of(SolverBody& b) {
    return {
        b.v, b.w, b.kind, b.inv_mass_damped, {b.inv_inertia_world[0], b.inv_inertia_world[1], b.inv_inertia_world[2]}};
}
/// Writes m back to b where constraints move it (only dynamic bodies are written).
ORRERY_HD inline void keep_motion(SolverBody& b, const HeldMass& m) {
    if (moves(m)) b.v = m.v, b.w = m.w;
}
#elif ORRERY_PHYS_HOLD
using Motion = Held;
ORRERY_HD inline Held motion_of(SolverBody& b) { return {b.v, b.w}; }
/// Writes m back to b where constraints move it (only dynamic bodies are written).
ORRERY_HD inline void keep_motion(SolverBody& b, const Held& m) {
    if (moves(b)) b.v = m.v, b.w = m.w;
}
#else
using Motion = InPlace;
ORRERY_HD inline InPlace motion_of(SolverBody& b) { return {b.v, b.w}; }
ORRERY_HD inline void keep_motion(SolverBody&, const InPlace&) {}
#endif

/// Radius of a sphere around the body's origin holding its shape; negative: unbounded (planes).
ORRERY_HD inline float bound_of(Shape s) {
    switch (s.kind) {
    case ShapeKind::kSphere: return s.dims.x;
    case ShapeKind::kCapsule: return s.dims.x + s.dims.y;
    case ShapeKind::kBox: return length(s.dims);
    default: return -1.0f;
    }
}

/// A body as the solver sees it, from entity e's components.
ORRERY_HD inline SolverBody gathered(Ctx& ctx, Entity e) {
    SolverBody b{};
    b.entity = e;
    b.kind = ctx.get<BodyType>(e)->kind;
    b.locks = ctx.get<Locks>(e)->mask;
    b.shape = *ctx.get<Shape>(e);
    b.x = ctx.get<Pose>(e)->p;
    b.q = ctx.get<Pose>(e)->q;
    b.v = ctx.get<Velocity>(e)->v;
    b.w = ctx.get<Velocity>(e)->w;
    const MassProps mp = *ctx.get<MassProps>(e);
    bool dynamic = b.kind == BodyKind::kDynamic;
    b.inv_mass = dynamic ? free_axes(b.locks, 0) * mp.inv_mass : Vec3{0.0f, 0.0f, 0.0f};
    b.inv_inertia = dynamic ? mp.inv_inertia : Vec3{0.0f, 0.0f, 0.0f};
    b.force = ctx.get<Force>(e)->f;
    b.torque = ctx.get<Force>(e)->t;
    b.bound = bound_of(b.shape);
    if (b.shape.kind == ShapeKind::kHull) {
        HullSet hulls = hull_set(ctx);
        if (!hull_valid(hulls, b.shape)) ctx.fail(kErrorBadHull); // it then touches nothing
        b.bound = hull_bound(hulls, b.shape);
    }
    if (const Damping* d = ctx.get<Damping>(e)) b.lin_damping = d->linear, b.ang_damping = d->angular;
    if (const AxisDamping* d = ctx.get<AxisDamping>(e))
        b.axis_rate = mul(d->linear, b.inv_mass), b.axis_angular = dynamic ? d->angular : Vec3{0.0f, 0.0f, 0.0f};
    b.material = *ctx.get<Material>(e);
    if (b.kind == BodyKind::kStatic) b.v = b.w = Vec3{0.0f, 0.0f, 0.0f};
    if (const Sleep* z = ctx.get<Sleep>(e); z && dynamic) {
        b.sleep = kSleepy | (z->asleep ? kAsleep : 0u), b.still = z->still;
        // A force, torque or velocity set by a system wakes it.
        const bool disturbed = nonzero(b.force) || nonzero(b.torque) || nonzero(b.v) || nonzero(b.w);
        if ((b.sleep & kAsleep) && disturbed) b.sleep = kSleepy, b.still = 0;
    }
    return b;
}

// A whole-warp team lists its bodies 32 rows at a time (WorldView::each_with_warp;
// ORRERY_PHYS_WARP_GATHER=0, an NVRTC define: lane 0 row by row). The same list.
#ifndef ORRERY_PHYS_WARP_GATHER
#define ORRERY_PHYS_WARP_GATHER 1
#endif
/// Copies every rigid body of the world (archetypes in id order, rows in
/// order) into `out`: the bodies are listed, then the lanes copy a body each.
ORRERY_HD inline void gather_bodies(Ctx& ctx, Buffer<Bodies> out, const Lanes& l = Lanes{}) {
    bool listed = false;
#if defined(__CUDA_ARCH__) && ORRERY_PHYS_WARP_GATHER
    if (l.count == 32) {
        const uint32_t n = ctx.each_with_warp<Pose, Velocity, MassProps, BodyType, Locks, Shape, Material, Force>(
            [&](uint32_t i, Entity e) {
                if (i < out.capacity()) out[i].entity = e;
            },
            l.lane);
        if (l.lane == 0) out.resize(n); // as below
        listed = true;
    }
#endif
    if (!listed && l.lane == 0) {
        uint32_t n = 0;
        ctx.each_with<Pose, Velocity, MassProps, BodyType, Locks, Shape, Material, Force>([&](Entity e) {
            if (n < out.capacity()) out[n].entity = e;
            ++n;
        });
        out.resize(n); // past the capacity: kBufferOverflow, and the first max_bodies are stepped
    }
    l.sync();
    for (uint32_t i = l.lane; i < out.size(); i += l.count) out[i] = gathered(ctx, out[i].entity);
}

/// Writes poses and velocities back and clears the applied forces, a body per lane.
ORRERY_HD inline void scatter_bodies(Ctx& ctx, Buffer<Bodies> bodies, const Lanes& l = Lanes{}) {
    for (uint32_t i = l.lane; i < bodies.size(); i += l.count) {
        const SolverBody& b = bodies[i];
        *ctx.get<Force>(b.entity) = Force{};
        if (Sleep* z = ctx.get<Sleep>(b.entity)) *z = Sleep{b.still, (b.sleep & kAsleep) ? 1u : 0u};
        if (b.kind == BodyKind::kStatic) { // a static body is at rest, so it starts so when turned dynamic
            *ctx.get<Velocity>(b.entity) = Velocity{};
            continue;
        }
        *ctx.get<Pose>(b.entity) = Pose{b.x, b.q};
        *ctx.get<Velocity>(b.entity) = Velocity{b.v, b.w};
    }
}

/// Two unit tangents completing unit normal n (the same bits on every backend).
struct Tangents {
    Vec3 t1, t2;
};
ORRERY_HD inline Tangents tangents_of(Vec3 n) {
    Vec3 ref = abs_of(n.x) < 0.57735f ? Vec3{1.0f, 0.0f, 0.0f} : Vec3{0.0f, 1.0f, 0.0f};
    Vec3 t1 = normalize_or(cross(n, ref), Vec3{0.0f, 1.0f, 0.0f});
    return {t1, cross(n, t1)};
}

ORRERY_HD inline float inverse_or_zero(float k) { return k > 0.0f ? 1.0f / k : 0.0f; }

// A world's contact points lie in Contacts as rows on the host (a Contact
// after another: the CPU's batches read a point's floats as one run,
// solve_batch.hpp) and as columns on the GPU (each of a Contact's 21 floats
// in a run of its own, field f of point q at f x capacity + q). A pass's
// lanes take a pair each, so in rows a warp's load of one field touched a
// sector a lane, 84 bytes apart; in columns it touches the field's run.
// ORRERY_PHYS_CONTACT_COLUMNS=0 (an NVRTC define) keeps rows on the GPU.
// The passes load a point into a Contact and store back what they change:
// the same operations in the same order, so the same bits either way.
#ifndef ORRERY_PHYS_CONTACT_COLUMNS
#if defined(ORRERY_DEVICE_CODE)
#define ORRERY_PHYS_CONTACT_COLUMNS 1
#else
#define ORRERY_PHYS_CONTACT_COLUMNS 0
#endif
#endif

/// A pair's contact points in Contacts, from its first (Pair::first).
struct PointRun {
    float* base; ///< the first point's first float
#if ORRERY_PHYS_CONTACT_COLUMNS
#if defined(ORRERY_PHYS_CONTACT_CAPACITY) // the env's, from phys::add_to: each field at a constant offset
    static constexpr uint32_t column = ORRERY_PHYS_CONTACT_CAPACITY;
#else
    uint32_t column; ///< floats from one field's column to the next: Contacts' capacity
#endif
    ORRERY_PHYS_INLINE ORRERY_HD float& at(uint32_t k, uint32_t field) const { return base[field * column + k]; }
#else
    ORRERY_PHYS_INLINE ORRERY_HD float& at(uint32_t k, uint32_t field) const {
        return base[k * kContactFloats + field];
    }
#endif
    ORRERY_PHYS_INLINE ORRERY_HD Vec3 vec(uint32_t k, uint32_t field) const {
        return {at(k, field), at(k, field + 1), at(k, field + 2)};
    }
    ORRERY_PHYS_INLINE ORRERY_HD void set(uint32_t k, uint32_t field, Vec3 v) const {
        at(k, field) = v.x, at(k, field + 1) = v.y, at(k, field + 2) = v.z;
    }
    /// Point k whole (a pass reads only the fields it uses: the compiler drops the rest).
    ORRERY_PHYS_INLINE ORRERY_HD Contact load(uint32_t k) const {
        Contact c;
        c.n = vec(k, kFieldN), c.t1 = vec(k, kFieldT1), c.ra = vec(k, kFieldRa), c.rb = vec(k, kFieldRb);
        c.separation = at(k, kFieldSeparation), c.normal_mass = at(k, kFieldNormalMass);
        c.t1_mass = at(k, kFieldT1Mass), c.t2_mass = at(k, kFieldT2Mass);
        c.normal_impulse = at(k, kFieldNormalImpulse), c.t1_impulse = at(k, kFieldT1Impulse);
        c.t2_impulse = at(k, kFieldT2Impulse), c.max_normal_impulse = at(k, kFieldMaxNormalImpulse);
        c.approach = at(k, kFieldApproach);
        return c;
    }
    ORRERY_PHYS_INLINE ORRERY_HD void store(uint32_t k, const Contact& c) const {
        set(k, kFieldN, c.n), set(k, kFieldT1, c.t1), set(k, kFieldRa, c.ra), set(k, kFieldRb, c.rb);
        at(k, kFieldSeparation) = c.separation, at(k, kFieldNormalMass) = c.normal_mass;
        at(k, kFieldT1Mass) = c.t1_mass, at(k, kFieldT2Mass) = c.t2_mass;
        at(k, kFieldNormalImpulse) = c.normal_impulse, at(k, kFieldT1Impulse) = c.t1_impulse;
        at(k, kFieldT2Impulse) = c.t2_impulse, at(k, kFieldMaxNormalImpulse) = c.max_normal_impulse;
        at(k, kFieldApproach) = c.approach;
    }
    /// What solve_normal changes (and restitute_points: its normal impulse).
    ORRERY_PHYS_INLINE ORRERY_HD void store_normal(uint32_t k, const Contact& c) const {
        at(k, kFieldNormalImpulse) = c.normal_impulse, at(k, kFieldMaxNormalImpulse) = c.max_normal_impulse;
    }
    /// What solve_friction changes.
    ORRERY_PHYS_INLINE ORRERY_HD void store_friction(uint32_t k, const Contact& c) const {
        at(k, kFieldT1Impulse) = c.t1_impulse, at(k, kFieldT2Impulse) = c.t2_impulse;
    }
};
/// The points of Contacts from `first` on.
ORRERY_PHYS_INLINE ORRERY_HD inline PointRun points_at(Buffer<Contacts> contacts, uint32_t first) {
    float* f = reinterpret_cast<float*>(contacts.items_);
#if ORRERY_PHYS_CONTACT_COLUMNS
    PointRun run{f + first};
#if !defined(ORRERY_PHYS_CONTACT_CAPACITY) // else add_to sized Contacts with the same number
    run.column = contacts.capacity();
#endif
    return run;
#else
    return {f + first * kContactFloats};
#endif
}

/// Warm starting across steps: the nearest of last step's points of the
/// same two bodies (a and b, at indices ia, ib now), within `reach` in a's
/// frame (la), lends c its impulses (its friction projected onto c's
/// tangents t1 and t2). The cache is in pair order, so the pair's points are
/// found by binary search; ties go to the first.
/// The first entry of `cache` (in pair order) not before bodies (ia, ib).
ORRERY_HD inline uint32_t cache_first(Buffer<ContactCache> cache, uint32_t ia, uint32_t ib) {
    uint32_t lo = 0, hi = cache.size();
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        const CachedContact& o = cache[mid];
        if (o.a < ia || (o.a == ia && o.b < ib))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
/// `lo`: cache_first(cache, ia, ib).
ORRERY_HD inline void inherit_impulses(Contact& c, Vec3 t2, uint32_t ia, uint32_t ib, const SolverBody& a,
                                       const SolverBody& b, Vec3 la, Buffer<ContactCache> cache, float reach,
                                       uint32_t lo) {
    float best = reach * reach;
    uint32_t found = cache.size();
    for (uint32_t k = lo; k < cache.size() && cache[k].a == ia && cache[k].b == ib; ++k) {
        const CachedContact& o = cache[k];
        // The same rows may hold other bodies now (created or destroyed since).
        if (o.ea.index != a.entity.index || o.ea.gen != a.entity.gen || o.eb.index != b.entity.index ||
            o.eb.gen != b.entity.gen)
            continue;
        Vec3 d = o.la - la;
        if (dot(d, d) < best) best = dot(d, d), found = k;
    }
    if (found == cache.size()) return;
    const CachedContact& o = cache[found];
    c.normal_impulse = o.normal_impulse;
    c.t1_impulse = dot(o.friction, c.t1), c.t2_impulse = dot(o.friction, t2);
}

/// The step's end, a pair per lane: each contact point as the next step's
/// warm start reads it (bodies, the point in a's frame at the step's start,
/// the final impulses), in Contacts' order. The cache's capacity is Contacts':
/// it never overflows.
ORRERY_HD inline void remember_contacts(Buffer<Bodies> bodies, Buffer<Pairs> pairs, Buffer<Contacts> contacts,
                                        Buffer<ContactCache> cache, const Lanes& l) {
    for (uint32_t k = l.lane; k < pairs.size(); k += l.count) {
        const Pair& p = pairs[k];
        const SolverBody& a = bodies[p.a];
        const PointRun run = points_at(contacts, p.first);
        for (uint32_t i = p.first; i < p.first + p.count; ++i) {
            const Contact c = run.load(i - p.first);
            CachedContact o;
            o.a = uint16_t(p.a), o.b = uint16_t(p.b);
            o.ea = a.entity, o.eb = bodies[p.b].entity;
            o.la = unrotate(a.q0, c.ra);
            o.normal_impulse = c.normal_impulse;
            o.friction = c.t1 * c.t1_impulse + contact_t2(c) * c.t2_impulse;
            o.n = c.n;
            cache[i] = o;
        }
    }
    if (l.lane == 0) cache.resize(contacts.size());
}

/// What one world's step works in: its bodies, this and last step's
/// contacts, its joints (resolved against the bodies), and the solver's scratch.
struct StepBuffers {
    Buffer<Bodies> bodies;
    Buffer<Contacts> contacts;
    Buffer<ContactCache> cache;
    Buffer<Joints> joints;
    Buffer<Pairs> pairs;
    Buffer<Manifolds> manifolds; ///< pair k's manifold at k
    Buffer<SolveOrder> order;
    Colouring* colouring;
    /// Joint k's weld geometry at k, kept between passes (pass_constraint);
    /// a buffer of no capacity (a caller's own buffers) makes it each pass,
    /// the same bits.
    Buffer<WeldSteps> welds = {};
    /// Point k's separation at k, kept from the pass after the bodies move to
    /// the passes before the next move (solve_points); no capacity: each pass
    /// makes it, the same bits.
    Buffer<Separations> separations = {};
};

/// Whether bodies a and b may meet this step: their bounding spheres (planes:
/// always) within margin plus the distance both surfaces may move.
ORRERY_HD inline bool within_reach(const SolverBody& a, const SolverBody& b, float margin) {
    if (a.bound < 0.0f || b.bound < 0.0f) return true;
    Vec3 d = b.x - a.x;
    float r = a.bound + b.bound + (margin + a.sweep + b.sweep);
    return dot(d, d) <= r * r;
}
/// Whether the broadphase keeps bodies a and b: one of them awake (dynamic,
/// not asleep) and the two within reach.
ORRERY_HD inline bool may_touch(const SolverBody& a, const SolverBody& b, float margin) {
    return (awake(a) || awake(b)) && within_reach(a, b, margin);
}

/// Calls f(i, j) for pairs lo..hi-1 of n bodies, numbered (0,1), (0,2), ..., (1,2), ...
template <class F> ORRERY_HD void walk_pairs(uint32_t n, uint32_t lo, uint32_t hi, F&& f) {
    if (lo >= hi) return;
    uint32_t i = 0, p = lo;
    while (p >= n - 1 - i) p -= n - 1 - i, ++i;
    uint32_t j = i + 1 + p;
    for (uint32_t k = lo; k < hi; ++k) {
        f(i, j);
        if (++j == n) ++i, j = i + 1;
    }
}

#if !defined(__CUDA_ARCH__)
/// find_pairs on one host lane, for up to 64 bodies: body i meets every later
/// body when it is awake, else only the later awake ones (may_touch keeps no
/// pair with neither awake: walls, the floor, locked and sleeping bodies),
/// and each reach test adds its answer to the slot count with no branch. The
/// same pairs in the same order as the walk over every pair; returns their
/// count (past the capacity only the first capacity() are written).
inline uint32_t find_pairs_host(const StepBuffers& s, const Params& prm) {
    const uint32_t n = s.bodies.size(), cap = s.pairs.capacity();
    uint64_t woke = 0;
    for (uint32_t i = 0; i < n; ++i) woke |= uint64_t(awake(s.bodies[i])) << i;
    const uint64_t all = n == 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1;
    uint32_t at = 0;
    for (uint32_t i = 0; i + 1 < n; ++i) {
        const SolverBody& a = s.bodies[i];
        const uint64_t later = all & (~uint64_t(0) << i << 1);
        for (uint64_t meets = later & (awake(a) ? all : woke); meets; meets &= meets - 1) {
            const uint32_t j = uint32_t(__builtin_ctzll(meets));
            const bool kept = within_reach(a, s.bodies[j], prm.margin);
            if (at < cap) s.pairs[at].a = i, s.pairs[at].b = j; // the next free slot: a pair not kept is overwritten
            at += kept;
        }
    }
    return at;
}
#endif

/// Broadphase into s.pairs, in pair order: each lane tests a contiguous run
/// of the pairs, counts what it keeps, and after a sync writes them from its
/// offset (on the host a lone lane writes as it tests: one walk). Ends with a sync.
ORRERY_HD inline void find_pairs(const StepBuffers& s, const Params& prm, const Lanes& l) {
    const uint32_t n = s.bodies.size(), total = n > 1 ? n * (n - 1) / 2 : 0u;
    const uint32_t team = min_of(l.count, kMaxSolverLanes);
    const bool works = l.lane < team;
    // total < 2^23 (max_bodies <= 4096) and team <= 32: the products fit in 32 bits.
    const uint32_t lo = total * min_of(l.lane, team) / team, hi = total * min_of(l.lane + 1, team) / team;
    // Writes the pairs kept of from..to - 1 from slot `at` on; returns the slot after them.
    auto keep = [&](uint32_t at, uint32_t from, uint32_t to) {
        walk_pairs(n, from, to, [&](uint32_t i, uint32_t j) {
            if (!may_touch(s.bodies[i], s.bodies[j], prm.margin)) return;
            if (at < s.pairs.capacity()) s.pairs[at].a = i, s.pairs[at].b = j;
            ++at;
        });
        return at;
    };
#if !defined(__CUDA_ARCH__) // the GPU's kernel keeps one path (its code size decides its speed)
    if (l.count == 1) {
        s.pairs.resize(n <= 64 ? find_pairs_host(s, prm) : keep(0, 0, total));
        return;
    }
#endif
    uint32_t* per_lane = s.colouring->lane_pairs;
    if (works) {
        uint32_t kept = 0;
        walk_pairs(n, lo, hi, [&](uint32_t i, uint32_t j) { kept += may_touch(s.bodies[i], s.bodies[j], prm.margin); });
        per_lane[l.lane] = kept;
    }
    l.sync();
    uint32_t at = 0, all = 0;
    for (uint32_t k = 0; k < team; ++k) at += k < l.lane ? per_lane[k] : 0u, all += per_lane[k];
    if (works) keep(at, lo, hi);
    if (l.lane == 0) s.pairs.resize(all); // past the capacity: kBufferOverflow, the first max_pairs kept
    l.sync();
}

/// The narrowphase of pair p: its manifold, with points kept up to margin
/// plus the distance both surfaces may move this step apart (speculative
/// contacts: what would meet during the step is caught at its start).
ORRERY_HD inline Manifold manifold_of(Buffer<Bodies> bodies, const Pair& p, const Params& prm, const HullSet& hulls) {
    const SolverBody& a = bodies[p.a];
    const SolverBody& b = bodies[p.b];
    return collide_any(Placed{a.shape, a.x, a.q}, Placed{b.shape, b.x, b.q}, prm.margin + a.sweep + b.sweep, hulls);
}

/// The pair that point q of Contacts belongs to: the last pair whose first
/// point is at or before q (pairs without points share the next one's
/// first, and come before it). q must be below Contacts' size.
ORRERY_HD inline uint32_t pair_of_point(const StepBuffers& s, uint32_t q) {
    uint32_t lo = 0, hi = s.pairs.size();
    while (hi - lo > 1) {
        const uint32_t mid = lo + (hi - lo) / 2;
        if (s.pairs[mid].first <= q)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

// Each pair finds its first entry in last step's contact cache once, in the
// narrowphase, and keeps it in its manifold's count (the pair holds the
// count), where each point searched for it again while the points were made
// (ORRERY_PHYS_CACHE_ONCE=0, an NVRTC or compiler define: per point). The
// same entry either way. A field of its own would have changed the Manifolds
// scratch's size, which checkpoints name (EnvSpec's layout), for under 1 %.
#ifndef ORRERY_PHYS_CACHE_ONCE
#define ORRERY_PHYS_CACHE_ONCE 1
#endif

/// Points from, ..., to - 1 of pair p from its manifold m, each inheriting
/// last step's impulses.
ORRERY_HD inline void make_contacts(const StepBuffers& s, const Pair& p, const Manifold& m, uint32_t from, uint32_t to,
                                    const Params& prm) {
    const SolverBody& a = s.bodies[p.a];
    const SolverBody& b = s.bodies[p.b];
    const Tangents t = tangents_of(m.n);
    for (uint32_t k = from; k < to; ++k) {
        Contact c{};
        c.n = m.n, c.t1 = t.t1;
        c.ra = m.p[k] - a.x;
        c.rb = m.p[k] - b.x;
        c.separation = -m.depth[k] - dot(c.rb - c.ra, m.n);
        c.normal_mass = inverse_or_zero(inv_mass_along(a, c.ra, m.n) + inv_mass_along(b, c.rb, m.n));
        c.t1_mass = inverse_or_zero(inv_mass_along(a, c.ra, t.t1) + inv_mass_along(b, c.rb, t.t1));
        c.t2_mass = inverse_or_zero(inv_mass_along(a, c.ra, t.t2) + inv_mass_along(b, c.rb, t.t2));
        c.approach = dot(relative_velocity(a, b, c.ra, c.rb), m.n);
        inherit_impulses(c, t.t2, p.a, p.b, a, b, unrotate(a.q, c.ra), s.cache, prm.match_distance,
                         ORRERY_PHYS_CACHE_ONCE ? m.count : cache_first(s.cache, p.a, p.b));
        points_at(s.contacts, p.first).store(k, c);
    }
}

/// The lowest colour no constraint on bodies a and b (indices; kWorldBody:
/// the world) has yet, then marked on both; kColours when all are taken.
/// Only dynamic bodies count: only they are written.
ORRERY_HD inline uint32_t pick_colour(Buffer<Bodies> bodies, uint32_t a, uint32_t b) {
    SolverBody* ba = a < bodies.size() && moves(bodies[a]) ? &bodies[a] : nullptr;
    SolverBody* bb = b < bodies.size() && moves(bodies[b]) ? &bodies[b] : nullptr;
    uint32_t used = (ba ? ba->colours : 0u) | (bb ? bb->colours : 0u), c = 0;
    while (c < kColours && ((used >> c) & 1u)) ++c;
    if (c == kColours) return c;
    if (ba) ba->colours |= 1u << c;
    if (bb) bb->colours |= 1u << c;
    return c;
}

/// The step's joints: none where the env declares no joint kind (the GPU's
/// kernels then hold no joint code; add_joint refuses every joint there).
ORRERY_HD inline uint32_t joint_count(const StepBuffers& s) { return ORRERY_PHYS_JOINT_KINDS ? s.joints.size() : 0u; }

/// Greedy colouring of the step's constraints (joints in list order, then
/// manifolds in pair order), calling f(entry, colour) for each.
template <class F> ORRERY_HD void colour_constraints(const StepBuffers& s, F&& f) {
    for (uint32_t i = 0; i < s.bodies.size(); ++i) s.bodies[i].colours = 0;
    for (uint32_t k = 0; k < joint_count(s); ++k) f(k, pick_colour(s.bodies, s.joints[k].ia, s.joints[k].ib));
    for (uint32_t k = 0; k < s.pairs.size(); ++k)
        if (s.pairs[k].count > 0) f(kPairEntry | k, pick_colour(s.bodies, s.pairs[k].a, s.pairs[k].b));
}

/// One lane's serial part between the narrowphase and the contacts: each
/// pair's first point in Contacts (a full list keeps the points before it and
/// records kBufferOverflow), and the constraints in colour order (a counting
/// sort over two runs of the same greedy colouring).
ORRERY_HD inline void order_constraints(const StepBuffers& s) {
    uint32_t total = 0, cap = s.contacts.capacity();
    for (uint32_t k = 0; k < s.pairs.size(); ++k) {
        Pair& p = s.pairs[k];
        const uint32_t found = p.count; // the narrowphase's
        p.first = total;
        p.count = total >= cap ? 0u : min_of(found, cap - total);
        total += found;
    }
    s.contacts.resize(total);
    uint32_t* begin = s.colouring->begin;
    for (uint32_t c = 0; c < kColours + 2; ++c) begin[c] = 0;
    colour_constraints(s, [&](uint32_t, uint32_t c) { ++begin[c + 1]; });
    for (uint32_t c = 0; c < kColours + 1; ++c) begin[c + 1] += begin[c];
    uint32_t at[kColours + 1];
    for (uint32_t c = 0; c < kColours + 1; ++c) at[c] = begin[c];
    s.order.resize(begin[kColours + 1]); // its capacity holds every joint and pair: never short
    colour_constraints(s, [&](uint32_t entry, uint32_t c) {
        if (at[c] < s.order.capacity()) s.order[at[c]] = entry;
        ++at[c];
    });
}

#ifndef ORRERY_PHYS_WARP_ORDER
#define ORRERY_PHYS_WARP_ORDER 1
#endif
// order_constraints_warp colours the constraints once, keeping each one's
// colour in a register, and places them 32 at a time; with
// ORRERY_PHYS_WARP_PLACE=0 (an NVRTC define) it runs the greedy colouring a
// second time to place them one by one. The same order either way.
#ifndef ORRERY_PHYS_WARP_PLACE
#define ORRERY_PHYS_WARP_PLACE 1
#endif
// step_bodies aligns the block's teams (Lanes::align) before each substep
// and, with ALIGN_PASSES (an NVRTC define, 1 by default; 0 for measuring
// against), before its solve and relax passes too: +12 % for OpenAI's game
// on an H200. Aligning only every second or fourth substep was 13 % and 19 %
// slower (docs/perf-notes.md rows 48-49).
#ifndef ORRERY_PHYS_ALIGN_PASSES
#define ORRERY_PHYS_ALIGN_PASSES 1
#endif
// ORRERY_PHYS_ALIGN=0 (PhysicsOptions::align = false, a device define from
// add_to) leaves every one of those aligns out, for an env whose worlds run
// the same short passes (the physics crowd stepped 2.0 % faster unaligned at
// 65,536 worlds, 6.3 % slower at 262,144; it aligns).
#ifndef ORRERY_PHYS_ALIGN
#define ORRERY_PHYS_ALIGN 1
#endif
/// Lanes::align, where the env aligns simulate's teams (ORRERY_PHYS_ALIGN).
ORRERY_HD inline void align_teams(const Lanes& l) {
    if (ORRERY_PHYS_ALIGN) l.align();
}
#if defined(__CUDA_ARCH__)
/// The sum of v over lanes 0..lane of a whole-warp team (an inclusive scan).
ORRERY_HD inline uint32_t warp_inclusive_sum(uint32_t v, const Lanes& l) {
    for (uint32_t d = 1; d < 32; d <<= 1) {
        const uint32_t u = __shfl_up_sync(l.mask, v, d);
        if (l.lane >= d) v += u;
    }
    return v;
}

/// order_constraints on a team of one whole warp (l.count == 32, at most 64
/// bodies), the same bytes: the pairs' first points by a scan over the
/// warp, and the greedy colouring entry by entry with each body's colours in
/// a register of one lane (body i in lane i % 32), so each entry costs two
/// shuffles, not two round trips through the bodies on one lane; lane c
/// counts and places colour c. The serial order_constraints on lane 0 was
/// 19 % of the crowd's physics step on an H200 (bench/phys_phases.sh).
ORRERY_HD inline void order_constraints_warp(const StepBuffers& s, const Lanes& l) {
    const uint32_t full = l.mask, lane = l.lane;
    // Each pair's first point: an exclusive scan of the narrowphase's counts, 32 pairs at a time.
    const uint32_t np = s.pairs.size(), cap = s.contacts.capacity();
    uint32_t total = 0;
    for (uint32_t base = 0; base < np; base += 32) {
        const uint32_t k = base + lane, found = k < np ? s.pairs[k].count : 0u;
        const uint32_t incl = warp_inclusive_sum(found, l);
        const uint32_t before = total + incl - found;
        if (k < np) s.pairs[k].first = before, s.pairs[k].count = before >= cap ? 0u : min_of(found, cap - before);
        total += __shfl_sync(full, incl, 31);
    }
    if (lane == 0) s.contacts.resize(total);
    __syncwarp(full);
    // The colouring: pick_colour with the bodies' colours in registers.
    const uint32_t nb = s.bodies.size();
    const bool moves0 = lane < nb && moves(s.bodies[lane]), moves1 = lane + 32 < nb && moves(s.bodies[lane + 32]);
    uint32_t m0 = 0, m1 = 0, here = 0, at = 0;
    auto pick = [&](uint32_t a, uint32_t b) {
        const uint32_t va = __shfl_sync(full, a >= 32 ? m1 : m0, a & 31u);
        const uint32_t vb = __shfl_sync(full, b >= 32 ? m1 : m0, b & 31u);
        const uint32_t used = (a < nb ? va : 0u) | (b < nb ? vb : 0u); // never every bit: c <= kColours
        const uint32_t c = min_of(uint32_t(__ffs(~used) - 1), kColours);
        if (c < kColours) {
            const uint32_t bit = 1u << c;
            if (a == lane && moves0) m0 |= bit;
            if (a == lane + 32 && moves1) m1 |= bit;
            if (b == lane && moves0) m0 |= bit;
            if (b == lane + 32 && moves1) m1 |= bit;
        }
        return c;
    };
    auto each = [&](auto&& f) { // colour_constraints' order
        m0 = m1 = 0;
        for (uint32_t k = 0; k < joint_count(s); ++k) f(k, pick(s.joints[k].ia, s.joints[k].ib));
        for (uint32_t k = 0; k < np; ++k)
            if (s.pairs[k].count > 0) f(kPairEntry | k, pick(s.pairs[k].a, s.pairs[k].b));
    };
    // Each constraint's colour, kept for the placement below: joint or pair k's
    // in 5 bits (at 5 x (k / 32)) of a register of lane k % 32.
    const uint32_t nj = joint_count(s);
    const bool kept = ORRERY_PHYS_WARP_PLACE && np <= 6 * 32 && nj <= 6 * 32;
    uint32_t joint_colours = 0, pair_colours = 0;
    each([&](uint32_t entry, uint32_t c) {
        here += c == lane ? 1u : 0u;
        const uint32_t k = entry & ~kPairEntry;
        if (kept && (k & 31u) == lane) (entry & kPairEntry ? pair_colours : joint_colours) |= c << (5u * (k >> 5));
    });
    const uint32_t incl = warp_inclusive_sum(lane <= kColours ? here : 0u, l); // colour c's count is lane c's
    uint32_t* begin = s.colouring->begin;
    if (lane == 0) begin[0] = 0;
    if (lane <= kColours) begin[lane + 1] = incl;
    at = incl - here;
    const uint32_t entries = __shfl_sync(full, incl, kColours);
    if (lane == 0) s.order.resize(entries); // its capacity holds every joint and pair: never short
    __syncwarp(full);
    if (kept) {
        // 32 constraints at a time in the colouring's order, each placed after
        // the earlier ones of its colour: lane c holds where colour c goes next.
        auto place = [&](uint32_t n, uint32_t colours, uint32_t tag) {
            for (uint32_t base = 0; base < n; base += 32) {
                const uint32_t k = base + lane;
                const bool in = k < n && (tag == 0u || s.pairs[k].count > 0);
                const uint32_t c = (colours >> (5u * (base >> 5))) & 31u;
                const uint32_t vote = __ballot_sync(full, in);
                uint32_t bits[5];
                for (uint32_t b = 0; b < 5; ++b) bits[b] = __ballot_sync(full, in && ((c >> b) & 1u));
                auto of = [&](uint32_t colour) { // the lanes placing a constraint of this colour
                    uint32_t m = vote;
                    for (uint32_t b = 0; b < 5; ++b) m &= ((colour >> b) & 1u) ? bits[b] : ~bits[b];
                    return m;
                };
                const uint32_t where = __shfl_sync(full, at, c) + uint32_t(__popc(of(c) & ((1u << lane) - 1u)));
                if (in && where < s.order.capacity()) s.order[where] = tag | k;
                at += uint32_t(__popc(of(lane)));
            }
        };
        place(nj, joint_colours, 0u);
        place(np, pair_colours, kPairEntry);
    } else {
        each([&](uint32_t entry, uint32_t c) {
            if (c != lane) return;
            if (at < s.order.capacity()) s.order[at] = entry;
            ++at;
        });
    }
    if (lane < nb) s.bodies[lane].colours = m0;
    if (lane + 32 < nb) s.bodies[lane + 32].colours = m1;
}
#endif

/// Box2D's soft constraint coefficients for a spring of `hertz` and damping
/// ratio `zeta` stepped by h (Erin Catto, "Solver2D", 2024).
struct Softness {
    float bias_rate, mass_scale, impulse_scale;
};
ORRERY_HD inline Softness softness(float hertz, float zeta, float h) {
    if (hertz <= 0.0f) return {0.0f, 1.0f, 0.0f};
    float omega = 2.0f * kPi * hertz;
    float a1 = 2.0f * zeta + h * omega, a2 = h * omega * a1, a3 = 1.0f / (1.0f + a2);
    return {omega / a1, a2 * a3, a3};
}

/// r turned by the rotation b has made since the step's start (b.turn).
ORRERY_HD inline Vec3 turned(const SolverBody& b, Vec3 r) {
    return {dot(b.turn[0], r), dot(b.turn[1], r), dot(b.turn[2], r)};
}

/// Sets b.turn to the rows of the rotation q conj(q0): once per body and
/// substep, so each contact's separation costs two matrix products, not two
/// quaternion products and rotations.
ORRERY_HD inline void set_turn(SolverBody& b) {
    Quat dq = b.q * conj(b.q0);
    Vec3 c[3] = {rotate(dq, {1, 0, 0}), rotate(dq, {0, 1, 0}), rotate(dq, {0, 0, 1})}; // columns
    b.turn[0] = {c[0].x, c[1].x, c[2].x};
    b.turn[1] = {c[0].y, c[1].y, c[2].y};
    b.turn[2] = {c[0].z, c[1].z, c[2].z};
}

/// How far b's centre has moved since the step began relative to a's: the
/// same for each point of a pair, and unchanged while a pass solves them
/// (positions move only in integrate_positions).
ORRERY_HD inline Vec3 moved_apart(const SolverBody& a, const SolverBody& b) { return (b.x - b.x0) - (a.x - a.x0); }

/// Current separation of contact c (< 0: overlapping) from the bodies' motion
/// since the step began; `moved` is moved_apart(a, b).
ORRERY_HD inline float separation_now(const SolverBody& a, const SolverBody& b, const Contact& c, Vec3 moved) {
    // A static body never turns (its turn stays the identity): its anchor is as made.
    Vec3 d = moved + ((b.kind == BodyKind::kStatic ? c.rb : turned(b, c.rb)) -
                      (a.kind == BodyKind::kStatic ? c.ra : turned(a, c.ra)));
    return dot(d, c.n) + c.separation;
}

// A manifold has at most kMaxManifold points. On the GPU the loops over a
// pair's points say so: without a bound the compiler made a general loop
// (161 instructions for solve_points' sum of 1 to 4 terms). Kept rolled:
// unrolled, simulate grew by 3,500 instructions and OpenAI's game ran 25 %
// slower on an H200 (docs/benchmarks.md, "Colours in use, ..."). The same
// operations in the same order, so the same bits (ORRERY_PHYS_POINT_BOUND=0,
// an NVRTC define: the plain loops).
#ifndef ORRERY_PHYS_POINT_BOUND
#define ORRERY_PHYS_POINT_BOUND 1
#endif
#if defined(__CUDA_ARCH__) && ORRERY_PHYS_POINT_BOUND
#define ORRERY_FOR_POINTS(k, n) _Pragma("unroll 1") for (uint32_t k = 0; k < kMaxManifold && k < (n); ++k)
#else
#define ORRERY_FOR_POINTS(k, n) for (uint32_t k = 0; k < (n); ++k)
#endif

// The point loops below mark a pair's bodies __restrict__ (they share no
// memory with each other or with its points), as they marked the points
// when they took them by pointer: NVRTC then issued 80 fewer loads in
// simulate, and OpenAI's game ran 0.4-0.5 % faster on an H200
// (docs/benchmarks.md, "Colours in use, ..."). Only the compiler's freedom
// changes, not the bits.

/// Each substep starts from the impulses the last one ended with: the n points of run.
ORRERY_HD inline void warm_start_points(SolverBody& __restrict__ a, SolverBody& __restrict__ b, PointRun run,
                                        uint32_t n) {
    Motion ma = motion_of(a), mb = motion_of(b);
    ORRERY_FOR_POINTS(k, n) {
        const Contact c = run.load(k);
        Vec3 p = mul_add(contact_t2(c), c.t2_impulse, mul_add(c.t1, c.t1_impulse, c.n * c.normal_impulse));
        apply_impulse(a, ma, b, mb, p, c.ra, c.rb);
    }
    keep_motion(a, ma), keep_motion(b, mb);
}

/// Normal impulse of one point. With `push`, overlap is removed softly (at
/// most push_speed); without, only velocities are solved (the relax pass).
ORRERY_HD inline void solve_normal(const SolverBody& a, Motion& ma, const SolverBody& b, Motion& mb, Contact& c,
                                   float s, float inv_h, Softness soft, bool push, float push_speed) {
    float bias = 0.0f, mass_scale = 1.0f, impulse_scale = 0.0f;
    if (s > 0.0f) {
        bias = s * inv_h; // speculative: close at most the gap this substep
    } else if (push) {
        bias = max_f(soft.bias_rate * s, -push_speed);
        mass_scale = soft.mass_scale;
        impulse_scale = soft.impulse_scale;
    }
    float vn = dot(relative_velocity(ma, mb, c.ra, c.rb), c.n);
    float impulse = mul_add(-impulse_scale, c.normal_impulse, -c.normal_mass * mass_scale * (vn + bias));
    float total = max_f(c.normal_impulse + impulse, 0.0f);
    impulse = total - c.normal_impulse;
    c.normal_impulse = total;
    c.max_normal_impulse = max_f(c.max_normal_impulse, impulse);
    apply_impulse(a, ma, b, mb, c.n * impulse, c.ra, c.rb);
}

/// A pair's static (s) and dynamic (d) friction, combined from its bodies'
/// materials, and the shape of its friction cone.
struct PairFriction {
    float s, d;
    FrictionCone cone;
};
ORRERY_HD inline PairFriction pair_friction(const SolverBody& a, const SolverBody& b, Combine rule, FrictionCone cone) {
    return {combine(rule, a.material.static_friction, b.material.static_friction),
            combine(rule, a.material.dynamic_friction, b.material.dynamic_friction), cone};
}

/// The nearest point to (f1, f2) with |f1| + |f2| <= c (c >= 0): the
/// pyramidal cone's cross-section, a square with its corners on the tangents.
ORRERY_HD inline void onto_diamond(float& f1, float& f2, float c) {
    float a1 = abs_of(f1), a2 = abs_of(f2), t = 0.5f * (a1 + a2 - c);
    float p1 = a1 - t, p2 = a2 - t;
    if (p1 < 0.0f) p1 = 0.0f, p2 = c;
    if (p2 < 0.0f) p2 = 0.0f, p1 = c;
    f1 = f1 < 0.0f ? -p1 : p1, f2 = f2 < 0.0f ? -p2 : p2;
}

/// Coulomb friction of one point: it sticks while the impulse that stops it
/// is within mu.s times the normal impulse `load`, else slides with mu.d.
/// Within: inside the circle of that radius, or with FrictionCone::kPyramid
/// (MuJoCo's default cone, OpenAI's) |f1| + |f2| along the point's tangents,
/// where sliding keeps the nearest point of the mu.d square (a body sliding
/// along a tangent feels no friction across it: MuJoCo's pyramid does the same).
ORRERY_HD inline void solve_friction(const SolverBody& a, Motion& ma, const SolverBody& b, Motion& mb, Contact& c,
                                     float load, PairFriction mu) {
    Vec3 dv = relative_velocity(ma, mb, c.ra, c.rb), t2 = contact_t2(c);
    float f1 = mul_add(-c.t1_mass, dot(dv, c.t1), c.t1_impulse), f2 = mul_add(-c.t2_mass, dot(dv, t2), c.t2_impulse);
    if (mu.cone == FrictionCone::kPyramid) {
        if (abs_of(f1) + abs_of(f2) > mu.s * load) onto_diamond(f1, f2, mu.d * load);
    } else {
        float len = sqrt_of(f1 * f1 + f2 * f2);
        if (len > mu.s * load) {
            float scale = len > 0.0f ? mu.d * load / len : 0.0f;
            f1 = f1 * scale, f2 = f2 * scale;
        }
    }
    Vec3 p = mul_add(t2, f2 - c.t2_impulse, c.t1 * (f1 - c.t1_impulse));
    c.t1_impulse = f1, c.t2_impulse = f2;
    apply_impulse(a, ma, b, mb, p, c.ra, c.rb);
}

/// True when b cannot tip: turning about both x and y locked (OpenAI's boxes and agents).
ORRERY_HD inline bool cannot_tip(const SolverBody& b) {
    return b.kind == BodyKind::kDynamic && (b.locks & (kLockTurnX | kLockTurnY)) == (kLockTurnX | kLockTurnY);
}

/// One pass over a manifold's n points of run: their normal impulses, then
/// their friction (as Box2D). Contacts touching a non-dynamic body use a
/// stiffer spring (Box2D: twice the frequency). A body that cannot tip
/// leaves the share of a patch's load among its points undetermined, and
/// sequential impulses put it all on the first point, whose friction alone
/// would then turn the body: such a patch's friction takes the points' mean
/// normal impulse, the symmetric share (MuJoCo's regularised solver finds it too).
ORRERY_HD inline void solve_points(SolverBody& __restrict__ a, SolverBody& __restrict__ b, PointRun run, uint32_t n,
                                   float inv_h, Softness soft, Softness static_soft, bool push, float push_speed,
                                   PairFriction mu, float* __restrict__ kept = nullptr, bool moved_since = true) {
    Softness sf = a.kind != BodyKind::kDynamic || b.kind != BodyKind::kDynamic ? static_soft : soft;
    const bool read = kept != nullptr && !moved_since;
    const Vec3 moved = read ? Vec3{} : moved_apart(a, b);
    Motion ma = motion_of(a), mb = motion_of(b);
    ORRERY_FOR_POINTS(k, n) {
        Contact c = run.load(k);
        float s;
        if (read) {
            s = kept[k];
        } else {
            s = separation_now(a, b, c, moved);
            if (kept != nullptr) kept[k] = s;
        }
        solve_normal(a, ma, b, mb, c, s, inv_h, sf, push, push_speed);
        run.store_normal(k, c);
    }
    float shared = -1.0f;
    if (n > 1 && (cannot_tip(a) || cannot_tip(b))) {
        float sum = 0.0f;
        ORRERY_FOR_POINTS(k, n) sum += run.at(k, kFieldNormalImpulse);
        shared = sum / float(n);
    }
    ORRERY_FOR_POINTS(k, n) {
        Contact c = run.load(k);
        solve_friction(a, ma, b, mb, c, shared < 0.0f ? c.normal_impulse : shared, mu);
        run.store_friction(k, c);
    }
    keep_motion(a, ma), keep_motion(b, mb);
}

/// AxisDamping, implicit as in MuJoCo: (M + h D) v' = M v for the velocity
/// after forces, i.e. v' = v / (1 + h d / m) per world axis, and for turning
/// w' = (1 + W h D)^-1 w = w - (W^-1 + h D)^-1 h D w, with W the world-frame
/// inverse inertia: inv_inertia_world holds the damped (W^-1 + h D)^-1
/// (set_world_inertia). Bodies without it are left untouched (not even
/// divided by one).
ORRERY_HD inline void damp_axes(SolverBody& b, float h) {
    Vec3 r = b.axis_rate, d = b.axis_angular;
    if (nonzero(r)) b.v = {b.v.x / (1.0f + h * r.x), b.v.y / (1.0f + h * r.y), b.v.z / (1.0f + h * r.z)};
    if (!nonzero(d)) return;
    b.w -= inv_inertia_times(b, mul(d, b.w) * h);
}

#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
// One CPU lane moves its bodies' velocities four at a time (solve_batch.hpp, the same bits).
template <class Buffer> [[gnu::noinline]] void integrate_velocities_host(Buffer bodies, Vec3 g, float h);
#endif

/// Gravity, forces, torques (less the gyroscopic term) and damping of a
/// lane's share of the dynamic bodies; locked axes keep no velocity.
ORRERY_HD inline void integrate_velocities(Buffer<Bodies> bodies, Vec3 g, float h, const Lanes& l = Lanes{}) {
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
    if (l.count == 1) return integrate_velocities_host(bodies, g, h);
#endif
    for (uint32_t i = l.lane; i < bodies.size(); i += l.count) {
        SolverBody& b = bodies[i];
        if (!awake(b)) continue;
        Vec3 lin = free_axes(b.locks, 0), ang = free_axes(b.locks, 3);
        b.v = mul((b.v + (g + mul(b.inv_mass, b.force)) * h) * (1.0f / (1.0f + h * b.lin_damping)), lin);
        Vec3 wl = unrotate(b.q, b.w);
        Vec3 iw{b.inv_inertia.x > 0.0f ? wl.x / b.inv_inertia.x : 0.0f,
                b.inv_inertia.y > 0.0f ? wl.y / b.inv_inertia.y : 0.0f,
                b.inv_inertia.z > 0.0f ? wl.z / b.inv_inertia.z : 0.0f};
        Vec3 tl = unrotate(b.q, b.torque) - cross(wl, iw);
        b.w = mul((b.w + rotate(b.q, mul(b.inv_inertia, tl)) * h) * (1.0f / (1.0f + h * b.ang_damping)), ang);
        damp_axes(b, h);
    }
}

#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
// One CPU lane moves its bodies four at a time (solve_batch.hpp, the same bits).
template <class Buffer> [[gnu::noinline]] void integrate_positions_host(Buffer bodies, float h);
#endif

/// Moves a lane's share of the non-static bodies by their velocity.
ORRERY_HD inline void integrate_positions(Buffer<Bodies> bodies, float h, const Lanes& l) {
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
    if (l.count == 1) return integrate_positions_host(bodies, h);
#endif
    for (uint32_t i = l.lane; i < bodies.size(); i += l.count) {
        SolverBody& b = bodies[i];
        if (b.kind == BodyKind::kStatic || (b.sleep & kAsleep)) continue;
        b.x = mul_add(b.v, h, b.x);
        b.q = integrate(b.q, b.w, h);
        set_turn(b);
    }
}

/// After the substeps: of the n points of run, those that were approaching
/// faster than the bounce speed and were pushed leave at `restitution` times that speed.
ORRERY_HD inline void restitute_points(SolverBody& __restrict__ a, SolverBody& __restrict__ b, PointRun run, uint32_t n,
                                       float bounce_speed, float restitution) {
    Motion ma = motion_of(a), mb = motion_of(b);
    ORRERY_FOR_POINTS(k, n) {
        Contact c = run.load(k);
        if (restitution == 0.0f || c.approach > -bounce_speed || c.max_normal_impulse == 0.0f) continue;
        float vn = dot(relative_velocity(ma, mb, c.ra, c.rb), c.n);
        float impulse = -c.normal_mass * (vn + restitution * c.approach);
        float total = max_f(c.normal_impulse + impulse, 0.0f);
        impulse = total - c.normal_impulse;
        c.normal_impulse = total;
        run.store_normal(k, c);
        apply_impulse(a, ma, b, mb, c.n * impulse, c.ra, c.rb);
    }
    keep_motion(a, ma), keep_motion(b, mb);
}

// A weld solves its own rows (joint.hpp's solve_weld; =0, an NVRTC or
// compiler define: the general rows of solve_joint, the same model in other
// rounding, docs/perf-notes.md row 62).
#ifndef ORRERY_PHYS_WELD_ROWS
#define ORRERY_PHYS_WELD_ROWS 1
#endif
// A weld's geometry kept from pass to pass in the step's WeldSteps scratch
// (pass_constraint); =0 makes it in each pass, the same bits.
// On by default on the CPU only: on the GPU (an H100, docs/perf-notes.md
// row 103) making it in each pass stepped 0.3-0.7 % faster, the crowd with
// no joints too, so the kept form's cost there is the kernel's code, not
// the welds' passes.
// A point's separation (separation_now: its anchors turned by the bodies'
// turns, along its normal) hangs on the bodies' positions alone, which move
// once a substep, between its solve and relax passes: the relax pass makes
// and keeps each point's in the step's Separations scratch, and the next
// substep's solve pass reads it (ORRERY_PHYS_KEEP_SEPARATIONS=1, the
// default; =0, an NVRTC or compiler define, makes it in every pass). The
// same value either way, so the same bits. The CPU's batches
// (solve_batch.hpp) make their own. docs/perf-notes.md row 135: OpenAI's
// game +2.5 % at 1,024 worlds on an H200; a phase of its own after each
// move, both passes reading, lost 1-5 % and was taken out.
#ifndef ORRERY_PHYS_KEEP_SEPARATIONS
#define ORRERY_PHYS_KEEP_SEPARATIONS 1
#endif

#ifndef ORRERY_PHYS_KEEP_WELDS
#if defined(ORRERY_DEVICE_CODE)
#define ORRERY_PHYS_KEEP_WELDS 0
#else
#define ORRERY_PHYS_KEEP_WELDS 1
#endif
#endif
// The joints' part of a step, defined in physics/joint.hpp (included below).
ORRERY_HD inline void warm_start_joint(SolverBody& a, SolverBody& b, const Joint& j);
ORRERY_HD inline void solve_joint(SolverBody& a, SolverBody& b, Joint& j, float inv_h, Softness soft, bool bias);
ORRERY_HD inline WeldStep weld_step(const SolverBody& a, const SolverBody& b, const Joint& j);
ORRERY_HD inline void warm_start_weld(SolverBody& a, SolverBody& b, const Joint& j, const WeldStep& g);
ORRERY_HD inline void solve_weld(SolverBody& a, SolverBody& b, Joint& j, Softness soft, bool bias, const WeldStep& g);
ORRERY_HD inline void resolve_joints(Buffer<Bodies> bodies, Buffer<Joints> joints);
ORRERY_HD inline SolverBody world_body();
inline constexpr uint32_t kWorldBody = 0xFFFFFFFFu; ///< Joint::ib when b is the world

/// What a pass over the constraints does to each.
enum class Pass : uint32_t { kWarmStart, kSolve, kRelax, kRestitution };
/// A step's constants for the passes.
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
struct BatchPlan; // solve_batch.hpp
#endif
struct PassParams {
    float inv_h;
    Softness soft, static_soft, joint_soft;
    float push_speed, bounce_speed;
    Combine friction_rule, restitution_rule;
    FrictionCone friction_cone;
    uint32_t colours; ///< bit c set when colour c (0..kColours) has constraints: colours_in_use
    bool welds_moved; ///< the welds' bodies moved since their geometry was made: the next pass makes it
    /// The bodies moved since the points' separations were kept (Separations):
    /// the next solve or relax pass makes and keeps them, the passes after it read them.
    bool points_moved;
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
    const BatchPlan* plan; ///< one CPU lane's batches of the step (solve_batch.hpp), or null
#endif
};

/// The colours of the step's order that hold constraints, as pass_constraints
/// tests each (its entries [begin[c], min(begin[c + 1], order size)) not empty).
ORRERY_HD inline uint32_t colours_in_use(const StepBuffers& s) {
    static_assert(kColours < 32, "a colour per bit");
    uint32_t used = 0;
    for (uint32_t c = 0; c <= kColours; ++c)
        if (s.colouring->begin[c] < min_of(s.colouring->begin[c + 1], s.order.size())) used |= 1u << c;
    return used;
}
/// Index of the lowest set bit of m (m != 0).
ORRERY_HD inline uint32_t lowest_bit(uint32_t m) {
#if defined(__CUDA_ARCH__)
    return uint32_t(__ffs(m) - 1);
#else
    return uint32_t(__builtin_ctz(m));
#endif
}
ORRERY_HD inline uint32_t lowest_bit(orrery::uint64_t m) {
#if defined(__CUDA_ARCH__)
    return uint32_t(__ffsll((long long)m) - 1);
#else
    return uint32_t(__builtin_ctzll(m));
#endif
}

// The GPU's kernels hold an env's friction and restitution rules and its
// friction cone as constants: phys::add_to passes them as device defines
// (ORRERY_PHYS_FRICTION_RULE, _RESTITUTION_RULE, _FRICTION_CONE, through
// EnvSpec::device_define), made from the same options as its Settings, so a
// pass holds only the code of its env's rules (the geometric rule's and the
// circle's square roots, the circle's division, where the env takes neither).
// The CPU reads them from Params. ORRERY_PHYS_RUNTIME_RULES (an NVRTC define,
// for the A/B) reads Params on the GPU too. The same values, so the same bits.
#if defined(ORRERY_PHYS_RUNTIME_RULES)
#undef ORRERY_PHYS_FRICTION_RULE
#undef ORRERY_PHYS_RESTITUTION_RULE
#undef ORRERY_PHYS_FRICTION_CONE
#endif
ORRERY_HD inline Combine pass_friction_rule(const PassParams& pp) {
#if defined(ORRERY_PHYS_FRICTION_RULE)
    (void)pp;
    return Combine(ORRERY_PHYS_FRICTION_RULE);
#else
    return pp.friction_rule;
#endif
}
ORRERY_HD inline Combine pass_restitution_rule(const PassParams& pp) {
#if defined(ORRERY_PHYS_RESTITUTION_RULE)
    (void)pp;
    return Combine(ORRERY_PHYS_RESTITUTION_RULE);
#else
    return pp.restitution_rule;
#endif
}
ORRERY_HD inline FrictionCone pass_friction_cone(const PassParams& pp) {
#if defined(ORRERY_PHYS_FRICTION_CONE)
    (void)pp;
    return FrictionCone(ORRERY_PHYS_FRICTION_CONE);
#else
    return pp.friction_cone;
#endif
}

/// One constraint's part of a pass: a SolveOrder entry, a joint or a pair's manifold.
ORRERY_HD inline void pass_constraint(const StepBuffers& s, uint32_t entry, Pass pass, const PassParams& pp) {
    if (entry & kPairEntry) {
        const Pair& p = s.pairs[entry & ~kPairEntry];
        SolverBody& a = s.bodies[p.a];
        SolverBody& b = s.bodies[p.b];
        const PointRun c = points_at(s.contacts, p.first);
        switch (pass) {
        case Pass::kWarmStart: return warm_start_points(a, b, c, p.count);
        case Pass::kSolve:
        case Pass::kRelax: // one call for both: the relax pass is the solve without the push
            return solve_points(a, b, c, p.count, pp.inv_h, pp.soft, pp.static_soft, pass == Pass::kSolve,
                                pp.push_speed, pair_friction(a, b, pass_friction_rule(pp), pass_friction_cone(pp)),
                                p.first + p.count <= s.separations.capacity() ? &s.separations[p.first] : nullptr,
                                pp.points_moved);
        case Pass::kRestitution:
            return restitute_points(a, b, c, p.count, pp.bounce_speed,
                                    combine(pass_restitution_rule(pp), a.material.restitution, b.material.restitution));
        }
        return;
    }
    if (pass == Pass::kRestitution || ORRERY_PHYS_JOINT_KINDS == 0u) return; // no joint code without joints
    Joint& j = s.joints[entry];
    SolverBody world; // static, nothing writes it; made only for a joint to the world (SolverBody is ~300 bytes)
    if (j.ia == kWorldBody || j.ib == kWorldBody) world = world_body();
    SolverBody& a = j.ia == kWorldBody ? world : s.bodies[j.ia];
    SolverBody& b = j.ib == kWorldBody ? world : s.bodies[j.ib];
    if (ORRERY_PHYS_WELD_ROWS && ORRERY_PHYS_KEEP_WELDS && is_weld(j)) {
        // Its bodies move only in integrate_positions, so the geometry the
        // first pass after a move makes (pp.welds_moved) holds until the
        // next move: the same bits as made in each pass.
        const bool keep = entry < s.welds.capacity();
        const bool make = !keep || pp.welds_moved;
        WeldStep g;
        if (make) {
            g = weld_step(a, b, j);
            if (keep) s.welds[entry] = g;
        } else {
            g = s.welds[entry];
        }
        if (pass == Pass::kWarmStart) return warm_start_weld(a, b, j, g);
        return solve_weld(a, b, j, pp.joint_soft, pass == Pass::kSolve, g);
    }
    if (pass == Pass::kWarmStart)
        warm_start_joint(a, b, j);
    else
        solve_joint(a, b, j, pp.inv_h, pp.joint_soft, pass == Pass::kSolve);
}

// A pass walks only the colours in use (pp.colours, made once a step), not
// every colour's bounds (ORRERY_PHYS_USED_COLOURS=0, an NVRTC define: all
// kColours + 1 of them, each pass). The same colours in the same order.
#ifndef ORRERY_PHYS_USED_COLOURS
#define ORRERY_PHYS_USED_COLOURS 1
#endif

#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
// One CPU lane's warm-start, solve and relax passes over a colour, four pairs
// at a time from batches planned once a step (solve_batch.hpp, included at
// the end; plan_colours after the colouring). Kept out of line (templates, as
// GCC warns of an inline function that is not to be inlined): inlined into
// step_bodies, the batch crowded GCC out of inlining rotate and the
// quaternion product in the integrate passes (-8 %).
template <class Buffers> [[gnu::noinline]] const BatchPlan* plan_colours(const Buffers& s, const PassParams& pp);
template <class Buffers>
[[gnu::noinline]] void solve_planned(const BatchPlan& plan, uint32_t c, const Buffers& s, Pass pass,
                                     const PassParams& pp);
#endif

/// One pass over the constraints, colour by colour: a colour's constraints
/// share no dynamic body, so the lanes take them at once and the order among
/// them changes no bit; the last colour's run on lane 0 in order. A sync
/// follows each colour.
ORRERY_HD inline void pass_constraints(const StepBuffers& s, Pass pass, const PassParams& pp, const Lanes& l) {
    const uint32_t* begin = s.colouring->begin;
#if ORRERY_PHYS_USED_COLOURS
    for (uint32_t used = pp.colours; used; used &= used - 1) {
        const uint32_t c = lowest_bit(used);
        const uint32_t b = begin[c], e = min_of(begin[c + 1], s.order.size());
#else
    for (uint32_t c = 0; c <= kColours; ++c) {
        const uint32_t b = begin[c], e = min_of(begin[c + 1], s.order.size());
        if (b >= e) continue;
#endif
        const bool serial = c == kColours;
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
        if (pp.plan && !serial && pass != Pass::kRestitution) // pp.plan: one lane (step_bodies)
            solve_planned(*pp.plan, c, s, pass, pp);
        else
#endif
            for (uint32_t i = b + (serial ? 0u : l.lane); i < e && (!serial || l.lane == 0); i += serial ? 1u : l.count)
                pass_constraint(s, s.order[i], pass, pp);
        l.sync();
    }
}

/// The step's start, a lane's share of it: each body's pose and inertia now
/// and how far it may move.
ORRERY_HD inline void begin_bodies(const StepBuffers& s, const Params& prm, const Lanes& l) {
    for (uint32_t i = l.lane; i < s.bodies.size(); i += l.count) {
        SolverBody& b = s.bodies[i];
        b.x0 = b.x, b.q0 = b.q;
        b.turn[0] = {1, 0, 0}, b.turn[1] = {0, 1, 0}, b.turn[2] = {0, 0, 1};
        set_world_inertia(b, prm.dt / float(prm.substeps)); // step_bodies' substep, the same bits
        b.sweep = prm.dt * (length(b.v) + length(b.w) * max_f(b.bound, 0.0f));
    }
}

/// Pairs, their manifolds, the colour order and the contact points, each
/// phase shared by the lanes and ended by a sync (order_constraints on lane 0).
/// The narrowphase runs once, a pair per lane, keeping each manifold (step
/// scratch, 80 bytes a pair) until every earlier pair's count has placed its
/// points in Contacts; then the pairs with points make them.
ORRERY_HD inline void find_contacts(const StepBuffers& s, const Params& prm, const HullSet& hulls, const Lanes& l,
                                    PhaseClock* clock = nullptr) {
    find_pairs(s, prm, l);
    mark(clock, kPhasePairs);
    for (uint32_t k = l.lane; k < s.pairs.size(); k += l.count) {
        Manifold m = manifold_of(s.bodies, s.pairs[k], prm, hulls);
        s.pairs[k].count = m.count;
        if (ORRERY_PHYS_CACHE_ONCE && m.count > 0) m.count = cache_first(s.cache, s.pairs[k].a, s.pairs[k].b);
        s.manifolds[k] = m; // Manifolds' capacity is Pairs'
    }
    l.sync();
    mark(clock, kPhaseNarrow);
    bool by_warp = false; // the same bytes either way (ORRERY_PHYS_WARP_ORDER=0, an NVRTC define: never)
#if defined(__CUDA_ARCH__) && ORRERY_PHYS_WARP_ORDER
    by_warp = l.count == 32 && s.bodies.size() <= 64;
    if (by_warp) order_constraints_warp(s, l);
#endif
    if (!by_warp && l.lane == 0) order_constraints(s);
    l.sync();
    mark(clock, kPhaseOrder);
    // Each point depends on its pair alone. One lane makes them pair by pair;
    // a team makes them a point per lane (a pair's 1 to 4 points per lane left
    // most of a GPU team idle). The same bytes either way.
    if (l.count == 1) {
        for (uint32_t k = 0; k < s.pairs.size(); ++k)
            if (s.pairs[k].count > 0) make_contacts(s, s.pairs[k], s.manifolds[k], 0, s.pairs[k].count, prm);
    } else {
        for (uint32_t q = l.lane; q < s.contacts.size(); q += l.count) {
            const uint32_t k = pair_of_point(s, q), i = q - s.pairs[k].first;
            make_contacts(s, s.pairs[k], s.manifolds[k], i, i + 1, prm);
        }
    }
    l.sync();
    mark(clock, kPhaseMake);
}

/// Wakes b: it counts its still steps from zero again.
ORRERY_HD inline void wake_body(SolverBody& b) { b.sleep &= ~kAsleep, b.still = 0; }
/// Wakes each asleep body a joint holds (wake_bodies' first part, on one
/// lane); returns how many it woke.
ORRERY_HD inline uint32_t wake_joint_bodies(const StepBuffers& s) {
    const uint32_t n = s.bodies.size();
    uint32_t woken = 0;
    for (uint32_t k = 0; k < joint_count(s); ++k) {
        const Joint& j = s.joints[k];
        if (j.ia < n && (s.bodies[j.ia].sleep & kAsleep)) wake_body(s.bodies[j.ia]), ++woken;
        if (j.ib < n && (s.bodies[j.ib].sleep & kAsleep)) wake_body(s.bodies[j.ib]), ++woken;
    }
    return woken;
}

/// Sleeping at the step's start, on one lane: wakes each asleep body a joint
/// holds, then each within reach of a moving body (awake and dynamic, or
/// kinematic), again until none wakes, so that a touched stack wakes whole
/// (Box2D wakes an island). The set woken is the closure, the same in any
/// order. A woken body counts its still steps from zero again.
ORRERY_HD inline void wake_bodies(const StepBuffers& s, const Params& prm) {
    const uint32_t n = s.bodies.size();
    uint32_t asleep = 0;
    for (uint32_t i = 0; i < n; ++i) asleep += (s.bodies[i].sleep & kAsleep) ? 1u : 0u;
    if (asleep == 0) return;
    auto wake = [&](SolverBody& b) {
        wake_body(b);
        --asleep;
    };
    asleep -= wake_joint_bodies(s);
    for (bool woke = true; woke && asleep > 0;) {
        woke = false;
        for (uint32_t i = 0; i < n; ++i) {
            const SolverBody& m = s.bodies[i];
            if (!awake(m) && m.kind != BodyKind::kKinematic) continue;
            for (uint32_t j = 0; j < n; ++j) {
                SolverBody& b = s.bodies[j];
                if ((b.sleep & kAsleep) && within_reach(m, b, prm.margin)) wake(b), woke = true;
            }
        }
    }
}

/// Whether b has been still for sleep_steps (settle_bodies).
ORRERY_HD inline bool still_enough(const SolverBody& b, const Params& prm) {
    return (b.sleep & kSleepy) && awake(b) && b.still >= prm.sleep_steps;
}
/// Whether b keeps the still bodies joined to it awake (settle_bodies).
ORRERY_HD inline bool keeps_awake(const SolverBody& b, const Params& prm) {
    return (awake(b) && !still_enough(b, prm)) || b.kind == BodyKind::kKinematic || (b.sleep & kBlocked);
}
/// settle_bodies' count for body b: clears its block and, awake with Sleep,
/// counts this step if it ended slow; returns whether it is still enough.
ORRERY_HD inline bool count_still(SolverBody& b, const Params& prm) {
    b.sleep &= ~kBlocked;
    if (!(b.sleep & kSleepy) || !awake(b)) return false;
    const float speed = length(b.v) + length(b.w) * max_f(b.bound, 0.0f);
    b.still = speed < prm.sleep_speed ? min_of(b.still + 1u, prm.sleep_steps) : 0u;
    return still_enough(b, prm);
}

/// Sleeping at the step's end, on one lane. Each awake body with Sleep
/// counts the steps in a row it has ended slower than sleep_speed (|v| plus
/// |w| times its bound: its fastest surface point, as Box2D). Those still for
/// sleep_steps fall asleep, their velocity zeroed, unless this step's pairs
/// or joints join them, directly or through others of them, to a body that
/// moves (awake and not still long enough, without Sleep, or kinematic): a
/// group sleeps only whole, as Box2D's islands.
ORRERY_HD inline void settle_bodies(const StepBuffers& s, const Params& prm) {
    const uint32_t n = s.bodies.size();
    uint32_t ready = 0;
    for (uint32_t i = 0; i < n; ++i) ready += count_still(s.bodies[i], prm) ? 1u : 0u;
    if (ready == 0) return;
    auto still = [&](const SolverBody& b) { return still_enough(b, prm); };
    auto moving = [&](const SolverBody& b) { return keeps_awake(b, prm); };
    auto link = [&](uint32_t i, uint32_t j, bool& spread) {
        if (i >= n || j >= n) return; // a joint to the world
        SolverBody& a = s.bodies[i];
        SolverBody& b = s.bodies[j];
        if (still(a) && !(a.sleep & kBlocked) && moving(b)) a.sleep |= kBlocked, spread = true;
        if (still(b) && !(b.sleep & kBlocked) && moving(a)) b.sleep |= kBlocked, spread = true;
    };
    for (bool spread = true; spread;) {
        spread = false;
        for (uint32_t k = 0; k < s.pairs.size(); ++k) link(s.pairs[k].a, s.pairs[k].b, spread);
        for (uint32_t k = 0; k < joint_count(s); ++k) link(s.joints[k].ia, s.joints[k].ib, spread);
    }
    for (uint32_t i = 0; i < n; ++i) {
        SolverBody& b = s.bodies[i];
        if (!still(b) || (b.sleep & kBlocked)) continue;
        b.sleep |= kAsleep;
        b.v = b.w = Vec3{0.0f, 0.0f, 0.0f};
    }
}

#ifndef ORRERY_PHYS_WARP_SLEEP
#define ORRERY_PHYS_WARP_SLEEP 1
#endif
#if defined(__CUDA_ARCH__)
/// Bodies i and i + 32 of a whole-warp team's (at most 64) are lane i's.
/// A set of them as two words, bit i of lo for body i, of hi for i + 32.
struct WarpBodySet {
    uint32_t lo = 0, hi = 0;
    ORRERY_HD void add(uint32_t i) { (i < 32 ? lo : hi) |= 1u << (i & 31u); }
};
/// The union of every lane's set, on every lane.
ORRERY_HD inline WarpBodySet warp_union(WarpBodySet s, const Lanes& l) {
    for (uint32_t d = 16; d > 0; d >>= 1)
        s.lo |= __shfl_xor_sync(l.mask, s.lo, d), s.hi |= __shfl_xor_sync(l.mask, s.hi, d);
    return s;
}

/// wake_bodies on a team of one whole warp (l.count == 32, at most 64
/// bodies), the same bytes: lane 0 wakes the joints' bodies, then in rounds
/// each lane tests its asleep bodies against every moving one, and the
/// bodies found are woken after every lane has tested, until a round wakes
/// none. Each round wakes at least what a pass of the serial loop would, and
/// both stop at the same closure, each woken body's fields set alike. The
/// serial loop tests each asleep body against each moving one on lane 0: on
/// an H200 its begin phase took 25-44 k cycles of OpenAI's game's world-step
/// (bench/phys_phases.sh), where the crowd, which never sleeps, took 6 k.
ORRERY_HD inline void wake_bodies_warp(const StepBuffers& s, const Params& prm, const Lanes& l) {
    const uint32_t n = s.bodies.size(), lane = l.lane;
    auto asleep_at = [&](uint32_t i) { return i < n && (s.bodies[i].sleep & kAsleep) != 0u; };
    if (!__any_sync(l.mask, asleep_at(lane) || asleep_at(lane + 32))) return;
    if (lane == 0) wake_joint_bodies(s);
    __syncwarp(l.mask);
    for (;;) {
        bool found[2] = {false, false};
        for (uint32_t h = 0; h < 2; ++h) {
            if (!asleep_at(lane + 32 * h)) continue;
            const SolverBody& b = s.bodies[lane + 32 * h];
            for (uint32_t i = 0; i < n && !found[h]; ++i) {
                const SolverBody& m = s.bodies[i];
                if (awake(m) || m.kind == BodyKind::kKinematic) found[h] = within_reach(m, b, prm.margin);
            }
        }
        __syncwarp(l.mask); // every lane has read this round's flags
        if (found[0]) wake_body(s.bodies[lane]);
        if (found[1]) wake_body(s.bodies[lane + 32]);
        const bool woke = __any_sync(l.mask, found[0] || found[1]);
        __syncwarp(l.mask);
        if (!woke) return;
    }
}

/// settle_bodies on a team of one whole warp (at most 64 bodies), the same
/// bytes: each lane counts its bodies' still steps, then in rounds each lane
/// tests a share of the pairs and joints against the round's flags, the
/// still bodies found next to a moving one are blocked after every lane has
/// tested, until a round blocks none (the serial sweep's closure), and each
/// lane puts its still, unblocked bodies to sleep. On lane 0 the sweeps took
/// up to 100 k cycles of a world-step of OpenAI's game with 12 bodies awake.
ORRERY_HD inline void settle_bodies_warp(const StepBuffers& s, const Params& prm, const Lanes& l) {
    const uint32_t n = s.bodies.size(), lane = l.lane;
    bool ready = false;
    for (uint32_t i = lane; i < n; i += 32) ready = count_still(s.bodies[i], prm) || ready;
    if (!__any_sync(l.mask, ready)) return;
    __syncwarp(l.mask); // every lane's counts, for the others' tests
    auto still = [&](const SolverBody& b) { return still_enough(b, prm); };
    auto moving = [&](const SolverBody& b) { return keeps_awake(b, prm); };
    auto link = [&](uint32_t i, uint32_t j, WarpBodySet& found) {
        if (i >= n || j >= n) return; // a joint to the world
        const SolverBody& a = s.bodies[i];
        const SolverBody& b = s.bodies[j];
        if (still(a) && !(a.sleep & kBlocked) && moving(b)) found.add(i);
        if (still(b) && !(b.sleep & kBlocked) && moving(a)) found.add(j);
    };
    for (;;) {
        WarpBodySet found;
        for (uint32_t k = lane; k < s.pairs.size(); k += 32) link(s.pairs[k].a, s.pairs[k].b, found);
        for (uint32_t k = lane; k < joint_count(s); k += 32) link(s.joints[k].ia, s.joints[k].ib, found);
        found = warp_union(found, l); // every lane has read this round's flags
        if (lane < n && (found.lo >> lane & 1u)) s.bodies[lane].sleep |= kBlocked;
        if (lane + 32 < n && (found.hi >> lane & 1u)) s.bodies[lane + 32].sleep |= kBlocked;
        __syncwarp(l.mask);
        if ((found.lo | found.hi) == 0u) break;
    }
    for (uint32_t i = lane; i < n; i += 32) {
        SolverBody& b = s.bodies[i];
        if (!still(b) || (b.sleep & kBlocked)) continue;
        b.sleep |= kAsleep;
        b.v = b.w = Vec3{0.0f, 0.0f, 0.0f};
    }
}
#endif

/// Sets each world's gravity from the settings (an env's init nodes after it may change it).
ORRERY_SYSTEM void init_world(Ctx& ctx) { ctx.single<PhysicsWorld, Gravity>().g = ctx.asset<Settings>()[0].gravity; }

/// One env step for gathered bodies: remember where each starts, wake the
/// sleeping bodies a moving one reaches, find contacts, run the substeps
/// (each pass over the constraints colour by colour), apply restitution,
/// keep the points for the next step's warm start (remember_contacts), and
/// put still bodies to sleep. simulate() wraps it between gathering and
/// scattering; tests call it on buffers of their own. The joints must have
/// been resolved against the bodies (resolve_joints). Every lane of `l`
/// calls it; it ends with a sync.
ORRERY_HD inline void step_bodies(const StepBuffers& s, const Params& prm, Vec3 g, const HullSet& hulls = HullSet{},
                                  const Lanes& l = Lanes{}, PhaseClock* clock = nullptr) {
    begin_bodies(s, prm, l);
    l.sync();
    const bool sleeping = prm.sleep_speed > 0.0f; // the same on every lane
    // A whole-warp team with at most 64 bodies wakes and settles them on
    // every lane (the same bytes; ORRERY_PHYS_WARP_SLEEP=0, an NVRTC define: never).
    bool sleep_by_warp = false;
#if defined(__CUDA_ARCH__) && ORRERY_PHYS_WARP_SLEEP
    sleep_by_warp = l.count == 32 && s.bodies.size() <= 64;
#endif
    if (sleeping) {
#if defined(__CUDA_ARCH__)
        if (sleep_by_warp) wake_bodies_warp(s, prm, l);
#endif
        if (!sleep_by_warp && l.lane == 0) wake_bodies(s, prm);
        l.sync();
    }
    mark(clock, kPhaseBegin);
    find_contacts(s, prm, hulls, l, clock);
    align_teams(l); // the block's teams leave the contact build together (Lanes::align)
    float h = prm.dt / float(prm.substeps);
    // Box2D's rule: the contact spring at most a quarter of the substep rate.
    float hertz = min_f(prm.contact_hertz, 0.25f * float(prm.substeps) / prm.dt);
    PassParams pp{};
    pp.inv_h = 1.0f / h;
    pp.soft = softness(hertz, prm.damping_ratio, h), pp.static_soft = softness(2.0f * hertz, prm.damping_ratio, h);
    // Joints: at most half the substep rate (Box2D's joints run at twice its contact rate).
    pp.joint_soft = softness(min_f(prm.joint_hertz, 0.5f * float(prm.substeps) / prm.dt), prm.joint_damping_ratio, h);
    pp.push_speed = prm.push_speed, pp.bounce_speed = prm.bounce_speed;
    pp.friction_rule = prm.friction_rule, pp.restitution_rule = prm.restitution_rule;
    pp.friction_cone = prm.friction_cone;
    pp.colours = colours_in_use(s);
#if !defined(ORRERY_DEVICE_CODE) && ORRERY_PHYS_BATCH_SOLVE
    if (l.count == 1) pp.plan = plan_colours(s, pp); // the warm-start, solve and relax passes' batches, once a step
#endif
    pp.welds_moved = true;  // the first pass makes the welds' geometry, then each after integrate_positions
    pp.points_moved = true; // and the first solve or relax pass after a move the points' separations
    for (uint32_t sub = 0; sub < prm.substeps; ++sub) {
        align_teams(l); // and start each substep together: one instruction fetch serves them all
        mark(clock, kPhaseAlign);
        integrate_velocities(s.bodies, g, h, l);
        l.sync();
        mark(clock, kPhaseIntegrate);
        pass_constraints(s, Pass::kWarmStart, pp, l);
        pp.welds_moved = false;
        mark(clock, kPhaseWarm);
        if (ORRERY_PHYS_ALIGN_PASSES) { // and each pass after the first
            align_teams(l);
            mark(clock, kPhaseAlign);
        }
        pass_constraints(s, Pass::kSolve, pp, l);
        pp.points_moved = false;
        mark(clock, kPhaseSolve);
        integrate_positions(s.bodies, h, l);
        pp.welds_moved = true, pp.points_moved = true;
        l.sync();
        mark(clock, kPhaseIntegrate);
        if (ORRERY_PHYS_ALIGN_PASSES) {
            align_teams(l);
            mark(clock, kPhaseAlign);
        }
        for (uint32_t r = 0; r < prm.relax_iterations; ++r) {
            pass_constraints(s, Pass::kRelax, pp, l);
            pp.welds_moved = false, pp.points_moved = false;
        }
        mark(clock, kPhaseRelax);
    }
    pass_constraints(s, Pass::kRestitution, pp, l);
    remember_contacts(s.bodies, s.pairs, s.contacts, s.cache, l);
    l.sync();
    if (sleeping) {
#if defined(__CUDA_ARCH__)
        if (sleep_by_warp) settle_bodies_warp(s, prm, l);
#endif
        if (!sleep_by_warp && l.lane == 0) settle_bodies(s, prm);
        l.sync();
    }
    mark(clock, kPhaseEnd);
}

/// A world's step buffers: the cache and joints in its PhysicsWorld
/// singleton, the rest simulate's step scratch (a slot shared by its lanes).
ORRERY_HD inline StepBuffers step_buffers(Ctx& ctx) {
    StepBuffers s = {ctx.scratch_buffer<Bodies>(),
                     ctx.scratch_buffer<Contacts>(),
                     ctx.single_buffer<PhysicsWorld, ContactCache>(),
                     ctx.single_buffer<PhysicsWorld, Joints>(),
                     ctx.scratch_buffer<Pairs>(),
                     ctx.scratch_buffer<Manifolds>(),
                     ctx.scratch_buffer<SolveOrder>(),
                     ctx.scratch<Colouring>(),
                     ctx.scratch_buffer<WeldSteps>()};
#if ORRERY_PHYS_KEEP_SEPARATIONS
    s.separations = ctx.scratch_buffer<Separations>();
#endif
    return s;
}

/// A step's cost, the hint simulate leaves for the GPU's order of its worlds
/// (EnvSpec::order_teams): this step's contact points, awake bodies, joints
/// and colours predict the next step's cycles. The weights are a fit to the
/// H200's phase clocks of the three physics scenes' worlds (a joint's lane
/// runs about 8 times a point's instructions; docs/perf-notes.md row 55).
/// A joint made or removed before the next step moves the hint by
/// kJointCost at once (add_joint, remove_joints): the one part of the next
/// step's work known before it runs (docs/perf-notes.md row 57).
ORRERY_HD inline uint32_t step_cost(const StepBuffers& s) {
    uint32_t awake_bodies = 0, colours = 0;
    for (uint32_t i = 0; i < s.bodies.size(); ++i) awake_bodies += awake(s.bodies[i]) ? 1u : 0u;
    for (uint32_t c = 0; c <= kColours; ++c) colours += s.colouring->begin[c + 1] > s.colouring->begin[c] ? 1u : 0u;
    return 2u * s.contacts.size() + awake_bodies + kJointCost * joint_count(s) + 4u * colours;
}

/// One env step of physics for a world, on a team of lanes: gather, find
/// the joints' bodies (dropping joints whose body is gone), step_bodies, scatter.
ORRERY_SYSTEM void simulate(Ctx& ctx, const Lanes& l) {
    StepBuffers s = step_buffers(ctx);
    PhaseClock clock;
    gather_bodies(ctx, s.bodies, l);
    l.sync();
    if (l.lane == 0 && ORRERY_PHYS_JOINT_KINDS) resolve_joints(s.bodies, s.joints);
    l.sync();
    clock.mark(kPhaseGather);
    step_bodies(s, ctx.asset<Settings>()[0], ctx.single<PhysicsWorld, Gravity>().g, hull_set(ctx), l, &clock);
    if (l.lane == 0 && ctx.wants_cost_hint()) ctx.cost_hint(step_cost(s)); // GPU only: a schedule, no result
    scatter_bodies(ctx, s.bodies, l);
#if defined(ORRERY_PHYS_CLOCKS)
    l.sync();
    clock.mark(kPhaseScatter);
    if (l.lane == 0 && ctx.world() % ORRERY_PHYS_CLOCKS_EVERY == 0) {
        // The step's sizes beside its cycles: colours used, rounds of a pass
        // (a colour of n constraints takes ceil(n / lanes)), the serial colour's
        // length, and a pass's cost in points: over the rounds, the round's
        // largest constraint (a pair's points, a joint as 8, as
        // bench/phys_colouring.py counts), the serial colour's all in turn.
        const uint32_t* begin = s.colouring->begin;
        uint32_t colours = 0, rounds = 0, awake_bodies = 0, cost = 0;
        auto weight = [&](uint32_t entry) { return entry & kPairEntry ? s.pairs[entry & ~kPairEntry].count : 8u; };
        for (uint32_t c = 0; c <= kColours; ++c) {
            const uint32_t b = begin[c], e = min_of(begin[c + 1], s.order.size());
            if (b >= e) continue;                                // as pass_constraints skips it
            const uint32_t width = c == kColours ? 1u : l.count; // the serial colour runs on lane 0
            if (c < kColours) colours += 1, rounds += (e - b + width - 1) / width;
            for (uint32_t r = b; r < e; r += width) {
                uint32_t most = 0;
                for (uint32_t i = r; i < e && i < r + width; ++i) {
                    const uint32_t w = weight(s.order[i]);
                    most = w > most ? w : most;
                }
                cost += most;
            }
        }
        for (uint32_t i = 0; i < s.bodies.size(); ++i) awake_bodies += awake(s.bodies[i]);
        const long long* t = clock.cycles;
        printf("phys-phases world %u bodies %u awake %u pairs %u points %u joints %u colours %u rounds %u serial %u "
               "cost %u cycles %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld %lld\n",
               ctx.world(), s.bodies.size(), awake_bodies, s.pairs.size(), s.contacts.size(), joint_count(s), colours,
               rounds, begin[kColours + 1] - begin[kColours], cost, t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7],
               t[8], t[9], t[10], t[11], t[12]);
#if defined(ORRERY_PHYS_GRAPH) && !defined(__CUDACC_RTC__)
        // The step's constraints as its colouring saw them (a host build with
        // ORRERY_PHYS_GRAPH too): each joint (j) and each pair with points (p)
        // in colouring order, as dynamic body:dynamic body:points (-1 for a
        // body that is not dynamic; a joint counts 0 points), for
        // bench/phys_colouring.py.
        printf("phys-graph world %u", ctx.world());
        auto dynamic = [&](uint32_t i) { return i < s.bodies.size() && moves(s.bodies[i]) ? int(i) : -1; };
        for (uint32_t k = 0; k < joint_count(s); ++k)
            printf(" j:%d:%d:0", dynamic(s.joints[k].ia), dynamic(s.joints[k].ib));
        for (uint32_t k = 0; k < s.pairs.size(); ++k)
            if (s.pairs[k].count > 0)
                printf(" p:%d:%d:%u", dynamic(s.pairs[k].a), dynamic(s.pairs[k].b), s.pairs[k].count);
        printf("\n");
#endif
    }
#endif
}

} // namespace phys

#include "physics/joint.hpp"
#if !defined(ORRERY_DEVICE_CODE)
#include "physics/solve_batch.hpp"
#endif
