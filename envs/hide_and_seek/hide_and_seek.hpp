#pragma once
// Hide-and-seek, OpenAI's rules (multi-agent emergence environments, Baker et
// al. 2020) over the physics module: random rooms on a 30 x 30 grid of 0.2 m
// cells, sphere agents pushed in the world frame, boxes and ramps they can
// grab and lock, vision through a 135 degree cone and line of sight, and team
// rewards for being seen. /work/shared/research/hideseek.md is the rule book;
// README.md here lists every rule and decision. Compiled by g++ and NVRTC.

#include "envs/hide_and_seek/rays.hpp"
#if !defined(ORRERY_DEVICE_CODE)
#include "envs/hide_and_seek/lidar_cull.hpp"
#endif

namespace hide_and_seek {
using namespace orrery;

inline constexpr int32_t kGrid = 30;                 ///< placement grid cells per side
inline constexpr float kCell = 0.2f;                 ///< metres per cell (a 6 x 6 m arena)
inline constexpr int32_t kMinRoomCells = 6;          ///< a split keeps this far from every parallel wall
inline constexpr int32_t kDoorCells = 2;             ///< one 0.4 m door per internal wall
inline constexpr uint32_t kWallTries = 10;           ///< failed splits before the walls are rebuilt
inline constexpr uint32_t kSpawnTries = 10;          ///< rejection samples per object
inline constexpr uint32_t kMaxRebuilds = 64;         ///< whole-world retries (then kSpawnFailed)
inline constexpr uint32_t kMaxSegments = 8;          ///< 4 outer walls and up to 3 splits (4 rooms)
inline constexpr uint32_t kMaxWalls = 1 + 4 + 2 * 3; ///< floor, outer walls, two pieces per split
inline constexpr uint32_t kLidarRays = 30;
inline constexpr float kLidarRange = 6.0f;
inline constexpr float kGpuLidarRange = 200.0f;     ///< gpu_hideseek's (gpu_hideseek.hpp)
inline constexpr float kReach = 0.25f;              ///< grab and lock: surface within this of the agent's centre
inline constexpr float kCosHalfCone = 0.382683432f; ///< cos(3 pi / 8): the 135 degree vision cone
inline constexpr float kForcePerBin = 18.0f;        ///< linspace(-0.9, 0.9, 11) step times gear 100 (N, N m)
inline constexpr float kAgentRadius = 0.15f;
inline constexpr uint32_t kSelf = 10, kPerAgent = 10, kPerObject = 15;
inline constexpr uint32_t kMaxAgents = 6; ///< 3 hiders and 3 seekers at most (the options' bounds)
enum : int32_t { kHider = 0, kSeeker = 1, kAbsent = -1 };
enum : int32_t { kNoPiece = 0, kCube = 1, kElongated = 2, kRamp = 3 };
enum : uint32_t { kSpawnFailed = uint32_t(ErrorCode::kEnvBase) + 1 };

/// The env's options and the layout of one agent's observation row.
struct Config {
    uint32_t min_hiders, max_hiders, min_seekers, max_seekers;
    uint32_t min_boxes, max_boxes, ramps, max_rooms;
    uint32_t horizon, prep_steps, walls_block_rays, agents;
    float outer_wall_prob;
    uint32_t quadrant;   ///< the quadrant game: a corner room, objects out of bounds cost -10
    uint32_t elongated;  ///< 0: every box is a cube (the quadrant game)
    uint32_t lock_ramps; ///< 0: ramps cannot be locked (the quadrant game)
    uint32_t gpu;        ///< 1: the gpu_hideseek variant (gpu_hideseek.hpp; flagged rules below)
    uint32_t off_agents, off_boxes, off_ramps, off_lidar, off_aa, off_ab, off_ar, obs_size;
};

/// move_x, move_y, turn: bins 0..10 (5 is still); grab, lock: 0 released, else pressed. // [worlds, agents, 5] i32
struct Action {
    using Element = int32_t;
    int32_t move_x, move_y, turn, grab, lock;
};
struct Reward { // [worlds, agents] f32
    using Element = float;
    float value;
};
/// One agent's observation, flat (the layout is in Config and README.md). // [worlds, agents, obs_size] f32
struct Obs : ArrayOf<float> {};
/// kHider, kSeeker, or kAbsent for a row this episode does not use. // [worlds, agents] i32
struct Team {
    using Element = int32_t;
    int32_t value;
};
/// What an agent holds (welded to it), or null.
struct Grip {
    Entity held;
};
/// A box or ramp: its kind and lock state (locker: the agent row that locked it). // [worlds, objects, 4] i32
struct Piece {
    using Element = int32_t;
    int32_t kind, locked, lock_team, locker;
};
/// This episode's draw: hiders, seekers, boxes, rooms, and whether the outer walls stand. // [worlds, 5] u32
struct Round {
    using Element = uint32_t;
    uint32_t hiders, seekers, boxes, rooms, outer_walls;
};
/// The bodies rays can meet this step (agents of the episode, present objects,
/// and walls when they block rays), gathered once for every ray of the step.
struct Scene : BufferOf<RayBody> {};
static_assert(sizeof(Action) == 20 && sizeof(Piece) == 16 && sizeof(Round) == 20);

ORRERY_COMPONENTS(phys::OrreryComponents, Action, Reward, Obs, Team, Grip, Piece, Round, Scene);
ORRERY_ARCHETYPE(Agent, phys::RigidBody, Action, Reward, Obs, Team, Grip); // rows: hiders, then seekers
ORRERY_ARCHETYPE(Object, phys::RigidBody, phys::Sleep, Piece); // rows: boxes, then ramps (they sleep at rest)
ORRERY_ARCHETYPE(Wall, phys::RigidBody);                       // the floor, then walls
ORRERY_ARCHETYPE(Arena, Round, Scene);
ORRERY_ARCHETYPES(phys::OrreryArchetypes, Agent, Object, Wall, Arena);

// ---------------------------------------------------------------- bodies

/// The ramp: OpenAI's 45 degree wedge, 0.5 x 0.5 x 0.5 m (phys::wedge_vertices),
/// hull 0 of the env's hull table; its top rises toward +y of its own frame.
inline constexpr uint32_t kRampHull = 0;
ORRERY_HD inline phys::Shape ramp_shape() { return phys::hull_shape(kRampHull); }
/// The ramp's own frame (origin at the middle of its bottom face) from its body
/// pose (centroid, principal axes): the orientation turned about z only.
ORRERY_HD inline Quat ramp_frame(const Ctx& ctx, Quat body) {
    return body * phys::conj(phys::hull_set(ctx).info[kRampHull].frame);
}

/// Creates a rigid body of archetype A. mass 0: static. Damping is MuJoCo's
/// joint damping of OpenAI's slide x, y, z and hinge z joints (N s/m, N m s).
template <class A>
ORRERY_HD inline Entity add_body(Ctx& ctx, phys::Shape shape, float mass, Vec3 p, Quat q, float friction,
                                 Vec3 slide_damping, float turn_damping) {
    Entity e = ctx.create<A>();
    if (e.is_null()) return e;
    *ctx.get<phys::Pose>(e) = {p, q};
    bool dynamic = mass > 0.0f;
    ctx.get<phys::BodyType>(e)->kind = dynamic ? phys::BodyKind::kDynamic : phys::BodyKind::kStatic;
    phys::MassProps mp = dynamic ? phys::mass_given(shape, mass, phys::hull_set(ctx)) : phys::MassProps{};
    *ctx.get<phys::MassProps>(e) = mp;
    *ctx.get<phys::Shape>(e) = shape;
    *ctx.get<phys::Material>(e) = {friction, friction, 0.0f, 0.0f};
    ctx.get<phys::Locks>(e)->mask = phys::kLockTurnX | phys::kLockTurnY; // slide x, y, z and hinge z
    *ctx.get<phys::AxisDamping>(e) = {slide_damping, {0.0f, 0.0f, turn_damping}};
    return e;
}

/// Rows are fixed per episode: a row the draw leaves out holds a parked static body.
ORRERY_HD inline void park(Ctx& ctx, Entity e, float x) {
    ctx.get<phys::BodyType>(e)->kind = phys::BodyKind::kStatic;
    ctx.get<phys::Pose>(e)->p = {x, -20.0f, -20.0f};
}

/// Yaw of a quaternion turned about z only, in (-pi, pi]: atan2 from our own
/// polynomial (no libm), within 1e-5 rad.
ORRERY_HD inline float yaw_of(Quat q) {
    float c = q.w * q.w - q.z * q.z, s = 2.0f * q.w * q.z;
    float ac = phys::abs_of(c), as = phys::abs_of(s);
    float hi = phys::max_f(ac, as), lo = phys::min_f(ac, as);
    float t = hi > 0.0f ? lo / hi : 0.0f, t2 = t * t;
    float a =
        t * (0.99997726f +
             t2 * (-0.33262347f + t2 * (0.19354346f + t2 * (-0.11643287f + t2 * (0.05265332f - t2 * 0.01172120f)))));
    if (as > ac) a = 1.57079633f - a;
    if (c < 0.0f) a = 3.14159265f - a;
    return s < 0.0f ? -a : a;
}

// ---------------------------------------------------------------- rooms

/// A wall on the grid lines, cells (x0, y0) to (x1, y1), horizontal or vertical.
struct Seg {
    int32_t x0, y0, x1, y1;
};
ORRERY_HD inline bool horizontal(const Seg& s) { return s.y0 == s.y1; }
ORRERY_HD inline int32_t min_i(int32_t a, int32_t b) { return a < b ? a : b; }
ORRERY_HD inline int32_t max_i(int32_t a, int32_t b) { return a < b ? b : a; }

/// One room split: from a random point of a random wall, a perpendicular wall
/// to the first wall it meets. Fails when it comes within kMinRoomCells of a
/// parallel wall whose span overlaps it (OpenAI's RandomWalls).
ORRERY_HD inline bool split_room(Rng& rng, Seg* w, uint32_t& n) {
    const Seg base = w[rng.below(n)];
    bool hz = horizontal(base);
    int32_t lo = hz ? base.x0 : base.y0, len = (hz ? base.x1 : base.y1) - lo;
    if (len < 2) return false;
    int32_t at = lo + 1 + int32_t(rng.below(uint32_t(len - 1)));
    int32_t from = hz ? base.y0 : base.x0, dir = rng.below(2) ? 1 : -1;
    if (from == 0) dir = 1;
    if (from == kGrid) dir = -1;
    int32_t to = dir > 0 ? kGrid + 1 : -1;
    for (uint32_t i = 0; i < n; ++i) { // the first wall parallel to base that the new wall meets
        const Seg& v = w[i];
        if (horizontal(v) != hz) continue;
        int32_t c = hz ? v.y0 : v.x0, a = hz ? v.x0 : v.y0, b = hz ? v.x1 : v.y1;
        if (a <= at && at <= b && (c - from) * dir > 0 && (c - from) * dir < (to - from) * dir) to = c;
    }
    if (to < 0 || to > kGrid || (to - from) * dir < kMinRoomCells) return false;
    Seg s = hz ? Seg{at, min_i(from, to), at, max_i(from, to)} : Seg{min_i(from, to), at, max_i(from, to), at};
    for (uint32_t i = 0; i < n; ++i) { // rooms at least kMinRoomCells wide
        const Seg& v = w[i];
        if (horizontal(v) == hz) continue; // parallel to the new wall
        int32_t c = hz ? v.x0 : v.y0, a = hz ? v.y0 : v.x0, b = hz ? v.y1 : v.x1;
        bool overlap = max_i(a, hz ? s.y0 : s.x0) < min_i(b, hz ? s.y1 : s.x1);
        if (overlap && (c - at < kMinRoomCells && at - c < kMinRoomCells)) return false;
    }
    w[n++] = s;
    return true;
}

/// The outer walls and `rooms` - 1 splits; after kWallTries failed splits the
/// walls are rebuilt from the outer four. Returns the wall count (4 + splits).
ORRERY_HD inline uint32_t make_rooms(Rng& rng, uint32_t rooms, Seg* w) {
    uint32_t n = 4;
    for (uint32_t rebuild = 0; rebuild < kMaxRebuilds; ++rebuild) {
        w[0] = {0, 0, kGrid, 0}, w[1] = {0, kGrid, kGrid, kGrid}, w[2] = {0, 0, 0, kGrid},
        w[3] = {kGrid, 0, kGrid, kGrid};
        n = 4;
        uint32_t failures = 0;
        while (n < 3 + rooms && failures < kWallTries)
            if (!split_room(rng, w, n)) ++failures;
        if (n == 3 + rooms) break;
    }
    return n;
}

/// Occupancy of the grid's 900 cells, one bit each.
struct Grid {
    uint32_t bits[(kGrid * kGrid + 31) / 32];
};
ORRERY_HD inline bool taken(const Grid& g, int32_t i, int32_t j) {
    uint32_t k = uint32_t(j * kGrid + i);
    return (g.bits[k >> 5] >> (k & 31)) & 1u;
}
ORRERY_HD inline void take(Grid& g, int32_t i, int32_t j) {
    if (i < 0 || j < 0 || i >= kGrid || j >= kGrid) return;
    uint32_t k = uint32_t(j * kGrid + i);
    g.bits[k >> 5] |= 1u << (k & 31);
}
/// The cells on both sides of wall piece [a, b) of grid line c.
ORRERY_HD inline void take_wall(Grid& g, bool hz, int32_t c, int32_t a, int32_t b) {
    for (int32_t k = a; k < b; ++k) {
        if (hz)
            take(g, k, c - 1), take(g, k, c);
        else
            take(g, c - 1, k), take(g, c, k);
    }
}

/// Where an object landed: its footprint's lower-left cell and its centre (m).
struct Spot {
    bool ok;
    int32_t i, j;
    float x, y;
};
/// Where a footprint may go: inside cells [lo, hi) of both axes, or (`outside`) not overlapping them.
struct Region {
    int32_t lo, hi;
    bool outside;
};
inline constexpr Region kAnywhere{0, 0, true};
/// The quadrant game's corner room: cells [15, 30) on both axes.
inline constexpr int32_t kQuadrantLo = kGrid / 2;

/// Rejection sampling of a free w x h cell footprint in `region` (kSpawnTries
/// draws). With `lead`, the centre must lie within 0.5 m of lead's (a team
/// spawns together).
ORRERY_HD inline Spot place(Rng& rng, Grid& g, int32_t w, int32_t h, const Spot* lead, Region region = kAnywhere) {
    for (uint32_t t = 0; t < kSpawnTries; ++t) {
        int32_t i, j;
        if (lead) {
            i = lead->i - 3 + int32_t(rng.below(7));
            j = lead->j - 3 + int32_t(rng.below(7));
        } else {
            i = int32_t(rng.below(uint32_t(kGrid - w + 1)));
            j = int32_t(rng.below(uint32_t(kGrid - h + 1)));
        }
        if (i < 0 || j < 0 || i + w > kGrid || j + h > kGrid) continue;
        bool in = i >= region.lo && j >= region.lo && i + w <= region.hi && j + h <= region.hi;
        bool overlaps = i < region.hi && j < region.hi && i + w > region.lo && j + h > region.lo;
        if (region.outside ? overlaps : !in) continue;
        float x = (float(i) + 0.5f * float(w)) * kCell, y = (float(j) + 0.5f * float(h)) * kCell;
        if (lead && (x - lead->x) * (x - lead->x) + (y - lead->y) * (y - lead->y) > 0.25f) continue;
        bool free = true;
        for (int32_t a = i; a < i + w && free; ++a)
            for (int32_t b = j; b < j + h && free; ++b) free = !taken(g, a, b);
        if (!free) continue;
        for (int32_t a = i; a < i + w; ++a)
            for (int32_t b = j; b < j + h; ++b) take(g, a, b);
        return {true, i, j, x, y};
    }
    return {false, 0, 0, 0.0f, 0.0f};
}

/// One world's draw: walls, counts, and where everything goes.
struct Draw {
    Seg walls[kMaxSegments];
    uint32_t walls_n, hiders, seekers, boxes, elongated, outer;
    uint32_t long_along_y; ///< bit k: elongated box k lies along y
    uint32_t no_door;      ///< bit k: wall k has no door (the quadrant game's single door)
    Spot agents[8], objects[16];
};

/// Draws a world until every object finds a spot (OpenAI discards a world
/// whose placement fails); false after kMaxRebuilds draws.
ORRERY_HD inline bool draw_world(Ctx& ctx, const Config& cfg, Draw& d) {
    Rng rng = ctx.rng(1);
    d.hiders = cfg.min_hiders + rng.below(cfg.max_hiders - cfg.min_hiders + 1);
    d.seekers = cfg.min_seekers + rng.below(cfg.max_seekers - cfg.min_seekers + 1);
    for (uint32_t attempt = 0; attempt < kMaxRebuilds; ++attempt) {
        d.no_door = 0;
        if (cfg.quadrant) { // two walls close the corner room; with p = 0.5 only one has a door
            d.walls_n = make_rooms(rng, 1, d.walls);
            d.walls[4] = {kQuadrantLo, kQuadrantLo, kQuadrantLo, kGrid};
            d.walls[5] = {kQuadrantLo, kQuadrantLo, kGrid, kQuadrantLo};
            d.walls_n = 6;
            if (rng.uniform() < 0.5f) d.no_door = 1u << (4 + rng.below(2));
        } else {
            d.walls_n = make_rooms(rng, 1 + rng.below(cfg.max_rooms), d.walls);
        }
        d.outer = rng.uniform() < cfg.outer_wall_prob ? 1u : 0u;
        d.boxes = cfg.min_boxes + rng.below(cfg.max_boxes - cfg.min_boxes + 1);
        uint32_t least = d.boxes < 3 ? d.boxes : 3;
        d.elongated = cfg.elongated ? least + rng.below(d.boxes - least + 1) : 0;
        // The quadrant game: hiders and boxes in the room, seekers and ramps outside it.
        const Region room{kQuadrantLo, kGrid, false}, out{kQuadrantLo, kGrid, true};
        const Region hider_area = cfg.quadrant ? room : kAnywhere, seeker_area = cfg.quadrant ? out : kAnywhere;
        d.long_along_y = 0;
        Grid g{};
        for (uint32_t k = 0; k < d.walls_n; ++k) { // doors come later; their cells count as taken here
            const Seg& s = d.walls[k];
            take_wall(g, horizontal(s), horizontal(s) ? s.y0 : s.x0, horizontal(s) ? s.x0 : s.y0,
                      horizontal(s) ? s.x1 : s.y1);
        }
        bool ok = true;
        for (uint32_t a = 0; a < d.hiders + d.seekers && ok; ++a) {
            const Spot* lead = a == 0 || a == d.hiders ? nullptr : &d.agents[a < d.hiders ? 0 : d.hiders];
            d.agents[a] = place(rng, g, 2, 2, lead, a < d.hiders ? hider_area : seeker_area);
            ok = d.agents[a].ok;
        }
        for (uint32_t b = 0; b < d.boxes && ok; ++b) {
            bool along_y = b < d.elongated && rng.below(2) == 1;
            if (along_y) d.long_along_y |= 1u << b;
            int32_t w = b < d.elongated ? (along_y ? 1 : 9) : 3, h = b < d.elongated ? (along_y ? 9 : 1) : 3;
            d.objects[b] = place(rng, g, w, h, nullptr, hider_area);
            ok = d.objects[b].ok;
        }
        for (uint32_t r = 0; r < cfg.ramps && ok; ++r) {
            d.objects[cfg.max_boxes + r] = place(rng, g, 3, 3, nullptr, seeker_area);
            ok = d.objects[cfg.max_boxes + r].ok;
        }
        if (ok) return true;
    }
    return false;
}

/// A static wall box along grid line c over cells [a, b): 0.1 m thick, ends
/// overlapping by half the thickness so corners close.
ORRERY_HD inline void add_wall(Ctx& ctx, bool hz, int32_t c, int32_t a, int32_t b, float height) {
    if (b <= a) return;
    float mid = 0.5f * float(a + b) * kCell, line = float(c) * kCell, half = 0.5f * float(b - a) * kCell + 0.05f;
    Vec3 p = hz ? Vec3{mid, line, 0.5f * height} : Vec3{line, mid, 0.5f * height};
    Vec3 e = hz ? Vec3{half, 0.05f, 0.5f * height} : Vec3{0.05f, half, 0.5f * height};
    add_body<Wall>(ctx, {phys::ShapeKind::kBox, e}, 0.0f, p, {1, 0, 0, 0}, 1.0f, {0, 0, 0}, 0.0f);
}

/// Init: draws the world and creates its floor, walls (each internal wall with
/// one door), agents, boxes and ramps, in fixed rows.
ORRERY_SYSTEM void spawn(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    Draw d{};
    if (!draw_world(ctx, cfg, d)) ctx.fail(kSpawnFailed); // placed anyway, overlapping
    Rng rng = ctx.rng(2);
    const Quat id{1, 0, 0, 0};
    add_body<Wall>(ctx, {phys::ShapeKind::kPlane, {0, 0, 0}}, 0.0f, {0, 0, 0}, id, 0.2f, {0, 0, 0}, 0.0f);
    for (uint32_t k = 0; k < d.walls_n; ++k) {
        const Seg& s = d.walls[k];
        bool hz = horizontal(s);
        int32_t c = hz ? s.y0 : s.x0, a = hz ? s.x0 : s.y0, b = hz ? s.x1 : s.y1;
        if (k < 4) {
            if (d.outer) add_wall(ctx, hz, c, a, b, 4.0f);
            continue;
        }
        int32_t door = a + int32_t(rng.below(uint32_t(b - a - kDoorCells + 1)));
        if ((d.no_door >> k) & 1u) door = b; // one piece, the whole wall
        add_wall(ctx, hz, c, a, door, 0.5f);
        add_wall(ctx, hz, c, door + kDoorCells, b, 0.5f);
    }
    const phys::Shape ball{phys::ShapeKind::kSphere, {kAgentRadius, 0, 0}};
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        bool hider = row < cfg.max_hiders;
        uint32_t k = hider ? row : row - cfg.max_hiders, n = hider ? d.hiders : d.seekers;
        const Spot& s = d.agents[hider ? k : d.hiders + k];
        float yaw = rng.uniform() * 6.28318531f;
        Entity e = add_body<Agent>(ctx, ball, 1.0f, {s.x, s.y, kAgentRadius}, phys::axis_angle({0, 0, 1}, yaw), 0.01f,
                                   {10.0f, 10.0f, 1.0f}, 10.0f);
        if (e.is_null()) return;
        ctx.get<Team>(e)->value = k < n ? (hider ? kHider : kSeeker) : kAbsent;
        if (k >= n) park(ctx, e, -2.0f - float(row));
    }
    for (uint32_t row = 0; row < cfg.max_boxes + cfg.ramps; ++row) {
        bool ramp = row >= cfg.max_boxes;
        bool present = ramp || row < d.boxes, along_y = (d.long_along_y >> row) & 1u;
        int32_t kind = ramp ? kRamp : (row < d.elongated ? kElongated : kCube);
        Vec3 half = kind == kElongated ? (along_y ? Vec3{0.075f, 0.825f, 0.25f} : Vec3{0.825f, 0.075f, 0.25f})
                                       : Vec3{0.25f, 0.25f, 0.25f};
        phys::Shape shape = ramp ? ramp_shape() : phys::Shape{phys::ShapeKind::kBox, half};
        const Spot& s = d.objects[row];
        float damping = ramp ? 0.1f : 0.01f;
        phys::Pose at{{s.x, s.y, 0.25f}, id}; // a ramp's bottom face on the floor, centred on its spot
        if (ramp) at = phys::hull_pose(phys::hull_set(ctx).info[kRampHull], {s.x, s.y, 0.0f}, id);
        Entity e =
            add_body<Object>(ctx, shape, 1.0f, at.p, at.q, ramp ? 0.01f : 0.2f, {damping, damping, damping}, damping);
        if (e.is_null()) return;
        *ctx.get<Piece>(e) = {present ? kind : kNoPiece, 0, kAbsent, -1};
        if (!present) park(ctx, e, -2.0f - float(row));
    }
    ctx.single<Arena, Round>() = {d.hiders, d.seekers, d.boxes, cfg.quadrant ? 2u : d.walls_n - 3, d.outer};
}

