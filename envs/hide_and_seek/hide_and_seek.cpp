// Hide-and-seek's registration table: options (OpenAI's defaults), the
// observation layout, the physics module composed with OpenAI's time step and
// gravity, the task graph and the exported tensors.

#include "envs/hide_and_seek/hide_and_seek.hpp"

#include <string>

#include "envs/hide_and_seek/validate.hpp"
#include "envs/options.hpp"
#include "physics/module.hpp"
#include "physics/draw.hpp"

namespace hide_and_seek {
namespace {

/// The flat observation's entry names, in Config's layout.
std::vector<std::string> obs_names(const Config& c) {
    std::vector<std::string> n;
    const char* motion[] = {"x", "y", "z", "yaw", "vx", "vy", "vz", "turn_rate", "is_hider", "prep"};
    const char* object[] = {"x",         "y",      "z",      "cos_yaw", "sin_yaw",    "vx",          "vy",    "vz",
                            "turn_rate", "size_x", "size_y", "size_z",  "you_locked", "team_locked", "locked"};
    for (const char* m : motion) n.push_back(std::string("self_") + m);
    for (uint32_t a = 0; a + 1 < c.agents; ++a)
        for (const char* m : motion) n.push_back("agent" + std::to_string(a) + "_" + m);
    for (uint32_t b = 0; b < c.max_boxes; ++b)
        for (const char* m : object) n.push_back("box" + std::to_string(b) + "_" + m);
    for (uint32_t r = 0; r < c.ramps; ++r)
        for (const char* m : object) n.push_back("ramp" + std::to_string(r) + "_" + m);
    for (uint32_t r = 0; r < kLidarRays; ++r) n.push_back("lidar" + std::to_string(r));
    for (uint32_t a = 0; a + 1 < c.agents; ++a) n.push_back("sees_agent" + std::to_string(a));
    for (uint32_t b = 0; b < c.max_boxes; ++b) n.push_back("sees_box" + std::to_string(b));
    for (uint32_t r = 0; r < c.ramps; ++r) n.push_back("sees_ramp" + std::to_string(r));
    return n;
}

/// gpu_hideseek's observation row (gpu_hideseek.hpp's observe_gpu), named as its tensors' parts.
std::vector<std::string> gpu_obs_names(const Config& c) {
    std::vector<std::string> n;
    const char* agent[] = {"x", "y", "vx", "vy"};
    const char* box[] = {"x", "y", "vx", "vy", "size_x", "size_y", "yaw"};
    const char* ramp[] = {"x", "y", "vx", "vy", "yaw"};
    for (uint32_t a = 0; a < kGpuAgentSlots; ++a)
        for (const char* m : agent) n.push_back("agent" + std::to_string(a) + "_" + m);
    for (uint32_t b = 0; b < kGpuBoxSlots; ++b)
        for (const char* m : box) n.push_back("box" + std::to_string(b) + "_" + m);
    for (uint32_t r = 0; r < c.ramps; ++r)
        for (const char* m : ramp) n.push_back("ramp" + std::to_string(r) + "_" + m);
    for (uint32_t r = 0; r < kLidarRays; ++r) n.push_back("lidar" + std::to_string(r));
    for (uint32_t a = 0; a < kGpuAgentSlots; ++a) n.push_back("sees_agent" + std::to_string(a));
    for (uint32_t b = 0; b < kGpuBoxSlots; ++b) n.push_back("sees_box" + std::to_string(b));
    for (uint32_t r = 0; r < c.ramps; ++r) n.push_back("sees_ramp" + std::to_string(r));
    n.push_back("prep_counter");
    n.push_back("agent_type");
    return n;
}

/// A team's size: `name` fixes it, or min_<name> and max_<name> give the range
/// drawn per world (`fallback` when neither is given).
void team_size(orrery::OptionReader& opt, const std::string& name, uint32_t fallback, uint32_t& lo, uint32_t& hi) {
    uint32_t fixed = opt.u32(name, 0, 0, 3);
    lo = opt.u32("min_" + name, fixed ? fixed : fallback, 1, 3);
    hi = opt.u32("max_" + name, fixed ? fixed : fallback, 1, 3);
    if (fixed && (lo != fixed || hi != fixed))
        throw orrery::Error("hide_and_seek: " + name + "=" + std::to_string(fixed) + " conflicts with min_" + name +
                            "/max_" + name + "; give one or the other");
    if (lo > hi)
        throw orrery::Error("hide_and_seek: min_" + name + "=" + std::to_string(lo) + " exceeds max_" + name + "=" +
                            std::to_string(hi) + "; expected min_" + name + " <= max_" + name);
}

} // namespace

void add_game_overlays(orrery::DrawSpec& draw); // envs/hide_and_seek/draw.cpp: vision, lidar, holds, preparation, keys

orrery::EnvSpec make_spec(const orrery::EnvOptions& options) {
    orrery::OptionReader opt("hide_and_seek", options);
    Config cfg{};
    std::string variant = opt.str("variant", "openai");
    if (variant != "openai" && variant != "gpu_hideseek")
        throw orrery::Error("hide_and_seek: variant=" + variant + " is unknown; expected openai or gpu_hideseek");
    // gpu_hideseek (Madrona's): its own arena and level generation, so no game,
    // max_rooms or outer_wall_prob; 3 v 2, 3-8 boxes, 95 preparation steps.
    bool gpu = variant == "gpu_hideseek";
    cfg.gpu = gpu ? 1u : 0u;
    std::string game = gpu ? "full" : opt.str("game", "full");
    if (game != "full" && game != "quadrant")
        throw orrery::Error("hide_and_seek: game=" + game + " is unknown; expected full or quadrant");
    // The quadrant game (OpenAI's hide_and_seek_quadrant): 2 v 2, two cubes in a
    // corner room, one ramp that cannot be locked, 80 steps (32 of preparation).
    bool quad = game == "quadrant";
    cfg.quadrant = quad ? 1u : 0u;
    team_size(opt, "hiders", gpu ? 3 : 2, cfg.min_hiders, cfg.max_hiders);
    team_size(opt, "seekers", 2, cfg.min_seekers, cfg.max_seekers);
    cfg.min_boxes = opt.u32("min_boxes", quad ? 2 : 3, 0, 9);
    cfg.max_boxes = opt.u32("max_boxes", quad ? 2 : gpu ? 8 : 9, 0, 9);
    if (cfg.min_boxes > cfg.max_boxes)
        throw orrery::Error("hide_and_seek: min_boxes=" + std::to_string(cfg.min_boxes) + " exceeds max_boxes=" +
                            std::to_string(cfg.max_boxes) + "; expected min_boxes <= max_boxes");
    cfg.elongated = opt.flag("elongated", !quad) ? 1u : 0u;
    cfg.ramps = opt.u32("ramps", quad ? 1 : 2, 0, 4);
    cfg.lock_ramps = opt.flag("lock_ramps", !quad) ? 1u : 0u;
    cfg.max_rooms = gpu ? 7 : opt.u32("max_rooms", 4, 1, 4); // gpu_hideseek: 1 + up to 6 connects
    cfg.horizon = opt.u32("horizon", quad ? 80 : 240, 1, 1u << 20);
    cfg.prep_steps = opt.u32("prep_steps", quad ? 32 : gpu ? 95 : 96, 1, 1u << 20);
    cfg.walls_block_rays = opt.flag("walls_block_rays", true) ? 1u : 0u;
    cfg.outer_wall_prob = gpu ? 1.0f : opt.f32("outer_wall_prob", quad ? 1.0f : 0.5f, 0.0f, 1.0f);
    cfg.agents = cfg.max_hiders + cfg.max_seekers;
    if (gpu) { // gpu_hideseek.hpp's observe_gpu: fixed slots, as its tensors
        cfg.off_agents = 0;
        cfg.off_boxes = kGpuPerAgent * kGpuAgentSlots;
        cfg.off_ramps = cfg.off_boxes + kGpuPerBox * kGpuBoxSlots;
        cfg.off_lidar = cfg.off_ramps + kGpuPerRamp * cfg.ramps;
        cfg.off_aa = cfg.off_lidar + kLidarRays;
        cfg.off_ab = cfg.off_aa + kGpuAgentSlots;
        cfg.off_ar = cfg.off_ab + kGpuBoxSlots;
        cfg.obs_size = cfg.off_ar + cfg.ramps + 2; // and the preparation counter, the agent type
    } else {
        cfg.off_agents = kSelf;
        cfg.off_boxes = cfg.off_agents + kPerAgent * (cfg.agents - 1);
        cfg.off_ramps = cfg.off_boxes + kPerObject * cfg.max_boxes;
        cfg.off_lidar = cfg.off_ramps + kPerObject * cfg.ramps;
        cfg.off_aa = cfg.off_lidar + kLidarRays;
        cfg.off_ab = cfg.off_aa + cfg.agents - 1;
        cfg.off_ar = cfg.off_ab + cfg.max_boxes;
        cfg.obs_size = cfg.off_ar + cfg.ramps;
    }

    // OpenAI: 15 MuJoCo substeps of 5 ms, gravity -50, MuJoCo's default
    // (pyramidal) friction cone. Orrery's default takes 8 substeps of 9.4 ms:
    // the fewest that keep every quantity validated against MuJoCo within its
    // tolerance (README, "Against MuJoCo": 6 leave the roll along a wall 1.9 %
    // off the rigid answer, 5 the wall's y_3, 4 the climb).
    // gpu_hideseek: 4
    // substeps of 1/120 s, gravity -9.8, a pair's friction the mean of its two.
    phys::PhysicsOptions po;
    po.dt = gpu ? 1.0f / 30.0f : 0.075f;
    po.substeps = opt.u32("substeps", gpu ? 4 : 8, 1, 64);
    po.gravity = {0.0f, 0.0f, gpu ? -9.8f : -50.0f};
    if (gpu) po.friction_rule = phys::Combine::kMean;
    if (!gpu) po.friction_cone = phys::FrictionCone::kPyramid;
    if (gpu) po.contact_hertz = 30.0f; // the module's bound for 120 substeps a second: a quarter of it
    uint32_t walls = gpu ? kGpuMaxWalls + 1 : kMaxWalls;
    po.max_bodies = cfg.agents + cfg.max_boxes + cfg.ramps + walls;
    // Contact points per world per step; a full list records kBufferOverflow for
    // the world. Peaks of random play (docs/benchmarks.md): 98 points, 109 pairs
    // (default variant, 512 worlds x 1,200 steps); 76 and 76 (gpu_hideseek, 384 x
    // 1,200). Pairs get twice this (the module's default).
    po.max_contacts = opt.u32("max_contacts", 128, 16, 4096);
    // Boxes and ramps at rest sleep (phys::Sleep; README, "Sleeping"): with
    // random actions about two thirds of them are dynamic and still at any
    // step. sleep=0 keeps every body in the solver.
    po.sleep_speed = opt.flag("sleep", true) ? po.sleep_speed : 0.0f;
    po.max_joints = cfg.agents;                                    // one weld per agent at most
    po.joint_kinds = phys::joint_kind_bit(phys::JointKind::kWeld); // the GPU's kernels hold no hinge or slider rows
    // GPU: what the physics step asks to keep in a block's shared memory, a
    // copy per team (PhysicsOptions::on_chip; the module's default, 3, all but
    // the manifolds, as far as they fit). Measured on an H200
    // (docs/benchmarks.md, "Physics scratch on chip"): in blocks of 8 teams
    // OpenAI's game kept all of it (24.3 KB a team), fastest, and
    // gpu_hideseek the bodies and points (26.4 KB of its 31.8 KB); in the
    // blocks of 16 and 12 teams they run in now (team_block_threads) only the
    // bodies fit, and keeping the pairs and colour order beside them was 6 %
    // slower ("More aligned teams a block").
    po.on_chip = opt.u32("on_chip", po.on_chip, 0, 3);
    opt.unrecorded("on_chip"); // the same results at every level
    // GPU: simulate's teams align in their block (PhysicsOptions::align):
    // without, OpenAI's game stepped 19 % slower at 1,024 worlds and 38 % at
    // 65,536, gpu_hideseek 6 and 16 % (an H100; docs/benchmarks.md, "Team
    // nodes at launch ...").
    po.align = opt.flag("align", true);
    opt.unrecorded("align"); // the same results either way
    // kRampHull: OpenAI's 45 degree ramp, or gpu_hideseek's 2 wide, 3 long, 2 high (33.7 degrees)
    po.hulls = {gpu ? phys::wedge_vertices(2.0f, 3.0f, 2.0f) : phys::wedge_vertices(0.5f, 0.5f, 0.5f)};
    opt.finish();

    orrery::EnvSpec spec = ORRERY_ENV_SPEC("hide_and_seek", "envs/hide_and_seek/hide_and_seek.hpp");
    spec.config(cfg);
    opt.record(spec);
    spec.archetype<Agent>(cfg.agents);
    spec.archetype<Object>(cfg.max_boxes + cfg.ramps);
    spec.archetype<Wall>(walls);
    spec.archetype<Arena>(1, /*singleton=*/true);
    spec.dims<Obs>({cfg.obs_size});
    spec.capacity<Scene>(cfg.agents + cfg.max_boxes + cfg.ramps + walls);
    spec.info()["variant"] = variant;
    spec.info()["game"] = game;
    spec.validate_world = hide_and_seek::validate_world; // after the physics module's check (add_to)
    // On the H200 both variants step faster one kernel per node than in the
    // megakernel (the megakernel stalls on instruction fetch), their kernels
    // compile in parallel (docs/perf-notes.md, cold start), and only the
    // per-node form aligns the physics step's teams in a block (Lanes::align).
    // gpu_hideseek at 1,024 / 16,384 / 65,536 worlds, env-steps/s: 1.178 M /
    // 2.222 M / 2.335 M per node against 1.240 M / 1.446 M / 1.460 M
    // (a08cde6, docs/benchmarks.md; the default game: 496 k / 839 k against
    // 436 k / 636 k at 1,024 / 16,384 worlds before the teams were aligned).
    spec.prefer_per_node = true;
    // A world's team is a whole warp: since the physics keeps its step
    // buffers in step scratch, two 16-lane teams sharing a warp run apart for
    // most of the solver, and teams of 32 step faster in both variants (H200,
    // 1,024 / 16,384 / 65,536 worlds, env-steps/s: OpenAI's game per node
    // 822 k / 1.246 M / 1.280 M against 606 k / 993 k / 1.027 M with 16;
    // gpu_hideseek 1.197 M / 1.395 M / 1.405 M against 799 k / 1.326 M /
    // 1.391 M; docs/benchmarks.md).
    spec.world_lanes = 32;
    // More of a block's teams align (Lanes::align) and share each
    // instruction fetch: gpu_hideseek in blocks of 12 teams (its physics step
    // takes 166 registers a thread, and 12 warps fit an SM), OpenAI's game in
    // blocks of 16, the kernels compiled to fit (128 registers). H200, 16,384
    // / 65,536 worlds, env-steps/s: OpenAI's game 2.406 M / 2.547 M with 384
    // threads, 2.589 M / 2.717 M with 512, 2.075 M / 2.170 M with 256;
    // gpu_hideseek 3.017 M / 3.236 M with 384, 2.587 M / 2.727 M with 512,
    // 2.743 M / 2.892 M with 256 (docs/perf-notes.md rows 50 and 53).
    spec.team_block_threads = gpu ? 384 : 512;
    // Past one wave the serial nodes (move, grab, the engine's begin and
    // end) run 32 worlds a warp: H100, 65,536 / 262,144 worlds, env-steps/s:
    // OpenAI's game 4.353 M / 4.453 M against 4.246 M / 4.344 M a world a
    // warp, gpu_hideseek 4.730 M / 4.844 M against 4.415 M / 4.485 M
    // (docs/perf-notes.md row 121).
    spec.pack_serial = true;

    // The variants differ in these nodes; vision, rewards and the ray scene are shared.
    if (gpu) {
        spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn_gpu));
        spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(move_gpu));
        spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD_LANES(gather_scene)); // the forward rays of grab and lock
        spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD_TEAM(toggle_gpu)); // forward rays a lane each, then the toggles
    } else {
        spec.add(orrery::Phase::kInit, ORRERY_PER_WORLD(spawn));
        spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(move_agents));
        spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD_TEAM(lock_and_grab)); // lock an object a lane, then grab
    }
    phys::PhysicsNodes nodes = phys::add_to(spec, po);
    orrery::NodeId after = nodes.simulate;
    if (gpu) after = spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD(stop_agents), {nodes.simulate});
    spec.add(orrery::Phase::kStep, ORRERY_PER_WORLD_TEAM(gather_and_reward), {after});
    spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(regather_scene));
    // Every agent's rays spread over the world's lanes (observe_lanes). On
    // the GPU its kernel keeps at most 64 registers (both variants take 71
    // unbounded, with no spill added under 64): an SM holds 4 blocks of 256
    // where 3, so at 1,024 worlds a world's rays get 128 lanes where 64. On
    // an H100 the kernel took 20 % less time and the step 1.5 % (OpenAI's
    // game) and 2.6 % (gpu_hideseek) less; 262,144 worlds within 0.4 %
    // (docs/benchmarks.md, "The wide lane kernels at 64 registers ...").
    const orrery::NodeId observe_node = gpu ? spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(observe_gpu))
                                            : spec.add(orrery::Phase::kObserve, ORRERY_PER_WORLD_LANES(observe));
    spec.bound_registers(observe_node, 64);

    // Hiders and seekers are paid as teams, but each row is its own team's
    // sign, so rewards are per agent (as OpenAI returns them).
    spec.facts.reward = orrery::RewardMode::kPerAgent;
    spec.facts.obs_names = gpu ? gpu_obs_names(cfg) : obs_names(cfg);

    // The 3-D view: hiders blue, seekers red, boxes orange (grey when locked),
    // ramps green, walls grey on a sand floor; then the game's overlays.
    using orrery::Rgba;
    orrery::draw_physics_bodies<Agent>(spec.draw).color_by(
        orrery::field(&Team::value), {{kHider, Rgba{70, 130, 230, 255}}, {kSeeker, Rgba{220, 70, 60, 255}}});
    orrery::draw_physics_bodies<Object>(spec.draw, {230, 150, 60, 255})
        .color_by(orrery::field(&Piece::kind), {{kRamp, Rgba{90, 190, 110, 255}}})
        .color_by(orrery::field(&Piece::locked), {{1, Rgba{150, 150, 160, 255}}});
    orrery::draw_physics_bodies<Wall>(spec.draw, {185, 185, 190, 255})
        .color_by(orrery::field(&phys::Shape::kind), {{int32_t(phys::ShapeKind::kPlane), Rgba{215, 210, 195, 255}}});
    float lo = gpu ? -kGpuHalf - 0.5f : -0.3f, hi = gpu ? kGpuHalf + 0.5f : 6.3f;
    spec.draw.bounds = {lo, lo, hi, hi};
    spec.draw.background = {150, 175, 205, 255};
    add_game_overlays(spec.draw);

    spec.export_input<Agent, Action>("action");
    spec.input_range("action", 0, 10);
    // The default variant's grab and lock read last step's visibility masks from
    // it (kept); observe_gpu writes every entry of every row (rewritten).
    spec.export_output<Agent, Obs>("obs", gpu ? orrery::Output::kRewrittenEachStep : orrery::Output::kKept);
    spec.export_output<Agent, Reward>("reward");
    spec.export_output<Agent, Team>("team");
    spec.export_output<Agent, phys::Pose>("agent_pose");
    spec.export_output<Object, phys::Pose>("object_pose");
    spec.export_output<Object, Piece>("object_state");
    spec.export_output<Arena, Round>("round");
    return spec;
}

} // namespace hide_and_seek
