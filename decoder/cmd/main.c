/* main.c — the `ncclscope` command: dispatches to the subcommands of commands.h.
 * `ncclscope help CMD` is `ncclscope CMD --help`; a mistyped command gets the nearest one.
 * Exit codes: those of the subcommand (cmd/commands.h); 2 for an unknown command or no command. */
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "base/cli.h"
#include "base/settings.h"
#include "cmd/commands.h"
#include "ncclscope/format.h"
#include "io/trace.h"

#define NCS_VERSION "0.1.0"

struct command { const char *name; int (*fn)(int, char **); const char *help; };
#define NCS_CMD_ENTRY_(name, fn, help) {#name, fn, help},
static const struct command commands[] = {NCS_COMMANDS(NCS_CMD_ENTRY_)};
#undef NCS_CMD_ENTRY_

static void usage(FILE *f) {
  fprintf(f, "usage: ncclscope COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "  %-10s %s\n", "help", "this list; help COMMAND: that command's options");
  fprintf(f, "\n`ncclscope --version` prints the version. Exit codes, every command: 0 ok (a cut\n"
             "trace is a warning), 1 a finding (doctor, compare, watch), 2 bad usage, 3 damaged input,\n"
             "4 unreadable input.\n");
}

static const struct command *find(const char *name) {
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(name, commands[i].name) == 0) return &commands[i];
  return NULL;
}

static int unknown(const char *name) {
  const char *names[sizeof commands / sizeof *commands + 1];
  size_t n = 0;
  for (; n < sizeof commands / sizeof *commands; n++) names[n] = commands[n].name;
  names[n++] = "help";
  const char *near = ncs_cli_nearest(name, names, (int)n);
  if (near) fprintf(stderr, "ncclscope: unknown command '%s'; did you mean '%s'?\n", name, near);
  else fprintf(stderr, "ncclscope: unknown command '%s'\n", name);
  fprintf(stderr, "Try 'ncclscope help'.\n");
  return 2;
}

int main(int argc, char **argv) {
  /* Files are read one after another on each thread, and each file's reading state (buffers of
   * a few MiB) is freed when it is done: keep freed memory for the next file instead of handing
   * it back to the kernel and faulting it in again (a fifth of report's time on 1024 files). */
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 64 << 20);
  ncs_settings_read(); /* every NCCLSCOPE_ setting of the commands, once (base/settings.h) */
  if (argc < 2) { usage(stderr); return 2; }
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    if (argc < 3) { usage(stdout); return 0; }
    const struct command *c = find(argv[2]);
    if (!c) return unknown(argv[2]);
    char *hargv[] = {(char *)c->name, (char *)"--help", NULL};
    return c->fn(2, hargv);
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("ncclscope %s (trace format %d.%d)\n", NCS_VERSION, NCS_FORMAT_MAJOR, NCS_FORMAT_MINOR);
    return 0;
  }
  const struct command *c = find(cmd);
  if (c) { ncs_paths_command = c->name; return c->fn(argc - 1, argv + 1); }
  if (cmd[0] == '-') {
    fprintf(stderr, "ncclscope: unknown option '%s' (options follow the command)\nTry 'ncclscope help'.\n", cmd);
    return 2;
  }
  return unknown(cmd);
}
