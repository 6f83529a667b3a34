# orrery_add_plugin(), for the installed package (OrreryConfig.cmake) and the
# in-tree plugin test (tests/CMakeLists.txt); it links the target Orrery::sdk.

# orrery_add_plugin(NAME <name> SOURCES <file>... HEADERS <file>...)
#   Builds <name>.so, an env plugin that orrery.load_plugin() (or the
#   `orrery.envs` entry point of a Python package) loads. SOURCES hold the
#   registration tables and one ORRERY_PLUGIN entry; HEADERS are the headers the
#   GPU backend compiles at run time (the env's components and systems), copied
#   beside the library under their paths relative to this folder: the plugin's
#   folder is the header root of its envs. The plugin links nothing of the
#   engine but the SDK (--no-undefined catches a call into the engine) and
#   exports only its entry points.
function(orrery_add_plugin)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "NAME" "SOURCES;HEADERS")
  if(arg_UNPARSED_ARGUMENTS OR NOT arg_NAME OR NOT arg_SOURCES OR NOT arg_HEADERS)
    message(FATAL_ERROR "orrery_add_plugin(NAME <name> SOURCES <file>... HEADERS <file>...) in "
                        "${CMAKE_CURRENT_SOURCE_DIR}: NAME, SOURCES and HEADERS are required "
                        "(unexpected: '${arg_UNPARSED_ARGUMENTS}')")
  endif()
  add_library(${arg_NAME} MODULE ${arg_SOURCES})
  target_link_libraries(${arg_NAME} PRIVATE Orrery::sdk)
  set_target_properties(${arg_NAME} PROPERTIES PREFIX "" CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_link_options(${arg_NAME} PRIVATE "LINKER:--exclude-libs,ALL")
  # Under a sanitizer its runtime's symbols come from the process, so they stay undefined here.
  get_directory_property(options COMPILE_OPTIONS)
  if(NOT "${options};${CMAKE_CXX_FLAGS}" MATCHES "-fsanitize")
    target_link_options(${arg_NAME} PRIVATE "LINKER:--no-undefined")
  endif()
  foreach(header ${arg_HEADERS})
    get_filename_component(abs "${header}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    file(RELATIVE_PATH rel "${CMAKE_CURRENT_SOURCE_DIR}" "${abs}")
    if(rel MATCHES "^\\.\\.")
      message(FATAL_ERROR "orrery_add_plugin(${arg_NAME}): header ${header} is outside ${CMAKE_CURRENT_SOURCE_DIR}")
    endif()
    get_filename_component(rel_dir "${rel}" DIRECTORY)
    add_custom_command(TARGET ${arg_NAME} POST_BUILD
                       COMMAND ${CMAKE_COMMAND} -E make_directory "$<TARGET_FILE_DIR:${arg_NAME}>/${rel_dir}"
                       COMMAND ${CMAKE_COMMAND} -E copy_if_different "${abs}" "$<TARGET_FILE_DIR:${arg_NAME}>/${rel}"
                       VERBATIM)
  endforeach()
endfunction()
