#pragma once
// The text of every header NVRTC needs (ecs/, the device-side engine headers and
// each env's headers), embedded into the library at build time so a compiled
// program never reads the source tree. embed_headers.cmake writes the table.

#include <cstddef>

namespace orrery::cuda {

/// One header, under the name `#include` uses (path relative to the repo root).
struct EmbeddedHeader {
    const char* name;
    const char* text;
};

/// The table and its length (generated).
extern const EmbeddedHeader kEmbeddedHeaders[];
extern const size_t kNumEmbeddedHeaders;

} // namespace orrery::cuda
