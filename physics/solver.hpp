#pragma once
// The XPBD solver (Müller et al. 2020, "Detailed Rigid Body Simulation with
// Extended Position Based Dynamics"), as Madrona's gpu_hideseek uses it: each
// substep integrates, finds contacts, solves them at the position level (one
// Gauss-Seidel pass, static friction included), derives velocities, then
// applies dynamic friction and restitution at the velocity level. One serial
// pass per world in body and contact order, so results do not depend on the
// thread or lane count. physics/README.md says why XPBD.

#include "physics/collide.hpp"

namespace phys {
using orrery::Buffer;

/// 1 on free axes, 0 on locked ones: bits `shift`..`shift+2` of a lock mask.
ORRERY_HD inline Vec3 free_axes(uint32_t locks, uint32_t shift) {
    return {(locks >> shift) & 1u ? 0.0f : 1.0f, (locks >> (shift + 1)) & 1u ? 0.0f : 1.0f,
            (locks >> (shift + 2)) & 1u ? 0.0f : 1.0f};
}

/// World-frame inverse inertia times v, locked rotation axes removed on both
/// sides (exact when the free axis is a principal axis, as for a box turning about z).
ORRERY_HD inline Vec3 inv_inertia_times(const SolverBody& b, Vec3 v) {
    Vec3 m = free_axes(b.locks, 3);
    return mul(rotate(b.q, mul(b.inv_inertia, unrotate(b.q, mul(v, m)))), m);
}

/// Generalised inverse mass of body b at offset r along unit direction n.
ORRERY_HD inline float inv_mass_along(const SolverBody& b, Vec3 r, Vec3 n) {
    Vec3 rn = cross(r, n);
    return dot(n, mul(b.inv_mass, n)) + dot(rn, inv_inertia_times(b, rn));
}

/// Moves b by positional impulse sign * p at offset r.
ORRERY_HD inline void push_position(SolverBody& b, Vec3 p, Vec3 r, float sign) {
    b.x += mul(b.inv_mass, p) * sign;
    Vec3 dw = inv_inertia_times(b, cross(r, p)) * sign;
    Quat d = Quat{0.0f, dw.x, dw.y, dw.z} * b.q;
    b.q = normalize({b.q.w + 0.5f * d.w, b.q.x + 0.5f * d.x, b.q.y + 0.5f * d.y, b.q.z + 0.5f * d.z});
}

/// Changes b's velocity by impulse sign * p at offset r.
ORRERY_HD inline void push_velocity(SolverBody& b, Vec3 p, Vec3 r, float sign) {
    b.v += mul(b.inv_mass, p) * sign;
    b.w += inv_inertia_times(b, cross(r, p)) * sign;
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
        b.material = *ctx.get<Material>(e);
        out.push(b);
    });
}

/// Writes poses and velocities back and clears the applied forces.
ORRERY_HD inline void scatter_bodies(Ctx& ctx, Buffer<Bodies> bodies) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        const SolverBody& b = bodies[i];
        if (b.kind == BodyKind::kStatic) continue;
        *ctx.get<Pose>(b.entity) = Pose{b.x, b.q};
        *ctx.get<Velocity>(b.entity) = Velocity{b.v, b.w};
        *ctx.get<Force>(b.entity) = Force{};
    }
}

/// Substep start: remember the pose and velocity, apply gravity, forces and
/// damping, and move every non-static body by its velocity.
ORRERY_HD inline void integrate_bodies(Buffer<Bodies> bodies, Vec3 g, float h) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        b.x_prev = b.x, b.q_prev = b.q, b.v_start = b.v, b.w_start = b.w;
        if (b.kind == BodyKind::kStatic) continue;
        Vec3 lin = free_axes(b.locks, 0), ang = free_axes(b.locks, 3);
        if (b.kind == BodyKind::kDynamic) {
            Vec3 accel = mul(g, lin) + mul(b.inv_mass, b.force);
            b.v = (b.v + accel * h) * (1.0f / (1.0f + h * b.lin_damping));
            // Torque less the gyroscopic term w x (I w), in the body frame.
            Vec3 wl = unrotate(b.q, b.w);
            Vec3 iw{b.inv_inertia.x > 0.0f ? wl.x / b.inv_inertia.x : 0.0f,
                    b.inv_inertia.y > 0.0f ? wl.y / b.inv_inertia.y : 0.0f,
                    b.inv_inertia.z > 0.0f ? wl.z / b.inv_inertia.z : 0.0f};
            Vec3 tl = unrotate(b.q, b.torque) - cross(wl, iw);
            b.w = (b.w + mul(rotate(b.q, mul(b.inv_inertia, tl)), ang) * h) * (1.0f / (1.0f + h * b.ang_damping));
        }
        b.v = mul(b.v, lin);
        b.w = mul(b.w, ang);
        b.x += b.v * h;
        b.q = integrate(b.q, b.w, h);
    }
}

