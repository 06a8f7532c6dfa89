// Data-parallel journeys of the kestrel binary over Gloo on loopback: 2 processes started by
// `--nproc-per-node 2`, 2 "machines" (`--nnodes 2`, one process each), torchrun launching and
// restarting kestrel, a rank killed mid-epoch, the ranks' network cut, and the start-up errors
// (port in use, ranks that disagree on options). Each run is a few seconds: a 3-class dataset of
// 16 images at 64 px.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <dirent.h>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "cli/journey_support.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace kestrel::test {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The pid of the process that is rank `rank` of the run named `name` (its command line holds
// `--name name`, its environment RANK=rank: the launcher and torchrun have no RANK), or 0.
pid_t rank_pid(const std::string& name, int rank) {
  const std::string name_arg = std::string("\0--name\0", 8) + name + '\0';
  const std::string rank_var = "RANK=" + std::to_string(rank) + '\0';
  DIR* proc = opendir("/proc");
  pid_t found = 0;
  for (dirent* e; proc && (e = readdir(proc)) && !found;) {
    const pid_t pid = static_cast<pid_t>(std::atoi(e->d_name));
    if (pid <= 0) continue;
    const std::string dir = std::string("/proc/") + e->d_name;
    if (slurp(dir + "/cmdline").find(name_arg) == std::string::npos) continue;
    const std::string env = '\0' + slurp(dir + "/environ");
    if (env.find('\0' + rank_var) != std::string::npos) found = pid;
  }
  if (proc) closedir(proc);
  return found;
}

class DataParallelJourney : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_dir("dist");
    data_ = write_dataset(root_ + "/three", {.nc = 3, .names = NamesStyle::list, .train_images = 16, .val_images = 4});
  }
  std::vector<std::string> train_args(const std::string& name, std::vector<std::string> extra) const {
    std::vector<std::string> args = {"train", "--data", data_, "--cfg", "yolov5n.yaml", "--img", "64", "--batch", "4",
                                     "--amp", "off", "--epochs", "2", "--workers", "1", "--cache", "none", "--no-progress",
                                     "--noplots", "--no-scan", "--dist-timeout", "60", "--project", root_ + "/runs",
                                     "--name", name, "--exist-ok"};
    // An extra flag the base list has replaces its value (CLI11 takes each option once).
    for (size_t i = 0; i < extra.size(); ++i) {
      auto at = std::find(args.begin(), args.end(), extra[i]);
      if (at != args.end() && i + 1 < extra.size() && extra[i + 1].rfind("--", 0) != 0) {
        *(at + 1) = extra[++i];
        continue;
      }
      args.push_back(extra[i]);
    }
    return args;
  }
  CommandResult train(const std::string& name, std::vector<std::string> extra,
                      const std::function<bool(const std::string&)>& when = {}, int signal = SIGINT) {
    return run_kestrel(train_args(name, std::move(extra)), root_, when, signal);
  }
  std::string results(const std::string& name) const { return slurp(root_ + "/runs/" + name + "/results.csv"); }
  std::string port() const { return std::to_string(free_tcp_port()); }

  std::string root_, data_;
};

