#pragma once
// NVRTC compilation of generated kernels, with the on-disk compile cache of
// DESIGN decision 4: entries keyed by a SHA-256 of everything that shapes the
// binary, checked against their own digest before they are loaded (which
// catches corruption; the owner, mode and O_NOFOLLOW checks keep others out).

#include <string>
#include <vector>

namespace orrery::cuda {

/// What to compile.
struct CompileRequest {
    std::string label;                           ///< for logs: "tag megakernel"
    std::string source;                          ///< the generated translation unit
    std::string file_name = "orrery_kernels.cu"; ///< its name for NVRTC (line info) and the source dump
    std::string env_header;                      ///< include name of the env header (embedded, or found on disk)
    /// Folders searched for headers not built into the library (an env or
    /// module kept outside this tree): "name" is read from root + "/name".
    std::vector<std::string> header_roots;
    int arch = 90; ///< compute capability * 10 (90: sm_90)
    bool use_cache = true;
    int driver_version = 0;      ///< part of the cache key (0 without a driver)
    std::string cache_dir;       ///< "" for the default (cache_directory)
    std::string dump_source_dir; ///< when set, the source is written to DIR/file_name first
    bool verbose = false;        ///< log cache hits too
    bool log_compile = true;     ///< log each compile (a caller compiling many may log one line for all)
    std::string source_dir;      ///< one more header root, searched last (GpuOptions::source_dir)
    std::string extra_options;   ///< GpuOptions::nvrtc_options (extra_compile_options reads it)
    /// NVRTC's --Ofast-compile level (EnvSpec::fast_compile: "min", "mid",
    /// "max"; "" for none), placed before extra_options, whose own setting
    /// wins; left out by an NVRTC older than 12.8, which has no such option.
    std::string fast_compile;
    /// NVRTC's --split-compile=0 (its optimiser and ptxas spread a program's
    /// functions over the machine's threads), also before extra_options; with
    /// a fast-compile level only (NVRTC 12.8+). A cold start's quick programs
    /// set it: at --Ofast-compile=max little is inlined, so there are many functions.
    bool split_compile = false;
};

/// A compiled module.
struct CompiledModule {
    std::string cubin;
    double seconds = 0; ///< compile or cache-load time
    bool from_cache = false;
    std::string cache_path; ///< the entry read or written ("" when caching is off or failed)
};

/// Compiles `req` with NVRTC (or loads it from the cache). Throws orrery::Error
/// with NVRTC's log when compilation fails.
CompiledModule compile_module(const CompileRequest& req);

/// `req`'s binary from the compile cache, without compiling: an empty cubin
/// when the cache lacks it (or caching is off).
CompiledModule load_cached_module(const CompileRequest& req);

/// Compiles every request (or loads it from the cache) on up to `threads`
/// host threads at once (0: one per hardware thread), each its own NVRTC
/// program and cache entry; the results are in the order of `reqs`. When any
/// fails, throws the first failure in that order, its message led by the
/// request's label (the per-node kernel and its node).
std::vector<CompiledModule> compile_modules(const std::vector<CompileRequest>& reqs, unsigned threads = 0);

/// The cache directory: `configured` (GpuOptions::cache_dir) when set, else
/// $XDG_CACHE_HOME/orrery, else ~/.cache/orrery ("" when none can be determined).
std::string cache_directory(const std::string& configured = "");

/// The NVRTC options used for `arch` (deterministic float math: no FMA, no fast math).
std::string compile_options_text(int arch);

/// The options in `text` (GpuOptions::nvrtc_options: whitespace-separated
/// NVRTC options appended to Orrery's own, for tuning, e.g.
/// "--maxrregcount=128"; they are part of the compile cache's key). Throws an
/// Error naming the option when it is one Orrery sets itself: those that
/// change float results (-fmad, -ftz, -prec-div, -prec-sqrt, -use_fast_math),
/// the architecture and the language standard.
std::vector<std::string> extra_compile_options(const std::string& text);

} // namespace orrery::cuda
