// The pile test env's registration table: physics composed with one call.

#include "tests/modules/pile/pile.hpp"

#include "physics/module.hpp"

namespace pile {

orrery::EnvSpec make_spec(uint32_t boxes, uint32_t balls, const std::string& root) {
    orrery::EnvSpec spec = ORRERY_ENV_SPEC("pile", "tests/modules/pile/pile.hpp");
    spec.set_header_root(root);
    spec.config(Config{boxes, balls});
    spec.archetype<Piece>(boxes + balls);
    spec.archetype<Ground>(1);
    spec.archetype<Score>(1, /*singleton=*/true);
    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(drop));
    phys::PhysicsOptions po;
    po.max_bodies = boxes + balls + 1;
    phys::PhysicsNodes nodes = phys::add_to(spec, po);
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(measure), {nodes.simulate});
    spec.export_output<Piece, phys::Pose>("pose");
    spec.export_output<Score, Height>("height");
    return spec;
}

} // namespace pile
