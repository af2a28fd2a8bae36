#pragma once
// Text from a pod, a user, the server or a file, made safe to print to a terminal: an escape
// sequence in a log, a job name or a server's error could write the clipboard (ESC ] 52),
// retitle the window (ESC ] 0), clear the screen, or hide text (issue 41). Control characters
// become visible instead: C0 and DEL in caret form (^[ for ESC), C1 controls (U+0080-U+009F),
// bidirectional controls (U+202E, ...) and bytes that are not UTF-8 as <U+XXXX> or \xHH.
//
// Every command's human output goes through print_out() or print_err(), which escape when the
// stream is a terminal; names, states and reasons inside a line (and every table cell) also go
// through printable_text(), whatever the stream. --json output does not: JSON escapes control
// characters itself.
#include <string>
#include <string_view>

namespace sluice::cli {

// Newlines and tabs stay, and so does a CR that ends a line.
std::string escape_for_terminal(std::string_view text);

// One line's worth: newlines, tabs and CRs become spaces (they would break a line or a table's
// grid), the rest as escape_for_terminal(). For text that is never legitimately a control
// character: names, states, reasons, table cells.
std::string printable_text(std::string_view text);

// `text`, through escape_for_terminal() when `terminal`, as it is otherwise (a pipe or a file
// gets the bytes the server sent).
std::string terminal_text(std::string_view text, bool terminal);

// Writes a command's human output to stdout, or an error, note or warning to stderr, as
// terminal_text() does for that stream (isatty).
void print_out(std::string_view text);
void print_err(std::string_view text);

}  // namespace sluice::cli
