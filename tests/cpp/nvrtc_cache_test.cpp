// The compile cache: a second compile of the same source is a cache hit with
// the same binary; a corrupt, truncated or planted entry is rejected and
// rebuilt, never loaded; the directory is private; the configured directory
// (GpuOptions::cache_dir), then the XDG rules, pick it. Needs NVRTC only (no GPU).

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "engine/cuda/nvrtc_compiler.hpp"
#include "engine/cuda/sha256.hpp"
#include "engine/error.hpp"
#include "engine/options.hpp"

namespace {

namespace fs = std::filesystem;
using orrery::cuda::CompiledModule;
using orrery::cuda::CompileRequest;

class Cache : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = fs::temp_directory_path() / ("orrery_cache_test_" + std::to_string(::getpid()));
        fs::remove_all(dir_);
        cache_dir_ = (dir_ / "nested" / "cache").string();
    }
    void TearDown() override { fs::remove_all(dir_); }
    CompileRequest request(const std::string& tag = "1") const {
        CompileRequest r;
        r.label = "cache test kernel";
        r.cache_dir = cache_dir_;
        r.source = "#include \"ecs/base.hpp\"\nextern \"C\" __global__ void k(unsigned* p) { p[0] = " + tag + "u; }\n";
        r.arch = 90;
        return r;
    }
    static std::string read(const std::string& path) {
        std::ifstream in(path, std::ios::binary);
        return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    }
    static void write(const std::string& path, const std::string& data) {
        std::ofstream(path, std::ios::binary | std::ios::trunc) << data;
    }
    fs::path dir_;
    std::string cache_dir_; ///< what request() asks for, as GpuOptions::cache_dir
};

TEST_F(Cache, SecondCompileIsAHitWithTheSameBinary) {
    CompiledModule a = orrery::cuda::compile_module(request());
    EXPECT_FALSE(a.from_cache);
    ASSERT_FALSE(a.cache_path.empty());
    EXPECT_EQ(fs::path(a.cache_path).parent_path(), dir_ / "nested" / "cache");
    CompiledModule b = orrery::cuda::compile_module(request());
    EXPECT_TRUE(b.from_cache);
    EXPECT_EQ(a.cubin, b.cubin);
    CompiledModule c = orrery::cuda::compile_module(request("2"));
    EXPECT_FALSE(c.from_cache) << "a different source is a different key";
    EXPECT_NE(c.cache_path, a.cache_path);
}

