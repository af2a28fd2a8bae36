// A slow disk for bench/e2e/sluice_e2e.sh (SLOW_FSYNC_MS=N): every fsync() and fdatasync() of
// the process sleeps N milliseconds before it syncs, as a disk whose flush takes that long
// would (a network volume, a busy array). It shows whether group commit puts the waiting
// submissions into one sync: with it, durable submissions/s grow with the clients instead of
// staying at 1000/N. Benchmark-only; not shipped.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void pause_for_disk(void) {
  static long ms = -1;
  if (ms < 0) {
    const char* s = getenv("SLOW_FSYNC_MS");
    ms = s ? atol(s) : 0;
  }
  if (ms <= 0) return;
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0) {
  }
}

int fsync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fsync");
  pause_for_disk();
  return real(fd);
}

int fdatasync(int fd) {
  static int (*real)(int);
  if (!real) real = (int (*)(int))dlsym(RTLD_NEXT, "fdatasync");
  pause_for_disk();
  return real(fd);
}
