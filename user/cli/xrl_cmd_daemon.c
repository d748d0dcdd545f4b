// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * xrl daemon: the long-running side of an instance. Foreground, logs to
 * stderr, one loop: every sync interval it reads the rule set, exchanges
 * the fleet-wide rules' usage with Redis and writes the floors back. The
 * data path never waits for it: stopped or crashed, the instance keeps
 * limiting with local limits. SIGHUP reloads --rules FILE, SIGTERM stops.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "xrl_cli.h"
#include "xrl_events.h"
#include "xrl_fleet.h"
#include "xrl_log.h"
#include "xrl_metrics.h"
#include "xrl_rule.h"

static volatile sig_atomic_t stop_sig, reload_req;

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void on_hup(int sig)
{
	(void)sig;
	reload_req = 1;
}

struct daemon_opts {
	const char *redis_url;
	char *redis_url_arg;      /* the --redis word in argv, its password masked once read */
	const char *password_file;
	const char *host_id;
	const char *rules_file;
	const char *log_format;
	const char *metrics;     /* listen address, "" for the default; NULL: no endpoint */
	const char *instance;    /* --instance after daemon */
	int metrics_top;
	unsigned log_json;       /* index in "text|json" */
	__u64 interval_ms, quiet_s;
	__u64 interval_ns;
	__u64 quiet_ns;
	enum xrl_fleet_policy policy;
};

/* --redis URL: the URL, and the argv word its password is masked in */
static int opt_redis(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	struct daemon_opts *d = obj;

	(void)o, (void)err, (void)errlen;
	d->redis_url = arg;
	d->redis_url_arg = (char *)arg;   /* a word of argv, which is writable */
	return 0;
}

/* --metrics [ADDR:PORT]: "" without the address */
static int opt_metrics(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	(void)o, (void)err, (void)errlen;
	((struct daemon_opts *)obj)->metrics = arg ? arg : "";
	return 0;
}

#define DO(member) XRL_OPT_FIELD(struct daemon_opts, member)

enum {
	DO_REDIS, DO_PASSWORD_FILE, DO_HOST_ID, DO_INTERVAL, DO_FAILURE, DO_RULES, DO_LOG_FORMAT,
	DO_METRICS, DO_METRICS_TOP, DO_QUIET, DO_INSTANCE, DO_N,
};

static const struct xrl_opt daemon_opt_rows[DO_N] = {
	[DO_REDIS] = { "redis", 0, "URL", opt_redis, .modes = 1,
		       .help = "share the --global rules' budgets through Redis at URL (redis://HOST:PORT, or redis-cluster://HOST:PORT,... for a Redis Cluster)" },
	[DO_PASSWORD_FILE] = { "redis-password-file", 0, "FILE", xrl_opt_str, DO(password_file),
			       .modes = 1, .help = "the Redis password is the first line of FILE" },
	[DO_HOST_ID] = { "host-id", 0, "ID", xrl_opt_str, DO(host_id), .modes = 1,
			 .help = "this host's name in Redis (default: HOSTNAME/INSTANCE)" },
	[DO_INTERVAL] = { "sync-interval", 0, "MS", xrl_opt_uint, DO(interval_ms), .modes = 1,
			  .min = 1, .max = 60000, .what = "--sync-interval (ms)",
			  .help = "milliseconds between rounds (1 to 60000, default 100)" },
	[DO_FAILURE] = { "on-redis-failure", 0, "local|open|closed", xrl_opt_enum, DO(policy),
			 .modes = 1, .what = "local|open|closed",
			 .help = "what --global rules do while Redis does not answer (default local)" },
	[DO_RULES] = { "rules", 0, "FILE", xrl_opt_str, DO(rules_file), .modes = 1,
		       .help = "load the rules file at start and on SIGHUP" },
	[DO_LOG_FORMAT] = { "log-format", 0, "text|json", xrl_opt_enum, DO(log_json), .modes = 1,
			    .what = "text|json", .help = "log lines as text (default) or JSON" },
	[DO_METRICS] = { "metrics", 0, "ADDR:PORT", opt_metrics, .modes = 1,
			 .flags = XRL_OPT_OPTIONAL_ARG,
			 .help = "serve Prometheus metrics (default 127.0.0.1:9464)" },
	[DO_METRICS_TOP] = { "metrics-top", 0, "K", xrl_opt_uint, DO(metrics_top), .modes = 1,
			     .max = 1000, .what = "--metrics-top",
			     .help = "at most K sources in the top-source metric (0 to 1000, default 10)" },
	[DO_QUIET] = { "quiet-after", 0, "SEC", xrl_opt_uint, DO(quiet_s), .modes = 1,
		       .min = 1, .max = 3600, .what = "--quiet-after (seconds)",
		       .help = "log a limited source back under limit after SEC s without drops (default 5)" },
	[DO_INSTANCE] = { "instance", 0, "NAME", xrl_opt_str, DO(instance), .modes = 1,
			  .help = "serve instance NAME (as the global --instance)" },
};

