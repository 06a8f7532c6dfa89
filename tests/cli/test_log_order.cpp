// A log that reads in order: with stdout and stderr sent to one pipe (as schedulers and CI collect a
// run's output), the error that ends a command comes after every line the command printed before it,
// and nothing of stdout arrives after it.
#include <gtest/gtest.h>

#include "cli/journey_support.h"
#include "test_support.h"

namespace kestrel::test {
namespace {

TEST(LogOrder, ErrorComesAfterTheLinesBeforeIt) {
  const std::string root = temp_dir("log_order");
  const std::string data = write_dataset(root + "/data", {.nc = 2, .train_images = 8, .val_images = 4});
  // The data is indexed and scanned (lines on stdout) before the missing weights stop the run.
  const CommandResult r = run_kestrel({"train", "--data", data, "--weights", root + "/missing.pt", "--img", "64", "--epochs", "1",
                                       "--no-progress", "--noplots", "--project", root + "/runs"},
                                      root);
  ASSERT_NE(r.exit_code, 0) << r.output;
  const size_t error = r.output.find("kestrel: error:");
  ASSERT_NE(error, std::string::npos) << r.output;
  EXPECT_GT(error, 0u) << "the command printed nothing before its error: the test proves nothing\n" << r.output;
  const size_t line_end = r.output.find('\n', error);
  EXPECT_EQ(r.output.find_first_not_of(" \n", line_end == std::string::npos ? r.output.size() : line_end), std::string::npos)
      << "output after the error line:\n" << r.output;
}

}  // namespace
}  // namespace kestrel::test
