/* golden_check.c — prints what ncs_trace_read() reports for each file, one line per file:
 *   NAME rc=R truncated=T damaged=D final=F chunks=C records=N dropped=X offset=O error=TEXT
 * used by tests/test_fuzz_golden.sh to hold the reader to tests/corrupt-golden/MANIFEST. */
#include <stdio.h>
#include <string.h>

#include "io/trace.h"

int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    struct ncs_visitor v;
    memset(&v, 0, sizeof v);
    struct ncs_read_status st;
    memset(&st, 0, sizeof st);
    int rc = ncs_trace_read(argv[i], &v, &st);
    const char *base = strrchr(argv[i], '/');
    printf("%s rc=%d truncated=%d damaged=%d final=%d chunks=%llu records=%llu dropped=%llu offset=%llu error=%.*s\n",
           base ? base + 1 : argv[i], rc, st.truncated, st.damaged, st.final_seen,
           (unsigned long long)st.chunks, (unsigned long long)st.records,
           (unsigned long long)st.dropped_total, (unsigned long long)st.error_offset,
           (int)sizeof st.error, st.error);
  }
  return 0;
}
