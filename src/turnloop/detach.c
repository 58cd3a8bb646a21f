/* Moving a transport between loops. Detach is quiescent: it answers -EAGAIN
 * until the handle has no operation, completion or received buffer left, so
 * that what crosses threads is a bare descriptor with nothing attached. */
#include "internal.h"

#include <errno.h>
#include <unistd.h>

int tl_detach(tl_loop *loop, tl_handle handle, tl_detached *out) {
    uint32_t hi;
    int err = tl__handle_lookup(loop, handle, &hi);
    if (err < 0)
        return err;
    tl_hslot *h = &loop->h[hi];
    if (h->closing)
        return -EBADF;
    if (h->type == TL_H_SHARED_LISTENER)
        return -EINVAL; /* a loop's duplicate of a shared socket; close it instead */
    if (!h->detaching) {
        h->detaching = 1;
        tl__handle_cancel_all(loop, hi);
    }
    if (h->nops > 0 || h->undelivered > 0 || h->bufs_held > 0)
        return -EAGAIN;
    /* A direct descriptor is the ring's, not the process's: the transport
     * crosses as a real one. */
    err = tl__handle_real_fd(loop, hi);
    if (err < 0)
        return err;
    h = &loop->h[hi];
    loop->be->handle_remove(loop, hi);
    out->fd = h->fd;
    out->kind = h->type;
    h->fd = -1;
    tl__handle_release_slot(loop, hi);
    return 0;
}

int tl_attach(tl_loop *loop, const tl_detached *d, tl_handle *out) {
    if (d->fd < 0 ||
        (d->kind != TL_H_STREAM && d->kind != TL_H_LISTENER && d->kind != TL_H_DGRAM)) {
        if (d->fd >= 0)
            close(d->fd);
        return -EINVAL;
    }
    uint32_t hi;
    int err = tl__handle_new(loop, d->fd, (uint8_t)d->kind, 0, &hi); /* closes fd on error */
    if (err < 0)
        return err;
    if (d->kind == TL_H_DGRAM)
        tl__udp_handle_init(loop, hi, 0); /* a moved socket gets the default send queue */
    *out = tl__make_id(loop, loop->h[hi].gen, hi);
    return 0;
}
