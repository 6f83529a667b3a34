// Option parsing shared by every env's factory.

#include "envs/options.hpp"

namespace orrery {

const std::string* OptionReader::find(const std::string& key) {
    known_.insert(key);
    auto it = options_.find(key);
    return it == options_.end() ? nullptr : &it->second;
}

uint32_t OptionReader::u32(const std::string& key, uint32_t fallback, uint32_t lo, uint32_t hi) {
    const std::string* v = find(key);
    if (!v) return fallback;
    std::string expect = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    try {
        size_t used = 0;
        long long x = std::stoll(*v, &used);
        if (used == v->size() && x >= lo && x <= hi) return uint32_t(x);
    } catch (const std::exception&) {
    }
    throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected " + expect);
}

float OptionReader::f32(const std::string& key, float fallback, float lo, float hi) {
    const std::string* v = find(key);
    if (!v) return fallback;
    try {
        size_t used = 0;
        float x = std::stof(*v, &used);
        if (used == v->size() && x >= lo && x <= hi) return x;
    } catch (const std::exception&) {
    }
    throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected a number in [" +
                std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

bool OptionReader::flag(const std::string& key, bool fallback) {
    const std::string* v = find(key);
    if (!v) return fallback;
    if (*v == "1" || *v == "true" || *v == "True") return true;
    if (*v == "0" || *v == "false" || *v == "False") return false;
    throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected true or false");
}

std::string OptionReader::str(const std::string& key, const std::string& fallback) {
    const std::string* v = find(key);
    return v ? *v : fallback;
}

void OptionReader::finish() const {
    for (const auto& [k, v] : options_) {
        if (known_.count(k)) continue;
        std::string names;
        for (const std::string& n : known_) names += (names.empty() ? "" : ", ") + n;
        throw Error(env_ + ": unknown option '" + k + "'; expected one of: " + names);
    }
}

} // namespace orrery
