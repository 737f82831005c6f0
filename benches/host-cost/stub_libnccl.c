// A libnccl.so.2 whose entry points do nothing and succeed, for host-cost:
// with it (OXIDE_NCCL names it) the time of a collective is cuda-nccl's own
// work plus a few nanoseconds of these calls, which the raw case measures.
// Communicators are distinct dummy addresses; the version is the one this
// machine's GPUs have, so that every type is accepted.
#include <stddef.h>
#include <stdint.h>

typedef int ncclResult_t;
typedef void *ncclComm_t;
typedef struct { char internal[128]; } ncclUniqueId;

static char comms[64];

ncclResult_t ncclGetVersion(int *v) { *v = 22803; return 0; }
ncclResult_t ncclGetUniqueId(ncclUniqueId *id) { (void)id; return 0; }
const char *ncclGetErrorString(ncclResult_t r) { (void)r; return "stub"; }
const char *ncclGetLastError(ncclComm_t c) { (void)c; return ""; }
ncclResult_t ncclCommInitRankConfig(ncclComm_t *c, int n, ncclUniqueId id, int r, void *cfg) {
  (void)n; (void)id; (void)cfg; *c = &comms[r % 64]; return 0;
}
ncclResult_t ncclCommInitAll(ncclComm_t *c, int n, const int *devs) {
  (void)devs;
  for (int i = 0; i < n; ++i) c[i] = &comms[i % 64];
  return 0;
}
ncclResult_t ncclCommSplit(ncclComm_t c, int color, int key, ncclComm_t *out, void *cfg) {
  (void)color; (void)key; (void)cfg; *out = c; return 0;
}
ncclResult_t ncclCommFinalize(ncclComm_t c) { (void)c; return 0; }
ncclResult_t ncclCommDestroy(ncclComm_t c) { (void)c; return 0; }
ncclResult_t ncclCommAbort(ncclComm_t c) { (void)c; return 0; }
ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t *r) { (void)c; *r = 0; return 0; }
ncclResult_t ncclCommCount(ncclComm_t c, int *n) { (void)c; *n = 1; return 0; }
ncclResult_t ncclCommCuDevice(ncclComm_t c, int *d) { (void)c; *d = 0; return 0; }
ncclResult_t ncclCommUserRank(ncclComm_t c, int *r) { (void)c; *r = 0; return 0; }
ncclResult_t ncclAllReduce(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, void *st) {
  (void)s; (void)r; (void)n; (void)t; (void)op; (void)c; (void)st; return 0;
}
ncclResult_t ncclBroadcast(const void *s, void *r, size_t n, int t, int root, ncclComm_t c, void *st) {
  (void)s; (void)r; (void)n; (void)t; (void)root; (void)c; (void)st; return 0;
}
ncclResult_t ncclReduce(const void *s, void *r, size_t n, int t, int op, int root, ncclComm_t c, void *st) {
  (void)s; (void)r; (void)n; (void)t; (void)op; (void)root; (void)c; (void)st; return 0;
}
ncclResult_t ncclAllGather(const void *s, void *r, size_t n, int t, ncclComm_t c, void *st) {
  (void)s; (void)r; (void)n; (void)t; (void)c; (void)st; return 0;
}
ncclResult_t ncclReduceScatter(const void *s, void *r, size_t n, int t, int op, ncclComm_t c, void *st) {
  (void)s; (void)r; (void)n; (void)t; (void)op; (void)c; (void)st; return 0;
}
ncclResult_t ncclSend(const void *s, size_t n, int t, int peer, ncclComm_t c, void *st) {
  (void)s; (void)n; (void)t; (void)peer; (void)c; (void)st; return 0;
}
ncclResult_t ncclRecv(void *r, size_t n, int t, int peer, ncclComm_t c, void *st) {
  (void)r; (void)n; (void)t; (void)peer; (void)c; (void)st; return 0;
}
ncclResult_t ncclGroupStart(void) { return 0; }
ncclResult_t ncclGroupEnd(void) { return 0; }
