#include "tools/line_forwarder.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace lmdx::tools {
namespace {

class LineForwarderTest : public ::testing::Test {
 protected:
  LineForwarder Make(std::string prefix) {
    return LineForwarder(std::move(prefix),
                         [this](std::string_view s) { writes_.emplace_back(s); });
  }
  std::vector<std::string> writes_;
};

TEST_F(LineForwarderTest, PassesOnlyWholeLines) {
  LineForwarder f = Make("[3] ");
  f.Feed("hel");
  EXPECT_TRUE(writes_.empty());
  f.Feed("lo\nwor");
  f.Feed("ld\n");
  EXPECT_EQ(writes_, (std::vector<std::string>{"[3] hello\n", "[3] world\n"}));
}

TEST_F(LineForwarderTest, SeveralLinesInOneReadGoOutInOneWrite) {
  LineForwarder f = Make("[0] ");
  f.Feed("a\nb\n\nc");
  EXPECT_EQ(writes_, (std::vector<std::string>{"[0] a\n[0] b\n[0] \n"}));
}

TEST_F(LineForwarderTest, FinishFlushesALastLineWithoutNewline) {
  LineForwarder f = Make("");
  f.Feed("done");
  f.Finish();
  f.Finish();  // nothing more to flush
  EXPECT_EQ(writes_, (std::vector<std::string>{"done\n"}));
}

TEST_F(LineForwarderTest, AnOverlongLineIsCut) {
  LineForwarder f = Make("");
  f.Feed(std::string(LineForwarder::kMaxLine + 10, 'x'));
  ASSERT_EQ(writes_.size(), 1u);
  EXPECT_EQ(writes_[0], std::string(LineForwarder::kMaxLine, 'x') + "\n");
  f.Finish();
  EXPECT_EQ(writes_.back(), std::string(10, 'x') + "\n");
}

}  // namespace
}  // namespace lmdx::tools
