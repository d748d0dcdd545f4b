// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The --global rules' path (xrl_http_redis.h). A request's call is a job
 * on a queue; the dispatcher thread takes every job waiting, sends them all
 * (xrl_redis_send: on the wire at once), reads the replies in order
 * (xrl_redis_recv), decodes each and calls its job's done, so concurrent
 * requests share one connection and one round trip and no requester waits
 * in a thread of its own. Every job not yet answered is also on the waiting
 * list, in the order of its deadline (one timeout for all: the order they
 * came in); the timer thread answers -1 each one whose deadline passed,
 * whatever the dispatcher is doing (a batch in flight, a connect to a Redis
 * that does not answer), so no answer comes later than its deadline. A job is
 * answered once (answered, under lock), freed by the dispatcher alone, at any
 * time once the timer released the lock after claiming it: the timer reads
 * the job's callback under the lock. One answered before its batch is made is
 * never sent (nothing is taken for a request the policy already answered).
 */
#include <errno.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "xrl_fleet_keys.h"   /* xrl_fleet_gcra_figures */
#include "xrl_http_redis.h"
#include "xrl_log.h"
#include "xrl_redis.h"
#include "xrl_script_args.h"

#define BATCH_MAX 256
/* after a failed connect, the next try waits this long (calls fail at once meanwhile) */
#define RECONNECT_NS 200000000ull

const double xrl_http_redis_bucket_s[XRL_HTTP_REDIS_BUCKETS] = {
	0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.05,
};

struct job {
	struct job *next;                /* the dispatcher's queue */
	struct job *wprev, *wnext;       /* the waiting list, while not answered */
	int answered;
	struct xrl_redis_call call;
	const char *argv[XRL_GCRA_FIXED + 2];
	char key[160], nd[16], iv[32], span[32], life[32], win[32], lim[16], id[112];
	/* the rule's figures for the answer */
	int algo;
	__u64 count, period_s, burst;
	__u64 deadline_ns;
	struct xrl_http_figures *f;
	xrl_http_redis_done done;
	void *arg;
};

struct xrl_http_redis {
	struct xrl_redis conn;
	char host[80];
	unsigned timeout_ms;
	pthread_t thread;
	pthread_mutex_t lock;    /* the queue, the stats */
	pthread_cond_t wake;     /* the dispatcher: a job is queued */
	struct job *head, **tail;
	struct job waiting;      /* list head: the jobs not answered, oldest first */
	pthread_t timer;
	pthread_cond_t tick;     /* the timer: the waiting list was empty, or timer_stop */
	int stop, stopped, timer_started, timer_stop;
	__u64 retry_at;
	/* a sliding log's admission ids, host/seq (under lock): from a random start, so
	 * that services of one instance name on several hosts never write the same member */
	unsigned long long seq;
	struct xrl_http_redis_stats st;
};

static __u64 mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static __u64 ceil_s_us(double us)
{
	return us <= 0 ? 0 : (__u64)ceil(us / 1e6);
}

/*
 * The job's reply as its rule's answer: 1 pass, 0 refuse, -1 not an answer;
 * remaining, reset_s and retry_s in f (a scratch copy: the requester's may
 * be gone, answered by the timer).
 */
static int decode(struct job *j, const struct redisReply *reply, struct xrl_http_figures *f)
{
	memset(f, 0, sizeof(*f));

	if (!reply || reply->type == REDIS_REPLY_ERROR)
		return -1;
	if (j->algo == XRL_ALGO_FIXED_WINDOW) {
		struct xrl_window_answer a;
		double win_us = (double)j->period_s * 1e6;
		int ret;

		if (xrl_window_decode(reply, 1, &a))
			return -1;
		ret = a.cur <= (double)j->count;
		f->remaining = ret ? (__u64)((double)j->count - a.cur) : 0;
		f->reset_s = ceil_s_us(win_us - a.pos_us);
		f->retry_s = ret ? 0 : (f->reset_s ? f->reset_s : 1);
		return ret;
	}
	if (j->algo == XRL_ALGO_SLIDING_WINDOW || j->algo == XRL_ALGO_SLIDING_LOG) {
		struct xrl_take_answer a;
		int ret;

		if (xrl_take_decode(reply, &a))
			return -1;
		ret = a.admitted >= 1;
		f->remaining = (__u64)a.left;
		f->reset_s = ceil_s_us(a.reset_us);
		f->retry_s = ret ? 0 : ceil_s_us(a.retry_us);
		if (!ret && !f->retry_s)
			f->retry_s = 1;
		return ret;
	}
	{
		struct xrl_gcra_source src = { .key = j->key, .n = "1" };
		struct xrl_gcra_answer a;
		double iv = (double)j->period_s * 1e6 / (double)j->count;
		double span = iv * (double)j->burst;
		int ret;

		if (xrl_gcra_decode(reply, &src, 1, true, &a))
			return -1;
		ret = a.granted >= 1;
		f->remaining = a.debt_us < span ? (__u64)((span - a.debt_us) / iv) : 0;
		f->reset_s = ceil_s_us(a.debt_us);
		if (!ret) {
			f->retry_s = ceil_s_us(a.debt_us + iv - span);
			if (!f->retry_s)
				f->retry_s = 1;
		}
		return ret;
	}
}

