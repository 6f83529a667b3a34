#pragma once
// The solver: Box2D v3's soft step, in 3-D. Contacts are found once per env
// step (speculatively, up to a margin grown by the bodies' speed); each
// substep integrates velocities, warm-starts from the last substep's
// impulses, solves contacts with a soft (spring-damper) push, integrates
// positions, then relaxes without the push; restitution is applied once at
// the end. One serial pass per world in body and contact order, so results
// do not depend on the thread or lane count. physics/README.md says why this
// and not XPBD.

#include "physics/collide.hpp"

namespace phys {
using orrery::Buffer;

/// 1 on free axes, 0 on locked ones: bits `shift`..`shift+2` of a lock mask.
ORRERY_HD inline Vec3 free_axes(uint32_t locks, uint32_t shift) {
    return {(locks >> shift) & 1u ? 0.0f : 1.0f, (locks >> (shift + 1)) & 1u ? 0.0f : 1.0f,
            (locks >> (shift + 2)) & 1u ? 0.0f : 1.0f};
}

/// Sets b's world-frame inverse inertia P R D R^T P from its orientation now:
/// D the body-frame inverse inertia, P removing locked rotation axes (exact
/// when the free axis is a principal axis, as for a box turning about z). The
/// solver keeps it for the whole step, as it keeps the contact anchors (Box2D).
ORRERY_HD inline void set_world_inertia(SolverBody& b) {
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
}

/// World-frame inverse inertia (as of the step's start) times v.
ORRERY_HD inline Vec3 inv_inertia_times(const SolverBody& b, Vec3 v) {
    return {dot(b.inv_inertia_world[0], v), dot(b.inv_inertia_world[1], v), dot(b.inv_inertia_world[2], v)};
}

/// Generalised inverse mass of body b at offset r along unit direction n.
ORRERY_HD inline float inv_mass_along(const SolverBody& b, Vec3 r, Vec3 n) {
    Vec3 rn = cross(r, n);
    return dot(n, mul(b.inv_mass, n)) + dot(rn, inv_inertia_times(b, rn));
}

/// Changes the velocities of a and b by impulse p at offsets ra, rb (a gets -p, b gets +p).
ORRERY_HD inline void apply_impulse(SolverBody& a, SolverBody& b, Vec3 p, Vec3 ra, Vec3 rb) {
    a.v -= mul(a.inv_mass, p);
    a.w -= inv_inertia_times(a, cross(ra, p));
    b.v += mul(b.inv_mass, p);
    b.w += inv_inertia_times(b, cross(rb, p));
}

/// Velocity of b's point at offset rb relative to a's point at ra.
ORRERY_HD inline Vec3 relative_velocity(const SolverBody& a, const SolverBody& b, Vec3 ra, Vec3 rb) {
    return (b.v + cross(b.w, rb)) - (a.v + cross(a.w, ra));
}

/// Radius of a sphere around the body's origin holding its shape; negative: unbounded (planes).
ORRERY_HD inline float bound_of(Shape s) {
    switch (s.kind) {
    case ShapeKind::kSphere: return s.dims.x;
    case ShapeKind::kCapsule: return s.dims.x + s.dims.y;
    case ShapeKind::kBox: return length(s.dims);
    default: return -1.0f;
    }
}

/// Copies every rigid body of the world (archetypes in id order, rows in order) into `out`.
ORRERY_HD inline void gather_bodies(Ctx& ctx, Buffer<Bodies> out) {
    out.clear();
    ctx.each_with<Pose, Velocity, MassProps, BodyType, Locks, Shape, Material, Force>([&](Entity e) {
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
        if (const Damping* d = ctx.get<Damping>(e)) b.lin_damping = d->linear, b.ang_damping = d->angular;
        if (const AxisDamping* d = ctx.get<AxisDamping>(e))
            b.axis_rate = mul(d->linear, b.inv_mass), b.axis_angular = dynamic ? d->angular : Vec3{0.0f, 0.0f, 0.0f};
        b.material = *ctx.get<Material>(e);
        if (b.kind == BodyKind::kStatic) b.v = b.w = Vec3{0.0f, 0.0f, 0.0f};
        out.push(b);
    });
}

/// Writes poses and velocities back and clears the applied forces.
ORRERY_HD inline void scatter_bodies(Ctx& ctx, Buffer<Bodies> bodies) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        const SolverBody& b = bodies[i];
        *ctx.get<Force>(b.entity) = Force{};
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

/// Warm starting across steps: the nearest of last step's points of the
/// same two bodies, within `reach` in a's frame, lends c its impulses (its
/// friction projected onto c's tangents). Both lists run in pair order, so
/// `cursor` only moves forward over the cache: linear in the contacts.
ORRERY_HD inline void inherit_impulses(Contact& c, Buffer<ContactCache> cache, uint32_t& cursor, float reach) {
    while (cursor < cache.size() && (cache[cursor].a < c.a || (cache[cursor].a == c.a && cache[cursor].b < c.b)))
        ++cursor;
    float best = reach * reach;
    uint32_t found = cache.size();
    for (uint32_t k = cursor; k < cache.size() && cache[k].a == c.a && cache[k].b == c.b; ++k) {
        const Contact& o = cache[k];
        // The same rows may hold other bodies now (created or destroyed since).
        if (o.ea.index != c.ea.index || o.ea.gen != c.ea.gen || o.eb.index != c.eb.index || o.eb.gen != c.eb.gen)
            continue;
        Vec3 d = o.la - c.la;
        if (dot(d, d) < best) best = dot(d, d), found = k;
    }
    if (found == cache.size()) return;
    const Contact& o = cache[found];
    c.normal_impulse = o.normal_impulse;
    Vec3 f = o.t1 * o.t1_impulse + o.t2 * o.t2_impulse;
    c.t1_impulse = dot(f, c.t1), c.t2_impulse = dot(f, c.t2);
}

/// Broadphase (all pairs, bounding spheres; planes always tested) and
/// narrowphase into the contact list. A pair's points are kept up to margin
/// plus the distance both surfaces may move this step apart: speculative
/// contacts, so what would meet during the step is caught at its start.
ORRERY_HD inline void find_contacts(Buffer<Bodies> bodies, Buffer<Contacts> out, Buffer<ContactCache> cache,
                                    const Params& prm) {
    cache.clear();
    for (uint32_t k = 0; k < out.size(); ++k) cache.push(out[k]);
    out.clear();
    uint32_t n = bodies.size(), cursor = 0;
    for (uint32_t i = 0; i < n; ++i) {
        SolverBody& b = bodies[i];
        b.sweep = prm.dt * (length(b.v) + length(b.w) * max_f(b.bound, 0.0f));
    }
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j) {
            const SolverBody& a = bodies[i];
            const SolverBody& b = bodies[j];
            if (a.kind != BodyKind::kDynamic && b.kind != BodyKind::kDynamic) continue;
            float margin = prm.margin + a.sweep + b.sweep;
            if (a.bound >= 0.0f && b.bound >= 0.0f) {
                Vec3 d = b.x - a.x;
                float r = a.bound + b.bound + margin;
                if (dot(d, d) > r * r) continue;
            }
            Manifold m = collide(Placed{a.shape, a.x, a.q}, Placed{b.shape, b.x, b.q}, margin);
            Tangents t = tangents_of(m.n);
            for (uint32_t k = 0; k < m.count; ++k) {
                Contact c{};
                c.a = i, c.b = j, c.n = m.n, c.t1 = t.t1, c.t2 = t.t2;
                c.ra = m.p[k] - a.x;
                c.rb = m.p[k] - b.x;
                c.separation = -m.depth[k] - dot(c.rb - c.ra, m.n);
                c.normal_mass = inverse_or_zero(inv_mass_along(a, c.ra, m.n) + inv_mass_along(b, c.rb, m.n));
                c.t1_mass = inverse_or_zero(inv_mass_along(a, c.ra, t.t1) + inv_mass_along(b, c.rb, t.t1));
                c.t2_mass = inverse_or_zero(inv_mass_along(a, c.ra, t.t2) + inv_mass_along(b, c.rb, t.t2));
                c.approach = dot(relative_velocity(a, b, c.ra, c.rb), m.n);
                c.static_mu = combine(prm.friction_rule, a.material.static_friction, b.material.static_friction);
                c.dynamic_mu = combine(prm.friction_rule, a.material.dynamic_friction, b.material.dynamic_friction);
                c.restitution = combine(prm.restitution_rule, a.material.restitution, b.material.restitution);
                c.ea = a.entity, c.eb = b.entity;
                c.la = unrotate(a.q, c.ra);
                inherit_impulses(c, cache, cursor, prm.match_distance);
                if (!out.push(c)) return;
            }
        }
}

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

