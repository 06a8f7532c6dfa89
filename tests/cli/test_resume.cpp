// Exact resume: a run stopped anywhere (Ctrl-C at a random step, Ctrl-C at an epoch boundary, SIGTERM,
// SIGKILL between two --save-minutes checkpoints, a full disk, a vanished dataset, a run folder turned
// read-only; under bf16, and with MuSGD) and continued with --resume writes a results.csv identical, byte for byte, to the run
// that was never stopped. The dataset is small enough for the warmup's
// growing accumulation windows to be cut in the middle, so pending gradients are part of the test.
// A dataset on a read-only mount, its caches unwritable, trains uncached to the same results.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "cli/journey_support.h"
#include "test_support.h"

namespace kestrel::test {
namespace {

constexpr int kEpochs = 3, kBatches = 5;  // 20 images, batch 4

class Resume : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = temp_dir("resume");
    data_ = write_dataset(root_ + "/three", {.nc = 3, .names = NamesStyle::map, .train_images = 20, .val_images = 6});
    const CommandResult r = train("uninterrupted", {});
    ASSERT_EQ(r.exit_code, 0) << r.output;
    reference_ = results("uninterrupted");
    ASSERT_EQ(std::count(reference_.begin(), reference_.end(), '\n'), kEpochs + 1) << reference_;
  }

  // `kestrel train` of the run `name` (without the program's name), `extra` flags last.
  std::vector<std::string> train_args(const std::string& name, const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"train", "--data", data_, "--img", "64", "--batch", "4", "--amp", amp_,
                                     "--epochs", std::to_string(kEpochs), "--workers", "1", "--no-progress", "--noplots",
                                     "--project", root_ + "/runs", "--name", name, "--exist-ok"};
    args.insert(args.end(), model_.begin(), model_.end());
    args.insert(args.end(), extra.begin(), extra.end());
    return args;
  }
  CommandResult train(const std::string& name, const std::vector<std::string>& extra,
                      const std::function<bool(const std::string&)>& signal_when = {}, int signal = SIGINT) {
    return run_kestrel(train_args(name, extra), root_, signal_when, signal);
  }
  // `kestrel train` of the run `name` inside a private mount namespace: `script` (sh) gets `folder` as
  // $1, then the command line to run. Exit 77 from the script, or unshare refusing, means mounts are
  // not allowed here (mounts_refused).
  CommandResult train_in_mount_namespace(const char* script, const std::string& folder, const std::string& name,
                                         const std::vector<std::string>& extra) const {
    std::vector<std::string> args = {"-m", "--propagation", "private", "sh", "-c", script, "sh", folder, KESTREL_BIN};
    for (const std::string& a : train_args(name, extra)) args.push_back(a);
    return run_program("unshare", args, root_, {}, 0);
  }
  static bool mounts_refused(const CommandResult& r) { return r.exit_code == 77 || r.has("unshare: "); }
  CommandResult resume(const std::string& name) {
    return run_kestrel({"train", "--resume", root_ + "/runs/" + name + "/weights/last.pt", "--no-progress"}, root_);
  }
  std::string results(const std::string& name) const {
    std::ifstream in(root_ + "/runs/" + name + "/results.csv");
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }

  std::string root_, data_, reference_;
  std::string amp_ = "off";  // pinned: --amp auto measures, and two runs could choose differently
  std::vector<std::string> model_ = {"--cfg", "yolov5n.yaml"};
};

// The same run under bf16 autocast: what the resume restores must not depend on the precision.
class ResumeBf16 : public Resume {
 protected:
  ResumeBf16() { amp_ = "bf16"; }
};

// Ultralytics' MuSGD: both momentum buffers of its Muon groups and the eight groups' options must
// come back.
class ResumeMuSGD : public Resume {
 protected:
  ResumeMuSGD() { model_ = {"--cfg", "yolov8n.yaml", "--optimizer", "MuSGD"}; }
};