/// The rows of archetype A this world has used (the rows a per-entity system walks).
template <class A> ORRERY_HD inline uint32_t rows_used(const Ctx& ctx) {
    const ArchetypeTable& t = ctx.storage().tables[archetype_id<A>];
    return min_of(t.high_water[ctx.world()], t.capacity);
}

/// Whether used row `row` of archetype A (below rows_used) holds a live entity.
template <class A> ORRERY_HD inline bool alive_row(const Ctx& ctx, uint32_t row) {
    const ArchetypeTable& t = ctx.storage().tables[archetype_id<A>];
    return t.alive[ctx.slot(t, row)];
}

/// Whether row `row` of archetype A holds a live entity (the rows a per-entity system visits).
template <class A> ORRERY_HD inline bool live_row(const Ctx& ctx, uint32_t row) {
    return row < rows_used<A>(ctx) && alive_row<A>(ctx, row);
}

/// Agent row `row`'s entity (rows are created in order at reset and never freed).
template <class A> ORRERY_HD inline Entity row_entity(const Ctx& ctx, uint32_t row) {
    const ArchetypeTable& t = ctx.storage().tables[archetype_id<A>];
    uint32_t r = ctx.slot(t, row);
    return t.alive[r] ? Entity::make(archetype_id<A>, row, t.generation[r]) : Entity{};
}

