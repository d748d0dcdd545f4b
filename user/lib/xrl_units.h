/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The scalars rules and options are written in: whole numbers, prefixes,
 * rates, sizes, durations and protocols, parsed with a message for the
 * operator and formatted back. Depends on nothing of xrl but the shared
 * types.
 */
#ifndef XRL_UNITS_H
#define XRL_UNITS_H

#include <stddef.h>
#include "xrl_common.h"

#define XRL_ERRLEN 256
#define XRL_MAX_PPS 10000000ULL          /* fastest packet rate accepted */
#define XRL_MAX_BYTE_RATE (1ULL << 40)   /* bytes per second */
#define XRL_MAX_BYTE_BURST (1ULL << 40)

/* Write a message into err (errlen bytes); returns -1. */
int xrl_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

int xrl_parse_prefix(const char *s, __u8 *family, __u8 addr[16], __u8 *plen,
		     char *err, size_t errlen);
int xrl_parse_rate(const char *s, __u64 *count, __u32 *period, char *err, size_t errlen);
int xrl_parse_size(const char *what, const char *s, __u64 max, __u64 *out,
		   char *err, size_t errlen);
int xrl_parse_uint(const char *what, const char *s, __u64 min, __u64 max, __u64 *out,
		   char *err, size_t errlen);
/* A duration N[s|m|h] (sec, min, hour too) of 1 s to max_s, into ns. */
int xrl_parse_duration(const char *what, const char *s, __u64 max_s, __u64 *ns, char *err,
		       size_t errlen);
/* The same back: "30s", "10m", "1h" (the largest unit that divides it). */
void xrl_duration_format(__u64 ns, char *buf, size_t len);
int xrl_parse_proto(const char *s, __u8 *proto, char *err, size_t errlen);
const char *xrl_proto_name(__u8 proto);
void xrl_prefix_format(__u8 family, const __u8 addr[16], __u8 plen, char *buf, size_t len);

#endif /* XRL_UNITS_H */
