#pragma once
// What gpureap ran short of when it could not read /proc or load a driver's library
// (procfs/resource_shortage.h). Each has its own remedy, and none says anything of the driver or
// of the processes: the doctor's advice follows the kind, never one limit for all.
namespace gpureap::core {

enum class Shortage {
  OwnDescriptors,  // EMFILE: gpureap's own limit of open files
  SystemFiles,     // ENFILE: the system's table of open files is full
  Memory,          // ENOMEM, ENOBUFS: the machine's memory, or gpureap's limit of it
};
const char* to_string(Shortage s);  // "own-descriptors", "system-files", "memory"

}  // namespace gpureap::core