// ---------------------------------------------------------------- rays and vision

/// The rows gather_scene walks, as one list: the agents', then the
/// objects', then (when they block rays) the walls'.
struct SceneRows {
    uint32_t agents, objects, all;
};
ORRERY_HD inline SceneRows scene_rows(const Ctx& ctx) {
    const uint32_t na = rows_used<Agent>(ctx), no = rows_used<Object>(ctx);
    return {na, na + no, na + no + (ctx.config<Config>().walls_block_rays ? rows_used<Wall>(ctx) : 0u)};
}
/// Whether row g of that list goes into the ray scene: a live agent of this
/// episode, a present box or ramp, a wall; never the floor (a plane).
/// A row's tests are read at once and joined by `&`, not `&&`: every row
/// below rows_used has its columns, and the reads do not wait on each other
/// (the same answer; docs/perf-notes.md row 133).
ORRERY_HD inline bool in_scene(const Ctx& ctx, SceneRows r, uint32_t g) {
    if (g < r.agents) {
        const bool alive = alive_row<Agent>(ctx, g), playing = ctx.at<Agent, Team>(g).value != kAbsent,
                   solid = ctx.at<Agent, phys::Shape>(g).kind != phys::ShapeKind::kPlane;
        return alive & playing & solid;
    }
    if (g < r.objects) {
        const uint32_t row = g - r.agents;
        const bool alive = alive_row<Object>(ctx, row), present = ctx.at<Object, Piece>(row).kind != kNoPiece,
                   solid = ctx.at<Object, phys::Shape>(row).kind != phys::ShapeKind::kPlane;
        return alive & present & solid;
    }
    if (g >= r.all) return false;
    const bool alive = alive_row<Wall>(ctx, g - r.objects),
               solid = ctx.at<Wall, phys::Shape>(g - r.objects).kind != phys::ShapeKind::kPlane;
    return alive & solid;
}
/// Row `row` of archetype A as the ray scene lists it.
template <class A> ORRERY_HD inline RayBody scene_body(const Ctx& ctx, uint32_t row, const phys::HullSet& hulls) {
    const phys::Pose& p = ctx.at<A, phys::Pose>(row);
    return ray_body_of(ctx.at<A, phys::Shape>(row), p.p, p.q, row_entity<A>(ctx, row).index, hulls);
}
/// Row g of the list as the ray scene lists it.
ORRERY_HD inline RayBody scene_entry(const Ctx& ctx, SceneRows r, uint32_t g, const phys::HullSet& hulls) {
    return g < r.agents    ? scene_body<Agent>(ctx, g, hulls)
           : g < r.objects ? scene_body<Object>(ctx, g - r.agents, hulls)
                           : scene_body<Wall>(ctx, g - r.objects, hulls);
}

#if defined(__CUDA_ARCH__)
/// gather_scene on whole warps (a world's lanes a multiple of 32): the same
/// entries in the same order, and the same count. Each warp takes the rows
/// 32 at a time, a row a lane; a ballot of the rows that go in numbers
/// them, and the warp whose turn the round is writes its entries. Where the
/// lanes of the walk below each read every row in turn (a chain of
/// dependent reads per row), a warp reads a round of rows at once.
ORRERY_HD inline void gather_scene_warps(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    Buffer<Scene> scene = ctx.single_buffer<Arena, Scene>();
    const phys::HullSet hulls = phys::hull_set(ctx);
    const SceneRows r = scene_rows(ctx);
    const uint32_t warps = lanes / 32u, warp = lane / 32u, wl = lane % 32u;
    // Every round's membership first (up to kAhead rounds), so that their
    // reads overlap where each round's waited for the entries written before.
    constexpr uint32_t kAhead = 4;
    uint32_t ahead = 0; // bit k: round k's row of this lane
#pragma unroll
    for (uint32_t k = 0; k < kAhead; ++k) ahead |= uint32_t(in_scene(ctx, r, k * 32u + wl)) << k;
    uint32_t n = 0;
    for (uint32_t base = 0, round = 0; base < r.all; base += 32u, ++round) {
        const uint32_t g = base + wl;
        const bool in = round < kAhead ? ((ahead >> round) & 1u) != 0u : in_scene(ctx, r, g);
        const uint32_t vote = __ballot_sync(0xffffffffu, in);
        const uint32_t at = n + uint32_t(__popc(vote & ((1u << wl) - 1u)));
        if (in && at < scene.capacity() && round % warps == warp) scene[at] = scene_entry(ctx, r, g, hulls);
        n += uint32_t(__popc(vote));
    }
    if (lane == 0) scene.resize(n);
}
#endif

