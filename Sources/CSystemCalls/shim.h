// System calls that Glibc's Swift module leaves out, wrapped once.
#ifndef CUSTODY_SYSTEM_CALLS_H
#define CUSTODY_SYSTEM_CALLS_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fcntl.h>
#include <stdio.h>

#if defined(__linux__)
#include <linux/fs.h>
/// Swaps the two paths atomically (renameat2 with RENAME_EXCHANGE): a reader sees one or the
/// other at each path, never neither. Returns 0, or -1 with errno set (ENOSYS or EINVAL where
/// the kernel or file system cannot).
static inline int custody_exchange_paths(const char *first, const char *second) {
    return renameat2(AT_FDCWD, first, AT_FDCWD, second, RENAME_EXCHANGE);
}
#else
#include <errno.h>
static inline int custody_exchange_paths(const char *first, const char *second) {
    (void)first; (void)second;
    errno = ENOSYS;
    return -1;
}
#endif

#endif
