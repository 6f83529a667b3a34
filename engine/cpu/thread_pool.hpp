#pragma once
// A fixed pool of worker threads for the CPU executor. One parallel_for at a
// time; the calling thread works too, so threads == 1 runs inline.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace orrery {

class ThreadPool {
  public:
    /// `threads` workers in all, the caller included; 0 means every hardware thread.
    /// Throws orrery::Error, with no thread left running, when one cannot be started.
    explicit ThreadPool(uint32_t threads);
    ~ThreadPool();
    ThreadPool(const ThreadPool&) = delete;
    ThreadPool& operator=(const ThreadPool&) = delete;

    uint32_t threads() const { return uint32_t(workers_.size()) + 1; }

    /// Calls fn(i, worker) for every i in [0, n) across the pool; returns when
    /// all are done. `worker` (0 for the caller, below threads()) names the
    /// thread: no two calls running at once share it.
    /// @warning not reentrant: fn must not call parallel_for.
    using Work = std::function<void(uint32_t item, uint32_t worker)>;
    void parallel_for(uint32_t n, const Work& fn);

  private:
    void start_workers(uint32_t threads);
    void stop_and_join();
    void drain(const Work& fn, uint32_t n, uint32_t worker);
    /// Spins (a pause a turn) until done() or about kSpinMicros pass; true if done.
    template <class Done> static bool spin_until(Done&& done);
    /// How long a thread that runs out of work spins before it sleeps: about
    /// the gap between two passes of a stepping loop, far below a sleep's wake-up.
    static constexpr int64_t kSpinMicros = 200;

    std::vector<std::thread> workers_;
    std::mutex mu_;
    std::condition_variable wake_, done_;
    // generation_ and busy_ change under mu_; they are atomic only so that a
    // spinning thread may read them without it (every decision is retaken under mu_).
    std::atomic<uint64_t> generation_{0};
    bool stop_ = false;
    const Work* fn_ = nullptr;
    uint32_t n_ = 0;
    std::atomic<uint32_t> next_{0};
    std::atomic<uint32_t> busy_{0};
};

} // namespace orrery
