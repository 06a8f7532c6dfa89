// scan_dataset: every fault kind, several times each, reported exactly (kind, file, line) on a synthetic
// dataset and on a broken copy of coco128; the dataset left untouched (by --fix too, writable or not);
// the scan cache; the same verdicts on any thread count; label parsing shared with the index.
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "data/index/dataset_config.h"
#include "data/index/label_index.h"
#include "data/index/label_parse.h"
#include "data/index/scan.h"
#include "data/index/scan_report.h"
#include "image_fixtures.h"
#include "scoped_cache_home.h"
#include "test_support.h"
#include "tree_snapshot.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::encode;
using test::test_picture;

using FaultKey = std::tuple<FaultKind, std::string, size_t>;  // kind, path relative to the root, line

std::vector<FaultKey> fault_keys(const ScanReport& r, const std::string& root) {
  std::vector<FaultKey> keys;
  for (const Fault& f : r.faults) keys.emplace_back(f.kind, fs::relative(f.file, root).string(), f.line);
  std::sort(keys.begin(), keys.end());
  return keys;
}

std::string describe(const std::vector<FaultKey>& keys) {
  std::string s;
  for (const auto& [kind, file, line] : keys)
    s += std::string("  ") + fault_kind_info(kind).name + " " + file + (line ? ":" + std::to_string(line) : "") + "\n";
  return s;
}

// A noisy, blurred picture: its JPEG has enough entropy-coded data to damage in the middle.
cv::Mat busy_picture(int h, int w) {
  cv::Mat img(h, w, CV_8UC3);
  cv::RNG(7).fill(img, cv::RNG::UNIFORM, 0, 256);
  cv::GaussianBlur(img, img, {5, 5}, 2);
  return img;
}

// JPEG damage that keeps the end marker: libjpeg decodes it with a warning.
Bytes zeroed_middle(Bytes jpeg) {
  std::fill(jpeg.begin() + static_cast<long>(jpeg.size() / 2), jpeg.end() - 2, 0);  // "extraneous bytes"
  return jpeg;
}
Bytes stray_marker(Bytes jpeg) {
  const unsigned char rst[] = {0xFF, 0xD3};  // a restart marker where none belongs: "premature end"
  jpeg.insert(jpeg.begin() + static_cast<long>(jpeg.size() / 2), rst, rst + 2);
  return jpeg;
}
Bytes first_half(const Bytes& b) { return Bytes(b.begin(), b.begin() + static_cast<long>(b.size() / 2)); }

void write_text(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path, std::ios::binary) << text;
}
void write_file(const std::string& path, const Bytes& bytes) {
  fs::create_directories(fs::path(path).parent_path());
  test::write_bytes(path, bytes);
}

// Every label line fault twice (nc = 3), with the expected kind per line.
const char* kBadLabelText =
    "0 0.5 0.5 0.2 0.2\n"           // 1 ok
    "1 0.5 0.5 0.2\n"               // 2 columns
    "1 0.5 0.5 0.2 0.2 0.1\n"       // 3 columns (6: not a polygon)
    "2 0.5 abc 0.2 0.2\n"           // 4 not a number
    "x 0.5 0.5 0.2 0.2\r\n"         // 5 not a number (CRLF)
    "3 0.5 0.5 0.2 0.2\n"           // 6 class >= nc
    "-1 0.5 0.5 0.2 0.2\n"          // 7 negative class
    "1.5 0.5 0.5 0.2 0.2\n"         // 8 class not an integer
    "2.25 0.5 0.5 0.2 0.2\n"        // 9 class not an integer
    "1 1.5 0.5 0.2 0.2\n"           // 10 coordinate > 1
    "1 0.5 -0.1 0.2 0.2\n"          // 11 coordinate < 0
    "2 0.5 0.5 0 0.2\n"             // 12 zero width (kept, as YOLOv5)
    "2 0.5 0.5 0.2 -0.3\n"          // 13 negative height
    "0 0.50 0.5 0.2 0.2\n"          // 14 duplicate of 1 (same numbers)
    "\n"                            // 15 blank: fine
    "2 0.5 0.5 0 0.2\n";            // 16 duplicate of 12
