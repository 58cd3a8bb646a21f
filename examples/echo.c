/* A loop that accepts and echoes: the README's example, built with the tree.
 * turnloop-echo [PORT]: 7007 by default; 0 lets the kernel pick, and the line
 * it prints names the port it got. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <turnloop.h>

int main(int argc, char **argv) {
    tl_loop *loop;
    tl_handle ls;
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons(argc > 1 ? atoi(argv[1]) : 7007)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (tl_loop_new(&loop, NULL) < 0 ||
        tl_listen(loop, (struct sockaddr *)&a, sizeof a, NULL, &ls) < 0)
        return 1;
    struct sockaddr_storage got;
    tl_handle_sockname(loop, ls, &got, NULL);
    printf("echo on 127.0.0.1:%d (%s backend)\n", ntohs(((struct sockaddr_in *)&got)->sin_port),
           tl_loop_backend(loop));
    fflush(stdout);
    tl_accept(loop, ls, TL_ACCEPT_MULTISHOT, 0, NULL);
    for (;;) {
        tl_completion c[64];
        int n = tl_loop_turn(loop, -1, c, 64);
        for (int i = 0; i < n; i++) {
            tl_completion *e = &c[i];
            if (e->kind == TL_OP_ACCEPT && e->res == 0) /* a new connection: receive on it */
                tl_recv(loop, e->u.accepted, 0, NULL);
            else if (e->kind == TL_OP_RECV && e->res > 0) /* echo from the loop's buffer */
                tl_write(loop, e->handle, e->u.buf.data, (uint32_t)e->res, e->u.buf.id, NULL);
            else if (e->kind == TL_OP_WRITE) /* the token is the buffer written from */
                tl_buffer_release(loop, (uint32_t)e->token);
            else if (e->kind == TL_OP_RECV) /* end of stream or an error */
                tl_close(loop, e->handle, 0);
        }
    }
}
