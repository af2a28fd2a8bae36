#include "cli/client_table.h"

#include <gtest/gtest.h>

#include <cmath>

namespace sluice::cli {
namespace {

TEST(ClientTable, TruncateKeepsShortTextAndCutsLongTextWithEllipsis) {
  EXPECT_EQ(truncate_text("abc", 5), "abc");
  EXPECT_EQ(truncate_text("abcdef", 0), "abcdef");  // 0: no limit
  EXPECT_EQ(truncate_text("abcdefgh", 6), "abc...");
  EXPECT_EQ(truncate_text("abcdefgh", 2), "..");  // narrower than the ellipsis itself
}

TEST(ClientTable, TruncateNeverSplitsAUtf8Sequence) {
  // "aé" is 3 bytes ('a', 0xC3, 0xA9); a cut at 5 keeps 2 bytes, which would split 'é'.
  std::string s = "a\xC3\xA9xyzw";
  EXPECT_EQ(truncate_text(s, 5), "a...");
}

TEST(ClientTable, WidthsComeFromTheContent) {
  Table t({{"ID", 0, true}, {"NAME"}, {"REASON"}});
  t.add_row({"7", "bert", "quota"});
  t.add_row({"123", "x", ""});
  // ID is right-aligned to 3 ("123"); NAME is 4 wide ("NAME"/"bert"); no trailing spaces.
  EXPECT_EQ(t.render(),
            " ID  NAME  REASON\n"
            "  7  bert  quota\n"
            "123  x\n");
}

TEST(ClientTable, CapsLongCellsAndFlattensNewlines) {
  Table t({{"A", 6}, {"B"}});
  t.add_row({"abcdefghij", "two\nlines"});
  t.add_row({"x"});  // missing cells are empty
  EXPECT_EQ(t.render(),
            "A       B\n"
            "abc...  two lines\n"
            "x\n");
  EXPECT_EQ(t.rows(), 2u);
}

TEST(ClientTable, HeaderOnlyWhenEmpty) {
  Table t({{"NAME"}, {"READY"}});
  EXPECT_EQ(t.render(), "NAME  READY\n");
}

TEST(ClientTable, AgeUsesTheLargestUnitThatFits) {
  EXPECT_EQ(format_age(-3), "0s");  // a client clock behind the server's
  EXPECT_EQ(format_age(45.9), "45s");
  EXPECT_EQ(format_age(119), "119s");
  EXPECT_EQ(format_age(120), "2m");
  EXPECT_EQ(format_age(7199), "119m");
  EXPECT_EQ(format_age(7200), "2h");
  EXPECT_EQ(format_age(47 * 3600), "47h");
  EXPECT_EQ(format_age(5 * 86400 + 10), "5d");
  EXPECT_EQ(format_age(1e300), format_age(3.2e13));  // a bad clock: no overflow
}

TEST(ClientTable, DurationTruncatesToWholeSeconds) {  // `sluice history`'s ELAPSED
  EXPECT_EQ(format_duration(185.9), "3m05s");
  EXPECT_EQ(format_duration(3725), "1h02m");
  EXPECT_EQ(format_duration(26 * 3600), "1d02h");
  EXPECT_EQ(format_duration(-1), "0s");
  EXPECT_EQ(format_duration(std::nan("")), "0s");
}

TEST(ClientTable, NumbersDropTrailingZeros) {
  EXPECT_EQ(format_milli(16000), "16");
  EXPECT_EQ(format_milli(500), "0.5");
  EXPECT_EQ(format_milli(250), "0.25");
  EXPECT_EQ(format_milli(0), "0");
  EXPECT_EQ(format_decimal(0.123456, 3), "0.123");
  EXPECT_EQ(format_decimal(2.0, 2), "2");
  EXPECT_EQ(format_decimal(-0.0001, 2), "0");
}

// The finding: escape sequences in job names reached the operator's terminal raw.
TEST(ClientTable, ControlCharactersAreShownEscaped) {
  EXPECT_EQ(printable_text("job\x1b[2Jx"), "job^[[2Jx");
  EXPECT_EQ(printable_text("a\nb\tc\r"), "a b c ");
  EXPECT_EQ(printable_text("csi\xC2\x9B"
                           "31m"),
            "csi<U+009B>31m");                                            // C1 CSI as UTF-8
  EXPECT_EQ(printable_text("gr\xC3\xBC\xC3\x9F"), "gr\xC3\xBC\xC3\x9F");  // text stays
  Table t({{"NAME"}});
  t.add_row({"evil\x1b]0;pwned\x07"});
  EXPECT_EQ(t.render().find('\x1b'), std::string::npos);
  EXPECT_NE(t.render().find("evil^[]0;pwned^G"), std::string::npos);
}

}  // namespace
}  // namespace sluice::cli
