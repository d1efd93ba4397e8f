// libsodium, for the benchmarks' baseline (libsodium's own single-call AEAD throughput).
#include <sodium.h>
