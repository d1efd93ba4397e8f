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

/// 1 the first time the calling thread asks, 0 after.
static inline int custody_first_time_on_thread(void) {
    static _Thread_local int asked = 0;
    if (asked) return 0;
    asked = 1;
    return 1;
}

#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
/// The calling thread's id (gettid).
static inline int custody_thread_id(void) {
    return (int)syscall(SYS_gettid);
}

/// Puts thread `thread` (a thread id; 0: the calling thread) in Linux's SCHED_IDLE class, where
/// it runs only on a core no other thread wants (`idle` 1), or back in the normal class at its
/// nice value (`idle` 0). Returns 0, or -1 with errno set. The system call itself, with the
/// constants of <linux/sched.h>: <sched.h> here would lend its types to this module.
static inline int custody_set_thread_idle(int thread, int idle) {
    int priority = 0; /* struct sched_param's one field */
    return (int)syscall(SYS_sched_setscheduler, thread, idle ? 5 /* SCHED_IDLE */ : 0 /* SCHED_OTHER */, &priority);
}
#else
static inline int custody_thread_id(void) {
    return 0;
}

static inline int custody_set_thread_idle(int thread, int idle) {
    (void)thread; (void)idle;
    return 0;
}
#endif

#endif
