/* sws_static: the pieces of the static scenario that need no running server —
 * the request-path normaliser, opening below a root directory, validators and
 * ranges, Accept-Encoding, and the content-type map. Nothing here allocates on
 * a request; the type map is built once at start and at reload. */
#ifndef SWS_STATIC_H
#define SWS_STATIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <time.h>

/* ---- path ---------------------------------------------------------------- */

/* What sws_static_path() found, besides the path. */
#define SWS_PATH_DIR 0x1     /* the path ended in '/' (a directory was asked for) */
#define SWS_PATH_DOTFILE 0x2 /* a segment begins with '.' (not "." or "..": removed) */

/* Turns a request target's path (up to '?' or '#') into a path relative to
 * the root: percent-decoded once, "." and ".." segments removed, slashes
 * merged. The result has no leading '/', no empty, "." or ".." segment and no
 * NUL; "" is the root itself. out must hold len + 1 bytes (the result is never
 * longer than the input). Returns its length, or -EINVAL (answer 400) for a
 * target not starting with '/', a bad %-escape, a decoded NUL, or ".." above
 * the root; *flags gets SWS_PATH_*. An encoded '/' (%2F) is a separator, as
 * nginx decodes it: "/a%2F..%2Fb" is "b". */
int sws_static_path(const char *target, size_t len, char *out, unsigned *flags);

/* The same for a path that is already decoded (a try_files candidate built
 * from the decoded request path): no %-escape is read and '?' and '#' are
 * bytes of names, so that nothing is decoded twice ("%2e" stays three bytes).
 * The same result invariant; -EINVAL for a path not starting with '/', a NUL,
 * or ".." above the root. */
int sws_static_path_plain(const char *path, size_t len, char *out, unsigned *flags);

/* ---- opening below the root ---------------------------------------------- */

typedef enum sws_symlinks {
    SWS_SYMLINKS_OFF = 0, /* followed only where they resolve inside the root */
    SWS_SYMLINKS_ON,      /* followed anywhere (the path itself still cannot climb) */
    SWS_SYMLINKS_OWNER,   /* inside the root, and only when link and target have one owner */
} sws_symlinks;

/* Opens rel (from sws_static_path) below the directory rootfd, read-only and
 * non-blocking, never outside the root unless symlinks is ON: openat2 with
 * RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS where the kernel has it, else (or
 * with fallback set) a walk one component at a time with O_NOFOLLOW that
 * expands links itself under the same rules. Returns the fd, or -ENOENT,
 * -ENOTDIR, -EACCES, -ELOOP (too many links), -EXDEV (a link leaves the root,
 * or an owner differs: answer 403) or another negative errno. */
int sws_static_open(int rootfd, const char *rel, sws_symlinks symlinks, bool fallback);

/* Whether this kernel has openat2 (checked once; thread-safe). */
bool sws_static_have_openat2(void);

/* ---- directory listings ---------------------------------------------------- */

/* Entries a listing shows at most: past them, the page says how many more
 * there are (a listing is built whole in memory, up to a few MB). */
#define SWS_LISTING_MAX 10000

/* The HTML page listing the directory rel below rootfd (opened as
 * sws_static_open does, with the same links rule): directories first, then
 * files, each group sorted by name (bytewise), with sizes and modification
 * times (UTC); names HTML-escaped (bytes that are not UTF-8 and controls
 * shown as U+FFFD) and percent-encoded in the links; names beginning with
 * '.' only with dotfiles; entries that are neither files nor directories,
 * and links the rule refuses, left out. Blocking (directory reads, a stat per
 * entry): for a thread beside the loop. 0 with *out (malloc'd, the caller
 * frees) and *len, or a negative errno (-ENOTDIR: rel is not a directory). */
int sws_static_listing(int rootfd, const char *rel, sws_symlinks symlinks, bool fallback,
                       bool dotfiles, char **out, size_t *len);

/* ---- validators, ranges, encodings --------------------------------------- */

/* nginx's ETag: "%x-%x" of mtime and size, quoted. out has room for 40. */
size_t sws_static_etag(char *out, time_t mtime, uint64_t size);

/* Parses an IMF-fixdate (and the two obsolete forms RFC 9110 5.6.7 says a
 * recipient must accept). Returns -1 when it is not a date. */
time_t sws_static_parse_date(const char *s, size_t len);

/* If-None-Match against etag (weak comparison, RFC 9110 13.1.2): true when a
 * listed tag matches or the value is "*". */
bool sws_static_inm_match(const char *v, size_t len, const char *etag);

/* If-Range (RFC 9110 13.1.5): true when the range may be applied — a strong
 * ETag equal to etag, or a date exactly equal to mtime. */
bool sws_static_if_range(const char *v, size_t len, const char *etag, time_t mtime);

/* Outcome of sws_static_range(). */
#define SWS_RANGE_NONE 0          /* no usable Range: send 200 with the whole file */
#define SWS_RANGE_ONE 1           /* send 206, bytes [*first, *last] */
#define SWS_RANGE_UNSATISFIABLE 2 /* send 416 with Content-Range: bytes * / size */

/* Parses a Range value against a representation of size bytes (RFC 9110
 * 14.1.2): "bytes=A-B", "bytes=A-", "bytes=-N". Another unit, a syntax error
 * and several ranges are all NONE: the whole file with 200, which RFC 9110
 * 14.2 allows (we build no multipart/byteranges; nginx does for several). */
int sws_static_range(const char *v, size_t len, uint64_t size, uint64_t *first, uint64_t *last);

/* Which precompressed siblings Accept-Encoding allows: SWS_ENC_* bits of the
 * codings listed with q > 0 (or covered by "*" with q > 0 and not listed). */
#define SWS_ENC_GZIP 0x1
#define SWS_ENC_BR 0x2
unsigned sws_static_accept_encoding(const char *v, size_t len);

/* ---- content types ------------------------------------------------------- */

/* Extension (lowercased, without the dot) to type, from a mime.types file.
 * Built at start and reload; read-only afterwards, shared by the loops until
 * the next table replaces it (the old one freed after every loop moved on). */
typedef struct sws_mime sws_mime;

/* Loads path (NULL: /etc/mime.types). Returns NULL with -errno in *err when it
 * cannot be read; a missing file is an error so that a typo is seen at start. */
sws_mime *sws_mime_load(const char *path, int *err);
void sws_mime_free(sws_mime *m);
/* The type for a file name (its last extension, case-insensitive), or NULL. */
const char *sws_mime_lookup(const sws_mime *m, const char *name, size_t len);
/* Entries loaded (for the log line at start). */
size_t sws_mime_count(const sws_mime *m);

#endif
