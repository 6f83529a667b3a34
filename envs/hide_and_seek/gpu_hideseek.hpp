#pragma once
// The gpu_hideseek variant (Madrona's hide-and-seek, variant="gpu_hideseek"):
// its level generation (connect and add-door operations on a 36 x 36 arena),
// spawn by rejection of rotated footprints, box agents pushed in their own
// frame with no momentum, grab and lock as toggles on a forward ray, and its
// observation row. The rest (vision, rewards, the ray scene) is the default
// variant's code with Config::gpu flags. Included at the end of hide_and_seek.hpp.

namespace hide_and_seek {

inline constexpr float kGpuHalf = 18.0f;                ///< the arena is [-18, 18]^2
inline constexpr uint32_t kGpuMaxWalls = 4 + 6 * 4 + 6; ///< outer, 4 per connect (<= 6), 1 per door (<= 6)
inline constexpr float kGpuWallThick = 0.4f, kGpuWallHeight = 2.5f;
inline constexpr float kGpuMove = 96.0f, kGpuTurn = 32.0f; ///< force (N) and torque (N m) per bin from the middle
inline constexpr float kGpuReach = 2.5f;                   ///< grab and lock ray length
inline constexpr uint32_t kGpuSpawnTries = 21;             ///< 20 rejections, then placed anyway
/// Observation slots: other agents, boxes (padded as gpu_hideseek's tensors) and entries per slot.
inline constexpr uint32_t kGpuAgentSlots = 5, kGpuBoxSlots = 9, kGpuPerAgent = 4, kGpuPerBox = 7, kGpuPerRamp = 5;

// ---------------------------------------------------------------- level

/// A wall of the plan on the unit square (scaled to the arena when built):
/// along x at y = c (hz) or along y at x = c, from a0 to a1.
struct GpuWall {
    float c, a0, a1;
    uint32_t hz;
};
struct GpuPlan {
    GpuWall w[kGpuMaxWalls];
    uint32_t n, connects;
};

/// Cuts a door `door` wide from wall k at 30-70 % of [a0 + door, a1 - door]:
/// the wall keeps the part before it, a new wall takes the part after.
ORRERY_HD inline void cut_door(Rng& rng, GpuPlan& p, uint32_t k, float door) {
    if (p.n >= kGpuMaxWalls) return; // never: kGpuMaxWalls counts every wall the operations can add
    GpuWall& w = p.w[k];
    float lo = w.a0 + door, hi = w.a1 - door;
    float at = lo + (0.3f + 0.4f * rng.uniform()) * (hi - lo);
    p.w[p.n++] = {w.c, at + 0.5f * door, w.a1, w.hz};
    p.w[k].a1 = at - 0.5f * door;
}

/// Whether parallel walls i and j can be joined: their spans overlap, both are
/// long enough (0.3 along x, 0.5 along y, gpu_hideseek's values), and no
/// parallel wall lies strictly between them over the overlap (widened by 0.1).
ORRERY_HD inline bool joinable(const GpuPlan& p, uint32_t i, uint32_t j) {
    const GpuWall &a = p.w[i], &b = p.w[j];
    float least = a.hz ? 0.3f : 0.5f;
    if (a.a0 >= b.a1 || a.a1 <= b.a0 || a.a1 - a.a0 < least || b.a1 - b.a0 < least) return false;
    float lo = phys::max_f(a.a0, b.a0) - 0.1f, hi = phys::min_f(a.a1, b.a1) + 0.1f;
    float c0 = phys::min_f(a.c, b.c), c1 = phys::max_f(a.c, b.c);
    for (uint32_t k = 0; k < p.n; ++k) {
        const GpuWall& w = p.w[k];
        if (k == j || w.hz != a.hz) continue;
        if (phys::max_f(w.a0, lo) < phys::min_f(w.a1, hi) && w.c > c0 && w.c < c1) return false;
    }
    return true;
}

/// "Connect": a wall across from parallel wall i to wall j at 40-60 % of their
/// overlap, splitting both there, with a 0.1 (3.6-unit) door.
ORRERY_HD inline void join(Rng& rng, GpuPlan& p, uint32_t i, uint32_t j) {
    if (p.n + 4 > kGpuMaxWalls) return;
    float lo = phys::max_f(p.w[i].a0, p.w[j].a0), hi = phys::min_f(p.w[i].a1, p.w[j].a1);
    float at = lo + (0.4f + 0.2f * rng.uniform()) * (hi - lo);
    uint32_t across = p.n++;
    p.w[across] = {at, phys::min_f(p.w[i].c, p.w[j].c), phys::max_f(p.w[i].c, p.w[j].c), 1u - p.w[i].hz};
    const uint32_t ends[2] = {i, j};
    for (uint32_t k : ends) {
        p.w[p.n++] = {p.w[k].c, at, p.w[k].a1, p.w[k].hz};
        p.w[k].a1 = at;
    }
    cut_door(rng, p, across, 0.1f);
    ++p.connects;
}

/// The k-th wall (in plan order) along x (hz = 1) or along y.
ORRERY_HD inline uint32_t kth_wall(const GpuPlan& p, uint32_t hz, uint32_t k) {
    for (uint32_t i = 0; i < p.n; ++i)
        if (p.w[i].hz == hz && k-- == 0) return i;
    return 0;
}

/// One connect: up to 6 draws of an orientation and a wall, each trying the
/// other parallel walls from a random one on; gives up after the sixth.
ORRERY_HD inline void connect(Rng& rng, GpuPlan& p) {
    for (uint32_t attempt = 0; attempt < 6; ++attempt) {
        uint32_t hz = rng.below(2), count = 0;
        for (uint32_t i = 0; i < p.n; ++i) count += p.w[i].hz == hz ? 1u : 0u;
        if (count < 2) continue;
        uint32_t pick = rng.below(count), start = rng.below(count - 1), i = kth_wall(p, hz, pick);
        for (uint32_t t = 0; t + 1 < count; ++t) {
            uint32_t j = kth_wall(p, hz, (pick + 1 + (start + t) % (count - 1)) % count);
            if (joinable(p, i, j)) return join(rng, p, i, j);
        }
    }
}

/// gpu_hideseek's level: the unit square's four walls, then 1-6 connects and
/// 4-6 add-doors in random order (each step draws among the kinds left); an
/// add-door opens 0.2 (7.2 units) in a random wall longer than 0.6, outer walls included.
ORRERY_HD inline void make_gpu_walls(Rng& rng, GpuPlan& p) {
    p.n = 4, p.connects = 0;
    p.w[0] = {0, 0, 1, 1}, p.w[1] = {0, 0, 1, 0}, p.w[2] = {1, 0, 1, 1}, p.w[3] = {1, 0, 1, 0};
    uint32_t left[2] = {1 + rng.below(6), 4 + rng.below(3)}; // connects, add-doors
    while (left[0] + left[1] > 0) {
        uint32_t op = left[0] && left[1] ? rng.below(2) : (left[0] ? 0u : 1u);
        --left[op];
        if (op == 0) {
            connect(rng, p);
        } else {
            uint32_t k = rng.below(p.n);
            if (p.w[k].a1 - p.w[k].a0 > 0.6f) cut_door(rng, p, k, 0.2f);
        }
    }
}

// ---------------------------------------------------------------- spawn

/// A footprint in the plane: centre and half extents of its axis-aligned bounds.
struct Foot {
    float x, y, hx, hy;
};
/// Where a body goes: its footprint and yaw.
struct GpuSpot {
    Foot f;
    float yaw;
};
struct GpuDraw {
    GpuPlan plan;
    uint32_t hiders, seekers, boxes, elongated;
    GpuSpot agents[6], objects[16];
};

/// Half extents of agents and each object kind (gpu_hideseek's hulls; the
/// ramp's wedge, 2 wide, 3 long and 2 high, is hull kRampHull).
ORRERY_HD inline Vec3 gpu_half(int32_t kind) {
    return kind == kElongated ? Vec3{4.0f, 0.75f, 1.0f} : kind == kRamp ? Vec3{1.0f, 1.5f, 1.0f} : Vec3{1, 1, 1};
}

/// Rejection sampling as gpu_hideseek: x, y uniform in the arena, yaw in
/// [0, pi), until the rotated bounds overlap none of the n placed; the 21st
/// draw is kept whatever it overlaps.
ORRERY_HD inline GpuSpot place_gpu(Rng& rng, Foot* placed, uint32_t& n, Vec3 half) {
    GpuSpot s{};
    for (uint32_t t = 0; t < kGpuSpawnTries; ++t) {
        float x = -kGpuHalf + 2.0f * kGpuHalf * rng.uniform(), y = -kGpuHalf + 2.0f * kGpuHalf * rng.uniform();
        s.yaw = 3.14159265f * rng.uniform();
        phys::SinCos r = phys::sin_cos(s.yaw);
        float c = phys::abs_of(r.c), sn = phys::abs_of(r.s);
        s.f = {x, y, c * half.x + sn * half.y, sn * half.x + c * half.y};
        bool free = true;
        for (uint32_t i = 0; i < n && free; ++i)
            free = phys::abs_of(s.f.x - placed[i].x) >= s.f.hx + placed[i].hx ||
                   phys::abs_of(s.f.y - placed[i].y) >= s.f.hy + placed[i].hy;
        if (free) break;
    }
    placed[n++] = s.f;
    return s;
}

/// World `ctx`'s draw: teams, walls, boxes (3 + floor(6u) by default, the
/// first 3 + floor(u (n - 3)) elongated) and where everything goes, in
/// gpu_hideseek's order: elongated boxes, cubes, ramps, hiders, seekers.
ORRERY_HD inline void draw_gpu(Ctx& ctx, const Config& cfg, GpuDraw& d) {
    Rng rng = ctx.rng(1);
    d.hiders = cfg.min_hiders + rng.below(cfg.max_hiders - cfg.min_hiders + 1);
    d.seekers = cfg.min_seekers + rng.below(cfg.max_seekers - cfg.min_seekers + 1);
    make_gpu_walls(rng, d.plan);
    d.boxes = cfg.min_boxes + rng.below(cfg.max_boxes - cfg.min_boxes + 1);
    uint32_t least = d.boxes < 3 ? d.boxes : 3;
    d.elongated = cfg.elongated ? least + (d.boxes > least ? rng.below(d.boxes - least) : 0u) : 0u;
    Foot placed[kGpuMaxWalls + 6 + 16];
    uint32_t n = 0;
    for (uint32_t k = 0; k < d.plan.n; ++k) {
        const GpuWall& w = d.plan.w[k];
        if (w.a1 <= w.a0) continue;
        float mid = kGpuHalf * (w.a0 + w.a1 - 1.0f), c = kGpuHalf * (2.0f * w.c - 1.0f);
        float half = kGpuHalf * (w.a1 - w.a0), thick = 0.5f * kGpuWallThick;
        placed[n++] = w.hz ? Foot{mid, c, half, thick} : Foot{c, mid, thick, half};
    }
    for (uint32_t b = 0; b < d.boxes; ++b)
        d.objects[b] = place_gpu(rng, placed, n, gpu_half(b < d.elongated ? kElongated : kCube));
    for (uint32_t r = 0; r < cfg.ramps; ++r) d.objects[cfg.max_boxes + r] = place_gpu(rng, placed, n, gpu_half(kRamp));
    for (uint32_t a = 0; a < d.hiders + d.seekers; ++a) d.agents[a] = place_gpu(rng, placed, n, gpu_half(kCube));
}

/// Sets a body's friction (static, dynamic) and frees or locks its turning.
ORRERY_HD inline void gpu_body(Ctx& ctx, Entity e, float mu_s, float mu_d, uint32_t locks) {
    *ctx.get<phys::Material>(e) = {mu_s, mu_d, 0.0f, 0.0f};
    ctx.get<phys::Locks>(e)->mask = locks;
    *ctx.get<phys::AxisDamping>(e) = {};
}

/// Init: the floor (friction 0.1), the walls (static boxes 0.4 thick and 2.5
/// tall, friction 0.5 / 2), the agents (2 m boxes of 1 kg, friction 0.01),
/// boxes (2 kg, 0.5 / 4) and ramps (2 kg, 0.5 / 1), every dynamic body free
/// of damping and turning about z only (boxes and ramps too: README, "Boxes
/// and ramps do not tip"), in the default variant's fixed rows.
ORRERY_SYSTEM void spawn_gpu(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    GpuDraw d{};
    draw_gpu(ctx, cfg, d);
    const Quat id{1, 0, 0, 0};
    gpu_body(ctx, add_body<Wall>(ctx, {phys::ShapeKind::kPlane, {0, 0, 0}}, 0.0f, {0, 0, 0}, id, 0.1f, {}, 0.0f), 0.1f,
             0.1f, 0);
    for (uint32_t k = 0; k < d.plan.n; ++k) {
        const GpuWall& w = d.plan.w[k];
        if (w.a1 <= w.a0) continue; // a door wider than what was left of a short wall
        float mid = kGpuHalf * (w.a0 + w.a1 - 1.0f), c = kGpuHalf * (2.0f * w.c - 1.0f);
        float half = kGpuHalf * (w.a1 - w.a0), thick = 0.5f * kGpuWallThick, up = 0.5f * kGpuWallHeight;
        Vec3 p = w.hz ? Vec3{mid, c, up} : Vec3{c, mid, up}, e = w.hz ? Vec3{half, thick, up} : Vec3{thick, half, up};
        Entity wall = add_body<Wall>(ctx, {phys::ShapeKind::kBox, e}, 0.0f, p, id, 0.5f, {}, 0.0f);
        if (!wall.is_null()) gpu_body(ctx, wall, 0.5f, 2.0f, 0);
    }
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        bool hider = row < cfg.max_hiders;
        uint32_t k = hider ? row : row - cfg.max_hiders, n = hider ? d.hiders : d.seekers;
        const GpuSpot& s = d.agents[hider ? k : d.hiders + k];
        Entity e = add_body<Agent>(ctx, {phys::ShapeKind::kBox, {1, 1, 1}}, 1.0f, {s.f.x, s.f.y, 1.0f},
                                   phys::axis_angle({0, 0, 1}, s.yaw), 0.01f, {}, 0.0f);
        if (e.is_null()) return;
        gpu_body(ctx, e, 0.01f, 0.01f, phys::kLockTurnX | phys::kLockTurnY);
        ctx.get<Team>(e)->value = k < n ? (hider ? kHider : kSeeker) : kAbsent;
        if (k >= n) park(ctx, e, -30.0f - 3.0f * float(row));
    }
    for (uint32_t row = 0; row < cfg.max_boxes + cfg.ramps; ++row) {
        bool ramp = row >= cfg.max_boxes, present = ramp || row < d.boxes;
        int32_t kind = ramp ? kRamp : (row < d.elongated ? kElongated : kCube);
        const GpuSpot& s = d.objects[row];
        phys::Pose at{{s.f.x, s.f.y, 1.0f}, phys::axis_angle({0, 0, 1}, s.yaw)}; // a ramp: its bottom face down
        if (ramp) at = phys::hull_pose(phys::hull_set(ctx).info[kRampHull], {s.f.x, s.f.y, 0.0f}, at.q);
        phys::Shape shape = ramp ? ramp_shape() : phys::Shape{phys::ShapeKind::kBox, gpu_half(kind)};
        Entity e = add_body<Object>(ctx, shape, 2.0f, at.p, at.q, 0.5f, {}, 0.0f);
        if (e.is_null()) return;
        gpu_body(ctx, e, 0.5f, ramp ? 1.0f : 4.0f, phys::kLockTurnX | phys::kLockTurnY);
        *ctx.get<Piece>(e) = {present ? kind : kNoPiece, 0, kAbsent, -1};
        if (!present) park(ctx, e, -30.0f - 9.0f * float(row));
    }
    ctx.single<Arena, Round>() = {d.hiders, d.seekers, d.boxes, 1 + d.plan.connects, 1};
}

