/* The config tests' ini files: text written to NAME in SWS_TEST_TMP (the
 * build directory, set by CTest) or /tmp; the path is returned (static). */
#ifndef TEST_INI_H
#define TEST_INI_H

#include <stdio.h>
#include <stdlib.h>

static inline const char *test_write_ini(const char *name, const char *text) {
    static char path[512];
    const char *dir = getenv("SWS_TEST_TMP");
    snprintf(path, sizeof(path), "%s/%s", dir ? dir : "/tmp", name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

#endif
