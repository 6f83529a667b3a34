#pragma once
// A lock handed out in the order it was asked for. Simulator guards step() and
// the world-view calls with it: a training loop stepping without waiting gives
// its lock up and asks again at once (on the GPU it may even block inside a
// launch while holding it), and std::mutex, which is not fair, then let a
// watcher thread asking for a view wait for thousands of steps.

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace orrery {

/// A FIFO (ticket) mutex: lock() returns once the holder and every thread that
/// asked earlier have had their turn; a thread that asks later never overtakes.
/// Usable with std::lock_guard, std::unique_lock and std::scoped_lock. Not
/// recursive. unlock() wakes every waiter to find the next turn's owner, so it
/// suits a few threads sharing a lock, not many.
class FairMutex {
  public:
    FairMutex() = default;
    FairMutex(const FairMutex&) = delete;
    FairMutex& operator=(const FairMutex&) = delete;

    /// Takes the next ticket and waits until it is served.
    void lock() {
        std::unique_lock<std::mutex> guard(mutex_);
        uint64_t ticket = next_++;
        turn_.wait(guard, [&] { return serving_ == ticket; });
    }

    /// Takes the lock only when it is free and nobody waits for it.
    bool try_lock() {
        std::lock_guard<std::mutex> guard(mutex_);
        if (next_ != serving_) return false;
        ++next_;
        return true;
    }

    /// Serves the next ticket. Notifies under the lock, so that a waiter which
    /// wakes early and then destroys this mutex cannot race with the notify.
    void unlock() {
        std::lock_guard<std::mutex> guard(mutex_);
        ++serving_;
        if (serving_ != next_) turn_.notify_all();
    }

    /// The holder and the waiters: tickets taken and not yet served (tests, diagnostics).
    uint64_t queued() {
        std::lock_guard<std::mutex> guard(mutex_);
        return next_ - serving_;
    }

  private:
    std::mutex mutex_;             ///< guards the two counters, held only briefly
    std::condition_variable turn_; ///< signalled when the served ticket moves on
    uint64_t next_ = 0;            ///< the ticket the next lock() takes
    uint64_t serving_ = 0;         ///< the ticket holding the lock; == next_ when free
};

} // namespace orrery
