// phys::add_to: the physics module's registration, checked options first.

#include "physics/module.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "physics/validate.hpp"

namespace phys {

PhysicsNodes add_to(orrery::EnvSpec& spec, const PhysicsOptions& o) {
    auto bad = [&](const std::string& field, const std::string& value, const std::string& want) {
        throw orrery::Error("env '" + spec.name() + "': physics option " + field + "=" + value +
                            " is invalid; expected " + want);
    };
    if (!(o.dt > 0.0f && o.dt <= 1.0f)) bad("dt", std::to_string(o.dt), "a time step in (0, 1] seconds");
    if (o.substeps < 1 || o.substeps > 64) bad("substeps", std::to_string(o.substeps), "1..64");
    if (o.max_bodies < 1 || o.max_bodies > 4096) bad("max_bodies", std::to_string(o.max_bodies), "1..4096");
    if (o.max_contacts < 1 || o.max_contacts > 65536) bad("max_contacts", std::to_string(o.max_contacts), "1..65536");
    if (o.max_pairs > 65536) bad("max_pairs", std::to_string(o.max_pairs), "0..65536 (0: twice max_contacts)");
    if (!(o.match_distance >= 0.0f && o.match_distance <= 1.0f))
        bad("match_distance", std::to_string(o.match_distance), "0..1 m");
    if (!(o.margin >= 0.0f && o.margin <= 1.0f)) bad("margin", std::to_string(o.margin), "0..1 m");
    if (!(o.contact_hertz > 0.0f && o.contact_hertz <= 1e4f))
        bad("contact_hertz", std::to_string(o.contact_hertz), "(0, 1e4]");
    if (!(o.damping_ratio >= 0.0f && o.damping_ratio <= 1e3f))
        bad("damping_ratio", std::to_string(o.damping_ratio), "0..1e3");
    if (!(o.push_speed > 0.0f)) bad("push_speed", std::to_string(o.push_speed), "> 0 m/s");
    if (!(o.bounce_speed >= 0.0f)) bad("bounce_speed", std::to_string(o.bounce_speed), ">= 0 m/s");
    if (o.relax_iterations > 16) bad("relax_iterations", std::to_string(o.relax_iterations), "0..16");
    if (o.max_joints < 1 || o.max_joints > 4096) bad("max_joints", std::to_string(o.max_joints), "1..4096");
    if (o.joint_kinds > kAllJointKinds)
        bad("joint_kinds", std::to_string(o.joint_kinds),
            "a set of joint_kind_bit(kind): 0..7 (1 weld, 2 hinge, 4 slider; 0 none)");
    if (!(o.joint_hertz > 0.0f && o.joint_hertz <= 1e4f)) bad("joint_hertz", std::to_string(o.joint_hertz), "(0, 1e4]");
    if (!(o.joint_damping_ratio >= 0.0f && o.joint_damping_ratio <= 1e3f))
        bad("joint_damping_ratio", std::to_string(o.joint_damping_ratio), "0..1e3");
    if (uint32_t(o.friction_rule) > 3) bad("friction_rule", std::to_string(uint32_t(o.friction_rule)), "a Combine");
    if (uint32_t(o.friction_cone) > 1)
        bad("friction_cone", std::to_string(uint32_t(o.friction_cone)), "0 (kCircle) or 1 (kPyramid)");
    if (!(o.sleep_speed >= 0.0f && o.sleep_speed <= 100.0f))
        bad("sleep_speed", std::to_string(o.sleep_speed), "0..100 m/s (0: no sleeping)");
    if (!(o.sleep_time >= 0.0f && o.sleep_time <= 1e4f)) bad("sleep_time", std::to_string(o.sleep_time), "0..1e4 s");
    if (o.on_chip > 3) bad("on_chip", std::to_string(o.on_chip), "0..3 (0: nothing in shared memory)");
    if (uint32_t(o.restitution_rule) > 3)
        bad("restitution_rule", std::to_string(uint32_t(o.restitution_rule)), "a Combine");

    Params p{};
    p.dt = o.dt;
    p.substeps = o.substeps;
    p.gravity = o.gravity;
    p.friction_rule = o.friction_rule;
    p.restitution_rule = o.restitution_rule;
    p.bounce_speed = o.bounce_speed;
    p.margin = o.margin;
    p.match_distance = o.match_distance;
    p.contact_hertz = o.contact_hertz;
    p.damping_ratio = o.damping_ratio;
    p.push_speed = o.push_speed;
    p.relax_iterations = o.relax_iterations;
    p.joint_hertz = o.joint_hertz;
    p.joint_damping_ratio = o.joint_damping_ratio;
    p.friction_cone = o.friction_cone;
    p.sleep_speed = o.sleep_speed;
    p.joint_kinds = o.joint_kinds;
    // Whole steps, at least one: a body still for sleep_time sleeps at the end of the step that reaches it.
    p.sleep_steps = std::max(1u, uint32_t(std::ceil(double(o.sleep_time) / double(o.dt) - 1e-6)));
    spec.asset<Settings>(&p, 1);
    // The GPU's kernels compile only the declared kinds' rows (body.hpp).
    spec.device_define("ORRERY_PHYS_JOINT_KINDS", std::to_string(o.joint_kinds) + "u");
    // And its combine rules and friction cone as constants (solver.hpp, pass_friction_rule).
    spec.device_define("ORRERY_PHYS_FRICTION_RULE", std::to_string(uint32_t(o.friction_rule)) + "u");
    spec.device_define("ORRERY_PHYS_RESTITUTION_RULE", std::to_string(uint32_t(o.restitution_rule)) + "u");
    spec.device_define("ORRERY_PHYS_FRICTION_CONE", std::to_string(uint32_t(o.friction_cone)) + "u");
    // And Contacts' capacity, the distance between a field's columns (solver.hpp, PointRun).
    spec.device_define("ORRERY_PHYS_CONTACT_CAPACITY", std::to_string(o.max_contacts) + "u");
    // And whether simulate's teams align in their block (solver.hpp, align_teams).
    spec.device_define("ORRERY_PHYS_ALIGN", o.align ? "1" : "0");
    HullTable hulls = build_hulls(o.hulls, "env '" + spec.name() + "': physics option hulls");
    spec.asset<Hulls>(hulls.info);
    spec.asset<HullPoints>(hulls.points);
    spec.asset<HullFaces>(hulls.faces);
    spec.asset<HullIndices>(hulls.indices);
    spec.capacity<Bodies>(o.max_bodies, kDeviceSolverBodyBytes); // room for the GPU's odd stride (body.hpp)
    spec.capacity<Contacts>(o.max_contacts);
    spec.capacity<ContactCache>(o.max_contacts);
    spec.capacity<Joints>(o.max_joints);
    spec.capacity<WeldSteps>(o.max_joints);
    spec.capacity<Separations>(o.max_contacts);
    // A kept pair mostly holds a point or more; twice the points leaves room for near misses.
    const uint32_t pairs = o.max_pairs ? o.max_pairs : 2 * o.max_contacts;
    spec.capacity<Pairs>(pairs);
    spec.capacity<Manifolds>(pairs);
    spec.capacity<SolveOrder>(pairs + o.max_joints); // every joint and pair: never short
    spec.archetype<PhysicsWorld>(1, /*singleton=*/true);
    spec.add_world_check(validate_world); // snapshots and checkpoints: every body and joint checked
    PhysicsNodes nodes;
    nodes.init = spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(phys::init_world));
    nodes.simulate = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD_TEAM(phys::simulate));
    // Rebuilt by simulate before it reads them: a slot per running team, not a copy per world.
    spec.scratch<Bodies, Contacts, Pairs, Manifolds, SolveOrder, Colouring, WeldSteps, Separations>(nodes.simulate);
    // The constraint passes read and write these for every substep: on chip,
    // a team's copy waits on no cache (the manifolds are read once).
    if (o.on_chip >= 1) spec.scratch_shared<Bodies>(nodes.simulate);
    if (o.on_chip >= 2) spec.scratch_shared<Contacts>(nodes.simulate);
    if (o.on_chip >= 3) spec.scratch_shared<Pairs, SolveOrder, Colouring>(nodes.simulate);
    // A GPU block's teams align before every pass: simulate leaves a cost hint
    // (step_cost), and the GPU gives a block worlds of like cost.
    spec.order_teams(nodes.simulate);
    spec.info()["physics"] = "soft step dt=" + std::to_string(o.dt) + " substeps=" + std::to_string(o.substeps);
    return nodes;
}

} // namespace phys
