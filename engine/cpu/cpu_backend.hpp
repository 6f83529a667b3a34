#pragma once
// The CPU backend: worlds in one host allocation, passes run on a thread pool.

#include <vector>

#include "engine/cpu/thread_pool.hpp"
#include "engine/simulator.hpp"

namespace orrery {

class CpuBackend final : public Backend {
  public:
    /// `lanes`: how many lanes each ORRERY_PER_WORLD_LANES node runs as (SimOptions::cpu_lanes).
    CpuBackend(const EnvSpec& spec, const Plan& plan, const StorageLayout& layout, uint32_t threads,
               uint32_t lanes = 1);
    ~CpuBackend() override;

    DeviceKind device() const override { return DeviceKind::kCpu; }
    std::string describe() const override;
    const Storage& storage() const override { return storage_; }
    void run(const std::vector<Op>& ops) override;
    /// The step pass with the input and outputs moved chunk by chunk on the
    /// thread that steps the chunk: each chunk's actions copied in just before
    /// its ops, its outputs written to their destinations just after, while
    /// both are in that thread's cache; no pass over the whole batch before or
    /// after the step (the base version's two), as the CUDA staged step loads
    /// and writes them from its copies in and back.
    void run_reading(const std::vector<Op>& ops, const InputSource& in,
                     const std::vector<OutputCopy>& outs = {}) override;
    void copy_to_host(void* dst, const void* src, size_t n) override;
    void copy_from_host(void* dst, const void* src, size_t n) override;
    void copy_within(void* dst, const void* src, size_t n) override;
    void synchronize() override {}
    /// One slot of step scratch per thread of the pool (a thread runs one world at a time).
    ScratchPool scratch_pool() const override;

  private:
    /// Runs `ops` in order over the worlds [b, e) on pool thread `worker`.
    void run_ops(const std::vector<Op>& ops, uint32_t b, uint32_t e, uint32_t worker) const;
    /// One lane op (kClearOutputs or a lane node) on the worlds [b, e), on pool thread `worker`.
    void run_lane_op(const Op& op, uint32_t b, uint32_t e, uint32_t worker) const;
    /// Pool thread `worker`'s slot of step scratch (null when the env declares none).
    uint8_t* scratch_slot(uint32_t worker) const;
    static constexpr uint32_t kLaneTile = 8; ///< worlds per pass of a run of lane ops

    ThreadPool pool_;
    AutoReset mode_;
    std::vector<RandomInput> random_inputs_; ///< for OpKind::kRandomInputs
    std::vector<ClearedOutput> cleared_;     ///< for OpKind::kClearOutputs
    uint32_t lanes_ = 1;
    uint8_t* memory_ = nullptr;
    uint8_t* scratch_ = nullptr; ///< the step-scratch pool: a slot per pool thread
    std::vector<uint8_t> config_;
    Storage storage_;
    uint32_t num_worlds_ = 0;
    /// Chunk c of a pass is the worlds [starts_[c], starts_[c + 1]).
    std::vector<uint32_t> starts_;
    uint32_t chunks() const { return uint32_t(starts_.size()) - 1; }
};

} // namespace orrery