/// Broadphase (all pairs, bounding spheres; planes always tested) and
/// narrowphase into the contact list, each point with its combined material.
ORRERY_HD inline void find_contacts(Buffer<Bodies> bodies, Buffer<Contacts> out, const Params& prm) {
    out.clear();
    uint32_t n = bodies.size();
    for (uint32_t i = 0; i < n; ++i)
        for (uint32_t j = i + 1; j < n; ++j) {
            const SolverBody& a = bodies[i];
            const SolverBody& b = bodies[j];
            if (a.kind != BodyKind::kDynamic && b.kind != BodyKind::kDynamic) continue;
            if (a.bound >= 0.0f && b.bound >= 0.0f) {
                Vec3 d = b.x - a.x;
                float r = a.bound + b.bound;
                if (dot(d, d) > r * r) continue;
            }
            Manifold m = collide(Placed{a.shape, a.x, a.q}, Placed{b.shape, b.x, b.q});
            for (uint32_t k = 0; k < m.count; ++k) {
                Contact c{};
                c.a = i, c.b = j, c.n = m.n, c.depth = m.depth[k];
                Vec3 pa = m.p[k] + m.n * (0.5f * m.depth[k]), pb = m.p[k] - m.n * (0.5f * m.depth[k]);
                c.ra = unrotate(a.q, pa - a.x);
                c.rb = unrotate(b.q, pb - b.x);
                c.static_mu = combine(prm.friction_rule, a.material.static_friction, b.material.static_friction);
                c.dynamic_mu = combine(prm.friction_rule, a.material.dynamic_friction, b.material.dynamic_friction);
                c.restitution = combine(prm.restitution_rule, a.material.restitution, b.material.restitution);
                Vec3 va = a.v_start + cross(a.w_start, pa - a.x), vb = b.v_start + cross(b.w_start, pb - b.x);
                c.vn_start = dot(va - vb, m.n);
                if (!out.push(c)) return;
            }
        }
}

/// Points [begin, end) of the contact list are one manifold (one pair of bodies).
ORRERY_HD inline uint32_t manifold_end(Buffer<Contacts> contacts, uint32_t begin) {
    uint32_t end = begin + 1;
    while (end < contacts.size() && contacts[end].a == contacts[begin].a && contacts[end].b == contacts[begin].b) ++end;
    return end;
}

/// Point i of [begin, end) in sweep `sweep`: forward, then backward (symmetric
/// Gauss-Seidel, so no corner of a manifold is always solved first).
ORRERY_HD inline uint32_t sweep_order(uint32_t begin, uint32_t end, uint32_t i, uint32_t sweep) {
    return (sweep & 1u) ? end - 1u - (i - begin) : i;
}

/// The manifold's centre in each body's frame: where its friction acts.
struct Patch { Vec3 ra, rb; float lambda_n; };
ORRERY_HD inline Patch patch_of(Buffer<Contacts> contacts, uint32_t begin, uint32_t end) {
    Patch p{{0, 0, 0}, {0, 0, 0}, 0.0f};
    for (uint32_t k = begin; k < end; ++k) p.ra += contacts[k].ra, p.rb += contacts[k].rb, p.lambda_n += contacts[k].lambda_n;
    float inv = 1.0f / float(end - begin);
    p.ra = p.ra * inv, p.rb = p.rb * inv;
    return p;
}

