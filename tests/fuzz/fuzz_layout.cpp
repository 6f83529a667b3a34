// Fuzzes the Overcooked layout parsers (.layout dict literals and bare grids)
// and, for a layout that parses, the registration table built from it.

#include <cstdint>
#include <string>

#include "engine/error.hpp"
#include "envs/overcooked/layout.hpp"
#include "envs/registry.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        overcooked::parse_layout_file(text, "fuzz.layout");
    } catch (const orrery::Error&) {}
    try {
        orrery::register_builtin_envs();
        orrery::make_env_spec("overcooked", {{"layout_grid", text}});
    } catch (const orrery::Error&) {}
    return 0;
}
