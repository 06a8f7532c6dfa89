// Journeys: each command run as a user runs it (the real `kestrel` binary), on small generated
// datasets of 1, 3 and 80 classes laid out in the ways YOLOv5 accepts: from scratch, from
// yolov5n.pt, from a Kestrel checkpoint of another class count; then val, detect, Ctrl-C and
// --resume, and fine-tuning again on other data. Each asserts the step succeeds, prints what
// train.py prints (nc override, transfer count) and gives sane outputs (class ids < nc).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli/journey_support.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace kestrel::test {
namespace {

class Journey : public ::testing::Test {
 protected:
  void SetUp() override { root_ = temp_dir("journey"); }

  std::string dataset(const std::string& name, DatasetSpec spec) { return write_dataset(root_ + "/" + name, spec); }

  // A short run (tiny images, one loader thread, one epoch unless `extra` says otherwise) saved to runs/<name>.
  CommandResult train(const std::string& data, const std::string& name, std::vector<std::string> extra,
                      const std::function<bool(const std::string&)>& signal_when = {}) {
    if (std::find(extra.begin(), extra.end(), "--epochs") == extra.end()) extra.insert(extra.end(), {"--epochs", "1"});
    std::vector<std::string> args = {"train", "--data", data, "--img", "64", "--workers", "1", "--no-progress", "--noplots",
                                     "--project", runs(), "--name", name, "--exist-ok"};
    if (std::find(extra.begin(), extra.end(), "--batch-size") == extra.end()) extra.insert(extra.end(), {"--batch", "4"});
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kestrel(args, root_, signal_when);
  }
  std::string runs() const { return root_ + "/runs"; }
  std::string best(const std::string& name) const { return runs() + "/" + name + "/weights/best.pt"; }

  // detect --save-txt on a dataset's val images at a threshold low enough for an untrained model;
  // returns the class ids of every saved detection.
  std::vector<int> detect_classes(const std::string& weights, const std::string& data_dir, const std::string& name) {
    const CommandResult r = run_kestrel({"detect", "--weights", weights, "--source", data_dir + "/images/val", "--img", "64",
                                         "--conf-thres", "0.00001", "--save-txt", "--nosave", "--project",
                                         runs() + "/detect", "--name", name, "--exist-ok"},
                                        root_);
    EXPECT_EQ(r.exit_code, 0) << r.output;
    std::vector<int> classes;
    const std::string labels = runs() + "/detect/" + name + "/labels";
    if (!fs::exists(labels)) return classes;
    for (const auto& f : fs::directory_iterator(labels))
      for (const std::string& line : read_lines(f.path().string())) classes.push_back(std::stoi(line));
    return classes;
  }

  // prune --ratio 0.3 at --img 64, measured on `data`; the result in runs()/prune/<name>/weights/pruned.pt.
  CommandResult prune(const std::string& weights, const std::string& data, const std::string& name) {
    return run_kestrel({"prune", "--weights", weights, "--ratio", "0.3", "--data", data, "--img", "64", "--batch", "4", "--amp",
                        "off", "--workers", "1", "--project", runs() + "/prune", "--name", name, "--exist-ok"},
                       root_);
  }

  CommandResult val(const std::string& weights, const std::string& data, std::vector<std::string> extra = {}) {
    std::vector<std::string> args = {"val", "--weights", weights, "--data", data, "--img", "64", "--workers", "1", "--no-progress"};
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kestrel(args, root_);
  }

  std::string root_;
};

void expect_classes_below(const std::vector<int>& classes, int nc) {
  EXPECT_FALSE(classes.empty()) << "detect saved no detections";
  for (int c : classes) {
    EXPECT_GE(c, 0);
    EXPECT_LT(c, nc);
  }
}

// A message meant for a person: one "kestrel: error:" line, no C++ backtrace, a non-zero exit.
void expect_clear_error(const CommandResult& r, const std::string& says) {
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("kestrel: error: ")) << r.output;
  EXPECT_TRUE(r.has(says)) << r.output;
  EXPECT_FALSE(r.has("Exception raised from")) << r.output;
  EXPECT_FALSE(r.has("frame #")) << r.output;
}

