// physics/query.hpp: ray casts and closest-distance queries. Each shape on
// its own against analytic answers, then world queries through the
// physics_scenes env (filters, masks, ties), and an NVRTC compile of the
// header on its own.

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"
#include "envs/physics_scenes/scenes.hpp"
#include "envs/registry.hpp"
#include "gpu_support.hpp"
#include "physics/module.hpp"
#include "physics/query.hpp"
#include "physics/ray_batch.hpp"

namespace {
using namespace orrery;
using phys::Placed;
using phys::Quat;
using phys::ShapeHit;
using phys::ShapeKind;
using phys::Vec3;

const Quat kId{1, 0, 0, 0};
Placed placed(ShapeKind k, Vec3 dims, Vec3 x, Quat q = kId) { return {{k, dims}, x, q}; }
Vec3 unit(Vec3 v) { return phys::normalize_or(v, {1, 0, 0}); }

void expect_vec(Vec3 got, Vec3 want, float tol, const char* what) {
    EXPECT_NEAR(got.x, want.x, tol) << what;
    EXPECT_NEAR(got.y, want.y, tol) << what;
    EXPECT_NEAR(got.z, want.z, tol) << what;
}

// --- one shape ------------------------------------------------------------------

TEST(PhysicsQueryRay, Sphere) {
    Placed s = placed(ShapeKind::kSphere, {0.5f, 0, 0}, {2, 0, 0});
    ShapeHit h = phys::ray_shape(s, {0, 0, 0}, {1, 0, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_FLOAT_EQ(h.distance, 1.5f);
    expect_vec(h.normal, {-1, 0, 0}, 1e-6f, "front face");
    // Off centre by 0.3: enters at 2 - sqrt(0.25 - 0.09) = 1.6, normal (-0.4, 0.3, 0) / 0.5.
    h = phys::ray_shape(s, {0, 0.3f, 0}, {1, 0, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 1.6f, 1e-6f);
    expect_vec(h.normal, {-0.8f, 0.6f, 0}, 1e-6f, "off centre");
    EXPECT_FALSE(phys::ray_shape(s, {0, 0.51f, 0}, {1, 0, 0}, 10.0f).hit) << "passes beside";
    EXPECT_FALSE(phys::ray_shape(s, {0, 0, 0}, {-1, 0, 0}, 10.0f).hit) << "behind the origin";
    EXPECT_FALSE(phys::ray_shape(s, {0, 0, 0}, {1, 0, 0}, 1.4f).hit) << "out of reach";
    EXPECT_TRUE(phys::ray_shape(s, {0, 0, 0}, {1, 0, 0}, 1.5f).hit) << "exactly at reach";
    // From inside (as MuJoCo's mj_ray): where it leaves, the normal pointing out, along the ray.
    h = phys::ray_shape(s, {2.1f, 0, 0}, {0, 1, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, std::sqrt(0.25f - 0.01f), 1e-6f);
    EXPECT_GT(h.normal.y, 0.9f);
    // Far away, grazing: the discriminant keeps its precision at 50 m.
    h = phys::ray_shape(placed(ShapeKind::kSphere, {0.1f, 0, 0}, {50, 0.0999f, 0}), {0, 0, 0}, {1, 0, 0}, 100.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 50.0f - std::sqrt(0.01 - 0.0999 * 0.0999), 2e-5);
}

TEST(PhysicsQueryRay, Capsule) {
    // Radius 0.2, segment z in [-0.5, 0.5], standing at (3, 0, 1).
    Placed c = placed(ShapeKind::kCapsule, {0.2f, 0.5f, 0}, {3, 0, 1});
    ShapeHit h = phys::ray_shape(c, {0, 0, 1.3f}, {1, 0, 0}, 10.0f); // the cylinder's side
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 2.8f, 1e-6f);
    expect_vec(h.normal, {-1, 0, 0}, 1e-6f, "side");
    h = phys::ray_shape(c, {3, 0, 5}, {0, 0, -1}, 10.0f); // down the axis onto the top cap
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 5.0f - 1.7f, 1e-6f);
    expect_vec(h.normal, {0, 0, 1}, 1e-6f, "top cap");
    // Onto the top cap's shoulder, 0.1 off the axis: z = 1.5 + sqrt(0.04 - 0.01).
    h = phys::ray_shape(c, {3.1f, 0, 5}, {0, 0, -1}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 5.0f - (1.5f + std::sqrt(0.03f)), 1e-6f);
    expect_vec(h.normal, unit({0.1f, 0, std::sqrt(0.03f)}), 1e-5f, "shoulder");
    EXPECT_FALSE(phys::ray_shape(c, {0, 0, 1.71f + 0.5f}, {1, 0, 0}, 10.0f).hit) << "passes over";
    EXPECT_FALSE(phys::ray_shape(c, {3.21f, 0, 5}, {0, 0, -1}, 10.0f).hit) << "passes beside";
    // Lying along x (turned about y): the same side hit from above.
    Placed lying = placed(ShapeKind::kCapsule, {0.2f, 0.5f, 0}, {0, 0, 0}, phys::axis_angle({0, 1, 0}, phys::kPi / 2));
    h = phys::ray_shape(lying, {0.4f, 0, 3}, {0, 0, -1}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 2.8f, 1e-6f);
    expect_vec(h.normal, {0, 0, 1}, 1e-5f, "lying");
    // From inside, along the axis: leaves through the top cap.
    h = phys::ray_shape(c, {3, 0, 1}, {0, 0, 1}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 0.7f, 1e-6f);
    expect_vec(h.normal, {0, 0, 1}, 1e-6f, "inside");
}

TEST(PhysicsQueryRay, Box) {
    Placed b = placed(ShapeKind::kBox, {0.5f, 0.3f, 0.2f}, {3, 0, 2});
    ShapeHit h = phys::ray_shape(b, {0, 0.1f, 2.1f}, {1, 0, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_FLOAT_EQ(h.distance, 2.5f);
    expect_vec(h.normal, {-1, 0, 0}, 0.0f, "x face");
    h = phys::ray_shape(b, {3.2f, 5, 2}, {0, -1, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_FLOAT_EQ(h.distance, 4.7f);
    expect_vec(h.normal, {0, 1, 0}, 0.0f, "y face");
    EXPECT_FALSE(phys::ray_shape(b, {0, 0.31f, 2}, {1, 0, 0}, 10.0f).hit) << "parallel to a face, outside it";
    EXPECT_FALSE(phys::ray_shape(b, {0, 0, 2}, {-1, 0, 0}, 10.0f).hit) << "behind the origin";
    // A diagonal ray from (0, 0, 2) toward (3, 0.3, 2) reaches the x face at 2.5 in x (y = 0.25).
    Vec3 d = unit({3, 0.3f, 0});
    h = phys::ray_shape(b, {0, 0, 2}, d, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 2.5f / d.x, 1e-5f);
    // Turned 90 degrees about z: the 0.3 half extent now faces x.
    Placed turned = b;
    turned.q = phys::axis_angle({0, 0, 1}, phys::kPi / 2);
    h = phys::ray_shape(turned, {0, 0, 2}, {1, 0, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 2.7f, 1e-6f);
    expect_vec(h.normal, {-1, 0, 0}, 1e-6f, "turned");
    // From inside: leaves through the +z face at 0.2.
    h = phys::ray_shape(b, {3, 0, 2}, {0, 0, 1}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_FLOAT_EQ(h.distance, 0.2f);
    expect_vec(h.normal, {0, 0, 1}, 0.0f, "inside");
}

TEST(PhysicsQueryRay, PlaneIsOneSided) {
    Placed p = placed(ShapeKind::kPlane, {}, {0, 0, 0});
    ShapeHit h = phys::ray_shape(p, {1, 2, 3}, {0, 0, -1}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_FLOAT_EQ(h.distance, 3.0f);
    expect_vec(h.normal, {0, 0, 1}, 0.0f, "floor");
    Vec3 d = unit({1, 0, -1});
    h = phys::ray_shape(p, {0, 0, 1}, d, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, std::sqrt(2.0f), 1e-6f);
    EXPECT_FALSE(phys::ray_shape(p, {0, 0, 1}, {0, 0, 1}, 10.0f).hit) << "going up";
    EXPECT_FALSE(phys::ray_shape(p, {0, 0, 1}, {1, 0, 0}, 10.0f).hit) << "parallel";
    EXPECT_FALSE(phys::ray_shape(p, {0, 0, -1}, {0, 0, 1}, 10.0f).hit) << "from below (as MuJoCo)";
    EXPECT_FALSE(phys::ray_shape(p, {0, 0, 3}, {0, 0, -1}, 2.9f).hit) << "out of reach";
    // A wall: the plane x = 2 facing -x (the body's +z turned onto -x).
    Placed wall = placed(ShapeKind::kPlane, {}, {2, 0, 0}, phys::axis_angle({0, 1, 0}, -phys::kPi / 2));
    h = phys::ray_shape(wall, {0, 0, 0}, {1, 0, 0}, 10.0f);
    ASSERT_TRUE(h.hit);
    EXPECT_NEAR(h.distance, 2.0f, 1e-6f);
    expect_vec(h.normal, {-1, 0, 0}, 1e-6f, "wall");
}

TEST(PhysicsQueryRay, UnhandledKindsAreNeverHit) {
    EXPECT_TRUE(phys::query_handles(ShapeKind::kBox));
    Placed odd = placed(ShapeKind(99), {1, 1, 1}, {2, 0, 0});
    EXPECT_FALSE(phys::query_handles(odd.shape.kind));
    EXPECT_FALSE(phys::ray_shape(odd, {0, 0, 0}, {1, 0, 0}, 10.0f).hit);
    EXPECT_GT(phys::distance_to_shape(odd, {0, 0, 0}), 1e30f);
}

TEST(PhysicsQueryClosest, SignedDistanceAndNearestPointOfEachShape) {
    Placed s = placed(ShapeKind::kSphere, {0.5f, 0, 0}, {0, 0, 1});
    phys::SurfacePoint p = phys::closest_on_shape(s, {0, 2, 1});
    EXPECT_FLOAT_EQ(p.distance, 1.5f);
    expect_vec(p.point, {0, 0.5f, 1}, 1e-6f, "sphere");
    EXPECT_FLOAT_EQ(phys::distance_to_shape(s, {0, 0, 1.2f}), -0.3f);

    Placed c = placed(ShapeKind::kCapsule, {0.2f, 0.5f, 0}, {0, 0, 0});
    EXPECT_NEAR(phys::distance_to_shape(c, {1, 0, 0.3f}), 0.8f, 1e-6f);  // beside the segment
    EXPECT_NEAR(phys::distance_to_shape(c, {0, 0, 1.0f}), 0.3f, 1e-6f);  // above the top cap
    EXPECT_NEAR(phys::distance_to_shape(c, {0.1f, 0, 0}), -0.1f, 1e-6f); // inside

    Placed b = placed(ShapeKind::kBox, {0.5f, 0.3f, 0.2f}, {0, 0, 0}, phys::axis_angle({0, 0, 1}, phys::kPi / 2));
    p = phys::closest_on_shape(b, {1, 0, 0}); // the turned box's x half extent is 0.3
    EXPECT_NEAR(p.distance, 0.7f, 1e-6f);
    expect_vec(p.point, {0.3f, 0, 0}, 1e-6f, "box face");
    p = phys::closest_on_shape(b, {1, 1, 1}); // nearest the corner (0.3, 0.5, 0.2)
    EXPECT_NEAR(p.distance, std::sqrt(0.49f + 0.25f + 0.64f), 1e-6f);
    expect_vec(p.point, {0.3f, 0.5f, 0.2f}, 1e-6f, "box corner");
    p = phys::closest_on_shape(b, {0.25f, 0.1f, 0}); // inside: nearest the x face (0.05 away)
    EXPECT_NEAR(p.distance, -0.05f, 1e-6f);
    expect_vec(p.point, {0.3f, 0.1f, 0}, 1e-6f, "box inside");

    Placed plane = placed(ShapeKind::kPlane, {}, {0, 0, 0.5f});
    p = phys::closest_on_shape(plane, {1, 2, 0.2f});
    EXPECT_FLOAT_EQ(p.distance, -0.3f);
    expect_vec(p.point, {1, 2, 0.5f}, 1e-6f, "plane");
}

TEST(PhysicsQueryBatch, LaneSharesCoverEveryItemOnce) {
    for (uint32_t lanes : {1u, 2u, 3u, 7u, 32u})
        for (uint32_t begin : {0u, 5u, 31u}) {
            std::vector<uint32_t> seen(100, 0);
            for (uint32_t lane = 0; lane < lanes; ++lane)
                phys::for_lane_share(begin, 97, lane, lanes, [&](uint32_t i) {
                    EXPECT_EQ(i % lanes, lane);
                    seen[i] += 1;
                });
            for (uint32_t i = 0; i < 100; ++i) EXPECT_EQ(seen[i], i >= begin && i < 97 ? 1u : 0u) << i;
        }
}

TEST(PhysicsQueryBatch, LidarRaysAtWorldFixedAngles) {
    for (uint32_t k = 0; k < 30; ++k) {
        phys::Ray r = phys::lidar_ray({1, 2, 3}, k, 30, 6.0f);
        double a = 2 * M_PI * k / 30;
        EXPECT_NEAR(r.dir.x, std::cos(a), 1e-6) << k;
        EXPECT_NEAR(r.dir.y, std::sin(a), 1e-6) << k;
        EXPECT_EQ(r.dir.z, 0.0f);
        EXPECT_EQ(r.max_distance, 6.0f);
    }
}

/// tests/data/physics/mujoco_rays.txt (tests/python/mujoco_rays.py): a scene and MuJoCo's mj_ray answers.
/// Hulls are built from their vertex lists (build_hulls, as add_to does) and placed by hull_pose.
struct MujocoRays {
    std::vector<Placed> geoms;
    phys::HullTable hulls;
    struct Row {
        Vec3 origin, dir;
        double distance;
        int geom;
    };
    std::vector<Row> rays;
};
MujocoRays mujoco_rays() {
    std::ifstream in(std::string(ORRERY_SOURCE_DIR) + "/tests/data/physics/mujoco_rays.txt");
    MujocoRays out;
    std::vector<std::vector<Vec3>> hull_vertices;
    std::vector<size_t> hull_geoms;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string tag, kind;
        ls >> tag;
        if (tag == "geom") {
            Placed g{};
            ls >> kind >> g.x.x >> g.x.y >> g.x.z >> g.q.w >> g.q.x >> g.q.y >> g.q.z;
            if (kind == "hull") {
                uint32_t n = 0;
                ls >> n;
                std::vector<Vec3> v(n);
                for (Vec3& p : v) ls >> p.x >> p.y >> p.z;
                g.shape = phys::hull_shape(uint32_t(hull_vertices.size()));
                hull_vertices.push_back(v);
                hull_geoms.push_back(out.geoms.size());
            } else {
                ls >> g.shape.dims.x >> g.shape.dims.y >> g.shape.dims.z;
                g.shape.kind = kind == "sphere"    ? ShapeKind::kSphere
                               : kind == "capsule" ? ShapeKind::kCapsule
                               : kind == "box"     ? ShapeKind::kBox
                                                   : ShapeKind::kPlane;
            }
            out.geoms.push_back(g);
        } else if (tag == "ray") {
            MujocoRays::Row r{};
            ls >> r.origin.x >> r.origin.y >> r.origin.z >> r.dir.x >> r.dir.y >> r.dir.z >> r.distance >> r.geom;
            out.rays.push_back(r);
        }
    }
    out.hulls = phys::build_hulls(hull_vertices);
    for (size_t i = 0; i < hull_geoms.size(); ++i) { // the file gives the vertices' frame; bodies sit at the centroid
        Placed& g = out.geoms[hull_geoms[i]];
        phys::Pose body = phys::hull_pose(out.hulls.info[i], g.x, g.q);
        g.x = body.p, g.q = body.q;
    }
    return out;
}

TEST(PhysicsQueryRay, MatchesMuJoCoRays) {
    MujocoRays ref = mujoco_rays();
    ASSERT_EQ(ref.geoms.size(), 30u) << "tests/data/physics/mujoco_rays.txt missing or changed";
    ASSERT_EQ(ref.hulls.info.size(), 4u);
    ASSERT_EQ(ref.rays.size(), 400u);
    const phys::HullSet hulls = ref.hulls.view();
    uint32_t hits = 0, inside = 0, kinds[5] = {};
    double worst = 0.0;
    for (size_t i = 0; i < ref.rays.size(); ++i) {
        const MujocoRays::Row& r = ref.rays[i];
        int geom = -1;
        float best = 1e6f; // mj_ray looks without limit
        for (size_t g = 0; g < ref.geoms.size(); ++g) {
            ShapeHit h = phys::ray_shape(ref.geoms[g], r.origin, r.dir, best, hulls);
            if (h.hit && (geom < 0 || h.distance < best)) best = h.distance, geom = int(g);
            if (ref.geoms[g].shape.kind != ShapeKind::kPlane &&
                phys::distance_to_shape(ref.geoms[g], r.origin, hulls) < 0)
                inside += 1;
        }
        ASSERT_EQ(geom, r.geom) << "ray " << i;
        if (geom < 0) continue;
        hits += 1;
        kinds[uint32_t(ref.geoms[geom].shape.kind)] += 1;
        worst = std::max(worst, std::abs(double(best) - r.distance));
        EXPECT_NEAR(best, r.distance, 1e-4) << "ray " << i;
    }
    std::printf("mj_ray: %u of %zu rays hit (%u spheres, %u capsules, %u boxes, %u planes, %u hulls), %u start inside "
                "a solid; largest distance difference %.2e m\n",
                hits, ref.rays.size(), kinds[0], kinds[1], kinds[2], kinds[3], kinds[4], inside, worst);
    EXPECT_GT(hits, 300u);
    EXPECT_GT(kinds[uint32_t(ShapeKind::kHull)], 20u) << "hulls are tested too";
}

// --- a world --------------------------------------------------------------------

SimOptions options(uint32_t worlds, uint32_t threads = 1, uint32_t lanes = 1) {
    SimOptions o;
    o.num_worlds = worlds;
    o.device = "cpu";
    o.threads = threads;
    o.cpu_lanes = lanes;
    return o;
}
EnvSpec scene(const std::string& name, EnvOptions extra = {}) {
    register_builtin_envs();
    extra["scene"] = name;
    return make_env_spec("physics_scenes", extra);
}
/// Row `row` of physics_scenes' Body archetype in world `w` (row 0: the ground).
Entity body(const WorldView& w, uint32_t row) {
    Entity e{};
    uint32_t i = 0;
    w.each<physics_scenes::Body>([&](Entity x) {
        if (i++ == row) e = x;
    });
    return e;
}
bool same(Entity a, Entity b) { return a.index == b.index && a.gen == b.gen; }

TEST(PhysicsQueryWorld, FirstHitExclusionAndMasks) {
    // The stack: a floor, and cubes of half size 0.1 centred at z = 0.1, 0.3, 0.5 (as spawned, before a step).
    Simulator sim(scene("stack"), options(2));
    sim.reset(1);
    WorldView w(sim.backend().storage(), 1);
    Entity floor = body(w, 0), low = body(w, 1), mid = body(w, 2), top = body(w, 3);
    const phys::Ray down{{0, 0, 2}, {0, 0, -1}, 10.0f};
    phys::RayHit h = phys::cast_ray(w, down);
    ASSERT_TRUE(h.hit());
    EXPECT_TRUE(same(h.entity, top));
    EXPECT_NEAR(h.distance, 1.4f, 1e-6f);
    expect_vec(h.normal, {0, 0, 1}, 1e-6f, "top");
    h = phys::cast_ray(w, down, {top, 0});
    EXPECT_TRUE(same(h.entity, mid)) << "the excluded caster is passed through";
    EXPECT_NEAR(h.distance, 1.6f, 1e-6f);
    h = phys::cast_ray(w, down, {Entity{}, phys::kSkipDynamic});
    EXPECT_TRUE(same(h.entity, floor));
    EXPECT_FLOAT_EQ(h.distance, 2.0f);
    h = phys::cast_ray(w, down, {Entity{}, phys::kSkipDynamic | phys::kSkipPlanes});
    EXPECT_FALSE(h.hit());
    EXPECT_EQ(h.distance, 10.0f) << "no hit reads the ray's reach";
    h = phys::cast_ray(w, down, {}, [&](Entity e) { return !same(e, top) && !same(e, mid); });
    EXPECT_TRUE(same(h.entity, low)) << "the accept predicate";
    // From the side at the bottom cube's height.
    h = phys::cast_ray(w, {{1, 0, 0.1f}, {-1, 0, 0}, 5.0f}, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(same(h.entity, low));
    EXPECT_NEAR(h.distance, 0.9f, 1e-6f);
    EXPECT_FALSE(phys::cast_ray(w, {{1, 0, 0.1f}, {-1, 0, 0}, 0.85f}).hit()) << "out of reach";
    // Line of sight from beside the top cube to the bottom one: the floor does not block, the cubes do.
    EXPECT_TRUE(phys::in_sight(w, {1, 0, 0.1f}, {0, 0, 0.1f}, low));
    EXPECT_FALSE(phys::in_sight(w, {0, 0, 2}, {0, 0, 0.1f}, low)) << "the cubes above are in the way";
    EXPECT_FALSE(phys::in_sight(w, {0, 0, 2}, {0, 0, 0.1f}, low, {Entity{}, phys::kSkipDynamic}))
        << "a target the filter skips is never seen";
    EXPECT_TRUE(phys::in_sight(w, {0, 0, 2}, {0, 0, 0.5f}, top));
}

TEST(PhysicsQueryWorld, StaticBodiesAreMaskedAndLockedOnesStillBlock) {
    // box_slide with freeze_at=1: after the first step the box (half 0.1) is static.
    Simulator sim(scene("box_slide", {{"freeze_at", "1"}, {"speed", "0"}}), options(1));
    sim.reset(1);
    sim.step();
    WorldView w(sim.backend().storage(), 0);
    Entity box = body(w, 1);
    ASSERT_EQ(w.get<phys::BodyType>(box)->kind, phys::BodyKind::kStatic);
    const phys::Ray side{{-2, 0, 0.1f}, {1, 0, 0}, 5.0f};
    phys::RayHit h = phys::cast_ray(w, side, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(same(h.entity, box)) << "a static (locked) box blocks";
    EXPECT_NEAR(h.distance, 2.0f - 0.1f - w.get<phys::Pose>(box)->p.x, 2e-6f);
    EXPECT_FALSE(phys::cast_ray(w, side, {Entity{}, phys::kSkipStatic}).hit()) << "skipping static bodies";
}

TEST(PhysicsQueryWorld, ClosestBodyWithinARadius) {
    Simulator sim(scene("stack"), options(1));
    sim.reset(1);
    WorldView w(sim.backend().storage(), 0);
    Entity floor = body(w, 0), low = body(w, 1), mid = body(w, 2);
    phys::Nearest n = phys::closest_body(w, {0.3f, 0, 0.1f}, 0.25f);
    EXPECT_TRUE(same(n.entity, floor)) << "the floor is 0.1 below";
    EXPECT_NEAR(n.distance, 0.1f, 1e-6f);
    n = phys::closest_body(w, {0.3f, 0, 0.1f}, 0.25f, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(same(n.entity, low));
    EXPECT_NEAR(n.distance, 0.2f, 1e-6f);
    expect_vec(n.point, {0.1f, 0, 0.1f}, 1e-6f, "nearest point");
    n = phys::closest_body(w, {0.3f, 0, 0.1f}, 0.15f, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(n.entity.is_null()) << "nothing within 0.15 m";
    // Equidistant from two cubes (z = 0.2 lies on both faces' line): the first in order wins.
    n = phys::closest_body(w, {0.3f, 0, 0.2f}, 0.25f, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(same(n.entity, low));
    n = phys::closest_body(w, {0.3f, 0, 0.2f}, 0.25f, {low, phys::kSkipPlanes});
    EXPECT_TRUE(same(n.entity, mid)) << "excluded";
    n = phys::closest_body(w, {0, 0, 0.12f}, 0.25f, {Entity{}, phys::kSkipPlanes});
    EXPECT_TRUE(same(n.entity, low)) << "inside counts";
    EXPECT_NEAR(n.distance, -0.08f, 1e-6f);
}

/// Every body of world w tested by brute force (no bounding spheres): the reference for cast_ray.
phys::RayHit brute_force(const WorldView& w, const phys::Ray& r, phys::QueryFilter f) {
    phys::RayHit best{Entity{}, r.max_distance, {0, 0, 0}};
    w.each_with<phys::Pose, phys::Shape, phys::BodyType>([&](Entity e) {
        if (same(e, f.exclude)) return;
        const phys::Shape s = *w.get<phys::Shape>(e);
        if ((f.skip & phys::kSkipPlanes) && s.kind == ShapeKind::kPlane) return;
        const phys::Pose p = *w.get<phys::Pose>(e);
        ShapeHit h = phys::ray_shape({s, p.p, p.q}, r.origin, r.dir, r.max_distance, phys::hull_set(w));
        if (h.hit && (best.entity.is_null() || h.distance < best.distance)) best = {e, h.distance, h.normal};
    });
    return best;
}

TEST(PhysicsQueryWorld, BoundingSpheresNeverChangeTheAnswer) {
    Simulator sim(scene("crowd", {{"count", "36"}}), options(3));
    sim.reset(5);
    for (uint32_t i = 0; i < 20; ++i) sim.step();
    Rng rng(1, 2, 3, 4, 5);
    uint32_t hits = 0;
    for (uint32_t world = 0; world < 3; ++world) {
        WorldView w(sim.backend().storage(), world);
        for (uint32_t i = 0; i < 2000; ++i) {
            Vec3 o{rng.uniform() * 6 - 3, rng.uniform() * 6 - 3, rng.uniform() * 1.0f};
            Vec3 d = unit({rng.uniform() * 2 - 1, rng.uniform() * 2 - 1, rng.uniform() * 2 - 1});
            phys::Ray r{o, d, rng.uniform() * 8};
            phys::QueryFilter f{i % 3 ? Entity{} : body(w, 1 + i % 30), i % 2 ? phys::kSkipPlanes : 0u};
            phys::RayHit a = phys::cast_ray(w, r, f), b = brute_force(w, r, f);
            ASSERT_TRUE(same(a.entity, b.entity)) << i;
            ASSERT_EQ(a.distance, b.distance) << i;
            ASSERT_EQ(a.normal.x, b.normal.x) << i;
            hits += a.hit();
        }
    }
    EXPECT_GT(hits, 2000u) << "a third of the rays at least hit something (the rest leave upward or fall short)";
}

TEST(PhysicsQueryRay, DistanceAloneIsRayShapesBitForBit) {
    // ray_distance (hide-and-seek's ray scene) is ray_shape without the normal:
    // the same distance bit for bit, and a miss exactly when ray_shape misses.
    phys::HullTable table = phys::build_hulls({phys::wedge_vertices()});
    const phys::HullSet hulls = table.view();
    Rng rng(7, 8, 9, 10, 11);
    uint32_t hits = 0, cases = 0;
    for (uint32_t i = 0; i < 20000; ++i) {
        Vec3 x{rng.uniform() * 4 - 2, rng.uniform() * 4 - 2, rng.uniform() * 2 - 1};
        Quat q = phys::normalize(
            Quat{rng.uniform() * 2 - 1, rng.uniform() * 2 - 1, rng.uniform() * 2 - 1, rng.uniform() * 2 - 1});
        if (i % 4 == 0) q = kId; // axis-aligned: zero direction components and ties between slabs
        Vec3 dims{0.1f + rng.uniform(), 0.1f + rng.uniform(), 0.1f + rng.uniform()};
        const ShapeKind kinds[] = {ShapeKind::kSphere, ShapeKind::kCapsule, ShapeKind::kBox, ShapeKind::kPlane,
                                   ShapeKind::kHull};
        ShapeKind k = kinds[i % 5];
        if (k == ShapeKind::kHull) dims = {float(i % 10 == 4 ? 1 : 0), 0, 0}; // index 1: a hull the table lacks
        Placed s = placed(k, dims, x, q);
        Vec3 o{rng.uniform() * 6 - 3, rng.uniform() * 6 - 3, rng.uniform() * 2 - 1};
        Vec3 aim = x - o + Vec3{rng.uniform() - 0.5f, rng.uniform() - 0.5f, rng.uniform() - 0.5f}; // near the shape
        Vec3 d = i % 3 == 0 ? Vec3{float(i % 2) * 2 - 1, 0, 0} : unit(aim);
        float reach = rng.uniform() * 6;
        ShapeHit h = phys::ray_shape(s, o, d, reach, hulls);
        float t = phys::ray_distance(s, o, d, reach, hulls);
        ++cases;
        ASSERT_EQ(h.hit, !(t < 0.0f)) << i;
        if (!h.hit) continue;
        ++hits;
        uint32_t a, b;
        std::memcpy(&a, &h.distance, 4), std::memcpy(&b, &t, 4);
        ASSERT_EQ(a, b) << i;
    }
    EXPECT_GT(hits, cases / 5) << "rays aimed near the shape (about a quarter hit within reach)";
}

TEST(PhysicsQueryRay, BranchFreeBoxParamIsBoxSpansBitForBit) {
    // box_surface_param (hide-and-seek's CPU lidar computes many at once) is
    // surface_param(box_span(...)) with no branch, and read against a reach it
    // gives ray_distance's answer for a box: the same bits, hit or miss. An
    // unturned box's ray taken as it is (the host's shortcut) gives the bits
    // of the ray turned by the identity.
    Rng rng(3, 1, 4, 1, 5);
    uint32_t hits = 0, flat = 0, inside = 0, cut_by_reach = 0;
    const float axis_values[] = {0.0f, -0.0f, 1.0f, -1.0f, 0.5f};
    for (uint32_t i = 0; i < 40000; ++i) {
        Vec3 e{0.05f + rng.uniform() * 2, 0.05f + rng.uniform() * 2, 0.05f + rng.uniform() * 2};
        Vec3 o{rng.uniform() * 8 - 4, rng.uniform() * 8 - 4, rng.uniform() * 8 - 4};
        if (i % 7 == 0) o = {o.x * 0.1f, o.y * 0.1f, o.z * 0.1f}; // often inside
        if (i % 11 == 0) o.x = e.x;                               // on a face's plane
        Vec3 aim = Vec3{rng.uniform() - 0.5f, rng.uniform() - 0.5f, rng.uniform() - 0.5f} * 2.0f - o;
        Vec3 d = unit(aim);
        if (i % 3 == 0) { // axis-parallel components: box_span's flat slabs
            d.z = axis_values[i % 5];
            d = unit(d);
            if (i % 2) d.y = 0.0f;
        }
        const Vec3 at{float(i % 3) - 1.0f, 0.25f * float(i % 5), 0.0f}; // the box's place, unturned
        const Vec3 ow = o + at;
        o = ow - at; // the origin in the box's frame, as ray_shape makes it
        const float p = phys::detail::box_surface_param(o.x, o.y, o.z, d.x, d.y, d.z, e.x, e.y, e.z);
        const float q = phys::detail::surface_param(phys::detail::box_span(o, d, e).span);
        uint32_t a, b;
        std::memcpy(&a, &p, 4), std::memcpy(&b, &q, 4);
        ASSERT_EQ(a, b) << i;
        const float reach = rng.uniform() * 8;
        const float t = phys::ray_distance(placed(ShapeKind::kBox, e, at), ow, d, reach); // the host: the ray as it is
        const Vec3 lo = phys::unrotate(kId, ow - at), ld = phys::unrotate(kId, d);        // the rotation's own bits
        const float turned = phys::ray_distance(placed(ShapeKind::kBox, e, at), ow, d, reach, {}, &lo, &ld);
        std::memcpy(&a, &t, 4), std::memcpy(&b, &turned, 4);
        ASSERT_EQ(a, b) << i;
        const float read = p < 0.0f || p > reach ? -1.0f : p; // the lidar's reading against its reach
        std::memcpy(&a, &read, 4), std::memcpy(&b, &t, 4);
        ASSERT_EQ(a, b) << i;
        hits += !(t < 0.0f), flat += d.x == 0.0f || d.y == 0.0f || d.z == 0.0f;
        inside += std::abs(o.x) < e.x && std::abs(o.y) < e.y && std::abs(o.z) < e.z;
        cut_by_reach += p >= 0.0f && p > reach;
    }
    EXPECT_GT(hits, 4000u);
    EXPECT_GT(flat, 4000u);
    EXPECT_GT(inside, 1000u);
    EXPECT_GT(cut_by_reach, 1000u);
}

TEST(PhysicsQueryRay, BoxBatchGivesTheScalarTestsBits) {
    // Rays against boxes four to a vector (BoxRays, hide-and-seek's CPU lidar): each the
    // scalar box_surface_param's bits, for any count (the last vector's unused
    // lanes are not read), and past the capacity the pairs are left to the ray loop.
    Rng rng(9, 8, 7, 6, 5);
    for (uint32_t n : {1u, 3u, 4u, 37u, phys::BoxRays::kCapacity, phys::BoxRays::kCapacity + 5}) {
        phys::BoxRays batch;
        std::vector<float> want;
        for (uint32_t p = 0; p < n; ++p) {
            Vec3 e{0.05f + rng.uniform() * 3, 0.05f + rng.uniform() * 3, 0.05f + rng.uniform() * 0.5f};
            Vec3 o{rng.uniform() * 12 - 6, rng.uniform() * 12 - 6, rng.uniform() * 2 - 1};
            float a = rng.uniform() * 6.2831853f;
            Vec3 d{std::cos(a), std::sin(a), 0.0f}; // the lidar's level rays: z is a flat slab
            if (p % 5 == 0) d = {1.0f, 0.0f, 0.0f};
            batch.push(o, d, e);
            want.push_back(phys::detail::box_surface_param(o.x, o.y, o.z, d.x, d.y, d.z, e.x, e.y, e.z));
        }
        batch.solve();
        ASSERT_EQ(batch.n, std::min(n, phys::BoxRays::kCapacity));
        uint32_t hits = 0;
        for (uint32_t p = 0; p < batch.n; ++p) {
            const float got = batch.distance(p);
            uint32_t a, b;
            std::memcpy(&a, &got, 4), std::memcpy(&b, &want[p], 4);
            ASSERT_EQ(a, b) << n << " pairs, pair " << p;
            hits += got >= 0.0f;
        }
        if (n >= 37) { EXPECT_GT(hits, 0u) << n; }
    }
}

TEST(PhysicsQueryRay, LevelBoxTestGivesTheScalarTestsBitsInsideTheZSlab) {
    // box_surface_param4_level (hide-and-seek's lidar against its walls): level rays (dz == 0)
    // from inside the box's z slab, only the x and y slabs, each lane the scalar test's bits;
    // from outside the z slab the scalar test misses on every ray (the caller skips the box).
    using phys::detail::V4f;
    Rng rng(4, 3, 2, 1, 9);
    uint32_t hits = 0, flat = 0, outside = 0;
    for (uint32_t i = 0; i < 4000; ++i) {
        const Vec3 e{0.05f + rng.uniform() * 3, 0.05f + rng.uniform() * 3, 0.05f + rng.uniform() * 0.5f};
        const Vec3 o{rng.uniform() * 12 - 6, rng.uniform() * 12 - 6, (rng.uniform() * 2 - 1) * e.z * 1.5f};
        V4f dx, dy;
        float want[4];
        for (uint32_t l = 0; l < 4; ++l) {
            const float a = rng.uniform() * 6.2831853f;
            Vec3 d{std::cos(a), std::sin(a), 0.0f};
            if ((i + l) % 7 == 0) d = l % 2 ? Vec3{0.0f, -1.0f, 0.0f} : Vec3{1.0f, 0.0f, 0.0f}; // flat x or y slabs
            dx[l] = d.x, dy[l] = d.y, flat += d.x == 0.0f || d.y == 0.0f;
            want[l] = phys::detail::box_surface_param(o.x, o.y, o.z, d.x, d.y, d.z, e.x, e.y, e.z);
        }
        const auto splat = phys::detail::splat;
        if (o.z < -e.z || o.z > e.z) {
            for (float w : want) ASSERT_LT(w, 0.0f) << i;
            ++outside;
            continue;
        }
        const V4f got = phys::detail::box_surface_param4_level(splat(o.x), splat(o.y), dx, dy, splat(e.x), splat(e.y));
        for (uint32_t l = 0; l < 4; ++l) {
            const float g = got[l];
            uint32_t a, b;
            std::memcpy(&a, &g, 4), std::memcpy(&b, &want[l], 4);
            ASSERT_EQ(a, b) << i << " lane " << l;
            hits += g >= 0.0f;
        }
    }
    EXPECT_GT(hits, 1000u);
    EXPECT_GT(flat, 500u);
    EXPECT_GT(outside, 500u);
}

TEST(PhysicsQueryWorld, LineOfSightBetweenEveryAgentAndEveryBodyInLanes) {
    // Hide-and-seek's masks: a sight line from each agent's centre to each other body's centre; a
    // batch numbered agent * bodies + body, split over lanes as a lane system would.
    Simulator sim(scene("crowd", {{"count", "36"}}), options(2));
    sim.reset(8);
    for (uint32_t i = 0; i < 30; ++i) sim.step();
    uint32_t seen = 0, hidden = 0;
    for (uint32_t world = 0; world < 2; ++world) {
        WorldView w(sim.backend().storage(), world);
        std::vector<Entity> agents, bodies;
        w.each<physics_scenes::Body>([&](Entity e) {
            if (w.get<phys::Shape>(e)->kind != ShapeKind::kPlane) bodies.push_back(e);
        });
        for (Entity e : bodies)
            if (w.get<phys::Shape>(e)->kind == ShapeKind::kSphere) agents.push_back(e);
        const uint32_t n = uint32_t(agents.size() * bodies.size());
        std::vector<uint8_t> serial(n), split(n, 2);
        auto sight = [&](uint32_t i) {
            Entity from = agents[i / bodies.size()], to = bodies[i % bodies.size()];
            return uint8_t(
                phys::in_sight(w, w.get<phys::Pose>(from)->p, w.get<phys::Pose>(to)->p, to, {from, phys::kSkipPlanes}));
        };
        phys::for_lane_share(0, n, 0, 1, [&](uint32_t i) { serial[i] = sight(i); });
        for (uint32_t lane = 0; lane < 5; ++lane)
            phys::for_lane_share(0, n, lane, 5, [&](uint32_t i) { split[i] = sight(i); });
        EXPECT_EQ(serial, split);
        for (uint32_t i = 0; i < n; ++i) {
            Entity from = agents[i / bodies.size()], to = bodies[i % bodies.size()];
            if (same(from, to)) continue;
            Vec3 a = w.get<phys::Pose>(from)->p, b = w.get<phys::Pose>(to)->p;
            float l = phys::length(b - a);
            phys::RayHit h = brute_force(w, {a, (b - a) * (1.0f / l), l}, {from, phys::kSkipPlanes});
            ASSERT_EQ(serial[i], same(h.entity, to) ? 1 : 0) << i;
            (serial[i] ? seen : hidden) += 1;
        }
    }
    EXPECT_GT(seen, 50u);
    EXPECT_GT(hidden, 50u) << "the crowd hides some bodies behind others";
}

// --- lidar in physics_scenes (rays=N) --------------------------------------------

constexpr uint32_t kScanners = physics_scenes::kMaxScanners;

std::vector<float> lidar_of(Simulator& sim) {
    sim.synchronize();
    const TensorView& t = sim.tensor("lidar");
    std::vector<float> out(t.bytes() / 4);
    sim.backend().copy_to_host(out.data(), t.data, t.bytes());
    return out;
}

/// The agents (turn-locked spheres) of world w in body order.
std::vector<Entity> agents_of(const WorldView& w) {
    std::vector<Entity> out;
    w.each<physics_scenes::Body>([&](Entity e) {
        uint32_t upright = phys::kLockTurnX | phys::kLockTurnY;
        if (w.get<phys::Shape>(e)->kind == ShapeKind::kSphere && (w.get<phys::Locks>(e)->mask & upright) == upright)
            out.push_back(e);
    });
    return out;
}

TEST(PhysicsQueryLidar, OffByDefault) {
    EnvSpec plain = scene("crowd");
    EXPECT_EQ(plain.archetype_specs().size(), 3u) << "no Scanner archetype: storage as before the option existed";
    for (const ExportSpec& e : plain.exports()) EXPECT_NE(e.name, "lidar");
    EnvSpec with = scene("crowd", {{"rays", "30"}});
    EXPECT_EQ(with.archetype_specs().size(), 4u);
    Simulator sim(with, options(2));
    EXPECT_EQ(sim.tensor("lidar").user_shape, (std::vector<int64_t>{2, kScanners, 30}));
    EXPECT_THROW(scene("crowd", {{"rays", "257"}}), Error);
}

TEST(PhysicsQueryLidar, ReadsTheFirstBodyAlongEachRayOrTheRange) {
    for (const char* name : {"crowd", "mixed"}) {
        Simulator sim(scene(name, {{"rays", "30"}, {"count", "36"}, {"ramps", "2"}, {"horizon", "1000"}}), options(3));
        sim.reset(2);
        uint32_t walls = 0, open = 0;
        for (uint32_t step = 0; step < 40; ++step) {
            if (step) sim.step();
            std::vector<float> lidar = lidar_of(sim);
            for (uint32_t world = 0; world < 3; ++world) {
                WorldView w(sim.backend().storage(), world);
                std::vector<Entity> agents = agents_of(w);
                ASSERT_EQ(agents.size(), std::string(name) == "crowd" ? 9u : 3u);
                for (uint32_t a = 0; a < kScanners; ++a)
                    for (uint32_t k = 0; k < 30; ++k) {
                        float got = lidar[(world * kScanners + a) * 30 + k];
                        if (a >= agents.size()) {
                            ASSERT_EQ(got, 0.0f) << "rows without an agent read 0";
                            continue;
                        }
                        Vec3 o = w.get<phys::Pose>(agents[a])->p;
                        phys::Ray r = phys::lidar_ray(o, k, 30, 6.0f);
                        phys::RayHit want = brute_force(w, r, {agents[a], phys::kSkipPlanes});
                        ASSERT_EQ(got, want.distance) << name << " world " << world << " agent " << a << " ray " << k;
                        if (std::string(name) == "crowd") { // inside the walls' inner faces at +-3.0
                            float tx = r.dir.x > 0   ? (3.0f - o.x) / r.dir.x
                                       : r.dir.x < 0 ? (-3.0f - o.x) / r.dir.x
                                                     : 1e9f;
                            float ty = r.dir.y > 0   ? (3.0f - o.y) / r.dir.y
                                       : r.dir.y < 0 ? (-3.0f - o.y) / r.dir.y
                                                     : 1e9f;
                            ASSERT_LE(got, std::min(tx, ty) + 1e-4f) << "seen through a wall";
                            walls += got > std::min(tx, ty) - 1e-4f;
                        } else {
                            open += got == 6.0f;
                        }
                    }
            }
        }
        if (std::string(name) == "crowd") {
            EXPECT_GT(walls, 1000u) << "many rays reach the walls";
        } else {
            EXPECT_GT(open, 1000u) << "rays into the open read the range";
        }
    }
}

TEST(PhysicsQueryLidar, SameBytesWhateverTheThreadsAndLanes) {
    EnvOptions o{{"rays", "30"}, {"count", "36"}, {"ramps", "2"}, {"horizon", "60"}}; // ramps: hulls too
    Simulator a(scene("crowd", o), options(7, 1, 1));
    Simulator b(scene("crowd", o), options(7, 2, 3));
    Simulator c(scene("crowd", o), options(7, 2, 32));
    for (Simulator* s : {&a, &b, &c}) s->reset(4);
    for (uint32_t i = 0; i < 130; ++i) { // past two truncations
        for (Simulator* s : {&a, &b, &c}) s->step();
        std::vector<float> want = lidar_of(a);
        ASSERT_EQ(std::memcmp(want.data(), lidar_of(b).data(), want.size() * 4), 0) << "2 threads, 3 lanes, step " << i;
        ASSERT_EQ(std::memcmp(want.data(), lidar_of(c).data(), want.size() * 4), 0) << "32 lanes, step " << i;
    }
    EXPECT_EQ(a.errors(), std::vector<uint32_t>(7, 0)) << "resets make their scanners afresh";
}

/// FNV-1a of the lidar after 100 steps of crowd (36 pieces, 9 agents, 30 rays), 5 worlds, seed 3.
TEST(PhysicsQueryLidar, PinnedHash) {
    Simulator sim(scene("crowd", {{"rays", "30"}, {"count", "36"}, {"horizon", "1000"}}), options(5, 2));
    sim.reset(3);
    for (uint32_t i = 0; i < 100; ++i) sim.step();
    std::vector<float> lidar = lidar_of(sim);
    uint64_t h = 14695981039346656037ull;
    const auto* b = reinterpret_cast<const uint8_t*>(lidar.data());
    for (size_t i = 0; i < lidar.size() * 4; ++i) h = (h ^ b[i]) * 1099511628211ull;
    std::printf("lidar hash 0x%016llx\n", (unsigned long long)h);
    EXPECT_EQ(h, 0x0de8171d771060faull) << "update the pin in the same commit as a change of results, saying why";
}

TEST(PhysicsQueryLidar, CompilesThroughNvrtcStagedAndDirect) {
    EnvSpec s = scene("crowd", {{"rays", "30"}});
    // The staged form runs the lane node one world per thread group; the direct form spreads it
    // over 32 lanes with warp barriers (per-node launches run the same device functions).
    for (auto form : {cuda::KernelForm::kStaged, cuda::KernelForm::kDirect}) {
        Plan plan = make_plan(s, AutoReset::kSameStep);
        cuda::KernelSource k = cuda::generate_kernels(s, plan, form);
        ASSERT_NE(k.text.find("scan"), std::string::npos);
        expect_nvrtc_compiles(s, k);
    }
}

TEST(PhysicsQueryGpu, LidarMatchesTheCpuBitForBitInEveryKernelForm) {
    REQUIRE_GPU();
    for (const char* name : {"crowd", "mixed"}) {
        EnvOptions o{{"rays", "30"}, {"count", "36"}, {"ramps", "2"}, {"horizon", "150"}};
        Simulator cpu(scene(name, o), options(300, 2));
        SimOptions staged_o = options(300), direct_o = options(300), node_o = options(300);
        for (SimOptions* x : {&staged_o, &direct_o, &node_o}) x->device = "cuda";
        staged_o.gpu.stage = true;
        direct_o.gpu.stage = false;
        node_o.per_node_launches = true;
        Simulator staged(scene(name, o), staged_o), direct(scene(name, o), direct_o), node(scene(name, o), node_o);
        std::vector<Simulator*> sims = {&cpu, &staged, &direct, &node};
        for (Simulator* s : sims) s->reset(11);
        for (uint32_t step = 0; step < 320; ++step) {
            for (Simulator* s : sims) s->step();
            std::vector<float> want = lidar_of(cpu);
            for (size_t i = 1; i < sims.size(); ++i)
                ASSERT_EQ(std::memcmp(want.data(), lidar_of(*sims[i]).data(), want.size() * 4), 0)
                    << name << ": " << sims[i]->backend().describe() << " differs at step " << step;
        }
    }
}

// --- NVRTC --------------------------------------------------------------------

TEST(PhysicsQueryNvrtc, TheHeaderAndAKernelUsingEveryQueryCompile) {
    cuda::CompileRequest req;
    req.label = "physics/query.hpp";
    // The templates instantiated as a device kernel would: a ray per thread, a nearest body, a sight line.
    req.source = R"(#include "physics/query.hpp"
extern "C" __global__ void query_probe(const orrery::Storage* s, float* out) {
    orrery::WorldView w(*s, blockIdx.x);
    phys::RayHit h = phys::cast_ray(w, phys::lidar_ray({0, 0, 0.5f}, threadIdx.x, 30, 6.0f), {{}, phys::kSkipPlanes});
    phys::Nearest n = phys::closest_body(w, {0, 0, 0}, 0.25f, {}, [](orrery::Entity e) { return e.row() > 0; });
    float seen = phys::in_sight(w, {0, 0, 1}, {1, 0, 1}, h.entity) ? 1.0f : 0.0f;
    phys::for_lane_share(0, 30, threadIdx.x, blockDim.x, [&](orrery::uint32_t i) { out[i] = h.distance + n.distance + seen; });
}
)";
    req.env_header = "physics/query.hpp";
    req.arch = 90;
    req.use_cache = false;
    EXPECT_NO_THROW(cuda::compile_module(req));
}

} // namespace
