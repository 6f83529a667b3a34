// phys::add_to: the physics module's registration, checked options first.

#include "physics/module.hpp"

#include <string>

namespace phys {

PhysicsNodes add_to(orrery::EnvSpec& spec, const PhysicsOptions& o) {
    auto bad = [&](const std::string& field, const std::string& value, const std::string& want) {
        throw orrery::Error("env '" + spec.name() + "': physics option " + field + "=" + value + " is invalid; expected " +
                            want);
    };
    if (!(o.dt > 0.0f && o.dt <= 1.0f)) bad("dt", std::to_string(o.dt), "a time step in (0, 1] seconds");
    if (o.substeps < 1 || o.substeps > 64) bad("substeps", std::to_string(o.substeps), "1..64");
    if (o.sweeps < 1 || o.sweeps > 64) bad("sweeps", std::to_string(o.sweeps), "1..64");
    if (o.iterations < 1 || o.iterations > 64) bad("iterations", std::to_string(o.iterations), "1..64");
    if (o.max_bodies < 1 || o.max_bodies > 4096) bad("max_bodies", std::to_string(o.max_bodies), "1..4096");
    if (o.max_contacts < 1 || o.max_contacts > 65536) bad("max_contacts", std::to_string(o.max_contacts), "1..65536");
    if (uint32_t(o.friction_rule) > 3) bad("friction_rule", std::to_string(uint32_t(o.friction_rule)), "a Combine");
    if (uint32_t(o.restitution_rule) > 3)
        bad("restitution_rule", std::to_string(uint32_t(o.restitution_rule)), "a Combine");

    Params p{};
    p.dt = o.dt;
    p.substeps = o.substeps;
    p.sweeps = o.sweeps;
    p.iterations = o.iterations;
    p.gravity = o.gravity;
    p.friction_rule = o.friction_rule;
    p.restitution_rule = o.restitution_rule;
    p.bounce_speed = o.bounce_speed;
    spec.asset<Settings>(&p, 1);
    spec.capacity<Bodies>(o.max_bodies);
    spec.capacity<Contacts>(o.max_contacts);
    spec.archetype<PhysicsWorld>(1, /*singleton=*/true);
    PhysicsNodes nodes;
    nodes.init = spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(phys::init_world));
    nodes.simulate = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(phys::simulate));
    spec.info()["physics"] = "xpbd dt=" + std::to_string(o.dt) + " substeps=" + std::to_string(o.substeps);
    return nodes;
}

} // namespace phys
