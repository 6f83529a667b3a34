// A cold start's background compiles. The threads run NVRTC and write the
// compile cache, nothing else; the backend swaps the modules in on its own
// thread, between steps. A process that exits with compiles running (a
// simulator never destroyed) waits for them at exit, so none runs inside NVRTC
// while the process tears its libraries down.

#include "engine/cuda/background_compile.hpp"

#include <pthread.h>

#include <algorithm>
#include <cstdlib>

#include "engine/cuda/driver_api.hpp"
#include "engine/error.hpp"

namespace orrery::cuda {

namespace {

bool sets_own_level(const CompileRequest& r) {
    return !r.fast_compile.empty() || r.extra_options.find("-Ofast-compile") != std::string::npos;
}

/// Compiles running in this process; at exit, no new one starts and those running are waited for.
struct ExitGuard {
    std::mutex m;
    std::condition_variable cv;
    size_t running = 0;
    bool exiting = false;
};

/// Never destroyed (threads may use it during exit). A forked child has none
/// of the parent's threads, so it starts a fresh one (the old one's lock may
/// have been held at the fork).
std::atomic<ExitGuard*> g_exit_guard{nullptr};

void wait_at_exit() {
    ExitGuard& g = *g_exit_guard.load();
    std::unique_lock<std::mutex> lock(g.m);
    g.exiting = true;
    g.cv.wait(lock, [&] { return g.running == 0; });
}

ExitGuard& exit_guard() {
    // The handler is registered after NVRTC is loaded, so it runs before NVRTC's own teardown.
    static const bool registered = [] {
        g_exit_guard.store(new ExitGuard);
        ::pthread_atfork(nullptr, nullptr, [] { g_exit_guard.store(new ExitGuard); });
        std::atexit(wait_at_exit);
        return true;
    }();
    (void)registered;
    return *g_exit_guard.load();
}

} // namespace

StartPlan plan_start(const std::vector<CompileRequest>& full, const std::string& level) {
    if (!level.empty() && level != "min" && level != "mid" && level != "max")
        throw Error("GpuOptions::cold_start_level (ORRERY_NVRTC_BACKGROUND) is '" + level +
                    "'; expected min, mid, max (NVRTC's --Ofast-compile levels) or empty (0) for none");
    StartPlan plan;
    plan.first = full;
    const bool quick =
        !level.empty() && nvrtc_version() >= 12080 && std::none_of(full.begin(), full.end(), sets_own_level);
    if (!quick) return plan;
    for (size_t i = 0; i < full.size(); ++i) {
        if (!load_cached_module(full[i]).cubin.empty()) continue; // the full binary is there: no quick start
        plan.first[i].fast_compile = level;
        plan.first[i].split_compile = true; // what is left of a quick compile is many small functions
        plan.first[i].label += " at --Ofast-compile=" + level;
        plan.background.push_back(i);
    }
    return plan;
}

BackgroundCompiles::BackgroundCompiles(std::vector<CompileRequest> reqs, unsigned threads)
    : state_(std::make_shared<State>()) {
    state_->reqs = std::move(reqs);
    nvrtc(); // loaded before the exit handler is registered (exit_guard), so torn down after it runs
    exit_guard();
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    threads = unsigned(std::min<size_t>(threads, state_->reqs.size()));
    for (unsigned t = 0; t < threads; ++t) {
        try {
            threads_.emplace_back(work, state_);
        } catch (const std::system_error&) { // fewer threads, same results
            if (threads_.empty()) throw;
            break;
        }
    }
}

BackgroundCompiles::~BackgroundCompiles() {
    {
        std::lock_guard<std::mutex> lock(state_->m);
        state_->cancel = true;
    }
    for (std::thread& t : threads_) t.join();
}

void BackgroundCompiles::work(const std::shared_ptr<State>& s) {
    ExitGuard& g = exit_guard(); // the process's (a fork's child runs no worker)
    for (;;) {
        size_t i = 0;
        {
            std::lock_guard<std::mutex> lock(s->m);
            if (s->cancel || s->next == s->reqs.size()) return;
            i = s->next++;
        }
        {
            std::lock_guard<std::mutex> lock(g.m);
            if (g.exiting) return;
            ++g.running;
        }
        Finished f;
        f.index = i;
        try {
            f.module = compile_module(s->reqs[i]);
        } catch (const std::exception& e) { f.error = s->reqs[i].label + ": " + e.what(); }
        {
            std::lock_guard<std::mutex> lock(g.m);
            --g.running;
        }
        g.cv.notify_all();
        {
            std::lock_guard<std::mutex> lock(s->m);
            s->done.push_back(std::move(f));
            s->ready.store(true, std::memory_order_release);
        }
        s->cv.notify_all();
    }
}

bool BackgroundCompiles::has_finished() const { return state_->ready.load(std::memory_order_acquire); }

std::vector<BackgroundCompiles::Finished> BackgroundCompiles::take_finished() {
    std::lock_guard<std::mutex> lock(state_->m);
    std::vector<Finished> out = std::move(state_->done);
    state_->done.clear();
    state_->ready.store(false, std::memory_order_relaxed);
    state_->handed += out.size();
    return out;
}

std::vector<BackgroundCompiles::Finished> BackgroundCompiles::wait_all() {
    {
        std::unique_lock<std::mutex> lock(state_->m);
        state_->cv.wait(lock, [&] { return state_->handed + state_->done.size() == state_->reqs.size(); });
    }
    return take_finished();
}

size_t BackgroundCompiles::outstanding() const {
    std::lock_guard<std::mutex> lock(state_->m);
    return state_->reqs.size() - state_->handed;
}

} // namespace orrery::cuda
