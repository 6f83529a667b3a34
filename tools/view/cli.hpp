#pragma once
// Command-line plumbing shared by orrery-view and orrery-record: the common
// options (ENV, --layout, --opt, --device, --worlds, --seed), building the
// simulator, and writing policy actions into the input tensors.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/simulator.hpp"

namespace orrery::render {

/// Options both front ends accept.
struct CommonArgs {
    std::string env;
    EnvOptions options;         ///< --layout L is options["layout"]; --opt key=value adds more
    std::string device = "cpu"; ///< simulator device: cpu, cuda, cuda:N, auto
    std::string vk_device;      ///< --vk-device: Vulkan device index or name substring
    uint32_t worlds = 1;
    uint64_t seed = 0;
    std::string policy = "random"; ///< random or noop: how agents nobody controls act
};

/// Consumes the common option at argv[i] (and its value); returns false if it is not one.
/// Throws orrery::Error naming the option when its value is missing or malformed.
bool parse_common(CommonArgs& a, int argc, char** argv, int& i);

/// `value` of option `opt` as an unsigned 32-bit integer; throws orrery::Error naming the option.
uint32_t parse_u32(const std::string& opt, const std::string& value);
/// `value` of option `opt` as WxH; throws orrery::Error naming the option.
std::pair<uint32_t, uint32_t> parse_size(const std::string& opt, const std::string& value);

/// The Vulkan device to ask for: ORRERY_VK_DEVICE when set (it overrides
/// --vk-device), else --vk-device ("" lets the renderer choose).
std::string vulkan_device(const CommonArgs& a);

/// Builds and resets the simulator the arguments describe, with the engine
/// settings of the ORRERY_* environment variables (options_from_environment).
std::unique_ptr<Simulator> make_simulator(const CommonArgs& a);

/// Writes the policy's actions for every world into each ranged input tensor
/// ("random": uniform in the range, "noop": the range's low end).
class Policy {
  public:
    Policy(std::string kind, uint64_t seed) : kind_(std::move(kind)), state_(seed * 2654435761u + 1) {}
    void act(Simulator& sim);

  private:
    std::string kind_;
    uint64_t state_;
};

/// Recorded actions for one world, or for several worlds side by side,
/// replayed step by step: a text file with one line per step holding a world's
/// values of every ranged input tensor, in export order (for Overcooked: the
/// two chefs' actions), or those of `worlds` consecutive worlds one after
/// another. Because a world's trajectory depends only on its seed and actions,
/// replaying them from the same seed reproduces an episode played elsewhere
/// (for example by a trained policy).
class ActionReplay {
  public:
    /// Reads `path`, whose lines hold one world's values or (every line alike)
    /// `worlds` worlds'; throws orrery::Error naming the line of a malformed or
    /// out-of-range value.
    ActionReplay(const std::string& path, const Simulator& sim, uint32_t worlds = 1);
    uint32_t steps() const { return uint32_t(lines_.size()); }
    /// How many worlds each line holds.
    uint32_t worlds() const { return worlds_; }
    /// Writes step k's values into worlds `world` .. `world` + worlds() - 1
    /// (other worlds are left as they are).
    void act(Simulator& sim, uint32_t world, uint32_t k);

  private:
    std::vector<std::vector<int64_t>> lines_;
    uint32_t worlds_ = 1;
};

/// A 3-D camera named on the command line: `orbit`, `top`, `eye:ROW` (row ROW
/// of the first archetype the env draws as bodies) or `eye:ARCHETYPE:ROW`.
struct CameraChoice {
    std::string mode = "orbit"; ///< orbit, top or eye
    std::string archetype;      ///< eye: archetype name; empty: the first body draw's
    uint32_t row = 0;
};
/// Parses option `opt`'s value; throws orrery::Error naming the option and the forms it takes.
CameraChoice parse_camera(const std::string& opt, const std::string& value);
/// The archetype id an eye camera looks through; throws orrery::Error when the
/// env has no such archetype or draws no bodies, or the row is past its capacity.
uint32_t eye_archetype(const CameraChoice& c, const EnvSpec& spec);
/// "a,b,c" as {"a", "b", "c"}.
std::vector<std::string> split_list(const std::string& csv);

/// Writes one agent's action (element 0 of row `agent`) in world `world` of input `tensor`.
void set_action(Simulator& sim, const std::string& tensor, uint32_t world, uint32_t agent, int32_t value);
/// Writes one agent's whole action row (DrawSpec::key_row); throws orrery::Error
/// when the row's length is not the tensor's values per agent or a value is
/// outside the input's range.
void set_action_row(Simulator& sim, const std::string& tensor, uint32_t world, uint32_t agent,
                    const std::vector<int32_t>& row);

} // namespace orrery::render
