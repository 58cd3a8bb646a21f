/* The SNI name table (tls_names.h): open addressing over one array, kept at
 * most half full so a probe ends within a few slots; keys live in one string
 * arena. Exact names and wildcard parents share the table, told apart by a
 * flag, so a lookup is at most two probes sequences: the name, then (if it has
 * a parent) the parent as a wildcard. */
#include "tls_names.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct slot {
    uint64_t hash; /* 0: empty (a key's hash is never 0) */
    uint32_t off;  /* of the key in the arena (a wildcard's key is its parent) */
    uint16_t len;
    uint16_t wild;
    uint32_t value;
} slot;

struct sws_tls_names {
    slot *slots;
    size_t cap; /* a power of two */
    size_t n;
    char *arena;
    size_t used, room;
};

/* FNV-1a over the lowercased bytes, the flag mixed in; never 0. */
static uint64_t hash_of(const char *s, size_t len, bool wild) {
    uint64_t h = wild ? 0x84222325cbf29ce4ull : 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        h = (h ^ c) * 0x100000001b3ull;
    }
    return h ? h : 1;
}

/* Equal to a key kept lowercase, case-insensitively on the probe's side. */
static bool same(const char *key, const char *s, size_t len) {
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        if ((unsigned char)key[i] != c)
            return false;
    }
    return true;
}

sws_tls_names *sws_tls_names_new(void) {
    sws_tls_names *t = calloc(1, sizeof(*t));
    if (!t)
        return NULL;
    t->cap = 16;
    t->slots = calloc(t->cap, sizeof(slot));
    if (!t->slots) {
        free(t);
        return NULL;
    }
    return t;
}

void sws_tls_names_free(sws_tls_names *t) {
    if (!t)
        return;
    free(t->slots);
    free(t->arena);
    free(t);
}

size_t sws_tls_names_count(const sws_tls_names *t) {
    return t->n;
}

static bool label_byte(unsigned char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

size_t sws_tls_name_normal(const char *name, size_t len, char *out) {
    if (len && name[len - 1] == '.')
        len--;
    if (len == 0 || len > SWS_TLS_NAME_LEN)
        return 0;
    size_t label = 0;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c + 32);
        if (c == '.') {
            if (label == 0)
                return 0;
            label = 0;
        } else if (label_byte(c) || (c == '*' && i == 0)) {
            label++;
        } else {
            return 0;
        }
        out[i] = (char)c;
    }
    if (label == 0)
        return 0;
    out[len] = '\0';
    return len;
}

/* The slot holding key (of that kind), or the empty slot where it would go. */
static slot *probe(const sws_tls_names *t, const char *key, size_t len, bool wild, uint64_t h) {
    size_t mask = t->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        slot *s = &t->slots[i];
        if (s->hash == 0)
            return s;
        if (s->hash == h && s->len == len && s->wild == wild && same(t->arena + s->off, key, len))
            return s;
    }
}

static int grow(sws_tls_names *t) {
    size_t cap = t->cap * 2;
    slot *old = t->slots, *fresh = calloc(cap, sizeof(slot));
    if (!fresh)
        return -ENOMEM;
    size_t oldcap = t->cap;
    t->slots = fresh;
    t->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].hash)
            *probe(t, t->arena + old[i].off, old[i].len, old[i].wild, old[i].hash) = old[i];
    free(old);
    return 0;
}

int sws_tls_names_add(sws_tls_names *t, const char *pattern, uint32_t value, uint32_t *old) {
    size_t len = strlen(pattern);
    bool wild = len > 2 && pattern[0] == '*' && pattern[1] == '.';
    const char *key = wild ? pattern + 2 : pattern;
    size_t klen = wild ? len - 2 : len;
    /* '*' only as a whole first label, and a parent of two labels at least:
     * "*.com" would claim a whole top-level domain. */
    if (klen == 0 || memchr(key, '*', klen) || (wild && !memchr(key, '.', klen)) ||
        (!wild && memchr(pattern, '*', len)))
        return -EINVAL;
    uint64_t h = hash_of(key, klen, wild);
    slot *s = probe(t, key, klen, wild, h);
    if (s->hash) {
        if (old)
            *old = s->value;
        return -EEXIST;
    }
    if ((t->n + 1) * 2 > t->cap) {
        if (grow(t) < 0)
            return -ENOMEM;
        s = probe(t, key, klen, wild, h);
    }
    if (t->used + klen + 1 > t->room) {
        size_t room = t->room ? t->room * 2 : 1024;
        while (room < t->used + klen + 1)
            room *= 2;
        char *a = realloc(t->arena, room);
        if (!a)
            return -ENOMEM;
        t->arena = a;
        t->room = room;
    }
    memcpy(t->arena + t->used, key, klen);
    t->arena[t->used + klen] = '\0';
    *s = (slot){
        .hash = h, .off = (uint32_t)t->used, .len = (uint16_t)klen, .wild = wild, .value = value};
    t->used += klen + 1;
    t->n++;
    return 0;
}

int sws_tls_names_find(const sws_tls_names *t, const char *name, size_t len, uint32_t *value) {
    if (len && name[len - 1] == '.')
        len--;
    if (len == 0 || len > SWS_TLS_NAME_LEN || t->n == 0)
        return 0;
    slot *s = probe(t, name, len, false, hash_of(name, len, false));
    if (s->hash) {
        *value = s->value;
        return 1;
    }
    /* The parent, for a wildcard: a first label of one byte at least. */
    const char *dot = memchr(name, '.', len);
    if (!dot || dot == name || (size_t)(dot - name) + 1 >= len)
        return 0;
    const char *parent = dot + 1;
    size_t plen = len - (size_t)(parent - name);
    s = probe(t, parent, plen, true, hash_of(parent, plen, true));
    if (s->hash) {
        *value = s->value;
        return 2;
    }
    return 0;
}

int sws_tls_names_get(const sws_tls_names *t, const char *pattern, uint32_t *value) {
    size_t len = strlen(pattern);
    bool wild = len > 2 && pattern[0] == '*' && pattern[1] == '.';
    const char *key = wild ? pattern + 2 : pattern;
    size_t klen = wild ? len - 2 : len;
    if (klen == 0 || t->n == 0)
        return 0;
    slot *s = probe(t, key, klen, wild, hash_of(key, klen, wild));
    if (!s->hash)
        return 0;
    *value = s->value;
    return 1;
}

uint64_t sws_tls_name_hash(const char *name, size_t len) {
    if (len && name[len - 1] == '.')
        len--;
    return hash_of(name, len, false);
}