// Ultralytics' results.csv without its second column, the seconds since training started: a run that
// was stopped and resumed spends other seconds.
std::string without_time_column(const std::string& csv) {
  std::stringstream in(csv);
  std::string line, out;
  while (std::getline(in, line)) {
    const size_t first = line.find(','), second = line.find(',', first + 1);
    out += line.substr(0, first) + line.substr(second) + "\n";
  }
  return out;
}

// The line --save-minutes prints when it checkpoints after batch `batch` of `epoch`.
std::function<bool(const std::string&)> after_batch(int epoch, int batch) {
  const std::string mark = "at epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch) + "/";
  return [mark](const std::string& line) { return line.find(mark) != std::string::npos; };
}

TEST_F(Resume, CtrlCAtARandomStep) {
  std::random_device rd;
  const int epoch = static_cast<int>(rd() % kEpochs), batch = 1 + static_cast<int>(rd() % (kBatches - 1));
  SCOPED_TRACE("Ctrl-C after epoch " + std::to_string(epoch) + ", batch " + std::to_string(batch));
  // --save-minutes 0.0001 checkpoints (and says so) after every batch: the signal lands at a known step.
  const CommandResult stopped = train("sigint_step", {"--save-minutes", "0.0001"}, after_batch(epoch, batch));
  ASSERT_EQ(stopped.exit_code, 130) << stopped.output;
  const CommandResult resumed = resume("sigint_step");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(resumed.has(", batch ")) << resumed.output;  // "Resuming ... (epoch E, batch B)": mid-epoch
  EXPECT_EQ(results("sigint_step"), reference_);
}

TEST_F(Resume, CtrlCAtAnEpochBoundary) {
  // The validation table of epoch 1 is printed: the signal arrives while that epoch is being closed.
  int tables = 0;
  const CommandResult stopped = train("sigint_epoch", {}, [&](const std::string& line) {
    return line.find("Class     Images  Instances") != std::string::npos && ++tables == 2;
  });
  ASSERT_EQ(stopped.exit_code, 130) << stopped.output;
  const CommandResult resumed = resume("sigint_epoch");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(resumed.has("(epoch 2)")) << resumed.output;
  EXPECT_EQ(results("sigint_epoch"), reference_);
}

// SIGTERM, what a scheduler sends before it kills a job, stops the run as Ctrl-C does: last.pt after
// the batch in flight, an exit status that names the signal (128 + 15), an exact resume.
TEST_F(Resume, SigtermActsAsCtrlC) {
  const CommandResult stopped = train("sigterm", {"--save-minutes", "0.0001"}, after_batch(1, 2), SIGTERM);
  ASSERT_EQ(stopped.exit_code, 128 + SIGTERM) << stopped.output;
  EXPECT_TRUE(stopped.has("Stopped by SIGTERM: saved ")) << stopped.output;
  const CommandResult resumed = resume("sigterm");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("sigterm"), reference_);
}

// The disk fills while last.pt is written (a file-size limit: writes past 1 MB fail with EFBIG, as on a
// full disk, with SIGXFSZ ignored as a shell's `ulimit -f` user would see it): the run stops with a
// message that says the previous checkpoint is intact, that checkpoint is untouched, and once there
// is room again it resumes to the uninterrupted run's results.
TEST_F(Resume, FullDiskWhileWritingLastPtKeepsThePreviousOne) {
  const CommandResult stopped = train("full", {"--save-minutes", "0.0001"}, after_batch(1, 2));
  ASSERT_EQ(stopped.exit_code, 130) << stopped.output;
  const std::string last = root_ + "/runs/full/weights/last.pt";
  const auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  const std::string before = read(last);
  ASSERT_GT(before.size(), 2u << 20) << "the checkpoint must be larger than the limit below";
  const CommandResult full = run_program("sh", {"-c", "trap '' XFSZ; ulimit -f 2048; exec \"$0\" \"$@\"", KESTREL_BIN, "train",
                                                "--resume", last, "--no-progress"},
                                         root_, {}, 0);
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_TRUE(full.has("checkpoint not saved: cannot write " + last)) << full.output;
  EXPECT_TRUE(full.has("The previous " + last + " is intact")) << full.output;
  EXPECT_EQ(read(last), before);  // the failed write went to a temporary, removed
  const CommandResult resumed = resume("full");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("full"), reference_);
}

