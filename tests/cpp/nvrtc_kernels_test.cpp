// Every shipped env's GPU kernels compile through NVRTC, on any machine: NVRTC
// needs no GPU, so a device compile error fails CI on GPU-less machines. NVRTC
// must be present (CI installs the CUDA toolkit); a missing NVRTC fails loudly.

#include <gtest/gtest.h>

#include "engine/cuda/codegen.hpp"
#include "engine/cuda/cuda_backend.hpp"
#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/nvrtc_compiler.hpp"
#include "envs/registry.hpp"

namespace {

/// The GPU present, else Hopper (sm_90), the architecture of the benchmark machines.
int target_arch() {
    try {
        return orrery::cuda::device_info(0).arch;
    } catch (const orrery::Error&) { return 90; }
}

void compile_all(orrery::AutoReset mode, orrery::cuda::KernelForm form, int arch = target_arch()) {
    using orrery::cuda::KernelForm;
    const bool per_node = form == KernelForm::kPerNode;
    orrery::register_builtin_envs();
    auto envs = orrery::registered_envs();
    ASSERT_FALSE(envs.empty());
    for (const auto& [name, summary] : envs) {
        SCOPED_TRACE("env " + name);
        orrery::EnvSpec spec = orrery::make_env_spec(name, {});
        // Next-step mode (the default) also draws its actions inside the step, as benchmarks do.
        const bool random_inputs = mode == orrery::AutoReset::kNextStep;
        orrery::Plan plan = orrery::make_plan(spec, mode, random_inputs);
        orrery::cuda::KernelSource k = orrery::cuda::generate_kernels(spec, plan, form);
        EXPECT_EQ(k.text.find("orrery::draw_random_inputs(s, w") != std::string::npos, random_inputs);
        const size_t direct = form == KernelForm::kDirect ? 1u : 0u;
        EXPECT_EQ(k.step_kernels.size(), per_node ? plan.step.size() : direct);
        EXPECT_EQ(k.reset_kernels.size(), per_node ? plan.reset.size() : direct);
        orrery::cuda::CompileRequest req;
        req.label = "'" + name + "' test";
        req.source = k.text;
        req.env_header = k.env_header;
        req.arch = arch;
        req.use_cache = false; // compile for real every time
        orrery::cuda::CompiledModule m;
        try {
            m = orrery::cuda::compile_module(req);
        } catch (const orrery::Error& e) { FAIL() << e.what() << "\n--- generated source ---\n" << k.text; }
        // A cubin is an ELF image: it starts with the ELF magic and holds every kernel's name.
        ASSERT_GT(m.cubin.size(), 4u);
        EXPECT_EQ(m.cubin.substr(0, 4), "\x7f"
                                        "ELF");
        for (const std::string& kname : k.step_kernels) EXPECT_NE(m.cubin.find(kname), std::string::npos) << kname;
        for (const std::string& kname : k.reset_kernels) EXPECT_NE(m.cubin.find(kname), std::string::npos) << kname;
        EXPECT_EQ(k.staged_step_kernel.empty(), form != KernelForm::kStaged);
        if (form == KernelForm::kStaged) {
            EXPECT_NE(m.cubin.find(k.staged_step_kernel), std::string::npos);
            EXPECT_NE(m.cubin.find(k.staged_reset_kernel), std::string::npos);
        }
        EXPECT_FALSE(m.from_cache);
    }
}

} // namespace

TEST(NvrtcKernels, LibraryLoads) {
    // Loud failure, not a skip: CI must have NVRTC to check the GPU code.
    ASSERT_NO_THROW(orrery::cuda::nvrtc());
    EXPECT_GE(orrery::cuda::nvrtc_version(), 12000);
}

using orrery::cuda::KernelForm;
TEST(NvrtcKernels, MegakernelNextStep) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kStaged); }
TEST(NvrtcKernels, MegakernelSameStep) { compile_all(orrery::AutoReset::kSameStep, KernelForm::kStaged); }
TEST(NvrtcKernels, MegakernelDisabled) { compile_all(orrery::AutoReset::kDisabled, KernelForm::kStaged); }
// The staged kernels' programmatic-launch wait is Hopper PTX; older GPUs compile without it.
TEST(NvrtcKernels, MegakernelBeforeHopper) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kStaged, 80); }
TEST(NvrtcKernels, DirectMegakernelEveryMode) {
    for (auto mode : {orrery::AutoReset::kNextStep, orrery::AutoReset::kSameStep, orrery::AutoReset::kDisabled})
        compile_all(mode, KernelForm::kDirect);
}
TEST(NvrtcKernels, PerNodeNextStep) { compile_all(orrery::AutoReset::kNextStep, KernelForm::kPerNode); }

TEST(NvrtcKernels, SystemNamesAreQualified) {
    orrery::register_builtin_envs();
    orrery::EnvSpec spec = orrery::make_env_spec("tag", {});
    for (const orrery::NodeSpec& n : spec.nodes()) {
        std::string q = orrery::cuda::qualified_system_name(n.system);
        EXPECT_EQ(q, std::string("tag::") + n.system.name);
    }
}

TEST(NvrtcKernels, CompileErrorShowsLog) {
    orrery::cuda::CompileRequest req;
    req.label = "broken test source";
    req.source = "#include \"engine/ctx.hpp\"\nextern \"C\" __global__ void k() { undefined_name_xyz = 1; }\n";
    req.arch = 90;
    req.use_cache = false;
    try {
        orrery::cuda::compile_module(req);
        FAIL() << "a broken source compiled";
    } catch (const orrery::Error& e) {
        std::string msg = e.what();
        EXPECT_NE(msg.find("nvrtcCompileProgram"), std::string::npos) << msg;
        EXPECT_NE(msg.find("undefined_name_xyz"), std::string::npos) << msg; // the log names the culprit
    }
}
