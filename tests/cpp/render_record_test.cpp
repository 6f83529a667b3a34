// orrery-record end to end (frames on disk follow the simulation; a video is
// written), the GIF encoder read back by an independent decoder (stb_image),
// and a 3-D draw table turned into meshes.

#include <gtest/gtest.h>

#ifndef ORRERY_RENDER_DISABLED
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <stb_image.h>

#include "engine/simulator.hpp"
#include "envs/registry.hpp"
#include "envs/tutorial/tag.hpp"
#include "render/image_io.hpp"
#include "render/render.hpp"
#include "render_support.hpp"

namespace {

namespace fs = std::filesystem;

fs::path temp_dir(const std::string& name) {
    fs::path p = fs::temp_directory_path() / ("orrery_record_test_" + std::to_string(::getpid()) + "_" + name);
    fs::remove_all(p);
    return p;
}

std::string run(const std::string& cmd, int& rc) {
    std::string log = (fs::temp_directory_path() / ("orrery_record_log_" + std::to_string(::getpid()))).string();
    rc = std::system((cmd + " >" + log + " 2>&1").c_str());
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    fs::remove(log);
    return text.str();
}

TEST(RenderRecord, WritesOneFramePerStepAndAVideo) {
    if (!vulkan_icd_present()) GTEST_SKIP() << "no Vulkan driver (ICD) installed";
    fs::path out = temp_dir("tag");
    int rc = 0;
    std::string log = run(std::string(ORRERY_RECORD_EXE) +
                              " tag --world 1 --worlds 2 --steps 4 --size 96x64 --seed 3 --out " + out.string(),
                          rc);
    ASSERT_EQ(rc, 0) << log;
    for (int k = 0; k <= 4; ++k) {
        char name[32];
        std::snprintf(name, sizeof(name), "frame_%05d.png", k);
        int w = 0, h = 0, n = 0;
        unsigned char* px = stbi_load((out / name).string().c_str(), &w, &h, &n, 4);
        ASSERT_NE(px, nullptr) << name;
        EXPECT_EQ(w, 96);
        EXPECT_EQ(h, 64);
        stbi_image_free(px);
    }
    EXPECT_FALSE(fs::exists(out / "frame_00005.png"));
    EXPECT_TRUE(fs::exists(out / "video.mp4") || fs::exists(out / "video.gif")) << log;
    // Agents move between steps, so consecutive frames differ.
    auto bytes = [&](const char* f) {
        std::ifstream in(out / f, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), {});
    };
    EXPECT_NE(bytes("frame_00000.png"), bytes("frame_00004.png"));
    fs::remove_all(out);
}

TEST(RenderRecord, BadOptionsAreNamed) {
    int rc = 0;
    std::string log = run(std::string(ORRERY_RECORD_EXE) + " tag --steps lots --out /tmp/x", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("--steps"), std::string::npos) << log;
    log = run(std::string(ORRERY_RECORD_EXE) + " tag --steps 1", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("--out"), std::string::npos) << log;
    log = run(std::string(ORRERY_RECORD_EXE) + " no_such_env --out /tmp/x", rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("no_such_env"), std::string::npos) << log;
}

// Issue 19, finding 6 for orrery-record: the actions file is read only if it
// is a regular file within a size limit (/dev/zero was read until memory ran out).
TEST(RenderRecord, ActionsFileMustBeARegularFile) {
    int rc = 0;
    std::string log = run("timeout 60 " + std::string(ORRERY_RECORD_EXE) + " tag --actions /dev/zero --steps 1 --out " +
                              temp_dir("zero").string(),
                          rc);
    EXPECT_NE(rc, 0);
    EXPECT_NE(log.find("not a regular file"), std::string::npos) << log;
}

// Issue 19, finding 4: the mp4 encode went through a shell, so a quote in the
// output path ran a command. It now spawns ffmpeg with an argument vector.
TEST(RenderRecord, VideoPathsReachNoShell) {
    fs::path dir = temp_dir("quote");
    fs::create_directories(dir);
    fs::path marker = dir / "pwned";
    std::string out = (dir / ("x'; touch '" + marker.string() + "'; '.mp4")).string();
    try {
        orrery::render::encode_mp4((dir / "frame_%05d.png").string(), out, 10); // no frames: ffmpeg fails or is absent
    } catch (const orrery::Error&) {}
    EXPECT_FALSE(fs::exists(marker)) << "a quote in the output path ran a shell command";
    EXPECT_EQ(orrery::render::run_program({"true"}, true), 0);
    EXPECT_EQ(orrery::render::run_program({"false"}, true), 1);
    EXPECT_EQ(orrery::render::run_program({"/nonexistent/program"}, true), -1);
    fs::remove_all(dir);
}

