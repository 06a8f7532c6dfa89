// load_dataset_config: YOLOv5 data.yaml path rules, names/nc handling and error messages.
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "data/index/dataset_config.h"
#include "test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

class DatasetConfigTest : public ::testing::Test {
 protected:
  std::string dir = fs::canonical(test::temp_dir("config")).string();
  std::string yaml(const std::string& name, const std::string& text) {
    const std::string p = dir + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  // The error message of load_dataset_config, "" when it succeeds.
  static std::string error_of(const std::string& path) {
    try {
      load_dataset_config(path);
    } catch (const DatasetConfigError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(DatasetConfig, Coco128) {
  KESTREL_REQUIRE_SHARED(path, "data/coco128/coco128.yaml");
  const DatasetConfig cfg = load_dataset_config(path);
  const std::string root = fs::absolute(fs::path(path).parent_path()).lexically_normal().string();
  EXPECT_EQ(cfg.root, root);
  ASSERT_EQ(cfg.train.size(), 1u);
  EXPECT_EQ(cfg.train[0], root + "/images/train2017");
  EXPECT_EQ(cfg.val, cfg.train);
  EXPECT_EQ(cfg.nc, 80);
  ASSERT_EQ(cfg.names.size(), 80u);
  EXPECT_EQ(cfg.names[0], "person");
  EXPECT_EQ(cfg.names[79], "toothbrush");
}

TEST_F(DatasetConfigTest, NamesMapListsAndRelativePath) {
  fs::create_directories(dir + "/ds/images/a");
  fs::create_directories(dir + "/ds/images/b");
  const DatasetConfig cfg = load_dataset_config(yaml("d.yaml",
                                                     "path: ds\n"
                                                     "train: [images/a, images/b]\n"
                                                     "val: images/b\n"
                                                     "test: list.txt\n"
                                                     "names:\n  0: cat\n  1: dog\n"));
  EXPECT_EQ(cfg.root, dir + "/ds");
  EXPECT_EQ(cfg.train, (std::vector<std::string>{dir + "/ds/images/a", dir + "/ds/images/b"}));
  EXPECT_EQ(cfg.val, std::vector<std::string>{dir + "/ds/images/b"});
  EXPECT_EQ(cfg.test, std::vector<std::string>{dir + "/ds/list.txt"});
  EXPECT_EQ(cfg.names, (std::vector<std::string>{"cat", "dog"}));
  EXPECT_EQ(cfg.nc, 2);
}

TEST_F(DatasetConfigTest, PathDefaultsToTheYamlFolderAndAbsoluteStays) {
  DatasetConfig cfg = load_dataset_config(yaml("a.yaml", "train: t\nval: v\nnames: [x]\n"));
  EXPECT_EQ(cfg.root, dir);
  EXPECT_EQ(cfg.train[0], dir + "/t");
  cfg = load_dataset_config(yaml("b.yaml", "path: /somewhere/else\ntrain: t\nval: /abs/v\nnc: 2\n"));
  EXPECT_EQ(cfg.root, "/somewhere/else");
  EXPECT_EQ(cfg.train[0], "/somewhere/else/t");
  EXPECT_EQ(cfg.val[0], "/abs/v");
  EXPECT_EQ(cfg.names, (std::vector<std::string>{"class0", "class1"}));
}

TEST_F(DatasetConfigTest, RelativePathFallsBackToTheCurrentDirectory) {
  fs::create_directories(dir + "/cwd/data_here");
  fs::create_directories(dir + "/yamls");
  const std::string path = yaml("yamls/c.yaml", "path: data_here\ntrain: t\nval: v\nnames: [x]\n");
  const fs::path old = fs::current_path();
  fs::current_path(dir + "/cwd");
  const DatasetConfig cfg = load_dataset_config(path);
  fs::current_path(old);
  EXPECT_EQ(cfg.root, dir + "/cwd/data_here");
}

TEST_F(DatasetConfigTest, DotDotFallbackAsYolov5) {
  fs::create_directories(dir + "/r/train/images");
  const DatasetConfig cfg = load_dataset_config(yaml("r/d.yaml", "train: ../train/images\nval: ../valid/images\nnames: [x]\n"));
  EXPECT_EQ(cfg.train[0], dir + "/r/train/images");  // "../train/images" is missing, "train/images" exists
  EXPECT_EQ(cfg.val[0], dir + "/r/valid/images");    // neither exists: "../" dropped as YOLOv5 does
}

TEST_F(DatasetConfigTest, ErrorsNameFileAndLine) {
  const std::string mismatch = yaml("m.yaml", "train: t\nval: v\nnc: 3\nnames: [a, b]\n");
  EXPECT_NE(error_of(mismatch).find(mismatch + ":3:"), std::string::npos) << error_of(mismatch);
  const std::string missing_val = yaml("v.yaml", "train: t\nnames: [a]\n");
  EXPECT_NE(error_of(missing_val).find("'val:'"), std::string::npos) << error_of(missing_val);
  EXPECT_NE(error_of(missing_val).find(missing_val), std::string::npos);
  const std::string syntax = yaml("s.yaml", "train: t\nval: v\nnames: [a, b\n");
  EXPECT_NE(error_of(syntax).find(syntax + ":"), std::string::npos) << error_of(syntax);
  const std::string gap = yaml("g.yaml", "train: t\nval: v\nnames:\n  0: a\n  2: c\n");
  EXPECT_NE(error_of(gap).find("0..n-1"), std::string::npos) << error_of(gap);
  const std::string bad_key = yaml("k.yaml", "train: t\nval: v\nnames:\n  0: a\n  one: b\n");
  EXPECT_NE(error_of(bad_key).find(bad_key + ":5:"), std::string::npos) << error_of(bad_key);
  const std::string no_names = yaml("n.yaml", "train: t\nval: v\n");
  EXPECT_NE(error_of(no_names).find("names"), std::string::npos);
  EXPECT_NE(error_of(dir + "/absent.yaml").find("absent.yaml"), std::string::npos);
  EXPECT_EQ(error_of(yaml("ok.yaml", "train: t\nval: v\nnc: 2\nnames: [a, b]\n")), "");
}

}  // namespace
}  // namespace kestrel
