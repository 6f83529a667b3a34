#pragma once
// Host only (NVRTC never includes it; solver.hpp includes it at its end): a
// colour's contact pairs solved four at a time on one CPU thread, and the
// bodies moved four at a time. The pairs of a colour share no dynamic body,
// so they may be solved in any order, and at once: each lane of a vector
// instruction takes one pair and runs solve_points' operations in
// solve_points' order on it (simd.hpp: IEEE per lane), so a batch gives the
// scalar solve's bits. The GPU solves a colour a pair per lane of its team
// already; this gives one CPU thread four lanes. Bodies move independently,
// so integrate_positions and integrate_velocities take four at once the same
// way. Measured in docs/benchmarks.md, "A colour's pairs and the bodies' moves
// four to a vector" and "The bodies' velocities four to a vector".

#include <cstddef>
#include <vector>

#include "physics/simd.hpp"
#include "physics/solver.hpp"

namespace phys {

#if ORRERY_PHYS_CONTACT_COLUMNS
#error "the CPU's batches read each contact point as a row of floats (solver.hpp, PointRun)"
#endif

namespace detail {
// A SolverBody from v on: v, w, inv_mass_damped, inv_inertia_world (18
// floats), x, x0 (6: the positions batch's), turn (9), then material: the
// batches read them as rows of floats.
static_assert(offsetof(SolverBody, w) == offsetof(SolverBody, v) + 12 &&
                  offsetof(SolverBody, inv_mass_damped) == offsetof(SolverBody, v) + 24 &&
                  offsetof(SolverBody, inv_inertia_world) == offsetof(SolverBody, v) + 36 &&
                  offsetof(SolverBody, turn) == offsetof(SolverBody, v) + 96 &&
                  offsetof(SolverBody, material) == offsetof(SolverBody, v) + 132,
              "the batch reads a body's solver fields as one run of floats");
// A Contact is read as one run of floats in ContactField's order (body.hpp
// asserts it): n, t1, ra, rb, separation, the three masses, then the four
// impulses the solve writes (normal, t1, t2, max normal), then approach.

/// One side (a or b) of four pairs as it stays through a step: which
/// lanes' bodies the constraints move or turn, their masses, and the
/// velocities of a side with no dynamic body (nothing changes those in a
/// step: integrate_velocities and the impulses move dynamic bodies alone).
struct SideFixed {
    V3x4 inv_mass, inertia[3], v, w;
    V4i moves;  ///< dynamic: impulses change it (only these are written back)
    V4i turned; ///< not static: its anchors turn with it (separation_now)
    bool any_moves, any_turned;
};
/// A side in one pass: its velocities, its positions against the step's
/// start and its turn rows now, and what stays (f).
struct Side4 {
    const SideFixed* f;
    V3x4 v, w, x, x0, turn[3];
};

inline const float* solver_floats(const SolverBody& b) { return &b.v.x; }

/// What stays of side s of four pairs' bodies. A side whose four bodies are
/// all static needs only their velocities (nothing moves or turns them).
inline void fix_side(SideFixed& s, const SolverBody* const b[4]) {
    const float* p[4] = {solver_floats(*b[0]), solver_floats(*b[1]), solver_floats(*b[2]), solver_floats(*b[3])};
    const V4i kind{int32_t(b[0]->kind), int32_t(b[1]->kind), int32_t(b[2]->kind), int32_t(b[3]->kind)};
    const int32_t dynamic = int32_t(BodyKind::kDynamic), fixed = int32_t(BodyKind::kStatic);
    s.moves = kind == V4i{dynamic, dynamic, dynamic, dynamic};
    s.turned = kind != V4i{fixed, fixed, fixed, fixed};
    s.any_moves = (s.moves[0] | s.moves[1] | s.moves[2] | s.moves[3]) != 0;
    s.any_turned = (s.turned[0] | s.turned[1] | s.turned[2] | s.turned[3]) != 0;
    V4f f[20];
    if (!s.any_turned) {
        columns<8>(p, f);
        s.v = {f[0], f[1], f[2]}, s.w = {f[3], f[4], f[5]};
        return;
    }
    columns<20>(p, f);
    s.v = {f[0], f[1], f[2]}, s.w = {f[3], f[4], f[5]}, s.inv_mass = {f[6], f[7], f[8]};
    s.inertia[0] = {f[9], f[10], f[11]}, s.inertia[1] = {f[12], f[13], f[14]}, s.inertia[2] = {f[15], f[16], f[17]};
}

/// Side s of four pairs' bodies in this pass: the velocities where a body
/// moves (the warm start reads no more).
inline void gather_velocities(Side4& s, const SideFixed& fixed, const SolverBody* const b[4]) {
    s.f = &fixed;
    if (!fixed.any_moves) {
        s.v = fixed.v, s.w = fixed.w;
        return;
    }
    const float* p[4] = {solver_floats(*b[0]), solver_floats(*b[1]), solver_floats(*b[2]), solver_floats(*b[3])};
    V4f f[8];
    columns<8>(p, f);
    s.v = {f[0], f[1], f[2]}, s.w = {f[3], f[4], f[5]};
}
/// The same, then the positions (moved_apart's) and the turn rows where one turns.
inline void gather_side(Side4& s, const SideFixed& fixed, const SolverBody* const b[4]) {
    gather_velocities(s, fixed, b);
    const float* p[4] = {solver_floats(*b[0]), solver_floats(*b[1]), solver_floats(*b[2]), solver_floats(*b[3])};
    V4f f[16];
    const float* x[4] = {p[0] + 18, p[1] + 18, p[2] + 18, p[3] + 18}; // x, x0, turn
    if (fixed.any_turned) {
        columns<16>(x, f);
        s.turn[0] = {f[6], f[7], f[8]}, s.turn[1] = {f[9], f[10], f[11]}, s.turn[2] = {f[12], f[13], f[14]};
    } else {
        columns<8>(x, f);
    }
    s.x = {f[0], f[1], f[2]}, s.x0 = {f[3], f[4], f[5]};
}

/// Writes the velocities of side s back to the lanes' bodies it moves.
inline void scatter_side(const Side4& s, SolverBody* const b[4]) {
    for (uint32_t k = 0; k < 4; ++k) {
        if (!s.f->moves[k]) continue;
        b[k]->v = {s.v.x[k], s.v.y[k], s.v.z[k]};
        b[k]->w = {s.w.x[k], s.w.y[k], s.w.z[k]};
    }
}

/// turned(b, r) per lane, or r where the body is static (separation_now).
inline V3x4 anchor_now(const Side4& s, V3x4 r) {
    if (!s.f->any_turned) return r;
    const V3x4 t{dot(s.turn[0], r), dot(s.turn[1], r), dot(s.turn[2], r)};
    return all(s.f->turned) ? t : pick(s.f->turned, t, r);
}
inline V3x4 inertia_times(const Side4& s, V3x4 v) {
    return {dot(s.f->inertia[0], v), dot(s.f->inertia[1], v), dot(s.f->inertia[2], v)};
}
/// apply_impulse on the lanes in `on`.
inline void apply_impulse4(Side4& a, Side4& b, V4i on, V3x4 p, V3x4 ra, V3x4 rb) {
    if (a.f->any_moves) {
        const V4i m = on & a.f->moves;
        const V3x4 v = mul_add(-a.f->inv_mass, p, a.v), w = a.w - inertia_times(a, cross(ra, p));
        if (all(m)) {
            a.v = v, a.w = w;
        } else {
            a.v = pick(m, v, a.v), a.w = pick(m, w, a.w);
        }
    }
    if (b.f->any_moves) {
        const V4i m = on & b.f->moves;
        const V3x4 v = mul_add(b.f->inv_mass, p, b.v), w = b.w + inertia_times(b, cross(rb, p));
        if (all(m)) {
            b.v = v, b.w = w;
        } else {
            b.v = pick(m, v, b.v), b.w = pick(m, w, b.w);
        }
    }
}
inline V3x4 relative_velocity4(const Side4& a, const Side4& b, V3x4 ra, V3x4 rb) {
    return (b.v + cross(b.w, rb)) - (a.v + cross(a.w, ra));
}

/// One point of each lane's pair as it stays through a step.
struct PointFixed {
    V3x4 n, t1, t2, ra, rb; ///< t2: contact_t2, cross(n, t1)
    V4f separation, normal_mass, t1_mass, t2_mass;
};
/// One point of each lane's pair in a pass: its impulses, and what stays (f).
struct Point4 {
    const PointFixed* f;
    V4f normal_impulse, t1_impulse, t2_impulse, max_normal_impulse;
};
inline void fix_point(PointFixed& c, const Contact* const k[4]) {
    const float* p[4] = {&k[0]->n.x, &k[1]->n.x, &k[2]->n.x, &k[3]->n.x};
    V4f f[16];
    columns<16>(p, f);
    c.n = {f[0], f[1], f[2]}, c.t1 = {f[3], f[4], f[5]}, c.ra = {f[6], f[7], f[8]}, c.rb = {f[9], f[10], f[11]};
    c.separation = f[12], c.normal_mass = f[13], c.t1_mass = f[14], c.t2_mass = f[15];
    c.t2 = cross(c.n, c.t1);
}
inline void gather_point(Point4& c, const PointFixed& fixed, const Contact* const k[4]) {
    c.f = &fixed;
    const float* p[4] = {&k[0]->normal_impulse, &k[1]->normal_impulse, &k[2]->normal_impulse, &k[3]->normal_impulse};
    V4f f[4];
    columns<4>(p, f);
    c.normal_impulse = f[0], c.t1_impulse = f[1], c.t2_impulse = f[2], c.max_normal_impulse = f[3];
}
/// Writes the four impulses of the lanes in `on` back to their points.
inline void scatter_point(const Point4& c, Contact* const k[4], V4i on) {
    V4f r0 = c.normal_impulse, r1 = c.t1_impulse, r2 = c.t2_impulse, r3 = c.max_normal_impulse;
    transpose4(r0, r1, r2, r3);
    if (on[0]) store4(&k[0]->normal_impulse, r0);
    if (on[1]) store4(&k[1]->normal_impulse, r1);
    if (on[2]) store4(&k[2]->normal_impulse, r2);
    if (on[3]) store4(&k[3]->normal_impulse, r3);
}

/// Up to four pairs of one colour as they stay through a step: their bodies
/// and points, each lane's softness, friction and whether its patch shares
/// its load, both sides' masses and the points' geometry. Planned once a
/// step (plan_points4); each solve and relax pass then reads only the
/// velocities, positions, turns and impulses (solve_points4).
struct Batch4 {
    SolverBody* ab[4];
    SolverBody* bb[4];
    Contact* at[kMaxManifold][4]; ///< round k's points (a lane past its pair's count reads its first)
    uint32_t most;                ///< rounds: the largest pair's point count
    V4i on[kMaxManifold];         ///< the lanes whose pair has a point in round k
    V4i tips;                     ///< the lanes whose patch shares its load (cannot_tip)
    V4f count_f, bias_rate, mass_scale, impulse_scale, mu_s, mu_d;
    SideFixed a, b;
    PointFixed c[kMaxManifold];
};

/// What every lane of a pass shares, and how far each lane's bodies moved apart.
struct PassLanes {
    V4f inv_h, push_speed;
    V3x4 moved;
    bool push;
};

/// solve_normal on the lanes in `on`.
inline void solve_normal4(Side4& a, Side4& b, Point4& c, const Batch4& B, const PassLanes& q, V4i on) {
    const V4f zero = splat(0.0f), one = splat(1.0f);
    const PointFixed& f = *c.f;
    const V3x4 d = q.moved + (anchor_now(b, f.rb) - anchor_now(a, f.ra));
    const V4f s = dot(d, f.n) + f.separation;
    const V4i ahead = s > zero;
    V4f bias = zero, mass_scale = one, impulse_scale = zero;
    if (q.push) {
        bias = max4(B.bias_rate * s, -q.push_speed);
        mass_scale = B.mass_scale, impulse_scale = B.impulse_scale;
    }
    bias = pick(ahead, s * q.inv_h, bias);
    mass_scale = pick(ahead, one, mass_scale), impulse_scale = unless(ahead, impulse_scale);
    const V4f vn = dot(relative_velocity4(a, b, f.ra, f.rb), f.n);
    V4f impulse = mul_add(-impulse_scale, c.normal_impulse, -f.normal_mass * mass_scale * (vn + bias));
    const V4f total = max4(c.normal_impulse + impulse, zero);
    impulse = total - c.normal_impulse;
    c.normal_impulse = total; // a lane that is not on keeps what it computes to itself (never written back)
    c.max_normal_impulse = max4(c.max_normal_impulse, impulse);
    apply_impulse4(a, b, on, f.n * impulse, f.ra, f.rb);
}

/// solve_friction on the lanes in `on`, each against its load.
inline void solve_friction4(Side4& a, Side4& b, Point4& c, V4f load, const Batch4& B, FrictionCone cone, V4i on) {
    const V4f zero = splat(0.0f);
    const PointFixed& f = *c.f;
    const V3x4 dv = relative_velocity4(a, b, f.ra, f.rb), t2 = f.t2;
    V4f f1 = mul_add(-f.t1_mass, dot(dv, f.t1), c.t1_impulse), f2 = mul_add(-f.t2_mass, dot(dv, t2), c.t2_impulse);
    if (cone == FrictionCone::kPyramid) {
        const V4i over = abs4(f1) + abs4(f2) > B.mu_s * load;
        if (over[0] | over[1] | over[2] | over[3]) { // onto_diamond where over
            const V4f cap = B.mu_d * load, a1 = abs4(f1), a2 = abs4(f2), t = splat(0.5f) * (a1 + a2 - cap);
            V4f p1 = a1 - t, p2 = a2 - t;
            const V4i low1 = p1 < zero;
            p1 = unless(low1, p1), p2 = pick(low1, cap, p2);
            const V4i low2 = p2 < zero;
            p2 = unless(low2, p2), p1 = pick(low2, cap, p1);
            f1 = pick(over, negate_where(f1 < zero, p1), f1);
            f2 = pick(over, negate_where(f2 < zero, p2), f2);
        }
    } else {
        for (uint32_t k = 0; k < 4; ++k) { // the circle's square root a lane at a time (math.hpp's sqrt_of)
            float len = sqrt_of(f1[k] * f1[k] + f2[k] * f2[k]), load_k = load[k];
            if (len > B.mu_s[k] * load_k) {
                float scale = len > 0.0f ? B.mu_d[k] * load_k / len : 0.0f;
                f1[k] = f1[k] * scale, f2[k] = f2[k] * scale;
            }
        }
    }
    const V3x4 p = mul_add(t2, f2 - c.t2_impulse, f.t1 * (f1 - c.t1_impulse));
    c.t1_impulse = f1, c.t2_impulse = f2;
    apply_impulse4(a, b, on, p, f.ra, f.rb);
}

/// A static body with nothing on it and a point with no impulse: what a
/// batch's unused lanes read (they write nothing).
inline const SolverBody& idle_body() {
    static const SolverBody b = [] {
        SolverBody z{};
        z.kind = BodyKind::kStatic;
        return z;
    }();
    return b;
}
inline Contact* idle_points() {
    static Contact c[kMaxManifold] = {}; // read, never written (no lane is on)
    return c;
}
} // namespace detail

/// Plans up to four pairs of one colour (pairs[0..count), count 1 to 4) for
/// solve_points4: what stays of them through the step.
inline void plan_points4(detail::Batch4& B, const StepBuffers& s, const Pair* const pairs[4], uint32_t count,
                         const PassParams& pp) {
    using namespace detail;
    Contact* cs[4];
    uint32_t n[4];
    B.most = 0;
    for (uint32_t k = 0; k < 4; ++k) {
        const bool used = k < count;
        B.ab[k] = used ? &s.bodies[pairs[k]->a] : const_cast<SolverBody*>(&idle_body());
        B.bb[k] = used ? &s.bodies[pairs[k]->b] : const_cast<SolverBody*>(&idle_body());
        cs[k] = used ? &s.contacts[pairs[k]->first] : idle_points();
        n[k] = used ? pairs[k]->count : 0u;
        B.most = n[k] > B.most ? n[k] : B.most;
        const SolverBody &a = *B.ab[k], &b = *B.bb[k];
        const Softness sf = a.kind != BodyKind::kDynamic || b.kind != BodyKind::kDynamic ? pp.static_soft : pp.soft;
        const PairFriction mu = pair_friction(a, b, pp.friction_rule, pp.friction_cone);
        B.bias_rate[k] = sf.bias_rate, B.mass_scale[k] = sf.mass_scale, B.impulse_scale[k] = sf.impulse_scale;
        B.mu_s[k] = mu.s, B.mu_d[k] = mu.d;
        B.tips[k] = n[k] > 1 && (cannot_tip(a) || cannot_tip(b)) ? -1 : 0;
        B.count_f[k] = float(n[k] > 0 ? n[k] : 1u);
    }
    fix_side(B.a, B.ab);
    fix_side(B.b, B.bb);
    const V4f lanes_n{float(n[0]), float(n[1]), float(n[2]), float(n[3])};
    for (uint32_t k = 0; k < B.most; ++k) {
        for (uint32_t j = 0; j < 4; ++j) B.at[k][j] = cs[j] + (k < n[j] ? k : 0);
        fix_point(B.c[k], B.at[k]);
        B.on[k] = splat(float(k)) < lanes_n;
    }
}

/// solve_points for a planned batch of pairs: the bits of solve_points on
/// each pair in turn.
inline void solve_points4(const detail::Batch4& B, const PassParams& pp, bool push) {
    using namespace detail;
    Side4 a, b;
    gather_side(a, B.a, B.ab);
    gather_side(b, B.b, B.bb);
    PassLanes q;
    q.push = push, q.inv_h = splat(pp.inv_h), q.push_speed = splat(pp.push_speed);
    q.moved = (b.x - b.x0) - (a.x - a.x0); // moved_apart, per lane
    Point4 c[kMaxManifold];
    for (uint32_t k = 0; k < B.most; ++k) {
        gather_point(c[k], B.c[k], B.at[k]);
        solve_normal4(a, b, c[k], B, q, B.on[k]);
    }
    // The shared load of a patch under a body that cannot tip: the points'
    // normal impulses summed in order, over their count.
    V4f sum = splat(0.0f);
    for (uint32_t k = 0; k < B.most; ++k) sum = pick(B.on[k], sum + c[k].normal_impulse, sum);
    const V4f mean = sum / B.count_f;
    for (uint32_t k = 0; k < B.most; ++k) {
        solve_friction4(a, b, c[k], pick(B.tips, mean, c[k].normal_impulse), B, pp.friction_cone, B.on[k]);
        scatter_point(c[k], B.at[k], B.on[k]);
    }
    scatter_side(a, B.ab);
    scatter_side(b, B.bb);
}

/// warm_start_points for a planned batch of pairs: the bits of
/// warm_start_points on each pair in turn.
inline void warm_start4(const detail::Batch4& B) {
    using namespace detail;
    Side4 a, b;
    gather_velocities(a, B.a, B.ab);
    gather_velocities(b, B.b, B.bb);
    for (uint32_t k = 0; k < B.most; ++k) {
        Point4 c;
        gather_point(c, B.c[k], B.at[k]);
        const PointFixed& f = B.c[k];
        const V3x4 p = mul_add(f.t2, c.t2_impulse, mul_add(f.t1, c.t1_impulse, f.n * c.normal_impulse));
        apply_impulse4(a, b, B.on[k], p, f.ra, f.rb);
    }
    scatter_side(a, B.ab);
    scatter_side(b, B.bb);
}

/// Calls four(pairs, m) for colour entries [b, e)'s pairs with points, up to
/// four at a time, those of equal point counts together (what is left
/// largest counts first), and single(entry) for each joint and a lone pair.
/// Which pairs go together changes no bit: each lane is its own pair.
template <class Buffers, class Four, class Single>
void batch_colour(const Buffers& s, uint32_t b, uint32_t e, Four&& four, Single&& single) {
    const Pair* held[kMaxManifold][4];
    uint32_t held_n[kMaxManifold] = {};
    for (uint32_t i = b; i < e; ++i) {
        const uint32_t entry = s.order[i];
        if (!(entry & kPairEntry)) {
            single(entry);
            continue;
        }
        const Pair& p = s.pairs[entry & ~kPairEntry];
        if (p.count == 0) continue; // solve_points of no points changes nothing
        const uint32_t k = (p.count < kMaxManifold ? p.count : kMaxManifold) - 1;
        held[k][held_n[k]++] = &p;
        if (held_n[k] == 4) four(held[k], 4u), held_n[k] = 0;
    }
    const Pair* rest[4];
    uint32_t m = 0;
    for (uint32_t k = kMaxManifold; k-- > 0;)
        for (uint32_t j = 0; j < held_n[k]; ++j) {
            rest[m++] = held[k][j];
            if (m == 4) four(rest, 4u), m = 0;
        }
    if (m > 1) four(rest, m);
    if (m == 1) single(kPairEntry | uint32_t(rest[0] - &s.pairs[0])); // a lone pair
}

/// A solve or relax pass over colour entries [b, e) of the order on one
/// lane, planned here: solve_planned's work for one colour, which
/// PhysicsSolve's colour test compares with pass_constraint on each entry in
/// turn (the same bits).
template <class Buffers> void solve_colour4(const Buffers& s, uint32_t b, uint32_t e, Pass pass, const PassParams& pp) {
    const bool push = pass == Pass::kSolve;
    batch_colour(
        s, b, e,
        [&](const Pair* const* pairs, uint32_t m) {
            detail::Batch4 batch;
            plan_points4(batch, s, pairs, m, pp);
            solve_points4(batch, pp, push);
        },
        [&](uint32_t entry) { pass_constraint(s, entry, pass, pp); });
}

/// Every colour's batches (but the serial colour's) for one step on one
/// lane, made once after the colouring (plan_colours) and run by each solve
/// and relax pass (solve_planned): the same bits as solve_colour4.
struct BatchPlan {
    std::vector<detail::Batch4> batches; ///< colour c's: [batch_first[c], batch_first[c + 1])
    std::vector<uint32_t> singles;       ///< its joints and lone pair: [single_first[c], single_first[c + 1])
    uint32_t batch_first[kColours + 1], single_first[kColours + 1];
};

/// Plans the step's colours in use into this thread's plan (one lane runs
/// one world's step at a time, so one plan a thread serves each in turn).
template <class Buffers> [[gnu::noinline]] const BatchPlan* plan_colours(const Buffers& s, const PassParams& pp) {
    static thread_local BatchPlan plan;
    plan.batches.clear(), plan.singles.clear();
    const uint32_t* begin = s.colouring->begin;
    for (uint32_t c = 0; c < kColours; ++c) {
        plan.batch_first[c] = uint32_t(plan.batches.size()), plan.single_first[c] = uint32_t(plan.singles.size());
        if (!(pp.colours >> c & 1u)) continue;
        batch_colour(
            s, begin[c], min_of(begin[c + 1], s.order.size()),
            [&](const Pair* const* pairs, uint32_t m) {
                plan.batches.emplace_back();
                plan_points4(plan.batches.back(), s, pairs, m, pp);
            },
            [&](uint32_t entry) { plan.singles.push_back(entry); });
    }
    plan.batch_first[kColours] = uint32_t(plan.batches.size()),
    plan.single_first[kColours] = uint32_t(plan.singles.size());
    return &plan;
}

/// A warm-start, solve or relax pass over colour c (not the serial one) from
/// the step's plan: its joints and lone pair, then its batches.
template <class Buffers>
[[gnu::noinline]] void solve_planned(const BatchPlan& plan, uint32_t c, const Buffers& s, Pass pass,
                                     const PassParams& pp) {
    const bool push = pass == Pass::kSolve;
    for (uint32_t i = plan.single_first[c]; i < plan.single_first[c + 1]; ++i)
        pass_constraint(s, plan.singles[i], pass, pp);
    for (uint32_t i = plan.batch_first[c]; i < plan.batch_first[c + 1]; ++i)
        pass == Pass::kWarmStart ? warm_start4(plan.batches[i]) : solve_points4(plan.batches[i], pp, push);
}

namespace detail {
static_assert(offsetof(SolverBody, x) == offsetof(SolverBody, v) + 72 &&
                  offsetof(SolverBody, q0) == offsetof(SolverBody, q) + 16,
              "the positions batch reads x, then q and q0, as runs of floats");

/// A quaternion per lane, and math.hpp's operations on it (in their order).
struct Q4 {
    V4f w, x, y, z;
};
inline Q4 operator*(Q4 a, Q4 b) {
    return {mul_add(-a.z, b.z, mul_add(-a.y, b.y, mul_add(-a.x, b.x, a.w * b.w))),
            mul_add(-a.z, b.y, mul_add(a.y, b.z, mul_add(a.x, b.w, a.w * b.x))),
            mul_add(a.z, b.x, mul_add(a.y, b.w, mul_add(-a.x, b.z, a.w * b.y))),
            mul_add(a.z, b.w, mul_add(-a.y, b.x, mul_add(a.x, b.y, a.w * b.z)))};
}
inline Q4 conj(Q4 q) { return {q.w, -q.x, -q.y, -q.z}; }
inline V4f sqrt4(V4f x) {
    V4f r;
    for (uint32_t k = 0; k < 4; ++k) r[k] = sqrt_of(x[k]);
    return r;
}
inline Q4 normalize(Q4 q) {
    const V4f l = sqrt4(mul_add(q.z, q.z, mul_add(q.y, q.y, mul_add(q.x, q.x, q.w * q.w)))), s = splat(1.0f) / l;
    const V4i tiny = l < splat(1e-12f);
    const V4f zero = splat(0.0f);
    return {pick(tiny, splat(1.0f), q.w * s), pick(tiny, zero, q.x * s), pick(tiny, zero, q.y * s),
            pick(tiny, zero, q.z * s)};
}
inline V3x4 rotate(Q4 q, V3x4 v) {
    const V3x4 u{q.x, q.y, q.z}, t = cross(u, v) * splat(2.0f);
    return mul_add(t, q.w, v) + cross(u, t);
}
inline Q4 integrate(Q4 q, V3x4 w, float h) {
    const Q4 d = Q4{splat(0.0f), w.x, w.y, w.z} * q;
    const V4f s = splat(0.5f * h);
    return normalize({mul_add(d.w, s, q.w), mul_add(d.x, s, q.x), mul_add(d.y, s, q.y), mul_add(d.z, s, q.z)});
}
} // namespace detail

/// integrate_positions for four bodies at once (count 1 to 4 of them used):
/// each lane runs its operations in its order, so the same bits.
inline void integrate_positions4(SolverBody* const body[4], uint32_t count, float h) {
    using namespace detail;
    SolverBody spare{};
    SolverBody* b[4];
    for (uint32_t k = 0; k < 4; ++k) b[k] = k < count ? body[k] : &spare;
    const float* vs[4] = {solver_floats(*b[0]), solver_floats(*b[1]), solver_floats(*b[2]), solver_floats(*b[3])};
    const float* xs[4] = {vs[0] + 18, vs[1] + 18, vs[2] + 18, vs[3] + 18};
    const float* qs[4] = {&b[0]->q.w, &b[1]->q.w, &b[2]->q.w, &b[3]->q.w};
    V4f f[8];
    columns<8>(vs, f);
    const V3x4 v{f[0], f[1], f[2]}, w{f[3], f[4], f[5]};
    columns<4>(xs, f);
    const V3x4 x = mul_add(v, splat(h), V3x4{f[0], f[1], f[2]});
    columns<8>(qs, f);
    const Q4 q = integrate(Q4{f[0], f[1], f[2], f[3]}, w, h), q0{f[4], f[5], f[6], f[7]};
    // set_turn: the rows of q conj(q0), from its columns
    const Q4 dq = q * conj(q0);
    const V4f zero = splat(0.0f), one = splat(1.0f);
    const V3x4 c0 = rotate(dq, {one, zero, zero}), c1 = rotate(dq, {zero, one, zero}),
               c2 = rotate(dq, {zero, zero, one});
    // Rows out: x, then turn's 9 floats, as each body lays them out.
    V4f q_r[4] = {q.w, q.x, q.y, q.z};
    transpose4(q_r[0], q_r[1], q_r[2], q_r[3]);
    V4f t_a[4] = {c0.x, c1.x, c2.x, c0.y}, t_b[4] = {c1.y, c2.y, c0.z, c1.z};
    transpose4(t_a[0], t_a[1], t_a[2], t_a[3]);
    transpose4(t_b[0], t_b[1], t_b[2], t_b[3]);
    for (uint32_t k = 0; k < count; ++k) {
        b[k]->x = {x.x[k], x.y[k], x.z[k]};
        store4(&b[k]->q.w, q_r[k]);
        store4(&b[k]->turn[0].x, t_a[k]);
        store4(&b[k]->turn[1].y, t_b[k]);
        b[k]->turn[2].z = c2.z[k];
    }
}

/// Calls four(held, count) on the bodies `keep` takes, in order, four at a
/// time (the last call with the 1 to 4 left).
template <class Buffer, class Keep, class Four> void in_fours(Buffer bodies, Keep keep, Four four) {
    SolverBody* held[4];
    uint32_t n = 0;
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        if (!keep(b)) continue;
        held[n++] = &b;
        if (n == 4) four(held, 4u), n = 0;
    }
    if (n > 0) four(held, n);
}

