/*
 * fake_cupti_int.h - between the two files of the fake libcupti.so.13:
 * fake_cupti.c (activity, callbacks, the script) and fake_cupti_prof.c
 * (the SASS metrics and PC sampling APIs).
 */
#ifndef GPUFL_TESTS_FAKE_CUPTI_INT_H
#define GPUFL_TESTS_FAKE_CUPTI_INT_H

#include <stdint.h>

/* fake_cupti.c: run the subscriber's resource callback (if enabled) as
 * CUPTI does, inside-callback flag set; 1 when it ran. */
int fake_resource_callback(uint32_t cbid, const void *data);
/* Parse FAKECUPTI_SCRIPT now (idempotent). */
void fake_script_init(void);

/* fake_cupti_prof.c: a script line it owns (1) or not (0); the context
 * and module are created at the first launch; a launch of `name` ran. */
int fake_prof_parse(const char *line);
void fake_prof_context(void);
void fake_prof_ran(const char *name);

#endif
