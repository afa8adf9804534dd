/* Runs a fuzz target without libFuzzer on the files given, for make check
 * (gcc build): prints "== NAME" for each file, then what the target notes
 * about it (see fuzz_note), and exits with the target's first failure. */
#include "fuzz.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        uint8_t *data;
        size_t len;
        qk_err err;
        if (qk_read_file(argv[i], &data, &len, &err) != 0) {
            fprintf(stderr, "replay: %s: %s\n", argv[i], err.msg);
            return 2;
        }
        const char *name = strrchr(argv[i], '/');
        printf("== %s\n", name ? name + 1 : argv[i]);
        LLVMFuzzerTestOneInput(data, len);
        fflush(stdout);
        free(data);
    }
    return 0;
}