/// Fills the world's ray scene from the bodies' poses now: agents of this
/// episode, present boxes and ramps, and the walls when they block rays
/// (OpenAI's default). The floor never counts. Spread over the lanes: each
/// lane walks the rows in order counting the bodies that go in (the same
/// count on every lane) and fills entries lane, lane + lanes, ...; lane 0
/// sets the count (past the capacity: the capacity and kBufferOverflow, as
/// pushing them one by one would). On the GPU, lanes in whole warps take
/// gather_scene_warps, the same bytes.
ORRERY_SYSTEM void gather_scene(Ctx& ctx, uint32_t lane, uint32_t lanes) {
#if defined(__CUDA_ARCH__)
    if (lanes % 32u == 0) return gather_scene_warps(ctx, lane, lanes);
#endif
    Buffer<Scene> scene = ctx.single_buffer<Arena, Scene>();
    const phys::HullSet hulls = phys::hull_set(ctx);
    const SceneRows r = scene_rows(ctx);
    uint32_t n = 0;
    for (uint32_t g = 0; g < r.all; ++g) {
        if (!in_scene(ctx, r, g)) continue;
        if (n % lanes == lane && n < scene.capacity()) scene[n] = scene_entry(ctx, r, g, hulls);
        ++n;
    }
    if (lane == 0) scene.resize(n);
}

/// gather_scene for the observation: only in a world this step reset (its
/// init nodes ran, or its step nodes were skipped). Elsewhere the step's own
/// gather, after the physics, is the scene still: nothing the step runs after
/// it moves a body, changes a team or a piece, or creates or destroys an
/// entity (reward_teams reads; the env never destroys). The same bytes,
/// without gathering every world twice a step (two gathers were 2.2 % each
/// of OpenAI's game's GPU step at 65,536 worlds, 0.9 % together on the CPU).
ORRERY_SYSTEM void regather_scene(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    if (!(ctx.storage().meta[ctx.world()].flags & (orrery::kResetting | orrery::kSkipStep))) return;
    gather_scene(ctx, lane, lanes);
}

/// The first body of the scene a ray meets within `range`, skipping the body
/// whose index is `skip` (the caster).
struct Hit {
    float t;
    uint32_t index; ///< Entity::index of the body hit; ~0u for none
};
/// The scene as the ray loops read it: its n bodies, read only.
struct SceneView {
    const RayBody* __restrict__ bodies;
    uint32_t n;
};
ORRERY_HD inline SceneView scene_view(const Ctx& ctx) {
    Buffer<Scene> scene = ctx.single_buffer<Arena, Scene>();
    return {scene.size() ? &scene[0] : nullptr, scene.size()};
}
// On the device the ray loop is a function of its own: every caller in the
// megakernel (observe's lanes, sees, forward_object) shares one copy of the
// loop and its shape tests instead of inlining one each.
#if defined(ORRERY_ON_DEVICE)
#define ORRERY_RAY_LOOP __noinline__
#else
#define ORRERY_RAY_LOOP
#endif
// `target` (a line of sight's body; ~0u: none) lets the loop stop early:
// once the target has been tested and is not the nearest so far, it is not
// the first hit (the scene lists it once, and the nearest only moves to
// bodies tested later), so the answer `index == target` is known. Only that
// comparison is then meaningful; a caller that reads t or index passes ~0u.
//
// On the GPU a lane first keeps the bodies whose bounding sphere its ray
// meets within `range` (the test ray_body repeats against the nearest hit so
// far, so a body left out is one the walk would reject), then walks only
// those, in order: the same hit, and for a target the same answer (a target
// left out is never the nearest either way). The warp's lanes then walk
// different bodies, where the plain walk (ORRERY_RAY_CULL=0, an NVRTC define)
// runs each body's test for all of them whenever one ray meets its bound:
// gpu_hideseek (36 walls) +6.2 %, OpenAI's game +0.3 % on an H100
// (docs/perf-notes.md row 109).
// The host keeps the plain walk (its lidar and sights have walks of their
// own, observe_lidar); a host build with -DORRERY_RAY_CULL=1 runs the culled
// one through the CPU's tests and pinned hashes.
#ifndef ORRERY_RAY_CULL
#if defined(ORRERY_ON_DEVICE)
#define ORRERY_RAY_CULL 1
#else
#define ORRERY_RAY_CULL 0
#endif
#endif
/// Body i's turn in a ray's walk: tested against `best`, which it may
/// replace; false once the target is known not to be the first hit.
ORRERY_HD inline bool ray_turn(const RayBody* __restrict__ bodies, const phys::HullSet& hulls, Vec3 o, Vec3 dir,
                               uint32_t target, uint32_t i, Hit& best) {
    const uint32_t index = bodies[i].index;
    float t = ray_body(bodies[i], o, dir, best.t, hulls);
    if (t < best.t) best = {t, index};
    return !(index == target && best.index != target);
}
/// Whether body i of the scene is in a ray's culled walk: not the caster,
/// and its bounding sphere met within `range`.
ORRERY_HD inline bool in_walk(const RayBody& b, Vec3 o, Vec3 dir, float range, uint32_t skip) {
    return b.index != skip && !misses_bound(b, o, dir, range);
}
/// The culled walk: the bodies of `live` (bit i: scene body i), in order.
ORRERY_HD inline Hit walk_live(const RayBody* __restrict__ bodies, const phys::HullSet& hulls, Vec3 o, Vec3 dir,
                               float range, uint32_t target, uint64_t live) {
    Hit best{range, ~0u};
    for (; live; live &= live - 1)
        if (!ray_turn(bodies, hulls, o, dir, target, phys::lowest_bit(live), best)) break;
    return best;
}
ORRERY_HD inline ORRERY_RAY_LOOP Hit cast_in(SceneView scene, const phys::HullSet& hulls, Vec3 o, Vec3 dir, float range,
                                             uint32_t skip, uint32_t target = ~0u) {
    const RayBody* __restrict__ bodies = scene.bodies;
#if ORRERY_RAY_CULL
    if (scene.n <= 64) {
        uint64_t live = 0;
        for (uint32_t i = 0; i < scene.n; ++i) live |= uint64_t(in_walk(bodies[i], o, dir, range, skip)) << i;
        return walk_live(bodies, hulls, o, dir, range, target, live);
    }
#endif
    Hit best{range, ~0u};
    for (uint32_t i = 0; i < scene.n; ++i)
        if (bodies[i].index != skip && !ray_turn(bodies, hulls, o, dir, target, i, best)) break;
    return best;
}

// Where only some lanes of a warp cast a ray (gpu_hideseek's forward rays,
// the reward's sight rays: 2 to 9 of 32), cast_in's culling loop kept the
// other lanes idle while each caster tested every body of the scene in
// turn. cast_on_warp tests each caster's bounds on the whole warp instead, a
// body a lane, and gathers the live set by ballots; the caster then walks it
// as cast_in does. The same live set, so the same hit.
// ORRERY_RAY_WARP_CULL=0 (an NVRTC define) keeps cast_in (docs/perf-notes.md row 132).
#ifndef ORRERY_RAY_WARP_CULL
#define ORRERY_RAY_WARP_CULL 1
#endif
#if defined(__CUDA_ARCH__)
/// cast_in(scene, hulls, o, dir, range, skip, target) on the lanes whose
/// `casts` is set; {range, ~0u} on the others. Every lane of the whole warp
/// `mask` calls it (the warp's lanes are a world's team of 32).
ORRERY_HD inline Hit cast_on_warp(SceneView scene, const phys::HullSet& hulls, bool casts, Vec3 o, Vec3 dir,
                                  float range, uint32_t skip, uint32_t target, uint32_t lane, uint32_t mask) {
    if (!ORRERY_RAY_WARP_CULL || !ORRERY_RAY_CULL || scene.n > 64)
        return casts ? cast_in(scene, hulls, o, dir, range, skip, target) : Hit{range, ~0u};
    const RayBody* __restrict__ bodies = scene.bodies;
    uint64_t mine = 0;
    for (uint32_t casters = __ballot_sync(mask, casts); casters; casters &= casters - 1) {
        const int from = __ffs(int(casters)) - 1; // this round's caster: its ray to every lane
        const Vec3 ro{__shfl_sync(mask, o.x, from), __shfl_sync(mask, o.y, from), __shfl_sync(mask, o.z, from)};
        const Vec3 rd{__shfl_sync(mask, dir.x, from), __shfl_sync(mask, dir.y, from), __shfl_sync(mask, dir.z, from)};
        const float rr = __shfl_sync(mask, range, from);
        const uint32_t rs = __shfl_sync(mask, skip, from);
        uint64_t live = 0;
        for (uint32_t base = 0; base < scene.n; base += 32) {
            const uint32_t i = base + lane;
            live |= uint64_t(__ballot_sync(mask, i < scene.n && in_walk(bodies[i], ro, rd, rr, rs))) << base;
        }
        if (int(lane) == from) mine = live;
    }
    return casts ? walk_live(bodies, hulls, o, dir, range, target, mine) : Hit{range, ~0u};
}
#endif
#if !defined(ORRERY_DEVICE_CODE)
/// Whether the shape test reads a ray in b's own frame (ray_shape's local
/// origin and direction): every kind but spheres and planes.
inline bool reads_local_frame(const RayBody& b) {
    return b.body.shape.kind != phys::ShapeKind::kSphere && b.body.shape.kind != phys::ShapeKind::kPlane;
}
/// o in body b's frame, as the shape test makes it (ray_shape's local
/// origin: into_box_frame for a box, unrotate otherwise), for a caller
/// casting many rays from o.
inline Vec3 origin_in_frame(const phys::Placed& b, Vec3 o) {
    return b.shape.kind == phys::ShapeKind::kBox ? phys::detail::into_box_frame(b.q, o - b.x)
                                                 : phys::unrotate(b.q, o - b.x);
}
/// A batched box's distance d (BoxRays) taken into best in a walk's turn:
/// cast_in's branches (its bound beyond best, a distance past best being
/// ray_distance's reach, < 0 its miss, then nearer) as one condition taken
/// by selects, since a box's tests follow no pattern. The same answer for
/// every value, -0 and NaN included.
inline void take_box(Hit& best, float d, bool beyond, uint32_t index) {
    const bool take = !beyond & (d >= 0.0f) & (d < best.t);
    best.t = take ? d : best.t, best.index = take ? index : best.index;
}
/// cast_in over only the bodies ray k's list keeps (lidar_cull.hpp's
/// candidates `c`, for rays from o), in scene order: the same answer as
/// cast_in (no target), since a body left out is one ray_body rejects and
/// never moves `best`. A listed body is neither behind the ray nor aside of
/// it, so its bounding test is ray_body's `beyond` alone, on the projection
/// the lists made (the same bits). `local[i]` is o in body i's frame (made
/// once for all the rays from o); `dirs`, when given, keeps ray k's
/// direction in each body's frame for the world's other agents. A listed box
/// reads its distance from `boxes` (pair `box_pair`, counted up as listed
/// boxes go by, so every ray of the agent walks the batch in its order).
/// The bodies in `leave` are not walked: `range` is then the nearest hit
/// among them (nearest_unturned_boxes), and the answer's distance is still
/// cast_in's (its index is ~0u where one of them is nearest).
inline Hit cast_listed(SceneView scene, const phys::HullSet& hulls, Vec3 o, Vec3 dir, float range,
                       const LidarCandidates& c, uint32_t k, const Vec3* local, LocalDirs* dirs, const BoxRays& boxes,
                       uint32_t& box_pair, uint64_t leave = 0) {
    Hit best{range, ~0u};
    for (uint64_t listed = c.bodies[k] & ~leave; listed; listed &= listed - 1) {
        const uint32_t i = uint32_t(__builtin_ctzll(listed));
        const RayBody& b = scene.bodies[i];
        const bool box = b.body.shape.kind == phys::ShapeKind::kBox;
        const uint32_t p = box ? box_pair++ : 0u; // in the batch's order
        const bool batched = box && p < boxes.n;
        const bool beyond = c.proj[i][k] - b.bound > best.t; // bound_misses' beyond
        if (batched) {
            take_box(best, boxes.distance(p), beyond, b.index);
            continue;
        }
        if (beyond) continue;
        float t = phys::ray_distance(b.body, o, dir, best.t, hulls, &local[i],
                                     dirs && reads_local_frame(b) ? dirs->of(i, k, b.body.q, dir) : nullptr);
        t = t < 0.0f ? kNoHit : t; // ray_body's miss
        if (t < best.t) best = {t, b.index};
    }
    return best;
}
#endif
ORRERY_HD inline Hit cast(const Ctx& ctx, Vec3 o, Vec3 dir, float range, uint32_t skip) {
    return cast_in(scene_view(ctx), phys::hull_set(ctx), o, dir, range, skip);
}

