#pragma once
// Registers every env shipped with Orrery. Tools and the Python module call
// this once before make_env_spec().

namespace orrery {
void register_builtin_envs();
} // namespace orrery
