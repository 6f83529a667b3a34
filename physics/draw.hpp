#pragma once
// How an env that uses the physics module declares its 3-D view in one call:
// its bodies drawn from phys::Pose and phys::Shape, their velocities, the
// names of the physics components' elements for the inspector, hulls' meshes
// from the shared hull table, and the per-world ContactCache and Joints buffers as
// overlays. Host-only (std::function), header-only and free of Vulkan: an
// env's registration file includes it whether or not render/ is built.

#include "engine/draw.hpp"
#include "physics/physics.hpp"

namespace orrery {

/// Draws archetype A's rigid bodies (A holds phys::RigidBody) in the 3-D view,
/// coloured `color`; add colour rules to the returned entry (a team field, a
/// body type). Also names the physics components' elements and adds the
/// "contacts" overlay (each contact point, and its normal from body a to b)
/// and the "joints" overlay (lines from each jointed body to its joint).
template <class A> BodyDraw& draw_physics_bodies(DrawSpec& draw, Rgba color = {200, 200, 200, 255}) {
    draw.view = DrawSpec::View::k3D;
    BodyDraw& b = draw.body<A>()
                      .pose(floats(&phys::Pose::p), floats(&phys::Pose::q))
                      .shape(field(&phys::Shape::kind), floats(&phys::Shape::dims),
                             {{int32_t(phys::ShapeKind::kSphere), Solid::kSphere},
                              {int32_t(phys::ShapeKind::kCapsule), Solid::kCapsule},
                              {int32_t(phys::ShapeKind::kBox), Solid::kBox},
                              {int32_t(phys::ShapeKind::kPlane), Solid::kPlane},
                              {int32_t(phys::ShapeKind::kHull), Solid::kHull}})
                      .moving(floats(&phys::Velocity::v));
    b.color = color;
    b.hull_mesh = [](const Ctx& ctx, uint32_t index) { // each face as a fan, from the shared hull table
        HullMesh m;
        phys::HullSet hulls{ctx.asset<phys::Hulls>(), ctx.asset<phys::HullPoints>(), ctx.asset<phys::HullFaces>(),
                            ctx.asset<phys::HullIndices>()};
        if (!phys::hull_valid(hulls, phys::hull_shape(index))) return m;
        phys::Convex c = phys::convex_of(phys::hull_shape(index), hulls);
        for (uint32_t f = 0; f < c.num_faces(); ++f) {
            phys::HullFace F = c.face(f);
            for (uint32_t k = 1; k + 1 < F.count; ++k) {
                for (uint32_t corner : {0u, k, k + 1}) {
                    phys::Vec3 v = c.vertex(c.corner(F, corner));
                    m.corners.push_back({v.x, v.y, v.z});
                }
                m.normals.push_back({F.n.x, F.n.y, F.n.z});
            }
        }
        return m;
    };
    bool named = false;
    for (const auto& e : draw.element_names) named = named || e.component == component_id<phys::Pose>;
    if (!named) {
        draw.name_elements<phys::Pose>({"px", "py", "pz", "qw", "qx", "qy", "qz"});
        draw.name_elements<phys::Velocity>({"vx", "vy", "vz", "wx", "wy", "wz"});
        draw.name_elements<phys::MassProps>({"inv_mass", "inv_ixx", "inv_iyy", "inv_izz"});
        draw.name_elements<phys::Shape>({"kind", "dx", "dy", "dz"},
                                        {ScalarType::kU32, ScalarType::kF32, ScalarType::kF32, ScalarType::kF32});
        draw.name_elements<phys::Material>({"static_friction", "dynamic_friction", "restitution", "pad"});
        draw.name_elements<phys::Damping>({"linear", "angular"});
        draw.name_elements<phys::Force>({"fx", "fy", "fz", "tx", "ty", "tz"});
        draw.name_elements<phys::BodyType>({"kind (0 dynamic, 1 static, 2 kinematic)"});
        draw.name_elements<phys::Locks>({"mask"});
        draw.name_elements<phys::AxisDamping>(
            {"damping_x", "damping_y", "damping_z", "damping_wx", "damping_wy", "damping_wz"});
        draw.overlay("contacts", [](const Ctx& ctx, std::vector<Segment>& out) {
            // The cache holds the last step's points (its Contacts are step scratch),
            // each in body a's frame (CachedContact::la): placed by a's pose as drawn.
            Buffer<phys::ContactCache> cache = ctx.single_buffer<phys::PhysicsWorld, phys::ContactCache>();
            for (uint32_t i = 0; i < cache.size(); ++i) {
                const phys::CachedContact& c = cache[i];
                const phys::Pose* pa = ctx.get<phys::Pose>(c.ea);
                if (!pa) continue;
                phys::Vec3 p = pa->p + phys::rotate(pa->q, c.la), tip = p + c.n * 0.15f;
                const Rgba red{255, 60, 60, 255}, white{255, 255, 255, 255};
                const float k = 0.03f; // a small cross at the point
                out.push_back({{p.x - k, p.y, p.z}, {p.x + k, p.y, p.z}, red});
                out.push_back({{p.x, p.y - k, p.z}, {p.x, p.y + k, p.z}, red});
                out.push_back({{p.x, p.y, p.z - k}, {p.x, p.y, p.z + k}, red});
                out.push_back({{p.x, p.y, p.z}, {tip.x, tip.y, tip.z}, white});
            }
        });
        draw.overlay("joints", [](const Ctx& ctx, std::vector<Segment>& out) {
            // Each joint as lines from each body's centre to its frame's origin
            // (where the weld, the hinge's pin or the slider's block sits).
            Buffer<phys::Joints> joints = ctx.single_buffer<phys::PhysicsWorld, phys::Joints>();
            const Rgba yellow{255, 220, 40, 255};
            auto arm = [&](Entity e, const phys::Frame& f) {
                const phys::Pose* p = e.is_null() ? nullptr : ctx.get<phys::Pose>(e);
                if (!p) return;
                phys::Vec3 o = p->p + phys::rotate(p->q, f.p);
                out.push_back({{p->p.x, p->p.y, p->p.z}, {o.x, o.y, o.z}, yellow});
            };
            for (uint32_t i = 0; i < joints.size(); ++i) arm(joints[i].a, joints[i].fa), arm(joints[i].b, joints[i].fb);
        });
    }
    return b;
}

} // namespace orrery