_Static_assert(DO_N <= 64, "xrl_opt_seen has a bit per row: at most 64 rows");

const struct xrl_opt_table xrl_daemon_opts = {
	.name = "daemon", .opts = daemon_opt_rows, .n = DO_N, .nmodes = 1,
};

/* The options' values and units: 0, or the exit code of the error reported. */
static int daemon_check(struct xrl_ctx *ctx, struct daemon_opts *o, xrl_opt_seen seen)
{
	if (o->host_id && (!*o->host_id || strlen(o->host_id) > 100 || strpbrk(o->host_id, " \t\n{}")))
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "invalid --host-id '%s': 1 to 100 characters, no spaces or braces",
				 o->host_id);
	if (XRL_SEEN(seen, DO_INTERVAL))
		o->interval_ns = o->interval_ms * 1000000ull;
	if (XRL_SEEN(seen, DO_QUIET))
		o->quiet_ns = o->quiet_s * 1000000000ull;
	if (XRL_SEEN(seen, DO_LOG_FORMAT))
		o->log_format = o->log_json ? "json" : "text";
	if (o->instance) {
		if (!xrl_valid_instance(o->instance))
			return xrl_error(ctx, XRL_EXIT_USAGE,
					 "invalid instance name '%s': use 1 to 64 letters, digits, '-' or '_'",
					 o->instance);
		ctx->instance = o->instance;
		snprintf(ctx->pin_dir, sizeof(ctx->pin_dir), "%s/%s", XRL_PIN_ROOT, o->instance);
	}
	return 0;
}

static int parse_opts(struct xrl_ctx *ctx, int argc, char **argv, struct daemon_opts *o)
{
	char err[XRL_ERRLEN];
	xrl_opt_seen seen = 0;
	int i = 1;

	if (xrl_opts_parse(&xrl_daemon_opts, 0, argc, argv, &i, o, &seen, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	if (i < argc)
		return xrl_error(ctx, XRL_EXIT_USAGE, "unexpected word '%s' (see xrl --help)", argv[i]);
	return daemon_check(ctx, o, seen);
}

/*
 * The Redis password: from --redis-password-file (its first line), else the
 * URL, else XRL_REDIS_PASSWORD. The URL's copy in argv is overwritten, so
 * that ps shows it only for the instant before (the file and the variable
 * never show). 0, or a usage error reported.
 */
static int redis_password(struct xrl_ctx *ctx, struct daemon_opts *o, struct xrl_redis_url *u)
{
	char line[sizeof(u->password) + 2];
	const char *env = getenv("XRL_REDIS_PASSWORD");
	char *p, *at;
	FILE *f;
	size_t n, scheme = o->redis_url_arg && !strncmp(o->redis_url_arg, "redis-cluster://", 16) ?
			   16 : 8;

	if (o->redis_url_arg && strlen(o->redis_url_arg) > scheme &&
	    (at = strchr(o->redis_url_arg + scheme, '@')) &&
	    (p = strchr(o->redis_url_arg + scheme, ':')) && p < at)
		for (p++; p < at; p++)
			*p = '*';
	if (o->password_file && !o->redis_url)
		return xrl_error(ctx, XRL_EXIT_USAGE, "--redis-password-file needs --redis");
	if (!o->password_file) {
		if (!u->password[0] && env && *env) {
			if (strlen(env) >= sizeof(u->password))
				return xrl_error(ctx, XRL_EXIT_USAGE,
						 "XRL_REDIS_PASSWORD is longer than %zu characters",
						 sizeof(u->password) - 1);
			snprintf(u->password, sizeof(u->password), "%s", env);
		}
		return 0;
	}
	if (u->password[0])
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "a password in --redis and --redis-password-file: give it once (the file keeps it out of ps)");
	f = fopen(o->password_file, "re");
	if (!f)
		return xrl_error(ctx, XRL_EXIT_USAGE, "cannot read --redis-password-file %s: %s",
				 o->password_file, strerror(errno));
	if (!fgets(line, sizeof(line), f))
		line[0] = 0;
	fclose(f);
	n = strcspn(line, "\r\n");
	if (n >= sizeof(u->password))
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "--redis-password-file %s: the password (its first line) is longer than %zu characters",
				 o->password_file, sizeof(u->password) - 1);
	if (!n)
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "--redis-password-file %s: the first line is empty (it holds the password)",
				 o->password_file);
	line[n] = 0;
	memcpy(u->password, line, n + 1);
	memset(line, 0, sizeof(line));
	return 0;
}

