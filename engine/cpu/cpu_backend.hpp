#pragma once
// The CPU backend: worlds in one host allocation, passes run on a thread pool.

#include <vector>

#include "engine/cpu/thread_pool.hpp"
#include "engine/simulator.hpp"

namespace orrery {

class CpuBackend final : public Backend {
  public:
    CpuBackend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout, uint32_t threads);
    ~CpuBackend() override;

    DeviceKind device() const override { return DeviceKind::kCpu; }
    std::string describe() const override;
    const Storage& storage() const override { return storage_; }
    void run(const std::vector<Op>& ops) override;
    void copy_to_host(void* dst, const void* src, size_t n) override;
    void copy_from_host(void* dst, const void* src, size_t n) override;
    void copy_within(void* dst, const void* src, size_t n) override;
    void synchronize() override {}

  private:
    ThreadPool pool_;
    AutoReset mode_;
    std::vector<RandomInput> random_inputs_; ///< for OpKind::kRandomInputs
    uint8_t* memory_ = nullptr;
    std::vector<uint8_t> config_;
    Storage storage_;
    uint32_t num_worlds_ = 0;
    uint32_t chunk_ = 1;
};

} // namespace orrery
