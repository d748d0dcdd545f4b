/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Units people read, for the human tables; rules and sources as text (xrl_format.c). */
#ifndef XRL_FORMAT_H
#define XRL_FORMAT_H

#include <stddef.h>
#include "xrl_common.h"

/* Human units: "1.2M", "340 MB", rates "100/s". */
void xrl_fmt_count(double v, char *buf, size_t len);
void xrl_fmt_bytes(double v, char *buf, size_t len);
void xrl_fmt_rate(const struct xrl_rule_def *d, char *buf, size_t len);
/* A bucket key as top shows it: the address, with /LEN when its rule's --per groups sources. */
const char *xrl_action_name(__u8 action);
/*
 * A bucket key's source as `top` and the exporter name it: the address, with
 * /LEN when the limit rule d aggregates by --per (d NULL: the rule is gone).
 */
void xrl_source_format(const struct xrl_bucket_key *k, const struct xrl_rule_def *d,
		       char *buf, size_t len);
const char *xrl_mode_name(__u8 mode);

#endif /* XRL_FORMAT_H */
