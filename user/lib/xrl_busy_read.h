/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Busy clients as the readers see them (bpf/xrl_busy.h): is a source a
 * --syn rule limits one that sends established TCP, and is that proven?
 */
#ifndef XRL_BUSY_READ_H
#define XRL_BUSY_READ_H

#include <jansson.h>

#include "xrl_busy.h"   /* enum xrl_busy_mark */
#include "xrl_maps.h"

/* The slot that holds the source of key (0), or -ENOENT (none, another source's), or -errno. */
int xrl_busy_read(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		  struct xrl_busy_slot *out);
/* Its mark at now (CLOCK_MONOTONIC): enum xrl_busy_mark; NONE when it has none or cannot be read. */
int xrl_busy_mark_of(const struct xrl_maps *m, const struct xrl_bucket_key *key, __u64 now);

/* The mark in words, for a view ("" for NONE). */
const char *xrl_busy_mark_text(int mark);
/* What an operator should do about a source so marked (NULL for NONE). */
const char *xrl_busy_advice(int mark);
/* The mark's keyword for scripts ("proven", "seen"; NULL for NONE). */
const char *xrl_busy_mark_word(int mark);
/*
 * A row's or an event's mark in JSON, as `xrl top --json` and the daemon's
 * limited lines carry it: busy_client (the keyword), state (the mark in
 * words) and advice set on o; nothing for NONE. 0, or -ENOMEM.
 */
int xrl_busy_json(json_t *o, int mark);

#endif /* XRL_BUSY_READ_H */
