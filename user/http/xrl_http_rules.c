// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The request layer's rules file (xrl_http_rules.h): words split on blanks,
 * each word's column kept for the error; the rate words are the packet
 * rules' (xrl_parse_rate, xrl_gcra_compile of user/lib).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_http_rules.h"
#include "xrl_rule.h"

#define MAX_WORDS 64

struct word {
	char s[XRL_HTTP_PATH_MAX];
	int col;
};

static const struct { const char *name; unsigned algo; } algos[] = {
	{ "token-bucket", XRL_ALGO_TOKEN_BUCKET },
	{ "fixed-window", XRL_ALGO_FIXED_WINDOW },
	{ "sliding-window", XRL_ALGO_SLIDING_WINDOW },
	{ "sliding-log", XRL_ALGO_SLIDING_LOG },
	{ "leaky-bucket", XRL_HTTP_ALGO_LEAKY },
};

const char *xrl_http_algo_name(unsigned algo)
{
	size_t i;

	for (i = 0; i < sizeof(algos) / sizeof(algos[0]); i++)
		if (algos[i].algo == algo)
			return algos[i].name;
	return "?";
}

static int bad(char *err, size_t errlen, int col, const char *fmt, const char *a, const char *b)
{
	char msg[256];

	snprintf(msg, sizeof(msg), fmt, a, b);
	snprintf(err, errlen, "column %d: %s", col, msg);
	return -1;
}

/* a header or argument name: visible ASCII but no separators */
static int name_ok(const char *s)
{
	if (!*s || strlen(s) >= XRL_HTTP_NAME_MAX)
		return 0;
	for (; *s; s++)
		if (!isgraph((unsigned char)*s) || strchr("()<>@,;:\\\"/[]?={}+", *s))
			return 0;
	return 1;
}

static int parse_key(const char *s, struct xrl_http_key *k)
{
	char *end;
	long v;

	memset(k, 0, sizeof(*k));
	if (!strncmp(s, "header:", 7) && name_ok(s + 7)) {
		k->kind = XRL_HTTP_KEY_HEADER;
		strcpy(k->name, s + 7);
		return 0;
	}
	if (!strncmp(s, "arg:", 4) && name_ok(s + 4)) {
		k->kind = XRL_HTTP_KEY_ARG;
		strcpy(k->name, s + 4);
		return 0;
	}
	if (strncmp(s, "ip", 2))
		return -1;
	k->kind = XRL_HTTP_KEY_IP;
	k->plen4 = 32;
	k->plen6 = 64;
	if (!s[2])
		return 0;
	if (s[2] != '/' || !isdigit((unsigned char)s[3]))
		return -1;
	errno = 0;
	v = strtol(s + 3, &end, 10);
	if (errno || v < 1 || v > 32)
		return -1;
	k->plen4 = (int)v;
	if (!*end)
		return 0;
	if (*end != ',' || !isdigit((unsigned char)end[1]))
		return -1;
	v = strtol(end + 1, &end, 10);
	if (*end || v < 1 || v > 128)
		return -1;
	k->plen6 = (int)v;
	return 0;
}

static int parse_keys(const char *s, struct xrl_http_rule *r)
{
	char buf[XRL_HTTP_PATH_MAX], *save = NULL, *t;

	snprintf(buf, sizeof(buf), "%s", s);
	r->nkeys = 0;
	for (t = strtok_r(buf, "+", &save); t; t = strtok_r(NULL, "+", &save)) {
		if (r->nkeys == XRL_HTTP_MAX_KEYS || parse_key(t, &r->keys[r->nkeys]))
			return -1;
		r->nkeys++;
	}
	return r->nkeys ? 0 : -1;
}