// ---------------------------------------------------------------- step

/// An agent's facing: its body's +y (gpu_hideseek's forward).
ORRERY_HD inline Vec3 gpu_forward(Quat q) { return phys::rotate(q, {0.0f, 1.0f, 0.0f}); }

/// Movement in the agent's frame: 96 N per bin along its x (right) and y
/// (forward), 32 N m per bin about z. Seekers' movement is ignored during
/// the preparation phase (their grab and lock are not).
ORRERY_SYSTEM void move_gpu(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        int32_t team = ctx.at<Agent, Team>(row).value;
        if (team == kAbsent || (team == kSeeker && ctx.step() < cfg.prep_steps)) continue;
        const Action& a = ctx.at<Agent, Action>(row);
        phys::Force& f = ctx.at<Agent, phys::Force>(row);
        Quat q = ctx.at<Agent, phys::Pose>(row).q;
        f.f += phys::rotate(q, {kGpuMove * float(a.move_x - 5), kGpuMove * float(a.move_y - 5), 0.0f});
        f.t += Vec3{0.0f, 0.0f, kGpuTurn * float(a.turn - 5)};
    }
}

/// Agent `row`'s forward ray: from its centre + 0.5 up, along its forward,
/// up to kGpuReach, skipping the agent itself.
struct ForwardRay {
    Vec3 o, dir;
    uint32_t skip;
};
ORRERY_HD inline ForwardRay forward_ray(const Ctx& ctx, uint32_t row) {
    const phys::Pose& p = ctx.at<Agent, phys::Pose>(row);
    return {p.p + Vec3{0.0f, 0.0f, 0.5f}, gpu_forward(p.q), row_entity<Agent>(ctx, row).index};
}
/// The object row a forward ray's hit is, or -1 (no hit, or a wall or agent first).
ORRERY_HD inline int32_t object_hit(Hit h) {
    return h.index != ~0u && (h.index >> 24) == archetype_id<Object> ? int32_t(h.index & 0xFFFFFFu) : -1;
}
/// The object row agent `row`'s forward ray meets first, or -1.
ORRERY_HD inline int32_t forward_object(const Ctx& ctx, uint32_t row) {
    const ForwardRay r = forward_ray(ctx, row);
    return object_hit(cast(ctx, r.o, r.dir, kGpuReach, r.skip));
}