/// Static friction at one point: undo its tangential slip over the substep
/// while the accumulated push stays in the cone (|push| <= mu_s |lambda_n|);
/// outside it the point slides and dynamic friction acts instead.
ORRERY_HD inline void static_friction(SolverBody& a, SolverBody& b, Contact& c) {
    if (c.lambda_n == 0.0f) return;
    Vec3 ra = rotate(a.q, c.ra), rb = rotate(b.q, c.rb);
    Vec3 slip = ((a.x + ra) - (a.x_prev + rotate(a.q_prev, c.ra))) - ((b.x + rb) - (b.x_prev + rotate(b.q_prev, c.rb)));
    Vec3 tangent = slip - c.n * dot(slip, c.n);
    float len = length(tangent);
    if (len <= 1e-9f) return;
    Vec3 t = tangent * (1.0f / len);
    float wt = inv_mass_along(a, ra, t) + inv_mass_along(b, rb, t);
    if (wt <= 0.0f) return;
    Vec3 push = t * (-len / wt);
    Vec3 total = c.static_t + push;
    if (length(total) > c.static_mu * abs_of(c.lambda_n)) return;
    c.static_t = total;
    push_position(a, push, ra, 1.0f);
    push_position(b, push, rb, -1.0f);
}

/// Dynamic friction at one point: the impulse that stops its slip, the
/// point's accumulated impulse clamped to mu_d times its normal impulse |lambda_n| / h.
ORRERY_HD inline void dynamic_friction(SolverBody& a, SolverBody& b, Contact& c, float h) {
    if (c.lambda_n == 0.0f) return;
    Vec3 ra = rotate(a.q, c.ra), rb = rotate(b.q, c.rb);
    Vec3 v = (a.v + cross(a.w, ra)) - (b.v + cross(b.w, rb));
    Vec3 vt = v - c.n * dot(v, c.n);
    float vt_len = length(vt);
    if (vt_len <= 1e-9f) return;
    Vec3 t = vt * (1.0f / vt_len);
    float wt = inv_mass_along(a, ra, t) + inv_mass_along(b, rb, t);
    if (wt <= 0.0f) return;
    Vec3 total = c.dynamic_t + t * (-vt_len / wt);
    float limit = c.dynamic_mu * abs_of(c.lambda_n) / h, len = length(total);
    if (len > limit) total = total * (limit / len);
    Vec3 p = total - c.dynamic_t;
    c.dynamic_t = total;
    push_velocity(a, p, ra, 1.0f);
    push_velocity(b, p, rb, -1.0f);
}

/// Position pass. Each manifold's points are pushed apart by projected
/// Gauss-Seidel sweeps (zero compliance, accumulated push never pulling), so
/// four corners of a resting box converge to the one level pose instead of
/// rocking it; then static friction holds the manifold's centre still
/// tangentially while the push allows (|friction| < mu_s |lambda_n|).
ORRERY_HD inline void solve_positions(Buffer<Bodies> bodies, Buffer<Contacts> contacts, uint32_t sweeps) {
    for (uint32_t begin = 0; begin < contacts.size();) {
        uint32_t end = manifold_end(contacts, begin);
        SolverBody& a = bodies[contacts[begin].a];
        SolverBody& b = bodies[contacts[begin].b];
        const Vec3 n = contacts[begin].n;
        for (uint32_t sweep = 0; sweep < sweeps; ++sweep)
            for (uint32_t i = begin; i < end; ++i) {
                Contact& c = contacts[sweep_order(begin, end, i, sweep)];
                Vec3 ra = rotate(a.q, c.ra), rb = rotate(b.q, c.rb);
                float d = dot((a.x + ra) - (b.x + rb), n);
                float w = inv_mass_along(a, ra, n) + inv_mass_along(b, rb, n);
                if (w <= 0.0f) continue;
                float lambda = min_f(c.lambda_n - d / w, 0.0f); // <= 0: contacts only push
                float dl = lambda - c.lambda_n;
                c.lambda_n = lambda;
                c.depth = d;
                if (dl == 0.0f) continue;
                push_position(a, n * dl, ra, 1.0f);
                push_position(b, n * dl, rb, -1.0f);
            }
        for (uint32_t sweep = 0; sweep < sweeps; ++sweep)
            for (uint32_t i = begin; i < end; ++i) static_friction(a, b, contacts[sweep_order(begin, end, i, sweep)]);
        begin = end;
    }
}

