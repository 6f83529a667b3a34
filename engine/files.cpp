// Regular-file-only reading with a size limit (engine/files.hpp).

#include "engine/files.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/error.hpp"

namespace orrery {

void check_path(const std::string& path, const std::string& what) {
    if (path.empty()) throw Error(what + ": the path is empty");
    if (path.find('\0') != std::string::npos)
        throw Error(what + ": the path holds a NUL byte at offset " + std::to_string(path.find('\0')) +
                    "; expected a path without NUL bytes");
}

RegularFile::RegularFile(const std::string& path, const std::string& what, uint64_t max_bytes)
    : path_(path), what_(what) {
    check_path(path, what);
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer; it is refused below.
    fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd_ < 0) throw Error("cannot open " + what + " '" + path + "': " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
        ::close(fd_);
        fd_ = -1;
        throw Error(what + " '" + path + "' is not a regular file; expected a regular file");
    }
    if (uint64_t(st.st_size) > max_bytes) {
        ::close(fd_);
        fd_ = -1;
        throw Error(what + " '" + path + "' is " + std::to_string(st.st_size) + " bytes; expected at most " +
                    std::to_string(max_bytes));
    }
    size_ = uint64_t(st.st_size);
    ::fcntl(fd_, F_SETFL, ::fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
}

RegularFile::~RegularFile() {
    if (fd_ >= 0) ::close(fd_);
}

void RegularFile::read_exact(void* dst, size_t n) {
    auto* p = static_cast<uint8_t*>(dst);
    while (n) {
        ssize_t got = ::read(fd_, p, n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) throw Error("cannot read " + what_ + " '" + path_ + "': " + std::strerror(errno));
        if (got == 0) throw Error(what_ + " '" + path_ + "' is truncated: it ended while being read");
        p += got;
        n -= size_t(got);
    }
}

void RegularFile::seek(uint64_t at) {
    if (::lseek(fd_, off_t(at), SEEK_SET) != off_t(at))
        throw Error("cannot seek in " + what_ + " '" + path_ + "': " + std::strerror(errno));
}

std::string read_regular_file(const std::string& path, const std::string& what, uint64_t max_bytes) {
    RegularFile f(path, what, max_bytes);
    std::string out(size_t(f.size()), '\0');
    f.read_exact(out.data(), out.size());
    return out;
}

} // namespace orrery