/* Take j off the waiting list to answer it: 1, or 0 when it was answered already. Under lock. */
static int job_claim(struct job *j)
{
	if (j->answered)
		return 0;
	j->answered = 1;
	j->wprev->wnext = j->wnext;
	j->wnext->wprev = j->wprev;
	return 1;
}

/* Answers -1 the jobs whose deadline passed, as they pass. */
static void *timer(void *arg)
{
	struct xrl_http_redis *rd = arg;
	xrl_http_redis_done done;
	void *done_arg;

	pthread_mutex_lock(&rd->lock);
	while (!rd->timer_stop) {
		struct job *j = rd->waiting.wnext;
		struct timespec ts;

		if (j == &rd->waiting) {
			pthread_cond_wait(&rd->tick, &rd->lock);
			continue;
		}
		if (j->deadline_ns > mono_ns()) {
			ts.tv_sec = (time_t)(j->deadline_ns / 1000000000ull);
			ts.tv_nsec = (long)(j->deadline_ns % 1000000000ull);
			pthread_cond_timedwait(&rd->tick, &rd->lock, &ts);
			continue;
		}
		/*
		 * Claimed, j is the dispatcher's to free as soon as the lock is
		 * released: its done and arg are read before, under the lock.
		 * done runs outside it (it may ask again).
		 */
		done = j->done;
		done_arg = j->arg;
		job_claim(j);
		rd->st.timeouts++;
		pthread_mutex_unlock(&rd->lock);
		done(done_arg, -1);
		pthread_mutex_lock(&rd->lock);
	}
	pthread_mutex_unlock(&rd->lock);
	return NULL;
}

static void *dispatcher(void *arg)
{
	struct xrl_http_redis *rd = arg;
	struct job *batch[BATCH_MAX];
	struct xrl_redis_call calls[BATCH_MAX];
	struct xrl_http_figures fig[BATCH_MAX];
	int got[BATCH_MAX];
	char err[256];

	for (;;) {
		int n = 0, late = 0, i, rc = -EIO, stop;
		struct job *expired = NULL;
		__u64 t0;

		pthread_mutex_lock(&rd->lock);
		while (!rd->head && !rd->stop)
			pthread_cond_wait(&rd->wake, &rd->lock);
		stop = rd->stop;
		t0 = mono_ns();
		while (rd->head && n < BATCH_MAX) {
			struct job *j = rd->head;

			rd->head = j->next;
			if (j->answered) {
				free(j);   /* by the timer: never sent, nothing taken */
				continue;
			}
			if (stop || j->deadline_ns <= t0) {
				job_claim(j);
				j->next = expired;
				expired = j;
				late++;
				continue;
			}
			batch[n] = j;
			calls[n] = j->call;
			n++;
		}
		if (!rd->head)
			rd->tail = &rd->head;
		rd->st.timeouts += (unsigned long)late;
		pthread_mutex_unlock(&rd->lock);
		while (expired) {
			struct job *j = expired;

			expired = j->next;
			j->done(j->arg, -1);
			free(j);
		}
		if (stop) {
			pthread_mutex_lock(&rd->lock);
			if (!rd->head) {
				rd->stopped = 1;   /* asks from now on fail at once */
				pthread_mutex_unlock(&rd->lock);
				return NULL;
			}
			pthread_mutex_unlock(&rd->lock);
			continue;
		}
		if (!n)
			continue;
		if (!rd->conn.c && t0 >= rd->retry_at) {
			if (xrl_redis_connect(&rd->conn, err, sizeof(err))) {
				rd->retry_at = t0 + RECONNECT_NS;
				xrl_log(XRL_LOG_WARN, "redis: %s; --global rules follow --on-redis-failure",
					err);
			} else {
				xrl_log(XRL_LOG_INFO, "redis: connected");
			}
		}
		if (rd->conn.c) {
			rc = 0;
			for (i = 0; i < n && !rc; i++) {
				calls[i].reply = NULL;
				rc = xrl_redis_send(&rd->conn, &calls[i], err, sizeof(err));
			}
			if (!rc)
				rc = xrl_redis_recv(&rd->conn, calls, n, err, sizeof(err));
			if (rc) {
				rd->retry_at = mono_ns() + RECONNECT_NS / 4;
				xrl_log(XRL_LOG_WARN, "redis: %s; --global rules follow --on-redis-failure",
					err);
			}
		}
		for (i = 0; i < n; i++) {
			got[i] = rc ? -1 : decode(batch[i], calls[i].reply, &fig[i]);
			if (!rc && calls[i].reply && calls[i].reply->type == REDIS_REPLY_ERROR)
				xrl_log(XRL_LOG_WARN, "redis: %s", calls[i].reply->str);
			if (calls[i].reply)
				freeReplyObject(calls[i].reply);
		}
		pthread_mutex_lock(&rd->lock);
		{
			double dt = (double)(mono_ns() - t0) / 1e9;
			int b;

			rd->st.batches++;
			rd->st.calls += (unsigned long)n;
			if (rc)
				rd->st.failures += (unsigned long)n;
			else
				for (i = 0; i < n; i++) {
					rd->st.seconds += dt;
					for (b = 0; b < XRL_HTTP_REDIS_BUCKETS; b++)
						if (dt <= xrl_http_redis_bucket_s[b])
							break;
					rd->st.hist[b]++;
				}
			/* the timer may have answered some (their deadline passed): not again */
			for (i = 0; i < n; i++)
				if (!job_claim(batch[i]))
					got[i] = -2;
				else if (got[i] >= 0) {
					batch[i]->f->remaining = fig[i].remaining;
					batch[i]->f->reset_s = fig[i].reset_s;
					batch[i]->f->retry_s = fig[i].retry_s;
				}
		}
		pthread_mutex_unlock(&rd->lock);
		for (i = 0; i < n; i++) {
			if (got[i] != -2)
				batch[i]->done(batch[i]->arg, got[i]);
			free(batch[i]);
		}
	}
}