const std::vector<std::pair<size_t, FaultKind>> kBadLabelFaults = {
    {2, FaultKind::label_columns},           {3, FaultKind::label_columns},
    {4, FaultKind::label_not_a_number},      {5, FaultKind::label_not_a_number},
    {6, FaultKind::label_class_out_of_range}, {7, FaultKind::label_class_out_of_range},
    {8, FaultKind::label_class_not_integer}, {9, FaultKind::label_class_not_integer},
    {10, FaultKind::label_coordinate_out_of_range}, {11, FaultKind::label_coordinate_out_of_range},
    {12, FaultKind::label_nonpositive_size}, {13, FaultKind::label_nonpositive_size},
    {14, FaultKind::label_duplicate_line},   {16, FaultKind::label_duplicate_line}};

TEST(LabelParse, EveryLineFaultKindWithItsLine) {
  const ParsedLabels p = parse_label_text(kBadLabelText, 3, false);
  ASSERT_EQ(p.faults.size(), kBadLabelFaults.size());
  for (size_t i = 0; i < p.faults.size(); ++i) {
    EXPECT_EQ(p.faults[i].line, kBadLabelFaults[i].first) << p.faults[i].detail;
    EXPECT_EQ(p.faults[i].kind, kBadLabelFaults[i].second) << p.faults[i].detail;
    EXPECT_EQ(p.faults[i].skipped, p.faults[i].line != 12) << p.faults[i].detail;  // zero size is kept
  }
  EXPECT_EQ(p.faults.back().detail, "same row as line 12");
  EXPECT_EQ(p.skipped_lines, 11u);
  EXPECT_EQ(p.duplicates, 2u);
  ASSERT_EQ(p.labels.size(), 2u);  // lines 1 and 12, sorted as np.unique returns them
  EXPECT_EQ(p.labels[0].cls, 0.0f);
  EXPECT_EQ(p.labels[1].w, 0.0f);
  EXPECT_TRUE(parse_label_text("nan 0.5 0.5 0.1 0.1\n0 inf 0.5 0.1 0.1\n", 3, false).labels.empty());
}

// A small dataset with each image fault two or three times, a label file with each line fault twice,
// labels without images, backgrounds, a val list naming missing files and an image shared with train.
class SyntheticBroken : public ::testing::Test {
 protected:
  test::ScopedCacheHome cache_home;
  std::string root = test::temp_dir("scan");
  std::string yaml = root + "/data.yaml";
  std::vector<FaultKey> expected;
  std::vector<std::string> expected_quarantine;

  void image(const std::string& name, const Bytes& bytes) { write_file(root + "/images/" + name, bytes); }
  void label(const std::string& name, const std::string& text) { write_text(root + "/labels/" + name, text); }
  void expect(FaultKind kind, const std::string& rel, size_t line = 0) {
    expected.emplace_back(kind, rel, line);
    if (fault_kind_info(kind).quarantines_image) expected_quarantine.push_back(root + "/" + rel);
  }

