// NVRTC compilation and the compile cache. The cache is private to the user
// (directory 0700, entries 0600, written to a temporary name then renamed, so
// concurrent starts never see half a file); an entry is loaded only if its
// recorded key and content digest match, otherwise it is rebuilt. The digest
// is stored in the entry itself, so it detects corruption, not forgery: what
// keeps other users' code out is the owner, mode and O_NOFOLLOW checks.

#include "engine/cuda/nvrtc_compiler.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <system_error>
#include <thread>
#include <vector>

#include "engine/cuda/driver_api.hpp"
#include "engine/cuda/embedded_headers.hpp"
#include "engine/cuda/sha256.hpp"
#include "engine/error.hpp"

namespace orrery::cuda {

std::vector<std::string> extra_compile_options(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string o;
    // Options Orrery sets itself: those that change float results (with them
    // the GPU would no longer match the CPU bit for bit, which every env's
    // tests and users rely on), the architecture and the language.
    static const char* const kOwnOptions[] = {
        "-fmad",      "--fmad",      "-ftz",           "--ftz",           "-prec-div",          "--prec-div",
        "-prec-sqrt", "--prec-sqrt", "-use_fast_math", "--use_fast_math", "--gpu-architecture", "-arch",
        "--std",      "-std"};
    while (in >> o) {
        for (const char* bad : kOwnOptions) {
            size_t n = std::strlen(bad);
            if (o.compare(0, n, bad) == 0 && (o.size() == n || o[n] == '=' || o[n] == ' '))
                throw Error("GpuOptions::nvrtc_options (ORRERY_NVRTC_OPTIONS): '" + o +
                            "' is set by Orrery itself (float contraction, denormals, division and square root "
                            "stay IEEE so that the GPU matches the CPU bit for bit; the architecture and language "
                            "come from the device and the engine); expected tuning options only, e.g. "
                            "'--maxrregcount=128'");
        }
        out.push_back(o);
    }
    return out;
}

namespace {

constexpr char kMagic[12] = {'O', 'R', 'R', 'E', 'R', 'Y', 'C', 'U', 'B', 'I', 'N', '1'};

std::vector<std::string> compile_options(int arch, const std::string& fast = "", const std::string& extra = "",
                                         bool split = false) {
    std::vector<std::string> options = {"--gpu-architecture=sm_" + std::to_string(arch),
                                        "--std=c++20",
                                        "-fmad=false", // bit-identical floats with the CPU build (-ffp-contract=off)
                                        "-ftz=false",
                                        "-prec-div=true",
                                        "-prec-sqrt=true",
                                        "-default-device",
                                        "-lineinfo"};
    // NVRTC 12.8 brought --Ofast-compile; an older one compiles fully (the same results, later).
    if (!fast.empty() && nvrtc_version() >= 12080) {
        options.push_back("--Ofast-compile=" + fast);
        if (split) options.push_back("--split-compile=0");
    }
    for (std::string& o : extra_compile_options(extra)) options.push_back(std::move(o));
    return options;
}

struct Header {
    std::string name, text;
};

bool read_file(const std::string& path, std::string& out) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return false;
    std::ostringstream s;
    s << in.rdbuf();
    out = s.str();
    return true;
}

/// Quoted #include names in `text`, in order (angle-bracket includes are the
/// toolkit's and NVRTC's own).
std::vector<std::string> quoted_includes(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    std::string line;
    while (std::getline(in, line)) {
        size_t at = line.find_first_not_of(" \t");
        if (at == std::string::npos || line[at] != '#') continue;
        at = line.find_first_not_of(" \t", at + 1);
        if (at == std::string::npos || line.compare(at, 7, "include") != 0) continue;
        size_t open = line.find('"', at + 7);
        size_t close = open == std::string::npos ? open : line.find('"', open + 1);
        if (close != std::string::npos) out.push_back(line.substr(open + 1, close - open - 1));
    }
    return out;
}

/// Every header the generated source reaches through quoted includes: the
/// built-in (embedded) ones, then files under `roots` (an env or module outside
/// the library; GpuOptions::source_dir is the last root). Only these are given to NVRTC and hashed into the cache key,
/// so editing one env's header does not invalidate another env's kernels.
/// Throws when the env header itself cannot be found.
std::vector<Header> gather_headers(const std::string& source, const std::string& env_header,
                                   std::vector<std::string> roots) {
    std::map<std::string, std::string> built_in;
    for (size_t i = 0; i < kNumEmbeddedHeaders; ++i) built_in[kEmbeddedHeaders[i].name] = kEmbeddedHeaders[i].text;
    std::vector<Header> out;
    std::set<std::string> seen;
    auto resolve = [&](const std::string& name, std::string& text) {
        if (auto it = built_in.find(name); it != built_in.end()) {
            text = it->second;
            return true;
        }
        for (const std::string& root : roots)
            if (read_file(root + "/" + name, text)) return true;
        return false;
    };
    // Depth-first from the generated source; a name is "dir/of/includer/x.hpp"
    // when that exists (an include relative to its file), else as written.
    std::vector<std::pair<std::string, std::string>> pending; // (includer's name, included name)
    for (const std::string& inc : quoted_includes(source)) pending.push_back({"", inc});
    while (!pending.empty()) {
        auto [from, inc] = pending.back();
        pending.pop_back();
        std::string text, name;
        size_t slash = from.rfind('/');
        if (slash != std::string::npos) {
            std::string sibling = from.substr(0, slash + 1) + inc;
            if (seen.count(sibling) || resolve(sibling, text)) name = sibling;
        }
        if (name.empty()) {
            name = inc;
            if (!seen.count(name) && !resolve(name, text)) {
                if (name == env_header)
                    throw Error("env header '" + env_header +
                                "' is not built into this library and was not found "
                                "under its header roots or GpuOptions::source_dir ($ORRERY_SOURCE_DIR for the "
                                "tools); the GPU backend compiles it at run time");
                continue; // NVRTC names it if the compile needs it
            }
        }
        if (!seen.insert(name).second) continue;
        for (const std::string& next : quoted_includes(text)) pending.push_back({name, next});
        out.push_back({name, std::move(text)});
    }
    std::sort(out.begin(), out.end(), [](const Header& a, const Header& b) { return a.name < b.name; });
    return out;
}

std::string cache_key(const CompileRequest& req, const std::vector<Header>& headers,
                      const std::vector<std::string>& options) {
    Sha256 h;
    h.field("orrery compile cache v2"); // v2: only the headers the source reaches
    h.field(req.source);
    for (const Header& x : headers) {
        h.field(x.name);
        h.field(x.text);
    }
    for (const std::string& o : options) h.field(o);
    h.field(std::to_string(nvrtc_version()));
    h.field(std::to_string(req.driver_version));
    return to_hex(h.digest());
}

std::string payload_digest(const std::string& cubin) {
    Sha256 h;
    h.update(cubin);
    return to_hex(h.digest());
}

/// Creates `dir` and its missing parents with mode 0700; true when it is a
/// directory we own that no one else can write (a planted entry is then ours).
bool prepare_directory(const std::string& dir, std::string& why) {
    for (size_t at = 1; at <= dir.size(); ++at) {
        if (at != dir.size() && dir[at] != '/') continue;
        std::string part = dir.substr(0, at);
        if (::mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
            why = "cannot create " + part + ": " + std::strerror(errno);
            return false;
        }
    }
    struct stat st {};
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
        why = dir + " is not a directory";
        return false;
    }
    if (st.st_uid != ::geteuid() || (st.st_mode & 022)) {
        why = dir + " is not owned by this user or is writable by others";
        return false;
    }
    return true;
}

