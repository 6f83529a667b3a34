// Hide-and-seek (envs/hide_and_seek), rule by rule: each test is named after a
// row of /work/shared/research/hideseek.md's tables (World, Actions,
// Observations, Rewards). Then determinism across thread counts, a pinned
// hash, NVRTC compiles of every kernel form, and CPU = GPU parity.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"
#include "envs/hide_and_seek/hide_and_seek.hpp"
#include "envs/registry.hpp"
#include "batch_support.hpp"
#include "gpu_support.hpp"
#include "hide_and_seek_support.hpp"

namespace {
using namespace orrery;
using namespace hide_and_seek;

/// The world-frame corners of a box or hull body.
std::vector<Vec3> corners_of(const Ctx& ctx, Entity e) {
    const phys::Pose& p = *ctx.get<phys::Pose>(e);
    const phys::HullSet hulls = phys::hull_set(ctx);
    phys::Convex c = phys::convex_of(*ctx.get<phys::Shape>(e), hulls);
    std::vector<Vec3> out;
    for (uint32_t i = 0; i < c.num_vertices(); ++i) out.push_back(p.p + phys::rotate(p.q, c.vertex(i)));
    return out;
}
/// The axis-aligned bounds of points: lo, hi.
std::pair<Vec3, Vec3> bounds_of(const std::vector<Vec3>& v) {
    Vec3 lo = v[0], hi = v[0];
    for (const Vec3& p : v) {
        lo = {std::min(lo.x, p.x), std::min(lo.y, p.y), std::min(lo.z, p.z)};
        hi = {std::max(hi.x, p.x), std::max(hi.y, p.y), std::max(hi.z, p.z)};
    }
    return {lo, hi};
}

// --- 1. World ---------------------------------------------------------------------

TEST(HideAndSeekWorld, ArenaIsSixMetresWithFourMetreOuterWallsHalfTheTime) {
    Simulator sim(spec(), options(200));
    sim.reset(1);
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    uint32_t with = 0;
    for (uint32_t w = 0; w < 200; ++w) {
        uint32_t tall = 0;
        for (const WallBox& b : walls_of(sim, w)) {
            if (b.e.z * 2.0f > 1.0f) {
                ++tall;
                EXPECT_FLOAT_EQ(b.e.z * 2.0f, 4.0f);
                float extent = std::max(b.e.x, b.e.y) * 2.0f;
                EXPECT_NEAR(extent, 6.1f, 1e-4f); // 6 m plus the 0.1 m thickness at the corners
                bool on_edge = std::fabs(b.p.x) < 1e-4f || std::fabs(b.p.x - 6.0f) < 1e-4f ||
                               std::fabs(b.p.y) < 1e-4f || std::fabs(b.p.y - 6.0f) < 1e-4f;
                EXPECT_TRUE(on_edge);
            }
        }
        uint32_t outer = round[w * 5 + 4];
        EXPECT_EQ(tall, outer ? 4u : 0u) << "world " << w;
        with += outer;
    }
    EXPECT_GT(with, 70u); // p = 0.5 over 200 worlds
    EXPECT_LT(with, 130u);
}

/// World w's draw, as spawn made it (the same RNG keys: episode 0, step 0).
Draw draw_of(Simulator& sim, uint32_t w) {
    Draw d{};
    sim.read_world(w, [&](Ctx& ctx) { EXPECT_TRUE(draw_world(ctx, ctx.config<Config>(), d)); });
    return d;
}

TEST(HideAndSeekWorld, RoomsAreOneToFourSplitsAtLeastSixCellsApartWithOneTwoCellDoorEach) {
    Simulator sim(spec({{"outer_wall_prob", "0"}}), options(300));
    sim.reset(2);
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    std::set<uint32_t> rooms_seen;
    for (uint32_t w = 0; w < 300; ++w) {
        Draw d = draw_of(sim, w);
        uint32_t rooms = d.walls_n - 3;
        ASSERT_EQ(rooms, round[w * 5 + 3]);
        rooms_seen.insert(rooms);
        std::vector<WallBox> pieces = walls_of(sim, w);
        for (const WallBox& b : pieces) {
            EXPECT_FLOAT_EQ(b.e.z * 2.0f, 0.5f);                  // inner walls: 0.5 m tall
            EXPECT_FLOAT_EQ(std::min(b.e.x, b.e.y) * 2.0f, 0.1f); // and 0.1 m thick
        }
        size_t claimed = 0;
        for (uint32_t k = 4; k < d.walls_n; ++k) {
            const Seg& s = d.walls[k];
            bool hz = horizontal(s);
            int32_t c = hz ? s.y0 : s.x0, a = hz ? s.x0 : s.y0, b = hz ? s.x1 : s.y1;
            // Rooms: every wall parallel to this one and overlapping its span is >= 6 cells away.
            for (uint32_t j = 0; j < d.walls_n; ++j) {
                const Seg& v = d.walls[j];
                if (j == k || horizontal(v) != hz) continue;
                int32_t cv = hz ? v.y0 : v.x0, av = hz ? v.x0 : v.y0, bv = hz ? v.x1 : v.y1;
                if (std::max(a, av) < std::min(b, bv)) { EXPECT_GE(std::abs(cv - c), 6) << "world " << w; }
            }
            // Doors: the pieces on this line cover all of it but 0.4 m (2 cells).
            float line = float(c) * kCell, length = 0.0f;
            for (const WallBox& p : pieces) {
                float across = hz ? p.p.y : p.p.x, along = hz ? p.p.x : p.p.y;
                bool on_line = std::fabs(across - line) < 1e-4f && (hz ? p.e.y < p.e.x : p.e.x < p.e.y);
                if (!on_line || along < float(a) * kCell || along > float(b) * kCell) continue;
                length += (hz ? p.e.x : p.e.y) * 2.0f - 0.1f;
                ++claimed;
            }
            EXPECT_NEAR(length, float(b - a - kDoorCells) * kCell, 1e-4f) << "world " << w << " wall " << k;
        }
        EXPECT_EQ(claimed, pieces.size()) << "world " << w;
    }
    EXPECT_EQ(rooms_seen, (std::set<uint32_t>{1, 2, 3, 4}));
}

TEST(HideAndSeekWorld, FailedSplitsRebuildTheWallsAfterTen) {
    // A grid too small for a split: every try fails and the outer walls remain.
    Seg w[kMaxSegments];
    Rng rng(1, 2, 3, 4, 5);
    EXPECT_EQ(make_rooms(rng, 4, w), 7u); // 4 rooms fit on 30 cells
    uint32_t n = 4;
    w[0] = {0, 0, kGrid, 0}, w[1] = {0, kGrid, kGrid, kGrid}, w[2] = {0, 0, 0, kGrid}, w[3] = {kGrid, 0, kGrid, kGrid};
    w[4] = {15, 0, 15, kGrid}, n = 5; // a split in the middle leaves rooms 15 wide
    uint32_t failures = 0;
    for (uint32_t t = 0; t < 200; ++t) {
        uint32_t before = n;
        Seg copy[kMaxSegments];
        for (uint32_t i = 0; i < n; ++i) copy[i] = w[i];
        if (!split_room(rng, copy, before)) ++failures;
    }
    EXPECT_GT(failures, 0u); // splits closer than 6 cells to x = 0, 15 or 30 are refused
}

TEST(HideAndSeekWorld, OneToThreeHidersAndSeekersPerWorldChosenAtReset) {
    Simulator sim(spec({{"min_hiders", "1"}, {"max_hiders", "3"}, {"min_seekers", "1"}, {"max_seekers", "3"}}),
                  options(200));
    sim.reset(3);
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    std::vector<int32_t> team = fetch<int32_t>(sim, "team");
    std::set<uint32_t> hiders, seekers;
    for (uint32_t w = 0; w < 200; ++w) {
        uint32_t h = round[w * 5], s = round[w * 5 + 1];
        hiders.insert(h), seekers.insert(s);
        for (uint32_t row = 0; row < 6; ++row) {
            int32_t want = row < 3 ? (row < h ? kHider : kAbsent) : (row - 3 < s ? kSeeker : kAbsent);
            EXPECT_EQ(team[w * 6 + row], want) << "world " << w << " row " << row;
        }
    }
    EXPECT_EQ(hiders, (std::set<uint32_t>{1, 2, 3}));
    EXPECT_EQ(seekers, (std::set<uint32_t>{1, 2, 3}));
    Simulator fixed(spec(), options(20)); // default: 2 v 2
    fixed.reset(3);
    for (int32_t t : fetch<int32_t>(fixed, "team")) EXPECT_NE(t, kAbsent);
    EXPECT_EQ(fixed.tensor("team").user_shape, (std::vector<int64_t>{20, 4}));
}

TEST(HideAndSeekWorld, AgentBodyIsAHundredFiftyMillimetreSphereOfOneKilogram) {
    Simulator sim(spec(), options(4));
    sim.reset(4);
    sim.read_world(0, [&](Ctx& ctx) {
        ctx.each<Agent>([&](Entity e) {
            EXPECT_EQ(ctx.get<phys::Shape>(e)->kind, phys::ShapeKind::kSphere);
            EXPECT_FLOAT_EQ(ctx.get<phys::Shape>(e)->dims.x, 0.15f);
            EXPECT_FLOAT_EQ(ctx.get<phys::MassProps>(e)->inv_mass, 1.0f);
            EXPECT_FLOAT_EQ(ctx.get<phys::Material>(e)->static_friction, 0.01f);
            // MuJoCo's joint damping of OpenAI's agent: slide x, y 10, slide z 1, hinge z 10.
            const phys::AxisDamping& d = *ctx.get<phys::AxisDamping>(e);
            EXPECT_FLOAT_EQ(d.linear.x, 10.0f);
            EXPECT_FLOAT_EQ(d.linear.y, 10.0f);
            EXPECT_FLOAT_EQ(d.linear.z, 1.0f);
            EXPECT_FLOAT_EQ(d.angular.z, 10.0f);
            EXPECT_EQ(ctx.get<phys::Locks>(e)->mask, uint32_t(phys::kLockTurnX | phys::kLockTurnY));
        });
        const phys::Params& p = ctx.asset<phys::Settings>()[0];
        EXPECT_FLOAT_EQ(p.dt, 0.075f);
        EXPECT_EQ(p.substeps, 8u); // OpenAI ran 15 of 5 ms; 8 keep every MuJoCo check (README)
        EXPECT_FLOAT_EQ(p.gravity.z, -50.0f);
    });
}

TEST(HideAndSeekWorld, ThreeToNineBoxesCubesAndElongatedWithTheElongatedCountRuleAndTwoRamps) {
    Simulator sim(spec(), options(300));
    sim.reset(5);
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    std::set<uint32_t> counts;
    for (uint32_t w = 0; w < 300; ++w) {
        uint32_t n = round[w * 5 + 2], cubes = 0, elongated = 0, ramps = 0;
        counts.insert(n);
        sim.read_world(w, [&](Ctx& ctx) {
            ctx.each<Object>([&](Entity e) {
                const Piece& p = *ctx.get<Piece>(e);
                Vec3 size = ctx.get<phys::Shape>(e)->dims * 2.0f;
                if (p.kind == kNoPiece) return;
                EXPECT_FLOAT_EQ(ctx.get<phys::MassProps>(e)->inv_mass, 1.0f);
                if (p.kind == kCube) {
                    ++cubes;
                    EXPECT_FLOAT_EQ(size.x, 0.5f);
                    EXPECT_FLOAT_EQ(size.y, 0.5f);
                    EXPECT_FLOAT_EQ(size.z, 0.5f);
                    EXPECT_FLOAT_EQ(ctx.get<phys::Material>(e)->static_friction, 0.2f);
                } else if (p.kind == kElongated) {
                    EXPECT_EQ(cubes, 0u) << "elongated boxes come first";
                    ++elongated;
                    float lo = std::min(size.x, size.y), hi = std::max(size.x, size.y);
                    EXPECT_FLOAT_EQ(hi, 1.65f);
                    EXPECT_FLOAT_EQ(lo, 0.15f);
                    EXPECT_FLOAT_EQ(size.z, 0.5f);
                } else {
                    ++ramps;
                    EXPECT_FLOAT_EQ(ctx.get<phys::Material>(e)->static_friction, 0.01f);
                }
            });
        });
        EXPECT_EQ(cubes + elongated, n);
        EXPECT_GE(elongated, std::min(n, 3u));
        EXPECT_EQ(ramps, 2u);
    }
    EXPECT_EQ(counts, (std::set<uint32_t>{3, 4, 5, 6, 7, 8, 9}));
}

TEST(HideAndSeekWorld, RampsAreFortyFiveDegreeWedgesOfHalfAMetreOneKilogramFrictionPointZeroOne) {
    Simulator sim(spec(), options(40));
    sim.reset(24);
    act(sim, {kStill});
    for (uint32_t i = 0; i < 10; ++i) sim.step(); // settled on the floor
    for (uint32_t w = 0; w < 40; ++w)
        sim.read_world(w, [&](Ctx& ctx) {
            for (uint32_t k = 9; k < 11; ++k) {
                Entity e = row_entity<Object>(ctx, k);
                ASSERT_EQ(ctx.get<Piece>(e)->kind, kRamp);
                ASSERT_EQ(ctx.get<phys::Shape>(e)->kind, phys::ShapeKind::kHull);
                const phys::HullInfo& h = phys::hull_set(ctx).info[kRampHull];
                EXPECT_EQ(h.num_vertices, 6u);
                EXPECT_NEAR(h.volume, 0.5f * 0.5f * 0.5f / 2.0f, 1e-6f);
                EXPECT_FLOAT_EQ(ctx.get<phys::MassProps>(e)->inv_mass, 1.0f);
                EXPECT_FLOAT_EQ(ctx.get<phys::Material>(e)->static_friction, 0.01f);
                const phys::AxisDamping& d = *ctx.get<phys::AxisDamping>(e);
                EXPECT_FLOAT_EQ(d.linear.x, 0.1f);
                EXPECT_FLOAT_EQ(d.linear.z, 0.1f);
                EXPECT_FLOAT_EQ(d.angular.z, 0.1f);
                EXPECT_EQ(ctx.get<phys::Locks>(e)->mask, uint32_t(phys::kLockTurnX | phys::kLockTurnY));
                // 0.5 m on every side, standing on the floor, axis-aligned, the slope rising toward +y.
                std::vector<Vec3> v = corners_of(ctx, e);
                auto [lo, hi] = bounds_of(v);
                EXPECT_NEAR(hi.x - lo.x, 0.5f, 1e-4f);
                EXPECT_NEAR(hi.y - lo.y, 0.5f, 1e-4f);
                EXPECT_NEAR(hi.z - lo.z, 0.5f, 1e-4f);
                EXPECT_NEAR(lo.z, 0.0f, 1e-3f) << "world " << w;
                for (const Vec3& c : v) { // each corner is on the floor or on the top edge at the high end
                    bool bottom = std::fabs(c.z - lo.z) < 1e-4f;
                    EXPECT_TRUE(bottom || (std::fabs(c.z - hi.z) < 1e-4f && std::fabs(c.y - hi.y) < 1e-4f));
                }
                const Config& cfg = ctx.config<Config>();
                EXPECT_EQ(cfg.ramps, 2u);
            }
        });
}

/// Axis-aligned footprint of a body in the plane (half extents; spheres as squares).
struct Footprint {
    float x, y, hx, hy;
};
TEST(HideAndSeekWorld, SpawnIsRejectionOnTheGridAndTeamsSpawnWithinHalfAMetre) {
    Simulator sim(spec({{"hiders", "3"}, {"seekers", "3"}}), options(200));
    sim.reset(6);
    for (uint32_t w = 0; w < 200; ++w) {
        std::vector<Footprint> fp;
        sim.read_world(w, [&](Ctx& ctx) {
            for (uint32_t row = 0; row < 6; ++row) {
                Vec3 p = ctx.at<Agent, phys::Pose>(row).p, lead = ctx.at<Agent, phys::Pose>(row < 3 ? 0 : 3).p;
                EXPECT_LE(std::hypot(p.x - lead.x, p.y - lead.y), 0.5f + 1e-5f) << "world " << w << " row " << row;
                fp.push_back({p.x, p.y, 0.15f, 0.15f});
            }
            ctx.each<Object>([&](Entity e) {
                if (ctx.get<Piece>(e)->kind == kNoPiece) return;
                auto [lo, hi] = bounds_of(corners_of(ctx, e)); // boxes and wedges alike
                EXPECT_GT(lo.x, 0.0f);
                EXPECT_LT(hi.x, 6.0f);
                fp.push_back({0.5f * (lo.x + hi.x), 0.5f * (lo.y + hi.y), 0.5f * (hi.x - lo.x), 0.5f * (hi.y - lo.y)});
            });
        });
        size_t bodies = fp.size(); // walls meet each other at corners, nothing else
        for (const WallBox& b : walls_of(sim, w)) fp.push_back({b.p.x, b.p.y, b.e.x, b.e.y});
        for (size_t i = 0; i < bodies; ++i)
            for (size_t j = i + 1; j < fp.size(); ++j) {
                bool apart = std::fabs(fp[i].x - fp[j].x) >= fp[i].hx + fp[j].hx - 1e-5f ||
                             std::fabs(fp[i].y - fp[j].y) >= fp[i].hy + fp[j].hy - 1e-5f;
                EXPECT_TRUE(apart) << "world " << w << ": bodies " << i << " and " << j << " overlap";
            }
    }
    EXPECT_EQ(sim.errors(), std::vector<uint32_t>(200, 0));
}

TEST(HideAndSeekWorld, EpisodeIs240StepsOfSeventyFiveMillisecondsThenAutoReset) {
    Simulator sim(spec(), options(3));
    sim.reset(7);
    act(sim, {kStill});
    for (uint32_t i = 1; i <= 240; ++i) {
        sim.step();
        std::vector<uint8_t> trunc = fetch<uint8_t>(sim, "truncated");
        EXPECT_EQ(trunc[0], i == 240 ? 1 : 0) << "step " << i;
    }
    sim.step(); // the next step resets the world (next-step autoreset)
    sim.read_world(0, [&](Ctx& ctx) {
        EXPECT_EQ(ctx.episode(), 1u);
        EXPECT_EQ(ctx.step(), 0u);
    });
}

// --- scenes for the action and observation rules -------------------------------------

/// One hider and one seeker, one cube, no ramps, no inner or outer walls
/// unless asked: an open floor where each rule can be set up by hand.
EnvSpec open_floor(EnvOptions extra = {}) {
    EnvOptions o = {{"hiders", "1"}, {"seekers", "1"},   {"min_boxes", "1"},      {"max_boxes", "1"},
                    {"ramps", "0"},  {"max_rooms", "1"}, {"outer_wall_prob", "0"}};
    for (auto& [k, v] : extra) o[k] = v;
    return spec(o);
}
struct Layout {
    Vec3 hider, seeker, box;
    float hider_yaw, seeker_yaw;
};
void arrange(Simulator& sim, const Layout& l) {
    sim.edit_world(0, [&](Ctx& ctx) {
        put(ctx, row_entity<Agent>(ctx, 0), l.hider, l.hider_yaw);
        put(ctx, row_entity<Agent>(ctx, 1), l.seeker, l.seeker_yaw);
        Entity box = row_entity<Object>(ctx, 0);
        put(ctx, box, l.box);
        *ctx.get<phys::Shape>(box) = {phys::ShapeKind::kBox, {0.25f, 0.25f, 0.25f}}; // a cube
        ctx.get<Piece>(box)->kind = kCube;
    });
}

// --- 2. Actions ---------------------------------------------------------------------

TEST(HideAndSeekActions, MoveIsAWorldFrameForceOfEighteenNewtonsPerBinAndTheAgentsTerminalSpeedFollows) {
    Simulator sim(open_floor(), options(1));
    sim.reset(8);
    arrange(sim, {{0.5f, 3.0f, 0.15f}, {1.0f, 0.5f, 0.15f}, {5.5f, 0.5f, 0.25f}, 1.0f, 0.0f});
    act(sim, {{10, 5, 5, 0, 0}, kStill}); // +x at full force while facing 1 rad off the x axis
    for (uint32_t i = 0; i < 8; ++i) sim.step();
    Seen s = look(sim, 0);
    // (90 N - friction 0.2 x 50 N) / damping 10 N s/m = 8 m/s, reached in 0.6 s (6 time constants)
    EXPECT_NEAR(s.vel.v.x, 8.0f, 0.1f);
    EXPECT_NEAR(s.vel.v.y, 0.0f, 1e-3f);
    arrange(sim, {{0.5f, 3.0f, 0.15f}, {1.0f, 0.5f, 0.15f}, {5.5f, 0.5f, 0.25f}, 1.0f, 0.0f});
    act(sim, {{5, 0, 10, 0, 0}, kStill}); // -y at full force, turning at full torque
    for (uint32_t i = 0; i < 8; ++i) sim.step();
    s = look(sim, 0);
    EXPECT_NEAR(s.vel.v.y, -8.0f, 0.1f);
    EXPECT_NEAR(s.vel.w.z, 9.0f, 0.05f); // 90 N m / hinge damping 10
    arrange(sim, {{0.5f, 3.0f, 0.15f}, {1.0f, 0.5f, 0.15f}, {5.5f, 0.5f, 0.25f}, 1.0f, 0.0f});
    act(sim, {{7, 5, 5, 0, 0}, kStill}); // two bins: 36 N, (36 - 10) / 10 = 2.6 m/s
    for (uint32_t i = 0; i < 10; ++i) sim.step();
    EXPECT_NEAR(look(sim, 0).vel.v.x, 2.6f, 0.05f);
}

// on_chip says only where the GPU keeps the physics step's scratch, and
// align only whether its teams wait for each other, so neither is part of a
// checkpoint's identity; a rule option still is.
TEST(HideAndSeekWorld, ACheckpointLoadsWhateverPhysicsScratchIsKeptOnChip) {
    const std::string path = ::testing::TempDir() + "/hide_and_seek_on_chip.ckpt";
    Simulator a(spec({{"on_chip", "0"}}), options(3));
    a.reset(4);
    for (int i = 0; i < 5; ++i) a.step();
    a.save_checkpoint(path);
    Simulator b(spec({{"on_chip", "3"}, {"align", "0"}}), options(3));
    b.load_checkpoint(path);
    for (uint32_t w = 0; w < 3; ++w) EXPECT_EQ(b.state_hash(w), a.state_hash(w)) << w;
    Simulator other(spec({{"horizon", "100"}}), options(3));
    try {
        other.load_checkpoint(path);
        ADD_FAILURE() << "a checkpoint of another horizon was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("env option horizon differs"), std::string::npos) << e.what();
    }
}

TEST(HideAndSeekActions, TheViewersHeldKeysPlayAnAgent) {
    // The draw table's keys (orrery-view: arrows/WASD, Q/E, space, L held down)
    // and what they do to an agent on the open floor.
    const DrawSpec& d = open_floor().draw;
    auto row = [&](std::initializer_list<Key> held) {
        uint32_t mask = 0;
        for (Key k : held) mask |= 1u << uint32_t(k);
        std::vector<int32_t> r = d.key_row(mask);
        EXPECT_EQ(r.size(), 5u);
        return r.size() == 5 ? Action{r[0], r[1], r[2], r[3], r[4]} : kStill;
    };
    auto same = [](const Action& a, const Action& b) {
        return a.move_x == b.move_x && a.move_y == b.move_y && a.turn == b.turn && a.grab == b.grab && a.lock == b.lock;
    };
    EXPECT_TRUE(same(row({}), kStill));
    EXPECT_TRUE(same(row({Key::kUp, Key::kLeft}), Action{0, 10, 5, 0, 0}));
    EXPECT_TRUE(same(row({Key::kDown, Key::kTurnRight, Key::kInteract, Key::kSecond}), Action{5, 0, 0, 1, 1}));
    Simulator sim(open_floor(), options(1));
    sim.reset(8);
    arrange(sim, {{0.5f, 3.0f, 0.15f}, {1.0f, 0.5f, 0.15f}, {5.5f, 0.5f, 0.25f}, 1.0f, 0.0f});
    act(sim, {row({Key::kRight, Key::kTurnLeft}), kStill});
    for (uint32_t i = 0; i < 8; ++i) sim.step();
    Seen s = look(sim, 0);
    EXPECT_NEAR(s.vel.v.x, 8.0f, 0.1f); // right: +x at full force, as {10, 5, 5, 0, 0}
    EXPECT_NEAR(s.vel.v.y, 0.0f, 1e-3f);
    EXPECT_NEAR(s.vel.w.z, 9.0f, 0.05f); // Q: counter-clockwise seen from above
}

TEST(HideAndSeekActions, OutOfRangeActionsAreRejectedBeforeAnyChange) {
    Simulator sim(open_floor(), options(2));
    sim.reset(9);
    act(sim, {kStill, kStill});
    uint64_t before = batch_hash(sim);
    act(sim, {{11, 5, 5, 0, 0}, kStill});
    EXPECT_THROW(sim.step(), Error);
    act(sim, {{5, 5, 5, -1, 0}, kStill});
    EXPECT_THROW(sim.step(), Error);
    act(sim, {kStill, kStill}); // the world is as it was
    sim.edit_world(0, [](Ctx&) {});
    EXPECT_EQ(batch_hash(sim), before);
}

TEST(HideAndSeekActions, SeekersActionsAreZeroedDuringThe96StepPreparationPhase) {
    Simulator sim(open_floor(), options(1));
    sim.reset(10);
    arrange(sim, {{1.0f, 1.0f, 0.15f}, {1.0f, 4.0f, 0.15f}, {5.5f, 0.5f, 0.25f}, 0.0f, 0.0f});
    act(sim, {{6, 5, 5, 0, 0}, {6, 5, 5, 0, 0}});
    Vec3 start = look(sim, 1).agent.p;
    for (uint32_t i = 1; i <= 96; ++i) {
        sim.step();
        Vec3 p = look(sim, 1).agent.p;
        ASSERT_NEAR(p.x, start.x, 1e-3f) << "the seeker moved in step " << i;
    }
    EXPECT_GT(look(sim, 0).agent.p.x, 3.0f); // the hider did
    sim.step();
    sim.step();
    EXPECT_GT(look(sim, 1).agent.p.x, start.x + 0.05f);
}

TEST(HideAndSeekActions, GrabHoldsTheClosestObjectSeenLastStepWithinAQuarterMetreWhileWanted) {
    Simulator sim(open_floor({{"prep_steps", "1"}}), options(1));
    sim.reset(11);
    // The box's face 0.2 m from the hider's centre, in its view; the seeker far off.
    arrange(sim, {{3.0f, 3.0f, 0.15f}, {0.5f, 0.5f, 0.15f}, {3.45f, 3.0f, 0.25f}, 0.0f, 3.1f});
    act(sim, {kStill, kStill});
    sim.step(); // observes the box
    act(sim, {{5, 5, 5, 1, 0}, kStill});
    sim.step();
    Seen s = look(sim, 0);
    EXPECT_EQ(s.grip.held.row(), 0u);
    EXPECT_FALSE(s.grip.held.is_null());
    // Pulling it: held while wanted, it follows the agent.
    act(sim, {{2, 5, 5, 1, 0}, kStill});
    for (uint32_t i = 0; i < 6; ++i) sim.step();
    s = look(sim, 0);
    EXPECT_FALSE(s.grip.held.is_null());
    EXPECT_LT(s.agent.p.x, 2.5f);
    EXPECT_NEAR(s.box.p.x - s.agent.p.x, 0.45f, 0.1f);
    act(sim, {kStill, kStill}); // released
    sim.step();
    EXPECT_TRUE(look(sim, 0).grip.held.is_null());

    // Out of reach (0.3 m), or out of sight (facing away): no grab.
    for (auto [gap, yaw] : {std::pair{0.30f, 0.0f}, std::pair{0.20f, 3.1f}}) {
        arrange(sim, {{3.0f, 3.0f, 0.15f}, {0.5f, 0.5f, 0.15f}, {3.25f + gap, 3.0f, 0.25f}, yaw, 3.1f});
        act(sim, {kStill, kStill});
        sim.step();
        act(sim, {{5, 5, 5, 1, 0}, kStill});
        sim.step();
        EXPECT_TRUE(look(sim, 0).grip.held.is_null()) << "gap " << gap << " yaw " << yaw;
    }
}

TEST(HideAndSeekActions, LockIsAllLockTeamSpecificAndMakesTheObjectStatic) {
    Simulator sim(open_floor({{"prep_steps", "1"}}), options(1));
    sim.reset(12);
    // The box between the two, each facing it, both within reach.
    Layout both{{2.55f, 3.0f, 0.15f}, {3.45f, 3.0f, 0.15f}, {3.0f, 3.0f, 0.25f}, 0.0f, 3.14159f};
    arrange(sim, both);
    act(sim, {kStill, kStill});
    sim.step();
    act(sim, {{5, 5, 5, 0, 1}, kStill}); // the hider locks; the seeker in reach does not press
    sim.step();
    Seen s = look(sim, 0);
    EXPECT_EQ(s.piece.locked, 1);
    EXPECT_EQ(s.piece.lock_team, kHider);
    EXPECT_EQ(s.piece.locker, 0);
    EXPECT_EQ(s.box_kind, phys::BodyKind::kStatic);
    // The seeker can neither unlock it (not its team's) nor push it.
    act(sim, {{5, 5, 5, 0, 1}, {0, 5, 5, 0, 0}});
    Vec3 at = s.box.p;
    for (uint32_t i = 0; i < 5; ++i) sim.step();
    s = look(sim, 0);
    EXPECT_EQ(s.piece.locked, 1);
    EXPECT_NEAR(s.box.p.x, at.x, 1e-6f);
    // The locking team's agent in reach, seeing it and not pressing unlocks it.
    arrange(sim, both);
    act(sim, {kStill, {5, 5, 5, 0, 1}}); // and the seeker, pressing, then locks it for its team
    sim.step();
    s = look(sim, 0);
    EXPECT_EQ(s.piece.locked, 0);
    EXPECT_EQ(s.box_kind, phys::BodyKind::kDynamic);
    sim.step();
    s = look(sim, 0);
    EXPECT_EQ(s.piece.locked, 1);
    EXPECT_EQ(s.piece.lock_team, kSeeker);
    EXPECT_EQ(s.piece.locker, 1);
    // A hider (another team) in reach, not pressing, leaves the seekers' lock alone.
    sim.step();
    EXPECT_EQ(look(sim, 0).piece.locked, 1);
}

TEST(HideAndSeekActions, SeekersCannotLockOrGrabDuringPreparation) {
    Simulator sim(open_floor(), options(1));
    sim.reset(13);
    arrange(sim, {{0.5f, 0.5f, 0.15f}, {2.55f, 3.0f, 0.15f}, {3.0f, 3.0f, 0.25f}, 0.0f, 0.0f});
    act(sim, {kStill, {5, 5, 5, 1, 1}});
    for (uint32_t i = 0; i < 96; ++i) sim.step();
    Seen s = look(sim, 1);
    EXPECT_EQ(s.piece.locked, 0);
    EXPECT_TRUE(s.grip.held.is_null());
    sim.step();
    s = look(sim, 1);
    EXPECT_EQ(s.piece.locked, 1);
    EXPECT_FALSE(s.grip.held.is_null());
}

// --- 3. Observations ------------------------------------------------------------------

TEST(HideAndSeekObservations, VisionIsA135DegreeConeAndALineOfSightBlockedByBodiesAndWalls) {
    for (bool block : {true, false}) {
        Simulator sim(open_floor({{"outer_wall_prob", "1"}, {"walls_block_rays", block ? "1" : "0"}}), options(1));
        sim.reset(14);
        sim.edit_world(0, [&](Ctx& ctx) {
            Entity h = row_entity<Agent>(ctx, 0), s = row_entity<Agent>(ctx, 1), b = row_entity<Object>(ctx, 0);
            put(ctx, b, {0.5f, 5.5f, 0.25f});
            for (float deg : {0.0f, 30.0f, 67.0f, -67.0f, 68.0f, -68.0f, 120.0f}) {
                float a = deg * 3.14159265f / 180.0f;
                put(ctx, h, {3.0f, 3.0f, 0.15f}, 0.3f);
                put(ctx, s, {3.0f + std::cos(a + 0.3f), 3.0f + std::sin(a + 0.3f), 0.15f});
                EXPECT_EQ(sees(ctx, h, s), std::fabs(deg) <= 67.5f) << deg << " degrees off the facing";
            }
            // A box between them blocks the view.
            put(ctx, h, {2.0f, 3.0f, 0.15f}, 0.0f);
            put(ctx, s, {4.0f, 3.0f, 0.15f});
            EXPECT_TRUE(sees(ctx, h, s));
            put(ctx, b, {3.0f, 3.0f, 0.25f});
            EXPECT_FALSE(sees(ctx, h, s));
            EXPECT_TRUE(sees(ctx, h, b));
            put(ctx, b, {0.5f, 5.5f, 0.25f});
            // The outer wall at x = 6 blocks it when walls block rays (OpenAI's game).
            put(ctx, s, {6.5f, 3.0f, 0.15f});
            EXPECT_EQ(sees(ctx, h, s), !block);
        });
    }
}

TEST(HideAndSeekObservations, LidarIsThirtyWorldFixedRaysOfSixMetresReadingSixWithoutAHit) {
    for (bool walls : {true, false}) {
        Simulator sim(open_floor({{"outer_wall_prob", walls ? "1" : "0"}}), options(1));
        sim.reset(15);
        arrange(sim, {{3.0f, 2.0f, 0.15f}, {0.5f, 5.5f, 0.15f}, {5.5f, 5.5f, 0.25f}, 1.3f, 0.0f});
        act(sim, {kStill, kStill});
        sim.step();
        std::vector<float> obs = fetch<float>(sim, "obs");
        Config cfg = config_of(sim);
        const float* lidar = &obs[cfg.off_lidar]; // agent row 0, the hider
        Seen s = look(sim, 0);
        float x = s.agent.p.x, y = s.agent.p.y;
        // Ray k points at 2 pi k / 30 whatever the agent's facing; walls' inner faces at 0.05 and 5.95.
        EXPECT_NEAR(lidar[0], walls ? 5.95f - x : 6.0f, 1e-4f);
        EXPECT_NEAR(lidar[15], walls ? x - 0.05f : 6.0f, 1e-4f);
        float r = 6.28318531f * 22.0f / 30.0f, to_floor_wall = (y - 0.05f) / -std::sin(r);
        EXPECT_NEAR(lidar[22], walls ? to_floor_wall : 6.0f, 1e-3f);
        for (uint32_t k = 0; k < kLidarRays; ++k) {
            EXPECT_GT(lidar[k], 0.0f);
            EXPECT_LE(lidar[k], 6.0f);
        }
        // Self: position, yaw, velocity, hider flag, preparation fraction.
        EXPECT_FLOAT_EQ(obs[0], x);
        EXPECT_FLOAT_EQ(obs[1], y);
        EXPECT_NEAR(obs[3], 1.3f, 1e-4f);
        EXPECT_EQ(obs[8], 1.0f);
        EXPECT_FLOAT_EQ(obs[9], 1.0f / 96.0f);
    }
}

/// The open floor with one ramp (object row 1), rising toward +x from its low edge at x = 2.75:
/// its own frame at (3, 3, 0) turned -90 degrees. The box and the seeker far off.
EnvSpec ramp_floor() { return open_floor({{"ramps", "1"}, {"prep_steps", "1"}}); }
void place_ramp(Simulator& sim, uint32_t seed) {
    sim.reset(seed);
    sim.edit_world(0, [&](Ctx& ctx) {
        put(ctx, row_entity<Object>(ctx, 0), {0.5f, 5.5f, 0.25f});
        put(ctx, row_entity<Agent>(ctx, 1), {0.5f, 0.5f, 0.15f}, 3.0f);
        put(ctx, row_entity<Object>(ctx, 1), {3.0f, 3.0f, 0.0f}, -1.5707963f);
    });
    act(sim, {kStill, kStill});
}

TEST(HideAndSeekObservations, LidarVisionAndReachSeeTheRampAsAWedge) {
    Simulator sim(ramp_floor(), options(1));
    place_ramp(sim, 25);
    Config cfg = config_of(sim);
    // Lidar at the agent's centre (0.15 m up) meets the slope 0.15 m past the low edge (a cube's face: at it),
    // and the high end's vertical face from behind.
    for (float x : {2.0f, 4.0f}) {
        sim.edit_world(0, [&](Ctx& ctx) {
            put(ctx, row_entity<Agent>(ctx, 0), {x, 3.0f, 0.15f}, x < 3.0f ? 0.0f : 3.14159f);
        });
        sim.step();
        std::vector<float> obs = fetch<float>(sim, "obs");
        float z = look(sim, 0).agent.p.z;
        if (x < 3.0f)
            EXPECT_NEAR(obs[cfg.off_lidar + 0], 2.75f + z - x, 1e-3f);
        else
            EXPECT_NEAR(obs[cfg.off_lidar + 15], x - 3.25f, 1e-3f);
        EXPECT_EQ(obs[cfg.off_ar], 1.0f) << "facing the ramp, it sees it";
        // The ramp's row: its centroid (a / 6 along the slope's rise, a / 3 up) and the yaw of its own frame.
        const float* r = &obs[cfg.off_ramps];
        EXPECT_NEAR(r[0], 3.0f + 0.5f / 6.0f, 1e-3f);
        EXPECT_NEAR(r[2], 0.5f / 3.0f, 1e-3f);
        EXPECT_NEAR(r[3], 0.0f, 1e-4f);  // cos yaw
        EXPECT_NEAR(r[4], -1.0f, 1e-4f); // sin yaw
    }
    sim.edit_world(0, [&](Ctx& ctx) {
        // An agent standing on the slope is seen over the low end (inside a cube, it would not be).
        Entity a = row_entity<Agent>(ctx, 0), b = row_entity<Agent>(ctx, 1);
        put(ctx, a, {2.0f, 3.0f, 0.15f}, 0.0f);
        put(ctx, b, {3.1f, 3.0f, 0.35f + 0.15f * 1.41421356f});
        EXPECT_TRUE(sees(ctx, a, b));
        put(ctx, b, {3.6f, 3.0f, 0.15f}); // behind the high end
        EXPECT_FALSE(sees(ctx, a, b));
        EXPECT_TRUE(sees(ctx, a, row_entity<Object>(ctx, 1)));
        put(ctx, b, {0.5f, 0.5f, 0.15f}, 3.0f);
    });
    // Grab reaches the wedge's surface: 0.17 m before the low edge, at the agent's centre height,
    // the edge is 0.227 m away (held); 0.23 m before it, 0.275 m (not; a cube's face would be 0.23 m).
    for (float gap : {0.17f, 0.23f}) {
        sim.edit_world(0, [&](Ctx& ctx) { put(ctx, row_entity<Agent>(ctx, 0), {2.75f - gap, 3.0f, 0.15f}, 0.0f); });
        act(sim, {kStill, kStill});
        sim.step(); // sees it
        act(sim, {{5, 5, 5, 1, 0}, kStill});
        sim.step();
        Seen s = look(sim, 0);
        EXPECT_EQ(s.grip.held.is_null(), gap > 0.2f) << "gap " << gap;
        if (!s.grip.held.is_null()) { EXPECT_EQ(s.grip.held.row(), 1u); }
        act(sim, {kStill, kStill});
        sim.step();
    }
}

TEST(HideAndSeekObservations, MasksAndEntityRowsFollowOpenAIsLayout) {
    Simulator sim(spec(), options(2));
    sim.reset(16);
    Config cfg = config_of(sim);
    EXPECT_EQ(cfg.obs_size, 10u + 3 * 10 + 9 * 15 + 2 * 15 + 30 + 3 + 9 + 2); // 2 v 2: 249
    EXPECT_EQ(sim.tensor("obs").shape, (std::vector<int64_t>{2, 4, 249}));
    act(sim, {kStill});
    sim.step();
    std::vector<float> obs = fetch<float>(sim, "obs");
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    sim.read_world(0, [&](Ctx& ctx) {
        for (uint32_t row = 0; row < 4; ++row) {
            const float* o = &obs[row * cfg.obs_size];
            Entity me = row_entity<Agent>(ctx, row);
            uint32_t slot = 0;
            for (uint32_t other = 0; other < 4; ++other) {
                if (other == row) continue;
                Entity e = row_entity<Agent>(ctx, other);
                EXPECT_FLOAT_EQ(o[cfg.off_agents + 10 * slot], ctx.get<phys::Pose>(e)->p.x);
                EXPECT_EQ(o[cfg.off_agents + 10 * slot + 8], other < 2 ? 1.0f : 0.0f);
                EXPECT_EQ(o[cfg.off_aa + slot], sees(ctx, me, e) ? 1.0f : 0.0f);
                ++slot;
            }
            for (uint32_t b = 0; b < 9; ++b) {
                Entity e = row_entity<Object>(ctx, b);
                bool present = b < round[2];
                EXPECT_EQ(o[cfg.off_ab + b], present && sees(ctx, me, e) ? 1.0f : 0.0f);
                if (!present)
                    EXPECT_EQ(o[cfg.off_boxes + 15 * b], 0.0f); // padding
                else
                    EXPECT_FLOAT_EQ(o[cfg.off_boxes + 15 * b + 11], 0.5f); // size z
            }
            for (uint32_t r = 0; r < 2; ++r) {
                Entity e = row_entity<Object>(ctx, 9 + r);
                EXPECT_EQ(o[cfg.off_ar + r], sees(ctx, me, e) ? 1.0f : 0.0f);
                EXPECT_EQ(o[cfg.off_ramps + 15 * r + 9], 0.0f); // ramps: no size
                EXPECT_FLOAT_EQ(o[cfg.off_ramps + 15 * r], ctx.get<phys::Pose>(e)->p.x);
            }
        }
    });
}

// --- 4. Rewards -----------------------------------------------------------------------

TEST(HideAndSeekRewards, TeamPlusMinusOneOnVisibilityAndZeroDuringPreparation) {
    Simulator sim(open_floor(), options(1));
    sim.reset(17);
    // The seeker faces the hider 1.5 m away: seen.
    arrange(sim, {{3.0f, 3.0f, 0.15f}, {1.5f, 3.0f, 0.15f}, {5.5f, 0.5f, 0.25f}, 0.0f, 0.0f});
    act(sim, {kStill, kStill});
    for (uint32_t i = 1; i <= 96; ++i) {
        sim.step();
        std::vector<float> r = fetch<float>(sim, "reward");
        ASSERT_EQ(r[0], 0.0f) << "step " << i;
        ASSERT_EQ(r[1], 0.0f) << "step " << i;
    }
    sim.step();
    std::vector<float> r = fetch<float>(sim, "reward");
    EXPECT_EQ(r[0], -1.0f);
    EXPECT_EQ(r[1], 1.0f);
    arrange(sim, {{3.0f, 3.0f, 0.15f}, {1.5f, 3.0f, 0.15f}, {5.5f, 0.5f, 0.25f}, 0.0f, 3.14159f}); // facing away
    sim.step();
    r = fetch<float>(sim, "reward");
    EXPECT_EQ(r[0], 1.0f);
    EXPECT_EQ(r[1], -1.0f);
}

TEST(HideAndSeekRewards, OutsideTheEighteenMetreSquareTheRewardIsOverwrittenWithMinusTen) {
    Simulator sim(open_floor({{"prep_steps", "1"}}), options(1));
    sim.reset(18);
    act(sim, {kStill, kStill});
    sim.step(); // the preparation phase
    for (float x : {12.5f, -6.5f}) {
        // The hider is outside and unseen: -10, not +1 - 10; the seeker keeps its -1.
        arrange(sim, {{x, 3.0f, 0.15f}, {1.5f, 3.0f, 0.15f}, {3.0f, 0.5f, 0.25f}, 0.0f, 1.5708f});
        sim.step();
        std::vector<float> r = fetch<float>(sim, "reward");
        EXPECT_EQ(r[0], -10.0f) << x;
        EXPECT_EQ(r[1], -1.0f) << x;
    }
    arrange(sim, {{11.5f, 3.0f, 0.15f}, {1.5f, 3.0f, 0.15f}, {3.0f, 0.5f, 0.25f}, 0.0f, 1.5708f});
    sim.step();
    EXPECT_EQ(fetch<float>(sim, "reward")[0], 1.0f); // inside the square (up to x = 12)
}

// --- the quadrant game (§1 Quadrant game, §4 rule 4) ------------------------------------

TEST(HideAndSeekQuadrant, ACornerRoomOfFifteenCellsWithTwoDoorsOrOneAndTheRestOfTheGame) {
    Simulator sim(spec({{"game", "quadrant"}}), options(200));
    sim.reset(21);
    std::vector<uint32_t> round = fetch<uint32_t>(sim, "round");
    uint32_t one_door = 0;
    for (uint32_t w = 0; w < 200; ++w) {
        EXPECT_EQ(round[w * 5], 2u);
        EXPECT_EQ(round[w * 5 + 1], 2u);
        EXPECT_EQ(round[w * 5 + 2], 2u);
        EXPECT_EQ(round[w * 5 + 4], 1u); // outer walls stand
        float open[2] = {3.0f, 3.0f};    // each room wall's length (3 m) less its pieces
        for (const WallBox& b : walls_of(sim, w)) {
            if (b.e.z * 2.0f > 1.0f) continue; // outer
            bool vertical = b.e.x < b.e.y;
            EXPECT_FLOAT_EQ(vertical ? b.p.x : b.p.y, 3.0f);
            EXPECT_GE((vertical ? b.p.y : b.p.x) + 1e-4f, 3.0f);
            open[vertical ? 0 : 1] -= (vertical ? b.e.y : b.e.x) * 2.0f - 0.1f;
        }
        uint32_t doors = 0;
        for (float o : open) {
            EXPECT_TRUE(std::fabs(o) < 1e-4f || std::fabs(o - 0.4f) < 1e-4f) << "world " << w << ": " << o;
            doors += o > 0.2f ? 1 : 0;
        }
        EXPECT_GE(doors, 1u);
        one_door += doors == 1 ? 1 : 0;
        sim.read_world(w, [&](Ctx& ctx) {
            for (uint32_t row = 0; row < 4; ++row) { // hiders inside the room, seekers outside
                Vec3 p = ctx.at<Agent, phys::Pose>(row).p;
                bool inside = p.x > 3.0f && p.y > 3.0f;
                EXPECT_EQ(inside, row < 2) << "world " << w << " agent " << row;
            }
            for (uint32_t k = 0; k < 3; ++k) { // two cubes inside, the ramp outside
                Vec3 p = ctx.at<Object, phys::Pose>(k).p;
                EXPECT_EQ((ctx.at<Object, Piece>(k).kind), (k < 2 ? kCube : kRamp));
                EXPECT_EQ(p.x > 3.0f && p.y > 3.0f, k < 2) << "world " << w << " object " << k;
            }
            EXPECT_EQ(ctx.config<Config>().horizon, 80u);
            EXPECT_EQ(ctx.config<Config>().prep_steps, 32u);
        });
    }
    EXPECT_GT(one_door, 70u); // p = 0.5
    EXPECT_LT(one_door, 130u);
}

TEST(HideAndSeekQuadrant, ABoxOrRampOutOfBoundsGivesEveryAgentMinusTen) {
    // Without outer walls, so the box can leave the arena.
    Simulator sim(spec({{"game", "quadrant"}, {"prep_steps", "1"}, {"outer_wall_prob", "0"}}), options(1));
    sim.reset(22);
    act(sim, {kStill});
    sim.step();
    sim.edit_world(0, [&](Ctx& ctx) { put(ctx, row_entity<Object>(ctx, 0), {6.5f, 4.0f, 0.25f}); });
    sim.step();
    for (float r : fetch<float>(sim, "reward")) EXPECT_EQ(r, -10.0f);
    sim.edit_world(0, [&](Ctx& ctx) { put(ctx, row_entity<Object>(ctx, 0), {5.5f, 4.0f, 0.25f}); });
    sim.step();
    for (float r : fetch<float>(sim, "reward")) EXPECT_EQ(std::fabs(r), 1.0f);
}

TEST(HideAndSeekQuadrant, TheRampCannotBeLocked) {
    for (const char* lockable : {"0", "1"}) { // 1: the same scene with the rule off, as a control
        Simulator sim(spec({{"game", "quadrant"}, {"prep_steps", "1"}, {"lock_ramps", lockable}}), options(1));
        sim.reset(23);
        // A seeker in reach of the ramp, facing it, pressing lock.
        sim.edit_world(0, [&](Ctx& ctx) {
            put(ctx, row_entity<Object>(ctx, 2), {1.5f, 1.5f, 0.0f});
            put(ctx, row_entity<Agent>(ctx, 2), {1.05f, 1.5f, 0.15f}, 0.0f);
        });
        act(sim, {kStill, kStill, {5, 5, 5, 0, 1}, kStill});
        for (uint32_t i = 0; i < 3; ++i) sim.step();
        sim.read_world(0, [&](Ctx& ctx) {
            EXPECT_EQ((ctx.at<Object, Piece>(2).locked), (lockable[0] == '1' ? 1 : 0)) << "lock_ramps=" << lockable;
        });
    }
}

// --- determinism, NVRTC, GPU ------------------------------------------------------------

/// options() with random actions, the device named first.
SimOptions random_actions(uint32_t worlds, const std::string& device, uint32_t threads, uint32_t lanes) {
    return options(worlds, threads, lanes, true, device);
}

TEST(HideAndSeekDeterminism, SameBytesWhateverTheThreadsAndLanes) {
    EnvOptions o = {
        {"min_hiders", "1"}, {"max_hiders", "3"}, {"min_seekers", "1"}, {"max_seekers", "3"}, {"horizon", "120"}};
    Simulator a(spec(o), random_actions(5, "cpu", 1, 1));
    Simulator b(spec(o), random_actions(5, "cpu", 2, 3));
    // A GPU team of 16 lanes (ORRERY_CUDA_LANES=16; the env's default is 32;
    // observe's rays spread over them, the physics as 16 threads, slow here):
    // through the first reset.
    Simulator c(spec(o), random_actions(5, "cpu", 1, 16));
    a.reset(19);
    b.reset(19);
    c.reset(19);
    for (uint32_t i = 0; i < 250; ++i) { // past two resets
        a.step();
        b.step();
        ASSERT_EQ(first_difference(state_bytes(a), state_bytes(b)), "") << "step " << i;
        if (i >= 130) continue;
        c.step();
        ASSERT_EQ(first_difference(state_bytes(a), state_bytes(c)), "") << "step " << i;
        if (i % 50 == 0) { ASSERT_EQ(batch_hash(a), batch_hash(b)) << "step " << i; }
    }
    EXPECT_EQ(a.errors(), std::vector<uint32_t>(5, 0));
}

/// The observation rows of world `ctx` (every agent row, whole), as bytes.
std::vector<uint8_t> obs_bytes(const Ctx& ctx) {
    const uint32_t bytes = ctx.storage().row_bytes[component_id<Obs>];
    std::vector<uint8_t> out(size_t(bytes) * ctx.config<Config>().agents);
    for (uint32_t row = 0; row < ctx.config<Config>().agents; ++row)
        std::memcpy(&out[size_t(bytes) * row], &ctx.array_at<Obs>(archetype_id<Agent>, row)[0], bytes);
    return out;
}

// The CPU's one-lane observe casts each agent's lidar through its candidate
// lists (lidar_cull.hpp) and its lines of sight together (observe_sights, box
// tests batched); with two lanes every ray tests every body, as on the GPU.
// Both variants, many random worlds and steps, through resets: the same
// bytes, and the lists do leave most bodies out.
TEST(HideAndSeekObservations, CulledLidarGivesTheFullScansBytesInBothVariants) {
    for (const char* variant : {"openai", "gpu_hideseek"}) {
        const bool gpu = std::string(variant) == "gpu_hideseek";
        Simulator sim(spec({{"variant", variant}, {"horizon", "50"}}), random_actions(24, "cpu", 1, 1));
        sim.reset(41);
        uint64_t listed = 0, scanned = 0, agents = 0;
        for (uint32_t step = 0; step < 130; ++step) {
            sim.step();
            for (uint32_t w = 0; w < 24; ++w) {
                sim.read_world(w, [&](Ctx& ctx) {
                    auto observe_all = [&](uint32_t lanes) {
                        for (uint32_t lane = 0; lane < lanes; ++lane)
                            gpu ? observe_gpu(ctx, lane, lanes) : observe(ctx, lane, lanes);
                    };
                    const std::vector<uint8_t> stepped = obs_bytes(ctx);
                    observe_all(2);
                    const std::vector<uint8_t> full = obs_bytes(ctx);
                    observe_all(1);
                    ASSERT_TRUE(stepped == full) << variant << ": world " << w << ", step " << step;
                    ASSERT_TRUE(obs_bytes(ctx) == full) << variant << ": world " << w << ", step " << step;
                    const SceneView scene = scene_view(ctx);
                    for (uint32_t row = 0; row < ctx.config<Config>().agents; ++row) {
                        if (!live_row<Agent>(ctx, row) || ctx.at<Agent, Team>(row).value == kAbsent) continue;
                        const phys::Pose& pose = ctx.at<Agent, phys::Pose>(row);
                        Vec3 dir[kLidarRays];
                        for (uint32_t k = 0; k < kLidarRays; ++k) dir[k] = lidar_dir(ctx.config<Config>(), pose.q, k);
                        LidarCandidates c =
                            lidar_candidates(scene.bodies, scene.n, pose.p, row_entity<Agent>(ctx, row).index, dir);
                        ASSERT_TRUE(c.ok) << variant;
                        for (uint32_t k = 0; k < kLidarRays; ++k) { // every body left out fails the bounding test
                            for (uint32_t i = 0; i < scene.n; ++i) {
                                if ((c.bodies[k] >> i & 1) ||
                                    scene.bodies[i].index == row_entity<Agent>(ctx, row).index)
                                    continue;
                                ASSERT_TRUE(misses_bound(scene.bodies[i], pose.p, dir[k], 3.0e38f))
                                    << variant << ": world " << w << ", row " << row << ", ray " << k << ", body " << i;
                            }
                        }
                        for (uint64_t b : c.bodies) listed += uint64_t(__builtin_popcountll(b));
                        scanned += uint64_t(kLidarRays) * (scene.n - 1);
                        ++agents;
                    }
                });
            }
        }
        EXPECT_GT(agents, 24u * 130u);
        EXPECT_LT(listed * 2, scanned) << variant;
        std::printf("%s: the lists keep %.1f%% of the ray-body tests\n", variant,
                    100.0 * double(listed) / double(scanned));
    }
}

// The observation gathers the ray scene again only in worlds the step reset
// (regather_scene); everywhere else it reads the step's own gather, after the
// physics. That is only right if nothing after that gather changes what it
// reads: after every step of both variants, in every autoreset mode, the
// scene equals a fresh gather of the world as it stands.
TEST(HideAndSeekObservations, TheSceneIsGatheredAgainOnlyWhereTheStepResetAndIsCurrentEverywhere) {
    for (const char* variant : {"openai", "gpu_hideseek"}) {
        for (AutoReset mode : {AutoReset::kNextStep, AutoReset::kSameStep, AutoReset::kDisabled}) {
            SimOptions o = random_actions(16, "cpu", 1, 1);
            o.autoreset = mode;
            Simulator sim(spec({{"variant", variant}, {"horizon", "20"}}), o);
            sim.reset(7);
            uint32_t regathered = 0, kept = 0;
            for (uint32_t step = 0; step < 60; ++step) {
                sim.step();
                for (uint32_t w = 0; w < 16; ++w) {
                    sim.read_world(w, [&](Ctx& ctx) {
                        const SceneView seen = scene_view(ctx);
                        const std::vector<RayBody> used(seen.bodies, seen.bodies + seen.n);
                        const bool reset =
                            ctx.storage().meta[ctx.world()].flags & (orrery::kResetting | orrery::kSkipStep);
                        (reset ? regathered : kept) += 1;
                        gather_scene(ctx, 0, 1);
                        const SceneView fresh = scene_view(ctx);
                        ASSERT_EQ(fresh.n, used.size()) << variant << ", world " << w << ", step " << step;
                        ASSERT_EQ(std::memcmp(fresh.bodies, used.data(), used.size() * sizeof(RayBody)), 0)
                            << variant << ", world " << w << ", step " << step;
                    });
                }
            }
            EXPECT_GT(kept, 0u) << variant;       // worlds whose observation kept the step's gather
            EXPECT_GT(regathered, 0u) << variant; // and worlds it gathered again
        }
    }
}

// The state of 4 worlds after 150 random-action steps, seed 3. A change of
// results changes it: update it in the same commit, saying why.
constexpr uint64_t kPinnedHash = 0x067f2431b78d47a8; // a weld solves its own rows (solve_weld); 8 substeps

TEST(HideAndSeekDeterminism, PinnedHash) {
    Simulator sim(spec(), random_actions(4, "cpu", 2, 1));
    sim.reset(3);
    for (uint32_t i = 0; i < 150; ++i) sim.step();
    uint64_t h = batch_hash(sim);
    char got[32];
    std::snprintf(got, sizeof got, "0x%016llx", (unsigned long long)h);
    EXPECT_EQ(h, kPinnedHash) << "now hashes to " << got;
}

// The direct megakernel is what runs at scale (a world is too large to stage);
// each form takes NVRTC 40-80 s on the 2-core machine, so one form here.
TEST(HideAndSeekNvrtc, CompilesTheDirectMegakernel) {
    EnvSpec s = spec();
    for (auto form : {cuda::KernelForm::kDirect}) {
        Plan plan = make_plan(s, AutoReset::kSameStep, true);
        cuda::KernelSource k = cuda::generate_kernels(s, plan, form);
        expect_nvrtc_compiles(s, k);
    }
}

/// Steps `cpu` and every simulator of `gpus` `steps` times and, after every
/// `every`-th step, requires each GPU's state bytes to be the CPU's.
void expect_the_cpus_bytes(Simulator& cpu, const std::vector<std::unique_ptr<Simulator>>& gpus, uint32_t steps,
                           uint32_t every) {
    for (uint32_t step = 0; step < steps; ++step) {
        cpu.step();
        for (auto& g : gpus) g->step();
        if (step % every != every - 1) continue;
        std::vector<uint8_t> want = state_bytes(cpu);
        for (auto& g : gpus)
            ASSERT_EQ(first_difference(state_bytes(*g), want), "")
                << g->backend().describe() << " differs at step " << step;
    }
}

// The direct megakernel with teams of 8 and 32 lanes (GpuOptions::world_lanes)
// gives the CPU's bytes too: 70 steps past a reset, 256 worlds.
TEST(HideAndSeekGpu, AnyTeamSizeGivesTheCpuBytes) {
    REQUIRE_GPU();
    EnvOptions o = {{"horizon", "60"}, {"prep_steps", "20"}};
    Simulator cpu(spec(o), random_actions(256, "cpu", 8, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (uint32_t lanes : {8u, 32u}) {
        SimOptions g = random_actions(256, "cuda", 0, 1);
        g.gpu.stage = false;
        g.gpu.megakernel = true; // the env prefers the per-node form
        g.gpu.world_lanes = lanes;
        gpus.push_back(std::make_unique<Simulator>(spec(o), g));
    }
    cpu.reset(20);
    for (auto& g : gpus) g->reset(20);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 70, 1));
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(256, 0));
}