  void SetUp() override {
    const Bytes jpeg = encode(".jpg", busy_picture(120, 160));
    const Bytes png = encode(".png", test_picture(48, 64));
    image("train/good_a.jpg", jpeg);
    label("train/good_a.txt", "0 0.5 0.5 0.2 0.2\n1 0.25 0.25 0.1 0.1\n");
    image("train/good_b.jpg", jpeg);
    label("train/good_b.txt", kBadLabelText);
    for (const auto& [line, kind] : kBadLabelFaults) expect(kind, "labels/train/good_b.txt", line);
    image("train/bg_none.jpg", jpeg);  // no label file: a background, not a fault
    image("train/bg_empty.jpg", jpeg);
    label("train/bg_empty.txt", "");
    image("train/zero_1.jpg", {});
    image("train/zero_2.png", {});
    expect(FaultKind::zero_byte_image, "images/train/zero_1.jpg");
    expect(FaultKind::zero_byte_image, "images/train/zero_2.png");
    image("train/trunc_1.jpg", Bytes(jpeg.begin(), jpeg.end() - 2));
    image("train/trunc_2.jpg", first_half(jpeg));
    image("train/trunc_3.png", first_half(png));
    label("train/trunc_3.txt", "1 0.5 0.5 0.5 0.5\n");  // its labels are still checked: fine
    for (const char* n : {"trunc_1.jpg", "trunc_2.jpg", "trunc_3.png"})
      expect(FaultKind::truncated_image, std::string("images/train/") + n);
    image("train/corrupt_1.jpg", zeroed_middle(jpeg));
    image("train/corrupt_2.jpg", stray_marker(jpeg));
    image("train/corrupt_3.png", Bytes(100, 0x42));
    for (const char* n : {"corrupt_1.jpg", "corrupt_2.jpg", "corrupt_3.png"})
      expect(FaultKind::corrupt_image, std::string("images/train/") + n);
    image("train/tiny_1.png", encode(".png", test_picture(8, 30)));
    image("train/tiny_2.jpg", encode(".jpg", test_picture(6, 6)));
    expect(FaultKind::tiny_image, "images/train/tiny_1.png");
    expect(FaultKind::tiny_image, "images/train/tiny_2.jpg");
    image("train/mismatch_1.jpg", png);
    label("train/mismatch_1.txt", "2 0.5 0.5 0.5 0.5\n");
    image("train/mismatch_2.png", jpeg);
    image("train/mismatch_3.bmp", png);
    for (const char* n : {"mismatch_1.jpg", "mismatch_2.png", "mismatch_3.bmp"})
      expect(FaultKind::wrong_extension, std::string("images/train/") + n);
    label("train/orphan_1.txt", "0 0.5 0.5 0.1 0.1\n");
    label("train/sub/orphan_2.txt", "0 0.5 0.5 0.1 0.1\n");
    expect(FaultKind::label_without_image, "labels/train/orphan_1.txt");
    expect(FaultKind::label_without_image, "labels/train/sub/orphan_2.txt");
    image("val/v1.jpg", jpeg);
    label("val/v1.txt", "1 0.5 0.5 0.5 0.5\n");
    write_text(root + "/val.txt",
               "./images/val/v1.jpg\n./images/val/missing_1.jpg\n./images/val/missing_2.jpg\n./images/train/good_a.jpg\n");
    expect(FaultKind::unreadable_image, "images/val/missing_1.jpg");
    expect(FaultKind::unreadable_image, "images/val/missing_2.jpg");
    write_text(yaml, "path: " + root + "\ntrain: images/train\nval: val.txt\nnames: [a, b, c]\n");
    std::sort(expected.begin(), expected.end());
    std::sort(expected_quarantine.begin(), expected_quarantine.end());
  }