struct xrl_http_redis *xrl_http_redis_start(const char *url, unsigned timeout_ms, const char *host,
					    char *err, size_t errlen)
{
	struct xrl_http_redis *rd = calloc(1, sizeof(*rd));

	if (!rd) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	if (xrl_redis_parse_url(url, &rd->conn.url, err, errlen)) {
		free(rd);
		return NULL;
	}
	rd->timeout_ms = timeout_ms;
	rd->conn.timeout.tv_sec = timeout_ms / 1000;
	rd->conn.timeout.tv_usec = (timeout_ms % 1000) * 1000;
	snprintf(rd->host, sizeof(rd->host), "%s", host);
	pthread_mutex_init(&rd->lock, NULL);
	pthread_cond_init(&rd->wake, NULL);
	rd->tail = &rd->head;
	rd->waiting.wnext = rd->waiting.wprev = &rd->waiting;
	{
		pthread_condattr_t a;

		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&rd->tick, &a);
		pthread_condattr_destroy(&a);
	}
	if (getrandom(&rd->seq, sizeof(rd->seq), 0) != sizeof(rd->seq))
		rd->seq = (unsigned long long)mono_ns() ^ ((unsigned long long)getpid() << 32);
	rd->seq >>= 1;   /* room to count up */
	if (pthread_create(&rd->thread, NULL, dispatcher, rd)) {
		snprintf(err, errlen, "cannot start the Redis thread");
		free(rd);
		return NULL;
	}
	if (pthread_create(&rd->timer, NULL, timer, rd)) {
		snprintf(err, errlen, "cannot start the Redis calls' timer thread");
		xrl_http_redis_stop(rd);
		free(rd);
		return NULL;
	}
	rd->timer_started = 1;
	return rd;
}

void xrl_http_redis_stop(struct xrl_http_redis *rd)
{
	if (!rd)
		return;
	pthread_mutex_lock(&rd->lock);
	rd->stop = 1;
	pthread_cond_signal(&rd->wake);
	pthread_mutex_unlock(&rd->lock);
	/* the timer keeps the deadlines while the dispatcher ends its batch */
	pthread_join(rd->thread, NULL);
	pthread_mutex_lock(&rd->lock);
	rd->timer_stop = 1;
	pthread_cond_signal(&rd->tick);
	pthread_mutex_unlock(&rd->lock);
	if (rd->timer_started)
		pthread_join(rd->timer, NULL);
	xrl_redis_close(&rd->conn);
}

int xrl_http_redis_cluster(const struct xrl_http_redis *rd)
{
	return rd->conn.url.cluster;
}

void xrl_http_redis_stats(struct xrl_http_redis *rd, struct xrl_http_redis_stats *out)
{
	pthread_mutex_lock(&rd->lock);
	*out = rd->st;
	pthread_mutex_unlock(&rd->lock);
}

