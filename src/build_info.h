#pragma once
// What was built: the project's version and the git commit of the sources (12 hex digits,
// "-dirty" with uncommitted changes, "unknown" outside a checkout). Generated at build time by
// cmake/build_info.cmake; `sluice --version` and the server's sluice_build_info metric show it.

namespace sluice {
const char* build_version();
const char* build_commit();
}  // namespace sluice