// The dataset's folder vanishes mid-run (a network mount dropping): the run stops with an error that
// names an image it could not read, does not hang, keeps the last epoch's last.pt, and once the
// folder is back it resumes to the uninterrupted run's results. (--cache none: a RAM cache would
// never read the folder again.)
TEST_F(Resume, VanishedDatasetStopsNamingTheFileAndResumes) {
  const std::string folder = root_ + "/three", away = root_ + "/three_unmounted";
  const CommandResult stopped = train("vanish", {"--cache", "none"}, [&](const std::string& line) {
    if (line.rfind("epoch 0:", 0) == 0) std::filesystem::rename(folder, away);
    return false;  // no signal: the missing files stop the run
  });
  std::filesystem::rename(away, folder);
  ASSERT_EQ(stopped.exit_code, 1) << stopped.output;
  EXPECT_TRUE(stopped.has("kestrel: error:")) << stopped.output;
  EXPECT_TRUE(stopped.has(folder + "/images/")) << "the error names the image it could not read\n" << stopped.output;
  ASSERT_TRUE(std::filesystem::exists(root_ + "/runs/vanish/weights/last.pt"));
  const CommandResult resumed = resume("vanish");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("vanish"), reference_);
}

// The run folder turns read-only mid-run (a remounted volume): a bind mount of the folder over
// itself, in a mount namespace of the test's own, is remounted read-only once the first epoch's
// results are written (retried while a checkpoint is being written: the kernel refuses to remount a
// folder with a file open for writing). The next write (a --save-minutes checkpoint or results.csv)
// stops the run with an error naming the file, the last good last.pt stays, and once the folder is
// writable again (the namespace gone) the run resumes to the uninterrupted run's results. Skipped where mounts are not
// allowed (no root, no unshare).
TEST_F(Resume, ReadOnlyRunFolderStopsNamingTheFileAndResumes) {
  const std::string run = root_ + "/runs/readonly";
  std::filesystem::create_directories(run);
  const char* script =
      "run=$1; shift; mount --bind \"$run\" \"$run\" || exit 77\n"
      "\"$@\" & pid=$!\n"
      "while kill -0 $pid 2>/dev/null && [ \"$(cat \"$run/results.csv\" 2>/dev/null | wc -l)\" -lt 2 ]; do sleep 0.02; done\n"
      // A remount to read-only is refused (busy) while a file on it is open for writing: retried.
      "until mount -o remount,bind,ro \"$run\" 2>/dev/null; do kill -0 $pid 2>/dev/null || break; sleep 0.005; done\n"
      "kill -0 $pid 2>/dev/null && echo 'test: run folder now read-only'\n"
      "wait $pid";
  const CommandResult stopped = train_in_mount_namespace(script, run, "readonly", {"--save-minutes", "0.0001"});
  if (mounts_refused(stopped)) GTEST_SKIP() << "mounts not allowed here: " << stopped.output;
  ASSERT_TRUE(stopped.has("test: run folder now read-only")) << stopped.output;
  EXPECT_EQ(stopped.exit_code, 1) << stopped.output;
  const size_t error = stopped.output.find("kestrel: error: ");
  ASSERT_NE(error, std::string::npos) << stopped.output;
  const std::string line = stopped.output.substr(error, stopped.output.find('\n', error) - error);
  EXPECT_NE(line.find(run + "/"), std::string::npos) << "the error names the file: " << line;
  EXPECT_NE(line.find("Read-only file system"), std::string::npos) << line;
  ASSERT_TRUE(std::filesystem::exists(run + "/weights/last.pt"));
  const CommandResult resumed = resume("readonly");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("readonly"), reference_);
}