TEST_F(Journey, ScratchOnThreeClassesThenValDetectAndFineTuneOnOneClass) {
  const std::string three = dataset("three", {.nc = 3, .names = NamesStyle::map});
  const std::string one = dataset("one", {.nc = 1, .names = NamesStyle::list, .seed = 2});

  const CommandResult scratch = train(three, "scratch3", {"--cfg", "yolov5n.yaml", "--weights", ""});
  ASSERT_EQ(scratch.exit_code, 0) << scratch.output;
  EXPECT_TRUE(scratch.has("Overriding model.yaml nc=80 with nc=3")) << scratch.output;
  EXPECT_FALSE(scratch.has("Transferred")) << scratch.output;

  const CommandResult v = val(best("scratch3"), three);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_TRUE(v.has("kind2")) << v.output;  // per-class rows carry the data's names
  expect_classes_below(detect_classes(best("scratch3"), root_ + "/three", "scratch3"), 3);

  // A Kestrel checkpoint of 3 classes fine-tuned on 1-class data: all but the Detect convolutions.
  const CommandResult tuned = train(one, "tuned1", {"--weights", best("scratch3")});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_TRUE(tuned.has("Overriding model.yaml nc=3 with nc=1")) << tuned.output;
  EXPECT_TRUE(tuned.has("Transferred 343/349 items from " + best("scratch3"))) << tuned.output;
  EXPECT_EQ(val(best("tuned1"), one).exit_code, 0);
  expect_classes_below(detect_classes(best("tuned1"), root_ + "/one", "tuned1"), 1);

  // The wrong pairing is named, not crashed on.
  expect_clear_error(val(best("tuned1"), three), "(1 classes) was trained on other data");

  // The trained model leaves Kestrel as ONNX, at a non-square size, read back by OpenCV dnn.
  const CommandResult exported = run_kestrel({"export", "--weights", best("scratch3"), "--include", "onnx", "--imgsz", "64", "96"}, root_);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_TRUE(exported.has("output shape (1, 378, 8)")) << exported.output;  // 3 anchors x (8x12 + 4x6 + 2x3) cells
  EXPECT_TRUE(exported.has("dnn reads it")) << exported.output;
  EXPECT_TRUE(fs::exists(runs() + "/scratch3/weights/best.onnx"));
  expect_clear_error(run_kestrel({"export", "--weights", best("scratch3"), "--include", "tflite"}, root_), "--include tflite");
}

