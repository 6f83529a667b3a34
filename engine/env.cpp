// Registration tables: validation, node ordering and the env registry.

#include "engine/env.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <sstream>

namespace orrery {

void assert_fail(const char* cond, const char* msg, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: assertion failed: %s (%s)\n", file, line, cond, msg);
    std::abort();
}

size_t dtype_size(DType t) {
    switch (t) {
    case DType::kU8: case DType::kI8: return 1;
    case DType::kU16: case DType::kI16: return 2;
    case DType::kI32: case DType::kU32: case DType::kF32: return 4;
    case DType::kI64: return 8;
    }
    return 0;
}

const char* dtype_name(DType t) {
    switch (t) {
    case DType::kU8: return "uint8";
    case DType::kI8: return "int8";
    case DType::kU16: return "uint16";
    case DType::kI16: return "int16";
    case DType::kI32: return "int32";
    case DType::kU32: return "uint32";
    case DType::kF32: return "float32";
    case DType::kI64: return "int64";
    }
    return "?";
}

std::string EnvSpec::component_name(uint32_t id) {
    std::vector<std::string> names;
    std::stringstream in(component_names_);
    std::string item;
    while (std::getline(in, item, ',')) {
        item.erase(0, item.find_first_not_of(" \t\n"));
        item.erase(item.find_last_not_of(" \t\n") + 1);
        names.push_back(item);
    }
    return id < names.size() ? names[id] : "component" + std::to_string(id);
}

NodeId EnvSpec::add(Phase phase, SystemRef s, std::vector<NodeId> deps) {
    NodeSpec n{s, phase, {}};
    for (NodeId d : deps) {
        if (d.index >= nodes_.size() || nodes_[d.index].phase != phase)
            throw Error("env '" + name_ + "': node '" + s.name +
                        "' depends on a node that is not an earlier node of the same phase");
        n.deps.push_back(d.index);
    }
    nodes_.push_back(std::move(n));
    return NodeId{uint32_t(nodes_.size() - 1)};
}

NodeId EnvSpec::add_destroy_barrier(Phase phase, std::vector<NodeId> deps) {
    return add(phase, SystemRef{"orrery::apply_destroys", NodeKind::kApplyDestroys,
                                &detail::cpu_destroy_node},
               std::move(deps));
}

std::vector<const NodeSpec*> EnvSpec::ordered(Phase phase) const {
    // Dependencies may only point to earlier nodes (add() enforces it), so
    // insertion order is a topological order; a barrier is appended if missing.
    std::vector<const NodeSpec*> out;
    for (const NodeSpec& n : nodes_)
        if (n.phase == phase) out.push_back(&n);
    return out;
}

void EnvSpec::validate() const {
    auto fail = [&](const std::string& m) { throw Error("env '" + name_ + "': " + m); };
    if (components_.empty()) fail("no components registered");
    if (components_.size() > kMaxComponents)
        fail("has " + std::to_string(components_.size()) + " components; at most " +
             std::to_string(kMaxComponents));
    for (const ComponentSpec& c : components_)
        if (c.row_bytes == 0) fail("component '" + c.name + "' has no size (array dims not set)");
    if (archetypes_.empty()) fail("no archetypes registered");
    if (archetypes_.size() > kMaxArchetypes)
        fail("has " + std::to_string(archetypes_.size()) + " archetypes; at most " +
             std::to_string(kMaxArchetypes));
    for (size_t i = 0; i < archetypes_.size(); ++i) {
        const ArchetypeSpec& a = archetypes_[i];
        if (a.name.empty()) fail("archetype " + std::to_string(i) + " is declared but not registered");
        if (a.capacity == 0 || a.capacity > kMaxRowsPerWorld)
            fail("archetype '" + a.name + "' capacity " + std::to_string(a.capacity) +
                 " is outside [1, " + std::to_string(kMaxRowsPerWorld) + "]");
    }
    std::vector<std::string> names;
    for (const ExportSpec& e : exports_) {
        if (std::find(names.begin(), names.end(), e.name) != names.end())
            fail("tensor '" + e.name + "' exported twice");
        names.push_back(e.name);
    }
    for (const auto& entry : ranges_) {
        const std::string& name = entry.first; // a plain name: clang before 16 cannot capture a binding
        auto it = std::find_if(exports_.begin(), exports_.end(),
                               [&](const ExportSpec& e) { return e.name == name && e.input; });
        if (it == exports_.end()) fail("input_range names '" + name + "', which is not an input tensor");
    }
}

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
    if (!f) throw Error("unknown env '" + name + "'; expected one of: " + known);
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
