// phys::validate_world: the physics module's fields of one world, checked as
// untrusted input before a snapshot or checkpoint reaches the simulator. The
// step never reads out of bounds on a bad value (a bad hull number records
// kErrorBadHull, buffer counts are clamped), but it would compute with NaNs
// and garbage; here each field is refused with its name and the value expected.
// The solver's scratch (Bodies, Contacts, Pairs: simulate's step scratch, in
// no snapshot) and a joint's ia and ib are rebuilt before they are read; the
// ContactCache is what the next step warm-starts from, so its entries are checked.

#include "physics/validate.hpp"

#include <cmath>
#include <sstream>
#include <string>

#include "physics/hull.hpp"

namespace phys {
namespace {

using orrery::ArchetypeTable;
using orrery::Error;

std::string num(float v) {
    std::ostringstream o;
    o.precision(9);
    o << v;
    return o.str();
}
std::string vec(Vec3 v) { return std::string("(") + num(v.x) + ", " + num(v.y) + ", " + num(v.z) + ")"; }
std::string quat(Quat q) {
    return std::string("(") + num(q.w) + ", " + num(q.x) + ", " + num(q.y) + ", " + num(q.z) + ")";
}
bool finite(float v) { return std::isfinite(v); }
bool finite(Vec3 v) { return finite(v.x) && finite(v.y) && finite(v.z); }
bool at_least_zero(Vec3 v) { return finite(v) && v.x >= 0.0f && v.y >= 0.0f && v.z >= 0.0f; }

/// Throws "<where>: <field> = <value>; expected <want>".
[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& value,
                      const std::string& want) {
    throw Error(where + ": " + field + " = " + value + "; expected " + want);
}

void check_finite(const std::string& where, const std::string& field, Vec3 v) {
    if (!finite(v)) bad(where, field, vec(v), "finite numbers");
}
void check_unit(const std::string& where, const std::string& field, Quat q) {
    float n = std::sqrt(q.w * q.w + q.x * q.x + q.y * q.y + q.z * q.z);
    if (!(std::fabs(n - 1.0f) <= kUnitTolerance))
        bad(where, field, quat(q) + " (norm " + num(n) + ")",
            "a unit quaternion (w, x, y, z), norm within " + num(kUnitTolerance) + " of 1");
}
void check_at_least_zero(const std::string& where, const std::string& field, Vec3 v) {
    if (!at_least_zero(v)) bad(where, field, vec(v), "finite numbers >= 0");
}

/// Shape kind and dims; a hull's number must name a hull of the shared table.
void check_shape(const std::string& where, Shape s, BodyKind kind, const HullSet& hulls) {
    if (uint32_t(s.kind) > uint32_t(ShapeKind::kHull))
        bad(where, "Shape.kind", std::to_string(uint32_t(s.kind)),
            "0 (sphere), 1 (capsule), 2 (box), 3 (plane) or 4 (hull)");
    check_finite(where, "Shape.dims", s.dims);
    const Vec3 d = s.dims;
    switch (s.kind) {
    case ShapeKind::kSphere:
        if (!(d.x > 0.0f)) bad(where, "Shape.dims.x (sphere radius)", num(d.x), "> 0 m");
        break;
    case ShapeKind::kCapsule:
        if (!(d.x > 0.0f)) bad(where, "Shape.dims.x (capsule radius)", num(d.x), "> 0 m");
        if (!(d.y >= 0.0f)) bad(where, "Shape.dims.y (capsule half length)", num(d.y), ">= 0 m");
        break;
    case ShapeKind::kBox:
        if (!(d.x > 0.0f && d.y > 0.0f && d.z > 0.0f))
            bad(where, "Shape.dims (box half extents)", vec(d), "each > 0 m");
        break;
    case ShapeKind::kPlane:
        if (kind != BodyKind::kStatic)
            bad(where, "BodyType.kind of a plane", std::to_string(uint32_t(kind)),
                "1 (static): planes are static only");
        break;
    case ShapeKind::kHull:
        if (!hull_valid(hulls, s))
            bad(where, "Shape.dims.x (hull number)", num(d.x),
                hulls.info.size ? "a whole number 0.." + std::to_string(hulls.info.size - 1) +
                                      " (the hull table holds " + std::to_string(hulls.info.size) + ")"
                                : "none: the env's hull table is empty (PhysicsOptions::hulls)");
        break;
    }
}

void check_body(const std::string& where, const orrery::Ctx& ctx, orrery::Entity e, const HullSet& hulls) {
    const BodyKind kind = ctx.get<BodyType>(e)->kind;
    if (uint32_t(kind) > uint32_t(BodyKind::kKinematic))
        bad(where, "BodyType.kind", std::to_string(uint32_t(kind)), "0 (dynamic), 1 (static) or 2 (kinematic)");
    check_shape(where, *ctx.get<Shape>(e), kind, hulls);
    const Pose& p = *ctx.get<Pose>(e);
    check_finite(where, "Pose.p", p.p);
    check_unit(where, "Pose.q", p.q);
    const Velocity& v = *ctx.get<Velocity>(e);
    check_finite(where, "Velocity.v", v.v);
    check_finite(where, "Velocity.w", v.w);
    // Static and kinematic bodies' mass is not read (hide-and-seek's lock keeps
    // a box's), so it is only required to be a mass; a dynamic body's is used.
    const MassProps& m = *ctx.get<MassProps>(e);
    if (!(finite(m.inv_mass) && m.inv_mass >= 0.0f))
        bad(where, "MassProps.inv_mass", num(m.inv_mass), "a finite number >= 0 (0: infinite mass)");
    check_at_least_zero(where, "MassProps.inv_inertia", m.inv_inertia);
    const uint32_t locks = ctx.get<Locks>(e)->mask,
                   known = kLockX | kLockY | kLockZ | kLockTurnX | kLockTurnY | kLockTurnZ;
    if (locks & ~known) bad(where, "Locks.mask", std::to_string(locks), "only the bits of " + std::to_string(known));
    if (const Damping* d = ctx.get<Damping>(e))
        if (!(finite(d->linear) && finite(d->angular) && d->linear >= 0.0f && d->angular >= 0.0f))
            bad(where, "Damping", std::string("(") + num(d->linear) + ", " + num(d->angular) + ")",
                "finite rates >= 0 per second");
    if (const AxisDamping* d = ctx.get<AxisDamping>(e)) {
        check_at_least_zero(where, "AxisDamping.linear", d->linear);
        check_at_least_zero(where, "AxisDamping.angular", d->angular);
    }
    const Material& mt = *ctx.get<Material>(e);
    check_at_least_zero(where, "Material friction and restitution",
                        {mt.static_friction, mt.dynamic_friction, mt.restitution});
    if (mt.restitution > 1.0f) bad(where, "Material.restitution", num(mt.restitution), "0..1");
    const Force& f = *ctx.get<Force>(e);
    check_finite(where, "Force.f", f.f);
    check_finite(where, "Force.t", f.t);
}

/// A buffer's stored count, checked against its capacity; returns it.
template <class T> uint32_t checked_count(const orrery::Ctx& ctx, const char* name, const char* option) {
    orrery::Buffer<T> b = ctx.single_buffer<PhysicsWorld, T>();
    uint32_t n = b.count_ ? *b.count_ : 0;
    if (n > b.capacity())
        bad("PhysicsWorld", std::string(name) + " count", std::to_string(n),
            "at most its capacity " + std::to_string(b.capacity()) + " (PhysicsOptions::" + option + ")");
    return n;
}

/// The cache the next step warm-starts from: bodies a < b below max_bodies
/// (the binary search's order is not checked: a point out of order is only
/// not found), the point and the impulses finite.
void check_cache(const orrery::Ctx& ctx) {
    orrery::Buffer<ContactCache> cache = ctx.single_buffer<PhysicsWorld, ContactCache>();
    const uint32_t n = checked_count<ContactCache>(ctx, "ContactCache", "max_contacts");
    const uint32_t bodies = ctx.buffer_capacity<Bodies>(); // max_bodies: Bodies is simulate's step scratch
    for (uint32_t k = 0; k < n; ++k) {
        const CachedContact& c = cache[k];
        const std::string where = "PhysicsWorld ContactCache[" + std::to_string(k) + "]";
        if (!(c.a < c.b && c.b < bodies))
            bad(where, "(a, b)", std::string("(") + std::to_string(c.a) + ", " + std::to_string(c.b) + ")",
                "body indices a < b < " + std::to_string(bodies) + " (PhysicsOptions::max_bodies)");
        if (!(finite(c.la) && finite(c.friction) && finite(c.normal_impulse) && finite(c.n)))
            bad(where, "a point, normal or impulse", "not finite", "finite numbers");
    }
}

/// What is wrong with a joint's body handle, or "" (null: the world; a stale
/// handle to a destroyed body is allowed, simulate drops its joint).
std::string entity_problem(const orrery::EnvSpec& spec, const orrery::Ctx& ctx, orrery::Entity e) {
    if (e.is_null()) return e.index == 0 ? "" : "a null handle (generation 0) with index " + std::to_string(e.index);
    const orrery::Storage& s = ctx.storage();
    const uint32_t a = e.archetype();
    if (a >= s.num_archetypes)
        return "archetype id " + std::to_string(a) + " (the env has " + std::to_string(s.num_archetypes) + ")";
    const ArchetypeTable& t = s.tables[a];
    const std::string arch = "archetype '" + spec.archetype_specs()[a].name + "'";
    if (!t.columns[orrery::component_id<Pose>] || !t.columns[orrery::component_id<BodyType>])
        return arch + ", which holds no rigid bodies";
    if (e.row() >= t.capacity)
        return arch + " row " + std::to_string(e.row()) + ", beyond its capacity " + std::to_string(t.capacity);
    const uint32_t r = ctx.slot(t, e.row()), gen = t.generation[r];
    if (e.gen > gen || (e.gen == gen && !t.alive[r]))
        return arch + " row " + std::to_string(e.row()) + " generation " + std::to_string(e.gen) +
               ", which no body had yet (the row's generation is " + std::to_string(gen) +
               (t.alive[r] ? ", alive)" : ", free)");
    return "";
}

void check_joints(const orrery::EnvSpec& spec, const orrery::Ctx& ctx) {
    orrery::Buffer<Joints> joints = ctx.single_buffer<PhysicsWorld, Joints>();
    const uint32_t n = checked_count<Joints>(ctx, "Joints", "max_joints");
    for (uint32_t k = 0; k < n; ++k) {
        const Joint& j = joints[k];
        const std::string where = "PhysicsWorld Joints[" + std::to_string(k) + "]";
        if (uint32_t(j.kind) > uint32_t(JointKind::kSlider))
            bad(where, "kind", std::to_string(uint32_t(j.kind)), "0 (weld), 1 (hinge) or 2 (slider)");
        const uint32_t declared = ctx.asset<Settings>()[0].joint_kinds;
        if (!(declared & joint_kind_bit(j.kind)))
            bad(where, "kind", std::to_string(uint32_t(j.kind)),
                "a kind the env declares (PhysicsOptions::joint_kinds = " + std::to_string(declared) +
                    ": 1 weld, 2 hinge, 4 slider)");
        if (j.flags & ~uint32_t(kJointLimited))
            bad(where, "flags", std::to_string(j.flags), "only kJointLimited (" + std::to_string(kJointLimited) + ")");
        for (int side = 0; side < 2; ++side) {
            orrery::Entity e = side == 0 ? j.a : j.b;
            std::string why = entity_problem(spec, ctx, e);
            if (!why.empty())
                bad(where, side == 0 ? "a" : "b",
                    std::string("{index ") + std::to_string(e.index) + ", gen " + std::to_string(e.gen) + "}",
                    "the null entity (the world) or a rigid body's handle; it names " + why);
        }
        if (j.a.index == j.b.index && j.a.gen == j.b.gen)
            bad(where, "(a, b)", j.a.is_null() ? "the world twice" : "one body twice",
                "two different bodies, or a body and the world");
        check_finite(where, "fa.p", j.fa.p);
        check_unit(where, "fa.q", j.fa.q);
        check_finite(where, "fb.p", j.fb.p);
        check_unit(where, "fb.q", j.fb.q);
        if (!finite(j.lower) || !finite(j.upper) || ((j.flags & kJointLimited) && j.lower > j.upper))
            bad(where, "limits (lower, upper)", std::string("(") + num(j.lower) + ", " + num(j.upper) + ")",
                "finite numbers, lower <= upper when limited");
        check_finite(where, "linear_impulse", j.linear_impulse);
        check_finite(where, "angular_impulse", j.angular_impulse);
        if (!(finite(j.lower_impulse) && finite(j.upper_impulse) && j.lower_impulse >= 0.0f && j.upper_impulse >= 0.0f))
            bad(where, "limit impulses (lower, upper)",
                std::string("(") + num(j.lower_impulse) + ", " + num(j.upper_impulse) + ")", "finite numbers >= 0");
    }
}

} // namespace

void validate_world(const orrery::EnvSpec& spec, const orrery::Ctx& ctx) {
    const HullSet hulls = hull_set(ctx);
    ctx.each_with<Pose, Velocity, MassProps, BodyType, Locks, Shape, Material, Force>([&](orrery::Entity e) {
        check_body("archetype '" + spec.archetype_specs()[e.archetype()].name + "' row " + std::to_string(e.row()), ctx,
                   e, hulls);
    });
    check_finite("PhysicsWorld", "Gravity.g", ctx.single<PhysicsWorld, Gravity>().g);
    check_cache(ctx);
    check_joints(spec, ctx);
}

} // namespace phys
