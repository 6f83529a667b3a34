// The list of shipped envs: one line each.

#include "envs/registry.hpp"

#include "engine/env.hpp"

namespace tag {
orrery::EnvSpec make_spec(const orrery::EnvOptions& options);
}

namespace overcooked {
orrery::EnvSpec make_spec(const orrery::EnvOptions& options);
}

namespace physics_scenes {
orrery::EnvSpec make_spec(const orrery::EnvOptions& options);
}

namespace hide_and_seek {
orrery::EnvSpec make_spec(const orrery::EnvOptions& options);
}

namespace orrery {

void register_builtin_envs() {
    register_env("tag", tag::make_spec, "tutorial: pursuers chase evaders that eat pellets (continuous 2-D)");
    register_env("overcooked", overcooked::make_spec,
                 "Overcooked (overcooked_ai rules): 2 chefs cook onion soup; lossless 26-channel observations");
    register_env("physics_scenes", physics_scenes::make_spec,
                 "physics module scenes: sphere drop, box slide/rest, stack, bounce, mixed shapes (MuJoCo validation)");
    register_env("hide_and_seek", hide_and_seek::make_spec,
                 "hide-and-seek (OpenAI's rules): 1-3 hiders vs 1-3 seekers, random rooms, boxes and ramps to grab "
                 "and lock, physics");
}

} // namespace orrery
