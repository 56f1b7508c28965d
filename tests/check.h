/* check.h — the smallest unit-test helper: CHECK(cond, name) prints "PASS: name" or
 * "FAIL: name (file:line)" (tests/run.sh counts these lines); check_done() is the exit code. */
#ifndef NCS_CHECK_H
#define NCS_CHECK_H
#include <stdio.h>
static int check_failures_;
#define CHECK(cond, ...) do { \
    if (cond) { printf("PASS: "); printf(__VA_ARGS__); printf("\n"); } \
    else { check_failures_++; printf("FAIL: "); printf(__VA_ARGS__); \
           printf(" (%s:%d: %s)\n", __FILE__, __LINE__, #cond); } \
    fflush(stdout); } while (0)
static inline int check_done(void) { return check_failures_ ? 1 : 0; }
#endif