TEST_F(DataParallelJourney, TwoProcessesTrainOneRun) {
  const CommandResult r = train("dp2", {"--nproc-per-node", "2", "--sync-bn", "--master-port", port()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("Launching 2 process(es)")) << r.output;
  EXPECT_TRUE(r.has("Data parallel: 2 processes (2 on this machine)")) << r.output;
  EXPECT_TRUE(r.has("Using SyncBatchNorm()")) << r.output;
  // Rank 0 alone writes: one run folder, one results row per epoch, the checkpoints.
  const std::string csv = results("dp2");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_TRUE(fs::exists(root_ + "/runs/dp2/weights/best.pt"));
  EXPECT_FALSE(fs::exists(root_ + "/runs/dp22"));
  const std::string opt = slurp(root_ + "/runs/dp2/opt.json");
  EXPECT_NE(opt.find("\"world_size\": 2"), std::string::npos) << opt;
  // The checkpoint is an ordinary one.
  const CommandResult v = run_kestrel({"val", "--weights", root_ + "/runs/dp2/weights/best.pt", "--data", data_, "--img", "64",
                                       "--project", root_ + "/val", "--noplots"},
                                      root_);
  EXPECT_EQ(v.exit_code, 0) << v.output;
}


// Ultralytics' family on the same job: its loss and recipe on two processes, SyncBatchNorm inside
// C3k2 and C2PSA, MuSGD (the optimizer its long runs get) stepping on the averaged gradients, its
// results.csv (eight lr columns) written once by rank 0.
TEST_F(DataParallelJourney, Yolo11nTrainsOnTwoProcesses) {
  const CommandResult r = train("dp11", {"--cfg", "yolo11n.yaml", "--optimizer", "MuSGD", "--nproc-per-node", "2", "--sync-bn",
                                         "--master-port", port()});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("optimizer: MuSGD(lr=0.01")) << r.output;
  EXPECT_TRUE(r.has("Data parallel: 2 processes (2 on this machine)")) << r.output;
  EXPECT_TRUE(r.has("Using SyncBatchNorm()")) << r.output;
  EXPECT_TRUE(r.has("box_loss   cls_loss   dfl_loss")) << r.output;
  const std::string csv = results("dp11");
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3) << csv;
  EXPECT_EQ(csv.rfind("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,", 0), 0u) << csv;
  EXPECT_NE(csv.find(",lr/pg7\n"), std::string::npos) << csv;
}

TEST_F(DataParallelJourney, TwoMachinesOnLoopbackMatchOneMachine) {
  const CommandResult one = train("node1x2", {"--nproc-per-node", "2", "--sync-bn", "--master-port", port()});
  ASSERT_EQ(one.exit_code, 0) << one.output;
  const std::string p = port();
  auto node = [&](int rank) {
    return std::async(std::launch::async, [this, p, rank] {
      return train("nodes2", {"--nnodes", "2", "--node-rank", std::to_string(rank), "--nproc-per-node",
                                                           "1", "--master-addr", "127.0.0.1", "--master-port", p, "--sync-bn"});
    });
  };
  auto n0 = node(0), n1 = node(1);
  const CommandResult r0 = n0.get(), r1 = n1.get();
  ASSERT_EQ(r0.exit_code, 0) << r0.output;
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  EXPECT_TRUE(r0.has("Data parallel: 2 processes (1 on this machine)")) << r0.output;
  // Same job, same shards, same exchanges: rank 0 logs the same epochs. The machines' processes run
  // 2 compute threads each instead of 1, which may round convolutions differently: compare numbers.
  const std::vector<std::string> a = read_lines(root_ + "/runs/node1x2/results.csv");
  const std::vector<std::string> b = read_lines(root_ + "/runs/nodes2/results.csv");
  ASSERT_EQ(a.size(), b.size());
  for (size_t row = 1; row < a.size(); ++row) {
    std::stringstream sa(a[row]), sb(b[row]);
    std::string fa, fb;
    for (int col = 0; std::getline(sa, fa, ',') && std::getline(sb, fb, ','); ++col) {
      const double x = std::stod(fa), y = std::stod(fb);
      EXPECT_NEAR(x, y, 1e-3 * std::max(1.0, std::abs(x))) << "results.csv row " << row << " column " << col;
    }
  }
  EXPECT_FALSE(fs::exists(root_ + "/runs/nodes22")) << "only rank 0 makes a run folder";
}