// Each kernel's block fitted to its occupancy (GpuOptions::fit_blocks; the
// physics step's registers fit more warps in smaller blocks), every kernel
// but the aligned physics step fitted (GpuOptions::fit_free_blocks, the
// default) and neither give the CPU's bytes, and fitting never gives fewer
// resident teams than the env's block: 4,096 worlds, so that the default
// block is the env's 512 threads on a GPU of up to 256 SMs.
TEST(HideAndSeekGpu, FittedBlocksGiveTheCpuBytes) {
    REQUIRE_GPU();
    EnvOptions o = {{"horizon", "30"}, {"prep_steps", "10"}};
    Simulator cpu(spec(o), random_actions(4096, "cpu", 0, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    // Every kernel fitted; only the kernels whose teams do not align fitted
    // (fit_free_blocks, the default); none fitted.
    for (int fit : {2, 1, 0}) {
        SimOptions g = random_actions(4096, "cuda", 0, 1);
        g.gpu.fit_blocks = fit == 2;
        g.gpu.fit_free_blocks = fit >= 1;
        gpus.push_back(std::make_unique<Simulator>(spec(o), g));
    }
    cpu.reset(5);
    for (auto& g : gpus) g->reset(5);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 36, 6)); // past the first auto-reset
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(4096, 0));
    // fit_free_blocks keeps the aligned physics step in the env's block
    // (describe lists each kernel launched in another block), and with
    // neither option every kernel runs in it.
    EXPECT_EQ(gpus[1]->backend().describe().find("(phys::simulate "), std::string::npos)
        << gpus[1]->backend().describe();
    EXPECT_EQ(gpus[2]->backend().describe().find(" threads/block ("), std::string::npos)
        << gpus[2]->backend().describe();
    EXPECT_GE(gpus[0]->memory_report().scratch_slots, gpus[2]->memory_report().scratch_slots)
        << gpus[0]->backend().describe() << " against " << gpus[2]->backend().describe();
    std::printf("fitted: %s, %u scratch slots; free kernels fitted: %s, %u; neither: %s\n",
                gpus[0]->backend().describe().c_str(), gpus[0]->memory_report().scratch_slots,
                gpus[1]->backend().describe().c_str(), gpus[1]->memory_report().scratch_slots,
                gpus[2]->backend().describe().c_str());
}

