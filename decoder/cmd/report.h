/* report.h — constants of `ncclscope report`'s output shared with its analyses and tests.
 * The JSON document is specified in docs/JSON.md; NCS_REPORT_JSON_VERSION is bumped on any
 * change a consumer could notice other than new members. */
#ifndef NCS_REPORT_H
#define NCS_REPORT_H
#define NCS_REPORT_JSON_VERSION 3
#endif
