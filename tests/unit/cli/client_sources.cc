// The client pieces live in src/cli/, which the `sluice` executable compiles (its glob); the
// unit-test binary has no library to link them from, so this one translation unit compiles them
// into the tests. Nothing else may include these files (each is compiled exactly once here).
#include "cli/client_cmd.cc"
#include "cli/client_http.cc"
#include "cli/client_run.cc"
#include "cli/client_table.cc"
#include "cli/client_views.cc"