/* the words' compiled parameters; 0 or -1 with err (at column col) */
static int compile(struct xrl_http_rule *r, int col, char *err, size_t errlen)
{
	char why[XRL_ERRLEN] = "";
	__u64 burst = r->burst ? r->burst : r->count;

	switch (r->algo) {
	case XRL_ALGO_TOKEN_BUCKET:
		break;
	case XRL_HTTP_ALGO_LEAKY:
		/*
		 * The leaky bucket as a queue is the GCRA meter whose burst is the
		 * queue: a request conforms when fewer than queue are ahead of it,
		 * and is answered at its slot (the TAT it found) instead of at once.
		 */
		if (r->burst)
			return bad(err, errlen, col, "--burst is the token bucket's; the leaky "
				   "bucket's depth is --queue%s", "", "");
		burst = r->queue;
		if (!r->queue)
			return bad(err, errlen, col, "--algo leaky-bucket needs --queue N (requests "
				   "waiting per key at most, 1 to %s)", "100000", "");
		break;
	case XRL_ALGO_FIXED_WINDOW:
	case XRL_ALGO_SLIDING_WINDOW:
	case XRL_ALGO_SLIDING_LOG:
		if (r->burst)
			return bad(err, errlen, col, "--burst is the token bucket's; a window's "
				   "limit is --rate's count", "", "");
		if (r->algo == XRL_ALGO_SLIDING_LOG && r->count > XRL_LOG_MAX)
			return bad(err, errlen, col, "--algo sliding-log keeps at most %s requests "
				   "per window: use sliding-window for more", "64", "");
		if (r->algo == XRL_ALGO_SLIDING_WINDOW && r->count > 1048575)
			return bad(err, errlen, col, "--algo sliding-window allows at most %s per "
				   "window", "1048575", "");
		r->win_ns = (__u64)r->period_s * 1000000000ull;
		return 0;
	}
	if (r->queue && r->algo != XRL_HTTP_ALGO_LEAKY)
		return bad(err, errlen, col, "--queue is the leaky bucket's (--algo leaky-bucket)",
			   "", "");
	if (xrl_gcra_compile(r->count, (__u64)r->period_s * 1000000000ull, burst, &r->g, why,
			     sizeof(why)))
		return bad(err, errlen, col, "%s", why, "");
	return 0;
}

