/* window_render.h — a bounded trace's whole run and last window (analysis/window.h) in words:
 * report's "Bounded trace" section and its JSON "window" (docs/JSON.md), and the pieces of text
 * html, timeline and doctor say it with. Nothing is printed for a job with no bounded file
 * (s->files 0) or no result (NULL). */
#ifndef NCS_WINDOW_RENDER_H
#define NCS_WINDOW_RENDER_H
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "analysis/window.h"
#include "base/json.h"

void ncs_window_print_text(const struct ncs_window_sum *s, FILE *out);
void ncs_window_print_json(const struct ncs_window_sum *s, struct ncs_json *j);
/* "2026-12-06 07:26:37.230 UTC" ("?" for 0); "32KiB"; "1800 s, 2 GiB" (as NCCLSCOPE_KEEP=30m,2G) */
void ncs_window_utc(uint64_t ns, char *buf, size_t n);
void ncs_window_size_text(unsigned bclass, char *buf, size_t n);
void ncs_window_keep_text(const struct ncs_window_sum *s, char *buf, size_t n);
#endif