void xrl_http_redis_ask(struct xrl_http_redis *rd, const struct xrl_http_rule *r, const char *gkey,
			struct xrl_http_figures *f, xrl_http_redis_done done, void *arg)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j) {
		done(arg, -1);
		return;
	}
	j->next = NULL;
	j->done = done;
	j->arg = arg;
	j->f = f;
	j->algo = r->algo;
	j->count = r->count;
	j->period_s = r->period_s;
	j->burst = r->burst ? r->burst : r->count;
	if (r->pkt.set)   /* the packet rule's key: the daemon's, whole */
		snprintf(j->key, sizeof(j->key), "%s", gkey);
	else
		snprintf(j->key, sizeof(j->key), "xrl:{http:%s:%s}", r->name, gkey);
	f->quota = r->count;
	f->window_s = r->period_s;
	if (r->algo == XRL_ALGO_FIXED_WINDOW) {
		const char *keys[1] = { j->key }, *n[1] = { "1" };

		snprintf(j->win, sizeof(j->win), "%llu", (unsigned long long)r->period_s * 1000000ull);
		xrl_window_build(&j->call, j->argv, j->win, keys, n, 1);
	} else if (r->algo == XRL_ALGO_SLIDING_WINDOW || r->algo == XRL_ALGO_SLIDING_LOG) {
		const char *fixed[XRL_TAKE_FIXED];

		snprintf(j->win, sizeof(j->win), "%llu", (unsigned long long)r->period_s * 1000000ull);
		snprintf(j->lim, sizeof(j->lim), "%llu", (unsigned long long)r->count);
		pthread_mutex_lock(&rd->lock);
		snprintf(j->id, sizeof(j->id), "%s/%llu", rd->host, ++rd->seq);
		pthread_mutex_unlock(&rd->lock);
		fixed[XRL_TAKE_MODE] = r->algo == XRL_ALGO_SLIDING_LOG ? "l" : "w";
		fixed[XRL_TAKE_WIN_US] = j->win;
		fixed[XRL_TAKE_LIMIT] = j->lim;
		fixed[XRL_TAKE_ID] = j->id;
		xrl_take_build(&j->call, j->argv, j->key, fixed);
	} else {
		double iv = (double)r->period_s * 1e6 / (double)r->count;
		__u64 burst = r->burst ? r->burst : r->count;
		const char *fixed[XRL_GCRA_FIXED];
		struct xrl_gcra_source src = { .key = j->key, .n = "1" };

		if (r->pkt.set) {
			/* the packet rule's figures and the TAT life every daemon passes */
			snprintf(j->iv, sizeof(j->iv), "%s", r->pkt.iv);
			snprintf(j->span, sizeof(j->span), "%s", r->pkt.span);
			snprintf(j->life, sizeof(j->life), "%s", r->pkt.life);
		} else {
			double span_ns = iv * (double)burst * 1e3;

			/* the data path's figures (the one derivation), as the daemon sends them */
			if (xrl_fleet_gcra_figures(r->count, r->period_s, burst, j->iv, j->span, NULL,
						   &span_ns)) {
				/* beyond the data path's fixed point: the figures in floating point */
				snprintf(j->iv, sizeof(j->iv), "%.3f", iv);
				snprintf(j->span, sizeof(j->span), "%.3f", iv * (double)burst);
			}
			snprintf(j->life, sizeof(j->life), "%.0f", span_ns / 1e3 + 1e6);
		}
		fixed[XRL_GCRA_MODE] = "1";
		fixed[XRL_GCRA_HOST] = rd->host;
		fixed[XRL_GCRA_WINDOW_US] = "1000000";
		fixed[XRL_GCRA_LIFE_US] = j->life;
		fixed[XRL_GCRA_INTERVAL_US] = j->iv;
		fixed[XRL_GCRA_SPAN_US] = j->span;
		fixed[XRL_GCRA_ND] = NULL;
		fixed[XRL_GCRA_SINCE_US] = "0";
		xrl_gcra_build(&j->call, j->argv, fixed, &src, 1, j->nd);
	}
	j->deadline_ns = mono_ns() + (__u64)rd->timeout_ms * 1000000ull;
	pthread_mutex_lock(&rd->lock);
	if (rd->stopped) {
		pthread_mutex_unlock(&rd->lock);
		done(arg, -1);
		free(j);
		return;
	}
	*rd->tail = j;
	rd->tail = &j->next;
	if (rd->waiting.wnext == &rd->waiting)
		pthread_cond_signal(&rd->tick);
	j->wprev = rd->waiting.wprev;
	j->wnext = &rd->waiting;
	rd->waiting.wprev->wnext = j;
	rd->waiting.wprev = j;
	pthread_cond_signal(&rd->wake);
	pthread_mutex_unlock(&rd->lock);
}
