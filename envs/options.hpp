#pragma once
// Reads an env's string options (from make(name, key=value, ...)) with range
// checks, and rejects unknown keys, so a typo is an error rather than a default.

#include <map>
#include <set>
#include <string>

#include "engine/env.hpp"

namespace orrery {

class OptionReader {
  public:
    OptionReader(std::string env, const EnvOptions& options) : env_(std::move(env)), options_(options) {}

    /// Integer option `key` in [lo, hi], `fallback` when absent.
    uint32_t u32(const std::string& key, uint32_t fallback, uint32_t lo, uint32_t hi);
    /// Boolean option (true/false/1/0).
    bool flag(const std::string& key, bool fallback);
    /// Float option in [lo, hi].
    float f32(const std::string& key, float fallback, float lo, float hi);
    /// String option, `fallback` when absent.
    std::string str(const std::string& key, const std::string& fallback);
    /// Leaves option `key` (read already) out of record(): for options that
    /// change no result, only where or how it is computed (a checkpoint made
    /// with one value loads into a simulator with another).
    void unrecorded(const std::string& key) { values_.erase(key); }
    /// Throws orrery::Error naming any option no reader asked for.
    void finish() const;
    /// Records every option read, with the value in effect (given or default,
    /// normalised), in spec.info() as "option.<key>": checkpoints carry them and
    /// a load with other options is refused naming the option.
    void record(EnvSpec& spec) const;

  private:
    const std::string* find(const std::string& key);
    std::string env_;
    const EnvOptions& options_;
    std::set<std::string> known_;
    std::map<std::string, std::string> values_; ///< the value in effect of each option read
};

} // namespace orrery
