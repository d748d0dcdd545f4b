/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The daemon's log: one line per event on stderr (journald adds the time
 * and host under systemd), as text or as one JSON object per line.
 */
#ifndef XRL_LOG_H
#define XRL_LOG_H

#include <stdbool.h>
#include <jansson.h>

enum xrl_log_level { XRL_LOG_ERR, XRL_LOG_WARN, XRL_LOG_INFO };

/* "text" or "json"; 0 or -EINVAL. */
int xrl_log_init(const char *format, const char *instance);
/* A string no line may show (the Redis password): each occurrence is written "***". */
void xrl_log_secret(const char *s);
void xrl_log(enum xrl_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/*
 * An event with fields: text "msg key=value ...", JSON {"msg":..., fields...}.
 * fields is a JSON object (reference stolen), may be NULL.
 */
void xrl_log_event(enum xrl_log_level level, const char *msg, json_t *fields);

#endif /* XRL_LOG_H */
