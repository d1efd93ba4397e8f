#ifndef CUSTODY_BENCH_CLIBCRYPTO_SHIM_H
#define CUSTODY_BENCH_CLIBCRYPTO_SHIM_H

// OpenSSL 3's libcrypto (Debian's libssl-dev) directly: the baseline the protection
// benchmarks are measured against.
#include <openssl/evp.h>

#endif
