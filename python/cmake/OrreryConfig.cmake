# find_package(Orrery): the env plugin SDK of an installed orrery-rl. Point
# CMake here with -DOrrery_DIR=$(python -m orrery --cmake-dir).
#
# Gives the target Orrery::sdk (the headers an env includes, the out-of-line
# parts of a registration table, C++20 and the engine's float flags) and
# orrery_add_plugin(). See docs/writing-an-env.md, "An env outside the tree".

include("${CMAKE_CURRENT_LIST_DIR}/OrreryTargets.cmake")

include("${CMAKE_CURRENT_LIST_DIR}/OrreryPlugin.cmake")