/// The line-of-sight ray of agent `a` toward body `b` (entity indices), or
/// its answer without one: `answer` 0 (not seen: a body missing from the
/// scene, or b outside the cone), 1 (seen: b at a's centre), or -1: cast
/// (o, dir, range) skipping a, and b is seen when it is the first hit.
struct SightRay {
    int32_t answer;
    Vec3 o, dir;
    float range;
};
/// sight_ray for scene entries pa and pb (either null: missing from the scene).
ORRERY_HD inline SightRay sight_between(const Config& cfg, const RayBody* pa, const RayBody* pb) {
    SightRay no{0, {0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, 0.0f};
    if (!pa || !pb) return no;
    Vec3 d = pb->body.x - pa->body.x;
    Quat q = pa->body.q; // facing: the body's +x axis (agents turn about z only)
    float planar = phys::sqrt_of(d.x * d.x + d.y * d.y), dist = phys::length(d);
    if (cfg.gpu) { // gpu_hideseek: the body's +y, the cone in 3-D
        if (phys::dot(phys::rotate(q, {0.0f, 1.0f, 0.0f}), d) < kCosHalfCone * dist) return no;
    } else if ((q.w * q.w - q.z * q.z) * d.x + 2.0f * q.w * q.z * d.y < kCosHalfCone * planar) {
        return no;
    }
    if (dist <= 0.0f) return {1, {0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f}, 0.0f};
    return {-1, pa->body.x, d * (1.0f / dist), dist + 1.0f};
}
ORRERY_HD inline SightRay sight_ray(const Ctx& ctx, SceneView scene, uint32_t a, uint32_t b) {
    const RayBody* pa = nullptr;
    const RayBody* pb = nullptr;
    // gather_scene lists a body once (agents first), so the scan stops at both.
    for (uint32_t i = 0; i < scene.n && !(pa && pb); ++i) {
        const uint32_t index = scene.bodies[i].index;
        if (index == a) pa = &scene.bodies[i];
        if (index == b) pb = &scene.bodies[i];
    }
    return sight_between(ctx.config<Config>(), pa, pb);
}

/// Whether agent `a` sees body `b` (as of the last gather_scene): b's centre
/// within the 135 degree cone around a's facing (+x of its body, in the plane)
/// and a ray from a's centre to b's centre meets b first.
ORRERY_HD inline bool sees(const Ctx& ctx, Entity a, Entity b) {
    SceneView scene = scene_view(ctx);
    SightRay r = sight_ray(ctx, scene, a.index, b.index);
    if (r.answer >= 0) return r.answer == 1;
    return cast_in(scene, phys::hull_set(ctx), r.o, r.dir, r.range, a.index, b.index).index == b.index;
}
/// Seeker-hider pair k of the reward (k below (agents - max_hiders) x
/// max_hiders): the seeker's and the hider's agent rows.
struct SightPair {
    uint32_t seeker, hider;
};
ORRERY_HD inline SightPair sight_pair(const Config& cfg, uint32_t k) {
    return {cfg.max_hiders + k / cfg.max_hiders, k % cfg.max_hiders};
}
/// Whether pair p is asked this episode: its seeker row plays a seeker and its hider row a hider.
ORRERY_HD inline bool pair_asked(const Ctx& ctx, SightPair p) {
    return ctx.at<Agent, Team>(p.seeker).value == kSeeker && ctx.at<Agent, Team>(p.hider).value == kHider;
}

// ---------------------------------------------------------------- step

/// Whether agent `row` saw object `k` at the last observation (its own mask).
ORRERY_HD inline bool saw_object(const Ctx& ctx, uint32_t row, uint32_t k) {
    const Config& cfg = ctx.config<Config>();
    Array<Obs> obs = ctx.array_at<Obs>(archetype_id<Agent>, row);
    return k < cfg.max_boxes ? obs[cfg.off_ab + k] > 0.5f : obs[cfg.off_ar + (k - cfg.max_boxes)] > 0.5f;
}

/// Agent `row`'s action this step: seekers' are the middle bins and zeros
/// during the preparation phase (OpenAI's NoActionsInPrepPhase).
ORRERY_HD inline Action action_of(const Ctx& ctx, uint32_t row) {
    const Config& cfg = ctx.config<Config>();
    Action a = ctx.at<Agent, Action>(row);
    if (ctx.at<Agent, Team>(row).value == kSeeker && ctx.step() < cfg.prep_steps) a = {5, 5, 5, 0, 0};
    return a;
}

/// Whether agent `row` may grab or lock object `k`: seen last step, its
/// surface within kReach of the agent's centre. Returns the distance, or kNoHit.
ORRERY_HD inline float reach_of(const Ctx& ctx, uint32_t row, uint32_t k) {
    Entity o = row_entity<Object>(ctx, k);
    if (ctx.get<Piece>(o)->kind == kNoPiece || !saw_object(ctx, row, k)) return kNoHit;
    const phys::Pose& p = *ctx.get<phys::Pose>(o);
    float d = phys::distance_to_shape({*ctx.get<phys::Shape>(o), p.p, p.q}, ctx.at<Agent, phys::Pose>(row).p,
                                      phys::hull_set(ctx));
    return d <= kReach ? d : kNoHit;
}

/// Movement: world-frame force on x, y and torque about z, 18 N (N m) per bin from the middle.
ORRERY_SYSTEM void move_agents(Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        if (ctx.at<Agent, Team>(row).value == kAbsent) continue;
        Action a = action_of(ctx, row);
        phys::Force& f = ctx.at<Agent, phys::Force>(row);
        f.f += Vec3{kForcePerBin * float(a.move_x - 5), kForcePerBin * float(a.move_y - 5), 0.0f};
        f.t += Vec3{0.0f, 0.0f, kForcePerBin * float(a.turn - 5)};
    }
}

/// Agent row's reach of object k (reach_of), kNoHit for an absent agent:
/// what lock and grab read, made once for both (neither changes it: lock
/// writes only the objects' lock state and body kinds).
ORRERY_HD inline float agent_reach(const Ctx& ctx, uint32_t row, uint32_t k) {
    return ctx.at<Agent, Team>(row).value == kAbsent ? kNoHit : reach_of(ctx, row, k);
}

/// Lock, OpenAI's all_lock_team_specific: an object locks when an agent in
/// reach that saw it presses lock, unless a teammate of the locker is in reach,
/// saw it, and is not pressing; only the locking team can unlock it, the same
/// way. Locked objects are static bodies, unlocked ones dynamic. `reach` is
/// object k's column: each agent row's agent_reach of it. Objects are
/// independent (object k's call reads and writes only k's rows besides the
/// agents' actions), so they are spread over the lanes.
ORRERY_HD inline void lock_object(Ctx& ctx, uint32_t k, const float* reach) {
    const Config& cfg = ctx.config<Config>();
    Piece& piece = ctx.at<Object, Piece>(k);
    if (piece.kind == kNoPiece || (piece.kind == kRamp && !cfg.lock_ramps)) return;
    int32_t first[2] = {-1, -1};
    bool refuse[2] = {false, false};
    for (uint32_t row = 0; row < cfg.agents && row < kMaxAgents; ++row) {
        if (reach[row] == kNoHit) continue; // an absent agent's too
        const int32_t team = ctx.at<Agent, Team>(row).value;
        if (action_of(ctx, row).lock != 0) {
            if (first[team] < 0) first[team] = int32_t(row);
        } else {
            refuse[team] = true;
        }
    }
    if (piece.locked) {
        if (refuse[piece.lock_team]) piece = {piece.kind, 0, kAbsent, -1};
    } else {
        for (int32_t team = 0; team < 2; ++team)
            if (first[team] >= 0 && !refuse[team] && !piece.locked) piece = {piece.kind, 1, team, first[team]};
    }
    ctx.at<Object, phys::BodyType>(k).kind = piece.locked ? phys::BodyKind::kStatic : phys::BodyKind::kDynamic;
}

/// Whether agent row presses grab this step (and plays this episode).
ORRERY_HD inline bool wants_grab(const Ctx& ctx, uint32_t row) {
    return ctx.at<Agent, Team>(row).value != kAbsent && action_of(ctx, row).grab != 0;
}

