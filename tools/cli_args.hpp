#pragma once
// Numbers on the command lines of Orrery's tools (orrery, orrery_cuda_bench and
// the render front ends): a bad value is an orrery::Error that names the option
// and what it expects.

#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/error.hpp"

namespace orrery::cli {

/// `value` as a 64-bit unsigned integer, or an Error naming `opt`.
inline uint64_t parse_u64(const std::string& opt, const std::string& value) {
    try {
        size_t used = 0;
        unsigned long long n = std::stoull(value, &used);
        if (used != value.size() || value.find('-') != std::string::npos) throw std::invalid_argument(value);
        return n;
    } catch (const std::exception&) {
        throw Error("option " + opt + " expects a non-negative integer, got '" + value + "'");
    }
}

/// `value` as a 32-bit unsigned integer, or an Error naming `opt`.
inline uint32_t parse_u32(const std::string& opt, const std::string& value) {
    uint64_t n = parse_u64(opt, value);
    if (n > 0xFFFFFFFFull) throw Error("option " + opt + " is too large: " + value);
    return uint32_t(n);
}

/// A comma-separated list of such integers ("1,1024,65536").
inline std::vector<uint32_t> parse_u32_list(const std::string& opt, const std::string& value) {
    std::vector<uint32_t> out;
    std::stringstream in(value);
    std::string item;
    while (std::getline(in, item, ',')) out.push_back(parse_u32(opt, item));
    if (out.empty()) throw Error("option " + opt + " expects a comma-separated list of integers, got '" + value + "'");
    return out;
}

} // namespace orrery::cli
