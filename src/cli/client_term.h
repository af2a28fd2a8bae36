#pragma once
// Text from a pod or a user, made safe to print to a terminal: an escape sequence in a log could
// write the clipboard (ESC ] 52), retitle the window (ESC ] 0), clear the screen, or hide text
// (issue 41). Control characters become visible instead: C0 and DEL in caret form (^[ for ESC),
// C1 controls (U+0080-U+009F), bidirectional controls (U+202E, ...) and bytes that are not UTF-8
// as <U+XXXX> or \xHH. Newlines and tabs stay, and so does a CR that ends a line.
#include <string>
#include <string_view>

namespace sluice::cli {

std::string escape_for_terminal(std::string_view text);

}  // namespace sluice::cli
