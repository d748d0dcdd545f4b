// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The --global rules' path (xrl_http_redis.h). A request's call is a job
 * on a queue; the dispatcher thread takes every job waiting, sends them all
 * (xrl_redis_send: on the wire at once) and reads the replies in order
 * (xrl_redis_recv), so concurrent requests share one connection and one
 * round trip. A job is freed by whichever of its requester and the
 * dispatcher lets go of it last: a requester whose deadline passed leaves
 * and applies the failure policy while the dispatcher may still hold it.
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
	struct job *next;
	struct xrl_redis_call call;
	const char *argv[XRL_GCRA_FIXED + 2];
	char key[160], nd[16], iv[32], span[32], life[32], win[32], lim[16], id[112];
	int refs;          /* 2: the requester and the dispatcher */
	int done, ok;
	__u64 sent_ns;
	struct redisReply *reply;
};

struct xrl_http_redis {
	struct xrl_redis conn;
	char host[80];
	unsigned timeout_ms;
	pthread_t thread;
	pthread_mutex_t lock;    /* the queue, each job's refs and state */
	pthread_cond_t wake;     /* the dispatcher: a job is queued */
	pthread_cond_t answered; /* requesters: a batch was answered */
	struct job *head, **tail;
	int stop;
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

static void job_put(struct job *j)
{
	/* under rd->lock */
	if (--j->refs == 0) {
		if (j->reply)
			freeReplyObject(j->reply);
		free(j);
	}
}

static void *dispatcher(void *arg)
{
	struct xrl_http_redis *rd = arg;
	struct job *batch[BATCH_MAX];
	struct xrl_redis_call calls[BATCH_MAX];
	char err[256];

	for (;;) {
		int n = 0, i, rc = -EIO;
		__u64 t0;

		pthread_mutex_lock(&rd->lock);
		while (!rd->head && !rd->stop)
			pthread_cond_wait(&rd->wake, &rd->lock);
		if (rd->stop) {
			pthread_mutex_unlock(&rd->lock);
			return NULL;
		}
		while (rd->head && n < BATCH_MAX) {
			batch[n] = rd->head;
			rd->head = rd->head->next;
			calls[n] = batch[n]->call;
			n++;
		}
		if (!rd->head)
			rd->tail = &rd->head;
		pthread_mutex_unlock(&rd->lock);

		t0 = mono_ns();
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
		pthread_mutex_lock(&rd->lock);
		{
			double dt = (double)(mono_ns() - t0) / 1e9;
			int b;

			rd->st.batches++;
			if (rc)
				rd->st.failures += (unsigned long)n;
			for (i = 0; i < n; i++) {
				rd->st.calls++;
				if (!rc) {
					rd->st.seconds += dt;
					for (b = 0; b < XRL_HTTP_REDIS_BUCKETS; b++)
						if (dt <= xrl_http_redis_bucket_s[b])
							break;
					rd->st.hist[b]++;
				}
				batch[i]->done = 1;
				batch[i]->ok = !rc && calls[i].reply &&
					       calls[i].reply->type != REDIS_REPLY_ERROR;
				batch[i]->reply = rc ? NULL : calls[i].reply;
				if (rc && calls[i].reply)
					freeReplyObject(calls[i].reply);
				else if (!batch[i]->ok && calls[i].reply &&
					 calls[i].reply->type == REDIS_REPLY_ERROR)
					xrl_log(XRL_LOG_WARN, "redis: %s", calls[i].reply->str);
				job_put(batch[i]);
			}
		}
		pthread_cond_broadcast(&rd->answered);
		pthread_mutex_unlock(&rd->lock);
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
	{
		pthread_condattr_t a;

		pthread_condattr_init(&a);
		pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
		pthread_cond_init(&rd->answered, &a);
		pthread_condattr_destroy(&a);
	}
	rd->tail = &rd->head;
	if (getrandom(&rd->seq, sizeof(rd->seq), 0) != sizeof(rd->seq))
		rd->seq = (unsigned long long)mono_ns() ^ ((unsigned long long)getpid() << 32);
	rd->seq >>= 1;   /* room to count up */
	if (pthread_create(&rd->thread, NULL, dispatcher, rd)) {
		snprintf(err, errlen, "cannot start the Redis thread");
		free(rd);
		return NULL;
	}
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
	pthread_join(rd->thread, NULL);
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

static __u64 ceil_s_us(double us)
{
	return us <= 0 ? 0 : (__u64)ceil(us / 1e6);
}

int xrl_http_redis_decide(struct xrl_http_redis *rd, const struct xrl_http_rule *r,
			  const char *gkey, struct xrl_http_figures *f)
{
	struct job *j = calloc(1, sizeof(*j));
	struct timespec dl;
	__u64 deadline;
	int ret = -1;

	if (!j)
		return -1;
	j->refs = 2;
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
	deadline = mono_ns() + (__u64)rd->timeout_ms * 1000000ull;
	dl.tv_sec = (time_t)(deadline / 1000000000ull);
	dl.tv_nsec = (long)(deadline % 1000000000ull);
	pthread_mutex_lock(&rd->lock);
	*rd->tail = j;
	rd->tail = &j->next;
	pthread_cond_signal(&rd->wake);
	while (!j->done)
		if (pthread_cond_timedwait(&rd->answered, &rd->lock, &dl) == ETIMEDOUT)
			break;
	if (!j->done)
		rd->st.timeouts++;
	else if (j->ok && r->algo == XRL_ALGO_FIXED_WINDOW) {
		struct xrl_window_answer a;

		if (!xrl_window_decode(j->reply, 1, &a)) {
			double win_us = (double)r->period_s * 1e6;

			ret = a.cur <= (double)r->count;
			f->remaining = ret ? (__u64)((double)r->count - a.cur) : 0;
			f->reset_s = ceil_s_us(win_us - a.pos_us);
			f->retry_s = ret ? 0 : (f->reset_s ? f->reset_s : 1);
		}
	} else if (j->ok && (r->algo == XRL_ALGO_SLIDING_WINDOW || r->algo == XRL_ALGO_SLIDING_LOG)) {
		struct xrl_take_answer a;

		if (!xrl_take_decode(j->reply, &a)) {
			ret = a.admitted >= 1;
			f->remaining = (__u64)a.left;
			f->reset_s = ceil_s_us(a.reset_us);
			f->retry_s = ret ? 0 : ceil_s_us(a.retry_us);
			if (!ret && !f->retry_s)
				f->retry_s = 1;
		}
	} else if (j->ok) {
		struct xrl_gcra_source src = { .key = j->key, .n = "1" };
		struct xrl_gcra_answer a;

		if (!xrl_gcra_decode(j->reply, &src, 1, true, &a)) {
			double iv = (double)r->period_s * 1e6 / (double)r->count;
			double span = iv * (double)(r->burst ? r->burst : r->count);

			ret = a.granted >= 1;
			f->remaining = a.debt_us < span ? (__u64)((span - a.debt_us) / iv) : 0;
			f->reset_s = ceil_s_us(a.debt_us);
			if (!ret) {
				f->retry_s = ceil_s_us(a.debt_us + iv - span);
				if (!f->retry_s)
					f->retry_s = 1;
			}
		}
	}
	job_put(j);
	pthread_mutex_unlock(&rd->lock);
	return ret;
}
