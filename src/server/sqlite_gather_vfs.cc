#include "server/sqlite_gather_vfs.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <new>
#include <string>

namespace sluice::server {

namespace {

// SQLite's unix VFS writes at most 128 KiB - 1 per call (it masks the length to 17 bits): a
// flush stays below that.
constexpr size_t kMaxGathered = 64 * 1024;

// SQLite allocates szOsFile bytes for a file: this, then the wrapped VFS's file right after it.
struct GatherFile {
  sqlite3_file base;     // first: SQLite reads pMethods from here
  sqlite3_file* real;    // the wrapped file
  bool wal = false;      // only the WAL's writes are gathered
  std::string gathered;  // consecutive writes, from `at`
  sqlite3_int64 at = 0;
};

sqlite3_vfs* real_vfs = nullptr;

GatherFile* of(sqlite3_file* f) {
  return reinterpret_cast<GatherFile*>(f);
}
const sqlite3_io_methods* real_methods(GatherFile* g) {
  return g->real->pMethods;
}

// Hands what has gathered to the file as one write; the write's error otherwise.
int flush(GatherFile* g) {
  if (g->gathered.empty()) return SQLITE_OK;
  const int rc = real_methods(g)->xWrite(g->real, g->gathered.data(),
                                         static_cast<int>(g->gathered.size()), g->at);
  g->gathered.clear();
  return rc;
}

int x_close(sqlite3_file* f) {
  GatherFile* g = of(f);
  const int flushed = flush(g);
  const int rc = real_methods(g)->xClose(g->real);
  g->~GatherFile();
  return flushed != SQLITE_OK ? flushed : rc;
}

int x_read(sqlite3_file* f, void* out, int n, sqlite3_int64 off) {
  GatherFile* g = of(f);
  if (const int rc = flush(g); rc != SQLITE_OK) return rc;
  return real_methods(g)->xRead(g->real, out, n, off);
}

int x_write(sqlite3_file* f, const void* data, int n, sqlite3_int64 off) {
  GatherFile* g = of(f);
  if (!g->wal) return real_methods(g)->xWrite(g->real, data, n, off);
  // Not right after what has gathered (a frame rewritten, a new log from its start), or more
  // than a flush may write: what is there goes first, in order.
  const auto size = static_cast<size_t>(n);
  if (!g->gathered.empty() && (off != g->at + static_cast<sqlite3_int64>(g->gathered.size()) ||
                               g->gathered.size() + size > kMaxGathered))
    if (const int rc = flush(g); rc != SQLITE_OK) return rc;
  if (size > kMaxGathered) return real_methods(g)->xWrite(g->real, data, n, off);
  if (g->gathered.empty()) g->at = off;
  g->gathered.append(static_cast<const char*>(data), size);
  return SQLITE_OK;
}

// The calls that see the file as it is once what has gathered is written: a flush first, then
// the wrapped file's own call (`M`, e.g. &sqlite3_io_methods::xSync).
template <auto M, class... A>
int flushed(sqlite3_file* f, A... a) {
  GatherFile* g = of(f);
  if (const int rc = flush(g); rc != SQLITE_OK) return rc;
  return (real_methods(g)->*M)(g->real, a...);
}

// The calls that do not: the wrapped file's own.
template <auto M, class... A>
auto forwarded(sqlite3_file* f, A... a) {
  return (real_methods(of(f))->*M)(of(f)->real, a...);
}

void x_shm_barrier(sqlite3_file* f) {
  GatherFile* g = of(f);
  flush(g);
  real_methods(g)->xShmBarrier(g->real);
}

using M = sqlite3_io_methods;
constexpr auto x_truncate = flushed<&M::xTruncate, sqlite3_int64>;
constexpr auto x_sync = flushed<&M::xSync, int>;
constexpr auto x_file_size = flushed<&M::xFileSize, sqlite3_int64*>;
constexpr auto x_lock = flushed<&M::xLock, int>;
constexpr auto x_unlock = flushed<&M::xUnlock, int>;
constexpr auto x_check_reserved_lock = forwarded<&M::xCheckReservedLock, int*>;
constexpr auto x_file_control = flushed<&M::xFileControl, int, void*>;
constexpr auto x_sector_size = forwarded<&M::xSectorSize>;
constexpr auto x_device_characteristics = forwarded<&M::xDeviceCharacteristics>;
constexpr auto x_shm_map = flushed<&M::xShmMap, int, int, int, void volatile**>;
constexpr auto x_shm_lock = flushed<&M::xShmLock, int, int, int>;
constexpr auto x_shm_unmap = flushed<&M::xShmUnmap, int>;
constexpr auto x_fetch = flushed<&M::xFetch, sqlite3_int64, int, void**>;
constexpr auto x_unfetch = forwarded<&M::xUnfetch, sqlite3_int64, void*>;

// The methods of versions 1 to 3 (kMethods[v - 1]); a wrapped file of an older version is never
// given its missing calls (SQLite reads iVersion before calling them, and the wrapper copies the
// wrapped file's).
const sqlite3_io_methods kMethods[3] = {
    {1, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics, nullptr,
     nullptr, nullptr, nullptr, nullptr, nullptr},
    {2, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics, x_shm_map,
     x_shm_lock, x_shm_barrier, x_shm_unmap, nullptr, nullptr},
    {3, x_close, x_read, x_write, x_truncate, x_sync, x_file_size, x_lock, x_unlock,
     x_check_reserved_lock, x_file_control, x_sector_size, x_device_characteristics, x_shm_map,
     x_shm_lock, x_shm_barrier, x_shm_unmap, x_fetch, x_unfetch},
};

int x_open(sqlite3_vfs*, const char* name, sqlite3_file* f, int flags, int* out_flags) {
  auto* g = new (f) GatherFile();
  g->real = reinterpret_cast<sqlite3_file*>(reinterpret_cast<char*>(f) + sizeof(GatherFile));
  g->real->pMethods = nullptr;
  const int rc = real_vfs->xOpen(real_vfs, name, g->real, flags, out_flags);
  if (rc != SQLITE_OK || !g->real->pMethods) {
    if (g->real->pMethods) g->real->pMethods->xClose(g->real);  // opened, then failed
    g->~GatherFile();
    f->pMethods = nullptr;  // SQLite calls no xClose for a file that did not open
    return rc != SQLITE_OK ? rc : SQLITE_CANTOPEN;
  }
  g->wal = (flags & SQLITE_OPEN_WAL) != 0;
  const int version = g->real->pMethods->iVersion;
  f->pMethods = &kMethods[std::clamp(version, 1, 3) - 1];
  return SQLITE_OK;
}

// Everything else is the wrapped VFS's own.
int x_delete(sqlite3_vfs*, const char* name, int sync) {
  return real_vfs->xDelete(real_vfs, name, sync);
}
int x_access(sqlite3_vfs*, const char* name, int flags, int* out) {
  return real_vfs->xAccess(real_vfs, name, flags, out);
}
int x_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  return real_vfs->xFullPathname(real_vfs, name, n, out);
}
void* x_dl_open(sqlite3_vfs*, const char* name) {
  return real_vfs->xDlOpen(real_vfs, name);
}
void x_dl_error(sqlite3_vfs*, int n, char* out) {
  real_vfs->xDlError(real_vfs, n, out);
}
void (*x_dl_sym(sqlite3_vfs*, void* h, const char* sym))(void) {
  return real_vfs->xDlSym(real_vfs, h, sym);
}
void x_dl_close(sqlite3_vfs*, void* h) {
  real_vfs->xDlClose(real_vfs, h);
}
int x_randomness(sqlite3_vfs*, int n, char* out) {
  return real_vfs->xRandomness(real_vfs, n, out);
}
int x_sleep(sqlite3_vfs*, int us) {
  return real_vfs->xSleep(real_vfs, us);
}
int x_current_time(sqlite3_vfs*, double* out) {
  return real_vfs->xCurrentTime(real_vfs, out);
}
int x_get_last_error(sqlite3_vfs*, int n, char* out) {
  return real_vfs->xGetLastError ? real_vfs->xGetLastError(real_vfs, n, out) : 0;
}
int x_current_time_int64(sqlite3_vfs*, sqlite3_int64* out) {
  if (real_vfs->iVersion >= 2 && real_vfs->xCurrentTimeInt64)
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
  double d = 0;
  const int rc = real_vfs->xCurrentTime(real_vfs, &d);
  *out = static_cast<sqlite3_int64>(d * 86400000.0);
  return rc;
}

sqlite3_vfs gather_vfs{};

}  // namespace