TEST_F(DataParallelJourney, KilledRankStopsTheJobWithAMessage) {
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = train("killed", {"--nproc-per-node", "2", "--epochs", "4", "--master-port", port()},
                                [&](const std::string& line) {
                                  if (line.rfind("epoch 0:", 0) != 0) return false;
                                  const pid_t victim = rank_pid("killed", 1);
                                  if (victim > 0) kill(victim, SIGKILL);
                                  return true;
                                },
                                0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("rank 1 (pid")) << r.output;
  EXPECT_TRUE(r.has("was killed by signal 9")) << r.output;
  EXPECT_TRUE(r.has("another rank of the job is gone") || r.has("timed out")) << r.output;
  EXPECT_LT(seconds, 60) << "the job must stop within --dist-timeout";
  EXPECT_TRUE(fs::exists(root_ + "/runs/killed/weights/last.pt")) << "epoch 0's checkpoint is kept for --resume";
}

// The ranks' network is cut after epoch 0 (loopback brought down inside a private network
// namespace: no packets and no resets, as when a link or switch fails, unlike a killed rank whose
// sockets close). Every rank stops within --dist-timeout with one line, and --resume ends where an
// uncut run ends. Skips where network namespaces are not allowed (no root, no unshare).
TEST_F(DataParallelJourney, NetworkCutStopsEveryRankWithinTheTimeoutAndResumes) {
  const CommandResult clean = train("uncut", {"--nproc-per-node", "2", "--epochs", "4", "--master-port", port()});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const char* script =
      "ip link set lo up 2>/dev/null || exit 77\n"
      "csv=$1; shift; \"$@\" & pid=$!\n"
      "while kill -0 $pid 2>/dev/null && [ \"$(cat \"$csv\" 2>/dev/null | wc -l)\" -lt 2 ]; do sleep 0.02; done\n"
      "ip link set lo down && echo 'test: network cut'\n"
      "wait $pid";
  std::vector<std::string> args = {"-n", "sh", "-c", script, "sh", root_ + "/runs/cut/results.csv", KESTREL_BIN};
  for (const std::string& a : train_args("cut", {"--nproc-per-node", "2", "--epochs", "4", "--master-port", port(),
                                                 "--dist-timeout", "10"}))
    args.push_back(a);
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult cut = run_program("unshare", args, root_, {}, 0);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (cut.exit_code == 77 || cut.has("unshare: ")) GTEST_SKIP() << "network namespaces not allowed here: " << cut.output;
  ASSERT_TRUE(cut.has("test: network cut")) << cut.output;
  EXPECT_EQ(cut.exit_code, 1) << cut.output;
  size_t errors = 0;
  for (size_t at = 0; (at = cut.output.find("kestrel: error: ", at)) != std::string::npos; ++at, ++errors) {
    const std::string line = cut.output.substr(at, cut.output.find('\n', at) - at);
    EXPECT_NE(line.find(" timed out: a rank stopped answering within the job's --dist-timeout"), std::string::npos) << line;
  }
  EXPECT_EQ(errors, 2u) << "one line from each rank:\n" << cut.output;
  EXPECT_LT(seconds, 45) << "the epochs take seconds, the timeout 10 s";
  const CommandResult resumed = run_kestrel({"train", "--resume", root_ + "/runs/cut/weights/last.pt", "--nproc-per-node", "2",
                                             "--master-port", port()}, root_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("cut"), results("uncut"));
}

TEST_F(DataParallelJourney, TorchrunRestartResumesToTheSameResults) {
  if (system("command -v torchrun > /dev/null 2>&1") != 0) GTEST_SKIP() << "torchrun not on PATH (scripts/test.sh puts the torch venv's first)";
  auto torchrun = [&](const std::string& name, int restarts, const std::function<bool(const std::string&)>& when) {
    // torch 2.11's torchrun (scripts/setup.sh's venv); stdout goes to a log file and, teed, here, each
    // line prefixed with its rank.
    std::vector<std::string> args = {"--no-python", "--nproc-per-node", "2", "--max-restarts", std::to_string(restarts),
                                     "--master-port", port(), "--redirects", "1", "--tee", "1",
                                     "--log-dir", root_ + "/torchrun_" + name, KESTREL_BIN};
    for (const auto& a : train_args(name, {"--epochs", "3", "--sync-bn"})) args.push_back(a);
    return run_program("torchrun", args, root_, when, 0);
  };
  const CommandResult clean = torchrun("clean", 0, {});
  ASSERT_EQ(clean.exit_code, 0) << clean.output;
  const CommandResult restarted = torchrun("restarted", 1, [&](const std::string& line) {
    if (line.find("]:epoch 0:") == std::string::npos) return false;  // torchrun prefixes "[default0]:"
    const pid_t victim = rank_pid("restarted", 1);
    if (victim > 0) kill(victim, SIGKILL);
    return true;
  });
  ASSERT_EQ(restarted.exit_code, 0) << restarted.output;
  EXPECT_TRUE(restarted.has("torchrun restart 1: resuming the interrupted run from")) << restarted.output;
  EXPECT_EQ(results("restarted"), results("clean"));
}