/// Reads an entry; "" with a reason in `why` when it is missing, foreign or corrupt.
std::string load_entry(const std::string& path, const std::string& key, std::string& why) {
    int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return "";
    struct stat st {};
    bool ok = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == ::geteuid() && !(st.st_mode & 022);
    std::string data;
    if (ok) {
        data.resize(size_t(st.st_size));
        ok = ::read(fd, data.data(), data.size()) == ssize_t(data.size());
    }
    ::close(fd);
    const size_t head = sizeof(kMagic) + 64 + 64 + 8;
    if (!ok || data.size() < head || std::memcmp(data.data(), kMagic, sizeof(kMagic)) != 0) {
        why = "unreadable, foreign or not a cache entry";
        return "";
    }
    uint64_t n = 0;
    std::memcpy(&n, data.data() + sizeof(kMagic) + 128, 8);
    std::string cubin = data.substr(head);
    if (data.compare(sizeof(kMagic), 64, key) != 0)
        why = "recorded key differs";
    else if (n != cubin.size())
        why = "truncated";
    else if (data.compare(sizeof(kMagic) + 64, 64, payload_digest(cubin)) != 0)
        why = "content digest mismatch";
    return why.empty() ? cubin : "";
}

void store_entry(const std::string& dir, const std::string& path, const std::string& key, const std::string& cubin) {
    static std::atomic<unsigned> counter{0};
    std::string tmp =
        dir + "/." + key.substr(0, 16) + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        std::fprintf(stderr, "orrery: cannot write the compile cache (%s: %s)\n", tmp.c_str(), std::strerror(errno));
        return;
    }
    std::string data(kMagic, sizeof(kMagic));
    uint64_t n = cubin.size();
    data += key + payload_digest(cubin) + std::string(reinterpret_cast<const char*>(&n), 8) + cubin;
    bool ok = ::write(fd, data.data(), data.size()) == ssize_t(data.size());
    ok = ::close(fd) == 0 && ok;
    if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
        std::fprintf(stderr, "orrery: cannot write the compile cache entry %s\n", path.c_str());
        ::unlink(tmp.c_str());
    }
}

