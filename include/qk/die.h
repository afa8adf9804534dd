/* Ending a program on an error: the program layer (src/lib/cli), which
 * the programs and the modules that may exit (report, synth, archive)
 * use. The core, io and analysis modules never exit: they return -1 and a
 * qk_err to their caller. */
#ifndef QK_DIE_H
#define QK_DIE_H

#include "qk/common.h"

/* Reports like qk_report_error, removes the temporary files of the
 * outputs not yet committed and exits with status. */
void qk_die(int status, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4), noreturn));

/* Makes an allocation that fails exit 2 through qk_die (qk_args_init
 * calls it, before anything else). */
void qk_die_on_out_of_memory(void);

#endif
