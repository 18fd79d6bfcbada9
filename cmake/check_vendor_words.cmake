# The vendor-word check: NVIDIA's words are written only in NVIDIA's folders, so the core and
# its consumers read what a backend's registry entry and its kernel-log parser describe. Every
# line of a file under SRC (code and comments alike) is checked, except in the vendor folders.
#   cmake -DSRC=<src dir> -P check_vendor_words.cmake
# The words, case as written: Xid, MPS, MIG and NVML, and the way an identifier spells the last
# three (Mps, Mig, Nvml, as in GpuProcessKind::Mps). Lower-case spellings are names of documents
# that must stay stable (JSON's "mig_mode", the finding code "gpu-xid", the journal's "xid") and
# are left alone. It prints every line that breaks the rule and fails (exit status 1).
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED SRC)
  message(FATAL_ERROR "usage: cmake -DSRC=<src dir> -P check_vendor_words.cmake")
endif()
get_filename_component(SRC "${SRC}" ABSOLUTE)

# The folders that may name NVIDIA: its backend and its kernel-log parser.
set(vendor_folders "backend/nvml/" "kernel/nvidia/")
set(words "Xid|MPS|MIG|NVML|Mps|Mig|Nvml")

file(GLOB_RECURSE sources RELATIVE "${SRC}" "${SRC}/*.h" "${SRC}/*.cpp")
list(SORT sources)
set(problems "")
set(count 0)
foreach(source IN LISTS sources)
  set(vendor FALSE)
  foreach(folder IN LISTS vendor_folders)
    string(FIND "${source}" "${folder}" at)
    if(at EQUAL 0)
      set(vendor TRUE)
    endif()
  endforeach()
  if(vendor)
    continue()
  endif()
  file(STRINGS "${SRC}/${source}" lines REGEX "(${words})")
  foreach(line IN LISTS lines)
    # A line with a semicolon comes back in pieces (a CMake list): each piece with a word counts.
    if(line MATCHES "(${words})")
      string(STRIP "${line}" line)
      string(APPEND problems "  src/${source}: ${line}\n")
      math(EXPR count "${count} + 1")
    endif()
  endforeach()
endforeach()

if(NOT problems STREQUAL "")
  message("vendor words: ${count} lines outside src/backend/nvml and src/kernel/nvidia name "
          "NVIDIA's ${words}; say it in the vendor's terms (its registry entry, its parser's "
          "label) or move it into the vendor's folder:\n${problems}")
  message(FATAL_ERROR "vendor words: failed")
endif()
list(LENGTH sources file_count)
message(STATUS "vendor words: ${file_count} files, and none outside the vendor folders names NVIDIA's words")
