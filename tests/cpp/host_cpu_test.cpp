// The host code's x86-64 level (cmake/HostArch.cmake): what the build reports,
// and the load-time check that refuses a CPU below it with a message.

#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <sys/wait.h>

#include "engine/env.hpp"
#include "engine/host_cpu.hpp"
#include "engine/simulator.hpp"
#include "envs/registry.hpp"

namespace {

struct Ran {
    int code = -1;
    std::string out;
};
Ran run(const std::string& cmd) {
    Ran r;
    FILE* p = popen((cmd + " 2>&1").c_str(), "r");
    if (!p) return r;
    std::array<char, 512> buf{};
    while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
    int status = pclose(p);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

TEST(HostCpu, TheBuildReportsItsLevelWhichThisCpuRuns) {
    EXPECT_STREQ(orrery::host_arch(), ORRERY_TEST_HOST_ARCH);
    const std::string level = orrery::host_arch();
    orrery::register_builtin_envs();
    orrery::SimOptions o;
    o.device = "cpu", o.threads = 2, o.num_worlds = 4;
    orrery::Simulator sim(orrery::make_env_spec("tag", {}), o);
    const std::string described = sim.backend().describe();
    if (level.empty()) {
        EXPECT_EQ(described, "cpu (2 threads)");
        return;
    }
    EXPECT_EQ(described, "cpu (2 threads, " + level + ")");
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
    // The level the build took is one this CPU runs (auto takes the building machine's).
    __builtin_cpu_init();
    const bool runs = level == "x86-64-v2"   ? __builtin_cpu_supports("x86-64-v2")
                      : level == "x86-64-v3" ? __builtin_cpu_supports("x86-64-v3")
                      : level == "x86-64-v4" ? __builtin_cpu_supports("x86-64-v4")
                                             : true;
    EXPECT_TRUE(runs) << level;
#endif
}

TEST(HostCpu, AProgramBuiltAboveThisCpuRefusesToStartAndSaysWhy) {
#if !(defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12)
    GTEST_SKIP() << "the load-time check is GCC's on x86-64";
#else
    __builtin_cpu_init();
    const Ran r = run(ORRERY_HOST_CPU_ABOVE);
    if (__builtin_cpu_supports("x86-64-v4")) { // this CPU runs AVX-512: the program starts
        EXPECT_EQ(r.code, 0) << r.out;
        EXPECT_EQ(r.out, "started\n");
        return;
    }
    EXPECT_EQ(r.code, 70) << r.out;
    EXPECT_EQ(r.out.find("started"), std::string::npos) << "main ran below the program's level: " << r.out;
    EXPECT_NE(r.out.find("compiled for x86-64-v4 (ORRERY_HOST_ARCH), which this CPU does not run"), std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("-DORRERY_HOST_ARCH=x86-64-v2"), std::string::npos) << r.out;
#endif
}

} // namespace