/* Read and apply a rules file under the rule writers' lock; the rules in force stay when it fails. */
static int apply_rules_file(struct xrl_ctx *ctx, const char *file, char *err, size_t errlen)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	struct xrl_maps m;
	int n, rc;

	rc = xrl_rules_read_file(file, defs, &n, err, errlen);
	if (rc)
		return rc;
	rc = xrl_instance_open(xrl_ctx_instance(ctx), XRL_LOCK_RULES, XRL_WAIT_FOREVER,
			       XRL_OPEN_NO_IFACE, &m, err, errlen);
	if (rc)
		return rc;
	rc = xrl_ruleset_apply(&m, defs, n, err, errlen);
	xrl_instance_end(ctx, &m);
	return rc ? rc : n;
}

/*
 * --algo windows align to UTC through xrl_config.rt_off_ns: the daemon keeps
 * it within a millisecond of CLOCK_REALTIME - CLOCK_MONOTONIC (NTP slews
 * and steps move it), checking once a second, writing under the instance lock.
 */
static void refresh_rt_off(struct xrl_ctx *ctx, const struct xrl_maps *m)
{
	static __u64 checked_ns;
	char why[XRL_INSTANCE_ERRLEN];
	struct xrl_config cfg;
	__u64 now = xrl_mono_ns(), off;
	__s64 drift;

	if (checked_ns && now - checked_ns < 1000000000ull)
		return;
	checked_ns = now;
	off = xrl_rt_off_ns();
	if (xrl_read_config(m, &cfg))
		return;
	drift = (__s64)(off - cfg.rt_off_ns);
	if (drift < 1000000 && drift > -1000000)
		return;
	if (xrl_instance_open(xrl_ctx_instance(ctx), XRL_LOCK_EXCLUSIVE, XRL_WAIT_FOREVER, 0, NULL,
			      why, sizeof(why)))
		return;
	if (xrl_config_set_rt_off(m, off) == 0)
		xrl_log(XRL_LOG_INFO, "UTC offset of the window clock moved by %.3f ms: updated",
			(double)drift / 1e6);
	xrl_instance_close(&ctx->inst, NULL);
}

/* The rule set in force, read under the shared lock so a rule change is seen whole. */
static int read_rules(struct xrl_ctx *ctx, const struct xrl_maps *m, struct xrl_fleet *f,
		      struct xrl_events *ev)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	static __u32 gen_read;
	static bool read_once;
	char why[XRL_INSTANCE_ERRLEN];
	struct xrl_config cfg;
	int n, rc;

	/* every rule change switches the generation: the same one means the same rules */
	if (read_once && xrl_read_config(m, &cfg) == 0 && cfg.active_gen == gen_read)
		return 0;
	rc = xrl_instance_open(xrl_ctx_instance(ctx), XRL_LOCK_SHARED, XRL_WAIT_FOREVER, 0, NULL, why,
			       sizeof(why));
	if (rc)
		return rc;
	rc = xrl_read_config(m, &cfg);
	if (!rc)
		rc = xrl_ruleset_read(m, defs, ids, &n);
	xrl_instance_close(&ctx->inst, NULL);
	if (!rc) {
		gen_read = cfg.active_gen;
		read_once = true;
	}
	if (!rc)
		xrl_fleet_set_rules(f, defs, ids, n);
	if (!rc && ev)
		xrl_events_set_rules(ev, defs, ids, n);
	return rc;
}

