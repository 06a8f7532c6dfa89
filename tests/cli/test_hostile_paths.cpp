// Paths from a data.yaml cannot make Kestrel write outside the run folders and the cache folders. A
// data.yaml reaches its images through "..", and its class names are paths ("../../escape",
// "/tmp/escape"). It is trained with a disk image cache, then used for detection with crops and
// labels saved. Every file the commands created or changed anywhere in the sandbox is then
// accounted for:
//   - the run folders;
//   - the user cache ($XDG_CACHE_HOME);
//   - the caches YOLOv5 users expect beside the dataset: label index and scan beside the labels
//     folder (<labels>.kestrel.cache, .kestrel.scan), the disk image cache beside the images folder
//     (<images>.<hash>.img<size>.<interpolation>.kcache). Their suffixes are fixed, so no other
//     file can be named.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "cli/journey_support.h"
#include "data/tree_snapshot.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace kestrel::test {
namespace {

bool starts_with(const std::string& s, const std::string& prefix) { return s.rfind(prefix, 0) == 0; }

TEST(HostilePaths, DataYamlCannotMakeKestrelWriteOutsideRunAndCacheFolders) {
  const std::string root = temp_dir("hostile_paths");
  write_dataset(root + "/sets/boards", {.nc = 2, .train_images = 8, .val_images = 4});
  fs::create_directories(root + "/sets/other");
  const std::string yaml = root + "/sets/other/hostile.yaml";
  std::ofstream(yaml) << "path: ../boards/../boards\ntrain: images/train\nval: images/val\n"
                      << "names: ['../../escape', '/tmp/escape']\n";
  fs::create_directories(root + "/cache");
  ::setenv("XDG_CACHE_HOME", (root + "/cache").c_str(), 1);  // the commands inherit it
  const auto before = snapshot_tree(root);

  const CommandResult trained = run_kestrel({"train", "--data", yaml, "--img", "64", "--batch", "4", "--epochs", "1",
                                             "--workers", "1", "--cache", "disk", "--amp", "off", "--no-progress",
                                             "--project", root + "/runs", "--name", "t", "--exist-ok"},
                                            root);
  ASSERT_EQ(trained.exit_code, 0) << trained.output;
  const CommandResult detected = run_kestrel({"detect", "--weights", root + "/runs/t/weights/last.pt", "--source",
                                              root + "/sets/boards/images/val", "--conf-thres", "0.0001", "--save-crop",
                                              "--save-txt", "--project", root + "/runs", "--name", "d", "--exist-ok"},
                                             root);
  ASSERT_EQ(detected.exit_code, 0) << detected.output;
  ::unsetenv("XDG_CACHE_HOME");

  int beside_labels = 0;
  for (const auto& [path, file] : snapshot_tree(root)) {
    const auto old = before.find(path);
    if (old != before.end() && old->second == file) continue;  // untouched
    if (starts_with(path, "runs/") || starts_with(path, "cache/")) continue;
    const fs::path p(path);
    const std::string name = p.filename().string();
    const bool label_cache = p.parent_path() == "sets/boards/labels" &&
                             (name == "train.kestrel.cache" || name == "val.kestrel.cache" || name == "train.kestrel.scan" ||
                              name == "val.kestrel.scan");
    const bool image_cache = p.parent_path() == "sets/boards/images" && p.extension() == ".kcache" &&
                             (starts_with(name, "train.") || starts_with(name, "val."));
    EXPECT_TRUE(label_cache || image_cache) << "written outside the run and cache folders: " << path;
    beside_labels += label_cache;
  }
  EXPECT_GT(beside_labels, 0) << "the label caches go beside the labels folder, as YOLOv5's";
  EXPECT_FALSE(fs::exists(root + "/escape")) << "a class name is never a path";
  EXPECT_FALSE(fs::exists(root + "/runs/escape"));
  EXPECT_FALSE(fs::exists("/tmp/escape"));
  int crops = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root + "/runs/d")) {
    for (const auto& part : fs::relative(entry.path(), root + "/runs/d")) EXPECT_NE(part, "..") << entry.path();
    crops += entry.is_regular_file() && entry.path().parent_path().parent_path().filename() == "crops";
  }
  EXPECT_GT(crops, 0) << "crops saved, under folders named after the classes\n" << detected.output;
}

}  // namespace
}  // namespace kestrel::test