/// Current separation of contact c (< 0: overlapping) from the bodies' motion since the step began.
ORRERY_HD inline float separation_now(const SolverBody& a, const SolverBody& b, const Contact& c) {
    Vec3 pa = rotate(a.q * conj(a.q0), c.ra), pb = rotate(b.q * conj(b.q0), c.rb);
    Vec3 d = ((b.x - b.x0) - (a.x - a.x0)) + (pb - pa);
    return dot(d, c.n) + c.separation;
}

/// Each substep starts from the impulses the last one ended with.
ORRERY_HD inline void warm_start(Buffer<Bodies> bodies, Buffer<Contacts> contacts) {
    for (uint32_t k = 0; k < contacts.size(); ++k) {
        const Contact& c = contacts[k];
        Vec3 p = c.n * c.normal_impulse + c.t1 * c.t1_impulse + c.t2 * c.t2_impulse;
        apply_impulse(bodies[c.a], bodies[c.b], p, c.ra, c.rb);
    }
}

/// Normal impulse of one point. With `push`, overlap is removed softly (at
/// most push_speed); without, only velocities are solved (the relax pass).
ORRERY_HD inline void solve_normal(SolverBody& a, SolverBody& b, Contact& c, float inv_h, Softness soft, bool push,
                                   float push_speed) {
    float s = separation_now(a, b, c);
    float bias = 0.0f, mass_scale = 1.0f, impulse_scale = 0.0f;
    if (s > 0.0f) {
        bias = s * inv_h; // speculative: close at most the gap this substep
    } else if (push) {
        bias = max_f(soft.bias_rate * s, -push_speed);
        mass_scale = soft.mass_scale;
        impulse_scale = soft.impulse_scale;
    }
    float vn = dot(relative_velocity(a, b, c.ra, c.rb), c.n);
    float impulse = -c.normal_mass * mass_scale * (vn + bias) - impulse_scale * c.normal_impulse;
    float total = max_f(c.normal_impulse + impulse, 0.0f);
    impulse = total - c.normal_impulse;
    c.normal_impulse = total;
    c.max_normal_impulse = max_f(c.max_normal_impulse, impulse);
    apply_impulse(a, b, c.n * impulse, c.ra, c.rb);
}

