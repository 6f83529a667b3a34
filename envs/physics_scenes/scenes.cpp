// physics_scenes' registration table: the scene options, the physics module
// composed with one call, a one-agent RL interface (push body 1; observe every
// body) and the exported poses, velocities and forces.

#include "envs/physics_scenes/scenes.hpp"

#include "envs/options.hpp"
#include "physics/module.hpp"
#include "physics/draw.hpp"

namespace physics_scenes {

orrery::EnvSpec make_spec(const orrery::EnvOptions& options) {
    orrery::OptionReader opt("physics_scenes", options);
    static const char* kNames[kNumScenes] = {"sphere_drop", "box_slide", "box_rest", "stack", "bounce", "incline",
                                             "mixed",       "crowd",     "drive",    "push",  "grab",   "ramp"};
    std::string scene = opt.str("scene", "mixed");
    Config cfg{};
    cfg.scene = kNumScenes;
    for (uint32_t i = 0; i < kNumScenes; ++i)
        if (scene == kNames[i]) cfg.scene = i;
    if (cfg.scene == kNumScenes)
        throw orrery::Error(
            "env 'physics_scenes': scene='" + scene +
            "' is unknown; expected sphere_drop, box_slide, box_rest, stack, bounce, incline, mixed, crowd, drive, "
            "push, grab or ramp");
    cfg.horizon = opt.u32("horizon", 500, 1, 1u << 30);
    const bool openai = cfg.scene == kDrive || cfg.scene == kPush || cfg.scene == kGrab;
    cfg.friction = opt.f32("friction", openai ? 0.2f : 0.5f, 0.0f, 10.0f); // the floor's (OpenAI's: 0.2)
    cfg.restitution = opt.f32("restitution", cfg.scene == kBounce ? 0.8f : 0.0f, 0.0f, 1.0f);
    cfg.speed = opt.f32("speed", 2.0f, -100.0f, 100.0f);
    cfg.height = opt.f32("height", cfg.scene == kRamp ? 0.0f : 1.0f, cfg.scene == kRamp ? 0.0f : 0.1f, 100.0f);
    cfg.angle = opt.f32("angle", 0.3f, 0.0f, 1.5f);
    cfg.freeze_at = opt.u32("freeze_at", 0, 0, 1u << 30);
    cfg.thaw_at = opt.u32("thaw_at", 0, 0, 1u << 30);
    cfg.count = opt.u32("count", 30, 1, kMaxCrowd);
    cfg.push_force = opt.f32("push_force", 5.0f, 0.0f, 1000.0f);
    cfg.grab_at = opt.u32("grab_at", 1, 0, 1u << 30);
    cfg.release_at = opt.u32("release_at", 0, 0, 1u << 30);
    cfg.holders = opt.u32("holders", 1, 1, 2);
    cfg.ramps = opt.u32("ramps", 0, 0, 2);
    cfg.ramp = opt.f32("ramp", 1.0f, 0.3f, 10.0f);
    cfg.rays = opt.u32("rays", 0, 0, 256);
    cfg.lidar_range = opt.f32("lidar_range", 6.0f, 0.01f, 1000.0f);
    cfg.kicks = opt.u32("kicks", 0, 0, 64);
    cfg.kick_speed = opt.f32("kick_speed", 2.0f, 0.0f, 100.0f);
    phys::PhysicsOptions po;
    po.dt = opt.f32("dt", 0.01f, 1e-4f, 0.1f);
    po.substeps = opt.u32("substeps", 4, 1, 64);
    po.relax_iterations = opt.u32("relax", 1, 0, 16);
    po.contact_hertz = opt.f32("contact_hertz", 60.0f, 1.0f, 1000.0f);
    po.max_contacts = opt.u32("max_contacts", 256, 1, 65536);
    po.max_joints = opt.u32("max_joints", 16, 1, 4096);
    // Only the grab scene makes joints (welds); the others' GPU kernels hold no joint code.
    po.joint_kinds = cfg.scene == kGrab ? phys::joint_kind_bit(phys::JointKind::kWeld) : 0u;
    po.on_chip = opt.u32("on_chip", po.on_chip, 0, 3); // GPU: what the physics keeps in shared memory
    opt.unrecorded("on_chip");                         // the same results at every level
    // GPU: simulate's teams align in their block (PhysicsOptions::align) in
    // every scene. Unaligned, the crowd stepped 2.0 % faster at 65,536
    // worlds but 6.3 % slower at 262,144, its best batch (an H100;
    // docs/benchmarks.md, "Programmatic launch for every kernel ...").
    po.align = opt.flag("align", true);
    opt.unrecorded("align");                                                  // the same results either way
    po.gravity = {0.0f, 0.0f, opt.f32("gravity", -9.81f, -1000.0f, 1000.0f)}; // OpenAI's hide-and-seek: -50
    po.max_bodies = kMaxBodies;
    po.hulls = {phys::wedge_vertices(0.5f, 0.5f, 0.5f), phys::wedge_vertices(cfg.ramp, cfg.ramp, cfg.ramp)};
    opt.finish();

    orrery::EnvSpec spec = ORRERY_ENV_SPEC("physics_scenes", "envs/physics_scenes/scenes.hpp");
    spec.config(cfg);
    spec.archetype<Body>(kMaxBodies);
    spec.archetype<Agent>(1); // not a singleton: its tensors keep their agent axis, [worlds, 1, ...]
    spec.dims<Obs>({13 * kMaxBodies});
    spec.info()["scene"] = scene;
    // A world's team is a whole warp, as in hide-and-seek: the crowd scene on
    // the H200 steps 1.694 M / 1.980 M / 2.014 M env-steps/s at 1,024 / 16,384 /
    // 65,536 worlds with 32 lanes against 1.078 M / 1.597 M / 1.528 M with 16
    // (docs/benchmarks.md; the smaller scenes were not measured).
    spec.world_lanes = 32;
    // One kernel per node, as hide-and-seek: only there does the physics
    // step's team keep its bodies in shared memory (PhysicsOptions::on_chip)
    // and align with the block's other teams. The crowd on the H200, 1,024 /
    // 16,384 / 65,536 worlds: 2.407 M / 3.054 M / 3.125 M env-steps/s per node
    // against 1.704 M / 1.985 M / 2.015 M in the megakernel (docs/benchmarks.md,
    // "Physics scratch on chip").
    spec.prefer_per_node = true;
    // Blocks of 12 aligned teams (the physics step's 166 registers a thread
    // let 12 warps on an SM), as gpu_hideseek: the crowd 3.829 M / 4.101 M
    // env-steps/s at 16,384 / 65,536 worlds against 3.606 M / 3.734 M with
    // 256 threads and 2.611 M / 2.771 M with 512 (docs/perf-notes.md rows 50
    // and 53).
    spec.team_block_threads = 384;
    spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn));
    if (cfg.rays > 0) spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(add_scanners));
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(push));
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(switch_kinds));
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(grab));
    if (cfg.kicks > 0) spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(kick));
    phys::PhysicsNodes nodes = phys::add_to(spec, po);
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(release), {nodes.simulate});
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(keep_time), {nodes.simulate});

    spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD(observe));
    spec.dims<Lidar>({cfg.rays > 0 ? cfg.rays : 1u}); // a column only where Scanner is registered
    if (cfg.rays > 0) {
        spec.archetype<Scanner>(kMaxScanners);
        spec.info()["lidar"] = std::to_string(cfg.rays) + " rays, range " + std::to_string(cfg.lidar_range);
        spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(scan));
    }

    // Body 1 is pushed along a world axis, or not at all (push()).
    spec.facts.action_meanings = {"none", "push_x_pos", "push_x_neg", "push_y_pos", "push_y_neg"};

    // The 3-D view: every body, coloured by what it is (the floor sand, static bodies grey).
    orrery::draw_physics_bodies<Body>(spec.draw)
        .color_by(orrery::field(&phys::Shape::kind), {{int32_t(phys::ShapeKind::kPlane), {215, 210, 195, 255}}})
        .color_by(orrery::field(&phys::BodyType::kind), {{int32_t(phys::BodyKind::kStatic), {150, 150, 160, 255}},
                                                         {int32_t(phys::BodyKind::kKinematic), {170, 120, 200, 255}}})
        .color_by(orrery::field(&phys::Shape::kind), {{int32_t(phys::ShapeKind::kSphere), {70, 130, 230, 255}},
                                                      {int32_t(phys::ShapeKind::kCapsule), {90, 190, 110, 255}},
                                                      {int32_t(phys::ShapeKind::kBox), {230, 150, 60, 255}},
                                                      {int32_t(phys::ShapeKind::kHull), {200, 90, 80, 255}}});
    // What the camera frames: the crowd's walled room, or a couple of metres around the origin.
    float half = cfg.scene == kCrowd ? 3.3f : cfg.scene == kMixed ? 2.0f : 1.0f;
    spec.draw.bounds = {-half, -half, half, half};
    spec.draw.background = {150, 175, 205, 255};
    if (cfg.rays > 0) // each agent's lidar: rays to their hits (yellow, a cross at the hit) or out of range (grey)
        spec.draw.overlay(
            "lidar",
            [n = cfg.rays](const orrery::Ctx& ctx, std::vector<orrery::Segment>& out) {
                uint32_t agent = 0;
                const float range = ctx.config<Config>().lidar_range;
                ctx.each<Body>([&](orrery::Entity e) {
                    if (agent >= kMaxScanners || !is_agent(ctx, e)) return;
                    orrery::Array<Lidar> lidar = ctx.array_at<Lidar>(orrery::archetype_id<Scanner>, agent++);
                    const Vec3 o = ctx.get<phys::Pose>(e)->p;
                    for (uint32_t k = 0; k < n && k < lidar.size; ++k) {
                        const phys::Ray ray = phys::lidar_ray(o, k, n, range);
                        const Vec3 hit = o + ray.dir * lidar[k];
                        const bool hits = lidar[k] < range;
                        out.push_back({{o.x, o.y, o.z},
                                       {hit.x, hit.y, hit.z},
                                       hits ? orrery::Rgba{255, 220, 80, 255} : orrery::Rgba{120, 120, 130, 255}});
                        if (!hits) continue;
                        const float c = 0.04f;
                        out.push_back({{hit.x, hit.y, hit.z - c}, {hit.x, hit.y, hit.z + c}, {255, 120, 40, 255}});
                        out.push_back({{hit.x - c * ray.dir.y, hit.y + c * ray.dir.x, hit.z},
                                       {hit.x + c * ray.dir.y, hit.y - c * ray.dir.x, hit.z},
                                       {255, 120, 40, 255}});
                    }
                });
            },
            true);

    spec.export_input<Agent, Action>("action");
    spec.input_range("action", 0, 4);
    spec.export_output<Agent, Obs>("obs", orrery::Output::kRewrittenEachStep);
    spec.export_output<Agent, Reward>("reward");
    spec.export_input<Body, phys::Force>("force");
    spec.export_output<Body, phys::Pose>("pose");
    spec.export_output<Body, phys::Velocity>("velocity");
    if (cfg.rays > 0) spec.export_output<Scanner, Lidar>("lidar", orrery::Output::kRewrittenEachStep);
    return spec;
}

} // namespace physics_scenes