/// Grab, held while wanted: each step an agent pressing grab holds the closest
/// object in reach that it saw (the first of equals), welded to it in their
/// relative pose of the moment it took hold (physics' weld joint, made and
/// broken inside the step). Releasing, or nothing in reach, lets go. Lane 0
/// makes and breaks the welds, in row order, from `target` (the object row
/// each agent grabs, ~0u for none).
ORRERY_HD inline void grab_objects(Ctx& ctx, const uint32_t* target) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents && row < kMaxAgents; ++row) {
        Grip& g = ctx.at<Agent, Grip>(row);
        const Entity t = target[row] == ~0u ? Entity{} : row_entity<Object>(ctx, target[row]);
        if (g.held.index == t.index && g.held.gen == t.gen) continue;
        Entity me = row_entity<Agent>(ctx, row);
        if (!g.held.is_null()) phys::remove_joints(ctx, me, g.held);
        g.held = t;
        if (!t.is_null() && !phys::weld(ctx, me, t)) g.held = Entity{};
    }
}

/// Before the physics, one node on the world's team: the reach of every
/// agent to every object, made once; then the lock (an object a lane) and
/// each agent's grab target, both from those reaches; then lane 0 makes and
/// breaks the welds (docs/perf-notes.md rows 120 and 126).
///
/// Where a world's lanes are a GPU warp, the agent-object pairs are spread
/// over the lanes (44 pairs of OpenAI's game: two rounds of 32), each lane takes
/// its object's column by shuffles, and the warp takes each agent's minimum
/// of (distance, object), the first of equals as the walk takes it. Elsewhere
/// each lane walks its objects, making each column once; a single lane (the
/// CPU, and 32 worlds a warp on the GPU) folds the grab targets into the
/// same walk, and lane 0 of several walks every object for them. The same
/// targets and locks either way, so the same bytes.
ORRERY_SYSTEM void lock_and_grab(Ctx& ctx, const Lanes& l) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t objects = cfg.max_boxes + cfg.ramps;
    const uint32_t agents = cfg.agents < kMaxAgents ? cfg.agents : kMaxAgents; // the options allow no more
    uint32_t target[kMaxAgents];
    float best[kMaxAgents];
    for (uint32_t row = 0; row < kMaxAgents; ++row) target[row] = ~0u, best[row] = kNoHit;
    float reach[kMaxAgents];
#if defined(__CUDA_ARCH__)
    if (l.count == 32 && objects <= 32 && agents * objects <= 96) {
        const uint32_t pairs = agents * objects;
        float r[3];
        // Pair p = round * 32 + lane: agent p / objects, object p % objects.
        for (uint32_t round = 0; round < 3; ++round) {
            const uint32_t p = round * 32u + l.lane;
            r[round] = p < pairs ? agent_reach(ctx, p / objects, p % objects) : kNoHit;
        }
        for (uint32_t row = 0; row < kMaxAgents; ++row) { // lane k's column: pair row * objects + k
            const uint32_t p = row * objects + (l.lane < objects ? l.lane : 0u);
            const float r0 = __shfl_sync(l.mask, r[0], p & 31u), r1 = __shfl_sync(l.mask, r[1], p & 31u),
                        r2 = __shfl_sync(l.mask, r[2], p & 31u);
            reach[row] = row < agents && l.lane < objects ? (p < 32u ? r0 : p < 64u ? r1 : r2) : kNoHit;
        }
        if (l.lane < objects) lock_object(ctx, l.lane, reach);
        for (uint32_t row = 0; row < agents; ++row) {
            float d = wants_grab(ctx, row) ? reach[row] : kNoHit;
            uint32_t k = l.lane;
            for (uint32_t off = 16; off > 0; off >>= 1) {
                const float od = __shfl_xor_sync(l.mask, d, off);
                const uint32_t ok = __shfl_xor_sync(l.mask, k, off);
                if (od < d || (od == d && ok < k)) d = od, k = ok;
            }
            target[row] = d < kNoHit ? k : ~0u;
        }
        l.sync(); // the locks written before the welds read the bodies' kinds
        if (l.lane == 0) grab_objects(ctx, target);
        return;
    }
#endif
    bool wants[kMaxAgents];
    for (uint32_t row = 0; row < kMaxAgents; ++row) wants[row] = row < agents && wants_grab(ctx, row);
    for (uint32_t k = l.lane; k < objects; k += l.count) {
        for (uint32_t row = 0; row < kMaxAgents; ++row) reach[row] = row < agents ? agent_reach(ctx, row, k) : kNoHit;
        lock_object(ctx, k, reach);
        for (uint32_t row = 0; row < agents && l.count == 1; ++row) // objects in order: the first of equals
            if (wants[row] && reach[row] < best[row]) best[row] = reach[row], target[row] = k;
    }
    l.sync();
    if (l.lane != 0) return;
    for (uint32_t k = 0; k < objects && l.count > 1; ++k)
        for (uint32_t row = 0; row < agents; ++row) {
            const float d = wants[row] ? agent_reach(ctx, row, k) : kNoHit;
            if (d < best[row]) best[row] = d, target[row] = k;
        }
    grab_objects(ctx, target);
}

/// Whether any seeker sees any hider (sees, as of the last gather_scene).
/// Where a world's lanes are a GPU warp, each seeker-hider pair (at most 9)
/// is a lane of its own and the warp votes, every lane getting the answer;
/// elsewhere lane 0 asks the pairs in order until one sees (the other lanes
/// get false: only lane 0 reads it). The same answer either way (an or).
ORRERY_HD inline bool hider_seen(const Ctx& ctx, const Lanes& l) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t pairs = (cfg.agents - cfg.max_hiders) * cfg.max_hiders;
    auto pair_sees = [&](uint32_t k) {
        const SightPair p = sight_pair(cfg, k);
        return pair_asked(ctx, p) && sees(ctx, row_entity<Agent>(ctx, p.seeker), row_entity<Agent>(ctx, p.hider));
    };
#if defined(__CUDA_ARCH__)
    if (l.count == 32 && pairs <= 32) { // sees() for the lane's pair, its ray culled on the warp
        const SceneView scene = scene_view(ctx);
        const SightPair p = sight_pair(cfg, l.lane);
        const bool asks = l.lane < pairs && pair_asked(ctx, p);
        const uint32_t a = asks ? row_entity<Agent>(ctx, p.seeker).index : ~0u,
                       b = asks ? row_entity<Agent>(ctx, p.hider).index : ~0u;
        const SightRay r = asks ? sight_ray(ctx, scene, a, b) : SightRay{0, {}, {}, 0.0f};
        const Hit hit =
            cast_on_warp(scene, phys::hull_set(ctx), asks && r.answer < 0, r.o, r.dir, r.range, a, b, l.lane, l.mask);
        return __any_sync(l.mask, asks && (r.answer >= 0 ? r.answer == 1 : hit.index == b));
    }
#endif
    bool seen = false;
    for (uint32_t k = 0; k < pairs && !seen && l.lane == 0; ++k) seen = pair_sees(k);
    return seen;
}

/// Team rewards after the physics: hiders +1 when no seeker sees a hider, -1
/// otherwise; seekers the opposite. An agent outside the 18 m square around
/// the arena gets -10 instead (gpu_hideseek: -10 more at |x| or |y| >= 18);
/// in the quadrant game every agent does while a box or ramp is outside
/// [0.1, 5.9]. Zero during the preparation phase. Ends the episode at the
/// horizon. Every lane of `l` calls it; lane 0 writes.
ORRERY_HD inline void reward_teams(Ctx& ctx, const Lanes& l) {
    const Config& cfg = ctx.config<Config>();
    const bool seen = hider_seen(ctx, l);
    if (l.lane != 0) return;
    bool prep = ctx.step() < cfg.prep_steps, object_out = false;
    for (uint32_t k = 0; k < cfg.max_boxes + cfg.ramps && cfg.quadrant; ++k) { // the quadrant game's rule
        Vec3 p = ctx.at<Object, phys::Pose>(k).p;
        bool out = p.x < 0.1f || p.x > 5.9f || p.y < 0.1f || p.y > 5.9f;
        object_out = object_out || (ctx.at<Object, Piece>(k).kind != kNoPiece && out);
    }
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        int32_t team = ctx.at<Agent, Team>(row).value;
        float r = team == kAbsent ? 0.0f : ((team == kHider) == seen ? -1.0f : 1.0f);
        Vec3 p = ctx.at<Agent, phys::Pose>(row).p;
        bool out = cfg.gpu ? phys::abs_of(p.x) >= 18.0f || phys::abs_of(p.y) >= 18.0f
                           : phys::abs_of(p.x - 3.0f) > 9.0f || phys::abs_of(p.y - 3.0f) > 9.0f;
        if (team != kAbsent && out) r = cfg.gpu ? r - 10.0f : -10.0f; // gpu_hideseek adds it
        if (team != kAbsent && object_out) r = -10.0f;
        ctx.at<Agent, Reward>(row).value = prep ? 0.0f : r;
    }
    if (ctx.step() + 1 >= cfg.horizon) ctx.truncate();
}

/// After the physics, one node on the world's team: the ray scene
/// (gather_scene on the lanes), then the rewards it sees (reward_teams).
/// One kernel where there were two, and the sight rays of the reward on
/// lanes of their own where one thread cast them in turn (docs/perf-notes.md row 119).
ORRERY_SYSTEM void gather_and_reward(Ctx& ctx, const Lanes& l) {
    gather_scene(ctx, l.lane, l.count);
    l.sync();
    reward_teams(ctx, l);
}

// ---------------------------------------------------------------- observation

/// A body's row of the observation: position, yaw (agents) or its cos and sin
/// (objects), linear velocity, turn rate.
ORRERY_HD inline uint32_t write_motion(float* out, const phys::Pose& p, const phys::Velocity& v, bool as_cos_sin) {
    uint32_t k = 0;
    out[k++] = p.p.x, out[k++] = p.p.y, out[k++] = p.p.z;
    if (as_cos_sin)
        out[k++] = p.q.w * p.q.w - p.q.z * p.q.z, out[k++] = 2.0f * p.q.w * p.q.z;
    else
        out[k++] = yaw_of(p.q);
    out[k++] = v.v.x, out[k++] = v.v.y, out[k++] = v.v.z, out[k++] = v.w.z;
    return k;
}