int xrl_http_rule_parse_line(const char *line, struct xrl_http_rule *r, char *err, size_t errlen)
{
	static struct word w[MAX_WORDS];
	char why[XRL_ERRLEN];
	int n = 0, i, col = 1, have_key = 0, have_rate = 0, have_missing = 0, esc_col = 0;
	int plain_ip = 0, pkt_col = 0;
	const char *p = line;
	__u64 v;

	/* split into words with their columns; # starts a comment */
	while (*p) {
		const char *s;
		size_t len;

		while (*p == ' ' || *p == '\t') {
			p++;
			col++;
		}
		if (!*p || *p == '#')
			break;
		s = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
		len = (size_t)(p - s);
		if (n == MAX_WORDS)
			return bad(err, errlen, col, "too many words (at most %s)", "64", "");
		if (len >= sizeof(w[n].s))
			return bad(err, errlen, col, "word too long (at most %s characters)", "255", "");
		memcpy(w[n].s, s, len);
		w[n].s[len] = 0;
		w[n].col = col;
		col += (int)len;
		n++;
	}
	if (!n)
		return 0;
	memset(r, 0, sizeof(*r));
	if (w[0].s[0] == '-' || !name_ok(w[0].s) || strchr(w[0].s, '"'))
		return bad(err, errlen, w[0].col, "'%s': a rule starts with its name (letters, digits, "
			   "- _ .), then its options", w[0].s, "");
	strcpy(r->name, w[0].s);
	for (i = 1; i < n; i++) {
		const char *o = w[i].s, *a = i + 1 < n ? w[i + 1].s : NULL;
		int ac = i + 1 < n ? w[i + 1].col : w[i].col + (int)strlen(o);

		if (!strcmp(o, "--global")) {
			r->global = 1;
			continue;
		}
		if (!strcmp(o, "--shadow"))
			return bad(err, errlen, w[i].col, "%s is not supported by xrl http yet", o, "");
		if (strncmp(o, "--", 2) || (strcmp(o, "--key") && strcmp(o, "--rate") &&
					    strcmp(o, "--burst") && strcmp(o, "--algo") &&
					    strcmp(o, "--path") && strcmp(o, "--method") &&
					    strcmp(o, "--missing") && strcmp(o, "--queue") &&
					    strcmp(o, "--escalate") && strcmp(o, "--block") &&
					    strcmp(o, "--packet-rule")))
			return bad(err, errlen, w[i].col, "unknown word '%s' (options: --key --rate "
				   "--burst --algo --path --method --missing --queue --global "
				   "--escalate --block --packet-rule)", o, "");
		if (!a)
			return bad(err, errlen, ac, "%s needs a value", o, "");
		i++;
		if (!strcmp(o, "--key")) {
			if (parse_keys(a, r))
				return bad(err, errlen, ac, "bad key '%s' (ip, ip/LEN, ip/LEN,LEN6, "
					   "header:NAME, arg:NAME, joined by +; at most 4)", a, "");
			have_key = 1;
			plain_ip = !strcmp(a, "ip");
		} else if (!strcmp(o, "--packet-rule")) {
			if (strlen(a) >= sizeof(r->packet_rule))
				return bad(err, errlen, ac, "--packet-rule '%s': a packet rule's prefix "
					   "or id (the ID column of 'xrl rule list')", a, "");
			strcpy(r->packet_rule, a);
			r->global = 1;
			pkt_col = w[i - 1].col;
		} else if (!strcmp(o, "--rate")) {
			if (xrl_parse_rate(a, &r->count, &r->period_s, why, sizeof(why)))
				return bad(err, errlen, ac, "%s", why, "");
			have_rate = 1;
		} else if (!strcmp(o, "--burst")) {
			if (xrl_parse_uint("--burst", a, 1, 0xffffffffull, &v, why, sizeof(why)))
				return bad(err, errlen, ac, "%s", why, "");
			r->burst = v;
		} else if (!strcmp(o, "--queue")) {
			if (xrl_parse_uint("--queue", a, 1, XRL_HTTP_QUEUE_MAX, &v, why, sizeof(why)))
				return bad(err, errlen, ac, "%s", why, "");
			r->queue = (__u32)v;
		} else if (!strcmp(o, "--algo")) {
			size_t k;

			for (k = 0; k < sizeof(algos) / sizeof(algos[0]); k++)
				if (!strcmp(a, algos[k].name))
					break;
			if (k == sizeof(algos) / sizeof(algos[0]))
				return bad(err, errlen, ac, "unknown algorithm '%s' (token-bucket, "
					   "fixed-window, sliding-window, sliding-log, leaky-bucket)",
					   a, "");
			r->algo = algos[k].algo;
		} else if (!strcmp(o, "--path")) {
			if (a[0] != '/')
				return bad(err, errlen, ac, "--path '%s': a path prefix starts with /",
					   a, "");
			strcpy(r->path, a);
		} else if (!strcmp(o, "--method")) {
			size_t k, len = strlen(a);

			if (r->nmethods == XRL_HTTP_MAX_METHODS || !len || len >= 16)
				return bad(err, errlen, ac, "--method '%s': at most 8 methods of up "
					   "to 15 letters", a, "");
			for (k = 0; k < len; k++)
				if (!isupper((unsigned char)a[k]))
					return bad(err, errlen, ac, "--method '%s': a method is upper "
						   "case letters (GET, POST)", a, "");
			strcpy(r->methods[r->nmethods++], a);
		} else if (!strcmp(o, "--escalate")) {
			if (xrl_parse_uint("--escalate", a, 1, 1000000, &v, why, sizeof(why)))
				return bad(err, errlen, ac, "%s (refusals a second)", why, "");
			r->escalate = (__u32)v;
			esc_col = w[i - 1].col;
		} else if (!strcmp(o, "--block")) {
			if (xrl_parse_duration("--block", a, XRL_MAX_BLOCK_S, &r->block_ns, why,
					       sizeof(why)))
				return bad(err, errlen, ac, "%s", why, "");
			esc_col = w[i - 1].col;
		} else if (!strcmp(o, "--missing")) {
			if (strcmp(a, "pass") && strcmp(a, "refuse"))
				return bad(err, errlen, ac, "--missing '%s': pass or refuse", a, "");
			r->missing_refuse = !strcmp(a, "refuse");
			have_missing = 1;
		}
	}
	col = w[n - 1].col + (int)strlen(w[n - 1].s);
	if (!have_key)
		return bad(err, errlen, col, "rule '%s' needs --key", r->name, "");
	if (!have_rate)
		return bad(err, errlen, col, "rule '%s' needs --rate", r->name, "");
	for (i = 0; i < r->nkeys; i++)
		if (r->keys[i].kind != XRL_HTTP_KEY_IP && !have_missing)
			return bad(err, errlen, col, "rule '%s' keys on a header or argument: say what "
				   "a request without it gets (--missing pass|refuse)", r->name, "");
	if (r->global && r->algo == XRL_HTTP_ALGO_LEAKY)
		return bad(err, errlen, w[0].col, "--global is for token-bucket, fixed-window, "
			   "sliding-window and sliding-log rules (one exact Redis call per request); "
			   "not --algo %s: its queue is this service's", xrl_http_algo_name(r->algo), "");
	if (pkt_col && !plain_ip)
		return bad(err, errlen, pkt_col, "rule '%s': --packet-rule needs --key ip (alone, "
			   "without /LEN: the packet rule's --per sets the source's length)",
			   r->name, "");
	if (!r->escalate != !r->block_ns)
		return bad(err, errlen, esc_col, "rule '%s': --escalate RATE and --block DURATION go "
			   "together (an address refused more than RATE times a second is dropped "
			   "at XDP for DURATION)", r->name, "");
	if (r->escalate && (r->nkeys != 1 || r->keys[0].kind != XRL_HTTP_KEY_IP))
		return bad(err, errlen, esc_col, "rule '%s': --escalate is for a rule keyed by ip "
			   "alone (XDP drops an address, not a header's or argument's value)",
			   r->name, "");
	return compile(r, w[0].col, err, errlen) ? -1 : 1;
}

