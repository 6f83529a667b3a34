// Workers sleep on a condition variable between passes and claim items with
// an atomic counter during one, so uneven items balance themselves. A worker
// reads the pass (function, item count) under the lock and joins only while
// items remain, so a late wake-up never reaches into the next pass.
//
// A thread out of work spins for a short while (kSpinMicros) before it
// sleeps, the workers for the next pass and the caller for the workers' last
// items: a stepping loop's passes follow each other within microseconds, and
// a sleeping thread (a halted vCPU on a virtual machine) is slow to wake. Two
// threads stepped 32 hide-and-seek worlds 6.6 % faster with the spin, 256
// worlds alike (docs/perf-notes.md row 85). Spinning only delays the sleep:
// what a thread does next is decided under the lock, as before.

#include "engine/cpu/thread_pool.hpp"

#include <chrono>
#include <system_error>

#include "engine/error.hpp"

namespace orrery {

namespace {
inline void cpu_pause() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}
} // namespace

template <class Done> bool ThreadPool::spin_until(Done&& done) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(kSpinMicros);
    for (uint32_t turn = 1;; ++turn) {
        if (done()) return true;
        if (turn % 64 == 0 && std::chrono::steady_clock::now() >= until) return false;
        cpu_pause();
    }
}

ThreadPool::ThreadPool(uint32_t threads) {
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    try {
        start_workers(threads);
    } catch (const std::system_error& e) {
        // The destructor does not run for a half-built pool: stop and join the
        // workers already started here, or their std::thread destructors abort.
        stop_and_join();
        throw Error("threads=" + std::to_string(threads) + ": could not start worker thread " +
                    std::to_string(workers_.size() + 1) + " (" + e.what() + "); expected fewer threads");
    }
}

void ThreadPool::start_workers(uint32_t threads) {
    workers_.reserve(threads - 1);
    for (uint32_t i = 1; i < threads; ++i) {
        workers_.emplace_back([this, i] {
            uint64_t seen = 0;
            for (;;) {
                spin_until([&] { return generation_.load(std::memory_order_acquire) != seen; });
                std::unique_lock<std::mutex> lock(mu_);
                wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                // A worker that wakes after its pass has run out of items must not
                // join: the caller may already be setting up the next pass.
                if (next_.load(std::memory_order_relaxed) >= n_) continue;
                const Work* fn = fn_;
                const uint32_t n = n_;
                ++busy_; // under the lock: the caller now waits for this worker
                lock.unlock();
                drain(*fn, n, i);
                lock.lock();
                if (--busy_ == 0) done_.notify_all();
            }
        });
    }
}

ThreadPool::~ThreadPool() { stop_and_join(); }

void ThreadPool::stop_and_join() {
    {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& t : workers_)
        if (t.joinable()) t.join();
}

void ThreadPool::drain(const Work& fn, uint32_t n, uint32_t worker) {
    for (;;) {
        uint32_t i = next_.fetch_add(1, std::memory_order_relaxed);
        if (i >= n) return;
        fn(i, worker);
    }
}

void ThreadPool::parallel_for(uint32_t n, const Work& fn) {
    if (workers_.empty() || n <= 1) {
        for (uint32_t i = 0; i < n; ++i) fn(i, 0);
        return;
    }
    {
        std::lock_guard<std::mutex> lock(mu_);
        fn_ = &fn;
        n_ = n;
        next_.store(0, std::memory_order_relaxed);
        ++generation_;
    }
    wake_.notify_all();
    drain(fn, n, 0);
    spin_until([&] { return busy_.load(std::memory_order_acquire) == 0; });
    std::unique_lock<std::mutex> lock(mu_);
    // Workers that woke late find no items left and leave at once.
    done_.wait(lock, [&] { return busy_ == 0 && next_.load() >= n_; });
    fn_ = nullptr;
}

} // namespace orrery
