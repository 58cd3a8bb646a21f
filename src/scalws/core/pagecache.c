/* cachestat(2) (pagecache.h). */
#include "pagecache.h"

#include <errno.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_cachestat
#define SYS_cachestat 451 /* Linux 6.5; Debian 12's headers predate it */
#endif

static long page_size(void) {
    static long page;
    if (!page) {
        long p = sysconf(_SC_PAGESIZE);
        page = p > 0 ? p : 4096;
    }
    return page;
}

int sws_pagecache_resident(int fd, uint64_t off, uint64_t len) {
    struct {
        uint64_t off, len;
    } range = {off, len};
    struct {
        uint64_t nr_cache, nr_dirty, nr_writeback, nr_evicted, nr_recently_evicted;
    } cs;
    if (syscall(SYS_cachestat, fd, &range, &cs, 0) < 0)
        return errno == ENOSYS || errno == EPERM ? -ENOSYS : 0;
    uint64_t pg = (uint64_t)page_size();
    uint64_t pages = (off + len + pg - 1) / pg - off / pg;
    return cs.nr_cache >= pages;
}