// Lanes chosen at launch (GpuOptions::pack_serial, pack_teams, wide_lanes)
// give the CPU's bytes in both variants: the serial nodes (move, the
// engine's begin and end) 32 worlds a warp, the team nodes without scratch
// (lock and grab, gather and reward) in teams of one lane, 32 worlds a
// warp, the lane nodes (the scene's regather, the observation) on 256 lanes
// a world over several warps; the opposite choices; and the default's own
// at 1,000 worlds.
TEST(HideAndSeekGpu, LanesChosenAtLaunchGiveTheCpuBytes) {
    REQUIRE_GPU();
    for (const char* variant : {"openai", "gpu_hideseek"}) {
        EnvOptions o = {{"horizon", "30"}, {"prep_steps", "10"}, {"variant", variant}};
        Simulator cpu(spec(o), random_actions(1000, "cpu", 0, 1));
        std::vector<std::unique_ptr<Simulator>> gpus;
        for (auto [pack, wide] : {std::pair{2u, 256u}, {0u, 32u}, {1u, 0u}}) {
            SimOptions g = random_actions(1000, "cuda", 0, 1);
            g.gpu.pack_serial = pack;
            g.gpu.pack_teams = pack;
            g.gpu.wide_lanes = wide;
            gpus.push_back(std::make_unique<Simulator>(spec(o), g));
        }
        const std::string wide = gpus[0]->backend().describe(), narrow = gpus[1]->backend().describe();
        EXPECT_NE(wide.find(std::string(variant) == "openai" ? "observe 256" : "observe_gpu 256"), std::string::npos)
            << wide;
        EXPECT_NE(wide.find("serial nodes 32 worlds a warp"), std::string::npos) << wide;
        EXPECT_NE(wide.find("gather_and_reward 1,"), std::string::npos) << wide;
        EXPECT_NE(narrow.find("serial nodes a world a warp"), std::string::npos) << narrow;
        EXPECT_NE(narrow.find("gather_and_reward 32,"), std::string::npos) << narrow;
        if (std::string(variant) == "openai") {
            EXPECT_NE(wide.find("lock_and_grab 1,"), std::string::npos) << wide;
            EXPECT_NE(narrow.find("lock_and_grab 32,"), std::string::npos) << narrow;
        }
        cpu.reset(5);
        for (auto& g : gpus) g->reset(5);
        ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 36, 6)) << variant; // past the first auto-reset
        for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(1000, 0)) << variant;
        std::printf("%s: %s\n", variant, gpus[2]->backend().describe().c_str());
    }
}