/// Velocities of dynamic bodies from their substep's change of pose.
ORRERY_HD inline void derive_velocities(Buffer<Bodies> bodies, float h) {
    for (uint32_t i = 0; i < bodies.size(); ++i) {
        SolverBody& b = bodies[i];
        if (b.kind != BodyKind::kDynamic) continue;
        b.v = (b.x - b.x_prev) * (1.0f / h);
        Quat dq = b.q * conj(b.q_prev);
        b.w = Vec3{dq.x, dq.y, dq.z} * ((dq.w < 0.0f ? -2.0f : 2.0f) / h);
    }
}

/// Velocity pass on the manifolds the position pass pushed: each point's
/// normal velocity becomes -e times the approach speed its substep began with
/// (zero below the bounce speed; sweeps as in the position pass), then dynamic
/// friction at the manifold's centre, at most mu_d times its normal impulse
/// |lambda_n| / h and never more than stops the slip.
ORRERY_HD inline void solve_velocities(Buffer<Bodies> bodies, Buffer<Contacts> contacts, float h, float bounce,
                                       uint32_t sweeps) {
    for (uint32_t begin = 0; begin < contacts.size();) {
        uint32_t end = manifold_end(contacts, begin);
        SolverBody& a = bodies[contacts[begin].a];
        SolverBody& b = bodies[contacts[begin].b];
        const Vec3 n = contacts[begin].n;
        for (uint32_t sweep = 0; sweep < sweeps; ++sweep) {
            for (uint32_t i = begin; i < end; ++i) {
                const Contact& c = contacts[sweep_order(begin, end, i, sweep)];
                if (c.lambda_n == 0.0f) continue;
                Vec3 ra = rotate(a.q, c.ra), rb = rotate(b.q, c.rb);
                float vn = dot((a.v + cross(a.w, ra)) - (b.v + cross(b.w, rb)), n); // > 0: a moving into b
                float e = abs_of(c.vn_start) > bounce ? c.restitution : 0.0f;
                float w = inv_mass_along(a, ra, n) + inv_mass_along(b, rb, n);
                if (w <= 0.0f) continue;
                Vec3 p = n * ((-vn - max_f(e * c.vn_start, 0.0f)) / w);
                push_velocity(a, p, ra, 1.0f);
                push_velocity(b, p, rb, -1.0f);
            }
            for (uint32_t i = begin; i < end; ++i) dynamic_friction(a, b, contacts[sweep_order(begin, end, i, sweep)], h);
        }
        begin = end;
    }
}

/// Sets each world's gravity from the settings (an env's init nodes after it may change it).
ORRERY_SYSTEM void init_world(Ctx& ctx) {
    ctx.single<PhysicsWorld, Gravity>().g = ctx.asset<Settings>()[0].gravity;
}

/// One env step of physics for a world: gather, `substeps` XPBD substeps, scatter.
ORRERY_SYSTEM void simulate(Ctx& ctx) {
    const Params prm = ctx.asset<Settings>()[0];
    const Vec3 g = ctx.single<PhysicsWorld, Gravity>().g;
    Buffer<Bodies> bodies = ctx.single_buffer<PhysicsWorld, Bodies>();
    Buffer<Contacts> contacts = ctx.single_buffer<PhysicsWorld, Contacts>();
    gather_bodies(ctx, bodies);
    float h = prm.dt / float(prm.substeps);
    float bounce = max_f(prm.bounce_speed, 2.0f * length(g) * h);
    for (uint32_t s = 0; s < prm.substeps; ++s) {
        integrate_bodies(bodies, g, h);
        find_contacts(bodies, contacts, prm);
        for (uint32_t it = 0; it < prm.iterations; ++it) solve_positions(bodies, contacts, prm.sweeps);
        derive_velocities(bodies, h);
        solve_velocities(bodies, contacts, h, bounce, prm.sweeps);
    }
    scatter_bodies(ctx, bodies);
}

} // namespace phys
