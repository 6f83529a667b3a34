// hide_and_seek::validate_world: the env's own fields of one world, checked as
// untrusted input (a snapshot or checkpoint) against what spawn and the step
// systems can make. The systems read agents and objects by row and index
// small arrays by team (lock_objects' first[team], refuse[lock_team]), so a
// dead row or an unknown team would be a null read or a write out of bounds.

#include "envs/hide_and_seek/validate.hpp"

#include <cmath>
#include <string>

#include "engine/error.hpp"
#include "envs/hide_and_seek/hide_and_seek.hpp"

namespace hide_and_seek {
namespace {

[[noreturn]] void bad(const std::string& where, const std::string& field, const std::string& value,
                      const std::string& want) {
    throw orrery::Error(where + ": " + field + " = " + value + "; expected " + want);
}
std::string row_of(const char* arch, uint32_t row) {
    return std::string("archetype '") + arch + "' row " + std::to_string(row);
}
std::string range(uint32_t lo, uint32_t hi) { return std::to_string(lo) + ".." + std::to_string(hi); }

template <class A> void check_rows_alive(const Ctx& ctx, uint32_t rows, const char* what) {
    const ArchetypeTable& t = ctx.storage().tables[archetype_id<A>];
    for (uint32_t row = 0; row < rows; ++row)
        if (!t.alive[ctx.slot(t, row)])
            bad(row_of(A::kName, row), "alive", "0", "1: spawn makes all " + std::to_string(rows) + " " + what);
}

void check_round(const Config& cfg, const Round& r) {
    const std::string where = "archetype 'Arena' row 0";
    if (r.hiders < cfg.min_hiders || r.hiders > cfg.max_hiders)
        bad(where, "Round.hiders", std::to_string(r.hiders), range(cfg.min_hiders, cfg.max_hiders));
    if (r.seekers < cfg.min_seekers || r.seekers > cfg.max_seekers)
        bad(where, "Round.seekers", std::to_string(r.seekers), range(cfg.min_seekers, cfg.max_seekers));
    if (r.boxes < cfg.min_boxes || r.boxes > cfg.max_boxes)
        bad(where, "Round.boxes", std::to_string(r.boxes), range(cfg.min_boxes, cfg.max_boxes));
    if (cfg.quadrant ? r.rooms != 2 : (r.rooms < 1 || r.rooms > cfg.max_rooms))
        bad(where, "Round.rooms", std::to_string(r.rooms),
            cfg.quadrant ? "2 (the quadrant game)" : range(1, cfg.max_rooms));
    if (r.outer_walls > 1) bad(where, "Round.outer_walls", std::to_string(r.outer_walls), "0 or 1");
}

/// What a grip may hold: nothing, or a present object (grab only takes those).
void check_grip(const Ctx& ctx, const std::string& where, Entity held, bool absent) {
    if (held.is_null() && held.index == 0) return;
    const Config& cfg = ctx.config<Config>();
    bool object = !held.is_null() && held.archetype() == archetype_id<Object>;
    bool present =
        object && ctx.valid(held) && held.row() < cfg.max_boxes + cfg.ramps && ctx.get<Piece>(held)->kind != kNoPiece;
    if (!present || absent)
        bad(where, "Grip.held",
            std::string("{index ") + std::to_string(held.index) + ", gen " + std::to_string(held.gen) + "}",
            absent ? "the null entity: the agent is absent this episode"
                   : "the null entity or a live Object row holding a present box or ramp");
}

void check_agents(const Ctx& ctx, const Config& cfg, const Round& r) {
    for (uint32_t row = 0; row < cfg.agents; ++row) {
        const std::string where = row_of("Agent", row);
        const bool hider = row < cfg.max_hiders;
        const uint32_t k = hider ? row : row - cfg.max_hiders, n = hider ? r.hiders : r.seekers;
        const int32_t want = k < n ? (hider ? kHider : kSeeker) : kAbsent, team = ctx.at<Agent, Team>(row).value;
        if (team != want)
            bad(where, "Team", std::to_string(team),
                std::to_string(want) + " (rows: " + std::to_string(cfg.max_hiders) +
                    " hider rows, then seekers; the round's first " + std::to_string(n) +
                    " of them play, 0 hider, 1 seeker, -1 absent)");
        const Action& a = ctx.at<Agent, Action>(row);
        const int32_t bins[5] = {a.move_x, a.move_y, a.turn, a.grab, a.lock};
        const char* names[5] = {"move_x", "move_y", "turn", "grab", "lock"};
        for (int i = 0; i < 5; ++i)
            if (bins[i] < 0 || bins[i] > 10)
                bad(where, std::string("Action.") + names[i], std::to_string(bins[i]), "0..10");
        const float reward = ctx.at<Agent, Reward>(row).value;
        if (!std::isfinite(reward)) bad(where, "Reward", std::to_string(reward), "a finite number");
        Array<Obs> obs = ctx.array_at<Obs>(archetype_id<Agent>, row);
        for (uint32_t i = 0; i < obs.size; ++i)
            if (!std::isfinite(obs[i]))
                bad(where, "Obs[" + std::to_string(i) + "]", std::to_string(obs[i]), "a finite number");
        check_grip(ctx, where, ctx.at<Agent, Grip>(row).held, want == kAbsent);
    }
}

void check_pieces(const Ctx& ctx, const Config& cfg, const Round& r) {
    for (uint32_t row = 0; row < cfg.max_boxes + cfg.ramps; ++row) {
        const std::string where = row_of("Object", row);
        const Piece& p = ctx.at<Object, Piece>(row);
        const bool ramp = row >= cfg.max_boxes, present = ramp || row < r.boxes;
        bool kind_ok =
            ramp ? p.kind == kRamp
                 : (present ? p.kind == kCube || (cfg.elongated && p.kind == kElongated) : p.kind == kNoPiece);
        if (!kind_ok)
            bad(where, "Piece.kind", std::to_string(p.kind),
                ramp ? "3 (ramp): rows after the boxes are ramps"
                     : (present ? (cfg.elongated ? "1 (cube) or 2 (elongated): the round's boxes come first"
                                                 : "1 (cube): elongated=0")
                                : "0 (no piece): the round has " + std::to_string(r.boxes) + " boxes"));
        if (p.locked != 0 && p.locked != 1) bad(where, "Piece.locked", std::to_string(p.locked), "0 or 1");
        if (!p.locked) {
            if (p.lock_team != kAbsent || p.locker != -1)
                bad(where, "Piece (lock_team, locker)",
                    std::string("(") + std::to_string(p.lock_team) + ", " + std::to_string(p.locker) + ")",
                    "(-1, -1) while unlocked");
            continue;
        }
        if (p.kind == kNoPiece || (ramp && !cfg.lock_ramps))
            bad(where, "Piece.locked", "1", p.kind == kNoPiece ? "0: no piece to lock" : "0: lock_ramps=0");
        if (p.locker < 0 || uint32_t(p.locker) >= cfg.agents)
            bad(where, "Piece.locker", std::to_string(p.locker), "an agent row 0.." + std::to_string(cfg.agents - 1));
        const int32_t team = ctx.at<Agent, Team>(uint32_t(p.locker)).value;
        if ((p.lock_team != kHider && p.lock_team != kSeeker) || p.lock_team != team)
            bad(where, "Piece.lock_team", std::to_string(p.lock_team),
                "the locker's team " + std::to_string(team) + " (0 hider, 1 seeker)");
    }
}

} // namespace

void validate_world(const Ctx& ctx) {
    const Config& cfg = ctx.config<Config>();
    check_rows_alive<Agent>(ctx, cfg.agents, "agent rows");
    check_rows_alive<Object>(ctx, cfg.max_boxes + cfg.ramps, "box and ramp rows");
    const Round& r = ctx.single<Arena, Round>();
    check_round(cfg, r);
    check_agents(ctx, cfg, r);
    check_pieces(ctx, cfg, r);
    Buffer<Scene> scene = ctx.single_buffer<Arena, Scene>();
    if (scene.count_ && *scene.count_ > scene.capacity())
        bad("archetype 'Arena' row 0", "Scene count", std::to_string(*scene.count_),
            "at most its capacity " + std::to_string(scene.capacity()));
}

} // namespace hide_and_seek