  std::vector<std::string> sources() const {
    const DatasetConfig cfg = load_dataset_config(yaml);
    std::vector<std::string> s = cfg.train;
    s.insert(s.end(), cfg.val.begin(), cfg.val.end());
    return s;
  }
  ScanReport scan(unsigned threads = 0, bool use_cache = true) const {
    ScanOptions o;
    o.nc = 3, o.threads = threads, o.use_cache = use_cache;
    return scan_dataset(sources(), o);
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> splits() const {
    const DatasetConfig cfg = load_dataset_config(yaml);
    return {{"train", cfg.train}, {"val", cfg.val}};
  }
};

TEST_F(SyntheticBroken, ReportsExactlyTheFaults) {
  size_t last_done = 0, calls = 0, total = 0;
  ScanOptions o;
  o.nc = 3;
  o.progress = [&](size_t done, size_t n) {
    EXPECT_GE(done, last_done);
    last_done = done, total = n, ++calls;
  };
  const ScanReport r = scan_dataset(sources(), o);
  std::cout << format_scan_table(r);
  const std::vector<FaultKey> got = fault_keys(r, root);
  EXPECT_EQ(got, expected) << "got:\n" << describe(got) << "expected:\n" << describe(expected);
  EXPECT_EQ(r.quarantined, expected_quarantine);
  EXPECT_FALSE(r.from_cache);
  EXPECT_EQ(r.images, 20u);  // 17 train + v1 and two missing files (good_a is listed twice, scanned once)
  EXPECT_EQ(r.label_files, 6u);
  EXPECT_EQ(r.labelled, 5u);  // good_a, good_b, trunc_3, mismatch_1, v1
  EXPECT_EQ(r.backgrounds, 15u);
  EXPECT_EQ(r.instances, 2u + 2 + 1 + 1 + 1);
  EXPECT_EQ(r.count(FaultKind::label_without_image), 2u);
  EXPECT_EQ(r.count_image_faults(), 12u);
  EXPECT_GE(calls, 1u);
  EXPECT_EQ(last_done, 20u);
  EXPECT_EQ(total, 20u);
  for (const Fault& f : r.faults) EXPECT_FALSE(f.detail.empty()) << f.file;
}

TEST_F(SyntheticBroken, SameVerdictsOnAnyThreadCountAndFromTheCache) {
  const ScanReport one = scan(1, /*use_cache=*/false);
  const ScanReport four = scan(4, /*use_cache=*/false);
  EXPECT_EQ(fault_keys(one, root), expected);
  EXPECT_EQ(fault_keys(four, root), expected);
  EXPECT_TRUE(one.cache_path.empty());

  const ScanReport first = scan();
  EXPECT_FALSE(first.from_cache);
  EXPECT_EQ(first.cache_path, root + "/labels/train.kestrel.scan");  // beside the labels, as the index cache
  const ScanReport cached = scan();
  EXPECT_TRUE(cached.from_cache);
  EXPECT_EQ(fault_keys(cached, root), expected);
  EXPECT_EQ(cached.quarantined, first.quarantined);
  EXPECT_EQ(cached.instances, first.instances);
  for (size_t i = 0; i < first.faults.size(); ++i) EXPECT_EQ(cached.faults[i].detail, first.faults[i].detail);
  ScanReport round_trip;
  ASSERT_TRUE(scan_report_from_json(scan_report_to_json(first), &round_trip));
  EXPECT_EQ(fault_keys(round_trip, root), expected);

  label("train/good_a.txt", "0 0.5 0.5 0.2 0.2\n7 0.5 0.5 0.2 0.2\n");  // one changed label file
  const ScanReport changed = scan();
  EXPECT_FALSE(changed.from_cache);
  EXPECT_EQ(changed.count(FaultKind::label_class_out_of_range), 3u);
  label("train/stray.txt", "0 0.5 0.5 0.1 0.1\n");  // a new label without image: found even from the cache
  const ScanReport stray = scan();
  EXPECT_TRUE(stray.from_cache);
  EXPECT_EQ(stray.count(FaultKind::label_without_image), 3u);
}

TEST_F(SyntheticBroken, UnreadableFilesWhenPermissionsApply) {
  if (::geteuid() == 0) GTEST_SKIP() << "running as root: permission bits do not stop reads";
  fs::permissions(root + "/images/train/good_a.jpg", fs::perms::none);
  fs::permissions(root + "/labels/train/mismatch_1.txt", fs::perms::none);
  const ScanReport r = scan(0, false);
  EXPECT_EQ(r.count(FaultKind::unreadable_image), 3u);
  EXPECT_EQ(r.count(FaultKind::unreadable_label), 1u);
  EXPECT_TRUE(std::binary_search(r.quarantined.begin(), r.quarantined.end(), root + "/images/train/mismatch_1.jpg"));
  fs::permissions(root + "/images/train/good_a.jpg", fs::perms::owner_read | fs::perms::owner_write);
  fs::permissions(root + "/labels/train/mismatch_1.txt", fs::perms::owner_read | fs::perms::owner_write);
}

TEST_F(SyntheticBroken, ScanAndFixChangeNothingInTheDataset) {
  const auto before = test::snapshot_tree(root);
  const ScanReport r = scan();
  const FixLists lists = write_fix_lists(root, splits(), r);
  const auto after = test::snapshot_tree(root);
  for (const auto& [rel, snap] : before) {
    ASSERT_TRUE(after.count(rel)) << rel << " disappeared";
    EXPECT_TRUE(after.at(rel) == snap) << rel << " changed";
  }
  std::vector<std::string> added;
  for (const auto& [rel, snap] : after)
    if (!before.count(rel)) added.push_back(rel);
  EXPECT_EQ(added, (std::vector<std::string>{"kestrel_clean_train.txt", "kestrel_clean_val.txt", "kestrel_quarantine.txt",
                                             "labels/train.kestrel.scan"}));

  // The cleaned lists hold every image without an image-level fault, and train cleanly.
  EXPECT_EQ(lists.folder, root);
  EXPECT_EQ(lists.kept, (std::vector<size_t>{7, 2}));
  std::ifstream val(lists.splits[1].second);
  const std::string val_text((std::istreambuf_iterator<char>(val)), std::istreambuf_iterator<char>());
  EXPECT_EQ(val_text, "./images/train/good_a.jpg\n./images/val/v1.jpg\n");
  const DatasetIndex clean = build_index({lists.splits[0].second}, 3);
  EXPECT_EQ(clean.records.size(), 7u);
  EXPECT_EQ(clean.stats.corrupt_images, 0u);
  std::ifstream quarantine(lists.quarantine);
  size_t lines = 0;
  for (std::string line; std::getline(quarantine, line); ++lines)
    EXPECT_NE(line.find('\t'), std::string::npos) << line;
  EXPECT_EQ(lines, expected_quarantine.size());
}

TEST_F(SyntheticBroken, ReadOnlyDatasetGetsNothingWritten) {
  for (const auto& entry : fs::recursive_directory_iterator(root))  // read-only by mode bits (honoured for root too)
    fs::permissions(entry.path(), fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write,
                    fs::perm_options::remove);
  fs::permissions(root, fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write, fs::perm_options::remove);
  const auto before = test::snapshot_tree(root);
  const ScanReport r = scan();
  const FixLists lists = write_fix_lists(root, splits(), r);
  EXPECT_TRUE(test::snapshot_tree(root) == before);
  EXPECT_EQ(r.cache_path.rfind(cache_home.dir() + "/kestrel/scan/", 0), 0u) << r.cache_path;
  EXPECT_EQ(lists.folder.rfind(cache_home.dir() + "/kestrel/fix/", 0), 0u) << lists.folder;
  std::ifstream val(lists.splits[1].second);
  std::string first;
  std::getline(val, first);
  EXPECT_EQ(first, root + "/images/train/good_a.jpg");  // absolute: the list is not beside the data
  EXPECT_TRUE(scan().from_cache);
  fs::permissions(root, fs::perms::owner_all);
  for (const auto& entry : fs::recursive_directory_iterator(root))
    fs::permissions(entry.path(), fs::perms::owner_write, fs::perm_options::add);
}

// coco128 with each fault injected several times: exactly those are reported (coco128 itself only has its
// two label files without images), and nothing in the folder changes.
TEST(ScanCoco128, BrokenCopyReportsExactlyTheInjectedFaults) {
  KESTREL_REQUIRE_SHARED(coco, "data/coco128");
  test::ScopedCacheHome cache_home;
  const std::string root = test::temp_dir("coco_broken");
  for (const char* folder : {"/images", "/labels"}) {  // a writable copy of a read-only tree
    for (const auto& entry : fs::recursive_directory_iterator(coco + folder)) {
      const fs::path target = root + folder + "/" + fs::relative(entry.path(), coco + folder).string();
      fs::create_directories(entry.is_directory() ? target : target.parent_path());
      if (entry.is_regular_file()) {
        fs::copy_file(entry.path(), target);
        fs::permissions(target, fs::perms::owner_write, fs::perm_options::add);
      }
    }
  }
  const std::string images = root + "/images/train2017", labels = root + "/labels/train2017";
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(images)) files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files.size(), 128u);
  auto read = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  };
  auto rel = [&](const std::string& path) { return fs::relative(path, root).string(); };
  std::vector<FaultKey> expected;
  expected.emplace_back(FaultKind::label_without_image, "labels/train2017/000000000656.txt", 0);
  expected.emplace_back(FaultKind::label_without_image, "labels/train2017/000000000659.txt", 0);

  for (int i : {0, 1}) write_file(files[i], {}), expected.emplace_back(FaultKind::zero_byte_image, rel(files[i]), 0);
  write_file(files[2], first_half(read(files[2])));
  const Bytes cut = read(files[3]);
  write_file(files[3], Bytes(cut.begin(), cut.end() - 2));
  for (int i : {2, 3}) expected.emplace_back(FaultKind::truncated_image, rel(files[i]), 0);
  write_file(files[4], zeroed_middle(read(files[4])));
  write_file(files[5], stray_marker(read(files[5])));
  write_file(files[6], Bytes(64, 0x42));
  for (int i : {4, 5, 6}) expected.emplace_back(FaultKind::corrupt_image, rel(files[i]), 0);
  write_file(images + "/tiny_a.jpg", encode(".jpg", test_picture(9, 200)));
  write_file(images + "/tiny_b.png", encode(".png", test_picture(300, 4)));
  for (const char* n : {"tiny_a.jpg", "tiny_b.png"})
    expected.emplace_back(FaultKind::tiny_image, "images/train2017/" + std::string(n), 0);
  const cv::Mat picture = cv::imread(files[10]);
  write_file(images + "/png_inside_a.jpg", encode(".png", picture));
  write_file(images + "/jpeg_inside_b.png", read(files[11]));
  for (const char* n : {"png_inside_a.jpg", "jpeg_inside_b.png"})
    expected.emplace_back(FaultKind::wrong_extension, "images/train2017/" + std::string(n), 0);
  for (const char* n : {"stray_a.txt", "stray_b.txt"}) {
    write_text(labels + "/" + n, "0 0.5 0.5 0.1 0.1\n");
    expected.emplace_back(FaultKind::label_without_image, "labels/train2017/" + std::string(n), 0);
  }
  // Each line fault twice, appended to two label files (after their own lines).
  for (int i : {20, 21}) {
    const std::string label = label_path_for_image(files[i]);
    std::ifstream in(label);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    ASSERT_FALSE(lines.empty());
    const std::vector<std::pair<std::string, FaultKind>> bad = {
        {"5 0.5 0.5 0.2", FaultKind::label_columns},
        {"5 0.5 0.5 0.2 zero", FaultKind::label_not_a_number},
        {"80 0.5 0.5 0.2 0.2", FaultKind::label_class_out_of_range},
        {"5.5 0.5 0.5 0.2 0.2", FaultKind::label_class_not_integer},
        {"5 0.5 1.2 0.2 0.2", FaultKind::label_coordinate_out_of_range},
        {"5 0.5 0.5 0.0 0.2", FaultKind::label_nonpositive_size},
        {lines[0], FaultKind::label_duplicate_line}};
    std::ifstream last(label, std::ios::binary | std::ios::ate);
    last.seekg(-1, std::ios::end);
    const bool ends_with_newline = last.get() == '\n';
    std::ofstream out(label, std::ios::app);
    if (!ends_with_newline) out << "\n";
    for (size_t k = 0; k < bad.size(); ++k) {
      out << bad[k].first << "\n";
      expected.emplace_back(bad[k].second, rel(label), lines.size() + k + 1);
    }
  }
  // val: a list naming two files that are not there, and a few real ones.
  write_text(root + "/val.txt", "./images/train2017/missing_a.jpg\n./images/train2017/missing_b.jpg\n" +
                                    std::string("./") + rel(files[30]) + "\n");
  for (const char* n : {"missing_a.jpg", "missing_b.jpg"})
    expected.emplace_back(FaultKind::unreadable_image, "images/train2017/" + std::string(n), 0);
  std::sort(expected.begin(), expected.end());

  const auto before = test::snapshot_tree(root);
  ScanOptions o;
  o.nc = 80;
  const ScanReport r = scan_dataset({images, root + "/val.txt"}, o);
  std::cout << format_scan_table(r, 3);
  const std::vector<FaultKey> got = fault_keys(r, root);
  EXPECT_EQ(got, expected) << "got:\n" << describe(got) << "expected:\n" << describe(expected);
  EXPECT_EQ(r.images, 128u + 4 + 2);
  EXPECT_EQ(r.quarantined.size(), 2u + 2 + 3 + 2 + 2);
  const FixLists lists = write_fix_lists(root, {{"train", {images}}, {"val", {root + "/val.txt"}}}, r);
  EXPECT_EQ(lists.kept, (std::vector<size_t>{128 + 4 - 9, 1}));
  const auto after = test::snapshot_tree(root);
  for (const auto& [path, snap] : before) EXPECT_TRUE(after.count(path) && after.at(path) == snap) << path;
  EXPECT_EQ(after.size(), before.size() + 4);  // three lists and the scan cache
}

}  // namespace
}  // namespace kestrel
