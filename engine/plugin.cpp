// The plugin loader: dlopen, an ABI check, then the plugin's entry function
// registers its envs through the engine's own registry.

#include "engine/plugin.hpp"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdlib>
#include <map>
#include <mutex>
#include <sstream>

namespace orrery {

namespace {

struct Loading {
    std::string path, dir;
    std::vector<std::string> names;
};

void add_from_plugin(void* loader, const std::string& name, EnvFactory factory, std::string summary) {
    Loading& l = *static_cast<Loading*>(loader);
    for (const auto& known : registered_envs())
        if (known.first == name)
            throw Error("plugin '" + l.path + "' registers env '" + name + "', a name already registered");
    register_env(
        name,
        [dir = l.dir, factory = std::move(factory)](const EnvOptions& options) {
            EnvSpec spec = factory(options);
            if (spec.header_root().empty()) spec.set_header_root(dir);
            return spec;
        },
        std::move(summary));
    l.names.push_back(name);
}

template <class F> F symbol(void* handle, const char* name) { return reinterpret_cast<F>(dlsym(handle, name)); }

} // namespace

std::vector<std::string> load_plugin(const std::string& path) {
    static std::mutex mu;
    static std::map<std::string, std::vector<std::string>> loaded; // by real path
    char real[PATH_MAX];
    if (!realpath(path.c_str(), real)) throw Error("plugin '" + path + "': no such file");
    std::lock_guard<std::mutex> lock(mu);
    if (auto it = loaded.find(real); it != loaded.end()) return it->second;
    void* handle = dlopen(real, RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw Error("plugin '" + path + "' could not be loaded: " + dlerror());
    auto abi = symbol<const char* (*)()>(handle, "orrery_plugin_abi");
    auto entry = symbol<void (*)(const PluginHost*)>(handle, "orrery_plugin_register");
    if (!abi || !entry) {
        dlclose(handle);
        throw Error("'" + path +
                    "' is not an Orrery env plugin (it defines no ORRERY_PLUGIN entry; build it "
                    "with orrery_add_plugin)");
    }
    const std::string theirs = abi(), ours = plugin_abi();
    if (theirs != ours) {
        dlclose(handle);
        throw Error("plugin '" + path + "' was built for \"" + theirs + "\" but this Orrery is \"" + ours +
                    "\"; rebuild it against this installation (cmake -DOrrery_DIR=$(python -m orrery --cmake-dir))");
    }
    std::string dir = real;
    dir = dir.substr(0, dir.rfind('/'));
    Loading l{path, dir.empty() ? "/" : dir, {}};
    PluginHost host{&l, &add_from_plugin};
    entry(&host); // the library stays loaded even if this throws: envs it added before keep their code
    loaded[real] = l.names;
    return l.names;
}

void load_plugins_from_environment() {
    const char* list = std::getenv("ORRERY_PLUGINS");
    if (!list) return;
    std::stringstream in(list);
    std::string path;
    while (std::getline(in, path, ':')) {
        if (path.empty()) continue;
        try {
            load_plugin(path);
        } catch (const Error& e) { throw Error(std::string("ORRERY_PLUGINS: ") + e.what()); }
    }
}

} // namespace orrery
