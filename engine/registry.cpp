// The env registry: names to factories, shared by every caller in the process
// (built-in envs, and plugins through the loader in plugin.cpp). Kept out of
// env.cpp so the plugin SDK's library (orrery_plugin_sdk) has no registry of its
// own to register into by mistake.

#include <mutex>
#include <tuple>

#include "engine/env.hpp"

namespace orrery {

namespace {
struct Registry {
    std::mutex mu;
    std::vector<std::tuple<std::string, EnvFactory, std::string>> envs;
};
Registry& registry() {
    static Registry r;
    return r;
}
} // namespace

void register_env(const std::string& name, EnvFactory factory, std::string summary) {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    for (auto& e : r.envs)
        if (std::get<0>(e) == name) return; // registering twice is harmless
    r.envs.emplace_back(name, std::move(factory), std::move(summary));
}

EnvSpec make_env_spec(const std::string& name, const EnvOptions& options) {
    EnvFactory f;
    std::string known;
    {
        Registry& r = registry();
        std::lock_guard<std::mutex> lock(r.mu);
        for (auto& e : r.envs) {
            known += (known.empty() ? "" : ", ") + std::get<0>(e);
            if (std::get<0>(e) == name) f = std::get<1>(e);
        }
    }
    if (!f)
        throw Error("unknown env '" + name + "'; expected one of: " + known +
                    " (an env built outside this tree is loaded first: orrery.load_plugin(path) or $ORRERY_PLUGINS)");
    EnvSpec spec = f(options);
    spec.validate();
    return spec;
}

std::vector<std::pair<std::string, std::string>> registered_envs() {
    Registry& r = registry();
    std::lock_guard<std::mutex> lock(r.mu);
    std::vector<std::pair<std::string, std::string>> out;
    for (auto& e : r.envs) out.emplace_back(std::get<0>(e), std::get<2>(e));
    return out;
}

} // namespace orrery