TEST(RenderGif, DecodesToTheFramesWithinPaletteError) {
    const uint32_t w = 37, h = 23; // odd sizes exercise the bit packing
    std::vector<std::vector<uint8_t>> frames(3, std::vector<uint8_t>(size_t(w) * h * 4));
    for (size_t f = 0; f < frames.size(); ++f)
        for (uint32_t i = 0; i < w * h; ++i) {
            uint8_t* p = &frames[f][size_t(i) * 4];
            p[0] = uint8_t((i * 7 + f * 50) & 0xFF), p[1] = uint8_t((i / w) * 11), p[2] = uint8_t(f * 120), p[3] = 255;
        }
    fs::path path = temp_dir("gif.gif");
    orrery::render::write_gif(path.string(), frames, w, h, 10);
    std::ifstream in(path, std::ios::binary);
    std::string data((std::istreambuf_iterator<char>(in)), {});
    int* delays = nullptr;
    int gw = 0, gh = 0, gz = 0, comp = 0;
    unsigned char* px = stbi_load_gif_from_memory(reinterpret_cast<const unsigned char*>(data.data()), int(data.size()),
                                                  &delays, &gw, &gh, &gz, &comp, 4);
    ASSERT_NE(px, nullptr) << stbi_failure_reason();
    EXPECT_EQ(gw, int(w));
    EXPECT_EQ(gh, int(h));
    ASSERT_EQ(gz, 3);
    // The palette has 8 levels of red and green, 4 of blue: half a step of error at most.
    for (int f = 0; f < gz; ++f)
        for (uint32_t i = 0; i < w * h; ++i) {
            const uint8_t* a = &frames[size_t(f)][size_t(i) * 4];
            const uint8_t* b = px + (size_t(f) * w * h + i) * 4;
            ASSERT_LE(std::abs(int(a[0]) - int(b[0])), 19) << "frame " << f << " pixel " << i;
            ASSERT_LE(std::abs(int(a[1]) - int(b[1])), 19) << "frame " << f << " pixel " << i;
            ASSERT_LE(std::abs(int(a[2]) - int(b[2])), 43) << "frame " << f << " pixel " << i;
        }
    stbi_image_free(px);
    free(delays);
    fs::remove(path);
}

TEST(RenderScene, ThreeDimensionalDrawTableGivesMeshesAtTheEntities) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "0"}});
    spec.draw.view = orrery::DrawSpec::View::k3D;
    orrery::Simulator sim(std::move(spec), {});
    sim.reset(1);
    sim.edit_world(0, [](orrery::Ctx& ctx) {
        ctx.at<tag::Agent, tag::Position>(0) = {0.2f, 0.4f};
        ctx.at<tag::Agent, tag::Position>(1) = {0.6f, 0.9f};
    });
    orrery::render::Scene s = orrery::render::scene_of(sim, 0);
    EXPECT_TRUE(s.shapes.empty());
    const auto& spheres = s.meshes[size_t(orrery::render::Mesh::kSphere)];
    ASSERT_EQ(spheres.size(), 2u);
    EXPECT_FLOAT_EQ(spheres[0].x, 0.2f);
    EXPECT_FLOAT_EQ(spheres[0].y, 0.4f);
    EXPECT_FLOAT_EQ(spheres[0].z, 0.05f); // resting on the floor: half its 0.1 size up
    EXPECT_EQ(spheres[1].color, orrery::render::pack({60, 110, 230, 255}));
}

TEST(RenderScene, BoxesTakeTheirExtentsAndYawFromFields) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {{"pursuers", "1"}, {"evaders", "1"}, {"pellets", "0"}});
    spec.draw.view = orrery::DrawSpec::View::k3D;
    spec.draw.entities.clear();
    // A box per agent: x extent from its x velocity, y extent from its y velocity, yaw from x.
    spec.draw.entity<tag::Agent>()
        .at(orrery::field(&tag::Position::x), orrery::field(&tag::Position::y), orrery::constant(1.0f))
        .style({orrery::Shape::kCube, {200, 200, 200, 255}, 0.1f, ""})
        .sized(orrery::field(&tag::Velocity::x), orrery::field(&tag::Velocity::y), orrery::constant(0.5f))
        .facing(orrery::field(&tag::Position::x));
    orrery::Simulator sim(std::move(spec), {});
    sim.reset(1);
    sim.edit_world(0, [](orrery::Ctx& ctx) {
        ctx.at<tag::Agent, tag::Position>(0) = {0.5f, 0.25f};
        ctx.at<tag::Agent, tag::Velocity>(0) = {2.0f, 3.0f};
    });
    orrery::render::Scene s = orrery::render::scene_of(sim, 0);
    const auto& cubes = s.meshes[size_t(orrery::render::Mesh::kCube)];
    ASSERT_EQ(cubes.size(), 2u);
    EXPECT_FLOAT_EQ(cubes[0].sx, 2.0f);
    EXPECT_FLOAT_EQ(cubes[0].sy, 3.0f);
    EXPECT_FLOAT_EQ(cubes[0].sz, 0.5f);
    EXPECT_FLOAT_EQ(cubes[0].z, 1.25f); // base at z = 1, half its height up
    EXPECT_NEAR(cubes[0].yaw, 0.5f, 1e-6f);
}

} // namespace

#else
TEST(RenderRecord, Disabled) { GTEST_SKIP() << "render/ was not built (Vulkan development files absent)"; }
#endif
