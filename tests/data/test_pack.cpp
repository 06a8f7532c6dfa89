// Packs: pack -> unpack is byte-exact; build_index over a pack split gives the folder's records; decoding
// and the loader read packs transparently (identical batches); verify finds a damaged entry; re-encoding
// at a maximum side; coco128 end to end.
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "data/index/dataset_config.h"
#include "data/io/dataset_files.h"
#include "data/io/image_decode.h"
#include "data/index/label_index.h"
#include "data/loader/loader.h"
#include "data/pack/pack.h"
#include "data/pack/pack_reader.h"
#include "image_fixtures.h"
#include "scoped_cache_home.h"
#include "test_support.h"
#include "tree_snapshot.h"
#include "data/pack/pack_check.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;
using test::Bytes;
using test::encode;

Bytes read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return Bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A noisy picture: JPEGs of it are several KB, so their bytes sit on LMDB overflow pages, contiguous.
cv::Mat noisy_picture(int h, int w, int seed) {
  cv::Mat img(h, w, CV_8UC3);
  cv::RNG(seed).fill(img, cv::RNG::UNIFORM, 0, 256);
  cv::GaussianBlur(img, img, {3, 3}, 1);
  return img;
}

// The path inside the dataset root (a folder record) or inside the pack (a pack record).
std::string inner_path(const std::string& path, const std::string& root) {
  std::string pack_file, rel;
  if (split_pack_path(path, &pack_file, &rel)) return rel;
  return path.empty() ? "" : fs::relative(path, root).string();
}

class Packed : public ::testing::Test {
 protected:
  test::ScopedCacheHome cache_home;
  std::string root = test::temp_dir("pack_src");
  std::string work = test::temp_dir("pack_out");
  std::string pack = work + "/small.kpack";

  void SetUp() override {
    auto image = [&](const std::string& rel, const Bytes& bytes) {
      fs::create_directories(fs::path(root + "/images/" + rel).parent_path());
      test::write_bytes(root + "/images/" + rel, bytes);
    };
    auto label = [&](const std::string& rel, const std::string& text) {
      fs::create_directories(fs::path(root + "/labels/" + rel).parent_path());
      std::ofstream(root + "/labels/" + rel, std::ios::binary) << text;
    };
    for (int i = 0; i < 6; ++i) {
      image("train/t" + std::to_string(i) + ".jpg", encode(".jpg", noisy_picture(60 + 20 * i, 160 - 10 * i, i)));
      label("train/t" + std::to_string(i) + ".txt", std::to_string(i % 3) + " 0.5 0.5 0.25 0.4\n1 0.3 0.6 0.2 0.1\n");
    }
    image("train/rotated.jpg", test::with_exif(encode(".jpg", noisy_picture(64, 96, 9)), 6));
    label("train/rotated.txt", "2 0.4 0.5 0.3 0.3\n");
    image("train/sub/flat.png", encode(".png", noisy_picture(40, 50, 10)));
    label("train/sub/flat.txt", "0 0.5 0.5 0.5 0.5\n0 0.5 0.5 0.5 0.5\n9 0.1 0.1 0.1 0.1\n");  // a duplicate, a bad class
    image("train/background.jpg", encode(".jpg", noisy_picture(50, 70, 11)));
    label("train/orphan.txt", "1 0.5 0.5 0.1 0.1\n");
    for (int i = 0; i < 3; ++i) {
      image("val/v" + std::to_string(i) + ".jpg", encode(".jpg", noisy_picture(100, 120, 20 + i)));
      label("val/v" + std::to_string(i) + ".txt", "1 0.5 0.5 0.3 0.3\n");
    }
    std::ofstream(root + "/data.yaml") << "path: .\ntrain: images/train\nval: images/val\nnames: [cat, 'dog: big', bird]\n";
  }

  PackSummary make_pack(int max_side = 0, const std::string& out = "") {
    PackOptions o;
    o.data_yaml = root + "/data.yaml";
    o.out = out.empty() ? pack : out;
    o.max_side = max_side;
    return pack_dataset(o);
  }
};

