/* watch.c — `ncclscope watch [--hang-after S] [--interval S] [--once] DIR`: a running job's
 * ranks, live.
 *
 * Contract: every interval (default 1 s) reads every trace in DIR (analysis/hang.h; the files
 * are being written, so the last chunk may be partial: that is a cut, not damage) and shows
 * one line per rank: state, heartbeat age (the last chunk's CLOCK: the writer writes one every
 * flush period even when the job makes no call), the last collective that returned, the call
 * in flight and for how long, calls per second since the previous refresh. On a terminal the
 * table is redrawn in place; otherwise each refresh prints plain lines, a block per refresh.
 * Exit codes (cmd/commands.h): 1 as soon as a verdict fires (hang, dead rank, init hang,
 * desync; printed with its evidence), 0 when every trace is complete (the job ended cleanly),
 * 1 when every trace is cut and silent for longer than the hang threshold and the shim's
 * idle heartbeat period (format.h NCS_IDLE_BEAT_MS) + 1 s (the job was killed), 2 bad usage, 4 when DIR cannot be read. --once: one refresh, then 1 on a verdict,
 * else 0. Waits for DIR to get traces. Never writes anything but stdout/stderr. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "analysis/hang.h"
#include "base/cli.h"
#include "cmd/commands.h"
#include "ncclscope/ops.h"
#include "base/json.h"

struct prev { char *path; uint64_t calls; int64_t at; };

static int64_t now_rt(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static const char *opn(uint32_t op) {
  const char *s = ncs_op_name(op);
  return s ? s : "?";
}

static double rate_of(struct prev **pv, int *npv, const struct ncs_hang_rank *r, int64_t now) {
  for (int i = 0; i < *npv; i++) {
    struct prev *p = &(*pv)[i];
    if (strcmp(p->path, r->path)) continue;
    double dt = (double)(now - p->at) / 1e9;
    double rate = dt > 0 && r->calls >= p->calls ? (double)(r->calls - p->calls) / dt : 0;
    p->calls = r->calls;
    p->at = now;
    return rate;
  }
  struct prev *n = realloc(*pv, (size_t)(*npv + 1) * sizeof *n);
  if (!n) return 0;
  *pv = n;
  n[*npv].path = strdup(r->path);
  if (!n[*npv].path) return 0;
  n[*npv].calls = r->calls;
  n[*npv].at = now;
  (*npv)++;
  return 0;
}

/* Seconds from t to now, never negative: a heartbeat written while the files were read, or
 * a host whose clock runs ahead of this one, is "0.0s ago", not "-0.2s ago". */
static double age_s(int64_t now, int64_t t) { return now > t ? (double)(now - t) / 1e9 : 0.0; }

static void print_table(const struct ncs_hang *h, int tty, int64_t now, struct prev **pv, int *npv) {
  char ts[64];
  ncs_hang_time(h, now, ts, sizeof ts);
  if (tty) fputs("\033[H\033[2J", stdout);
  printf("ncclscope watch  %s  %d rank(s)\n", ts, ncs_hang_nranks(h));
  printf("%-6s %-24s %-9s %9s  %-34s %-40s %9s\n", "rank", "host:pid", "state", "heartbeat", "last collective",
         "in flight", "calls/s");
  for (int i = 0; i < ncs_hang_nranks(h); i++) {
    const struct ncs_hang_rank *r = ncs_hang_rank_at(h, i);
    char rk[16], hp[96], beat[32], last[80], infl[96];
    if (r->rank >= 0) snprintf(rk, sizeof rk, "%d", r->rank); else snprintf(rk, sizeof rk, "?");
    snprintf(hp, sizeof hp, "%.60s:%u", r->host, r->pid);
    const char *state = r->complete ? "done" : r->damaged ? "damaged" : "running";
    if (r->alive_rt) snprintf(beat, sizeof beat, "%.1fs ago", age_s(now, r->alive_rt));
    else snprintf(beat, sizeof beat, "-");
    if (r->has_last)
      snprintf(last, sizeof last, "%s seq %" PRIu64 " (%.1fs ago)", opn(r->last_op), r->last_seq,
               age_s(now, r->last_exit_rt));
    else snprintf(last, sizeof last, "-");
    if (r->inflight)
      snprintf(infl, sizeof infl, "%s%s%s seq %" PRIu64 " for %.1fs", r->inflight == 2 ? "GPU " : "", opn(r->in_op),
               "", r->in_seq, r->in_since_rt ? age_s(now, r->in_since_rt) : 0.0);
    else snprintf(infl, sizeof infl, "-");
    double rate = rate_of(pv, npv, r, now);
    printf("%-6s ", rk);
    ncs_text_escape(stdout, hp, strlen(hp));
    printf("%*s %-9s %9s  %-34s %-40s %9.1f\n", (int)(strlen(hp) < 24 ? 24 - strlen(hp) : 0), "", state, beat,
           last, infl, rate);
  }
  if (!tty) printf("\n");
  fflush(stdout);
}

/* Verdicts watch acts on: every one but "ended inside NCCL", which a running job shows at any
 * refresh that catches a rank inside a call (its table's "in flight" column says that), and
 * "calls lost" (the job itself is not stopped by it). */
static int acted_on(const struct ncs_hang_verdict *v) {
  return v->kind != NCS_HANG_IN_FLIGHT && v->kind != NCS_HANG_CALLS_LOST && v->kind != NCS_HANG_MISSING;
}
static int nacted(const struct ncs_hang *h) {
  int n = 0;
  for (int i = 0; i < ncs_hang_nverdicts(h); i++) n += acted_on(ncs_hang_verdict_at(h, i));
  return n;
}