/// integrate_positions on one lane, four bodies at a time: the same bits.
template <class Buffer> [[gnu::noinline]] void integrate_positions_host(Buffer bodies, float h) {
    in_fours(
        bodies, [](const SolverBody& b) { return b.kind != BodyKind::kStatic && !(b.sleep & kAsleep); },
        [&](SolverBody* const held[4], uint32_t n) { integrate_positions4(held, n, h); });
}

namespace detail {
static_assert(offsetof(SolverBody, inv_mass) == offsetof(SolverBody, q) + 32 &&
                  offsetof(SolverBody, inv_inertia) == offsetof(SolverBody, q) + 44 &&
                  offsetof(SolverBody, force) == offsetof(SolverBody, q) + 56 &&
                  offsetof(SolverBody, torque) == offsetof(SolverBody, q) + 68 &&
                  offsetof(SolverBody, lin_damping) == offsetof(SolverBody, q) + 88 &&
                  offsetof(SolverBody, ang_damping) == offsetof(SolverBody, q) + 92 &&
                  offsetof(SolverBody, axis_rate) == offsetof(SolverBody, q) + 96 &&
                  offsetof(SolverBody, axis_angular) == offsetof(SolverBody, q) + 108 &&
                  offsetof(SolverBody, still) == offsetof(SolverBody, q) + 128,
              "the velocities batch reads q to axis_angular as one run of floats (and two more words)");

/// free_axes(locks, shift) per lane.
inline V3x4 free_axes4(V4i locks, int32_t shift) {
    const V4f zero = splat(0.0f), one = splat(1.0f);
    const V4i z{0, 0, 0, 0};
    return {pick(((locks >> shift) & 1) != z, zero, one), pick(((locks >> (shift + 1)) & 1) != z, zero, one),
            pick(((locks >> (shift + 2)) & 1) != z, zero, one)};
}
/// math.hpp's nonzero per lane.
inline V4i nonzero4(V3x4 a) {
    const V4f zero = splat(0.0f);
    return (a.x != zero) | (a.y != zero) | (a.z != zero);
}
} // namespace detail

