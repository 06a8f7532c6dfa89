// kestrel doctor: prints the environment checks.
#include <torch/torch.h>

#include <iostream>

#include "commands.h"
#include "profile/doctor.h"

namespace kestrel::cli {

void register_doctor(CLI::App& app) {
  static std::string data;
  auto* cmd = add_command(app, "doctor", "Check the machine: cores, memory, disk, BLAS, threads, GPUs, drivers", [] {
    torch::ones({8, 8}).mm(torch::ones({8, 8}));  // loads BLAS so the check sees which one
    TorchFacts t;
    t.version = std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." + std::to_string(TORCH_VERSION_PATCH);
    t.intra_op_threads = torch::get_num_threads();
    t.cuda_available = torch::cuda::is_available();
    t.cuda_devices = t.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
    std::cout << "kestrel doctor\n" << format_doctor(run_doctor(t, data));
    return 0;
  });
  cmd->add_option("--data", data, "folder (or data.yaml) whose disk and file system to check");
}

}  // namespace kestrel::cli