inline constexpr int32_t kNotCast = -3; ///< toggle_agents: the forward ray is cast when first needed

/// Grab and lock as toggles, agents in row order, lock before grab (as
/// gpu_hideseek's action system). Lock: the object on the forward ray turns
/// static, owned by the agent's team, if dynamic and unowned; static and owned
/// by the agent's team, dynamic again. Grab: a holding agent lets go;
/// otherwise it welds the dynamic, unowned object on its forward ray.
/// `ahead[row]`: agent row's forward_object, or kNotCast (cast here when first
/// needed). One forward ray serves lock and grab: the toggles move no body of
/// the ray scene, and the ray reads nothing else they change.
ORRERY_HD inline void toggle_agents(Ctx& ctx, const int32_t* ahead) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents && row < kMaxAgents; ++row) {
        int32_t team = ctx.at<Agent, Team>(row).value;
        if (team == kAbsent) continue;
        const Action& a = ctx.at<Agent, Action>(row);
        int32_t seen = ahead[row];
        auto forward = [&] { return seen != kNotCast ? seen : (seen = forward_object(ctx, row)); };
        int32_t k = a.lock != 0 ? forward() : -1;
        if (k >= 0) {
            Piece& piece = ctx.at<Object, Piece>(uint32_t(k));
            bool lockable = piece.kind != kRamp || cfg.lock_ramps;
            if (piece.locked && piece.lock_team == team)
                piece = {piece.kind, 0, kAbsent, -1};
            else if (!piece.locked && lockable)
                piece = {piece.kind, 1, team, int32_t(row)};
            ctx.at<Object, phys::BodyType>(uint32_t(k)).kind =
                piece.locked ? phys::BodyKind::kStatic : phys::BodyKind::kDynamic;
        }
        if (a.grab == 0) continue;
        Grip& g = ctx.at<Agent, Grip>(row);
        Entity me = row_entity<Agent>(ctx, row);
        if (!g.held.is_null()) {
            phys::remove_joints(ctx, me, g.held);
            g.held = Entity{};
        } else if ((k = forward()) >= 0 && !ctx.at<Object, Piece>(uint32_t(k)).locked) {
            Entity target = row_entity<Object>(ctx, uint32_t(k));
            if (phys::weld(ctx, me, target)) g.held = target;
        }
    }
}

