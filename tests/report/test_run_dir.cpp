// Run folders: YOLOv5 increment_path numbering (exp, exp2, exp3...), exist_ok, files, weights/.
#include <filesystem>
#include <fstream>

#include "report/run_dir.h"
#include "test_support.h"

namespace kestrel {
namespace {

namespace fs = std::filesystem;

TEST(RunDir, IncrementsExpNames) {
  const std::string project = test::temp_dir("runs") + "/train";
  const RunDir first = make_run_dir(project, "exp", false);
  EXPECT_EQ(first.save_dir, project + "/exp");
  EXPECT_TRUE(fs::is_directory(first.weights_dir));
  EXPECT_EQ(first.weights_dir, project + "/exp/weights");
  EXPECT_EQ(first.last_pt(), project + "/exp/weights/last.pt");
  EXPECT_EQ(first.best_pt(), project + "/exp/weights/best.pt");
  EXPECT_EQ(first.results_csv(), project + "/exp/results.csv");
  EXPECT_EQ(make_run_dir(project, "exp", false).save_dir, project + "/exp2");
  EXPECT_EQ(make_run_dir(project, "exp", false).save_dir, project + "/exp3");
  fs::remove_all(project + "/exp2");
  EXPECT_EQ(make_run_dir(project, "exp", false).save_dir, project + "/exp2");  // first free number
  EXPECT_EQ(make_run_dir(project, "exp", true).save_dir, project + "/exp");   // exist_ok reuses
  EXPECT_EQ(make_run_dir(project, "custom", false).save_dir, project + "/custom");
}

TEST(RunDir, IncrementPathDetails) {
  const std::string dir = test::temp_dir("runs");
  EXPECT_EQ(increment_path(dir + "/new"), dir + "/new");  // absent: unchanged, not created
  EXPECT_FALSE(fs::exists(dir + "/new"));
  EXPECT_EQ(increment_path(dir + "/made", false, "", true), dir + "/made");
  EXPECT_TRUE(fs::is_directory(dir + "/made"));
  EXPECT_EQ(increment_path(dir + "/made", false, "_"), dir + "/made_2");  // separator
  std::ofstream(dir + "/results.txt") << "x";
  EXPECT_EQ(increment_path(dir + "/results.txt"), dir + "/results2.txt");  // number before the suffix
}

}  // namespace
// Class names become folder names (detect's crops/<class>/): none may climb out of the run folder.
TEST(RunDir, DataNamesBecomeOneSafePathComponent) {
  EXPECT_EQ(path_component("person"), "person");
  EXPECT_EQ(path_component("traffic light"), "traffic light");
  EXPECT_EQ(path_component("../../etc/cron.d"), ".._.._etc_cron.d");
  EXPECT_EQ(path_component(".."), "_");
  EXPECT_EQ(path_component("."), "_");
  EXPECT_EQ(path_component(""), "_");
  EXPECT_EQ(path_component("a\\b\nc"), "a_b_c");
}

}  // namespace kestrel