enum attach_state { ATTACHED, DETACHED, REATTACHED };

/*
 * Whether the maps this daemon holds are still the instance's: its pins
 * gone (detached), or pins of other maps (detached and attached again, so
 * that what this daemon reads and writes no longer reaches the data path).
 */
static enum attach_state attach_state(struct xrl_ctx *ctx, const struct xrl_maps *m)
{
	char why[XRL_INSTANCE_ERRLEN];
	int rc = xrl_instance_pinned_same(xrl_ctx_instance(ctx), "xrl_config", m->config, why,
					  sizeof(why));

	/* another error (EMFILE and such): ask again later */
	return rc == -ENOENT ? DETACHED : rc == -ESTALE ? REATTACHED : ATTACHED;
}

/*
 * Until the next round: log limit events as they come. A signal cuts the
 * wait short; the loop then checks what it asked for.
 */
static void wait_round(struct timespec *next, __u64 interval_ns, struct xrl_events *ev)
{
	__u64 now = xrl_mono_ns(), at;

	at = (__u64)next->tv_sec * 1000000000ull + next->tv_nsec + interval_ns;
	if (at < now)
		at = now;   /* a round longer than the interval: the next one starts at once */
	next->tv_sec = at / 1000000000ull;
	next->tv_nsec = at % 1000000000ull;
	if (!ev) {
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
		return;
	}
	xrl_events_poll(ev, 0);   /* even when the next round is due at once */
	while (!stop_sig && !reload_req && (now = xrl_mono_ns()) < at)
		xrl_events_poll(ev, (int)((at - now + 999999) / 1000000));
}