/// The toggles on the world's team. Where its lanes are a GPU warp, each
/// agent pressing grab or lock casts its forward ray on a lane of its own
/// (agent row on lane row), the warp hands the answers to lane 0, and lane 0
/// toggles in row order; elsewhere lane 0 casts each ray when first needed,
/// in turn. The same objects, so the same bytes (docs/perf-notes.md row 127).
ORRERY_SYSTEM void toggle_gpu(Ctx& ctx, const Lanes& l) {
    int32_t ahead[kMaxAgents];
    for (uint32_t row = 0; row < kMaxAgents; ++row) ahead[row] = kNotCast;
#if defined(__CUDA_ARCH__)
    if (l.count == 32) {
        const Config& cfg = ctx.config<Config>();
        bool casts = false;
        if (l.lane < cfg.agents && l.lane < kMaxAgents && ctx.at<Agent, Team>(l.lane).value != kAbsent) {
            const Action& a = ctx.at<Agent, Action>(l.lane);
            casts = a.lock != 0 || a.grab != 0;
        }
        // forward_object, its ray's bounds culled on the warp (cast_on_warp)
        const ForwardRay r = casts ? forward_ray(ctx, l.lane) : ForwardRay{};
        const Hit h = cast_on_warp(scene_view(ctx), phys::hull_set(ctx), casts, r.o, r.dir, kGpuReach, r.skip, ~0u,
                                   l.lane, l.mask);
        const int32_t mine = casts ? object_hit(h) : kNotCast;
        for (uint32_t row = 0; row < kMaxAgents; ++row) ahead[row] = __shfl_sync(l.mask, mine, row);
    }
#endif
    if (l.lane == 0) toggle_agents(ctx, ahead);
}