/// integrate_velocities' step of a body (damp_axes included) for four
/// bodies at once (count 1 to 4 of them used): each lane runs its
/// operations in their order, so the same bits. The branches become
/// selects: a lane computes both sides and keeps the one its body takes
/// (a division by a zero inertia or a no-op damping is dropped unread).
/// Measured in docs/benchmarks.md, "The bodies' velocities four to a vector".
inline void integrate_velocities4(SolverBody* const body[4], uint32_t count, Vec3 g, float h) {
    using namespace detail;
    SolverBody spare{};
    SolverBody* b[4];
    for (uint32_t k = 0; k < 4; ++k) b[k] = k < count ? body[k] : &spare;
    const float* vs[4] = {solver_floats(*b[0]), solver_floats(*b[1]), solver_floats(*b[2]), solver_floats(*b[3])};
    const float* ws[4] = {vs[0] + 8, vs[1] + 8, vs[2] + 8, vs[3] + 8}; // from inv_mass_damped.z: the world inertia
    const float* qs[4] = {&b[0]->q.w, &b[1]->q.w, &b[2]->q.w, &b[3]->q.w};
    V4f f[8], W[12], r[32];
    columns<8>(vs, f);
    columns<12>(ws, W);
    columns<32>(qs, r);
    const V4f zero = splat(0.0f), one = splat(1.0f), hh = splat(h);
    const V4i locks{int32_t(b[0]->locks), int32_t(b[1]->locks), int32_t(b[2]->locks), int32_t(b[3]->locks)};
    const V3x4 lin = free_axes4(locks, 0), ang = free_axes4(locks, 3);
    const Q4 q{r[0], r[1], r[2], r[3]};
    const V3x4 inv_mass{r[8], r[9], r[10]}, ii{r[11], r[12], r[13]}, force{r[14], r[15], r[16]};
    const V3x4 torque{r[17], r[18], r[19]}, rate{r[24], r[25], r[26]}, d{r[27], r[28], r[29]};
    const V4f lin_damping = r[22], ang_damping = r[23];
    const V3x4 G{splat(g.x), splat(g.y), splat(g.z)};
    V3x4 v{f[0], f[1], f[2]}, w{f[3], f[4], f[5]};
    v = mul((v + (G + mul(inv_mass, force)) * hh) * (one / (one + hh * lin_damping)), lin);
    const Q4 qc = conj(q);
    const V3x4 wl = rotate(qc, w);
    const V3x4 iw{pick(ii.x > zero, wl.x / ii.x, zero), pick(ii.y > zero, wl.y / ii.y, zero),
                  pick(ii.z > zero, wl.z / ii.z, zero)};
    const V3x4 tl = rotate(qc, torque) - cross(wl, iw);
    w = mul((w + rotate(q, mul(ii, tl)) * hh) * (one / (one + hh * ang_damping)), ang);
    // damp_axes
    v = pick(nonzero4(rate), V3x4{v.x / (one + hh * rate.x), v.y / (one + hh * rate.y), v.z / (one + hh * rate.z)}, v);
    const V3x4 m = mul(d, w) * hh;
    const V3x4 row0{W[1], W[2], W[3]}, row1{W[4], W[5], W[6]}, row2{W[7], W[8], W[9]};
    w = pick(nonzero4(d), w - V3x4{dot(row0, m), dot(row1, m), dot(row2, m)}, w);
    for (uint32_t k = 0; k < count; ++k) {
        b[k]->v = {v.x[k], v.y[k], v.z[k]};
        b[k]->w = {w.x[k], w.y[k], w.z[k]};
    }
}

/// integrate_velocities on one lane, four awake bodies at a time: the same bits.
template <class Buffer> [[gnu::noinline]] void integrate_velocities_host(Buffer bodies, Vec3 g, float h) {
    in_fours(
        bodies, [](const SolverBody& b) { return awake(b); },
        [&](SolverBody* const held[4], uint32_t n) { integrate_velocities4(held, n, g, h); });
}

} // namespace phys
