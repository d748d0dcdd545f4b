/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one definition of the Lua scripts' argument layout (user/daemon/lua/ (gcra.lua, hosts.lua, window.lua, log.lua,
 * take.lua)
 * read their ARGV by these positions), with the builder of each call and
 * the decoder of its reply, shared by the daemon and test_redis.
 */
#ifndef XRL_SCRIPT_ARGS_H
#define XRL_SCRIPT_ARGS_H

#include <stdbool.h>
#include "xrl_redis.h"

/*
 * gcra.lua. KEYS: n TAT keys, then nd demand keys. ARGV: these fixed
 * figures, then XRL_GCRA_PER_SOURCE per source, then XRL_GCRA_PER_DEMAND
 * per demand key. (Indices from 0 here; Lua's ARGV[i + 1].)
 */
enum xrl_gcra_arg {
	XRL_GCRA_MODE = 0,      /* "1" take all or nothing, "0" record admissions made */
	XRL_GCRA_HOST,
	XRL_GCRA_WINDOW_US,     /* how long a host's demand counts */
	XRL_GCRA_LIFE_US,       /* a TAT's life past its time */
	XRL_GCRA_INTERVAL_US,   /* the rule's µs per token */
	XRL_GCRA_SPAN_US,       /* burst x interval */
	XRL_GCRA_ND,            /* demand keys after the TAT keys (the builder counts them) */
	XRL_GCRA_SINCE_US,      /* how far back the admissions go, unless a source says */
	XRL_GCRA_FIXED,         /* the number of fixed figures */
};
#define XRL_GCRA_PER_SOURCE 1   /* "n" or "n@since_us" */
#define XRL_GCRA_PER_DEMAND 2   /* packets seen, the µs they cover */

/* hosts.lua. KEYS: the rule's hosts hash. ARGV: these. */
enum xrl_hosts_arg {
	XRL_HOSTS_HOST = 0,
	XRL_HOSTS_RATE,         /* this host's admissions per second for the rule */
	XRL_HOSTS_WINDOW_US,    /* how long a host counts as live */
	XRL_HOSTS_TTL_MS,       /* the key's life */
	XRL_HOSTS_FIXED,
};

/* Argument slots (keys and ARGV) of a gcra call of n sources, nd with demand. */
static inline int xrl_gcra_argc(int n, int nd)
{
	return n + nd + XRL_GCRA_FIXED + n * XRL_GCRA_PER_SOURCE + nd * XRL_GCRA_PER_DEMAND;
}
#define XRL_HOSTS_ARGC (1 + XRL_HOSTS_FIXED)

/* One source of a gcra call; demand_key NULL: its demand does not go along. */
struct xrl_gcra_source {
	const char *key;
	const char *n;          /* admissions, or "n@since_us" */
	const char *demand_key;
	const char *demand;     /* packets seen (admitted and refused) */
	const char *demand_us;  /* over how long */
};

/* One source's answer; NAN where the reply has none. */
struct xrl_gcra_answer {
	double debt_us;         /* TAT - now */
	double granted;         /* take mode */
	double share_ppm;       /* with demand: this host's share of it */
	double live;            /* with demand: hosts that reported it lately */
};

/*
 * Build a gcra call of the n sources into argv (xrl_gcra_argc() slots):
 * fixed[] by enum xrl_gcra_arg, but fixed[XRL_GCRA_ND], which the builder
 * writes into nd_text and points at. c->reply is left alone.
 */
void xrl_gcra_build(struct xrl_redis_call *c, const char **argv,
		    const char *const fixed[XRL_GCRA_FIXED], const struct xrl_gcra_source *src,
		    int n, char nd_text[16]);
/*
 * The answers of a gcra call built from the same sources. Read in order and
 * stopping at the first figure missing (the rest stay NAN). 0 when all were
 * there, -1 otherwise.
 */
int xrl_gcra_decode(const struct redisReply *rep, const struct xrl_gcra_source *src, int n,
		    bool take, struct xrl_gcra_answer *out);

/* A hosts call into argv (XRL_HOSTS_ARGC slots): fixed[] by enum xrl_hosts_arg. */
void xrl_hosts_build(struct xrl_redis_call *c, const char **argv, const char *key,
		     const char *const fixed[XRL_HOSTS_FIXED]);
/* Live hosts and the sum of their rates; 0, or -1 when the reply lacks them. */
int xrl_hosts_decode(const struct redisReply *rep, double *live, double *rate_sum);