// Every per-node kernel launched programmatically (GpuOptions::
// programmatic_launch, the default on sm_90+: dispatched while the kernel
// ahead runs, waiting for it before touching a world) and the serial runs
// fused into one kernel each (GpuOptions::fuse_serial, the default) give the
// CPU's bytes queued, beside plain launches and a kernel per op, and as steps
// captured in a CUDA graph and replayed; 1,000 worlds past an auto-reset.
TEST(HideAndSeekGpu, ProgrammaticLaunchesAndFusedRunsGiveTheCpuBytesQueuedAndInAGraph) {
    REQUIRE_GPU();
    EnvOptions o = {{"horizon", "12"}, {"prep_steps", "4"}};
    Simulator cpu(spec(o), random_actions(1000, "cpu", 0, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (auto [pdl, fuse] : {std::pair{true, true}, {false, true}, {true, false}}) {
        SimOptions g = random_actions(1000, "cuda", 0, 1);
        g.gpu.programmatic_launch = pdl;
        g.gpu.fuse_serial = fuse;
        gpus.push_back(std::make_unique<Simulator>(spec(o), g));
    }
    auto& first = dynamic_cast<cuda::CudaBackend&>(gpus[0]->backend());
    auto& plain = dynamic_cast<cuda::CudaBackend&>(gpus[1]->backend());
    auto& apart = dynamic_cast<cuda::CudaBackend&>(gpus[2]->backend());
    EXPECT_EQ(first.kernel_source().step_kernels.size(), 7u);
    EXPECT_EQ(apart.kernel_source().step_kernels.size(), 13u);
    EXPECT_FALSE(plain.programmatic_launch()) << plain.describe();
    if (cuda::device_info(0).arch >= 90 && cuda::driver_version() >= 12030) { // where the launch attribute exists
        EXPECT_TRUE(first.programmatic_launch()) << first.describe();
    }
    cpu.reset(3);
    for (auto& g : gpus) g->reset(3);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 16, 4));
    // Ten steps captured from the programmatic simulator, replayed twice.
    const cuda::DriverApi& d = cuda::driver();
    gpus[0]->synchronize();
    cuda::CUgraph graph = nullptr;
    cuda::CUgraphExec exec = nullptr;
    ORRERY_CU(d.cuStreamBeginCapture(first.stream(), cuda::kCaptureModeThreadLocal));
    for (int i = 0; i < 10; ++i) gpus[0]->step(); // no host synchronisation may happen here
    ORRERY_CU(d.cuStreamEndCapture(first.stream(), &graph));
    ORRERY_CU(d.cuGraphInstantiateWithFlags(&exec, graph, 0));
    for (int rep = 0; rep < 2; ++rep) ORRERY_CU(d.cuGraphLaunch(exec, first.stream()));
    gpus[0]->synchronize();
    d.cuGraphExecDestroy(exec);
    d.cuGraphDestroy(graph);
    for (int i = 0; i < 20; ++i) cpu.step();
    EXPECT_EQ(first_difference(state_bytes(*gpus[0]), state_bytes(cpu)), "") << "after the graph's 20 steps";
    EXPECT_EQ(gpus[0]->errors(), std::vector<uint32_t>(1000, 0));
    std::printf("%s\n", first.describe().c_str());
}

