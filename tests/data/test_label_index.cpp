// build_index: coco128 counts (YOLOv5's numbers), a deliberately broken dataset, list files, single_cls,
// label path mapping and the index cache (location, reuse, invalidation).
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include "data/index/label_index.h"
#include "image_fixtures.h"
#include "scoped_cache_home.h"
#include "test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::encode;
using test::ScopedCacheHome;
using test::test_picture;

bool any_warning_contains(const DatasetIndex& index, const std::string& text) {
  for (const std::string& w : index.warnings)
    if (w.find(text) != std::string::npos) return true;
  return false;
}

const ImageRecord* find_record(const DatasetIndex& index, const std::string& name) {
  for (const ImageRecord& r : index.records)
    if (fs::path(r.image_path).filename() == name) return &r;
  return nullptr;
}

TEST(LabelIndex, LabelPathsFollowImg2labelPaths) {
  EXPECT_EQ(label_path_for_image("/d/images/train/a.jpg"), "/d/labels/train/a.txt");
  EXPECT_EQ(label_path_for_image("/d/images/x/images/b.PNG"), "/d/images/x/labels/b.txt");  // last /images/
  EXPECT_EQ(label_path_for_image("/d/imgs/c.v2.jpeg"), "/d/imgs/c.v2.txt");
  EXPECT_TRUE(has_image_extension("a/b.JPG"));
  EXPECT_TRUE(has_image_extension("a/b.tiff"));
  EXPECT_FALSE(has_image_extension("a/b.gif"));
  EXPECT_FALSE(has_image_extension("a/jpg"));
}

TEST(LabelIndex, Coco128CountsAndReadOnlyCache) {
  KESTREL_REQUIRE_SHARED(root, "data/coco128");
  ScopedCacheHome cache_home;
  const std::string images = root + "/images/train2017";
  const auto labels_before = std::distance(fs::directory_iterator(root + "/labels"), fs::directory_iterator());

  const DatasetIndex index = build_index({images}, 80);
  EXPECT_EQ(index.stats.images, 128u);
  EXPECT_EQ(index.records.size(), 128u);
  EXPECT_EQ(index.stats.labelled, 126u);
  EXPECT_EQ(index.stats.backgrounds, 2u);
  EXPECT_EQ(index.stats.instances, 929u);
  EXPECT_EQ(index.stats.orphan_label_files, 2u);
  EXPECT_EQ(index.stats.corrupt_images, 0u);
  EXPECT_EQ(index.stats.bad_label_lines, 0u);
  EXPECT_EQ(index.stats.duplicate_labels, 0u);
  EXPECT_TRUE(std::is_sorted(index.records.begin(), index.records.end(),
                             [](const ImageRecord& a, const ImageRecord& b) { return a.image_path < b.image_path; }));
  const ImageRecord* first = find_record(index, "000000000009.jpg");
  ASSERT_NE(first, nullptr);
  EXPECT_EQ(first->width, 640);
  EXPECT_EQ(first->height, 480);
  EXPECT_EQ(first->label_path, root + "/labels/train2017/000000000009.txt");
  ASSERT_EQ(first->labels.size(), 8u);
  EXPECT_EQ(first->labels[0].cls, 45.0f);
  EXPECT_EQ(first->labels[0].x, 0.479492f);
  const ImageRecord* background = find_record(index, "000000000250.jpg");
  ASSERT_NE(background, nullptr);
  EXPECT_TRUE(background->labels.empty());
  EXPECT_TRUE(background->label_path.empty());
  EXPECT_TRUE(any_warning_contains(index, "000000000656.txt") || any_warning_contains(index, "000000000659.txt"));

  // The dataset folder is read-only: the cache goes to the user cache folder and nothing is written beside it.
  EXPECT_FALSE(index.from_cache);
  EXPECT_EQ(index.cache_path.rfind(cache_home.dir() + "/kestrel/index/", 0), 0u) << index.cache_path;
  EXPECT_EQ(std::distance(fs::directory_iterator(root + "/labels"), fs::directory_iterator()), labels_before);

  const DatasetIndex again = build_index({images}, 80);
  EXPECT_TRUE(again.from_cache);
  EXPECT_EQ(again.cache_path, index.cache_path);
  EXPECT_EQ(again.stats.instances, 929u);
  EXPECT_EQ(again.stats.orphan_label_files, 2u);
  ASSERT_EQ(again.records.size(), index.records.size());
  for (size_t i = 0; i < index.records.size(); ++i) {
    EXPECT_EQ(again.records[i].image_path, index.records[i].image_path);
    ASSERT_EQ(again.records[i].labels.size(), index.records[i].labels.size());
    for (size_t j = 0; j < index.records[i].labels.size(); ++j)
      EXPECT_EQ(std::memcmp(&again.records[i].labels[j], &index.records[i].labels[j], sizeof(Label)), 0);
  }
  // A different nc means different validation: not the same cache entry.
  EXPECT_FALSE(build_index({images}, 81).from_cache);
}

