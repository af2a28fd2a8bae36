#pragma once
// A SQLite VFS over the default one that gathers the write-ahead log's writes (issue 38).
//
// SQLite writes each WAL frame as two pwrite()s (its 24-byte header, then the page), so a commit
// of nine pages made eighteen system calls on the store's thread before its one fsync. This VFS
// keeps the WAL's consecutive writes in memory and hands them to the file as one write before
// anything can depend on them: a sync, a read, a truncation, a size query, a file control, a
// lock or shared-memory call, or the close (and before 64 KiB have gathered). A crash before that
// loses frames no commit had synced, which a crash before their writes also lost; a failed
// write is returned by the call that flushed it, with the error SQLite's own write would have
// given (SQLITE_FULL on a full disk).
//
// Only for a connection that is its WAL's sole user (the store's: locking_mode=EXCLUSIVE, the
// WAL index in its heap). Another process reading the WAL through shared memory could see an
// index entry before the frame it names reached the file.
#include <sqlite3.h>

namespace sluice::server {

// The VFS's name for sqlite3_open_v2, registered (not as the default) on the first call.
// nullptr when SQLite has no default VFS to wrap.
const char* sqlite_gather_vfs();

}  // namespace sluice::server
