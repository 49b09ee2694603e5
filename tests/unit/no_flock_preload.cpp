// LD_PRELOAD'ed by the ctest cache_evicts_without_flock: flock as a file system that refuses it (some NFS and
// Lustre mounts) answers, so the cache's no-lock paths run on a local disk.
#include <cerrno>

extern "C" int flock(int, int) {
  errno = ENOLCK;
  return -1;
}