// YOLOv8 and YOLO11 as a user of Ultralytics runs them: Ultralytics' recipe printed (optimizer auto,
// the box/cls/dfl loss columns, its results.csv), val and detect with classes in range, a fine-tune
// onto another class count, Ctrl-C and --resume, ONNX in Ultralytics' layout; and prune, not built
// for them yet, says so.
TEST_F(Journey, Yolov8nAndYolo11nOnFiveAndTwoClasses) {
  const std::string five = dataset("five", {.nc = 5, .names = NamesStyle::map});
  const std::string two = dataset("two", {.nc = 2, .names = NamesStyle::list, .seed = 3});

  const CommandResult v8 = train(five, "v8", {"--cfg", "yolov8n.yaml"});
  ASSERT_EQ(v8.exit_code, 0) << v8.output;
  EXPECT_TRUE(v8.has("Overriding model.yaml nc=80 with nc=5")) << v8.output;
  EXPECT_TRUE(v8.has("YOLOv8n summary: ")) << v8.output;
  EXPECT_TRUE(v8.has("optimizer: 'auto' chose AdamW(lr=0.001111, momentum=0.9) for 1 iterations")) << v8.output;
  EXPECT_TRUE(v8.has("box_loss   cls_loss   dfl_loss")) << v8.output;
  EXPECT_FALSE(v8.has("AutoAnchor")) << v8.output;
  const std::vector<std::string> csv = read_lines(runs() + "/v8/results.csv");
  ASSERT_EQ(csv.size(), 2u);
  EXPECT_EQ(csv[0].rfind("epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),", 0), 0u) << csv[0];
  EXPECT_EQ(csv[1].substr(0, 2), "1,");

  const CommandResult v = val(best("v8"), five);
  EXPECT_EQ(v.exit_code, 0) << v.output;
  EXPECT_TRUE(v.has("                   all          4")) << v.output;
  expect_classes_below(detect_classes(best("v8"), root_ + "/five", "v8"), 5);

  // Onto 2 classes: all but the class branches' last convolutions (one per level) carry over.
  const CommandResult tuned = train(two, "v8two", {"--weights", best("v8")});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_TRUE(tuned.has("Overriding model.yaml nc=5 with nc=2")) << tuned.output;
  EXPECT_TRUE(tuned.has("Transferred 349/355 items from " + best("v8"))) << tuned.output;  // as Ultralytics counts
  expect_classes_below(detect_classes(best("v8two"), root_ + "/two", "v8two"), 2);

  const CommandResult first = train(two, "v11", {"--cfg", "yolo11n.yaml", "--epochs", "3"},
                                    [](const std::string& line) { return line.rfind("epoch 0:", 0) == 0; });
  EXPECT_EQ(first.exit_code, 130) << first.output;
  const std::string last = runs() + "/v11/weights/last.pt";
  ASSERT_TRUE(fs::exists(last)) << first.output;
  const CommandResult resumed = run_kestrel({"train", "--resume", last, "--no-progress"}, root_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(resumed.has("Resuming training from " + last)) << resumed.output;
  const std::vector<std::string> rows = read_lines(runs() + "/v11/results.csv");
  ASSERT_EQ(rows.size(), 4u);  // header + epochs 1, 2, 3
  EXPECT_EQ(rows[3].substr(0, 2), "3,");
  expect_classes_below(detect_classes(best("v11"), root_ + "/two", "v11"), 2);

  const CommandResult exported = run_kestrel({"export", "--weights", best("v11"), "--include", "onnx", "--imgsz", "64", "96"}, root_);
  ASSERT_EQ(exported.exit_code, 0) << exported.output;
  EXPECT_TRUE(exported.has("output shape (1, 6, 126)")) << exported.output;  // 4 + 2 classes x (8x12 + 4x6 + 2x3) cells
  EXPECT_TRUE(exported.has("dnn reads it")) << exported.output;

  // Pruned as a YOLOv5 model is (C3k2 halves apart, C2PSA, the head's branches), exported with its
  // cut widths, then sparsity-trained onto 5 classes.
  const CommandResult pruned = prune(best("v11"), two, "v11");
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  EXPECT_TRUE(pruned.has("after: ")) << pruned.output;
  const std::string pt = runs() + "/prune/v11/weights/pruned.pt";
  const CommandResult pruned_onnx = run_kestrel({"export", "--weights", pt, "--imgsz", "64"}, root_);
  EXPECT_TRUE(pruned_onnx.has("dnn reads it")) << pruned_onnx.output;
  const CommandResult sparse = train(five, "v11five", {"--weights", pt, "--sparsity", "0.001"});
  ASSERT_EQ(sparse.exit_code, 0) << sparse.output;
  EXPECT_TRUE(sparse.has("Overriding model.yaml nc=2 with nc=5")) << sparse.output;
  EXPECT_TRUE(sparse.has("BN sparsity: 0.001 x sign(gamma)")) << sparse.output;
}

// profile and tune run Ultralytics' models through the same trainer: the family's loss columns, its
// optimizer choice for the epochs the user plans (not the step budget), a verdict, a ladder, a final command.
TEST_F(Journey, ProfileYolov8nAndTuneYolo11n) {
  const std::string two = dataset("two", {.nc = 2, .train_images = 16});
  const CommandResult profiled = run_kestrel({"profile", "--data", two, "--cfg", "yolov8n.yaml", "--img", "64", "--batch", "4",
                                              "--workers", "1", "--steps", "4", "--epochs", "50", "--no-progress", "--project",
                                              runs() + "/profile", "--name", "v8", "--exist-ok"},
                                             root_);
  ASSERT_EQ(profiled.exit_code, 0) << profiled.output;
  EXPECT_TRUE(profiled.has("box_loss   cls_loss   dfl_loss")) << profiled.output;
  EXPECT_TRUE(profiled.has("chose AdamW(lr=0.001667, momentum=0.9) for 50 iterations")) << profiled.output;  // 1 x 50 epochs
  EXPECT_TRUE(profiled.has("Verdict: ")) << profiled.output;
  EXPECT_TRUE(fs::exists(runs() + "/profile/v8/report.json")) << profiled.output;

  const CommandResult tuned = run_kestrel({"tune", "--data", two, "--cfg", "yolo11n.yaml", "--img", "64", "--batch", "4", "--cache",
                                           "none", "--workers", "1", "--amp", "off", "--steps", "3", "--budget", "5m",
                                           "--project", runs() + "/tune", "--name", "v11", "--exist-ok"},
                                          root_);
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_TRUE(tuned.has("Final command")) << tuned.output;
  EXPECT_TRUE(tuned.has("kestrel train --data " + two + " --cfg yolo11n.yaml --img 64")) << tuned.output;
  EXPECT_TRUE(fs::exists(runs() + "/tune/v11/report.json")) << tuned.output;
}

TEST_F(Journey, Yolov5nOntoOneThreeAndEightyClasses) {
  KESTREL_REQUIRE_SHARED(weights, "weights/yolov5n.pt");
  const std::string one = dataset("one", {.nc = 1});
  const std::string three = dataset("three", {.nc = 3, .names = NamesStyle::map});
  const std::string eighty = dataset("eighty", {.nc = 80, .names = NamesStyle::nc_only, .train_images = 12});

  const CommandResult r1 = train(one, "pt1", {"--weights", weights});
  ASSERT_EQ(r1.exit_code, 0) << r1.output;
  EXPECT_TRUE(r1.has("Overriding model.yaml nc=80 with nc=1")) << r1.output;
  EXPECT_TRUE(r1.has("Transferred 343/349 items from " + weights)) << r1.output;

  const CommandResult r3 = train(three, "pt3", {"--weights", weights});
  ASSERT_EQ(r3.exit_code, 0) << r3.output;
  EXPECT_TRUE(r3.has("Overriding model.yaml nc=80 with nc=3")) << r3.output;
  EXPECT_TRUE(r3.has("Transferred 343/349 items from " + weights)) << r3.output;
  expect_classes_below(detect_classes(best("pt3"), root_ + "/three", "pt3"), 3);

  // --cfg brings its own anchors, so train.py leaves the checkpoint's out too.
  const CommandResult cfg3 = train(three, "pt3cfg", {"--weights", weights, "--cfg", "yolov5n.yaml"});
  ASSERT_EQ(cfg3.exit_code, 0) << cfg3.output;
  EXPECT_TRUE(cfg3.has("Transferred 342/349 items from " + weights)) << cfg3.output;

  const CommandResult r80 = train(eighty, "pt80", {"--weights", weights});
  ASSERT_EQ(r80.exit_code, 0) << r80.output;
  EXPECT_FALSE(r80.has("Overriding model.yaml")) << r80.output;
  EXPECT_TRUE(r80.has("Transferred 349/349 items from " + weights)) << r80.output;
  expect_classes_below(detect_classes(best("pt80"), root_ + "/eighty", "pt80"), 80);

  // The 3-class fine-tune goes on to other data again: 80 classes from a 3-class checkpoint.
  const CommandResult again = train(eighty, "again80", {"--weights", best("pt3")});
  ASSERT_EQ(again.exit_code, 0) << again.output;
  EXPECT_TRUE(again.has("Overriding model.yaml nc=3 with nc=80")) << again.output;
  EXPECT_TRUE(again.has("Transferred 343/349 items from " + best("pt3"))) << again.output;
}

TEST_F(Journey, InterruptedThreeClassRunResumesWithItsClasses) {
  const std::string three = dataset("three", {.nc = 3, .names = NamesStyle::map});
  const CommandResult first = train(three, "resume3", {"--cfg", "yolov5n.yaml", "--epochs", "3"},
                                    [](const std::string& line) { return line.rfind("epoch 0:", 0) == 0; });
  EXPECT_EQ(first.exit_code, 130) << first.output;  // as a shell reports Ctrl-C
  EXPECT_TRUE(first.has("Interrupted: saved")) << first.output;
  const std::string last = runs() + "/resume3/weights/last.pt";
  ASSERT_TRUE(fs::exists(last)) << first.output;

  const CommandResult resumed = run_kestrel({"train", "--resume", last, "--no-progress"}, root_);
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(resumed.has("Resuming training from " + last)) << resumed.output;
  EXPECT_FALSE(resumed.has("Overriding model.yaml")) << resumed.output;  // the checkpoint is 3-class already
  EXPECT_EQ(read_lines(runs() + "/resume3/results.csv").size(), 4u);   // header + epochs 0, 1, 2
  expect_classes_below(detect_classes(best("resume3"), root_ + "/three", "resume3"), 3);
}

TEST_F(Journey, ListFilesNoLabelsAndSingleClass) {
  const std::string listed = dataset("listed", {.nc = 80, .names = NamesStyle::list, .layout = Layout::list_file});
  const CommandResult l = train(listed, "listed", {"--cfg", "yolov5n.yaml"});
  ASSERT_EQ(l.exit_code, 0) << l.output;
  EXPECT_FALSE(l.has("Overriding model.yaml")) << l.output;
  EXPECT_TRUE(l.has("train: 8 images")) << l.output;

  // Images alone (all background): trains and validates, nothing to detect against.
  const std::string bare = dataset("bare", {.nc = 2, .layout = Layout::no_labels});
  const CommandResult b = train(bare, "bare", {"--cfg", "yolov5n.yaml"});
  EXPECT_EQ(b.exit_code, 0) << b.output;
  EXPECT_EQ(val(best("bare"), bare).exit_code, 0);

  // --single-cls: one class named 'item'; detections and validation in that one class.
  const std::string three = dataset("three", {.nc = 3});
  const CommandResult s = train(three, "single", {"--cfg", "yolov5n.yaml", "--single-cls"});
  ASSERT_EQ(s.exit_code, 0) << s.output;
  EXPECT_TRUE(s.has("Overriding model.yaml nc=80 with nc=1")) << s.output;
  expect_classes_below(detect_classes(best("single"), root_ + "/three", "single"), 1);
  const CommandResult sv = val(best("single"), three, {"--single-cls"});
  EXPECT_EQ(sv.exit_code, 0) << sv.output;
  EXPECT_TRUE(sv.has("all")) << sv.output;
}

TEST_F(Journey, BadInputsGiveOneClearLine) {
  const std::string three = dataset("three", {.nc = 3});
  expect_clear_error(run_kestrel({"train", "--data", root_ + "/missing.yaml", "--no-progress"}, root_), "missing.yaml");
  expect_clear_error(val(root_ + "/none.pt", three), "none.pt");
  const std::string garbage = root_ + "/garbage.pt";
  std::ofstream(garbage) << "this is not a checkpoint";
  expect_clear_error(run_kestrel({"detect", "--weights", garbage, "--source", root_ + "/three/images/val"}, root_), "garbage.pt");
  expect_clear_error(train(three, "badcfg", {"--cfg", "yolov5q.yaml"}), "yolov5q.yaml");
  expect_clear_error(train(three, "fp16cpu", {"--cfg", "yolov5n.yaml", "--amp", "fp16"}), "needs a CUDA --device");
  expect_clear_error(train(three, "batch0", {"--cfg", "yolov5n.yaml", "--batch-size", "0"}), "-1 for AutoBatch");
}

// The pruning workflow as the README gives it: sparsity training, prune with mAP before and after,
// fine-tune the pruned model, then val, detect and resume it like any other.
TEST_F(Journey, SparsityPruneFineTune) {
  const std::string three = dataset("three", {.nc = 3});
  const CommandResult sparse =
      train(three, "sparse", {"--cfg", "yolov5n.yaml", "--sparsity", "0.01", "--sparsity-target", "0.3", "--epochs", "2"});
  ASSERT_EQ(sparse.exit_code, 0) << sparse.output;
  EXPECT_TRUE(sparse.has("BN sparsity: 0.01 x sign(gamma)")) << sparse.output;
  // Two epochs cannot drive a fresh model's |gamma| (1) to 0: the run says so before and after, and
  // what to change.
  EXPECT_TRUE(sparse.has("100% of the channels the target removes have a larger |gamma| now and would stay live: "
                         "train more epochs, or with --sparsity ")) << sparse.output;
  EXPECT_TRUE(sparse.has("channels `kestrel prune --ratio 0.3 --min-channels 8 --max-layer-cut 0.5 --multiple 8` removes have "
                         "|gamma| < 0.01")) << sparse.output;
  EXPECT_TRUE(sparse.has("this run had 2 epochs of ")) << sparse.output;
  EXPECT_TRUE(sparse.has("train more epochs or with a larger --sparsity")) << sparse.output;
  const std::vector<std::string> csv = read_lines(runs() + "/sparse/results.csv");
  ASSERT_EQ(csv.size(), 3u);
  EXPECT_NE(csv[0].find("bn/gamma_below_0.01"), std::string::npos) << csv[0];

  const CommandResult pruned = prune(best("sparse"), three, "p");
  ASSERT_EQ(pruned.exit_code, 0) << pruned.output;
  EXPECT_TRUE(pruned.has("before: ")) << pruned.output;
  EXPECT_TRUE(pruned.has("after: ")) << pruned.output;
  EXPECT_TRUE(pruned.has("mAP@0.5:0.95")) << pruned.output;
  EXPECT_TRUE(pruned.has("speed-up: inference")) << pruned.output;
  EXPECT_FALSE(pruned.has("WARNING")) << pruned.output;  // the ratio the sparsity run aimed at
  const CommandResult further = run_kestrel({"prune", "--weights", best("sparse"), "--ratio", "0.5", "--cost-weight", "1", "--img", "64",
                                             "--batch", "4", "--amp", "off", "--project", runs() + "/prune", "--name", "p50",
                                             "--exist-ok"},
                                            root_);
  ASSERT_EQ(further.exit_code, 0) << further.output;
  EXPECT_TRUE(further.has("was sparsity-trained for the prune `--ratio 0.3 --min-channels 8 --max-layer-cut 0.5 --multiple 8`; "
                          "this one (`--ratio 0.5 --min-channels 8 --max-layer-cut 0.5 --multiple 8 --cost-weight 1`)"))
      << further.output;
  EXPECT_TRUE(further.has("ranked by |gamma| / cost^1,")) << further.output;
  const std::string pt = runs() + "/prune/p/weights/pruned.pt";
  ASSERT_TRUE(fs::exists(pt)) << pruned.output;

  // The step benchmark times the pruned architecture, not the yaml's: its summary counts what prune's did.
  std::smatch after;
  ASSERT_TRUE(std::regex_search(pruned.output, after, std::regex(R"(after: +\d+ layers, +(\d+) parameters)"))) << pruned.output;
  const CommandResult timed = run_kestrel({"bench", "step", "--weights", pt, "--img", "64", "--batch", "2", "--amp", "off",
                                           "--steps", "1", "--warmup", "0"},
                                          root_);
  ASSERT_EQ(timed.exit_code, 0) << timed.output;
  EXPECT_TRUE(timed.has(" " + after[1].str() + " parameters")) << timed.output;

  const CommandResult exported = run_kestrel({"export", "--weights", pt, "--imgsz", "64"}, root_);
  EXPECT_EQ(exported.exit_code, 0) << exported.output;  // the cut channel counts export as they are
  EXPECT_TRUE(fs::exists(runs() + "/prune/p/weights/pruned.onnx")) << exported.output;

  const CommandResult tuned = train(three, "tuned", {"--weights", pt, "--epochs", "2"});
  ASSERT_EQ(tuned.exit_code, 0) << tuned.output;
  EXPECT_TRUE(tuned.has("Transferred 349/349 items")) << tuned.output;
  const CommandResult v = val(best("tuned"), three);
  ASSERT_EQ(v.exit_code, 0) << v.output;
  expect_classes_below(detect_classes(best("tuned"), root_ + "/three", "pruned"), 3);
  const CommandResult more = run_kestrel({"train", "--weights", best("tuned"), "--data", dataset("one", {.nc = 1}), "--img", "64",
                                          "--batch", "4", "--epochs", "1", "--workers", "1", "--no-progress", "--noplots",
                                          "--project", runs(), "--name", "one", "--exist-ok"},
                                         root_);
  ASSERT_EQ(more.exit_code, 0) << more.output;  // a pruned model fine-tunes on data of another class count
  EXPECT_TRUE(more.has("Overriding model.yaml nc=3 with nc=1")) << more.output;
}

// The precision and batch levers as a user types them: bf16 training, --half validation on a CPU,
// AutoBatch, and a run whose learning rate makes it diverge, which stops with its triage.
TEST_F(Journey, PrecisionAndBatchLevers) {
  const std::string three = dataset("three", {.nc = 3});
  const CommandResult bf16 = train(three, "bf16", {"--cfg", "yolov5n.yaml", "--amp", "bf16"});
  ASSERT_EQ(bf16.exit_code, 0) << bf16.output;
  EXPECT_TRUE(bf16.has("--amp bf16: bf16 mixed precision")) << bf16.output;
  EXPECT_TRUE(bf16.has("Batch: batch 4, accumulate 16 -> effective batch 64 (nominal 64)")) << bf16.output;
  const CommandResult half = val(best("bf16"), three, {"--half"});
  ASSERT_EQ(half.exit_code, 0) << half.output;
  EXPECT_TRUE(half.has("--half: bf16 autocast inference")) << half.output;
  EXPECT_TRUE(half.has("all")) << half.output;

  const CommandResult autobatch = train(three, "autobatch", {"--cfg", "yolov5n.yaml", "--batch-size", "-1", "--nbs", "16"});
  ASSERT_EQ(autobatch.exit_code, 0) << autobatch.output;
  EXPECT_TRUE(autobatch.has("AutoBatch (")) << autobatch.output;
  EXPECT_TRUE(autobatch.has(" 2: ")) << autobatch.output;  // the curve starts at batch 2
  EXPECT_TRUE(autobatch.has("(60% of the memory available)")) << autobatch.output;

  const std::string hyp = root_ + "/explosive.yaml";
  std::ofstream(hyp) << "lr0: 1.0e+30\nwarmup_epochs: 0\n";
  const CommandResult diverged = train(three, "diverged", {"--cfg", "yolov5n.yaml", "--hyp", hyp, "--amp", "off", "--epochs", "5"});
  expect_clear_error(diverged, "training diverged");
  EXPECT_TRUE(diverged.has("optimizer steps in a row")) << diverged.output;
  EXPECT_TRUE(diverged.has("lr0: 1e+29")) << diverged.output;
  EXPECT_TRUE(diverged.has("kestrel scan --data " + three)) << diverged.output;
}

// kestrel tune as a user starts it, from slow settings on a small 3-class dataset: the ladder, the
// final command and its check, and the run folder's report.json and chart.
TEST_F(Journey, TuneFromSlowSettings) {
  const std::string three = dataset("three", {.nc = 3, .train_images = 16});
  const CommandResult r = run_kestrel({"tune", "--data", three, "--cfg", "yolov5n.yaml", "--img", "128", "--batch", "4", "--cache",
                                       "none", "--workers", "1", "--amp", "off", "--steps", "3", "--budget", "5m", "--project",
                                       runs() + "/tune", "--name", "t", "--exist-ok"},
                                      root_);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(r.has("noise margin")) << r.output;
  EXPECT_TRUE(r.has("Final command")) << r.output;
  EXPECT_TRUE(r.has("final settings:")) << "the prediction's own validated trial of the final settings\n" << r.output;
  EXPECT_TRUE(r.has("kestrel train --data " + three + " --cfg yolov5n.yaml --img 128")) << r.output;
  const std::string dir = runs() + "/tune/t";
  ASSERT_TRUE(fs::exists(dir + "/report.json")) << r.output;
  EXPECT_TRUE(fs::exists(dir + "/ladder.png"));
  std::ifstream in(dir + "/report.json");
  const nlohmann::json report = nlohmann::json::parse(in);
  ASSERT_GE(report["rows"].size(), 6u);  // baseline, cache, workers, prefetch, [bf16 where the CPU has it,] batch, validation
  EXPECT_EQ(report["rows"][0]["lever"], "baseline");
  EXPECT_EQ(report["rows"][1]["lever"], "cache");
  EXPECT_GT(report["measured_epoch_s"].get<double>(), 0);
  EXPECT_GT(report["predicted_epoch_s"].get<double>(), 0);
  bool accuracy_row = false;
  for (const auto& row : report["rows"]) accuracy_row |= row["trades_accuracy"].get<bool>() && !row["kept"].get<bool>();
  EXPECT_TRUE(accuracy_row);  // the smaller input (96) is measured, never chosen
}

}  // namespace
}  // namespace kestrel::test
