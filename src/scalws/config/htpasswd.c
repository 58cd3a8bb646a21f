/* An htpasswd-style file (htpasswd.h): read and checked line by line at
 * load, searched by name per check. Names are kept in file order; the first
 * of a name given twice wins, as in Apache's mod_authn_file. */
#include "htpasswd.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SWS_HTPASSWD_MAX_BYTES (16u << 20)

typedef struct entry {
    const char *user;
    size_t ulen;
    const char *hash;
} entry;

struct sws_htpasswd {
    uint64_t gen;
    int n;
    entry *e;
    char *text; /* the file, lines cut at ':' and '\n' */
};

static bool b64crypt(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '/';
}

/* bcrypt: "$2y$NN$" and 53 characters of salt and hash; SHA-512 crypt:
 * "$6$[rounds=N$]salt$" and 86 characters. NULL: a format taken, else why not. */
static const char *hash_refused(const char *h) {
    size_t n = strlen(h);
    if (strncmp(h, "$2y$", 4) == 0 || strncmp(h, "$2b$", 4) == 0) {
        if (n != 60 || h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' || h[6] != '$')
            return "malformed bcrypt hash";
        for (size_t i = 7; i < n; i++)
            if (!b64crypt(h[i]))
                return "malformed bcrypt hash";
        return NULL;
    }
    if (strncmp(h, "$6$", 3) == 0) {
        const char *last = strrchr(h, '$');
        if (last == h + 2 || strlen(last + 1) != 86)
            return "malformed SHA-512 crypt hash";
        for (const char *p = last + 1; *p; p++)
            if (!b64crypt(*p))
                return "malformed SHA-512 crypt hash";
        return NULL;
    }
    if (strncmp(h, "$apr1$", 6) == 0 || strncmp(h, "$1$", 3) == 0)
        return "MD5 hashes are refused (want bcrypt $2y$/$2b$ or SHA-512 crypt $6$: htpasswd -B)";
    if (strncmp(h, "{SHA}", 5) == 0)
        return "SHA-1 hashes are refused (want bcrypt $2y$/$2b$ or SHA-512 crypt $6$: htpasswd "
               "-B)";
    return "not a bcrypt ($2y$/$2b$) or SHA-512 crypt ($6$) hash (plaintext and DES are refused: "
           "htpasswd -B)";
}

static char *slurp(const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
        if (got == 0)
            break;
        if (len + 1 == cap) {
            char *b = cap >= SWS_HTPASSWD_MAX_BYTES ? NULL : realloc(buf, cap * 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
            cap *= 2;
        }
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        snprintf(err, errlen, "%s: %s", path, bad ? "read error" : "too large or out of memory");
        free(buf);
        return NULL;
    }
    buf[len] = '\0';
    if (memchr(buf, '\0', len)) {
        snprintf(err, errlen, "%s: a NUL byte (not a text file)", path);
        free(buf);
        return NULL;
    }
    return buf;
}

sws_htpasswd *sws_htpasswd_load(const char *path, char *err, size_t errlen) {
    sws_htpasswd *h = calloc(1, sizeof(*h));
    if (!h || !(h->text = slurp(path, err, errlen))) {
        if (!h)
            snprintf(err, errlen, "out of memory");
        free(h);
        return NULL;
    }
    int cap = 0, line = 0;
    for (char *s = h->text; *s;) {
        char *nl = strchr(s, '\n');
        char *next = nl ? nl + 1 : s + strlen(s);
        if (nl)
            *nl = '\0';
        line++;
        size_t n = strlen(s);
        if (n && s[n - 1] == '\r')
            s[--n] = '\0';
        const char *why = NULL;
        char *colon = strchr(s, ':');
        if (n == 0 || s[0] == '#') {
            s = next;
            continue;
        }
        if (!colon || colon == s)
            why = "want user:hash";
        else if ((why = hash_refused(colon + 1)) == NULL && h->n == cap) {
            int c = cap ? cap * 2 : 16;
            entry *e = realloc(h->e, (size_t)c * sizeof(*e));
            if (!e)
                why = "out of memory";
            else {
                h->e = e;
                cap = c;
            }
        }
        if (why) {
            snprintf(err, errlen, "%s:%d: %s", path, line, why);
            sws_htpasswd_free(h);
            return NULL;
        }
        *colon = '\0';
        h->e[h->n++] = (entry){s, (size_t)(colon - s), colon + 1};
        s = next;
    }
    if (h->n == 0) {
        snprintf(err, errlen, "%s: no users", path);
        sws_htpasswd_free(h);
        return NULL;
    }
    static _Atomic uint64_t loads;
    h->gen = atomic_fetch_add(&loads, 1) + 1;
    return h;
}

void sws_htpasswd_free(sws_htpasswd *h) {
    if (!h)
        return;
    free(h->e);
    free(h->text);
    free(h);
}

int sws_htpasswd_count(const sws_htpasswd *h) {
    return h ? h->n : 0;
}

uint64_t sws_htpasswd_gen(const sws_htpasswd *h) {
    return h->gen;
}

/* Equal strings of equal length, in time that depends on the length only. */
static bool same(const char *a, const char *b) {
    size_t n = strlen(a);
    if (n != strlen(b))
        return false;
    unsigned char d = 0;
    for (size_t i = 0; i < n; i++)
        d |= (unsigned char)(a[i] ^ b[i]);
    return d == 0;
}

bool sws_htpasswd_check(const sws_htpasswd *h, const char *user, size_t ulen, const char *pass,
                        size_t plen, struct crypt_data *scratch) {
    if (!h || h->n == 0)
        return false;
    const entry *found = NULL;
    for (int i = 0; i < h->n && !found; i++)
        if (h->e[i].ulen == ulen && memcmp(h->e[i].user, user, ulen) == 0)
            found = &h->e[i];
    /* crypt takes a C string: a password with a NUL in it cannot match. */
    char pw[256];
    bool ok = plen < sizeof pw && !memchr(pass, '\0', plen);
    if (ok)
        memcpy(pw, pass, plen);
    pw[ok ? plen : 0] = '\0';
    const char *hash = found ? found->hash : h->e[0].hash;
    scratch->initialized = 0;
    const char *out = crypt_rn(pw, hash, scratch, (int)sizeof(*scratch));
    explicit_bzero(pw, sizeof pw);
    bool match = out && out[0] != '*' && same(out, hash);
    return found && ok && match;
}
