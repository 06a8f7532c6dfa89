// results.csv: YOLOv5's exact header and '%20.5g' rows, Ultralytics' header and '%.6g' rows (strings
// produced by Python's % operator), header written once, rows appended.
#include <fstream>
#include <limits>

#include "report/results_csv.h"
#include "test_support.h"

namespace kestrel {
namespace {

const char* kHeader =
    "               epoch,      train/box_loss,      train/obj_loss,      train/cls_loss,   metrics/precision,"
    "      metrics/recall,     metrics/mAP_0.5,metrics/mAP_0.5:0.95,        val/box_loss,        val/obj_loss,"
    "        val/cls_loss,               x/lr0,               x/lr1,               x/lr2\n";

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

EpochResults sample() {
  EpochResults r;
  r.train_loss = {0.10717, 0.047519, 0.027632};
  r.precision = 0.70001;
  r.recall = 0.61234;
  r.map50 = 0.6789012;
  r.map50_95 = 0.45678901;
  r.val_loss = {0.038913, 0.028462, 0.011839};
  r.lr = {0.0937, 0.0007, 0.0007};
  return r;
}

const char* kSampleRow =
    "                   3,             0.10717,            0.047519,            0.027632,             0.70001,"
    "             0.61234,              0.6789,             0.45679,            0.038913,            0.028462,"
    "            0.011839,              0.0937,              0.0007,              0.0007\n";

TEST(ResultsCsv, HeaderMatchesYolov5) { EXPECT_EQ(ResultsCsv("").header_line(), kHeader); }

TEST(ResultsCsv, RowFormatMatchesPython) {
  EXPECT_EQ(ResultsCsv("").row_line(3, sample()), kSampleRow);
  const double inf = std::numeric_limits<double>::infinity();
  EpochResults odd;
  odd.train_loss = {-std::numeric_limits<double>::quiet_NaN(), 1e-7, 123456.0};
  odd.precision = 0;
  odd.recall = 1;
  odd.map50 = 0.5;
  odd.map50_95 = 0.25;
  odd.val_loss = {inf, -inf, 2.5e-5};
  odd.lr = {0.0, 0.000123456, 99999.5};
  EXPECT_EQ(ResultsCsv("").row_line(123456, odd),
            "          1.2346e+05,                 nan,               1e-07,          1.2346e+05,                   0,"
            "                   1,                 0.5,                0.25,                 inf,                -inf,"
            "             2.5e-05,                   0,          0.00012346,               1e+05\n");
}

// Ultralytics 8.4's save_metrics for a detection run, epoch 3 (its row says 4) at 812.5 s, with the lr
// of each param group in its order (train/optimizer.h: logged_group_lrs).
TEST(ResultsCsv, UltralyticsLayoutMatchesItsTrainer) {
  const ResultsCsv csv("", CsvLayout::ultralytics);
  EXPECT_EQ(csv.header_line(),
            "epoch,time,train/box_loss,train/cls_loss,train/dfl_loss,metrics/precision(B),metrics/recall(B),"
            "metrics/mAP50(B),metrics/mAP50-95(B),val/box_loss,val/cls_loss,val/dfl_loss,lr/pg0,lr/pg1,lr/pg2\n");
  EpochResults r = sample();
  r.seconds = 812.5;
  r.lr = {0.0007, 0.0005, 0.0937};
  EXPECT_EQ(csv.row_line(3, r), "4,812.5,0.10717,0.047519,0.027632,0.70001,0.61234,0.678901,0.456789,0.038913,0.028462,"
                                "0.011839,0.0007,0.0005,0.0937\n");
}

// MuSGD has eight param groups: Ultralytics logs lr/pg0..lr/pg7, sparsity's extra column after them.
TEST(ResultsCsv, OneLrColumnPerParamGroup) {
  const ResultsCsv csv("", CsvLayout::ultralytics);
  EpochResults r = sample();
  r.lr = {0.03, 0.01, 0.03, 0.01, 0.03, 0.01, 0.03, 0.01};
  r.extra = {{"x/extra", 0.5}};
  const std::string header = csv.header_line(r);
  EXPECT_NE(header.find("val/dfl_loss,lr/pg0,lr/pg1,lr/pg2,lr/pg3,lr/pg4,lr/pg5,lr/pg6,lr/pg7,x/extra\n"), std::string::npos)
      << header;
  EXPECT_NE(csv.row_line(0, r).find(",0.011839,0.03,0.01,0.03,0.01,0.03,0.01,0.03,0.01,0.5\n"), std::string::npos);
}

TEST(ResultsCsv, UltralyticsResumeKeepsRowsOfEarlierEpochs) {
  const std::string path = test::temp_dir("csv_u") + "/results.csv";
  const ResultsCsv csv(path, CsvLayout::ultralytics);
  EpochResults r;
  for (int e = 0; e < 4; ++e) csv.append(e, r);  // rows 1..4
  csv.keep_epochs_before(2);                      // resumes at epoch 2: rows 1 and 2 stay
  EXPECT_EQ(read_all(path), csv.header_line() + csv.row_line(0, r) + csv.row_line(1, r));
}

TEST(ResultsCsv, HeaderOnceThenRowsAppended) {
  const std::string path = test::temp_dir("csv") + "/results.csv";
  ResultsCsv csv(path);
  csv.append(3, sample());
  ResultsCsv(path).append(3, sample());  // a resumed run appends to the same file
  std::ifstream in(path);
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(text, std::string(kHeader) + kSampleRow + kSampleRow);
  EXPECT_THROW(ResultsCsv("/nonexistent_dir_kestrel/results.csv").append(0, sample()), std::runtime_error);
}

TEST(ResultsCsv, KeepEpochsBeforeDropsRowsOfTheResumedEpochOn) {
  const std::string path = test::temp_dir("csv") + "/results.csv";
  const ResultsCsv csv(path);
  EpochResults r;
  for (int e = 0; e < 4; ++e) csv.append(e, r);
  csv.keep_epochs_before(2);  // a run killed after epoch 3's row resumes from epoch 2's end
  EXPECT_EQ(read_all(path), ResultsCsv("").header_line() + ResultsCsv("").row_line(0, r) + ResultsCsv("").row_line(1, r));
  csv.keep_epochs_before(5);  // nothing later: unchanged
  EXPECT_EQ(read_all(path), ResultsCsv("").header_line() + ResultsCsv("").row_line(0, r) + ResultsCsv("").row_line(1, r));
  ResultsCsv(path + ".absent").keep_epochs_before(0);  // no file yet: nothing to do
}

}  // namespace
}  // namespace kestrel
