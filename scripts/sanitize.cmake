# Included by scripts/sanitize.sh through CMAKE_PROJECT_INCLUDE: the test harness (everything defined
# in tests/: the GoogleTest executables and their support library) is compiled at -O0 without
# sanitizer instrumentation, while the code under test (src/, apps/, fuzz/) keeps -O1 with ASan +
# UBSan. Why: on the 2-core CI machine an ASan+UBSan -O1 compile costs ~1.6x a Release -O3 one
# (measured per file: jinja/filters.cpp 17.1 s vs 11.2 s, bad_input/model_cases_test.cpp 14.6 s vs
# 8.6 s CPU), and the GoogleTest-heavy test files are a large share of the build. The harness's own
# code is not what is being hardened; the engine's heap is still checked everywhere because the ASan
# runtime (linked into every executable) intercepts malloc, so an engine over-read of a buffer the
# test allocated is still reported.
function(glia_uninstrument_test_harness)
  get_directory_property(targets DIRECTORY ${CMAKE_SOURCE_DIR}/tests BUILDSYSTEM_TARGETS)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY)$")
      continue()
    endif()
    get_target_property(opts ${t} COMPILE_OPTIONS)
    if(NOT opts)
      set(opts "")
    endif()
    list(FILTER opts EXCLUDE REGEX "^-f(no-)?sanitize")
    list(APPEND opts -O0)  # after CMAKE_CXX_FLAGS_<CONFIG>'s -O1: the last -O wins
    set_target_properties(${t} PROPERTIES COMPILE_OPTIONS "${opts}")
  endforeach()
endfunction()
if(EXISTS ${CMAKE_SOURCE_DIR}/tests)
  cmake_language(DEFER DIRECTORY ${CMAKE_SOURCE_DIR} CALL glia_uninstrument_test_harness)
endif()
