// Option parsing and policy actions shared by the render front ends.

#include "tools/view/cli.hpp"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include <cstring>

#include "engine/files.hpp"
#include "engine/options.hpp"
#include "engine/plugin.hpp"
#include "envs/registry.hpp"
#include "tools/cli_args.hpp"

namespace orrery::render {

namespace {
std::string value_of(int argc, char** argv, int& i) {
    if (i + 1 >= argc) throw Error(std::string("option ") + argv[i] + " needs a value");
    return argv[++i];
}
} // namespace

uint32_t parse_u32(const std::string& opt, const std::string& value) { return cli::parse_u32(opt, value); }

std::pair<uint32_t, uint32_t> parse_size(const std::string& opt, const std::string& value) {
    size_t x = value.find('x');
    if (x == std::string::npos) throw Error("option " + opt + " expects WxH, got '" + value + "'");
    return {parse_u32(opt, value.substr(0, x)), parse_u32(opt, value.substr(x + 1))};
}

bool parse_common(CommonArgs& a, int argc, char** argv, int& i) {
    std::string arg = argv[i];
    if (arg == "--layout")
        a.options["layout"] = value_of(argc, argv, i);
    else if (arg == "--device")
        a.device = value_of(argc, argv, i);
    else if (arg == "--vk-device")
        a.vk_device = value_of(argc, argv, i);
    else if (arg == "--worlds")
        a.worlds = parse_u32(arg, value_of(argc, argv, i));
    else if (arg == "--seed")
        a.seed = cli::parse_u64(arg, value_of(argc, argv, i));
    else if (arg == "--policy") {
        a.policy = value_of(argc, argv, i);
        if (a.policy != "random" && a.policy != "noop")
            throw Error("option --policy expects random or noop, got '" + a.policy + "'");
    } else if (arg == "--opt") {
        std::string kv = value_of(argc, argv, i);
        size_t eq = kv.find('=');
        if (eq == std::string::npos || eq == 0) throw Error("option --opt expects key=value, got '" + kv + "'");
        a.options[kv.substr(0, eq)] = kv.substr(eq + 1);
    } else if (a.env.empty() && !arg.empty() && arg[0] != '-') {
        a.env = arg;
    } else {
        return false;
    }
    return true;
}

CameraChoice parse_camera(const std::string& opt, const std::string& value) {
    CameraChoice c;
    if (value == "orbit" || value == "top") {
        c.mode = value;
        return c;
    }
    auto bad = [&]() {
        return Error("option " + opt + " expects orbit, top, eye:ROW or eye:ARCHETYPE:ROW, got '" + value + "'");
    };
    if (value.rfind("eye:", 0) != 0) throw bad();
    c.mode = "eye";
    std::string rest = value.substr(4);
    size_t colon = rest.rfind(':');
    if (colon != std::string::npos) c.archetype = rest.substr(0, colon), rest = rest.substr(colon + 1);
    if (rest.empty() || rest.find_first_not_of("0123456789") != std::string::npos) throw bad();
    c.row = parse_u32(opt, rest);
    return c;
}

uint32_t eye_archetype(const CameraChoice& c, const EnvSpec& spec) {
    const auto& archs = spec.archetype_specs();
    uint32_t a = 0;
    if (c.archetype.empty()) {
        if (spec.draw.bodies.empty())
            throw Error("--camera eye:" + std::to_string(c.row) + ": env '" + spec.name() +
                        "' draws no bodies; name the archetype (eye:ARCHETYPE:ROW)");
        a = spec.draw.bodies[0].archetype;
    } else {
        std::string names;
        for (a = 0; a < archs.size() && archs[a].name != c.archetype; ++a)
            names += (names.empty() ? "" : ", ") + archs[a].name;
        if (a == archs.size())
            throw Error("--camera: env '" + spec.name() + "' has no archetype '" + c.archetype + "' (it has " + names +
                        ")");
    }
    if (c.row >= archs[a].capacity)
        throw Error("--camera: row " + std::to_string(c.row) + " of " + archs[a].name +
                    " is out of range, expected < " + std::to_string(archs[a].capacity));
    return a;
}

std::vector<std::string> split_list(const std::string& csv) {
    std::vector<std::string> out(1);
    for (char c : csv) {
        if (c == ',')
            out.emplace_back();
        else
            out.back().push_back(c);
    }
    return out;
}

std::string vulkan_device(const CommonArgs& a) {
    if (const char* env = std::getenv("ORRERY_VK_DEVICE")) return env;
    return a.vk_device;
}

std::unique_ptr<Simulator> make_simulator(const CommonArgs& a) {
    register_builtin_envs();
    load_plugins_from_environment(); // envs built outside the tree (docs/writing-an-env.md)
    if (a.env.empty()) throw Error("missing ENV (one of the registered envs, e.g. tag)");
    if (a.worlds == 0) throw Error("option --worlds must be at least 1");
    SimOptions o = options_from_environment();
    o.num_worlds = a.worlds;
    o.device = a.device;
    auto sim = std::make_unique<Simulator>(make_env_spec(a.env, a.options), o);
    sim->reset(a.seed);
    return sim;
}

void Policy::act(Simulator& sim) {
    std::vector<std::vector<uint8_t>> values;
    if (kind_ == "random") {
        values = random_inputs(sim, state_);
    } else {
        for (const auto& [name, range] : sim.spec().input_ranges()) {
            const TensorView& t = sim.tensor(name);
            size_t elem = dtype_size(t.dtype), n = t.bytes() / elem;
            std::vector<uint8_t>& buffer = values.emplace_back(t.bytes());
            int64_t v = range.first;
            float f = float(v);
            for (size_t i = 0; i < n; ++i) // little-endian: low bytes first
                std::memcpy(buffer.data() + i * elem, t.dtype == DType::kF32 ? static_cast<void*>(&f) : &v, elem);
        }
    }
    size_t k = 0;
    for (const auto& [name, range] : sim.spec().input_ranges()) {
        const TensorView& t = sim.tensor(name);
        sim.backend().copy_from_host(t.data, values[k].data(), values[k].size());
        ++k;
    }
}

void set_action(Simulator& sim, const std::string& tensor, uint32_t world, uint32_t agent, int32_t value) {
    const TensorView& t = sim.tensor(tensor);
    if (t.shape.size() < 2 || agent >= uint64_t(t.shape[1]))
        throw Error("set_action: agent " + std::to_string(agent) + " out of range for tensor '" + tensor + "'");
    size_t elem = dtype_size(t.dtype);
    size_t per_row = t.bytes() / elem / size_t(t.shape[0] * t.shape[1]);
    size_t at = ((size_t(world) * size_t(t.shape[1]) + agent) * per_row) * elem;
    int64_t v = value;
    sim.backend().copy_from_host(static_cast<uint8_t*>(t.data) + at, &v, elem);
}

void set_action_row(Simulator& sim, const std::string& tensor, uint32_t world, uint32_t agent,
                    const std::vector<int32_t>& row) {
    const TensorView& t = sim.tensor(tensor);
    if (t.shape.size() < 2 || agent >= uint64_t(t.shape[1]) || world >= uint64_t(t.shape[0]))
        throw Error("set_action_row: world " + std::to_string(world) + " agent " + std::to_string(agent) +
                    " out of range for tensor '" + tensor + "'");
    size_t elem = dtype_size(t.dtype);
    size_t per_row = t.bytes() / elem / size_t(t.shape[0] * t.shape[1]);
    if (row.size() != per_row)
        throw Error("set_action_row: a row of " + std::to_string(row.size()) + " values for tensor '" + tensor +
                    "', which holds " + std::to_string(per_row) + " per agent");
    for (const auto& [name, range] : sim.spec().input_ranges())
        if (name == tensor)
            for (int32_t v : row)
                if (v < range.first || v > range.second)
                    throw Error("set_action_row: value " + std::to_string(v) + " is outside '" + tensor + "''s [" +
                                std::to_string(range.first) + ", " + std::to_string(range.second) + "]");
    std::vector<uint8_t> bytes(per_row * elem);
    for (size_t i = 0; i < per_row; ++i) {
        int64_t v = row[i];
        float f = float(row[i]);
        std::memcpy(bytes.data() + i * elem, t.dtype == DType::kF32 ? static_cast<const void*>(&f) : &v, elem);
    }
    size_t at = (size_t(world) * size_t(t.shape[1]) + agent) * per_row * elem;
    sim.backend().copy_from_host(static_cast<uint8_t*>(t.data) + at, bytes.data(), bytes.size());
}

ActionReplay::ActionReplay(const std::string& path, const Simulator& sim, uint32_t worlds) {
    // A regular file within a size limit: /dev/zero or a FIFO is refused, not read forever.
    std::istringstream in(read_regular_file(path, "the actions file", uint64_t(256) << 20));
    size_t per_world = 0;
    for (const auto& [name, range] : sim.spec().input_ranges()) {
        const TensorView& t = sim.tensor(name);
        per_world += t.bytes() / dtype_size(t.dtype) / sim.num_worlds();
    }
    const std::string expected = worlds > 1 ? std::to_string(per_world) + " (one world) or " +
                                                  std::to_string(per_world * worlds) + " (" + std::to_string(worlds) +
                                                  " worlds)"
                                            : std::to_string(per_world);
    std::string line;
    for (uint32_t number = 1; std::getline(in, line); ++number) {
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        std::istringstream words(line);
        std::vector<int64_t> values;
        int64_t v;
        while (words >> v) values.push_back(v);
        // The first line decides how many worlds a line holds; the others must agree.
        const bool first = lines_.empty();
        if (first && worlds > 1 && values.size() == per_world * worlds) worlds_ = worlds;
        if (!words.eof() || values.size() != per_world * worlds_)
            throw Error("actions file '" + path + "' line " + std::to_string(number) + ": expected " +
                        (first ? expected : std::to_string(per_world * worlds_)) + " integers, got '" + line + "'");
        size_t at = 0;
        for (uint32_t w = 0; w < worlds_; ++w)
            for (const auto& [name, range] : sim.spec().input_ranges()) {
                const TensorView& t = sim.tensor(name);
                size_t n = t.bytes() / dtype_size(t.dtype) / sim.num_worlds();
                for (size_t i = 0; i < n; ++i, ++at)
                    if (values[at] < range.first || values[at] > range.second)
                        throw Error("actions file '" + path + "' line " + std::to_string(number) + ": '" + name +
                                    "' value " + std::to_string(values[at]) + " is outside [" +
                                    std::to_string(range.first) + ", " + std::to_string(range.second) + "]");
            }
        lines_.push_back(std::move(values));
    }
    if (lines_.empty()) throw Error("actions file '" + path + "' holds no steps");
}

void ActionReplay::act(Simulator& sim, uint32_t world, uint32_t k) {
    const std::vector<int64_t>& values = lines_.at(k);
    if (world + worlds_ > sim.num_worlds())
        throw Error("the actions file holds " + std::to_string(worlds_) + " worlds a step, from world " +
                    std::to_string(world) + "; the simulator has " + std::to_string(sim.num_worlds()));
    size_t at = 0;
    for (uint32_t w = world; w < world + worlds_; ++w)
        for (const auto& [name, range] : sim.spec().input_ranges()) {
            const TensorView& t = sim.tensor(name);
            size_t elem = dtype_size(t.dtype), n = t.bytes() / elem / sim.num_worlds();
            std::vector<uint8_t> bytes(n * elem);
            for (size_t i = 0; i < n; ++i, ++at) {
                float f = float(values[at]);
                if (t.dtype == DType::kF32)
                    std::memcpy(bytes.data() + i * elem, &f, elem);
                else
                    std::memcpy(bytes.data() + i * elem, &values[at], elem); // little-endian: low bytes first
            }
            sim.backend().copy_from_host(static_cast<uint8_t*>(t.data) + bytes.size() * w, bytes.data(), bytes.size());
        }
}

} // namespace orrery::render