/// Coulomb friction of one point: it sticks while the impulse that stops it
/// is within mu_s times the normal impulse `load`, else slides with mu_d.
ORRERY_HD inline void solve_friction(SolverBody& a, SolverBody& b, Contact& c, float load) {
    Vec3 dv = relative_velocity(a, b, c.ra, c.rb);
    float f1 = c.t1_impulse - c.t1_mass * dot(dv, c.t1), f2 = c.t2_impulse - c.t2_mass * dot(dv, c.t2);
    float len = sqrt_of(f1 * f1 + f2 * f2);
    if (len > c.static_mu * load) {
        float scale = len > 0.0f ? c.dynamic_mu * load / len : 0.0f;
        f1 = f1 * scale, f2 = f2 * scale;
    }
    Vec3 p = c.t1 * (f1 - c.t1_impulse) + c.t2 * (f2 - c.t2_impulse);
    c.t1_impulse = f1, c.t2_impulse = f2;
    apply_impulse(a, b, p, c.ra, c.rb);
}

/// True when b cannot tip: turning about both x and y locked (OpenAI's boxes and agents).
ORRERY_HD inline bool cannot_tip(const SolverBody& b) {
    return b.kind == BodyKind::kDynamic && (b.locks & (kLockTurnX | kLockTurnY)) == (kLockTurnX | kLockTurnY);
}