const char* sqlite_gather_vfs() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] {
    real_vfs = sqlite3_vfs_find(nullptr);
    if (!real_vfs) return;
    gather_vfs.iVersion = 2;
    gather_vfs.szOsFile = static_cast<int>(sizeof(GatherFile)) + real_vfs->szOsFile;
    gather_vfs.mxPathname = real_vfs->mxPathname;
    gather_vfs.zName = "sluice-gather";
    gather_vfs.xOpen = x_open;
    gather_vfs.xDelete = x_delete;
    gather_vfs.xAccess = x_access;
    gather_vfs.xFullPathname = x_full_pathname;
    gather_vfs.xDlOpen = x_dl_open;
    gather_vfs.xDlError = x_dl_error;
    gather_vfs.xDlSym = x_dl_sym;
    gather_vfs.xDlClose = x_dl_close;
    gather_vfs.xRandomness = x_randomness;
    gather_vfs.xSleep = x_sleep;
    gather_vfs.xCurrentTime = x_current_time;
    gather_vfs.xGetLastError = x_get_last_error;
    gather_vfs.xCurrentTimeInt64 = x_current_time_int64;
    ok = sqlite3_vfs_register(&gather_vfs, 0) == SQLITE_OK;
  });
  return ok ? gather_vfs.zName : nullptr;
}

}  // namespace sluice::server
