// The physics playground (physics_scenes' crowd scene with random pushes,
// `kicks`): the pushes happen, nothing leaves the walled arena, and the same
// seed gives the same bytes at any batch size and thread count, pinned.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/simulator.hpp"
#include "envs/physics_scenes/scenes.hpp"
#include "envs/registry.hpp"
#include "batch_support.hpp"
#include "gpu_support.hpp"

namespace {
using namespace orrery;

EnvSpec playground(uint32_t kicks) {
    register_builtin_envs();
    return make_env_spec("physics_scenes", {{"scene", "crowd"}, {"kicks", std::to_string(kicks)}, {"horizon", "200"}});
}

SimOptions cpu(uint32_t worlds, uint32_t threads) {
    SimOptions o;
    o.num_worlds = worlds;
    o.device = "cpu";
    o.threads = threads;
    return o;
}

TEST(PhysicsPlayground, KicksPushBodiesAndNothingLeavesTheArena) {
    Simulator calm(playground(0), cpu(4, 1)), kicked(playground(4), cpu(4, 1));
    calm.reset(5);
    kicked.reset(5);
    calm.step();
    kicked.step();
    for (uint32_t w = 0; w < 4; ++w) EXPECT_NE(calm.state_hash(w), kicked.state_hash(w)) << "world " << w;
    float fastest = 0.0f;
    for (uint32_t i = 0; i < 400; ++i) { // past a truncation at 200
        kicked.step();
        for (uint32_t w = 0; w < 4; ++w)
            kicked.read_world(w, [&](Ctx& ctx) {
                ctx.each<physics_scenes::Body>([&](Entity e) {
                    const phys::Shape& s = *ctx.get<phys::Shape>(e);
                    if (s.kind == phys::ShapeKind::kPlane ||
                        ctx.get<phys::BodyType>(e)->kind != phys::BodyKind::kDynamic)
                        return;
                    phys::Vec3 p = ctx.get<phys::Pose>(e)->p, v = ctx.get<phys::Velocity>(e)->v;
                    // The walls' inner faces are at +-3.0 m; the largest piece reaches 0.4 m from its centre.
                    ASSERT_LT(std::fabs(p.x), 3.0f) << "world " << w << " step " << i;
                    ASSERT_LT(std::fabs(p.y), 3.0f) << "world " << w << " step " << i;
                    ASSERT_GT(p.z, 0.0f) << "world " << w << " step " << i;
                    fastest = std::fmax(fastest, phys::length(v));
                });
            });
    }
    EXPECT_EQ(kicked.errors(), std::vector<uint32_t>(4, 0));
    EXPECT_GT(fastest, 1.0f); // the pushes (2 m/s each) keep the crowd moving
    std::printf("playground: fastest body %.2f m/s over 400 steps\n", fastest);
}

TEST(PhysicsPlayground, SameBytesAtAnyBatchSizeAndThreadCount) {
    Simulator small(playground(4), cpu(3, 1)), large(playground(4), cpu(8, 2));
    small.reset(7);
    large.reset(7);
    for (uint32_t i = 0; i < 250; ++i) {
        small.step();
        large.step();
        for (uint32_t w = 0; w < 3; ++w) ASSERT_EQ(small.state_hash(w), large.state_hash(w)) << "step " << i;
    }
}

// The state of 4 worlds after 150 steps, seed 3. A change of results changes
// it: update it in the same commit, saying why.
constexpr uint64_t kPlaygroundPin = 0xa66763a94a5de7e3;

TEST(PhysicsPlayground, PinnedHash) {
    Simulator sim(playground(4), cpu(4, 2));
    sim.reset(3);
    for (uint32_t i = 0; i < 150; ++i) sim.step();
    uint64_t h = batch_hash(sim);
    EXPECT_EQ(h, kPlaygroundPin) << "now hashes to 0x" << std::hex << h;
}

// One kernel form (the direct one, which a world of this size runs in at
// scale): NVRTC takes 40-80 s a form on the 2-core machine.
TEST(PhysicsPlaygroundNvrtc, CompilesTheDirectMegakernel) {
    EnvSpec s = playground(4);
    Plan plan = make_plan(s, AutoReset::kSameStep);
    cuda::KernelSource k = cuda::generate_kernels(s, plan, cuda::KernelForm::kDirect);
    expect_nvrtc_compiles(s, k);
}

} // namespace
