#pragma once
// Counter-based random numbers (Philox4x32-10, Salmon et al. 2011): a draw is a
// pure function of (seed, world, episode, step, stream, index), so trajectories
// do not depend on thread count, batch size or backend. Compiles under NVRTC.

#include "ecs/base.hpp"

namespace orrery {

namespace detail {
ORRERY_HD inline uint32_t mul_hi(uint32_t a, uint32_t b) { return uint32_t((uint64_t(a) * uint64_t(b)) >> 32); }
} // namespace detail

/// Philox4x32 with 10 rounds: maps a 128-bit counter and 64-bit key to 128 random bits.
ORRERY_HD inline void philox4x32(uint32_t ctr[4], uint32_t k0, uint32_t k1) {
    for (int round = 0; round < 10; ++round) {
        uint32_t hi0 = detail::mul_hi(0xD2511F53u, ctr[0]);
        uint32_t lo0 = 0xD2511F53u * ctr[0];
        uint32_t hi1 = detail::mul_hi(0xCD9E8D57u, ctr[2]);
        uint32_t lo1 = 0xCD9E8D57u * ctr[2];
        uint32_t n0 = hi1 ^ ctr[1] ^ k0;
        uint32_t n2 = hi0 ^ ctr[3] ^ k1;
        ctr[0] = n0;
        ctr[1] = lo1;
        ctr[2] = n2;
        ctr[3] = lo0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
}

/// A stream of random numbers for one (seed, world, episode, step, stream).
/// Cheap to create; draws advance a local index, nothing global.
class Rng {
  public:
    ORRERY_HD Rng(uint64_t seed, uint32_t world, uint32_t episode, uint32_t step, uint32_t stream)
        : k0_(uint32_t(seed)), k1_(uint32_t(seed >> 32)), world_(world), episode_(episode), step_(step),
          stream_(stream) {}

    /// 32 uniformly distributed bits.
    ORRERY_HD uint32_t next_u32() {
        if (used_ == 4) refill();
        return buf_[used_++];
    }
    /// Uniform integer in [0, n), n > 0 (multiply-shift; bias below 2^-32 * n).
    ORRERY_HD uint32_t below(uint32_t n) { return uint32_t((uint64_t(next_u32()) * n) >> 32); }
    /// Uniform float in [0, 1), 24 bits of mantissa, bit-identical on every backend.
    ORRERY_HD float uniform() { return float(next_u32() >> 8) * (1.0f / 16777216.0f); }

  private:
    ORRERY_HD void refill() {
        buf_[0] = world_;
        buf_[1] = episode_;
        buf_[2] = step_;
        buf_[3] = stream_;
        // The block index perturbs the key so one stream can draw without limit.
        philox4x32(buf_, k0_ ^ (block_ * 0x85EBCA6Bu), k1_ + block_);
        ++block_;
        used_ = 0;
    }
    uint32_t k0_, k1_, world_, episode_, step_, stream_;
    uint32_t block_ = 0;
    uint32_t used_ = 4;
    uint32_t buf_[4] = {};
};

} // namespace orrery
