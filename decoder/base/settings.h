/* settings.h — the decoder's settings from the environment, one struct read once: at the
 * command's start (cmd/main.c), or at first use by a program that links the decoder without
 * main (the unit tests). Every room reads ncs_settings(); no other decoder file reads an
 * NCCLSCOPE_ variable, except `run` (cmd/run.c), which looks at the shim's own settings
 * (NCCLSCOPE_DIR, NCCLSCOPE_DISABLE, NCCLSCOPE_PROFILER) to say what the job it starts will do.
 * The table of these settings, defaults and effects, is docs/CLI.md "Settings read by the
 * commands"; the man page's ENVIRONMENT lists them (tests/test_docs_settings.sh). */
#ifndef NCS_SETTINGS_H
#define NCS_SETTINGS_H

struct ncs_settings {
  const char *shim;       /* NCCLSCOPE_SHIM: the shim `run` preloads; NULL unset or empty */
  int threads;            /* NCCLSCOPE_THREADS: reader threads when > 0; 0: one per online CPU */
  int lockstep;           /* NCCLSCOPE_LOCKSTEP: 1 or 0 forces the loader's way; -1 chosen from sizes */
  int progress;           /* NCCLSCOPE_PROGRESS: 0 never a bar, 1 a bar from the start,
                             -1 a bar on a terminal after 0.2 s */
  const char *step_mark;  /* NCCLSCOPE_STEP_MARK: the operation that ends a step; NULL unset */
  const char *read_count; /* NCCLSCOPE_READ_COUNT: where reads are counted; NULL unset or empty */
};

/* The settings (read from the environment at the first call when ncs_settings_read() was not). */
const struct ncs_settings *ncs_settings(void);
/* Reads the environment again: main at start, a test after setenv (one thread only). */
void ncs_settings_read(void);
#endif
