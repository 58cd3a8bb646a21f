/* SIGHUP reload: the control thread reads the configuration again and each
 * loop switches to it on its own thread (reload.c). */
#ifndef SWS_RELOAD_H
#define SWS_RELOAD_H

#include "sws.h"

/* A reload is posted on sws_token(SWS_POST_RELOAD, SWS_T_POST) (token.h):
 * the value is the new config. */

/* Control thread, before the first reload: what to read again, and the config
 * the loops started with (main's, never freed). cli must outlive the server. */
void sws_reload_init(const sws_cli *cli, const sws_config *initial);
/* Control thread: on SIGHUP. Either every loop is sent the new config, or one
 * line on stderr says why the old one keeps serving. */
void sws_reload_begin(sws_server *s);
/* Control thread: the same configuration with the certificate name (NAME of
 * an [acme NAME], "" for [tls]'s pair) loaded again from its cert and key
 * files (a new ACME certificate). New handshakes get
 * the new context, open connections keep theirs. 0, or -errno with why: the
 * old context keeps serving. */
int sws_reload_tls(sws_server *s, const char *name, char *why, size_t len);
/* Control thread, every wake-up: frees configs that every loop has left.
 * Returns how long the caller may sleep before checking again (-1: forever). */
int sws_reload_poll(sws_server *s);
/* Control thread, after every loop thread has ended: frees every config. */
void sws_reload_free_all(void);
/* Loop thread: the SWS_POST_RELOAD message. */
void sws_reload_apply(sws_worker *w, uint64_t value);

#endif