TEST_F(Packed, UnpackRoundTripsByteExact) {
  const PackSummary s = make_pack();
  EXPECT_EQ(s.images, 12u);
  EXPECT_EQ(s.labels, 11u);
  EXPECT_EQ(s.orphan_labels, 1u);
  EXPECT_EQ(s.splits, (std::vector<std::pair<std::string, size_t>>{{"train", 9}, {"val", 3}}));
  EXPECT_EQ(s.reencoded, 0u);
  EXPECT_GT(s.pack_bytes, s.source_bytes);
  EXPECT_EQ(s.scan.count(FaultKind::label_class_out_of_range), 1u);
  EXPECT_EQ(s.yaml_path, pack + ".yaml");
  EXPECT_FALSE(fs::exists(pack + "-lock"));

  const PackCheck unpacked = unpack_pack(pack, work + "/unpacked");
  EXPECT_TRUE(unpacked.ok());
  EXPECT_EQ(unpacked.files, 24u);
  auto original = test::snapshot_tree(root + "/labels");
  EXPECT_EQ(original.erase("train.kestrel.scan"), 1u);  // the scan's cache beside the labels is not data
  EXPECT_TRUE(test::same_contents(original, test::snapshot_tree(work + "/unpacked/labels")));
  EXPECT_TRUE(test::same_contents(test::snapshot_tree(root + "/images"), test::snapshot_tree(work + "/unpacked/images")));
  EXPECT_THROW(unpack_pack(pack, work + "/unpacked"), std::runtime_error);  // never overwrites

  const auto reader = PackReader::open(pack);
  EXPECT_EQ(reader->split_names(), (std::vector<std::string>{"train", "val"}));
  EXPECT_EQ(reader->split("val"), (std::vector<std::string>{"images/val/v0.jpg", "images/val/v1.jpg", "images/val/v2.jpg"}));
  EXPECT_NE(reader->meta("dataset").find("dog: big"), std::string::npos);
  EXPECT_NE(reader->meta("scan").find("labels/train/sub/flat.txt"), std::string::npos);  // verdicts, relative paths
}

TEST_F(Packed, IndexOverAPackGivesTheFolderRecords) {
  make_pack();
  const DatasetConfig packed = load_dataset_config(pack + ".yaml");
  EXPECT_EQ(packed.names, (std::vector<std::string>{"cat", "dog: big", "bird"}));
  ASSERT_EQ(packed.train, std::vector<std::string>{pack + "#train"});
  for (const auto& [folder, split] : {std::pair{root + "/images/train", packed.train}, {root + "/images/val", packed.val}}) {
    const DatasetIndex a = build_index({folder}, 3), b = build_index(split, 3);
    ASSERT_EQ(a.records.size(), b.records.size());
    for (size_t i = 0; i < a.records.size(); ++i) {
      const ImageRecord &x = a.records[i], &y = b.records[i];
      EXPECT_EQ(inner_path(x.image_path, root), inner_path(y.image_path, root));
      EXPECT_EQ(inner_path(x.label_path, root), inner_path(y.label_path, root));
      EXPECT_EQ(x.width, y.width);
      EXPECT_EQ(x.height, y.height);
      ASSERT_EQ(x.labels.size(), y.labels.size());
      // (a background image has no labels, and memcmp of its null data is undefined, even for 0 bytes)
      if (!x.labels.empty()) EXPECT_EQ(std::memcmp(x.labels.data(), y.labels.data(), x.labels.size() * sizeof(Label)), 0);
    }
    EXPECT_EQ(a.stats.instances, b.stats.instances);
    EXPECT_EQ(a.stats.backgrounds, b.stats.backgrounds);
    EXPECT_EQ(a.stats.bad_label_lines, b.stats.bad_label_lines);
    EXPECT_EQ(a.stats.duplicate_labels, b.stats.duplicate_labels);
    EXPECT_TRUE(build_index(split, 3).from_cache);  // cached in the user folder, nothing written into the pack
    EXPECT_EQ(build_index(split, 3).cache_path.rfind(cache_home.dir(), 0), 0u);
  }
  EXPECT_THROW(list_image_files({pack}), PackError);            // which split?
  EXPECT_THROW(list_image_files({pack + "#test"}), PackError);  // no such split
}

TEST_F(Packed, DecodingAndTheLoaderReadPacksTransparently) {
  make_pack();
  const std::string file = root + "/images/train/rotated.jpg", inside = make_pack_path(pack, "images/train/rotated.jpg");
  cv::Mat diff;
  cv::absdiff(decode_image(file), decode_image(inside), diff);
  EXPECT_EQ(cv::countNonZero(diff.reshape(1)), 0);
  ImageHeader hf, hp;
  ASSERT_TRUE(read_image_header(file, &hf));
  ASSERT_TRUE(read_image_header(inside, &hp));
  EXPECT_EQ(hp.width, 64);  // EXIF orientation 6 applied
  EXPECT_EQ(hp.height, 96);
  EXPECT_EQ(hp.orientation, hf.orientation);
  EXPECT_EQ(file_stamp(inside).size, static_cast<int64_t>(fs::file_size(file)));
  EXPECT_EQ(file_stamp(make_pack_path(pack, "images/train/none.jpg")).size, -1);
  EXPECT_THROW(decode_image(make_pack_path(pack, "images/train/none.jpg")), ImageError);

  LoaderOptions o;
  o.img_size = 64, o.batch_size = 4, o.workers = 2, o.seed = 3;
  Loader from_folder(build_index({root + "/images/train"}, 3).records, o);
  Loader from_pack(build_index({pack + "#train"}, 3).records, o);
  for (int epoch = 0; epoch < 2; ++epoch) {
    from_folder.start_epoch(epoch), from_pack.start_epoch(epoch);
    size_t batches = 0;
    for (;;) {
      const Batch* a = from_folder.next();
      const Batch* b = from_pack.next();
      ASSERT_EQ(a == nullptr, b == nullptr);
      if (!a) break;
      ++batches;
      EXPECT_EQ(a->pixels, b->pixels) << "epoch " << epoch << " batch " << batches;
      EXPECT_EQ(a->labels, b->labels);
    }
    EXPECT_EQ(batches, 3u);
  }
}

