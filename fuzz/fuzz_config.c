/* Fuzz target for scalwsd's config loader (inih and our setters): the input is
 * written to a memfd and loaded by path, as a file would be. Host names are
 * never resolved here: getaddrinfo is wrapped to numeric hosts only. */
/* _GNU_SOURCE (RTLD_NEXT) comes with sws_core. */
#include <dlfcn.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz_file.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A fuzzer that asks DNS for every name it makes up is slow and talks to the
 * network; numeric hosts exercise the same parsing. */
int getaddrinfo(const char *node, const char *service, const struct addrinfo *hints,
                struct addrinfo **res) {
    typedef int (*gai_fn)(const char *, const char *, const struct addrinfo *, struct addrinfo **);
    static gai_fn real;
    if (!real)
        real = (gai_fn)dlsym(RTLD_NEXT, "getaddrinfo");
    if (!real)
        return EAI_FAIL;
    struct addrinfo h = hints ? *hints : (struct addrinfo){0};
    h.ai_flags |= AI_NUMERICHOST;
    return real(node, service, &h, res);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = fuzz_file("fuzz_config", data, size);
    static sws_config c;
    char err[512];
    err[0] = '\0';
    sws_config_defaults(&c);
    int rc = sws_config_load(&c, path, err, sizeof(err));
    sws_config_release(&c); /* what [route] sections collected */
    if (rc < 0 && err[0] == '\0') {
        fprintf(stderr, "fuzz_config: error without a message\n");
        abort();
    }
    if (rc == 0 && (c.body_len > SWS_BODY_MAX || c.status < 200 || c.status > 599 ||
                    strlen(c.content_type) >= sizeof(c.content_type))) {
        fprintf(stderr, "fuzz_config: accepted an out-of-range value\n");
        abort();
    }
    return 0;
}
