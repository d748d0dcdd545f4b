/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The decision: a request against every rule that matches its path and
 * method, each keyed by its own key, on per-key state in bounded tables
 * (least recently seen evicted) decided by the data path's own procedures
 * (bpf/xrl_take.h, bpf/xrl_algo.h). It passes only if every rule passes; a
 * refused request takes nothing from any rule.
 */
#ifndef XRL_HTTP_DECIDE_H
#define XRL_HTTP_DECIDE_H

#include <pthread.h>
#include <linux/types.h>

#include "xrl_http_rules.h"

/* per-key state tables: keys per rule at most (sets of XRL_HTTP_WAYS, least recently seen out) */
#define XRL_HTTP_WAYS 8
#define XRL_HTTP_KEYS_DEFAULT 65536
#define XRL_HTTP_LOG_KEYS_DEFAULT 8192   /* a sliding-log key holds 64 slots */

/* a rule's figures for the answer's headers */
struct xrl_http_figures {
	int rule;             /* index in the rule set; -1: no rule matched */
	int pass;
	__u64 quota;          /* q: the rule's count per window */
	__u32 window_s;       /* w */
	__u64 remaining;      /* r */
	__u64 reset_s;        /* t: seconds until the quota is whole again (token bucket: full) */
	__u64 retry_s;        /* Retry-After on a refusal: whole seconds, rounded up */
	__u64 delay_ns;       /* leaky bucket: hold the answer this long */
	int missing;          /* refused for want of its key (--missing refuse) */
	__u64 key;            /* the rule's key of the request, as this process hashes it */
};

struct xrl_http_entry {
	__u64 key;            /* keyed hash of the rule's key; 0 empty */
	__u64 seen_ns;        /* last request */
	__u64 word;           /* GCRA TAT, window word or log word */
	__u64 last_ns;        /* GCRA: the clock of the last take */
};

/* a rule's keys; shared by the rule sets that hold the rule unchanged (refs) */
struct xrl_http_table {
	struct xrl_http_entry *e;
	__u64 *rings;         /* sliding log: XRL_LOG_MAX slots per entry */
	__u32 sets;           /* power of two */
	int refs;             /* each rule set holding it (atomic) */
};

/*
 * The lock over the tables: one decision at a time, so all its rules' words
 * move together. Shared by a rule set and the ones reloaded from it (refs),
 * as their tables are.
 */
struct xrl_http_lock {
	pthread_mutex_t m;
	int refs;             /* each rule set holding it (atomic) */
};

struct xrl_http_state {
	struct xrl_http_rules rules;
	struct xrl_http_table *tab[XRL_HTTP_MAX_RULES];
	__u64 seed[2];
	struct xrl_http_lock *lock;
	unsigned long evicted;
	int refs;               /* the service's, and each decision waiting for Redis (atomic) */
};

/* What the request shows, for the keys. */
struct xrl_http_request {
	const char *method;
	const char *uri;       /* path?query */
	const char *client;    /* the client address's text (after trusted proxies) */
	const void *client_addr;   /* struct xrl_http_addr */
	/* a header's value, or NULL */
	const char *(*header)(void *arg, const char *name);
	void *header_arg;
};

/* A global rule's key text at most: a hash (32 hex), or a --packet-rule's Redis key. */
#define XRL_HTTP_GKEY_MAX 160

/* What --global rules do when Redis gives no answer in time. */
enum xrl_http_failure { XRL_HTTP_FAIL_LOCAL, XRL_HTTP_FAIL_OPEN, XRL_HTTP_FAIL_CLOSED };

/*
 * What --global rules do when Redis gives no answer in time (policy), and how
 * often that happened (failed).
 */
struct xrl_http_global {
	enum xrl_http_failure policy;
	unsigned long failed;   /* decisions taken by the policy (atomic) */
};

/*
 * New state for rules (copied); keys per rule table; NULL on no memory.
 * old (NULL: none): the rule set it replaces. A rule unchanged since old
 * (same name, same words) shares old's table of its keys, and all share old's
 * lock and seed, so a decision still finishing on old takes from the table
 * that the new set's requests read.
 */
struct xrl_http_state *xrl_http_state_new(const struct xrl_http_rules *rules, __u32 keys,
					  const struct xrl_http_state *old);
void xrl_http_state_free(struct xrl_http_state *s);

/*
 * A decision in stages, for a server that must not wait: start (keys, the
 * local rules read), then each global rule asked in turn (next gives its
 * index in per, the caller asks Redis and gives the answer), then finish
 * (the local rules read again and taken). Between the stages s must live
 * (refs) and nothing else of the request is needed. now_ns: CLOCK_MONOTONIC;
 * rt_off: CLOCK_REALTIME minus it, for the windows' UTC alignment.
 */
struct xrl_http_decision {
	__u64 now_ns, rt_off;
	int n, pass, nglobal, next;
	int idx[XRL_HTTP_MAX_RULES];     /* each matching rule's index in the rule set */
	int local[XRL_HTTP_MAX_RULES];   /* 1: decided here (local, or --on-redis-failure local) */
	__u64 keys[XRL_HTTP_MAX_RULES];
	struct xrl_http_figures per[XRL_HTTP_MAX_RULES];
	/* a global rule's name in Redis (a --packet-rule's: the daemon's whole key) */
	char gname[XRL_HTTP_MAX_RULES][XRL_HTTP_GKEY_MAX];
};

/* Stage 1. global: the --global rules go to Redis (else they are judged locally). */
void xrl_http_decide_start(struct xrl_http_state *s, const struct xrl_http_request *req,
			   __u64 now_ns, __u64 rt_off, int global, struct xrl_http_decision *d);
/* The next global rule to ask (its index in d->per: rule d->idx[i], key d->gname[i]), or -1. */
int xrl_http_decide_next(struct xrl_http_decision *d);
/* Its answer: 1 pass, 0 refuse (figures in d->per[i]), -1 none in time (g's policy applies). */
void xrl_http_decide_answer(const struct xrl_http_state *s, struct xrl_http_decision *d, int i,
			    int got, struct xrl_http_global *g);
/* Stage 3: 1 pass, 0 refuse; f the answer's figures, d->per[0..d->n) each rule's. */
int xrl_http_decide_finish(struct xrl_http_state *s, struct xrl_http_decision *d,
			   struct xrl_http_figures *f);

#endif /* XRL_HTTP_DECIDE_H */