// The per-node physics kernel aligns the teams of a block before each
// substep (Lanes::align, a barrier over the block's teams that run the
// node): a last block only partly filled (1,000 worlds), worlds that skip a
// step while they reset (next-step autoreset, 12-step episodes), and the
// block fitted to the occupancy, with GpuOptions::scratch_slots (which
// turns the barrier off) beside them; each gives the CPU's bytes.
TEST(HideAndSeekGpu, AlignedTeamsGiveTheCpuBytesInPartBlocksAndResets) {
    REQUIRE_GPU();
    EnvOptions o = {{"horizon", "12"}, {"prep_steps", "4"}};
    const uint32_t worlds = 1000;
    Simulator cpu(spec(o), random_actions(worlds, "cpu", 0, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (int variant = 0; variant < 3; ++variant) {
        SimOptions g = random_actions(worlds, "cuda", 0, 1);
        g.gpu.fit_blocks = variant == 1;
        if (variant == 2) g.gpu.scratch_slots = 64; // teams may wait for a slot: no barrier
        gpus.push_back(std::make_unique<Simulator>(spec(o), g));
    }
    cpu.reset(3);
    for (auto& g : gpus) g->reset(3);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 40, 4)); // three episodes and their resets
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(worlds, 0)) << g->backend().describe();
}

