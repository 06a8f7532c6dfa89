// ensure_demo_dataset: deterministic content, reuse, speed, and a valid YOLO dataset for build_index.
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "data/io/cache_dir.h"
#include "data/index/dataset_config.h"
#include "data/index/demo_dataset.h"
#include "data/index/label_index.h"
#include "test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

uint64_t file_hash(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  const std::string bytes = s.str();
  EXPECT_FALSE(bytes.empty()) << p;
  return fnv1a64(bytes.data(), bytes.size());
}

TEST(DemoDataset, DeterministicFastAndIndexable) {
  const std::string a = test::temp_dir("demo_a"), b = test::temp_dir("demo_b");
  // CPU time, not wall time: the budget (< 10 s) must not depend on how busy the machine is.
  const std::clock_t start = std::clock();
  const std::string yaml_a = ensure_demo_dataset(a);
  EXPECT_LT(static_cast<double>(std::clock() - start) / CLOCKS_PER_SEC, 10.0);
  EXPECT_EQ(yaml_a, a + "/demo-v1/data.yaml");
  const std::string yaml_b = ensure_demo_dataset(b);
  const fs::path da = fs::path(yaml_a).parent_path(), db = fs::path(yaml_b).parent_path();
  for (const char* rel : {"data.yaml", "images/train/train_0000.jpg", "images/train/train_0399.jpg",
                          "images/val/val_0057.jpg", "labels/train/train_0000.txt", "labels/train/train_0123.txt",
                          "labels/val/val_0099.txt"})
    EXPECT_EQ(file_hash(da / rel), file_hash(db / rel)) << rel;
  EXPECT_NE(file_hash(da / "images/train/train_0000.jpg"), file_hash(da / "images/train/train_0001.jpg"));
  // No temporary folders left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(a), fs::directory_iterator()), 1);

  // Reused, not regenerated.
  const auto mtime = fs::last_write_time(da / "images/train/train_0000.jpg");
  EXPECT_EQ(ensure_demo_dataset(a), yaml_a);
  EXPECT_EQ(fs::last_write_time(da / "images/train/train_0000.jpg"), mtime);

  const DatasetConfig cfg = load_dataset_config(yaml_a);
  EXPECT_EQ(cfg.names, demo_class_names());
  EXPECT_EQ(cfg.nc, 4);
  const DatasetIndex train = build_index(cfg.train, cfg.nc);
  const DatasetIndex val = build_index(cfg.val, cfg.nc);
  EXPECT_EQ(train.stats.images, static_cast<size_t>(kDemoTrainImages));
  EXPECT_EQ(val.stats.images, static_cast<size_t>(kDemoValImages));
  EXPECT_EQ(train.stats.labelled, train.stats.images);  // every image has at least one object
  EXPECT_EQ(train.stats.bad_label_lines + train.stats.duplicate_labels + train.stats.corrupt_images, 0u);
  EXPECT_EQ(train.stats.orphan_label_files, 0u);
  EXPECT_GE(train.stats.instances, 2u * kDemoTrainImages);
  EXPECT_LE(train.stats.instances, 5u * kDemoTrainImages);
  std::vector<int> per_class(4, 0);
  for (const ImageRecord& r : train.records) {
    EXPECT_GE(r.width, 256);
    EXPECT_LE(r.width, 384);
    for (const Label& l : r.labels) {
      ++per_class[static_cast<int>(l.cls)];
      const float side = std::max(l.w * r.width, l.h * r.height) / std::min(r.width, r.height);
      EXPECT_GT(side, 0.05f);
      EXPECT_LT(side, 0.40f);
    }
  }
  for (int c = 0; c < 4; ++c) EXPECT_GT(per_class[c], static_cast<int>(train.stats.instances / 8)) << c;
}

}  // namespace
}  // namespace kestrel
