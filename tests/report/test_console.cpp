// Console styling: ANSI codes only when enabled; files are never terminals.
#include <cstdio>

#include "report/console.h"
#include "test_support.h"

namespace kestrel {
namespace {

TEST(Console, StyledWrapsOnlyWhenEnabled) {
  EXPECT_EQ(styled("optimizer:", {Style::Bold, Style::Blue}, true), "\033[1m\033[34moptimizer:\033[0m");
  EXPECT_EQ(styled("optimizer:", {Style::Bold, Style::Blue}, false), "optimizer:");
}

TEST(Console, FilesAreNotTerminals) {
  std::FILE* f = std::tmpfile();
  ASSERT_NE(f, nullptr);
  EXPECT_FALSE(is_terminal(f));
  EXPECT_FALSE(colour_enabled(f));
  EXPECT_FALSE(is_terminal(nullptr));
  std::fclose(f);
}

}  // namespace
}  // namespace kestrel
