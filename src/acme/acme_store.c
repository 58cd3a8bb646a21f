/* state_dir persistence for the ACME client (acme_store.h): small files,
 * each written to a temporary name, synced and renamed, so that a restart
 * finds either the old or the new version and resumes from it. */
#include "acme_store.h"

#include "acme_cert.h"
#include "acme_config.h"
#include "jws.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int sws_acme_store_open(const char *dir, char *err, size_t errlen) {
    /* Parents are made too (0700 as well: they only lead here). */
    char tmp[300];
    snprintf(tmp, sizeof(tmp), "%s", dir);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
                goto fail;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
        goto fail;
    if (chmod(dir, 0700) < 0)
        goto fail;
    return 0;
fail:;
    int e = errno;
    snprintf(err, errlen, "[acme] state_dir %s: %s", dir, strerror(e));
    return -e;
}

void sws_acme_store_path(const char *dir, const char *name, char *buf, size_t cap) {
    snprintf(buf, cap, "%s/%s", dir, name);
}

char *sws_acme_store_read(const char *dir, const char *name, size_t *len) {
    char path[400];
    sws_acme_store_path(dir, name, path, sizeof(path));
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t n = 0, cap = 0;
    for (;;) {
        if (n + 4096 + 1 > cap) {
            cap = (n + 4096 + 1) * 2;
            char *p = realloc(buf, cap);
            if (!p) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = p;
        }
        size_t r = fread(buf + n, 1, 4096, f);
        n += r;
        if (r < 4096)
            break;
    }
    fclose(f);
    buf[n] = '\0';
    if (len)
        *len = n;
    return buf;
}

int sws_acme_store_write(const char *dir, const char *name, const char *data, size_t len,
                         unsigned mode) {
    char path[400], tmp[420];
    sws_acme_store_path(dir, name, path, sizeof(path));
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, (mode_t)mode);
    if (fd < 0)
        return -errno;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0) {
            int e = errno;
            close(fd);
            unlink(tmp);
            return -e;
        }
        off += (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        return -e;
    }
    return 0;
}

EVP_PKEY *sws_acme_store_account_key(const char *dir, char *err, size_t errlen) {
    size_t len;
    char *pem = sws_acme_store_read(dir, "account.key", &len);
    if (pem) {
        EVP_PKEY *k = sws_acme_key_from_pem(pem, len);
        free(pem);
        if (!k)
            snprintf(err, errlen, "%s/account.key: no private key", dir);
        return k;
    }
    EVP_PKEY *k = sws_jws_new_key();
    char *text = k ? sws_acme_key_pem(k) : NULL;
    int rc = text ? sws_acme_store_write(dir, "account.key", text, strlen(text), 0600) : -ENOMEM;
    free(text);
    if (rc < 0) {
        snprintf(err, errlen, "%s/account.key: cannot save: %s", dir, strerror(-rc));
        EVP_PKEY_free(k);
        return NULL;
    }
    return k;
}

int sws_acme_state_load(const char *dir, sws_acme_state *st) {
    memset(st, 0, sizeof(*st));
    char *text = sws_acme_store_read(dir, "state.json", NULL);
    json_t *j = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!json_is_object(j)) {
        json_decref(j);
        return -ENOENT;
    }
    const char *s;
    if ((s = json_string_value(json_object_get(j, "account"))))
        snprintf(st->account, sizeof(st->account), "%s", s);
    if ((s = json_string_value(json_object_get(j, "last_error"))))
        snprintf(st->last_error, sizeof(st->last_error), "%s", s);
    st->last_error_at = json_integer_value(json_object_get(j, "last_error_at"));
    st->last_issued_at = json_integer_value(json_object_get(j, "last_issued_at"));
    st->next_attempt = json_integer_value(json_object_get(j, "next_attempt"));
    st->failures = (uint32_t)json_integer_value(json_object_get(j, "failures"));
    st->placeholder = json_is_true(json_object_get(j, "placeholder"));
    json_decref(j);
    return 0;
}

int sws_acme_state_save(const char *dir, const sws_acme_state *st) {
    json_t *j =
        json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:b}", "account", st->account, "last_error",
                  st->last_error, "last_error_at", (json_int_t)st->last_error_at, "last_issued_at",
                  (json_int_t)st->last_issued_at, "next_attempt", (json_int_t)st->next_attempt,
                  "failures", (json_int_t)st->failures, "placeholder", st->placeholder);
    char *text = j ? json_dumps(j, JSON_INDENT(1)) : NULL;
    json_decref(j);
    if (!text)
        return -ENOMEM;
    int rc = sws_acme_store_write(dir, "state.json", text, strlen(text), 0600);
    free(text);
    return rc;
}

int sws_acme_store_prepare(const sws_acme_config *a, char *err, size_t errlen) {
    int rc = sws_acme_store_open(a->state_dir, err, errlen);
    if (rc < 0)
        return rc;
    char cert[400], key[400];
    sws_acme_store_path(a->state_dir, "cert.pem", cert, sizeof(cert));
    sws_acme_store_path(a->state_dir, "key.pem", key, sizeof(key));
    if (access(cert, R_OK) == 0 && access(key, R_OK) == 0)
        return 0;
    /* Nothing issued yet: a TLS listener still needs a pair to start with. */
    const char *doms[SWS_ACME_DOMAINS_MAX];
    for (int i = 0; i < a->ndomains; i++)
        doms[i] = a->domains[i];
    EVP_PKEY *k = sws_jws_new_key();
    char *kp = k ? sws_acme_key_pem(k) : NULL;
    char *cp = k ? sws_acme_placeholder(k, doms, a->ndomains) : NULL;
    EVP_PKEY_free(k);
    rc = kp && cp ? 0 : -ENOMEM;
    if (rc == 0)
        rc = sws_acme_store_write(a->state_dir, "key.pem", kp, strlen(kp), 0600);
    if (rc == 0)
        rc = sws_acme_store_write(a->state_dir, "cert.pem", cp, strlen(cp), 0644);
    free(kp);
    free(cp);
    if (rc < 0) {
        snprintf(err, errlen, "[acme] state_dir %s: cannot write the placeholder certificate: %s",
                 a->state_dir, strerror(-rc));
        return rc;
    }
    sws_acme_state st;
    sws_acme_state_load(a->state_dir, &st);
    st.placeholder = 1;
    sws_acme_state_save(a->state_dir, &st);
    return 0;
}
