// FairMutex (engine/fair_mutex.hpp), the simulator's lock: it excludes, works
// with the standard lock wrappers, refuses try_lock while held, and hands the
// lock to waiters in the order they asked.

#include <gtest/gtest.h>

#include <mutex>
#include <thread>
#include <vector>

#include "engine/fair_mutex.hpp"

namespace {
using orrery::FairMutex;

TEST(FairMutex, TryLockSucceedsOnlyWhenFree) {
    FairMutex m;
    ASSERT_TRUE(m.try_lock());
    EXPECT_FALSE(m.try_lock()) << "held: refused";
    m.unlock();
    std::unique_lock<FairMutex> lock(m, std::try_to_lock);
    EXPECT_TRUE(lock.owns_lock()) << "released: taken again";
    lock.unlock();
    std::scoped_lock both(m); // and the scoped wrapper
}

TEST(FairMutex, ExcludesAcrossThreads) {
    FairMutex m;
    uint64_t counter = 0; // plain: a data race here if the lock let two threads in
    auto add = [&] {
        for (int i = 0; i < 2000; ++i) {
            std::lock_guard<FairMutex> lock(m);
            ++counter;
        }
    };
    std::thread a(add), b(add);
    add();
    a.join();
    b.join();
    EXPECT_EQ(counter, 6000u);
}

TEST(FairMutex, WaitersGetTheLockInTheOrderTheyAsked) {
    // This thread holds the lock while three threads queue one after another
    // (each starts once the previous one holds its ticket); they must get in
    // in that order, whatever order the OS wakes them in.
    FairMutex m;
    std::vector<int> order;
    m.lock();
    std::vector<std::thread> waiters;
    for (int k = 0; k < 3; ++k) {
        waiters.emplace_back([&, k] {
            std::lock_guard<FairMutex> lock(m);
            order.push_back(k);
        });
        while (m.queued() != uint64_t(k) + 2) std::this_thread::yield();
    }
    EXPECT_FALSE(m.try_lock()) << "held, with waiters";
    m.unlock();
    for (std::thread& t : waiters) t.join();
    EXPECT_EQ(order, (std::vector<int>{0, 1, 2}));
}

} // namespace