class BrokenDataset : public ::testing::Test {
 protected:
  std::string root = test::temp_dir("broken");
  std::string images = root + "/images/train";
  std::string labels = root + "/labels/train";
  ScopedCacheHome cache_home;

  void SetUp() override {
    fs::create_directories(images + "/sub");
    fs::create_directories(labels + "/sub");
    const cv::Mat pic = test_picture(48, 64);
    image("good.jpg", encode(".jpg", pic));
    label("good.txt",
          "0 0.5 0.5 0.2 0.2\r\n"          // 1 ok (CRLF)
          "1 0.5 0.5 0.2\n"                // 2 four columns
          "2 0.5 abc 0.2 0.2\n"            // 3 not a number
          "\n"                             // 4 blank: ignored silently
          "1 -0.1 0.5 0.2 0.2\n"           // 5 negative
          "1 0.5 1.5 0.2 0.2\n"            // 6 > 1
          "3 0.5 0.5 0.2 0.2\n"            // 7 class >= nc (nc = 3)
          "1.5 0.5 0.5 0.2 0.2\n"          // 8 non-integer class
          "2 0.25 0.75 0.1 0.3\n"          // 9 ok
          "0 0.5 0.5 0.2 0.2\n");          // 10 duplicate of line 1
    image("zero.jpg", {});
    image("tiny.png", encode(".png", test_picture(8, 30)));
    image("png_content.jpg", encode(".png", pic));
    label("png_content.txt", "1 0.5 0.5 0.5 0.5\n");
    const Bytes jpeg = encode(".jpg", pic);
    image("truncated.jpg", Bytes(jpeg.begin(), jpeg.end() - 2));
    label("truncated.txt", "2 0.5 0.5 0.5 0.5\n");
    cv::Mat gray, rgba, deep;
    cv::cvtColor(pic, gray, cv::COLOR_BGR2GRAY);
    cv::cvtColor(pic, rgba, cv::COLOR_BGR2BGRA);
    pic.convertTo(deep, CV_16UC3, 257.0);
    image("gray.png", encode(".png", gray));
    image("rgba.PNG", encode(".png", rgba));
    image("deep16.png", encode(".png", deep));
    image("rotated.jpg", test::with_exif(jpeg, 6));  // stored 64x48, displayed 48x64
    label("rotated.txt", "0 0.5 0.5 0.1 0.1\n");
    image("empty_label.jpg", jpeg);
    label("empty_label.txt", "");
    image("polygon.jpg", jpeg);
    label("polygon.txt", "1 0.1 0.2 0.5 0.1 0.3 0.6 0.2 0.4\n2 0.6 0.6 0.8 0.6 0.8 0.9\n");
    image("sub/nested.jpg", jpeg);
    label("sub/nested.txt", "2 0.5 0.5 1 1\n");
    image(".hidden.jpg", jpeg);
    image("notes.txt", {'h', 'i'});
    label("orphan.txt", "0 0.5 0.5 0.1 0.1\n");
  }
  void image(const std::string& name, const Bytes& bytes) { test::write_bytes(images + "/" + name, bytes); }
  void label(const std::string& name, const std::string& text) { std::ofstream(labels + "/" + name) << text; }
};