int xrl_cmd_daemon(struct xrl_ctx *ctx, int argc, char **argv)
{
	static struct xrl_fleet fleet;
	struct daemon_opts o = { .interval_ns = 100000000ull, .log_format = "text",
				 .quiet_ns = 5000000000ull,
				 .metrics_top = XRL_METRICS_DEFAULT_TOP };
	struct xrl_metrics_opts mo = { 0 };
	struct xrl_metrics *metrics = NULL;
	struct xrl_events *events = NULL;
	char err[XRL_INSTANCE_ERRLEN], host[128], listen[300];
	struct sigaction sa = { 0 };
	struct timespec next;
	struct xrl_maps m;
	enum attach_state as;
	__u64 now;
	int rc, lock_fd;

	rc = parse_opts(ctx, argc, argv, &o);
	if (rc)
		return rc;
	xrl_log_init(o.log_format, ctx->instance);
	if (!o.host_id) {
		char hn[100] = "host";

		gethostname(hn, sizeof(hn) - 1);
		snprintf(host, sizeof(host), "%s/%s", hn, ctx->instance);
		o.host_id = host;
	}
	if (o.redis_url && xrl_redis_parse_url(o.redis_url, &fleet.redis.url, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "%s", err);
	rc = redis_password(ctx, &o, &fleet.redis.url);
	if (rc)
		return rc;
	xrl_log_secret(fleet.redis.url.password);
	if (o.metrics && xrl_metrics_parse_listen(o.metrics, listen, sizeof(listen), &mo, err,
						  sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_USAGE, "invalid --metrics: %s", err);
	lock_fd = xrl_instance_daemon_lock(xrl_ctx_instance(ctx), err, sizeof(err));
	if (lock_fd < 0)
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", err);
	if (xrl_instance_open(xrl_ctx_instance(ctx), XRL_LOCK_NONE, 0, 0, &m, err, sizeof(err)))
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", err);
	if (o.rules_file) {
		rc = apply_rules_file(ctx, o.rules_file, err, sizeof(err));
		if (rc < 0) {
			xrl_maps_close(&m);
			return xrl_error(ctx, rc == -EINVAL ? XRL_EXIT_USAGE : XRL_EXIT_FAIL,
					 "%s; the daemon did not start", err);
		}
		xrl_log(XRL_LOG_INFO, "%d rules loaded from %s", rc, o.rules_file);
	}
	if (xrl_fleet_init(&fleet, &m, ctx->instance, o.host_id, o.interval_ns, o.policy)) {
		xrl_maps_close(&m);
		return xrl_error(ctx, XRL_EXIT_FAIL, "out of memory");
	}
	if (o.metrics) {
		mo.top_k = o.metrics_top;
		mo.instance = ctx->instance;
		mo.pin_dir = ctx->pin_dir;
		metrics = xrl_metrics_start(&mo, &m, o.redis_url ? xrl_fleet_metrics : NULL, &fleet,
					    err, sizeof(err));
		if (!metrics) {
			xrl_fleet_free(&fleet);
			xrl_maps_close(&m);
			return xrl_error(ctx, XRL_EXIT_FAIL, "cannot serve metrics: %s", err);
		}
		xrl_log(XRL_LOG_INFO, strchr(mo.addr, ':') ? "metrics on http://[%s]:%u/metrics" :
			"metrics on http://%s:%u/metrics", mo.addr, xrl_metrics_port(metrics));
	}
	/* every Redis call gives up after half an interval (5 ms to 1 s), so a round fits its interval */
	now = o.interval_ns / 2;
	if (now < 5000000ull)
		now = 5000000ull;
	if (now > 1000000000ull)
		now = 1000000000ull;
	fleet.redis.timeout.tv_sec = now / 1000000000ull;
	fleet.redis.timeout.tv_usec = (now % 1000000000ull) / 1000;

	events = xrl_events_open(&m, o.quiet_ns);
	if (!events)
		xrl_log(XRL_LOG_WARN, "no limit events: cannot read the ring buffer (%s)", strerror(errno));

	sa.sa_handler = on_stop;   /* no SA_RESTART: signals cut the sleep short */
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_hup;
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	if (o.redis_url) {
		xrl_redis_url_name(&fleet.redis.url, err, sizeof(err));
		xrl_log(XRL_LOG_INFO, "started: host %s, redis %s, sync every %llu ms, on redis failure: %s",
			o.host_id, err, (unsigned long long)(o.interval_ns / 1000000),
			xrl_fleet_policy_name[o.policy]);
	} else {
		xrl_log(XRL_LOG_INFO, "started without --redis: --global rules limit each host on its own");
	}

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!stop_sig) {
		if (reload_req) {
			reload_req = 0;
			if (!o.rules_file) {
				xrl_log(XRL_LOG_WARN, "SIGHUP ignored: the daemon was started without --rules FILE");
			} else {
				rc = apply_rules_file(ctx, o.rules_file, err, sizeof(err));
				if (rc < 0)
					xrl_log(XRL_LOG_ERR, "reload refused: %s; the rules in force stay", err);
				else
					xrl_log(XRL_LOG_INFO, "%d rules reloaded from %s", rc, o.rules_file);
			}
		}
		if ((as = attach_state(ctx, &m)) != ATTACHED) {
			if (as == DETACHED)
				xrl_log(XRL_LOG_ERR, "instance '%s' was detached: stopping", ctx->instance);
			else
				xrl_log(XRL_LOG_ERR, "instance '%s' was detached and attached again: this daemon's maps are no longer the data path's; stopping (start the daemon again)",
					ctx->instance);
			xrl_metrics_stop(metrics);
			xrl_events_close(events);
			xrl_fleet_free(&fleet);
			xrl_maps_close(&m);
			return XRL_EXIT_FAIL;
		}
		refresh_rt_off(ctx, &m);
		rc = read_rules(ctx, &m, &fleet, events);
		if (rc)
			xrl_log(XRL_LOG_ERR, "cannot read the rule set: %s", strerror(-rc));
		else if (o.redis_url && (rc = xrl_fleet_round(&fleet)))
			xrl_log(XRL_LOG_ERR, "fleet round failed: %s", strerror(-rc));
		if (events)
			xrl_events_sweep(events);
		wait_round(&next, o.interval_ns, events);
	}
	if (o.redis_url)
		xrl_fleet_release(&fleet);
	xrl_log(XRL_LOG_INFO, "stopped by %s", stop_sig == SIGTERM ? "SIGTERM" : "SIGINT");
	xrl_metrics_stop(metrics);
	xrl_events_close(events);
	xrl_fleet_free(&fleet);
	xrl_maps_close(&m);
	return 0;
}
