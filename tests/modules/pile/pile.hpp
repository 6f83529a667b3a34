#pragma once
// Pile: a test env outside the library composing the physics module, as an
// env of another repository would: boxes and balls dropped into a pile, with a
// per-world score of its own. Its header is found under the env's header
// root; the physics headers come embedded in the library.

#include "physics/physics.hpp"

namespace pile {
using namespace orrery;

struct Config {
    uint32_t boxes, balls;
};
struct Height {
    using Element = float;
    float value;
}; // [worlds, 1] f32: the pile's top

ORRERY_COMPONENTS(phys::OrreryComponents, Height);
ORRERY_ARCHETYPE(Piece, phys::RigidBody);
ORRERY_ARCHETYPE(Ground, phys::RigidBody);
ORRERY_ARCHETYPE(Score, Height);
ORRERY_ARCHETYPES(phys::OrreryArchetypes, Piece, Ground, Score);

ORRERY_SYSTEM void drop(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Rng rng = ctx.rng(3);
    Entity g = ctx.create<Ground>();
    ctx.get<phys::Pose>(g)->q = {1, 0, 0, 0};
    ctx.get<phys::BodyType>(g)->kind = phys::BodyKind::kStatic;
    *ctx.get<phys::Shape>(g) = {phys::ShapeKind::kPlane, {0, 0, 0}};
    *ctx.get<phys::Material>(g) = {0.6f, 0.6f, 0.0f, 0.0f};
    for (uint32_t i = 0; i < cfg.boxes + cfg.balls; ++i) {
        Entity e = ctx.create<Piece>();
        if (e.is_null()) return;
        float x = rng.uniform() * 0.4f - 0.2f, y = rng.uniform() * 0.4f - 0.2f, yaw = rng.uniform() * 3.0f;
        phys::Shape s = i < cfg.boxes ? phys::Shape{phys::ShapeKind::kBox, {0.1f, 0.15f, 0.1f}}
                                      : phys::Shape{phys::ShapeKind::kSphere, {0.1f, 0, 0}};
        *ctx.get<phys::Pose>(e) = {{x, y, 0.2f + 0.3f * i}, phys::axis_angle({0, 0, 1}, yaw)};
        *ctx.get<phys::Shape>(e) = s;
        *ctx.get<phys::MassProps>(e) = phys::mass_of(s, 500.0f);
        *ctx.get<phys::Material>(e) = {0.6f, 0.5f, 0.1f, 0.0f};
    }
}

/// The highest piece's centre.
ORRERY_SYSTEM void measure(Ctx& ctx) {
    float top = 0.0f;
    ctx.each<Piece>([&](Entity e) { top = max_of(top, ctx.get<phys::Pose>(e)->p.z); });
    ctx.single<Score, Height>().value = top;
}

} // namespace pile