TEST_F(DataParallelJourney, PortInUseIsNamed) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  listen(fd, 1);
  socklen_t len = sizeof a;
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  const CommandResult r = train("busy", {"--nproc-per-node", "2", "--master-port", std::to_string(ntohs(a.sin_port))});
  close(fd);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.has("the port is in use")) << r.output;
  EXPECT_TRUE(r.has("--master-port")) << r.output;
}

TEST_F(DataParallelJourney, RanksWithOtherOptionsRefuseToTrain) {
  const std::string p = port();
  auto node = [&](int rank, const std::string& seed) {
    return std::async(std::launch::async, [this, p, rank, seed] {
      return train("mismatch", {"--nnodes", "2", "--node-rank", std::to_string(rank), "--master-port", p, "--seed", seed});
    });
  };
  auto n0 = node(0, "1"), n1 = node(1, "2");
  const CommandResult r0 = n0.get(), r1 = n1.get();
  EXPECT_NE(r0.exit_code, 0);
  EXPECT_NE(r1.exit_code, 0);
  EXPECT_TRUE(r1.has("rank 1's options differ from rank 0's")) << r1.output;
}

TEST_F(DataParallelJourney, UnreachableMasterIsNamedWithinTheTimeout) {
  const auto t0 = std::chrono::steady_clock::now();
  const CommandResult r = train("alone", {"--nnodes", "2", "--node-rank", "1", "--master-addr", "127.0.0.1", "--master-port",
                                          port(), "--dist-timeout", "3"});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.has("rank 1 could not reach the master at 127.0.0.1:")) << r.output;
  EXPECT_LT(seconds, 30);
}

TEST_F(DataParallelJourney, NodesThatDisagreeOnTheWorldSizeSaySo) {
  const std::string p = port();
  auto node = [&](int rank, const std::string& nnodes) {
    return std::async(std::launch::async, [this, p, rank, nnodes] {
      return train("sizes", {"--nnodes", nnodes, "--node-rank", std::to_string(rank), "--master-port", p, "--dist-timeout", "5"});
    });
  };
  auto n0 = node(0, "2"), n1 = node(1, "3");
  const CommandResult r0 = n0.get(), r1 = n1.get();
  EXPECT_NE(r0.exit_code, 0);
  EXPECT_NE(r1.exit_code, 0);
  EXPECT_TRUE(r0.has("rank 1 was started with WORLD_SIZE=3, rank 0 with WORLD_SIZE=2")) << r0.output;
  // Rank 1 waits for a rank 2 that never comes, unless rank 0's refusal closes the rendezvous first.
  EXPECT_TRUE(r1.has("for rank(s) 2 of WORLD_SIZE=3") || r1.has("waited for the other ranks of WORLD_SIZE=3: rank 0 stopped"))
      << r1.output;
}

TEST_F(DataParallelJourney, GlobalBatchMustSplitEvenly) {
  const CommandResult r = train("odd", {"--nproc-per-node", "2", "--batch", "5", "--master-port", port()});
  EXPECT_NE(r.exit_code, 0);
  EXPECT_TRUE(r.has("--batch-size 5 must be a multiple of the 2 processes")) << r.output;
}

}  // namespace
}  // namespace kestrel::test
