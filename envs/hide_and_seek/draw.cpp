// Hide-and-seek's game overlays for the 3-D view, declared in its draw table
// (render/ has no code of this env): each agent's vision cone and whom it
// sees, its lidar rays to their hits, grabbed and locked objects marked in
// the team's colour, and the preparation phase as a status line and a tint.
// Each reads the viewed world's copy: the observation, where the policy's
// inputs are the thing to show, and the bodies' poses otherwise.

#include <string>

#include "envs/hide_and_seek/hide_and_seek.hpp"

#include "engine/env.hpp"

namespace hide_and_seek {
namespace {

using orrery::Rgba;
using orrery::Segment;

constexpr Rgba kCone[2] = {{20, 100, 255, 255}, {255, 40, 20, 255}}; // hiders, seekers: their colour, deeper
constexpr Rgba kTeam[2] = {{70, 130, 230, 255}, {220, 70, 60, 255}};
constexpr Rgba kSight{250, 250, 250, 255};
constexpr Rgba kRayHit{255, 220, 80, 255}, kRayMiss{120, 120, 130, 255}, kHitMark{255, 120, 40, 255};
constexpr float kConeLength = 1.0f; ///< metres drawn of the cone's edges (vision itself has no range)
constexpr uint32_t kArcPieces = 9;

Segment seg(Vec3 a, Vec3 b, Rgba c) { return {{a.x, a.y, a.z}, {b.x, b.y, b.z}, c}; }

/// Unit vector in the plane at angle `a` (radians) from +x.
Vec3 planar(float a) {
    phys::SinCos sc = phys::sin_cos(a);
    return {sc.c, sc.s, 0.0f};
}

/// The height of a body's highest point: where its marks sit.
float top_of(const Ctx& ctx, Entity e) {
    const phys::Pose& p = *ctx.get<phys::Pose>(e);
    const phys::Shape& s = *ctx.get<phys::Shape>(e);
    if (s.kind == phys::ShapeKind::kSphere) return p.p.z + s.dims.x;
    phys::HullSet hulls = phys::hull_set(ctx);
    if (s.kind != phys::ShapeKind::kBox && !phys::hull_valid(hulls, s)) return p.p.z;
    phys::Convex c = phys::convex_of(s, hulls);
    phys::Pose at = c.box ? p : phys::hull_pose(c.info, p.p, p.q);
    float top = -1e30f;
    for (uint32_t i = 0; i < c.num_vertices(); ++i) top = phys::max_f(top, (at.p + phys::rotate(at.q, c.vertex(i))).z);
    return top;
}

/// A square of half side `h` around (x, y) at height z, its diagonals crossed
/// when `crossed` (the lock mark).
void square(std::vector<Segment>& out, Vec3 c, float h, Rgba col, bool crossed) {
    Vec3 k[4] = {{c.x - h, c.y - h, c.z}, {c.x + h, c.y - h, c.z}, {c.x + h, c.y + h, c.z}, {c.x - h, c.y + h, c.z}};
    for (uint32_t i = 0; i < 4; ++i) out.push_back(seg(k[i], k[(i + 1) % 4], col));
    if (crossed) out.push_back(seg(k[0], k[2], col)), out.push_back(seg(k[1], k[3], col));
}

/// Each present agent's 135 degree cone around its facing (its body's +x;
/// gpu_hideseek's +y), and a white line to each agent its observation says it sees.
void vision(const Ctx& ctx, std::vector<Segment>& out) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        int32_t team = ctx.at<Agent, Team>(row).value;
        if (team == kAbsent) continue;
        const phys::Pose& p = ctx.at<Agent, phys::Pose>(row);
        float yaw = yaw_of(p.q) + (cfg.gpu ? 1.57079633f : 0.0f), half = 1.17809725f; // 3 pi / 8
        float length = cfg.gpu ? 4.0f * kConeLength : kConeLength;                    // its agents are 2 m boxes
        Vec3 o = p.p, prev{};
        for (uint32_t i = 0; i <= kArcPieces; ++i) {
            Vec3 at = o + planar(yaw - half + 2.0f * half * float(i) / float(kArcPieces)) * length;
            if (i == 0 || i == kArcPieces) out.push_back(seg(o, at, kCone[team]));
            if (i > 0) out.push_back(seg(prev, at, kCone[team]));
            prev = at;
        }
        orrery::Array<Obs> obs = ctx.array_at<Obs>(orrery::archetype_id<Agent>, row);
        for (uint32_t other = 0, slot = 0; other < cfg.agents; ++other) {
            if (other == row) continue;
            if (obs[cfg.off_aa + slot++] > 0.5f) out.push_back(seg(o, ctx.at<Agent, phys::Pose>(other).p, kSight));
        }
    }
}