TEST_F(Packed, VerifyFindsADamagedEntry) {
  make_pack();
  const PackCheck clean = verify_pack(pack);
  EXPECT_TRUE(clean.ok());
  EXPECT_EQ(clean.files, 24u);

  // Flip one byte in the middle of one image's stored bytes, in place.
  const Bytes image = read_all(root + "/images/train/t2.jpg");
  Bytes file = read_all(pack);
  const auto middle = image.begin() + static_cast<long>(image.size() / 2);
  const auto at = std::search(file.begin(), file.end(), middle - 64, middle + 64);
  ASSERT_NE(at, file.end());
  {
    std::fstream f(pack, std::ios::binary | std::ios::in | std::ios::out);
    f.seekp(at - file.begin() + 64);
    f.put(static_cast<char>(*(at + 64) ^ 0x10));
  }
  const PackCheck damaged = verify_pack(pack);
  ASSERT_EQ(damaged.problems.size(), 1u);
  EXPECT_EQ(damaged.problems[0].rfind("images/train/t2.jpg: ", 0), 0u) << damaged.problems[0];
  const PackCheck unpacked = unpack_pack(pack, work + "/unpacked");
  EXPECT_EQ(unpacked.problems, damaged.problems);
}

TEST_F(Packed, MaxSideReencodesOnlyLargerImages) {
  const PackSummary s = make_pack(/*max_side=*/100);
  EXPECT_EQ(s.reencoded, 9u);  // t0..t5 (long side 160..130) and v0..v2 (120); not rotated (96), flat, background
  const DatasetIndex index = build_index({pack + "#train", pack + "#val"}, 3);
  for (const ImageRecord& r : index.records) {
    EXPECT_LE(std::max(r.width, r.height), 100) << r.image_path;
    std::string pack_file, rel;
    ASSERT_TRUE(split_pack_path(r.image_path, &pack_file, &rel));
    const Bytes original = read_all(root + "/" + rel);
    FileBytes stored;
    std::string error;
    ASSERT_TRUE(read_file_bytes(r.image_path, &stored, &error)) << error;
    const bool same = Bytes(stored.data(), stored.data() + stored.size()) == original;
    int w = 0, h = 0;
    ASSERT_TRUE(read_image_size(root + "/" + rel, &w, &h));
    EXPECT_EQ(same, std::max(w, h) <= 100) << rel;
  }
  EXPECT_TRUE(verify_pack(pack).ok());
}

TEST_F(Packed, UnreadableFilesAreLeftOut) {
  std::ofstream(root + "/val.txt") << "./images/val/v0.jpg\n./images/val/gone.jpg\n";
  std::ofstream(root + "/data.yaml") << "path: .\ntrain: images/train\nval: val.txt\nnames: [cat, dog, bird]\n";
  const PackSummary s = make_pack();
  EXPECT_EQ(s.unreadable, std::vector<std::string>{root + "/images/val/gone.jpg"});
  EXPECT_EQ(s.splits, (std::vector<std::pair<std::string, size_t>>{{"train", 9}, {"val", 1}}));
  EXPECT_EQ(s.images, 10u);
  EXPECT_EQ(s.scan.count(FaultKind::unreadable_image), 1u);
  EXPECT_TRUE(verify_pack(pack).ok());
  EXPECT_EQ(build_index({pack + "#val"}, 3).records.size(), 1u);
}

TEST(PackCoco128, PackVerifyUnpackAndIndex) {
  KESTREL_REQUIRE_SHARED(coco, "data/coco128");
  test::ScopedCacheHome cache_home;
  const std::string work = test::temp_dir("coco_pack"), pack = work + "/coco128.kpack";
  PackOptions o;
  o.data_yaml = coco + "/coco128.yaml";
  o.out = pack;
  const PackSummary s = pack_dataset(o);
  EXPECT_EQ(s.images, 128u);
  EXPECT_EQ(s.labels, 126u);
  EXPECT_EQ(s.orphan_labels, 2u);
  std::cout << "coco128: " << s.source_bytes << " bytes of files -> pack of " << s.pack_bytes << " bytes\n";
  EXPECT_TRUE(verify_pack(pack).ok());
  ASSERT_TRUE(unpack_pack(pack, work + "/unpacked").ok());
  for (const char* folder : {"/images", "/labels"})
    EXPECT_TRUE(test::same_contents(test::snapshot_tree(coco + folder), test::snapshot_tree(work + "/unpacked" + folder)))
        << folder;
  const DatasetIndex index = build_index(load_dataset_config(pack + ".yaml").train, 80);
  EXPECT_EQ(index.stats.images, 128u);
  EXPECT_EQ(index.stats.instances, 929u);
  EXPECT_EQ(index.stats.backgrounds, 2u);
}

}  // namespace
}  // namespace kestrel