// The cold-start settings (docs/perf-notes.md): NVRTC's fast-compile levels
// leave float results alone (every operation stays IEEE, no contraction), so
// the per-node kernels at --Ofast-compile=mid and min and the megakernel at
// mid give the CPU's bytes: 70 steps past a reset, 256 worlds.
// The physics step keeps its bodies, then its contact points, then its pairs
// and colour order in each team's region of the block's shared memory
// (PhysicsOptions::on_chip 1, 2, 3), or all of them in the slot (0, and
// GpuOptions::team_shared off): the CPU's bytes at every level, in part-filled
// blocks (1,000 worlds) and across resets.
TEST(HideAndSeekGpu, ScratchOnChipGivesTheCpuBytesAtEveryLevel) {
    REQUIRE_GPU();
    const uint32_t worlds = 1000;
    EnvOptions o = {{"horizon", "20"}, {"prep_steps", "6"}};
    Simulator cpu(spec(o), random_actions(worlds, "cpu", 0, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    for (uint32_t level = 0; level <= 4; ++level) {
        EnvOptions lo = o;
        lo["on_chip"] = std::to_string(std::min(level, 3u));
        SimOptions g = random_actions(worlds, "cuda", 0, 1);
        g.gpu.team_shared = level != 4; // level 3's regions offered, the backend told to keep them in the slot
        gpus.push_back(std::make_unique<Simulator>(spec(lo), g));
        const std::string used = gpus.back()->memory_report().scratch_shared_use;
        if (level == 0 || level == 4)
            EXPECT_EQ(used, "") << level;
        else
            EXPECT_NE(used.find("shared memory of phys::simulate's blocks"), std::string::npos)
                << level << ": " << used;
    }
    cpu.reset(7);
    for (auto& g : gpus) g->reset(7);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 48, 4)); // past two auto-resets
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(worlds, 0)) << g->backend().describe();
}