/// One pass over the manifolds in order: each one's normal impulses, then
/// its friction (as Box2D). Contacts touching a non-dynamic body use a
/// stiffer spring (Box2D: twice the frequency). A body that cannot tip
/// leaves the share of a patch's load among its points undetermined, and
/// sequential impulses put it all on the first point, whose friction alone
/// would then turn the body: such a patch's friction takes the points' mean
/// normal impulse, the symmetric share (MuJoCo's regularised solver finds it too).
ORRERY_HD inline void solve_contacts(Buffer<Bodies> bodies, Buffer<Contacts> contacts, float h, Softness soft,
                                     Softness static_soft, bool push, float push_speed) {
    float inv_h = 1.0f / h;
    for (uint32_t begin = 0; begin < contacts.size();) {
        uint32_t end = begin + 1;
        while (end < contacts.size() && contacts[end].a == contacts[begin].a && contacts[end].b == contacts[begin].b)
            ++end;
        SolverBody& a = bodies[contacts[begin].a];
        SolverBody& b = bodies[contacts[begin].b];
        Softness sf = a.kind != BodyKind::kDynamic || b.kind != BodyKind::kDynamic ? static_soft : soft;
        for (uint32_t k = begin; k < end; ++k) solve_normal(a, b, contacts[k], inv_h, sf, push, push_speed);
        float shared = -1.0f;
        if (end - begin > 1 && (cannot_tip(a) || cannot_tip(b))) {
            float sum = 0.0f;
            for (uint32_t k = begin; k < end; ++k) sum += contacts[k].normal_impulse;
            shared = sum / float(end - begin);
        }
        for (uint32_t k = begin; k < end; ++k)
            solve_friction(a, b, contacts[k], shared < 0.0f ? contacts[k].normal_impulse : shared);
        begin = end;
    }
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

/// AxisDamping, implicit as in MuJoCo: (M + h D) v' = M v for the velocity
/// after forces, i.e. v' = v / (1 + h d / m) per world axis, and w' solving
/// (1 + h I^-1 D) w' = w with the world-frame inverse inertia. Bodies
/// without it are left untouched (not even divided by one).
ORRERY_HD inline void damp_axes(SolverBody& b, float h) {
    Vec3 r = b.axis_rate, d = b.axis_angular;
    if (r.x != 0.0f || r.y != 0.0f || r.z != 0.0f)
        b.v = {b.v.x / (1.0f + h * r.x), b.v.y / (1.0f + h * r.y), b.v.z / (1.0f + h * r.z)};
    if (d.x == 0.0f && d.y == 0.0f && d.z == 0.0f) return;
    const Vec3* I = b.inv_inertia_world;
    Vec3 rows[3] = {{1.0f + h * I[0].x * d.x, h * I[0].y * d.y, h * I[0].z * d.z},
                    {h * I[1].x * d.x, 1.0f + h * I[1].y * d.y, h * I[1].z * d.z},
                    {h * I[2].x * d.x, h * I[2].y * d.y, 1.0f + h * I[2].z * d.z}};
    b.w = solve_3x3(rows, b.w);
}

/// Gravity, forces, torques (less the gyroscopic term) and damping of dynamic
/// bodies; locked axes keep no velocity.
ORRERY_HD inline void integrate_velocities(Buffer<Bodies> bodies, Vec3 g, float h) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        if (b.kind != BodyKind::kDynamic) continue;
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

/// Moves every non-static body by its velocity.
ORRERY_HD inline void integrate_positions(Buffer<Bodies> bodies, float h) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        if (b.kind == BodyKind::kStatic) continue;
        b.x += b.v * h;
        b.q = integrate(b.q, b.w, h);
    }
}

/// After the substeps: points that were approaching faster than the bounce
/// speed and were pushed leave at `restitution` times that speed.
ORRERY_HD inline void apply_restitution(Buffer<Bodies> bodies, Buffer<Contacts> contacts, float bounce_speed) {
    for (uint32_t k = 0; k < contacts.size(); ++k) {
        Contact& c = contacts[k];
        if (c.restitution == 0.0f || c.approach > -bounce_speed || c.max_normal_impulse == 0.0f) continue;
        SolverBody& a = bodies[c.a];
        SolverBody& b = bodies[c.b];
        float vn = dot(relative_velocity(a, b, c.ra, c.rb), c.n);
        float impulse = -c.normal_mass * (vn + c.restitution * c.approach);
        float total = max_f(c.normal_impulse + impulse, 0.0f);
        impulse = total - c.normal_impulse;
        c.normal_impulse = total;
        apply_impulse(a, b, c.n * impulse, c.ra, c.rb);
    }
}

