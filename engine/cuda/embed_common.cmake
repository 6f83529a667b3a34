# Shared by embed_headers.cmake and embed_device.cmake: file texts become C++
# raw string literals, and the generated file is rewritten only on change.

# Fails the build when `text` (from `name`) holds the raw-string delimiter.
function(orrery_check_delimiter text name)
  string(FIND "${text}" ")orrery_embed\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name} contains the raw-string delimiter )orrery_embed\"")
  endif()
endfunction()

# Writes `body` to `out` unless it holds it already, so an unrelated
# reconfigure does not rebuild the engine.
function(orrery_write_if_changed out body)
  if(EXISTS "${out}")
    file(READ "${out}" old)
    if(old STREQUAL body)
      return()
    endif()
  endif()
  file(WRITE "${out}" "${body}")
endfunction()
