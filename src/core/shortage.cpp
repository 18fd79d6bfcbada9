#include "core/shortage.h"

namespace gpureap::core {

const char* to_string(Shortage s) {
  switch (s) {
    case Shortage::OwnDescriptors:
      return "own-descriptors";
    case Shortage::SystemFiles:
      return "system-files";
    case Shortage::Memory:
      return "memory";
  }
  return "";  // no enumerator: no name
}

}  // namespace gpureap::core
