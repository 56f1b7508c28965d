/* main.c — the `ncclscope` command: dispatches to the subcommands of commands.h.
 * Exit codes: those of the subcommand; 2 for an unknown command or no command. */
#include <stdio.h>
#include <string.h>

#include "cmd/commands.h"
#include "ncclscope/format.h"

#define NCS_VERSION "0.1.0"

struct command { const char *name; int (*fn)(int, char **); const char *help; };
#define NCS_CMD_ENTRY_(name, fn, help) {#name, fn, help},
static const struct command commands[] = {NCS_COMMANDS(NCS_CMD_ENTRY_)};
#undef NCS_CMD_ENTRY_

static void usage(FILE *f) {
  fprintf(f, "usage: ncclscope COMMAND [ARGS...]\n\ncommands:\n");
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].help);
  fprintf(f, "  %-10s %s\n", "help", "this list");
  fprintf(f, "\n`ncclscope --version` prints the version. Exit codes: 0 ok, 1 damaged or truncated\n"
             "input (or a finding), 2 bad usage or unreadable input.\n");
}

int main(int argc, char **argv) {
  if (argc < 2) { usage(stderr); return 2; }
  const char *cmd = argv[1];
  if (strcmp(cmd, "help") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0) {
    usage(stdout);
    return 0;
  }
  if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
    printf("ncclscope %s (trace format %d.%d)\n", NCS_VERSION, NCS_FORMAT_MAJOR, NCS_FORMAT_MINOR);
    return 0;
  }
  for (size_t i = 0; i < sizeof commands / sizeof *commands; i++)
    if (strcmp(cmd, commands[i].name) == 0) return commands[i].fn(argc - 1, argv + 1);
  fprintf(stderr, "ncclscope: unknown command '%s'\n\n", cmd);
  usage(stderr);
  return 2;
}
