// Helpers of the journey suite: run the real `kestrel` binary as a user does (output captured, an
// optional signal sent when a line appears) and write small YOLO-format datasets of any class count
// and layout.
#pragma once
#include <csignal>
#include <functional>
#include <string>
#include <vector>

namespace kestrel::test {

struct CommandResult {
  int exit_code = -1;  // the process's exit status, or 128 + signal when a signal ended it
  std::string output;  // stdout and stderr, interleaved as printed
  bool has(const std::string& text) const { return output.find(text) != std::string::npos; }
};

// Runs `kestrel args...` in `cwd`. When `signal_when` returns true for a line of output, `signal` is
// sent to the process once (e.g. SIGINT: a user's Ctrl-C).
CommandResult run_kestrel(const std::vector<std::string>& args, const std::string& cwd,
                          const std::function<bool(const std::string&)>& signal_when = {}, int signal = SIGINT);
// The same for another program (e.g. torchrun launching kestrel), found on PATH.
CommandResult run_program(const std::string& program, const std::vector<std::string>& args, const std::string& cwd,
                          const std::function<bool(const std::string&)>& signal_when = {}, int signal = SIGINT);

enum class NamesStyle { list, map, nc_only };  // names: [a, b], names: {0: a, 1: b}, or nc: N alone
enum class Layout {
  folders,    // images/{train,val} + labels/{train,val}
  list_file,  // train.txt / val.txt listing the images, paths relative to the dataset root
  no_labels,  // images/{train,val} and no labels folder at all
};

struct DatasetSpec {
  int nc = 3;
  NamesStyle names = NamesStyle::list;
  Layout layout = Layout::folders;
  int train_images = 8, val_images = 4;
  unsigned seed = 1;
};

// Writes the dataset under `dir` (images of 70..150 px a side, 1-3 filled boxes whose colour is their
// class) and returns the path of its data.yaml.
std::string write_dataset(const std::string& dir, const DatasetSpec& spec);

// Lines of a text file ("" lines dropped).
std::vector<std::string> read_lines(const std::string& path);

}  // namespace kestrel::test
