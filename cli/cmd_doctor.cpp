// kestrel doctor: prints the environment checks.
#include <torch/torch.h>

#include <iostream>

#include "commands.h"
#include "device/device.h"
#include "distributed/process_group.h"
#include "profile/doctor.h"
#include "profile/doctor_dist.h"

namespace kestrel::cli {

void register_doctor(CLI::App& app) {
  static std::string data;
  static DistDoctorInput dist;
  auto* cmd = add_command(app, "doctor", "Check the machine: cores, memory, disk, BLAS, threads, GPUs, drivers", [] {
    torch::ones({8, 8}).mm(torch::ones({8, 8}));  // loads BLAS so the check sees which one
    TorchFacts t;
    const BuildVersions built = build_versions();
    t.version = built.libtorch, t.cuda = built.cuda, t.cudnn = built.cudnn;
    t.intra_op_threads = torch::get_num_threads();
    t.cuda_available = torch::cuda::is_available();
    t.cuda_devices = t.cuda_available ? static_cast<int>(torch::cuda::device_count()) : 0;
    std::vector<DoctorLine> lines = run_doctor(t, data);
    dist.gloo_version = gloo_version(), dist.cuda = t.cuda_available, dist.data_path = data;
    for (DoctorLine& l : data_parallel_lines(dist)) lines.push_back(std::move(l));
    std::cout << "kestrel doctor\n" << format_doctor(lines);
    return 0;
  });
  cmd->add_option("--data", data, "folder (or data.yaml) whose disk and file system to check");
  cmd->add_option("--nproc-per-node", dist.processes, "data parallel: processes that would read --data");
  cmd->add_option("--master-addr", dist.master_addr, "data parallel: node 0's address");
  cmd->add_option("--master-port", dist.master_port, "data parallel: the rendezvous port to check");
}

}  // namespace kestrel::cli