/// No momentum: after the physics every agent's velocity is cleared but for
/// a fall (vx = vy = 0, vz <= 0, no turning).
ORRERY_SYSTEM void stop_agents(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        if (ctx.at<Agent, Team>(row).value == kAbsent) continue;
        phys::Velocity& v = ctx.at<Agent, phys::Velocity>(row);
        v = {{0.0f, 0.0f, phys::min_f(v.v.z, 0.0f)}, {0.0f, 0.0f, 0.0f}};
    }
}

// ---------------------------------------------------------------- observation

/// Yaw (rad) of quaternion q as gpu_hideseek reads it: atan2(2 (w z + x y), 1 - 2 (y^2 + z^2)).
ORRERY_HD inline float gpu_yaw(Quat q) {
    return phys::angle_of(2.0f * (q.w * q.z + q.x * q.y), 1.0f - 2.0f * (q.y * q.y + q.z * q.z));
}

/// The number of pieces of a gpu_hideseek agent's rest (observe_gpu_piece):
/// each agent slot, each box slot, each ramp, and the two entries after the masks.
ORRERY_HD inline uint32_t gpu_rest_pieces(const Config& cfg) { return kGpuAgentSlots + kGpuBoxSlots + cfg.ramps + 1; }

/// Piece `piece` of agent `row`'s gpu_hideseek observation but for its ray
/// block (lidar and masks: observe_ray), flat: agent_data [5, 4] (other
/// agents' position and velocity in its frame, x right and y forward; pieces
/// 0..4), box_data [9, 7] (the same, size x, y, yaw relative to the agent;
/// pieces 5..13), ramp_data [ramps, 5], and the last piece the two entries
/// after the masks: the preparation steps left and its type (1 hider, 0
/// seeker). Each piece writes its own entries; absent rows and slots are zeros.
ORRERY_HD inline void observe_gpu_piece(const Ctx& ctx, uint32_t row, uint32_t piece) {
    const Config& cfg = ctx.config<Config>();
    float* o = &ctx.array_at<Obs>(archetype_id<Agent>, row)[0];
    const int32_t team = ctx.at<Agent, Team>(row).value;
    const phys::Pose& pose = ctx.at<Agent, phys::Pose>(row);
    auto relative = [&](float* out, const phys::Pose& p, const phys::Velocity& vel) {
        Vec3 x = phys::unrotate(pose.q, p.p - pose.p);
        Vec3 v = phys::unrotate(pose.q, vel.v);
        out[0] = x.x, out[1] = x.y, out[2] = v.x, out[3] = v.y;
    };
    if (piece < kGpuAgentSlots) { // the other agents in row order, skipping this one
        const uint32_t other = piece < row ? piece : piece + 1;
        float* a = o + cfg.off_agents + kGpuPerAgent * piece;
        if (team == kAbsent || other >= cfg.agents || ctx.at<Agent, Team>(other).value == kAbsent)
            return clear_floats(a, kGpuPerAgent);
        return relative(a, ctx.at<Agent, phys::Pose>(other), ctx.at<Agent, phys::Velocity>(other));
    }
    piece -= kGpuAgentSlots;
    if (piece >= kGpuBoxSlots + cfg.ramps) { // the preparation steps left, the agent's type
        const uint32_t done = ctx.step() < cfg.prep_steps ? ctx.step() : cfg.prep_steps;
        o[cfg.obs_size - 2] = team == kAbsent ? 0.0f : float(cfg.prep_steps - done);
        o[cfg.obs_size - 1] = team == kHider ? 1.0f : 0.0f;
        return;
    }
    const bool ramp = piece >= kGpuBoxSlots;
    const uint32_t obj = ramp ? cfg.max_boxes + (piece - kGpuBoxSlots) : piece;
    float* b = o + (ramp ? cfg.off_ramps + kGpuPerRamp * (piece - kGpuBoxSlots) : cfg.off_boxes + kGpuPerBox * piece);
    if (team == kAbsent || (!ramp && piece >= cfg.max_boxes) || ctx.at<Object, Piece>(obj).kind == kNoPiece)
        return clear_floats(b, ramp ? kGpuPerRamp : kGpuPerBox);
    const phys::Pose& at = ctx.at<Object, phys::Pose>(obj);
    relative(b, at, ctx.at<Object, phys::Velocity>(obj));
    Vec3 size = ctx.at<Object, phys::Shape>(obj).dims * 2.0f;
    if (!ramp) b[4] = size.x, b[5] = size.y;
    b[ramp ? 4 : 6] = gpu_yaw(pose.q * phys::conj(ramp ? ramp_frame(ctx, at.q) : at.q)); // a ramp: its own frame
}

/// gpu_hideseek's observation, one row per agent (observe_gpu_piece's
/// entries, then lidar [30] (egocentric, ray 0 forward, counter-clockwise, 0
/// without a hit within 200) and the visibility masks, between them), every
/// ray and every piece of every agent spread over the world's lanes.
ORRERY_SYSTEM void observe_gpu(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    observe_lanes(ctx, lane, lanes, gpu_rest_pieces(ctx.config<Config>()),
                  [](const Ctx& c, uint32_t row, uint32_t piece) { observe_gpu_piece(c, row, piece); });
}

} // namespace hide_and_seek
