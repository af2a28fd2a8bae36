// A pod's log made safe for a terminal (issue 41: `sluice logs` passed ESC ] 52 through).
#include "cli/client_term.h"

#include <gtest/gtest.h>

namespace sluice::cli {
namespace {

TEST(ClientTerm, EscapeSequencesBecomeVisible) {
  // Clipboard write, window title, clear screen: the ESC and BEL are shown, not sent.
  EXPECT_EQ(escape_for_terminal("\x1b]52;c;ZXZpbA==\x07"), "^[]52;c;ZXZpbA==^G");
  EXPECT_EQ(escape_for_terminal("\x1b]0;owned\x07"), "^[]0;owned^G");
  EXPECT_EQ(escape_for_terminal("a\x1b[2Jb"), "a^[[2Jb");
  EXPECT_EQ(escape_for_terminal("del\x7f"), "del^?");
  // C1 (8-bit CSI, NEL) and bidirectional overrides as code points; bytes that are not UTF-8.
  EXPECT_EQ(escape_for_terminal("x\xc2\x9b"
                                "2J"),
            "x<U+009B>2J");
  EXPECT_EQ(escape_for_terminal("abc\xe2\x80\xae"
                                "fdp.exe"),
            "abc<U+202E>fdp.exe");
  EXPECT_EQ(escape_for_terminal("\xff\xfe"), "\\xFF\\xFE");
}

TEST(ClientTerm, OrdinaryTextIsLeftAsItIs) {
  const std::string text =
      "epoch 3: loss 0.12\tacc 0.98\r\nGr\xc3\xbc\xc3\x9f"
      "e \xe2\x9c\x93\n";
  EXPECT_EQ(escape_for_terminal(text), text);
  // A CR that does not end a line could overwrite what the line showed.
  EXPECT_EQ(escape_for_terminal("safe\rEVIL\n"), "safe^MEVIL\n");
}

// Names, states and reasons inside a line: one line, escaped always (issue 41).
TEST(ClientTerm, PrintableTextIsOneEscapedLine) {
  EXPECT_EQ(printable_text("bert\nEVIL\tx\r"), "bert EVIL x ");
  EXPECT_EQ(printable_text("a\x1b]52;c;ZXZpbA==\x07"), "a^[]52;c;ZXZpbA==^G");
  EXPECT_EQ(printable_text("abc\xe2\x80\xae"
                           "exe"),
            "abc<U+202E>exe");
  EXPECT_EQ(printable_text("gr\xc3\xbc\xc3\x9f"), "gr\xc3\xbc\xc3\x9f");
}

// Free text (an explanation, an error, a log) is escaped for a terminal only: a pipe or a file
// gets the server's bytes.
TEST(ClientTerm, TerminalTextEscapesForATerminalOnly) {
  const std::string text =
      "job 1 (\x1b[2J)\nWhy: \xc2\x9b"
      "31m\n";
  EXPECT_EQ(terminal_text(text, true), "job 1 (^[[2J)\nWhy: <U+009B>31m\n");
  EXPECT_EQ(terminal_text(text, false), text);
}

}  // namespace
}  // namespace sluice::cli