TEST_F(BrokenDataset, SkipsBadLinesAndCorruptImagesWithWarnings) {
  const DatasetIndex index = build_index({images}, 3);
  for (const std::string& w : index.warnings) std::cout << "  warning: " << w << "\n";
  const IndexStats& s = index.stats;
  // 12 image files are listed (hidden and .txt skipped); zero.jpg and tiny.png are dropped.
  EXPECT_EQ(s.corrupt_images, 2u);
  EXPECT_EQ(s.images, 10u);
  EXPECT_EQ(index.records.size(), 10u);
  EXPECT_EQ(s.labelled, 6u);  // good, png_content, truncated, rotated, polygon, nested
  EXPECT_EQ(s.bad_label_lines, 6u);
  EXPECT_EQ(s.duplicate_labels, 1u);
  EXPECT_EQ(s.orphan_label_files, 1u);
  EXPECT_EQ(s.backgrounds, s.images - s.labelled);
  EXPECT_EQ(s.instances, 2u + 1 + 1 + 1 + 2 + 1);

  for (const char* line : {"good.txt:2:", "good.txt:3:", "good.txt:5:", "good.txt:6:", "good.txt:7:", "good.txt:8:"})
    EXPECT_TRUE(any_warning_contains(index, line)) << line;
  EXPECT_FALSE(any_warning_contains(index, "good.txt:4:"));
  EXPECT_TRUE(any_warning_contains(index, "good.txt: 1 duplicate"));
  EXPECT_TRUE(any_warning_contains(index, "zero.jpg"));
  EXPECT_TRUE(any_warning_contains(index, "tiny.png"));
  EXPECT_TRUE(any_warning_contains(index, "truncated.jpg: JPEG has no end marker"));
  EXPECT_TRUE(any_warning_contains(index, "orphan.txt"));

  // Duplicates removed; the rest comes sorted like np.unique.
  const ImageRecord* good = find_record(index, "good.jpg");
  ASSERT_NE(good, nullptr);
  ASSERT_EQ(good->labels.size(), 2u);
  EXPECT_EQ(good->labels[0].cls, 0.0f);
  EXPECT_EQ(good->labels[1].cls, 2.0f);
  EXPECT_EQ(good->labels[1].h, 0.3f);

  const ImageRecord* rotated = find_record(index, "rotated.jpg");
  ASSERT_NE(rotated, nullptr);
  EXPECT_EQ(rotated->width, 48);
  EXPECT_EQ(rotated->height, 64);
  for (const char* name : {"gray.png", "rgba.PNG", "deep16.png", "png_content.jpg", "truncated.jpg"}) {
    const ImageRecord* r = find_record(index, name);
    ASSERT_NE(r, nullptr) << name;
    EXPECT_EQ(r->width, 64) << name;
    EXPECT_EQ(r->height, 48) << name;
  }
  EXPECT_TRUE(find_record(index, "gray.png")->label_path.empty());
  const ImageRecord* empty = find_record(index, "empty_label.jpg");
  ASSERT_NE(empty, nullptr);
  EXPECT_TRUE(empty->labels.empty());
  EXPECT_EQ(empty->label_path, labels + "/empty_label.txt");
  EXPECT_EQ(find_record(index, "nested.jpg")->label_path, labels + "/sub/nested.txt");

  // Polygons become their bounding boxes (float32 xyxy -> xywh).
  const ImageRecord* polygon = find_record(index, "polygon.jpg");
  ASSERT_NE(polygon, nullptr);
  ASSERT_EQ(polygon->labels.size(), 2u);
  const Label& p = polygon->labels[0];
  EXPECT_EQ(p.cls, 1.0f);
  EXPECT_EQ(p.x, (0.1f + 0.5f) / 2.0f);
  EXPECT_EQ(p.y, (0.1f + 0.6f) / 2.0f);
  EXPECT_EQ(p.w, 0.5f - 0.1f);
  EXPECT_EQ(p.h, 0.6f - 0.1f);
  EXPECT_EQ(polygon->labels[1].w, 0.8f - 0.6f);
}

TEST_F(BrokenDataset, CacheIsWrittenBesideLabelsReusedAndInvalidated) {
  const DatasetIndex first = build_index({images}, 3);
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.cache_path, labels + ".kestrel.cache");
  EXPECT_TRUE(fs::exists(first.cache_path));

  const DatasetIndex second = build_index({images}, 3);
  EXPECT_TRUE(second.from_cache);
  EXPECT_EQ(second.warnings, first.warnings);
  EXPECT_EQ(second.stats.instances, first.stats.instances);
  EXPECT_EQ(second.stats.bad_label_lines, first.stats.bad_label_lines);

  label("empty_label.txt", "1 0.5 0.5 0.5 0.5\n");  // a change in one label file
  const DatasetIndex third = build_index({images}, 3);
  EXPECT_FALSE(third.from_cache);
  EXPECT_EQ(third.stats.instances, first.stats.instances + 1);
  EXPECT_TRUE(build_index({images}, 3).from_cache);

  image("new.jpg", encode(".jpg", test_picture(20, 20)));  // a new image
  const DatasetIndex fourth = build_index({images}, 3);
  EXPECT_FALSE(fourth.from_cache);
  EXPECT_EQ(fourth.stats.images, first.stats.images + 1);

  std::ofstream(fourth.cache_path, std::ios::binary | std::ios::app) << "junk";  // a damaged cache is rebuilt
  EXPECT_FALSE(build_index({images}, 3).from_cache);
}

TEST_F(BrokenDataset, ListFilesAndSingleClass) {
  const std::string list = root + "/train.txt";
  std::ofstream(list) << "./images/train/good.jpg\n"
                      << "images/train/rotated.jpg\r\n"
                      << images + "/sub/nested.jpg\n"
                      << "\n";
  const DatasetIndex index = build_index({list}, 3);
  ASSERT_EQ(index.records.size(), 3u);
  EXPECT_EQ(index.records[0].image_path, root + "/images/train/good.jpg");
  EXPECT_EQ(index.records[1].image_path, root + "/images/train/rotated.jpg");
  EXPECT_EQ(index.records[2].image_path, images + "/sub/nested.jpg");

  const DatasetIndex single = build_index({images}, 1, /*single_cls=*/true);
  for (const ImageRecord& r : single.records)
    for (const Label& l : r.labels) EXPECT_EQ(l.cls, 0.0f);
  EXPECT_EQ(single.stats.bad_label_lines, 5u);  // class 3 is no longer out of range
  EXPECT_EQ(single.stats.duplicate_labels, 1u);
  EXPECT_EQ(find_record(single, "good.jpg")->labels.size(), 3u);
}

TEST_F(BrokenDataset, MissingSourcesAndEmptyFoldersThrow) {
  EXPECT_THROW(build_index({root + "/nope"}, 3), std::runtime_error);
  fs::create_directories(root + "/images/empty");
  EXPECT_THROW(build_index({root + "/images/empty"}, 3), std::runtime_error);
}

}  // namespace
}  // namespace kestrel
