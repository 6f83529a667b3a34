#pragma once
// SHA-256 for the compile cache: keys name a compiled module by what went into
// it, and each entry carries the digest of its contents so a corrupt file is
// rebuilt rather than loaded.

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace orrery::cuda {

/// Incremental SHA-256 (FIPS 180-4).
class Sha256 {
  public:
    Sha256();
    /// Adds bytes to the message.
    void update(const void* data, size_t n);
    void update(std::string_view s) { update(s.data(), s.size()); }
    /// Adds a length-prefixed field, so ("ab","c") and ("a","bc") hash differently.
    void field(std::string_view s);
    /// Finishes and returns the 32-byte digest (the object is then spent).
    std::array<uint8_t, 32> digest();

  private:
    void block(const uint8_t* p);
    uint32_t h_[8];
    uint8_t buf_[64];
    uint64_t bytes_ = 0;
};

/// Lower-case hex of a digest.
std::string to_hex(const std::array<uint8_t, 32>& d);

} // namespace orrery::cuda
