#pragma once
// The version of this build, one string everywhere (`gpureap --version`, the alert sinks'
// User-Agent, the .deb): the project version of CMakeLists.txt, with what `git describe` says
// when built from a checkout ("0.1.0+g1a2b3c4"). Defined in a file cmake/version.cmake
// generates at every build, so a new commit relinks rather than recompiles.
#include <string_view>

namespace gpureap::base {

std::string_view version();

}  // namespace gpureap::base
