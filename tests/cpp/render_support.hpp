#pragma once
// Shared by the render tests: they need a Vulkan driver (lavapipe in CI) and
// skip, saying why, only where none is installed.

#include <cstdlib>
#include <filesystem>
#include <system_error>

/// True when the Vulkan loader can find a driver (ICD) manifest.
inline bool vulkan_icd_present() {
    for (const char* var : {"VK_ICD_FILENAMES", "VK_DRIVER_FILES"})
        if (const char* v = std::getenv(var); v && *v) return true;
    for (const char* dir : {"/usr/share/vulkan/icd.d", "/etc/vulkan/icd.d", "/usr/local/share/vulkan/icd.d"}) {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(dir, ec))
            if (e.path().extension() == ".json") return true;
    }
    return false;
}
