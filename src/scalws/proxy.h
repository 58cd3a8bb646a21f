/* The proxy scenario's entry points for serve.c, drain.c and admin.c. Every
 * function but sws_proxy_metrics runs on the worker's loop thread. */
#ifndef SWS_PROXY_H
#define SWS_PROXY_H

#include <stdio.h>

#include "sws.h"

typedef struct sws_proxy sws_proxy;

int sws_proxy_init(sws_worker *w);
void sws_proxy_free(sws_worker *w);
void sws_proxy_open(sws_worker *w, tl_handle h);
void sws_proxy_dispatch(sws_worker *w, const tl_completion *e);
void sws_proxy_drain(sws_worker *w, bool force);
bool sws_proxy_finished(const sws_worker *w);
uint32_t sws_proxy_extra_handles(const sws_config *cfg);
/* After a reload switched w->cfg: the pool reads its timeouts from the new one. */
void sws_proxy_reconfigure(sws_worker *w);
/* Control thread: reads relaxed counters only. */
void sws_proxy_metrics(const sws_server *s, FILE *f);

#endif
