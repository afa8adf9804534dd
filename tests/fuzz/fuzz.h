/* Helpers shared by the fuzz targets (tests/fuzz/fuzz_*.c): handing bytes
 * to library functions that take a path, and checks that turn a broken
 * promise of the library into a crash libFuzzer records. */
#ifndef QK_FUZZ_H
#define QK_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "qk/common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Stops the run with a message when a promise does not hold. */
#define FUZZ_REQUIRE(cond, ...)                                                \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "fuzz: %s:%d: %s: ", __FILE__, __LINE__, #cond);   \
            fprintf(stderr, __VA_ARGS__);                                      \
            fputc('\n', stderr);                                               \
            abort();                                                           \
        }                                                                      \
    } while (0)

/* What a target notes about an input (the messages it got, what it
 * decoded) is printed when it is replayed by tests/fuzz/replay.c, so
 * make check can compare it with tests/fuzz/regressions.tsv; a fuzzing
 * run prints nothing. */
#ifdef FUZZ_REPLAY
#define fuzz_note(...) (printf(__VA_ARGS__), putchar('\n'))
#else
#define fuzz_note(...) ((void)0)
#endif

/* A message is one non-empty line of printable text: no control byte
 * from the input may split or overwrite it. */
static inline void fuzz_check_text(const char *msg, size_t cap)
{
    size_t n = strnlen(msg, cap);
    FUZZ_REQUIRE(n > 0 && n < cap, "empty or unterminated message");
    for (size_t i = 0; i < n; i++)
        FUZZ_REQUIRE((unsigned char)msg[i] >= 0x20 && msg[i] != 0x7f,
                     "control byte 0x%02x in message: %s", (unsigned char)msg[i], msg);
}

static inline void fuzz_check_message(const qk_err *err)
{
    fuzz_check_text(err->msg, sizeof err->msg);
    fuzz_note("%s", err->msg);
}

/* The bytes as a file: a memory file, rewritten for every input, named
 * /proc/self/fd/N (the same name each time). */
static inline const char *fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("fuzz-input", 0);
        FUZZ_REQUIRE(fd >= 0, "memfd_create failed");
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    FUZZ_REQUIRE(ftruncate(fd, 0) == 0, "ftruncate failed");
    size_t done = 0;
    while (done < size) {
        ssize_t n = pwrite(fd, data + done, size - done, (off_t)done);
        FUZZ_REQUIRE(n > 0, "pwrite failed");
        done += (size_t)n;
    }
    return path;
}

#endif
