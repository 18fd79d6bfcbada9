# The modules that must stay below others in TABLE (src/modules.txt), so that the table cannot
# let them include those: the data below what shows them. Run as
#   cmake -DTABLE=<modules.txt> -P below.cmake
cmake_minimum_required(VERSION 3.25)
# Pairs "low:high": low is listed before (below) high.
set(pairs
    engine:doctor engine:export  # the sampling engine knows neither findings nor metrics
    history:export               # the history's series are its own, export writes them
    reap:output                  # the reaper signals; output shows its plans and results
)
file(STRINGS "${TABLE}" lines)
set(modules "")
foreach(line IN LISTS lines)
  if(line MATCHES "^([A-Za-z0-9_]+):")
    list(APPEND modules "${CMAKE_MATCH_1}")
  endif()
endforeach()
set(bad "")
foreach(pair IN LISTS pairs)
  string(REPLACE ":" ";" pair "${pair}")
  list(GET pair 0 low)
  list(GET pair 1 high)
  list(FIND modules "${low}" at_low)
  list(FIND modules "${high}" at_high)
  if(at_low LESS 0 OR at_high LESS 0 OR NOT at_low LESS at_high)
    string(APPEND bad "  ${low} must be listed below ${high}\n")
  endif()
endforeach()
if(bad)
  message(FATAL_ERROR "layering order:\n${bad}")
endif()
message(STATUS "layering order: the data stay below what shows them")
