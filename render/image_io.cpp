// PNG, GIF and mp4 output for orrery-record and the viewer's screenshots.

#include "render/image_io.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <stb_image_write.h>

#include "engine/error.hpp"

extern char** environ;

namespace orrery::render {

void write_png(const std::string& path, const uint8_t* rgba, uint32_t width, uint32_t height) {
    if (!stbi_write_png(path.c_str(), int(width), int(height), 4, rgba, int(width * 4)))
        throw Error("render: could not write PNG '" + path + "'");
}

namespace {

/// Packs variable-width LZW codes least significant bit first into 255-byte sub-blocks.
class BitWriter {
  public:
    void put(uint32_t code, uint32_t bits) {
        acc_ |= uint64_t(code) << n_;
        n_ += bits;
        while (n_ >= 8) {
            bytes_.push_back(uint8_t(acc_ & 0xFF));
            acc_ >>= 8;
            n_ -= 8;
        }
    }
    void flush_into(std::vector<uint8_t>& out) {
        if (n_) bytes_.push_back(uint8_t(acc_ & 0xFF));
        for (size_t i = 0; i < bytes_.size(); i += 255) {
            size_t n = bytes_.size() - i < 255 ? bytes_.size() - i : 255;
            out.push_back(uint8_t(n));
            out.insert(out.end(), bytes_.begin() + long(i), bytes_.begin() + long(i + n));
        }
        out.push_back(0);
    }

  private:
    std::vector<uint8_t> bytes_;
    uint64_t acc_ = 0;
    uint32_t n_ = 0;
};

/// LZW-compresses 8-bit palette indices the way GIF decoders expect: codes grow
/// from 9 to 12 bits, and the table is cleared when it holds 4095 entries.
void lzw(const std::vector<uint8_t>& idx, std::vector<uint8_t>& out) {
    constexpr uint32_t kClear = 256, kEnd = 257;
    std::vector<uint16_t> next(4096 * 256, 0); // next[code * 256 + byte]: the extended code, 0 if none
    uint32_t bits = 9, last = kEnd;
    BitWriter w;
    w.put(kClear, bits);
    int32_t cur = -1;
    for (uint8_t p : idx) {
        if (cur < 0) {
            cur = p;
            continue;
        }
        uint16_t& slot = next[size_t(cur) * 256 + p];
        if (slot) {
            cur = slot;
            continue;
        }
        w.put(uint32_t(cur), bits);
        slot = uint16_t(++last);
        if (last >= (1u << bits)) ++bits;
        if (last == 4095) {
            w.put(kClear, bits);
            std::fill(next.begin(), next.end(), 0);
            bits = 9, last = kEnd;
        }
        cur = p;
    }
    if (cur >= 0) w.put(uint32_t(cur), bits);
    w.put(kEnd, bits);
    w.flush_into(out);
}

void put16(std::vector<uint8_t>& o, uint32_t v) {
    o.push_back(uint8_t(v & 0xFF));
    o.push_back(uint8_t(v >> 8));
}

} // namespace

void write_gif(const std::string& path, const std::vector<std::vector<uint8_t>>& frames, uint32_t width,
               uint32_t height, uint32_t delay_cs) {
    std::vector<uint8_t> o = {'G', 'I', 'F', '8', '9', 'a'};
    put16(o, width), put16(o, height);
    o.insert(o.end(), {0xF7, 0, 0}); // global table of 256 colours
    for (uint32_t i = 0; i < 256; ++i)
        o.insert(o.end(), {uint8_t((i >> 5) * 255 / 7), uint8_t(((i >> 2) & 7) * 255 / 7), uint8_t((i & 3) * 255 / 3)});
    const char loop[] = "\x21\xFF\x0BNETSCAPE2.0\x03\x01\x00\x00\x00";
    o.insert(o.end(), loop, loop + sizeof(loop) - 1);
    std::vector<uint8_t> idx(size_t(width) * height);
    for (const auto& f : frames) {
        o.insert(o.end(), {0x21, 0xF9, 0x04, 0x00});
        put16(o, delay_cs);
        o.insert(o.end(), {0x00, 0x00, 0x2C, 0, 0, 0, 0});
        put16(o, width), put16(o, height);
        o.insert(o.end(), {0x00, 0x08});
        for (size_t i = 0; i < idx.size(); ++i) {
            const uint8_t* p = &f[i * 4];
            // Round to the nearest palette level rather than truncating.
            uint32_t r = (p[0] * 7 + 127) / 255, g = (p[1] * 7 + 127) / 255, b = (p[2] * 3 + 127) / 255;
            idx[i] = uint8_t(r << 5 | g << 2 | b);
        }
        lzw(idx, o);
    }
    o.push_back(0x3B);
    FILE* fp = std::fopen(path.c_str(), "wb");
    bool ok = fp && std::fwrite(o.data(), 1, o.size(), fp) == o.size();
    if (fp) ok = std::fclose(fp) == 0 && ok;
    if (!ok) throw Error("render: could not write GIF '" + path + "'");
}

int run_program(const std::vector<std::string>& argv, bool quiet) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawn_file_actions_t io;
    posix_spawn_file_actions_init(&io);
    if (quiet) {
        posix_spawn_file_actions_addopen(&io, 1, "/dev/null", O_WRONLY, 0);
        posix_spawn_file_actions_adddup2(&io, 1, 2);
    }
    pid_t pid = 0;
    int rc = posix_spawnp(&pid, args[0], &io, nullptr, args.data(), environ);
    posix_spawn_file_actions_destroy(&io);
    if (rc != 0) return -1;
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool have_ffmpeg() { return run_program({"ffmpeg", "-version"}, true) == 0; }

void encode_mp4(const std::string& pattern, const std::string& out, uint32_t fps) {
    // An argument vector, no shell: paths are passed through as they are.
    std::vector<std::string> argv = {"ffmpeg",
                                     "-y",
                                     "-loglevel",
                                     "error",
                                     "-framerate",
                                     std::to_string(fps),
                                     "-i",
                                     pattern,
                                     "-vf",
                                     "pad=ceil(iw/2)*2:ceil(ih/2)*2",
                                     "-pix_fmt",
                                     "yuv420p",
                                     out.rfind('-', 0) == 0 ? "./" + out : out}; // not read as an option
    if (out.find('\0') != std::string::npos || pattern.find('\0') != std::string::npos)
        throw Error("render: the video path holds a NUL byte");
    if (run_program(argv, false) != 0)
        throw Error("render: ffmpeg failed writing '" + out + "' from '" + pattern + "'");
}

} // namespace orrery::render
