// kestrel doctor: the environment a run depends on, each fact with a warning and its fix where it
// matters: cores, memory, swap, disk, the data's file system, LibTorch threads, BLAS, the OpenMP wait
// policy, CUDA driver/NCCL, visible GPUs, other processes on them, throttling.
#pragma once
#include <string>
#include <vector>

namespace kestrel {

// Facts only LibTorch knows; the front end fills them so this file stays torch-free.
struct TorchFacts {
  std::string version;
  std::string cuda, cudnn;  // what LibTorch was built with and loads ("" where it has none); NCCL: doctor_dist.h
  int intra_op_threads = 0;
  bool cuda_available = false;
  int cuda_devices = 0;
};

struct DoctorLine {
  std::string key, value, warning;  // warning empty when all is well
};

std::vector<DoctorLine> run_doctor(const TorchFacts& torch, const std::string& data_path);
std::string format_doctor(const std::vector<DoctorLine>& lines);

// Which BLAS library this process has loaded, read from /proc/self/maps ("" if none yet).
std::string loaded_blas();
// File-system type name of a path ("ext4", "nfs", ...) and whether it is a network file system.
std::string filesystem_type(const std::string& path, bool* network);

}  // namespace kestrel