// gpu_hideseek's bodies are larger: of the scratch its physics step asks to
// keep on chip (on_chip=3), the bodies and points fit a block of 8 teams and
// the pairs and colour order stay in the slot; in its own blocks of 12 teams
// (EnvSpec::team_block_threads) only the bodies fit. The CPU's bytes still.
// A team's bodies: 50 of 316 bytes (phys::SolverBody) and the buffer's 8-byte
// header, 15,808 bytes in 16-byte steps; its points 128 of 84 bytes, 10,768.
TEST(HideAndSeekGpu, ScratchThatDoesNotFitStaysInTheSlot) {
    REQUIRE_GPU();
    const uint32_t worlds = 2048; // 16 worlds an SM: blocks as large as asked
    EnvOptions o = {{"variant", "gpu_hideseek"}, {"horizon", "20"}};
    Simulator cpu(spec(o), random_actions(worlds, "cpu", 0, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    SimOptions eight = random_actions(worlds, "cuda", 0, 1);
    eight.gpu.team_block_threads = 256;
    gpus.push_back(std::make_unique<Simulator>(spec(o), eight));
    gpus.push_back(std::make_unique<Simulator>(spec(o), random_actions(worlds, "cuda", 0, 1)));
    std::string used = gpus[0]->memory_report().scratch_shared_use;
    EXPECT_NE(used.find("8 teams x 26576 bytes (Bodies, Contacts)"), std::string::npos) << used;
    EXPECT_NE(used.find("Pairs, SolveOrder, Colouring in the slot"), std::string::npos) << used;
    used = gpus[1]->memory_report().scratch_shared_use;
    EXPECT_NE(used.find("12 teams x 15808 bytes (Bodies)"), std::string::npos) << used;
    EXPECT_NE(used.find("Contacts, Pairs, SolveOrder, Colouring in the slot"), std::string::npos) << used;
    cpu.reset(9);
    for (auto& g : gpus) g->reset(9);
    ASSERT_NO_FATAL_FAILURE(expect_the_cpus_bytes(cpu, gpus, 44, 4)); // past two auto-resets
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(worlds, 0));
}

TEST(HideAndSeekGpu, FastCompileLevelsGiveTheCpuBytes) {
    REQUIRE_GPU();
    EnvOptions o = {{"horizon", "60"}, {"prep_steps", "20"}};
    Simulator cpu(spec(o), random_actions(256, "cpu", 8, 1));
    std::vector<std::unique_ptr<Simulator>> gpus;
    std::vector<std::string> names;
    for (auto [megakernel, level] : {std::pair{false, "mid"}, {false, "min"}, {true, "mid"}}) {
        SimOptions g = random_actions(256, "cuda", 0, 1);
        g.gpu.megakernel = megakernel;
        g.gpu.stage = false;
        g.gpu.nvrtc_options = std::string("--Ofast-compile=") + level;
        gpus.push_back(std::make_unique<Simulator>(spec(o), g));
        names.push_back(gpus.back()->backend().describe() + " at " + g.gpu.nvrtc_options);
    }
    cpu.reset(20);
    for (auto& g : gpus) g->reset(20);
    for (uint32_t step = 0; step < 70; ++step) {
        cpu.step();
        std::vector<uint8_t> want = state_bytes(cpu);
        for (size_t i = 0; i < gpus.size(); ++i) {
            gpus[i]->step();
            ASSERT_EQ(first_difference(state_bytes(*gpus[i]), want), "") << names[i] << " differs at step " << step;
        }
    }
    for (auto& g : gpus) EXPECT_EQ(g->errors(), std::vector<uint32_t>(256, 0));
}

// A cold start (GpuOptions::cold_start_level, the default) on a cache of its
// own: the per-node programs compiled at --Ofast-compile=max first, the full
// ones swapped in between steps as they land, all of them by step 30
// (finish_compiles); the CPU's bytes at every step, 70 steps past a reset.
TEST(HideAndSeekGpu, ColdStartSwapGivesTheCpuBytes) {
    REQUIRE_GPU();
    struct Cache {
        std::string dir =
            (std::filesystem::temp_directory_path() / ("orrery_hs_cold_" + std::to_string(::getpid()))).string();
        Cache() { std::filesystem::remove_all(dir); }
        ~Cache() { std::filesystem::remove_all(dir); }
    } cache;
    EnvOptions o = {{"horizon", "60"}, {"prep_steps", "20"}};
    Simulator cpu(spec(o), random_actions(256, "cpu", 8, 1));
    SimOptions g = random_actions(256, "cuda", 0, 1);
    g.gpu.cache_dir = cache.dir;
    Simulator gpu(spec(o), g);
    auto& b = dynamic_cast<cuda::CudaBackend&>(gpu.backend());
    ASSERT_EQ(b.module_stats().first_level, "max") << b.describe();
    ASSERT_EQ(b.module_stats().programs, 6u) << "10 kernels, one program per node (fuse_serial's runs share spawn)";
    ASSERT_EQ(b.module_stats().background_programs, b.module_stats().programs);
    cpu.reset(20);
    gpu.reset(20);
    for (uint32_t step = 0; step < 70; ++step) {
        if (step == 30) {
            b.finish_compiles();
            EXPECT_EQ(b.module_stats().swapped_programs, b.module_stats().background_programs);
            EXPECT_EQ(b.module_stats().failed_programs, 0u);
        }
        cpu.step();
        gpu.step();
        ASSERT_EQ(first_difference(state_bytes(gpu), state_bytes(cpu)), "") << "differs at step " << step;
    }
    EXPECT_EQ(gpu.errors(), std::vector<uint32_t>(256, 0));
}

// Every world's every byte after every step, 130 steps past two resets (60
// steps each, seekers free after 20), 256 worlds; the CPU side on 8 threads
// (any count gives the same bytes).
TEST(HideAndSeekGpu, MatchesTheCpuBitForBitInEveryKernelForm) {
    REQUIRE_GPU();
    EnvOptions o = {{"min_hiders", "1"},  {"max_hiders", "3"}, {"min_seekers", "1"},
                    {"max_seekers", "3"}, {"horizon", "60"},   {"prep_steps", "20"}};
    Simulator cpu(spec(o), random_actions(256, "cpu", 8, 1));
    SimOptions staged = random_actions(256, "cuda", 0, 1), direct = staged, node = staged;
    staged.gpu.stage = true;
    staged.gpu.megakernel = true; // the env prefers the per-node form
    direct.gpu.stage = false;
    direct.gpu.megakernel = true;
    node.per_node_launches = true;
    Simulator a(spec(o), staged), b(spec(o), direct), c(spec(o), node);
    std::vector<Simulator*> sims = {&cpu, &a, &b, &c};
    for (Simulator* s : sims) s->reset(20);
    for (uint32_t step = 0; step < 130; ++step) {
        for (Simulator* s : sims) s->step();
        std::vector<uint8_t> want = state_bytes(cpu);
        for (size_t i = 1; i < sims.size(); ++i) {
            ASSERT_EQ(first_difference(state_bytes(*sims[i]), want), "")
                << sims[i]->backend().describe() << " differs at step " << step;
        }
    }
    for (size_t i = 1; i < sims.size(); ++i) EXPECT_EQ(batch_hash(*sims[i]), batch_hash(cpu)); // state_hash too
    for (Simulator* s : sims) EXPECT_EQ(s->errors(), std::vector<uint32_t>(256, 0));
}

} // namespace