// The joints' part of a step, defined in physics/joint.hpp (included below).
ORRERY_HD inline void warm_start_joints(Buffer<Bodies> bodies, Buffer<Joints> joints);
ORRERY_HD inline void solve_joints(Buffer<Bodies> bodies, Buffer<Joints> joints, float h, Softness soft, bool bias);
ORRERY_HD inline void resolve_joints(Buffer<Bodies> bodies, Buffer<Joints> joints);

/// Sets each world's gravity from the settings (an env's init nodes after it may change it).
ORRERY_SYSTEM void init_world(Ctx& ctx) { ctx.single<PhysicsWorld, Gravity>().g = ctx.asset<Settings>()[0].gravity; }

/// One env step for gathered bodies: remember where each starts, find
/// contacts, run the substeps (joints solved before contacts in each pass,
/// as Box2D), apply restitution. simulate() wraps it between gathering and
/// scattering; tests call it on buffers of their own. `joints` must have
/// been resolved against `bodies` (resolve_joints).
ORRERY_HD inline void step_bodies(Buffer<Bodies> bodies, Buffer<Contacts> contacts, Buffer<ContactCache> cache,
                                  Buffer<Joints> joints, const Params& prm, Vec3 g) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        b.x0 = b.x, b.q0 = b.q;
        set_world_inertia(b);
    }
    find_contacts(bodies, contacts, cache, prm);
    float h = prm.dt / float(prm.substeps);
    // Box2D's rule: the contact spring at most a quarter of the substep rate.
    float hertz = min_f(prm.contact_hertz, 0.25f * float(prm.substeps) / prm.dt);
    Softness soft = softness(hertz, prm.damping_ratio, h), static_soft = softness(2.0f * hertz, prm.damping_ratio, h);
    // Joints: at most half the substep rate (Box2D's joints run at twice its contact rate).
    Softness joint_soft =
        softness(min_f(prm.joint_hertz, 0.5f * float(prm.substeps) / prm.dt), prm.joint_damping_ratio, h);
    for (uint32_t s = 0; s < prm.substeps; ++s) {
        integrate_velocities(bodies, g, h);
        warm_start_joints(bodies, joints);
        warm_start(bodies, contacts);
        solve_joints(bodies, joints, h, joint_soft, true);
        solve_contacts(bodies, contacts, h, soft, static_soft, true, prm.push_speed);
        integrate_positions(bodies, h);
        for (uint32_t r = 0; r < prm.relax_iterations; ++r) {
            solve_joints(bodies, joints, h, joint_soft, false);
            solve_contacts(bodies, contacts, h, soft, static_soft, false, prm.push_speed);
        }
    }
    apply_restitution(bodies, contacts, prm.bounce_speed);
}

/// step_bodies for a world without joints.
ORRERY_HD inline void step_bodies(Buffer<Bodies> bodies, Buffer<Contacts> contacts, Buffer<ContactCache> cache,
                                  const Params& prm, Vec3 g) {
    step_bodies(bodies, contacts, cache, Buffer<Joints>{}, prm, g);
}

/// One env step of physics for a world: gather, find the joints' bodies
/// (dropping joints whose body is gone), step_bodies, scatter.
ORRERY_SYSTEM void simulate(Ctx& ctx) {
    Buffer<Bodies> bodies = ctx.single_buffer<PhysicsWorld, Bodies>();
    Buffer<Joints> joints = ctx.single_buffer<PhysicsWorld, Joints>();
    gather_bodies(ctx, bodies);
    resolve_joints(bodies, joints);
    step_bodies(bodies, ctx.single_buffer<PhysicsWorld, Contacts>(), ctx.single_buffer<PhysicsWorld, ContactCache>(),
                joints, ctx.asset<Settings>()[0], ctx.single<PhysicsWorld, Gravity>().g);
    scatter_bodies(ctx, bodies);
}

} // namespace phys

#include "physics/joint.hpp"
