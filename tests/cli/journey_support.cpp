// Process runner (fork/exec with one pipe for stdout+stderr) and the dataset writer of the journeys.
#include "cli/journey_support.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>
#include <random>
#include <stdexcept>

namespace fs = std::filesystem;

namespace kestrel::test {

namespace {

[[noreturn]] void exec_child(int out_fd, const std::string& program, const std::vector<std::string>& args,
                             const std::string& cwd) {
  dup2(out_fd, STDOUT_FILENO);
  dup2(out_fd, STDERR_FILENO);
  close(out_fd);
  if (chdir(cwd.c_str()) != 0) _exit(126);
  setenv("OMP_WAIT_POLICY", "PASSIVE", 1);
  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(program.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(program.c_str(), argv.data());
  _exit(127);
}

}  // namespace

CommandResult run_kestrel(const std::vector<std::string>& args, const std::string& cwd,
                          const std::function<bool(const std::string&)>& signal_when, int signal) {
  return run_program(KESTREL_BIN, args, cwd, signal_when, signal);
}

CommandResult run_program(const std::string& program, const std::vector<std::string>& args, const std::string& cwd,
                          const std::function<bool(const std::string&)>& signal_when, int signal) {
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  std::fflush(nullptr);
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("fork failed");
  if (pid == 0) {
    close(fds[0]);
    exec_child(fds[1], program, args, cwd);
  }
  close(fds[1]);
  CommandResult r;
  std::string line;
  bool signalled = false;
  char buf[4096];
  for (ssize_t n; (n = read(fds[0], buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (ssize_t i = 0; i < n; ++i) {
      r.output += buf[i];
      if (buf[i] != '\n' && buf[i] != '\r') {
        line += buf[i];
        continue;
      }
      if (!signalled && signal_when && signal_when(line)) {
        kill(pid, signal);
        signalled = true;
      }
      line.clear();
    }
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

namespace {

std::string class_name(int c) { return "kind" + std::to_string(c); }

void write_names(std::ofstream& yaml, const DatasetSpec& spec) {
  switch (spec.names) {
    case NamesStyle::list:
      yaml << "names: [";
      for (int c = 0; c < spec.nc; ++c) yaml << (c ? ", " : "") << class_name(c);
      yaml << "]\n";
      break;
    case NamesStyle::map:
      yaml << "names:\n";
      for (int c = 0; c < spec.nc; ++c) yaml << "  " << c << ": " << class_name(c) << "\n";
      break;
    case NamesStyle::nc_only:
      yaml << "nc: " << spec.nc << "\n";
      break;
  }
}

// One image with 1-3 boxes; returns its YOLO label lines.
std::string draw_image(const std::string& path, const DatasetSpec& spec, std::mt19937& rng) {
  std::uniform_int_distribution<int> side(70, 150), count(1, 3), cls(0, spec.nc - 1);
  cv::Mat img(side(rng), side(rng), CV_8UC3, cv::Scalar(90, 100, 110));
  cv::randn(img, cv::Scalar(100, 100, 100), cv::Scalar(20, 20, 20));
  std::string labels;
  for (int k = count(rng); k > 0; --k) {
    const int c = cls(rng);
    const int w = std::uniform_int_distribution<int>(img.cols / 5, img.cols / 2)(rng);
    const int h = std::uniform_int_distribution<int>(img.rows / 5, img.rows / 2)(rng);
    const int x = std::uniform_int_distribution<int>(0, img.cols - w)(rng);
    const int y = std::uniform_int_distribution<int>(0, img.rows - h)(rng);
    cv::Mat hsv(1, 1, CV_8UC3, cv::Scalar(c * 180 / spec.nc, 255, 255)), bgr;
    cv::cvtColor(hsv, bgr, cv::COLOR_HSV2BGR);
    const cv::Vec3b colour = bgr.at<cv::Vec3b>(0, 0);
    cv::rectangle(img, cv::Rect(x, y, w, h), cv::Scalar(colour[0], colour[1], colour[2]), cv::FILLED);
    char line[128];
    std::snprintf(line, sizeof line, "%d %.6f %.6f %.6f %.6f\n", c, (x + w / 2.0) / img.cols, (y + h / 2.0) / img.rows,
                  double(w) / img.cols, double(h) / img.rows);
    labels += line;
  }
  if (!cv::imwrite(path, img)) throw std::runtime_error("cannot write " + path);
  return labels;
}

}  // namespace

std::string write_dataset(const std::string& dir, const DatasetSpec& spec) {
  std::mt19937 rng(spec.seed);
  for (const std::string split : {"train", "val"}) {
    const int n = split == "train" ? spec.train_images : spec.val_images;
    fs::create_directories(dir + "/images/" + split);
    if (spec.layout != Layout::no_labels) fs::create_directories(dir + "/labels/" + split);
    std::ofstream list;
    if (spec.layout == Layout::list_file) list.open(dir + "/" + split + ".txt");
    for (int i = 0; i < n; ++i) {
      const std::string stem = split + "_" + std::to_string(i);
      const std::string labels = draw_image(dir + "/images/" + split + "/" + stem + ".jpg", spec, rng);
      if (spec.layout != Layout::no_labels) std::ofstream(dir + "/labels/" + split + "/" + stem + ".txt") << labels;
      if (list.is_open()) list << "./images/" << split << "/" << stem << ".jpg\n";
    }
  }
  const std::string yaml_path = dir + "/data.yaml";
  std::ofstream yaml(yaml_path);
  yaml << "path: " << dir << "\n";
  if (spec.layout == Layout::list_file)
    yaml << "train: train.txt\nval: val.txt\n";
  else
    yaml << "train: images/train\nval: images/val\n";
  write_names(yaml, spec);
  return yaml_path;
}

std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> out;
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) out.push_back(line);
  return out;
}

}  // namespace kestrel::test