static void print_verdicts(const struct ncs_hang *h) {
  for (int i = 0; i < ncs_hang_nverdicts(h); i++) {
    const struct ncs_hang_verdict *v = ncs_hang_verdict_at(h, i);
    if (!acted_on(v)) continue;
    printf("\nPROBLEM %s: %s\n", v->id, v->title);
    for (int k = 0; k < v->nevidence; k++) {
      printf("  - ");
      ncs_text_escape(stdout, v->evidence[k], strlen(v->evidence[k]));
      printf("\n");
    }
    if (v->more) printf("  - ... and %d more\n", v->more);
    printf("  next step: %s\n", v->next);
  }
  fflush(stdout);
}

/* The *.ncs files of dir (sorted), or -1 when dir cannot be read. */
static int list_traces(const char *dir, char ***out) {
  *out = NULL;
  struct stat sb;
  if (stat(dir, &sb) != 0) return errno == ENOENT ? 0 : -1;
  if (!S_ISDIR(sb.st_mode)) return -1;
  char *p = (char *)dir;
  return ncs_paths_expand(1, &p, out);
}

static const struct option watch_opts[] = {{"hang-after", required_argument, NULL, 'a'},
                                           {"interval", required_argument, NULL, 'i'},
                                           {"once", no_argument, NULL, '1'}, {0}};
static const struct ncs_cli watch_cli = {
  "watch",
  "usage: ncclscope watch [--hang-after SECONDS] [--interval SECONDS] [--once] DIR\n"
  "A running job's ranks, live: state, heartbeat, last collective, call in flight, calls/s.\n"
  "  -a, --hang-after SECONDS  raise a hang once a rank was seen alive that long after a peer\n"
  "                            entered a collective it never entered (default 2)\n"
  "  -i, --interval SECONDS    refresh period (default 1)\n"
  "  -1, --once                one refresh, then exit\n"
  "  -h, --help                this text\n"
  "Exit: 0 every rank finished (or --once without a verdict), 1 a hang, dead rank, init hang or\n"
  "desync (printed), or every trace cut and silent, 2 bad usage, 4 DIR cannot be read.\n",
  watch_opts, 0};

int cmd_watch(int argc, char **argv) {
  double hang_after = NCS_HANG_DEFAULT_S, interval = 1.0;
  int once = 0, r;
  while ((r = ncs_cli_next(&watch_cli, argc, argv)) != NCS_CLI_DONE) {
    if (r == '1') once = 1;
    else if (r == 'a' || r == 'i') {
      double *dst = r == 'a' ? &hang_after : &interval;
      if (ncs_cli_double(&watch_cli, r == 'a' ? "--hang-after" : "--interval", optarg, dst) != 0) return NCS_EXIT_USAGE;
      if (!(*dst >= 0 && *dst < 1e6)) return ncs_cli_fail(&watch_cli, "%s wants seconds >= 0", r == 'a' ? "--hang-after" : "--interval");
    } else return ncs_cli_exit(r);
  }
  if (argc - optind != 1) return ncs_cli_fail(&watch_cli, argc - optind ? "one DIR only" : "no DIR given");
  const char *dir = argv[optind];
  if (interval < 0.05) interval = 0.05;
  int tty = isatty(1);
  struct prev *pv = NULL;
  int npv = 0, rc = -1;
  while (rc < 0) {
    char **files;
    int n = list_traces(dir, &files);
    if (n < 0) { fprintf(stderr, "ncclscope watch: %s: cannot read the directory\n", dir); rc = NCS_EXIT_UNREADABLE; break; }
    int64_t now = now_rt();
    if (n > 0) {
      struct ncs_hang *h = ncs_hang_new(n, files, hang_after);
      if (!h) { ncs_paths_free(files, n); rc = NCS_EXIT_UNREADABLE; break; }
      ncs_hang_read_all(h);
      ncs_hang_finish(h);
      now = now_rt(); /* after the read: what it found was written before now */
      print_table(h, tty, now, &pv, &npv);
      int complete = 0, cut = 0;
      int64_t alive = 0;
      for (int i = 0; i < ncs_hang_nranks(h); i++) {
        const struct ncs_hang_rank *r = ncs_hang_rank_at(h, i);
        complete += r->complete;
        cut += !r->complete;
        if (r->alive_rt > alive) alive = r->alive_rt;
      }
      if (nacted(h)) {
        print_verdicts(h);
        rc = NCS_EXIT_FINDING;
      } else if (complete == n) {
        printf("every rank finished (%d complete trace(s))\n", n);
        rc = NCS_EXIT_OK;
      } else if (cut == n && complete == 0 && alive &&
                 now - alive > (hang_after * 1e9 > NCS_IDLE_BEAT_MS * 1e6 ? (int64_t)(hang_after * 1e9) : NCS_IDLE_BEAT_MS * 1000000ll) + 1000000000) {
        /* silent for longer than the threshold, and than an idle process's heartbeat period */
        char t[64];
        ncs_hang_time(h, alive, t, sizeof t);
        printf("every rank's trace is cut and silent since %s: the job was killed or stopped\n", t);
        rc = NCS_EXIT_FINDING;
      } else if (once) rc = NCS_EXIT_OK;
      ncs_hang_free(h);
    } else if (once) {
      fprintf(stderr, "ncclscope watch: no trace files (*.ncs) in %s\n", dir);
      rc = NCS_EXIT_UNREADABLE;
    }
    ncs_paths_free(files, n);
    if (rc >= 0) break;
    struct timespec ts = {(time_t)interval, (long)((interval - (double)(time_t)interval) * 1e9)};
    nanosleep(&ts, NULL);
  }
  for (int i = 0; i < npv; i++) free(pv[i].path);
  free(pv);
  return rc;
}
