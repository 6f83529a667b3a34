#pragma once
// Env plugins: a shared library built outside this tree (find_package(Orrery),
// orrery_add_plugin) registers its envs with the process that loads it. A
// plugin links only the SDK library (registration tables, option reading),
// never the engine, so it cannot hold a second registry: the loader hands it
// the one the engine uses (docs/writing-an-env.md, "An env outside the tree").

#include <string>
#include <vector>

#include "engine/env.hpp"

namespace orrery {

/// Bumped whenever EnvSpec, or anything a factory hands across, changes shape.
inline constexpr int kPluginAbiVersion =
    3; // 2: EnvSpec::prefer_per_node, fast_compile; 3: step scratch (NodeSpec::scratch, CpuNodeFn's slot)

/// What a plugin and its loader must agree on to share EnvSpec objects. Both
/// sides compute it from their own headers; a mismatch refuses the plugin.
inline std::string plugin_abi() {
    // The objects either side reads of the other's: the registration table
    // (plugin to engine) and the world storage its CPU systems run over (engine to plugin).
    std::string abi = "orrery-plugin " + std::to_string(kPluginAbiVersion) + "; EnvSpec " +
                      std::to_string(sizeof(EnvSpec)) + " B; DrawSpec " + std::to_string(sizeof(DrawSpec)) +
                      " B; Storage " + std::to_string(sizeof(Storage)) + " B; Ctx " + std::to_string(sizeof(Ctx)) +
                      " B";
#ifdef _GLIBCXX_USE_CXX11_ABI
    abi += "; libstdc++ cxx11 ABI " + std::to_string(_GLIBCXX_USE_CXX11_ABI);
#endif
    return abi;
}

/// What the loader hands a plugin's entry function: plain data, so its layout
/// does not depend on either side's flags.
struct PluginHost {
    void* loader;
    void (*add)(void* loader, const std::string& name, EnvFactory factory, std::string summary);
};

/// The registry as a plugin sees it, inside ORRERY_PLUGIN(registry) { ... }.
class PluginRegistry {
  public:
    explicit PluginRegistry(const PluginHost& host) : host_(host) {}
    /// Registers env `name`. An EnvSpec that sets no header root gets the
    /// plugin's own folder, where orrery_add_plugin puts its HEADERS.
    void add(const std::string& name, EnvFactory factory, std::string summary) const {
        host_.add(host_.loader, name, std::move(factory), std::move(summary));
    }

  private:
    const PluginHost& host_;
};

/// Loads the env plugin at `path` (a shared library made by orrery_add_plugin)
/// and returns the names of the envs it registered; loading a file again
/// returns the same names. Throws orrery::Error if it cannot be loaded, is not
/// a plugin, was built against another Orrery, or registers a taken name.
/// @warning A plugin is never unloaded: the registry keeps its factories.
std::vector<std::string> load_plugin(const std::string& path);

/// Loads every plugin named in $ORRERY_PLUGINS (paths separated by ':'), as
/// the native tools do at start; throws orrery::Error naming the variable.
void load_plugins_from_environment();

} // namespace orrery

/// Defines a plugin's entry function; its body registers the plugin's envs:
///     ORRERY_PLUGIN(registry) { registry.add("reach", reach::make_spec, "a 2-D reach task"); }
#define ORRERY_PLUGIN(registry)                                                                                        \
    static void orrery_plugin_envs(const ::orrery::PluginRegistry& registry);                                          \
    extern "C" __attribute__((visibility("default"))) const char* orrery_plugin_abi() {                                \
        static const std::string abi = ::orrery::plugin_abi();                                                         \
        return abi.c_str();                                                                                            \
    }                                                                                                                  \
    extern "C" __attribute__((visibility("default"))) void orrery_plugin_register(const ::orrery::PluginHost* host) {  \
        orrery_plugin_envs(::orrery::PluginRegistry(*host));                                                           \
    }                                                                                                                  \
    static void orrery_plugin_envs(const ::orrery::PluginRegistry& registry)