/// Each present agent's 30 lidar rays at world-fixed angles (gpu_hideseek:
/// from its forward), to the distance its observation reads: yellow with an
/// orange cross at a hit, grey to the 6 m range where nothing was met
/// (gpu_hideseek, which reads 0 then: 10 m of its 200).
void lidar(const Ctx& ctx, std::vector<Segment>& out) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        if (ctx.at<Agent, Team>(row).value == kAbsent) continue;
        const phys::Pose& p = ctx.at<Agent, phys::Pose>(row);
        Vec3 o = p.p;
        float first = cfg.gpu ? yaw_of(p.q) + 1.57079633f : 0.0f;
        orrery::Array<Obs> obs = ctx.array_at<Obs>(orrery::archetype_id<Agent>, row);
        for (uint32_t r = 0; r < kLidarRays; ++r) {
            Vec3 dir = planar(first + 6.28318531f * float(r) / float(kLidarRays));
            float t = obs[cfg.off_lidar + r];
            bool hit = cfg.gpu ? t > 0.0f : t < kLidarRange;
            Vec3 end = o + dir * (hit || !cfg.gpu ? t : 10.0f);
            out.push_back(seg(o, end, hit ? kRayHit : kRayMiss));
            if (!hit) continue;
            const float c = 0.04f;
            out.push_back(seg(end - Vec3{0, 0, c}, end + Vec3{0, 0, c}, kHitMark));
            out.push_back(seg(end - Vec3{-dir.y, dir.x, 0} * c, end + Vec3{-dir.y, dir.x, 0} * c, kHitMark));
        }
    }
}

/// A grabbed object: a line from its holder to it and a square over it, in the
/// holder's team colour. A locked object (drawn grey): a crossed square on its
/// top in the locking team's colour.
void holds(const Ctx& ctx, std::vector<Segment>& out) {
    const Config& cfg = ctx.config<Config>();
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        int32_t team = ctx.at<Agent, Team>(row).value;
        Entity held = ctx.at<Agent, Grip>(row).held;
        const phys::Pose* h = held.is_null() ? nullptr : ctx.get<phys::Pose>(held);
        if (team == kAbsent || !h) continue;
        out.push_back(seg(ctx.at<Agent, phys::Pose>(row).p, h->p, kTeam[team]));
        square(out, {h->p.x, h->p.y, top_of(ctx, held) + 0.05f}, 0.18f, kTeam[team], false);
    }
    for (uint32_t k = 0; k < cfg.max_boxes + cfg.ramps; ++k) {
        const Piece& piece = ctx.at<Object, Piece>(k);
        if (piece.kind == kNoPiece || !piece.locked || piece.lock_team < 0 || piece.lock_team > 1) continue;
        Entity e = row_entity<Object>(ctx, k);
        Vec3 p = ctx.get<phys::Pose>(e)->p;
        square(out, {p.x, p.y, top_of(ctx, e) + 0.01f}, 0.1f, kTeam[piece.lock_team], true);
    }
}

} // namespace

/// Adds hide-and-seek's overlays, its preparation-phase status and its keys
/// to `draw` (after the bodies, which hide_and_seek.cpp declares).
void add_game_overlays(orrery::DrawSpec& draw) {
    draw.overlay("vision", vision, true);
    draw.overlay("lidar", lidar);
    draw.overlay("grabs and locks", holds, true);
    // The preparation phase: seekers' actions are ignored while the next step is one of its first prep_steps.
    draw.status(
        [](const Ctx& ctx) {
            uint32_t prep = ctx.config<Config>().prep_steps, step = ctx.step(), left = prep - step;
            if (step >= prep) return std::string();
            return "seekers frozen for " + std::to_string(left) + (left == 1 ? " more step" : " more steps");
        },
        {40, 50, 90, 120});
    // Playing an agent from the viewer: held keys set parts of its action row
    // (move x, move y, turn: bins 0..10, 5 still; grab, lock: 0 released).
    // OpenAI's moves are in the world frame (up is +y), gpu_hideseek's in the
    // agent's (up is forward).
    using orrery::Key;
    draw.key_rest = {5, 5, 5, 0, 0};
    draw.key_part_names = {"move_x", "move_y", "turn", "grab", "lock"};
    draw.key_parts = {{Key::kRight, 0, 10},    {Key::kLeft, 0, 0},      {Key::kUp, 1, 10},      {Key::kDown, 1, 0},
                      {Key::kTurnLeft, 2, 10}, {Key::kTurnRight, 2, 0}, {Key::kInteract, 3, 1}, {Key::kSecond, 4, 1}};
}

} // namespace hide_and_seek