std::string run_nvrtc(const CompileRequest& req, const std::vector<Header>& headers,
                      const std::vector<std::string>& options) {
    const NvrtcApi& api = nvrtc();
    std::vector<const char*> names, texts, opts;
    for (const Header& h : headers) {
        names.push_back(h.name.c_str());
        texts.push_back(h.text.c_str());
    }
    for (const std::string& o : options) opts.push_back(o.c_str());
    // For profilers: the line info of the cubin names req.file_name under the
    // working directory; GpuOptions::dump_source_dir (ORRERY_DUMP_SOURCE) writes the source there.
    if (const std::string& dir = req.dump_source_dir; !dir.empty()) {
        std::ofstream dump(dir + "/" + req.file_name, std::ios::binary);
        dump << req.source;
        if (!dump)
            std::fprintf(stderr, "orrery: could not write %s/%s (ORRERY_DUMP_SOURCE)\n", dir.c_str(),
                         req.file_name.c_str());
    }
    nvrtcProgram prog = nullptr;
    ORRERY_NVRTC(api.nvrtcCreateProgram(&prog, req.source.c_str(), req.file_name.c_str(), int(headers.size()),
                                        texts.data(), names.data()),
                 nullptr);
    struct Guard {
        const NvrtcApi& api;
        nvrtcProgram& p;
        ~Guard() { api.nvrtcDestroyProgram(&p); }
    } guard{api, prog};
    ORRERY_NVRTC(api.nvrtcCompileProgram(prog, int(opts.size()), opts.data()), prog);
    size_t n = 0;
    ORRERY_NVRTC(api.nvrtcGetCUBINSize(prog, &n), prog);
    std::string cubin(n, '\0');
    ORRERY_NVRTC(api.nvrtcGetCUBIN(prog, cubin.data()), prog);
    return cubin;
}

void check_arch(int arch) {
    const NvrtcApi& api = nvrtc();
    int n = 0;
    ORRERY_NVRTC(api.nvrtcGetNumSupportedArchs(&n), nullptr);
    std::vector<int> archs(size_t(n > 0 ? n : 0));
    if (n > 0) ORRERY_NVRTC(api.nvrtcGetSupportedArchs(archs.data()), nullptr);
    for (int a : archs)
        if (a == arch) return;
    std::string list;
    for (int a : archs) list += (list.empty() ? "" : ", ") + std::to_string(a);
    int v = nvrtc_version();
    throw Error("NVRTC " + std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10) + " (" + nvrtc_path() +
                ") cannot compile for sm_" + std::to_string(arch) + "; it supports: " + list +
                ". Install a CUDA toolkit that supports this GPU or set ORRERY_NVRTC");
}

} // namespace

