#pragma once
// A cold start in two compiles (docs/gpu.md, "Cold start"): each program the
// cache lacks is first compiled at one of NVRTC's fast-compile levels, so the
// first step comes early, and compiled fully on background host threads, to be
// swapped in between two steps. NVRTC only, no GPU: the backend loads modules.

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "engine/cuda/nvrtc_compiler.hpp"

namespace orrery::cuda {

/// What a start compiles before its first step, and what behind it.
struct StartPlan {
    /// One request per program, in order: the full request where the cache
    /// holds it or no quick start applies, else the program at the quick level.
    std::vector<CompileRequest> first;
    /// The programs (indices into `first`) compiled fully in the background.
    std::vector<size_t> background;
};

/// Plans a start of the fully optimised requests `full`. With `level` ("min",
/// "mid" or "max", GpuOptions::cold_start_level) every program whose full
/// binary is not cached starts at that level and with --split-compile=0 (its
/// own cache entry, a key of its own) and is listed for the background. No quick start (all of `full`, no
/// background) when `level` is "", when a request sets a level itself
/// (EnvSpec::fast_compile, or --Ofast-compile in its extra options), or when
/// NVRTC is older than 12.8. Throws an Error naming the option for another level.
StartPlan plan_start(const std::vector<CompileRequest>& full, const std::string& level);

/// Compiles requests (or loads them from the cache, as compile_module does) on
/// host threads while the caller goes on; the caller takes finished results
/// when it suits it, never waiting.
/// @warning One owner thread calls the members; the compiling threads touch no driver.
class BackgroundCompiles {
  public:
    /// Starts compiling `reqs`, in order, on up to `threads` threads (0: one
    /// per hardware thread).
    BackgroundCompiles(std::vector<CompileRequest> reqs, unsigned threads);
    /// Cancels the requests not yet started and waits for those compiling
    /// (NVRTC cannot be interrupted): at most one program's compile time.
    ~BackgroundCompiles();
    BackgroundCompiles(const BackgroundCompiles&) = delete;
    BackgroundCompiles& operator=(const BackgroundCompiles&) = delete;

    /// A finished request: its index in `reqs` and its module, or why it failed.
    struct Finished {
        size_t index = 0;
        CompiledModule module;
        std::string error; ///< non-empty when the compile failed (the label leads it)
    };
    /// True when a finished request waits to be taken (one atomic load).
    bool has_finished() const;
    /// The requests finished since the last call; never waits.
    std::vector<Finished> take_finished();
    /// Waits for every request, then take_finished().
    std::vector<Finished> wait_all();
    /// Requests not yet handed over by take_finished or wait_all.
    size_t outstanding() const;
    /// Requests in all.
    size_t size() const { return state_->reqs.size(); }

  private:
    /// Shared with the threads, which may outlive a leaked owner until process exit.
    struct State {
        std::vector<CompileRequest> reqs;
        std::mutex m;
        std::condition_variable cv;
        size_t next = 0;   ///< the next request to start
        size_t handed = 0; ///< results handed to the owner
        bool cancel = false;
        std::vector<Finished> done; ///< finished, not yet taken
        std::atomic<bool> ready{false};
    };
    static void work(const std::shared_ptr<State>& s);
    std::shared_ptr<State> state_;
    std::vector<std::thread> threads_;
};

} // namespace orrery::cuda
