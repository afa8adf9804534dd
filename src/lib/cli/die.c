/* Ending a program on an error (include/qk/die.h). */
#include "qk/die.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* The first thread to stop the program; another thread that fails at the
 * same time (out of memory in every worker) waits for its exit instead of
 * printing a second line and exiting under it. */
static pthread_mutex_t dying = PTHREAD_MUTEX_INITIALIZER;
static pthread_t dying_thread;

static void stop_once(int status)
{
    if (pthread_mutex_trylock(&dying) != 0) {
        if (pthread_equal(dying_thread, pthread_self()))
            _exit(status); /* failed again on its way out */
        for (;;)
            pause();
    }
    dying_thread = pthread_self();
}

void qk_die(int status, const char *path, const char *fmt, ...)
{
    stop_once(status);
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qk_report_error(path, msg);
    qk_remove_pending_outputs();
    exit(status);
}

static void die_out_of_memory(size_t bytes)
{
    qk_die(QK_EXIT_DATA, NULL, "out of memory (allocating %zu bytes)", bytes);
}

void qk_die_on_out_of_memory(void) { qk_set_out_of_memory_handler(die_out_of_memory); }