/// Lidar ray k's direction: world-fixed angles 2 pi k / 30; gpu_hideseek:
/// from the agent's forward (q's +y), counter-clockwise.
ORRERY_HD inline Vec3 lidar_dir(const Config& cfg, Quat q, uint32_t k) {
    phys::SinCos sc = phys::sin_cos(6.28318531f * float(k) / float(kLidarRays));
    return cfg.gpu ? phys::rotate(q, {-sc.s, sc.c, 0.0f}) : Vec3{sc.c, sc.s, 0.0f};
}

/// The entity index of the body that agent `row`'s line-of-sight entry j
/// (its mask slots in order: the other agents', the boxes', the ramps')
/// looks at, or ~0u for an empty slot (the entry reads 0).
ORRERY_HD inline uint32_t sight_target(const Ctx& ctx, uint32_t row, uint32_t j) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t agent_slots = cfg.off_ab - cfg.off_aa, box_slots = cfg.off_ar - cfg.off_ab;
    if (j < agent_slots) { // the other agents in row order, skipping this one
        uint32_t other = j < row ? j : j + 1;
        if (other >= cfg.agents || ctx.at<Agent, Team>(other).value == kAbsent) return ~0u;
        return row_entity<Agent>(ctx, other).index;
    }
    j -= agent_slots;
    uint32_t obj = j < box_slots ? j : cfg.max_boxes + (j - box_slots);
    if ((j < box_slots && j >= cfg.max_boxes) || ctx.at<Object, Piece>(obj).kind == kNoPiece) return ~0u;
    return row_entity<Object>(ctx, obj).index;
}

/// Entry `k` of agent `row`'s ray block (Config's off_lidar to off_ar +
/// ramps: lidar, then the masks of the other agents' slots, boxes' slots and
/// ramps), written by itself: one lidar ray or one line of sight, 0 for an
/// absent agent or an empty slot. Both variants: gpu_hideseek's lidar is
/// egocentric and reads 0 without a hit.
ORRERY_HD inline void observe_ray(const Ctx& ctx, SceneView scene, const phys::HullSet& hulls, uint32_t row,
                                  uint32_t k) {
    const Config& cfg = ctx.config<Config>();
    float& out = ctx.array_at<Obs>(archetype_id<Agent>, row)[cfg.off_lidar + k];
    out = 0.0f;
    if (ctx.at<Agent, Team>(row).value == kAbsent) return;
    const phys::Pose& pose = ctx.at<Agent, phys::Pose>(row);
    const uint32_t me = row_entity<Agent>(ctx, row).index;
    Vec3 o = pose.p, dir;
    float range;
    uint32_t target = ~0u; // a line of sight's body; ~0u: a lidar ray
    if (k < kLidarRays) {
        dir = lidar_dir(cfg, pose.q, k);
        range = cfg.gpu ? kGpuLidarRange : kLidarRange;
    } else {
        target = sight_target(ctx, row, k - kLidarRays);
        if (target == ~0u) return;
        SightRay s = sight_ray(ctx, scene, me, target);
        if (s.answer >= 0) {
            out = s.answer == 1 ? 1.0f : 0.0f;
            return;
        }
        o = s.o, dir = s.dir, range = s.range;
    }
    Hit h = cast_in(scene, hulls, o, dir, range, me, target); // one call for both kinds: lanes meet in it
    if (target != ~0u)
        out = h.index == target ? 1.0f : 0.0f;
    else
        out = cfg.gpu && h.index == ~0u ? 0.0f : h.t;
}

#if !defined(ORRERY_DEVICE_CODE)
static_assert(kLidarRays == kFanRays);

/// Agent `row`'s lidar entries, as observe_ray writes them (the same bytes),
/// each ray testing only the bodies lidar_candidates leaves it: the CPU's
/// one lane per world casts an agent's rays in a row, so it can afford the
/// per-agent lists that the GPU's one ray per lane cannot.
inline void observe_lidar(const Ctx& ctx, SceneView scene, const phys::HullSet& hulls, uint32_t row, LocalDirs& dirs) {
    const Config& cfg = ctx.config<Config>();
    float* out = &ctx.array_at<Obs>(archetype_id<Agent>, row)[cfg.off_lidar];
    if (ctx.at<Agent, Team>(row).value == kAbsent) {
        for (uint32_t k = 0; k < kLidarRays; ++k) out[k] = 0.0f;
        return;
    }
    const phys::Pose& pose = ctx.at<Agent, phys::Pose>(row);
    struct Fixed { // the openai variant's rays: the same for every agent, made once
        Vec3 dir[kLidarRays];
    };
    static const Fixed world_fixed = [] {
        Fixed f{};
        for (uint32_t k = 0; k < kLidarRays; ++k) f.dir[k] = lidar_dir(Config{}, Quat{1.0f, 0.0f, 0.0f, 0.0f}, k);
        return f;
    }();
    Fixed turned;
    if (cfg.gpu)
        for (uint32_t k = 0; k < kLidarRays; ++k) turned.dir[k] = lidar_dir(cfg, pose.q, k);
    const Vec3(&dir)[kLidarRays] = cfg.gpu ? turned.dir : world_fixed.dir;
    const uint32_t me = row_entity<Agent>(ctx, row).index;
    const float range = cfg.gpu ? kGpuLidarRange : kLidarRange;
    const LidarCandidates c = lidar_candidates(scene.bodies, scene.n, pose.p, me, dir);
    // The world-fixed rays against the unturned boxes (most listed pairs are
    // walls) with no list walk: each ray's nearest of them first.
    float first[kLidarRays];
    const uint64_t fanned =
        cfg.gpu ? 0 : nearest_unturned_boxes(scene.bodies, scene.n, pose.p, me, dir, c, range, first);
    // The agent's centre in each listed body's frame, once for all its rays
    // (ray_shape's own expression: the same bits as made per ray).
    Vec3 local[64];
    BoxRays boxes; // the other listed (ray, box) pairs' exact tests, made together
    if (c.ok) {
        uint64_t any = 0;
        for (uint32_t k = 0; k < kLidarRays; ++k) any |= c.bodies[k] & ~fanned;
        for (; any; any &= any - 1) {
            const uint32_t i = uint32_t(__builtin_ctzll(any));
            const phys::Placed& b = scene.bodies[i].body;
            if (reads_local_frame(scene.bodies[i])) local[i] = origin_in_frame(b, pose.p);
        }
        for (uint32_t k = 0; k < kLidarRays; ++k)
            for (uint64_t listed = c.bodies[k] & ~fanned; listed; listed &= listed - 1) {
                const uint32_t i = uint32_t(__builtin_ctzll(listed));
                const phys::Placed& b = scene.bodies[i].body;
                if (b.shape.kind != phys::ShapeKind::kBox) continue;
                // ray_shape's local direction: the same bits made here, or kept from another agent
                const Vec3 d = cfg.gpu || phys::detail::unturned(b.q) ? phys::detail::into_box_frame(b.q, dir[k])
                                                                      : *dirs.of(i, k, b.q, dir[k]);
                boxes.push(local[i], d, b.shape.dims);
            }
        boxes.solve();
    }
    uint32_t box_pair = 0;
    for (uint32_t k = 0; k < kLidarRays; ++k) {
        Hit h = c.ok ? cast_listed(scene, hulls, pose.p, dir[k], fanned ? first[k] : range, c, k, local,
                                   cfg.gpu ? nullptr : &dirs, boxes, box_pair, fanned)
                     : cast_in(scene, hulls, pose.p, dir[k], range, me);
        out[k] = cfg.gpu && h.index == ~0u ? 0.0f : h.t;
    }
}

