/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Lua scripts the daemon runs in Redis: every read-modify-write is one of these. */
#ifndef XRL_SCRIPTS_H
#define XRL_SCRIPTS_H

enum xrl_script {
	XRL_SCRIPT_GCRA = 0,   /* add admissions to a (rule, source) budget; return its debt */
	XRL_SCRIPT_HOSTS,      /* report this host's use of a rule; return live hosts and their use */
	XRL_SCRIPT_WINDOW,     /* --algo: add admissions to window counters; return the fleet's counts */
	XRL_SCRIPT_LOG,        /* --algo sliding-log: add a round's report to the log; return the others' */
	XRL_SCRIPT_TAKE,       /* xrl http --global sliding window or log: admit one request or not */
	XRL_SCRIPT_COUNT,
};

extern const char *const xrl_script_source[XRL_SCRIPT_COUNT];
extern const char *const xrl_script_name[XRL_SCRIPT_COUNT];

#endif /* XRL_SCRIPTS_H */