std::string cache_directory(const std::string& configured) {
    if (!configured.empty()) return configured;
    // The platform's cache location: where the user keeps caches, not an Orrery setting.
    if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x == '/') return std::string(x) + "/orrery";
    if (const char* home = std::getenv("HOME"); home && *home) return std::string(home) + "/.cache/orrery";
    return "";
}

std::string compile_options_text(int arch) {
    std::string s;
    for (const std::string& o : compile_options(arch)) s += (s.empty() ? "" : " ") + o;
    return s;
}

namespace {

/// Compiles `req`, or loads it from the cache; with `cache_only`, a missing
/// entry returns an empty cubin instead of compiling.
CompiledModule compile_or_load(const CompileRequest& req, bool cache_only) {
    auto t0 = std::chrono::steady_clock::now();
    auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
    check_arch(req.arch);
    std::vector<std::string> roots = req.header_roots;
    if (!req.source_dir.empty()) roots.push_back(req.source_dir);
    std::vector<Header> headers = gather_headers(req.source, req.env_header, roots);
    std::vector<std::string> options =
        compile_options(req.arch, req.fast_compile, req.extra_options, req.split_compile);

    CompiledModule m;
    std::string dir = req.use_cache ? cache_directory(req.cache_dir) : "";
    std::string key, why;
    bool cache_ok = !dir.empty() && prepare_directory(dir, why);
    if (!dir.empty() && !cache_ok) std::fprintf(stderr, "orrery: compile cache disabled: %s\n", why.c_str());
    if (cache_ok) {
        key = cache_key(req, headers, options);
        m.cache_path = dir + "/" + key + ".cubin";
        m.cubin = load_entry(m.cache_path, key, why);
        if (!m.cubin.empty()) {
            m.from_cache = true;
            m.seconds = seconds();
            if (req.verbose)
                std::fprintf(stderr, "orrery: loaded %s (sm_%d) from the compile cache in %.3f s\n", req.label.c_str(),
                             req.arch, m.seconds);
            return m;
        }
        if (!why.empty())
            std::fprintf(stderr, "orrery: compile cache entry %s rejected (%s); recompiling\n", m.cache_path.c_str(),
                         why.c_str());
    }
    if (cache_only) {
        m.cache_path.clear();
        return m;
    }
    m.cubin = run_nvrtc(req, headers, options);
    m.seconds = seconds();
    if (req.log_compile)
        std::fprintf(stderr, "orrery: NVRTC compiled %s for sm_%d in %.2f s%s\n", req.label.c_str(), req.arch,
                     m.seconds, cache_ok ? "" : " (not cached)");
    if (cache_ok)
        store_entry(dir, m.cache_path, key, m.cubin);
    else
        m.cache_path.clear();
    return m;
}

} // namespace

CompiledModule compile_module(const CompileRequest& req) { return compile_or_load(req, false); }

CompiledModule load_cached_module(const CompileRequest& req) {
    if (!req.use_cache) return {};
    return compile_or_load(req, true);
}

std::vector<CompiledModule> compile_modules(const std::vector<CompileRequest>& reqs, unsigned threads) {
    std::vector<CompiledModule> out(reqs.size());
    std::vector<std::string> errors(reqs.size());
    if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
    threads = unsigned(std::min<size_t>(threads, reqs.size()));
    // Requests are taken in order by whichever thread is free; NVRTC compiles
    // separate programs concurrently, and the cache writes distinct entries
    // (a temporary name per process and counter, then a rename).
    std::atomic<size_t> next{0};
    auto work = [&] {
        for (size_t i = next++; i < reqs.size(); i = next++) {
            try {
                out[i] = compile_module(reqs[i]);
            } catch (const std::exception& e) { errors[i] = reqs[i].label + ": " + e.what(); }
        }
    };
    std::vector<std::thread> pool;
    for (unsigned t = 1; t < threads; ++t) {
        try {
            pool.emplace_back(work);
        } catch (const std::system_error&) { break; } // fewer threads, same results
    }
    work();
    for (std::thread& t : pool) t.join();
    for (const std::string& e : errors)
        if (!e.empty()) throw Error(e);
    return out;
}

} // namespace orrery::cuda