/// Agent `row`'s line-of-sight entries, as observe_ray writes them (the same
/// bytes). Its rays all start at its centre, so each body's offset from it
/// (and its frame's view of it) is made once for all of them, the bounding
/// tests of a ray run over every body in one loop (bound_misses' arithmetic,
/// which the compiler runs four bodies a vector instruction), the listed
/// (ray, box) pairs' exact tests four to a vector (BoxRays, as the lidar's),
/// and cast_in's walk visits only the bodies that pass, in scene order,
/// stopping where it would (the target met and not first).
inline void observe_sights(const Ctx& ctx, SceneView scene, const phys::HullSet& hulls, uint32_t row) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t per = cfg.off_ar + cfg.ramps - cfg.off_lidar, n = scene.n;
    const uint32_t me = row_entity<Agent>(ctx, row).index;
    const RayBody* bodies = scene.bodies;
    const RayBody* pa = nullptr;
    for (uint32_t i = 0; i < n && !pa; ++i)
        if (bodies[i].index == me) pa = &bodies[i];
    constexpr uint32_t kMaxSights = 32;
    if (ctx.at<Agent, Team>(row).value == kAbsent || !pa || n > 64 || per - kLidarRays > kMaxSights) {
        for (uint32_t k = kLidarRays; k < per; ++k) observe_ray(ctx, scene, hulls, row, k);
        return;
    }
    float* out = &ctx.array_at<Obs>(archetype_id<Agent>, row)[cfg.off_lidar];
    const Vec3 o = pa->body.x;
    float mx[64], my[64], mz[64], mm[64], bound[64];
    uint64_t box_bodies = 0;
    for (uint32_t i = 0; i < n; ++i) { // misses_bound's m and dot(m, m)
        const Vec3 m = bodies[i].body.x - o;
        mx[i] = m.x, my[i] = m.y, mz[i] = m.z, mm[i] = phys::dot(m, m), bound[i] = bodies[i].bound;
        if (bodies[i].body.shape.kind == phys::ShapeKind::kBox) box_bodies |= uint64_t(1) << i;
    }
    const uint64_t others = ~(uint64_t(1) << (pa - bodies)); // cast_in skips the caster (listed once)
    Vec3 local[64]; // o in body i's frame (ray_shape's own expression), made when first needed
    uint64_t made = 0;
    auto local_of = [&](uint32_t i) {
        if (!(made >> i & 1u)) local[i] = origin_in_frame(bodies[i].body, o), made |= uint64_t(1) << i;
        return &local[i];
    };
    // The rays to cast: each one's target, direction, range, bodies listed
    // and their projections, and its first pair in the box batch.
    struct Ray {
        uint32_t k, target, first_box;
        uint64_t listed;
        Vec3 dir;
        float range;
    } rays[kMaxSights];
    float proj[kMaxSights][64];
    uint32_t cast = 0;
    BoxRays boxes;
    for (uint32_t k = kLidarRays; k < per; ++k) {
        const uint32_t target = sight_target(ctx, row, k - kLidarRays);
        out[k] = 0.0f;
        if (target == ~0u) continue;
        const RayBody* pb = nullptr;
        for (uint32_t i = 0; i < n && !pb; ++i)
            if (bodies[i].index == target) pb = &bodies[i];
        const SightRay s = sight_between(cfg, pa, pb);
        if (s.answer >= 0) {
            out[k] = s.answer == 1 ? 1.0f : 0.0f;
            continue;
        }
        Ray& r = rays[cast];
        float* pr = proj[cast++];
        r = {k, target, boxes.n, 0, s.dir, s.range};
        uint32_t keep[64];
        for (uint32_t i = 0; i < n; ++i) { // phys::dot(m, dir), term by term; the first hit's bound is the range
            pr[i] = mx[i] * r.dir.x + my[i] * r.dir.y + mz[i] * r.dir.z;
            keep[i] = bound_misses(pr[i], mm[i], bound[i], s.range) ? 0u : 1u;
        }
        for (uint32_t i = 0; i < n; ++i) r.listed |= uint64_t(keep[i]) << i;
        r.listed &= others;
        for (uint64_t listed = r.listed & box_bodies; listed; listed &= listed - 1) {
            const uint32_t i = uint32_t(__builtin_ctzll(listed));
            const phys::Placed& b = bodies[i].body;
            boxes.push(*local_of(i), phys::detail::into_box_frame(b.q, r.dir), b.shape.dims);
        }
    }
    boxes.solve();
    for (uint32_t c = 0; c < cast; ++c) {
        const Ray& r = rays[c];
        const float* pr = proj[c];
        Hit best{r.range, ~0u};
        uint32_t box_pair = r.first_box; // in the batch's order
        for (uint64_t listed = r.listed; listed; listed &= listed - 1) {
            const uint32_t i = uint32_t(__builtin_ctzll(listed));
            const RayBody& b = bodies[i];
            const bool beyond = pr[i] - b.bound > best.t; // bound_misses' beyond, against the nearest hit so far
            const bool box = box_bodies >> i & 1u;
            const uint32_t p = box ? box_pair++ : 0u;
            if (box && p < boxes.n) {
                take_box(best, boxes.distance(p), beyond, b.index);
            } else if (!beyond) {
                float t =
                    phys::ray_distance(b.body, o, r.dir, best.t, hulls, reads_local_frame(b) ? local_of(i) : nullptr);
                t = t < 0.0f ? kNoHit : t; // ray_body's miss
                if (t < best.t) best = {t, b.index};
            }
            if (b.index == r.target && best.index != r.target) break;
        }
        out[r.k] = best.index == r.target ? 1.0f : 0.0f;
    }
}
#endif

/// An observation node's work spread over a world's lanes: every ray entry
/// of every agent (observe_ray), then each agent's rest (its entries before
/// off_lidar and any after the masks) in `pieces` pieces, `rest(ctx, row,
/// piece)` for piece 0..pieces-1. Each item writes only its own entries, so
/// any lane count, and any order of the items, gives the same bytes. On the
/// CPU with one lane, each agent's lidar goes through observe_lidar instead
/// (the same bytes).
///
/// The items' order: all the agents' lidar rays, then all their lines of
/// sight, then the rests' pieces, agent-major. A round of the lanes then
/// holds rays of one kind (OpenAI's 4 agents: 4 rounds of a warp's 32 lanes
/// for the rays where agent by agent took 6, each as slow as its slowest
/// ray; docs/perf-notes.md row 112), and each piece is an item of its own
/// (60 one-slot items, about 2 rounds, where one lane wrote a whole rest of
/// 15 slots with 4 of the 32 lanes active; row 115). The A/B defines of
/// those rows (ORRERY_OBS_LIDAR_FIRST, ORRERY_OBS_REST_PIECES,
/// ORRERY_OBS_CLEAR_ALL) were removed once settled.
template <class Rest>
ORRERY_HD inline void observe_lanes(Ctx& ctx, uint32_t lane, uint32_t lanes, uint32_t pieces, Rest rest) {
    const Config& cfg = ctx.config<Config>();
    const uint32_t per = cfg.off_ar + cfg.ramps - cfg.off_lidar, rays = cfg.agents * per;
    const SceneView scene = scene_view(ctx);
    const phys::HullSet hulls = phys::hull_set(ctx);
#if !defined(ORRERY_DEVICE_CODE)
    if (lanes == 1) {
        LocalDirs dirs; // the world-fixed rays in the bodies' frames, shared by the agents
        for (uint32_t row = 0; row < cfg.agents; ++row) {
            if (!live_row<Agent>(ctx, row)) continue;
            observe_lidar(ctx, scene, hulls, row, dirs);
            observe_sights(ctx, scene, hulls, row);
        }
        for (uint32_t row = 0; row < cfg.agents; ++row)
            if (live_row<Agent>(ctx, row))
                for (uint32_t piece = 0; piece < pieces; ++piece) rest(ctx, row, piece);
        return;
    }
#endif
    const uint32_t rest_items = cfg.agents * pieces;
    phys::for_lane_share(0, rays + rest_items, lane, lanes, [&](uint32_t i) {
        // Every agent's lidar rays first, then every agent's lines of sight:
        // a round of the lanes then holds rays of one kind, and the sights
        // (shorter, many answered without a walk) no longer share each round
        // with full-range lidar walks. The rests agent-major: an agent's
        // slots lie side by side in its row, so a round's lanes write neighbours.
        const uint32_t lidar = cfg.agents * kLidarRays, sights = per - kLidarRays;
        uint32_t row, k = ~0u, piece = 0;
        if (i < lidar) {
            row = i / kLidarRays, k = i - row * kLidarRays;
        } else if (i < rays) {
            const uint32_t j = i - lidar;
            row = j / sights, k = kLidarRays + (j - row * sights);
        } else {
            row = (i - rays) / pieces, piece = (i - rays) - row * pieces;
        }
        if (!live_row<Agent>(ctx, row)) return;
        if (k != ~0u)
            observe_ray(ctx, scene, hulls, row, k);
        else
            rest(ctx, row, piece);
    });
}

/// Zeroes n floats from p (an empty observation slot); a plain loop, which
/// NVRTC keeps small where fill_bytes' alignment branches grew the kernel.
ORRERY_HD inline void clear_floats(float* p, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) p[i] = 0.0f;
}

/// The number of pieces of an OpenAI agent's rest (observe_piece): self,
/// each other agent's slot, each box slot, each ramp.
ORRERY_HD inline uint32_t rest_pieces(const Config& cfg) { return cfg.agents + cfg.max_boxes + cfg.ramps; }

/// Piece `piece` of agent `row`'s observation (OpenAI's policy inputs,
/// flattened) but for its ray block: 0 self, 1..agents-1 the other agents'
/// slots, then the box slots and the ramps. The pieces cover entries 0 to
/// off_lidar, each its own. Absent rows and slots are zeros. A present
/// agent's or object's slot is written whole (kSelf, kPerAgent, kPerObject
/// entries), so only empty slots are cleared (row 114).
ORRERY_HD inline void observe_piece(const Ctx& ctx, uint32_t row, uint32_t piece) {
    const Config& cfg = ctx.config<Config>();
    float* o = &ctx.array_at<Obs>(archetype_id<Agent>, row)[0];
    const Team& team = ctx.at<Agent, Team>(row);
    if (piece < cfg.agents) { // self, or another agent's slot
        const uint32_t other = piece == 0 ? row : (piece - 1 < row ? piece - 1 : piece);
        float* a = piece == 0 ? o : o + cfg.off_agents + kPerAgent * (piece - 1);
        const int32_t t = ctx.at<Agent, Team>(other).value;
        if (team.value == kAbsent || t == kAbsent) return clear_floats(a, piece == 0 ? kSelf : kPerAgent);
        uint32_t n = write_motion(a, ctx.at<Agent, phys::Pose>(other), ctx.at<Agent, phys::Velocity>(other), false);
        a[n++] = t == kHider ? 1.0f : 0.0f;
        a[n++] = phys::min_f(1.0f, float(ctx.step()) / float(cfg.prep_steps)); // the preparation's progress
        return;
    }
    const uint32_t obj = piece - cfg.agents;
    const bool ramp = obj >= cfg.max_boxes;
    float* b = o + (ramp ? cfg.off_ramps + kPerObject * (obj - cfg.max_boxes) : cfg.off_boxes + kPerObject * obj);
    const Piece& at_piece = ctx.at<Object, Piece>(obj);
    if (team.value == kAbsent || at_piece.kind == kNoPiece) return clear_floats(b, kPerObject);
    phys::Pose at = ctx.at<Object, phys::Pose>(obj);
    if (ramp) at.q = ramp_frame(ctx, at.q); // its yaw, not its principal axes' tilt
    uint32_t n = write_motion(b, at, ctx.at<Object, phys::Velocity>(obj), true);
    Vec3 size = ramp ? Vec3{0, 0, 0} : ctx.at<Object, phys::Shape>(obj).dims * 2.0f;
    b[n++] = size.x, b[n++] = size.y, b[n++] = size.z;
    b[n++] = at_piece.locked && at_piece.locker == int32_t(row) ? 1.0f : 0.0f;
    b[n++] = at_piece.locked && at_piece.lock_team == team.value ? 1.0f : 0.0f;
    b[n++] = at_piece.locked ? 1.0f : 0.0f;
}

/// The observation (OpenAI's policy inputs, flattened, one row per agent):
/// self, the other agents, boxes, ramps, lidar, and the visibility masks,
/// every ray of every agent and every piece of its rest spread over the
/// world's lanes.
ORRERY_SYSTEM void observe(Ctx& ctx, uint32_t lane, uint32_t lanes) {
    observe_lanes(ctx, lane, lanes, rest_pieces(ctx.config<Config>()),
                  [](const Ctx& c, uint32_t row, uint32_t piece) { observe_piece(c, row, piece); });
}

} // namespace hide_and_seek

#include "envs/hide_and_seek/gpu_hideseek.hpp"