// The dataset and the user cache folder on a read-only mount, with no caches yet: the label index, the
// scan and --cache disk each say which files they could not write, and the run trains uncached to the
// same results as the cached one. Skipped where mounts are not allowed.
TEST_F(Resume, ReadOnlyDataAndCacheFoldersTrainUncachedAndSaySo) {
  const std::string data_dir = std::filesystem::path(data_).parent_path().string();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(data_dir)) {
    const std::string name = entry.path().filename().string();
    if (name.find(".kestrel.") != std::string::npos || name.find(".kcache") != std::string::npos)
      std::filesystem::remove(entry.path());
  }
  std::filesystem::create_directories(data_dir + "/xdg");
  const char* script =
      "data=$1; shift; mount --bind \"$data\" \"$data\" && mount -o remount,bind,ro \"$data\" || exit 77\n"
      "XDG_CACHE_HOME=\"$data/xdg\" exec \"$@\"";
  const CommandResult r = train_in_mount_namespace(script, data_dir, "ro_data", {"--cache", "disk"});
  if (mounts_refused(r)) GTEST_SKIP() << "mounts not allowed here: " << r.output;
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("kestrel: labels cache not saved (cannot write " + data_dir + "/labels/")) << r.output;
  EXPECT_TRUE(r.has("the next run reads every label again")) << r.output;
  EXPECT_TRUE(r.has("kestrel: scan cache not saved (cannot write " + data_dir + "/labels/")) << r.output;
  EXPECT_TRUE(r.has("kestrel: --cache disk failed (cannot write " + data_dir + "/images/")) << r.output;
  EXPECT_TRUE(r.has(data_dir + "/xdg/kestrel/images/")) << "the user cache was tried too\n" << r.output;
  EXPECT_EQ(results("ro_data"), reference_);
}

TEST_F(Resume, SigkillBetweenSaveMinutesCheckpoints) {
  const CommandResult killed = train("sigkill", {"--save-minutes", "0.0001"}, after_batch(1, 3), SIGKILL);
  ASSERT_EQ(killed.exit_code, 128 + SIGKILL) << killed.output;
  const CommandResult resumed = resume("sigkill");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(results("sigkill"), reference_);
}

TEST_F(ResumeBf16, CtrlCMidEpoch) {
  const CommandResult stopped = train("bf16_step", {"--save-minutes", "0.0001"}, after_batch(1, 2));
  ASSERT_EQ(stopped.exit_code, 130) << stopped.output;
  EXPECT_TRUE(stopped.has("--amp bf16: bf16 mixed precision")) << stopped.output;
  const CommandResult resumed = resume("bf16_step");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(resumed.has("--amp bf16")) << resumed.output;  // the recorded precision, not a new choice
  EXPECT_EQ(results("bf16_step"), reference_);
}

TEST_F(ResumeMuSGD, CtrlCMidEpoch) {
  const CommandResult stopped = train("musgd_step", {"--save-minutes", "0.0001"}, after_batch(1, 2));
  ASSERT_EQ(stopped.exit_code, 130) << stopped.output;
  EXPECT_TRUE(stopped.has("optimizer: MuSGD(lr=0.01, momentum=0.937)")) << stopped.output;
  const CommandResult resumed = resume("musgd_step");
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_NE(reference_.find("lr/pg7"), std::string::npos) << reference_;
  EXPECT_EQ(without_time_column(results("musgd_step")), without_time_column(reference_));
}

TEST_F(Resume, FinishedRunHasNothingToResume) {
  const CommandResult r = resume("uninterrupted");
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("nothing to resume")) << r.output;
}

}  // namespace
}  // namespace kestrel::test