int xrl_http_rules_parse(const char *text, struct xrl_http_rules *out, char *err, size_t errlen)
{
	static char line[4096];
	const char *p = text;
	int lineno = 0, i;

	out->n = 0;
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char why[320];
		int got;

		lineno++;
		if (len >= sizeof(line)) {
			snprintf(err, errlen, "line %d: longer than %zu characters", lineno,
				 sizeof(line) - 1);
			return -1;
		}
		memcpy(line, p, len);
		line[len] = 0;
		if (len && line[len - 1] == '\r')
			line[len - 1] = 0;
		p += len + (nl ? 1 : 0);
		if (out->n == XRL_HTTP_MAX_RULES) {
			struct xrl_http_rule tmp;

			if (xrl_http_rule_parse_line(line, &tmp, why, sizeof(why)) == 0)
				continue;
			snprintf(err, errlen, "line %d: more than %d rules", lineno,
				 XRL_HTTP_MAX_RULES);
			return -1;
		}
		got = xrl_http_rule_parse_line(line, &out->rule[out->n], why, sizeof(why));
		if (got < 0) {
			snprintf(err, errlen, "line %d, %s", lineno, why);
			return -1;
		}
		if (!got)
			continue;
		for (i = 0; i < out->n; i++)
			if (!strcmp(out->rule[i].name, out->rule[out->n].name)) {
				snprintf(err, errlen, "line %d, column 1: rule '%s' is defined twice",
					 lineno, out->rule[i].name);
				return -1;
			}
		out->n++;
	}
	return 0;
}

int xrl_http_rules_read(const char *file, struct xrl_http_rules *out, char *err, size_t errlen)
{
	char why[384], *text;
	FILE *f = fopen(file, "r");
	long len;
	int rc;

	if (!f) {
		snprintf(err, errlen, "%s: %s", file, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || len > (1 << 20) ||
	    fseek(f, 0, SEEK_SET)) {
		fclose(f);
		snprintf(err, errlen, "%s: unreadable or larger than 1 MiB", file);
		return -1;
	}
	text = calloc(1, (size_t)len + 1);
	if (!text || fread(text, 1, (size_t)len, f) != (size_t)len) {
		free(text);
		fclose(f);
		snprintf(err, errlen, "%s: read failed", file);
		return -1;
	}
	fclose(f);
	rc = xrl_http_rules_parse(text, out, why, sizeof(why));
	free(text);
	if (rc)
		snprintf(err, errlen, "%s: %s", file, why);
	return rc;
}
