// Option parsing shared by every env's factory.

#include "envs/options.hpp"

#include <cstdio>

namespace orrery {

namespace {
/// A float as the shortest text that reads back to it, so 20 and 20.0 record alike.
std::string normalised(float x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.9g", double(x));
    return buf;
}
} // namespace

const std::string* OptionReader::find(const std::string& key) {
    known_.insert(key);
    auto it = options_.find(key);
    return it == options_.end() ? nullptr : &it->second;
}

uint32_t OptionReader::u32(const std::string& key, uint32_t fallback, uint32_t lo, uint32_t hi) {
    const std::string* v = find(key);
    if (!v) {
        values_[key] = std::to_string(fallback);
        return fallback;
    }
    std::string expect = "an integer in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
    try {
        size_t used = 0;
        long long x = std::stoll(*v, &used);
        if (used == v->size() && x >= lo && x <= hi) {
            values_[key] = std::to_string(x);
            return uint32_t(x);
        }
    } catch (const std::exception&) {}
    throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected " + expect);
}

float OptionReader::f32(const std::string& key, float fallback, float lo, float hi) {
    const std::string* v = find(key);
    if (!v) {
        values_[key] = normalised(fallback);
        return fallback;
    }
    try {
        size_t used = 0;
        float x = std::stof(*v, &used);
        if (used == v->size() && x >= lo && x <= hi) {
            values_[key] = normalised(x);
            return x;
        }
    } catch (const std::exception&) {}
    throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected a number in [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
}

bool OptionReader::flag(const std::string& key, bool fallback) {
    const std::string* v = find(key);
    bool x = fallback;
    if (v && (*v == "1" || *v == "true" || *v == "True"))
        x = true;
    else if (v && (*v == "0" || *v == "false" || *v == "False"))
        x = false;
    else if (v)
        throw Error(env_ + ": option " + key + "=" + *v + " is invalid; expected true or false");
    values_[key] = x ? "true" : "false";
    return x;
}

std::string OptionReader::str(const std::string& key, const std::string& fallback) {
    const std::string* v = find(key);
    return values_[key] = v ? *v : fallback;
}

void OptionReader::record(EnvSpec& spec) const {
    for (const auto& [k, v] : values_) spec.info()["option." + k] = v;
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
