#pragma once
// Writing frames: PNG through stb_image_write, animated GIF through a small
// LZW encoder of our own, and mp4 through the ffmpeg program when installed.

#include <cstdint>
#include <string>
#include <vector>

namespace orrery::render {

/// Writes RGBA8 pixels (rows from the top) as a PNG; throws orrery::Error on failure.
void write_png(const std::string& path, const uint8_t* rgba, uint32_t width, uint32_t height);

/// Writes frames (each width * height * 4 bytes of RGBA8) as a looping GIF with a
/// fixed 256-colour palette (3-3-2 bits), `delay_cs` hundredths of a second apart.
void write_gif(const std::string& path, const std::vector<std::vector<uint8_t>>& frames, uint32_t width,
               uint32_t height, uint32_t delay_cs);

/// Runs `argv` (argv[0] looked up on the PATH) with no shell in between, and
/// waits; stdout and stderr go to /dev/null when `quiet`. Returns the exit
/// status, or -1 when the program could not start or did not exit normally.
int run_program(const std::vector<std::string>& argv, bool quiet);

/// True when an `ffmpeg` program is on the PATH.
bool have_ffmpeg();

/// Encodes `pattern` (printf-style PNG names, e.g. dir/frame_%05d.png) into an
/// mp4 at `fps` with ffmpeg, spawned with an argument vector (no shell). Throws
/// orrery::Error naming the paths when it fails.
void encode_mp4(const std::string& pattern, const std::string& out, uint32_t fps);

} // namespace orrery::render