TEST_F(Cache, DirectoryAndEntriesArePrivate) {
    CompiledModule a = orrery::cuda::compile_module(request());
    struct stat st {};
    ASSERT_EQ(::stat((dir_ / "nested" / "cache").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat((dir_ / "nested").c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0700u);
    ASSERT_EQ(::stat(a.cache_path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u);
    for (const auto& e : fs::directory_iterator(dir_ / "nested" / "cache"))
        EXPECT_EQ(e.path().extension(), ".cubin") << "no temporary file is left behind: " << e.path();
}

TEST_F(Cache, CorruptEntryIsRebuiltNotLoaded) {
    CompiledModule a = orrery::cuda::compile_module(request());
    std::string data = read(a.cache_path);
    data[data.size() - 10] ^= 0x5A; // one flipped byte in the binary
    write(a.cache_path, data);
    CompiledModule b = orrery::cuda::compile_module(request());
    EXPECT_FALSE(b.from_cache);
    EXPECT_EQ(b.cubin, a.cubin);
    EXPECT_EQ(read(b.cache_path).size(), data.size());
    EXPECT_TRUE(orrery::cuda::compile_module(request()).from_cache) << "the rebuilt entry is good again";
}

TEST_F(Cache, TruncatedOrPlantedEntriesAreRejected) {
    CompiledModule a = orrery::cuda::compile_module(request());
    std::string good = read(a.cache_path);
    write(a.cache_path, good.substr(0, good.size() / 2));
    EXPECT_FALSE(orrery::cuda::compile_module(request()).from_cache);
    // Another module's entry renamed to this key: its recorded key differs.
    CompiledModule other = orrery::cuda::compile_module(request("3"));
    fs::copy_file(other.cache_path, a.cache_path, fs::copy_options::overwrite_existing);
    CompiledModule b = orrery::cuda::compile_module(request());
    EXPECT_FALSE(b.from_cache);
    EXPECT_EQ(b.cubin, a.cubin);
    // Garbage under the right name.
    write(a.cache_path, "not a cubin at all");
    EXPECT_FALSE(orrery::cuda::compile_module(request()).from_cache);
}

// Issue 19, finding 16: the digest sits inside the entry, so it detects
// corruption, not a forged entry; what keeps other users' bytes out is that an
// entry must be a regular file (opened O_NOFOLLOW) owned by the user and not
// writable by others. Those checks are what this test holds in place.
TEST_F(Cache, EntriesOthersCouldWriteAreNotLoaded) {
    CompiledModule a = orrery::cuda::compile_module(request());
    const std::string good = read(a.cache_path);
    fs::permissions(a.cache_path,
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write);
    EXPECT_FALSE(orrery::cuda::compile_module(request()).from_cache) << "an entry writable by others was loaded";
    // A symbolic link to a well-formed entry elsewhere (anyone's file) is not followed.
    fs::path elsewhere = dir_ / "elsewhere.cubin";
    write(elsewhere.string(), good);
    fs::permissions(elsewhere, fs::perms::owner_read | fs::perms::owner_write);
    fs::remove(a.cache_path);
    fs::create_symlink(elsewhere, a.cache_path);
    EXPECT_FALSE(orrery::cuda::compile_module(request()).from_cache) << "a symbolic link was followed";
}

TEST_F(Cache, DirectoryWritableByOthersIsNotUsed) {
    fs::create_directories(dir_ / "open");
    fs::permissions(dir_ / "open", fs::perms::all);
    cache_dir_ = (dir_ / "open").string();
    CompiledModule a = orrery::cuda::compile_module(request());
    EXPECT_TRUE(a.cache_path.empty());
    EXPECT_FALSE(orrery::cuda::compile_module(request()).from_cache);
    EXPECT_TRUE(fs::is_empty(dir_ / "open"));
}

// GpuOptions::nvrtc_options (ORRERY_NVRTC_OPTIONS) adds tuning options to the
// compile and to the cache key (a binary built with other options is never
// loaded in its place), and refuses the options that would change float
// results, naming the option.
TEST_F(Cache, ExtraOptionsAreCompiledAndKeyedAndFloatChangingOnesRefused) {
    EXPECT_TRUE(orrery::cuda::extra_compile_options("").empty());
    EXPECT_EQ(orrery::cuda::extra_compile_options("  --maxrregcount=128 \t-Xptxas=-O2 "),
              (std::vector<std::string>{"--maxrregcount=128", "-Xptxas=-O2"}));
    for (const char* bad : {"-fmad=true", "--use_fast_math", "-ftz=true", "-prec-div=false", "-prec-sqrt=false",
                            "--gpu-architecture=sm_80", "--std=c++17"}) {
        try {
            orrery::cuda::extra_compile_options(bad);
            ADD_FAILURE() << bad << " was accepted";
        } catch (const orrery::Error& e) {
            EXPECT_NE(std::string(e.what()).find(std::string("'") + bad + "'"), std::string::npos) << e.what();
            EXPECT_NE(std::string(e.what()).find("nvrtc_options"), std::string::npos) << e.what();
        }
    }
    EXPECT_EQ(orrery::cuda::extra_compile_options("-fmadness").size(), 1u) << "only whole option names are refused";

    CompiledModule plain = orrery::cuda::compile_module(request());
    CompileRequest tuned_request = request();
    tuned_request.extra_options = "--maxrregcount=32";
    CompiledModule tuned = orrery::cuda::compile_module(tuned_request);
    EXPECT_FALSE(tuned.from_cache) << "a binary compiled with other options was loaded";
    EXPECT_NE(tuned.cache_path, plain.cache_path);
    EXPECT_TRUE(orrery::cuda::compile_module(tuned_request).from_cache);
    tuned_request.extra_options = "-fmad=true";
    EXPECT_THROW(orrery::cuda::compile_module(tuned_request), orrery::Error);

    const char* old = std::getenv("ORRERY_NVRTC_OPTIONS");
    std::string saved = old ? old : "";
    setenv("ORRERY_NVRTC_OPTIONS", "--maxrregcount=64", 1);
    EXPECT_EQ(orrery::options_from_environment().gpu.nvrtc_options, "--maxrregcount=64");
    if (old)
        setenv("ORRERY_NVRTC_OPTIONS", saved.c_str(), 1);
    else
        unsetenv("ORRERY_NVRTC_OPTIONS");
}

TEST_F(Cache, DirectoryIsTheConfiguredOneThenXdg) {
    EXPECT_EQ(orrery::cuda::cache_directory(cache_dir_), cache_dir_);
    const char* old = std::getenv("XDG_CACHE_HOME");
    std::string saved = old ? old : "";
    setenv("XDG_CACHE_HOME", "/xdg/place", 1);
    EXPECT_EQ(orrery::cuda::cache_directory(), "/xdg/place/orrery");
    unsetenv("XDG_CACHE_HOME");
    if (const char* home = std::getenv("HOME"); home && *home) {
        EXPECT_EQ(orrery::cuda::cache_directory(), std::string(home) + "/.cache/orrery");
    }
    if (old) setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

} // namespace

// The cache's digest is our own SHA-256: it must give the FIPS 180-4 test vectors,
// also when the message arrives in pieces that straddle a 64-byte block.
namespace {
std::string sha256_hex(const std::vector<std::string>& pieces) {
    orrery::cuda::Sha256 h;
    for (const std::string& p : pieces) h.update(p);
    return orrery::cuda::to_hex(h.digest());
}

TEST(Sha256, MatchesTheStandardTestVectors) {
    EXPECT_EQ(sha256_hex({""}), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(sha256_hex({"abc"}), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const std::string two_blocks = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    EXPECT_EQ(sha256_hex({two_blocks}), "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex({two_blocks.substr(0, 5), two_blocks.substr(5, 50), two_blocks.substr(55)}),
              "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    EXPECT_EQ(sha256_hex({std::string(1000000, 'a')}),
              "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
} // namespace
