// Registration tables: validation, node ordering and the env registry.

#include "engine/env.hpp"

#include <algorithm>
#include <barrier>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

namespace orrery {

void assert_fail(const char* cond, const char* msg, const char* file, int line) {
    std::fprintf(stderr, "%s:%d: assertion failed: %s (%s)\n", file, line, cond, msg);
    std::abort();
}

size_t dtype_size(DType t) {
    switch (t) {
    case DType::kU8:
    case DType::kI8: return 1;
    case DType::kU16:
    case DType::kI16: return 2;
    case DType::kI32:
    case DType::kU32:
    case DType::kF32: return 4;
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

namespace detail {
void run_lane_team(uint32_t lanes, const std::function<void(const Lanes&)>& body) {
    std::barrier<> team(lanes);
    auto wait = [](void* t) { static_cast<std::barrier<>*>(t)->arrive_and_wait(); };
    std::vector<std::thread> threads;
    for (uint32_t lane = 1; lane < lanes; ++lane)
        threads.emplace_back([&, lane] { body(Lanes{lane, lanes, 0, wait, &team}); });
    body(Lanes{0, lanes, 0, wait, &team});
    for (std::thread& t : threads) t.join();
}

std::string short_type_name(const char* signature) {
    std::string sig = signature;
    size_t at = sig.rfind("T = ");
    size_t end = sig.find_first_of(";]", at == std::string::npos ? 0 : at);
    if (at == std::string::npos || end == std::string::npos) return sig;
    std::string q = sig.substr(at + 4, end - at - 4);
    size_t colon = q.rfind("::");
    return colon == std::string::npos ? q : q.substr(colon + 2);
}
} // namespace detail

NodeId EnvSpec::add(Phase phase, SystemRef s, Deps deps) {
    NodeSpec n{s, phase, {}};
    if (deps.is_previous()) {
        for (uint32_t i = 0; i < nodes_.size(); ++i)
            if (nodes_[i].phase == phase) n.deps.push_back(i);
    }
    for (NodeId d : deps.ids()) {
        if (d.index >= nodes_.size() || nodes_[d.index].phase != phase)
            throw Error("env '" + name_ + "': node '" + s.name +
                        "' depends on a node that is not an earlier node of the same phase");
        n.deps.push_back(d.index);
    }
    nodes_.push_back(std::move(n));
    return NodeId{uint32_t(nodes_.size() - 1)};
}

void EnvSpec::bound_registers(NodeId node, uint32_t registers) {
    if (node.index >= nodes_.size()) throw Error("env '" + name_ + "': bound_registers() names no node of this env");
    if (registers < 16 || registers > 255)
        throw Error("env '" + name_ + "': bound_registers() for node '" + nodes_[node.index].system.name + "' is " +
                    std::to_string(registers) + "; expected 16 to 255 registers a thread");
    nodes_[node.index].registers = registers;
}

void EnvSpec::order_teams(NodeId node) {
    if (node.index >= nodes_.size()) throw Error("env '" + name_ + "': order_teams() names no node of this env");
    NodeSpec& n = nodes_[node.index];
    if (n.system.kind != NodeKind::kPerWorldTeam)
        throw Error("env '" + name_ + "': order_teams() names node '" + n.system.name +
                    "'; only an ORRERY_PER_WORLD_TEAM node's teams are ordered");
    for (const NodeSpec& other : nodes_)
        if (other.order_teams && &other != &n)
            throw Error("env '" + name_ + "': order_teams() names node '" + n.system.name + "' after node '" +
                        other.system.name + "'; at most one node of an env orders its teams (one cost hint a world)");
    n.order_teams = true;
}

void EnvSpec::device_define(const std::string& name, const std::string& value) {
    const bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                            std::all_of(name.begin(), name.end(),
                                        [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
    if (!identifier)
        throw Error("env '" + name_ + "': device_define name '" + name +
                    "' is invalid; expected a C identifier (letters, digits and '_', not starting with a digit)");
    if (value.find_first_of("\r\n\\") != std::string::npos)
        throw Error("env '" + name_ + "': device_define " + name +
                    " has a value spanning lines or holding a backslash; expected one line, e.g. \"7u\"");
    for (auto& d : device_defines_)
        if (d.first == name) {
            d.second = value;
            return;
        }
    device_defines_.push_back({name, value});
}

NodeId EnvSpec::add_destroy_barrier(Phase phase) {
    return add(phase, SystemRef{"orrery::apply_destroys", NodeKind::kApplyDestroys, &detail::cpu_destroy_node});
}

bool EnvSpec::depends_on(uint32_t later, uint32_t earlier) const {
    if (later >= nodes_.size() || earlier >= later) return false;
    // Dependencies point to earlier nodes only, so one backward sweep decides it.
    std::vector<uint8_t> reach(later + 1, 0);
    reach[later] = 1;
    for (uint32_t i = later + 1; i-- > earlier;) {
        if (!reach[i]) continue;
        if (i == earlier) return true;
        for (uint32_t d : nodes_[i].deps) reach[d] = 1;
    }
    return false;
}

std::vector<const NodeSpec*> EnvSpec::ordered(Phase phase) const {
    // A stable topological order (Kahn's algorithm, lowest index first): since
    // add() lets a node wait only for earlier nodes, it is insertion order.
    std::vector<uint32_t> ids;
    for (uint32_t i = 0; i < nodes_.size(); ++i)
        if (nodes_[i].phase == phase) ids.push_back(i);
    std::vector<uint32_t> waiting(nodes_.size(), 0);
    for (uint32_t i : ids) waiting[i] = uint32_t(nodes_[i].deps.size());
    std::vector<uint8_t> done(nodes_.size(), 0);
    std::vector<const NodeSpec*> out;
    while (out.size() < ids.size()) {
        bool progressed = false;
        for (uint32_t i : ids) {
            if (done[i] || waiting[i]) continue;
            done[i] = 1;
            out.push_back(&nodes_[i]);
            for (uint32_t j : ids)
                for (uint32_t d : nodes_[j].deps) waiting[j] -= d == i ? 1 : 0;
            progressed = true;
            break;
        }
        if (!progressed) throw Error("env '" + name_ + "': the task graph has a cycle");
    }
    return out;
}

std::vector<uint8_t> EnvSpec::asset_blob() const {
    bool any = false;
    for (const ComponentSpec& c : components_) any = any || c.kind == ComponentKind::kAsset;
    if (!any) return {};
    auto align16 = [](size_t n) { return (n + 15) / 16 * 16; };
    std::vector<AssetEntry> table(components_.size());
    size_t at = align16(table.size() * sizeof(AssetEntry));
    for (const auto& [id, bytes] : assets_) {
        table[id] = {uint32_t(at), uint32_t(bytes.size() / components_[id].element_bytes)};
        at = align16(at + bytes.size());
    }
    if (at > (size_t(1) << 31)) throw Error("env '" + name_ + "': assets take more than 2 GiB");
    std::vector<uint8_t> blob(at, 0);
    std::memcpy(blob.data(), table.data(), table.size() * sizeof(AssetEntry));
    for (const auto& [id, bytes] : assets_)
        if (!bytes.empty()) std::memcpy(blob.data() + table[id].offset, bytes.data(), bytes.size());
    return blob;
}

void EnvSpec::validate() const {
    auto fail = [&](const std::string& m) { throw Error("env '" + name_ + "': " + m); };
    if (components_.empty()) fail("no components registered");
    if (components_.size() > kMaxComponents)
        fail("has " + std::to_string(components_.size()) + " components; at most " + std::to_string(kMaxComponents));
    for (const ComponentSpec& c : components_) {
        if (c.kind == ComponentKind::kAsset) continue; // rowless: its data may be empty
        if (c.row_bytes == 0 && c.kind == ComponentKind::kBuffer)
            fail("buffer '" + c.name + "' has no capacity (call spec.capacity<" + c.name + ">(n))");
        if (c.row_bytes == 0) fail("component '" + c.name + "' has no size (array dims not set)");
    }
    if (archetypes_.empty()) fail("no archetypes registered");
    if (archetypes_.size() > kMaxArchetypes)
        fail("has " + std::to_string(archetypes_.size()) + " archetypes; at most " + std::to_string(kMaxArchetypes));
    for (size_t i = 0; i < archetypes_.size(); ++i) {
        const ArchetypeSpec& a = archetypes_[i];
        if (a.name.empty()) fail("archetype " + std::to_string(i) + " is declared but not registered");
        for (uint32_t c : a.components)
            if (c < components_.size() && components_[c].kind == ComponentKind::kAsset)
                fail("archetype '" + a.name + "' holds asset '" + components_[c].name +
                     "'; assets are shared by every world and live in no archetype");
        if (a.capacity == 0 || a.capacity > kMaxRowsPerWorld)
            fail("archetype '" + a.name + "' capacity " + std::to_string(a.capacity) + " is outside [1, " +
                 std::to_string(kMaxRowsPerWorld) + "]");
    }
    for (const NodeSpec& n : nodes_) {
        for (uint32_t c : n.scratch_shared) {
            if (n.system.kind != NodeKind::kPerWorldTeam)
                fail("node '" + std::string(n.system.name) +
                     "' keeps step scratch in shared memory; only ORRERY_PER_WORLD_TEAM nodes can (a team a warp)");
            if (std::find(n.scratch.begin(), n.scratch.end(), c) == n.scratch.end())
                fail("node '" + std::string(n.system.name) + "' keeps component '" +
                     (c < components_.size() ? components_[c].name : std::to_string(c)) +
                     "' in shared memory but does not declare it as its scratch; expected scratch<...>() to name it");
        }
        if (n.scratch.empty()) continue;
        if (n.system.kind != NodeKind::kPerWorld && n.system.kind != NodeKind::kPerWorldTeam)
            fail("node '" + std::string(n.system.name) +
                 "' declares step scratch; only ORRERY_PER_WORLD and ORRERY_PER_WORLD_TEAM nodes have it");
        for (uint32_t c : n.scratch) {
            if (c >= components_.size())
                fail("node '" + std::string(n.system.name) + "' declares an unregistered component as scratch");
            for (const ArchetypeSpec& a : archetypes_)
                if (std::find(a.components.begin(), a.components.end(), c) != a.components.end())
                    fail("component '" + components_[c].name + "' is step scratch of node '" + n.system.name +
                         "' and held by archetype '" + a.name + "'; scratch belongs to no archetype");
        }
    }
    if (facts.obs_low.size() != facts.obs_high.size() ||
        (!facts.obs_low.empty() && !facts.obs_names.empty() && facts.obs_low.size() != facts.obs_names.size()))
        fail("facts: obs_low has " + std::to_string(facts.obs_low.size()) + " entries, obs_high " +
             std::to_string(facts.obs_high.size()) + " and obs_names " + std::to_string(facts.obs_names.size()) +
             "; expected one bound of each per named entry");
    for (size_t i = 0; i < facts.obs_low.size(); ++i)
        if (!(facts.obs_low[i] <= facts.obs_high[i]))
            fail("facts: obs entry " + std::to_string(i) + " has low " + std::to_string(facts.obs_low[i]) +
                 " above high " + std::to_string(facts.obs_high[i]));
    uint32_t outputs = 0;
    for (const ExportSpec& e : exports_) outputs += e.input ? 0 : 1;
    if (outputs > kMaxFinals)
        fail("exports " + std::to_string(outputs) + " outputs; at most " + std::to_string(kMaxFinals));
    for (const auto& [id, bytes] : assets_)
        if (id >= components_.size() || components_[id].kind != ComponentKind::kAsset)
            fail("asset data set for component " + std::to_string(id) + ", which is not a registered AssetOf");
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

} // namespace orrery