/*
 * window.lua (--algo windows with --global). KEYS: one base key per
 * source. ARGV: these fixed figures, then one per source (its admissions
 * since the last report). Reply: the window index, the µs into it, then per
 * source the fleet's count in this window and in the one before.
 */
enum xrl_window_arg {
	XRL_WINDOW_WIN_US = 0,  /* the window's length, µs */
	XRL_WINDOW_FIXED,
};
static inline int xrl_window_argc(int n)
{
	return n + XRL_WINDOW_FIXED + n;
}

struct xrl_window_answer {
	double idx, pos_us;     /* Redis' window and the time into it (the same for every source) */
	double cur, prev;       /* the fleet's counts */
};

/* A window call of n sources (keys[j], n_text[j]) into argv (xrl_window_argc() slots). */
void xrl_window_build(struct xrl_redis_call *c, const char **argv, const char *win_us,
		      const char *const *keys, const char *const *n_text, int n);
/* Its answers; 0 when all were there, -1 otherwise (those missing NAN). */
int xrl_window_decode(const struct redisReply *rep, int n, struct xrl_window_answer *out);

/*
 * log.lua (--algo sliding-log with --global). KEYS: one base key per
 * source. ARGV: these fixed figures, then one per source (its admissions
 * since the last report). Reply: Redis' window index, then per source the
 * other hosts' admissions in the window, the µs until the oldest of their
 * reports leaves it (0: none) and their admissions after that.
 */
enum xrl_slog_arg {
	XRL_SLOG_HOST = 0,      /* this host's id: its own reports are not the others' */
	XRL_SLOG_WIN_US,        /* the window's length, µs */
	XRL_SLOG_CAP,           /* members kept per source at most */
	XRL_SLOG_FIXED,
};
static inline int xrl_slog_argc(int n)
{
	return n + XRL_SLOG_FIXED + n;
}

struct xrl_slog_answer {
	double idx;             /* Redis' window (the same for every source) */
	double others;          /* the other hosts' admissions inside the window */
	double leave_us;        /* until the oldest of them leaves it (0: none) */
	double after;           /* the others' admissions from then on */
};

/* A log call of n sources (keys[j], n_text[j]) into argv (xrl_slog_argc() slots). */
void xrl_slog_build(struct xrl_redis_call *c, const char **argv,
		    const char *const fixed[XRL_SLOG_FIXED], const char *const *keys,
		    const char *const *n_text, int n);
/* Its answers; 0 when all were there, -1 otherwise (those missing NAN). */
int xrl_slog_decode(const struct redisReply *rep, int n, struct xrl_slog_answer *out);

/*
 * take.lua (xrl http's --global sliding-window and sliding-log: one
 * request decided and counted on Redis' clock, in window.lua's counters or
 * log.lua's set). KEYS: the base key. ARGV: these. Reply: admitted (1/0),
 * requests left, µs until the window resets, µs until one would pass.
 */
enum xrl_take_arg {
	XRL_TAKE_MODE = 0,      /* "w" sliding window, "l" sliding log */
	XRL_TAKE_WIN_US,        /* the window's length, µs */
	XRL_TAKE_LIMIT,         /* requests per window */
	XRL_TAKE_ID,            /* the admission's id in a log, unique per request */
	XRL_TAKE_FIXED,
};
#define XRL_TAKE_ARGC (1 + XRL_TAKE_FIXED)

struct xrl_take_answer {
	double admitted, left, reset_us, retry_us;
};

/* A take call into argv (XRL_TAKE_ARGC slots): fixed[] by enum xrl_take_arg. */
void xrl_take_build(struct xrl_redis_call *c, const char **argv, const char *key,
		    const char *const fixed[XRL_TAKE_FIXED]);
/* Its answer; 0 when all was there, -1 otherwise. */
int xrl_take_decode(const struct redisReply *rep, struct xrl_take_answer *out);

/* A key a script call writes, and the type the script keeps there. */
struct xrl_script_key {
	char name[128];
	const char *type;       /* as Redis' TYPE says it: "string", "hash", "zset" */
};
/* Keys of one call at most: a window call names three per source. */
#define XRL_SCRIPT_KEYS_MAX 256
/*
 * The keys call c writes, with their types (a window call's counters: those
 * of the windows around now_us, Redis' window being the one of its own
 * clock), at most max; how many. For naming and repairing a key of the
 * wrong type when Redis refuses a call with WRONGTYPE.
 */
int xrl_script_keys(const struct xrl_redis_call *c, unsigned long long now_us,
		    struct xrl_script_key *out, int max);

#endif /* XRL_SCRIPT_ARGS_H */
