/* Whether a file's bytes are in the page cache, so that reading them will not
 * make the loop wait on the disk: cachestat(2), Linux 6.5. The static
 * scenario asks it before sendfile, HTTP/2 before it takes a file range to
 * read into its DATA frames. */
#ifndef SWS_PAGECACHE_H
#define SWS_PAGECACHE_H

#include <stdint.h>

/* 1 when every page of [off, off + len) of fd is cached, 0 when one is not,
 * -ENOSYS when the kernel cannot say (no cachestat, or a seccomp filter
 * refuses it): the caller stops asking. */
int sws_pagecache_resident(int fd, uint64_t off, uint64_t len);

#endif
