# The data flow's one direction, checked: every #include "harness/X/..." in a
# file of harness/Y/ must name a stage no later than Y (README "Architecture").
# Stages in order; a strict order, so the folders can form no include cycle.
# core, protocol (the child↔supervisor event vocabulary, built into
# harness_core) and testing (fixtures over core types) are what every stage speaks.
# Run: cmake -DROOT=<source dir> -P harness/stage_order.cmake
set(stages core protocol testing scenario trace probes child supervisor analysis report run cli)

file(GLOB_RECURSE files RELATIVE "${ROOT}" "${ROOT}/harness/*.h" "${ROOT}/harness/*.cpp" "${ROOT}/harness/*.cu")
set(bad "")
foreach(f IN LISTS files)
  string(REGEX MATCH "^harness/([a-z_]+)/" _ "${f}")
  set(from "${CMAKE_MATCH_1}")
  list(FIND stages "${from}" from_rank)
  if(from_rank EQUAL -1)
    continue()
  endif()
  file(STRINGS "${ROOT}/${f}" lines REGEX "^#include \"harness/[a-z_]+/")
  foreach(line IN LISTS lines)
    string(REGEX MATCH "^#include \"harness/([a-z_]+)/" _ "${line}")
    list(FIND stages "${CMAKE_MATCH_1}" to_rank)
    if(to_rank GREATER from_rank OR to_rank EQUAL -1)
      string(APPEND bad "  ${f}: ${line} (${from} may not include ${CMAKE_MATCH_1})\n")
    endif()
  endforeach()
endforeach()
if(bad)
  message(FATAL_ERROR "includes against the data flow (${stages}):\n${bad}")
endif()
list(LENGTH files n)
message(STATUS "stage order holds over ${n} files")
