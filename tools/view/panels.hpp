#pragma once
// orrery-view's ImGui panels: simulation controls, the selected world's
// entities and components, rewards, and the selected agent's observation
// (channel images for [C, H, W] u8 observations). Data comes from one copy of
// the selected world per frame: the latest landed world view while running, so
// a frame never waits for queued steps, or an exact read_world when paused.

#include <string>
#include <vector>

#include "engine/simulator.hpp"
#include "render/renderer.hpp"

namespace orrery::render {

/// Pixels of the panel column at the window's right edge.
inline constexpr uint32_t kPanelWidth = 440;

/// What the user chose in the viewer.
struct ViewState {
    uint32_t world = 0, agent = 0;
    bool paused = false;
    bool control = true; ///< keys drive the selected agent
    float speed = 8.0f;  ///< steps per second while running
    std::string policy = "random";
    Key pending = Key::kNoop;  ///< last key pressed since the previous step
    uint32_t pending_held = 0; ///< keys pressed since the previous step (bit k: Key k), for key_parts
    uint64_t steps_taken = 0;
    std::vector<float> returns; ///< this episode's summed rewards per agent, over the steps seen
    uint32_t episode = ~0u;
    uint32_t returns_world = ~0u; ///< the world `returns` belong to
    uint64_t returns_step = 0;    ///< Simulator::steps_taken() of the last reward added
    uint64_t unseen_steps = 0;    ///< steps of this episode whose rewards no view showed
    uint64_t shown_step = 0;      ///< Simulator::steps_taken() of the last frame's state
    /// Names of the observation's first axis (channels of [C, H, W], or a vector's
    /// entries) and of the action values, shown instead of indices where given
    /// (orrery-view --obs-names / --action-names; the `orrery view` command passes
    /// the names the env declares to Python).
    std::vector<std::string> obs_names, action_names;
    /// 3-D: the overlays shown and the body picked with the mouse (its
    /// components fill the inspector; it is drawn highlighted).
    SceneOptions scene;
    /// 3-D entity's-eye camera: the body looked through (-1: none chosen yet).
    int32_t eye_archetype = -1;
    uint32_t eye_row = 0;
    bool step_once = false; ///< the panel's step button was pressed (one step, then paused)
};

/// One world's state as the panels show it.
struct WorldReport {
    uint32_t episode = 0, step = 0, error = 0;
    bool terminated = false, truncated = false;
    struct EntityLines {
        std::string name; ///< "Chef 1"
        uint32_t archetype = 0, row = 0;
        std::vector<std::string> lines; ///< "Player: 12 2 1 0"
    };
    std::vector<EntityLines> entities;
    std::vector<std::string> status; ///< the draw table's status lines that hold (DrawSpec::statuses)
    uint32_t num_agents = 0;
    std::vector<float> rewards; ///< per agent, element 0 of the reward tensor's row
    std::vector<uint32_t> obs_dims;
    DType obs_dtype = DType::kU8;
    std::vector<uint8_t> obs; ///< the selected agent's observation row
    uint64_t sim_step = 0;    ///< Simulator::steps_taken() the state reflects
    uint64_t lag = 0;         ///< steps taken since then
    bool exact = true;        ///< a synchronous read_world, not a lagging view
};

/// Copies world state.world once and builds both the report and the scene.
/// Waits for every queued step (Simulator::read_world): exact, for paused play.
WorldReport read_report(Simulator& sim, const ViewState& state, Scene* scene);
/// Like read_report from the latest landed view of state.world, never waiting
/// for queued steps: requests a view (refused while one is in flight), then
/// polls. False, with `out` and `scene` untouched, while none of that world has landed.
bool read_report_lagging(Simulator& sim, const ViewState& state, Scene* scene, WorldReport& out);
/// Adds a report's rewards to the episode returns once per step it reflects;
/// restarts them on a new episode or world, and counts steps no report showed.
void accumulate_returns(ViewState& state, const WorldReport& report);

/// Draws the panels; may change the state and the camera.
void draw_panels(Simulator& sim, ViewState& state, const WorldReport& report, Camera& cam,
                 const std::string& device_name);

} // namespace orrery::render
