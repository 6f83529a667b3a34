#pragma once
// Opening files named by users (layouts, checkpoints) as untrusted input: a
// path is refused if it holds a NUL byte, a file unless it is a regular file
// within a size limit, so /dev/zero, a FIFO or a directory fail at once.

#include <cstddef>
#include <cstdint>
#include <string>

namespace orrery {

/// Throws orrery::Error when `path` is empty or holds a NUL byte (C APIs would cut it).
/// `what` names the argument in the message ("layout_file", "checkpoint").
void check_path(const std::string& path, const std::string& what);

/// A read-only regular file, closed on destruction. Opening never blocks (a
/// FIFO is refused, not waited on).
class RegularFile {
  public:
    /// Opens `path`; throws orrery::Error naming `what` unless it is a regular
    /// file of at most `max_bytes` bytes.
    RegularFile(const std::string& path, const std::string& what, uint64_t max_bytes);
    ~RegularFile();
    RegularFile(const RegularFile&) = delete;
    RegularFile& operator=(const RegularFile&) = delete;

    /// The size fstat reported when the file was opened.
    uint64_t size() const { return size_; }
    /// Reads exactly `n` bytes at the current offset; throws orrery::Error if the
    /// file ends first (it shrank since it was opened) or a read fails.
    void read_exact(void* dst, size_t n);
    /// Moves the read offset to `at` bytes from the start.
    void seek(uint64_t at);

  private:
    int fd_ = -1;
    uint64_t size_ = 0;
    std::string path_, what_;
};

/// The whole of a regular file of at most `max_bytes` bytes (see RegularFile).
std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes);

} // namespace orrery
