#pragma once
// Where `sluice up` keeps its state without --data-dir: a per-user directory (XDG Base
// Directory Specification), never the directory it happens to be run in.
#include <string>

namespace sluice::cli {

// $XDG_STATE_HOME/sluice/up when XDG_STATE_HOME is set and absolute (the specification ignores
// a relative one), else $HOME/.local/state/sluice/up; empty when neither gives a path.
std::string up_state_dir();

}  // namespace sluice::cli
