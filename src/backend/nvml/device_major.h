#pragma once
// The character-device major of /dev/nvidia<minor>: the NVIDIA kernel module registers its
// GPUs' nodes under this fixed major (Documentation/admin-guide/devices.txt, "195 char").

namespace gpureap::backend::nvml {

inline constexpr unsigned kNvidiaDeviceMajor = 195;

}  // namespace gpureap::backend::nvml
