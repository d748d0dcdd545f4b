// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A rule change writes only what differs between the set it makes and the
 * one two generations back (the spare parity of the LPM tries and of
 * xrl_rule_defs). These tests check that what the data path then does is
 * what the rule set says, whatever came before:
 *  - a random sequence of adds, deletes, changes of action, covering /0
 *    and /8 rules, deletes then re-adds and whole new sets, each given in
 *    a shuffled order: after each, the verdicts of the program
 *    (BPF_PROG_TEST_RUN) on probe sources of both families against a
 *    longest-prefix reference, the definitions against the set, and every
 *    LPM entry of the generation in force against the compiled set;
 *  - a change killed before each of its bpf() calls (a child process that
 *    exits there): the old set or the new one whole, and the next two
 *    changes exact from what the kill left;
 *  - one change at 4095-4096 rules, timed (printed, with a loose bound).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/bpf.h>
#include <linux/in.h>
#include <cmocka.h>
#include <bpf/bpf.h>

#include "xrl_tl_assert.h"
#include "xrl_rule.h"

/*
 * bpf() calls of this process are counted here: libbpf makes them through
 * syscall(3), which the executable's definition takes over. A child with
 * kill_at set exits before its kill_at-th call, as a SIGKILL would leave it.
 */
static long bpf_calls, kill_at;

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6];
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	if (nr == __NR_bpf && ++bpf_calls == kill_at)
		_exit(77);
	return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
}

/* The prefixes the sets are made of: nested, so entries inherit rules. */
static const char *const prefixes[] = {
	"0.0.0.0/0",     "10.0.0.0/8",       "10.1.0.0/16",     "10.1.2.0/24",
	"10.1.2.128/25", "10.1.2.200/32",    "10.2.0.0/16",     "10.2.3.0/24",
	"172.16.0.0/12", "192.168.0.0/16",   "192.168.5.0/24",  "::/0",
	"2001:db8::/32", "2001:db8:1::/48",  "2001:db8:1:2::/64", "2001:db8:1:2::5/128",
	"2001:db8:2::/48",
};
#define NPREF (int)(sizeof(prefixes) / sizeof(prefixes[0]))
/* per prefix: a rule without match fields, and one with --proto tcp (the probes are UDP) */
#define NMATCH 2
enum { R_NONE, R_DENY, R_ALLOW };

/* A rule set: state[prefix][match]. */
struct set {
	int r[NPREF][NMATCH];
};

/* Probe sources, one per line of probes_text: a frame each, and what it must get. */
static const char *const probes_text[] = {
	"10.1.2.3",   "10.1.2.130", "10.1.2.200", "10.1.2.201", "10.1.9.9",     "10.2.3.4",
	"10.2.4.4",   "10.3.0.1",   "172.16.1.1", "172.31.255.255", "172.32.0.1", "192.168.5.5",
	"192.168.6.6", "192.169.0.1", "8.8.8.8",   "0.0.0.1",    "2001:db8:1:2::5", "2001:db8:1:2::6",
	"2001:db8:1:3::1", "2001:db8:2::1", "2001:db8:3::1", "2001:db9::1", "::1", "fe80::1",
};
#define NPROBES (int)(sizeof(probes_text) / sizeof(probes_text[0]))

static struct xrl_tl tl;

static int setup(void **state)
{
	(void)state;
	return xrl_tl_open(&tl, 4096, XRL_MALFORMED_PASS);
}

static int teardown(void **state)
{
	(void)state;
	xrl_tl_close(&tl);
	return 0;
}

static void parse_prefix(const char *text, int *family, __u8 *addr, int *plen)
{
	char buf[64], *slash;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	*plen = slash ? atoi(slash + 1) : -1;
	if (slash)
		*slash = 0;
	memset(addr, 0, 16);
	*family = strchr(buf, ':') ? 6 : 4;
	assert_int_equal(inet_pton(*family == 4 ? AF_INET : AF_INET6, buf, addr), 1);
	if (*plen < 0)
		*plen = *family == 4 ? 32 : 128;
}

static bool holds(const char *prefix, const char *src)
{
	__u8 pa[16], sa[16];
	int pf, sf, pl, sl, b;

	parse_prefix(prefix, &pf, pa, &pl);
	parse_prefix(src, &sf, sa, &sl);
	if (pf != sf)
		return false;
	for (b = 0; b < pl; b++)
		if ((pa[b / 8] ^ sa[b / 8]) & (0x80 >> (b % 8)))
			return false;
	return true;
}

static int plen_of(const char *prefix)
{
	return atoi(strchr(prefix, '/') + 1);
}

/* What the set says of a UDP probe: the action of the longest prefix with a rule for it. */
static int expected_verdict(const struct set *s, const char *src)
{
	int i, best = -1, act = R_NONE;

	for (i = 0; i < NPREF; i++)
		if (s->r[i][0] != R_NONE && holds(prefixes[i], src) && plen_of(prefixes[i]) > best) {
			best = plen_of(prefixes[i]);
			act = s->r[i][0];
		}
	return act == R_DENY ? XDP_DROP : XDP_PASS;
}

static const char *rule_line(int i, int k, int act, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s %s", prefixes[i], k ? " --proto tcp" : "",
		 act == R_DENY ? "--deny" : "--allow");
	return buf;
}

/*
 * Apply s as the whole rule set, its rules in a shuffled order, with extra
 * /24 rules in 10.9.0.0/16 (no probe is there) beside them: more prefixes
 * than a change writes one by one.
 */
static int apply_set_extra(const struct xrl_maps *m, const struct set *s, unsigned *seed, int extra)
{
	static struct xrl_rule_def defs[NPREF * NMATCH + 256];
	char line[128], err[XRL_ERRLEN];
	int n = 0, i, k, j;

	for (i = 0; i < extra; i++) {
		snprintf(line, sizeof(line), "10.9.%d.0/24 --deny", i);
		assert_int_equal(xrl_rule_parse_line(line, &defs[n++], err, sizeof(err)), 1);
	}

	for (i = 0; i < NPREF; i++)
		for (k = 0; k < NMATCH; k++)
			if (s->r[i][k] != R_NONE) {
				assert_int_equal(xrl_rule_parse_line(rule_line(i, k, s->r[i][k], line, sizeof(line)),
								     &defs[n], err, sizeof(err)), 1);
				n++;
			}
	for (i = n - 1; i > 0; i--) {
		struct xrl_rule_def t;

		j = (int)(rand_r(seed) % (unsigned)(i + 1));
		t = defs[i];
		defs[i] = defs[j];
		defs[j] = t;
	}
	return xrl_ruleset_apply(m, defs, n, err, sizeof(err));
}

static int apply_set(const struct xrl_maps *m, const struct set *s, unsigned *seed)
{
	return apply_set_extra(m, s, seed, 0);
}

/* The rule set in force, as the definitions say it. */
static void read_set(const struct xrl_maps *m, struct set *s)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	char text[128], want[128];
	int n, i, j, k, found;

	memset(s, 0, sizeof(*s));
	assert_int_equal(xrl_ruleset_read(m, defs, ids, &n), 0);
	for (j = 0; j < n; j++) {
		xrl_rule_format(&defs[j], text, sizeof(text));
		found = 0;
		for (i = 0; i < NPREF && !found; i++)
			for (k = 0; k < NMATCH && !found; k++) {
				rule_line(i, k, R_DENY, want, sizeof(want));
				if (!strcmp(text, want)) {
					s->r[i][k] = R_DENY;
					found = 1;
				}
				rule_line(i, k, R_ALLOW, want, sizeof(want));
				if (!strcmp(text, want)) {
					s->r[i][k] = R_ALLOW;
					found = 1;
				}
			}
		if (!found)
			fail_msg("a rule in force that no set has: %s", text);
	}
}

/*
 * Every LPM entry of the generation in force, in both tries, is the entry
 * the set in force compiles to, and there is no other: 0, or 1 with the
 * first difference in why.
 */
static int lpm_exact(const struct xrl_maps *m, char *why, size_t len)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	static __u32 ids[XRL_MAX_RULES];
	struct xrl_compiled_prefix *cp;
	struct xrl_config cfg;
	char err[XRL_ERRLEN];
	int n, ncp, i, fam, seen = 0;

	assert_int_equal(xrl_read_config(m, &cfg), 0);
	assert_int_equal(xrl_ruleset_read(m, defs, ids, &n), 0);
	assert_int_equal(xrl_ruleset_compile(defs, ids, n, &cp, &ncp, err, sizeof(err)), 0);
	for (i = 0; i < ncp; i++) {
		struct xrl_lpm_v6 k = { .prefixlen = 32 + cp[i].plen, .gen = cfg.active_gen & 1 };
		struct xrl_prefix_entry v;

		memcpy(k.addr, cp[i].addr, cp[i].family == 4 ? 4 : 16);
		if (bpf_map_lookup_elem(cp[i].family == 4 ? m->rules_v4 : m->rules_v6, &k, &v) ||
		    memcmp(&v, &cp[i].entry, sizeof(v))) {
			snprintf(why, len, "entry %d (IPv%d /%d) of generation %u: %s", i, cp[i].family,
				 cp[i].plen, cfg.active_gen, errno == ENOENT ? "missing" : "differs");
			free(cp);
			return 1;
		}
	}
	/* and nothing more under the parity in force */
	for (fam = 4; fam <= 6; fam += 2) {
		struct xrl_lpm_v6 key, next;
		void *prev = NULL;
		int fd = fam == 4 ? m->rules_v4 : m->rules_v6;

		while (!bpf_map_get_next_key(fd, prev, &next)) {
			key = next;
			prev = &key;
			if (key.gen == (cfg.active_gen & 1))
				seen++;
		}
	}
	free(cp);
	if (seen != ncp) {
		snprintf(why, len, "%d entries under the parity in force, the set has %d", seen, ncp);
		return 1;
	}
	return 0;
}

/* The data path on every probe agrees with s: 0, or 1 with the first that does not in why. */
static int probes_agree(const struct set *s, char *why, size_t len)
{
	static __u8 frames[NPROBES][256];
	static size_t flen[NPROBES];
	int i, v;

	for (i = 0; i < NPROBES; i++) {
		if (!flen[i]) {
			struct xrl_pkt_spec spec = {
				.family = strchr(probes_text[i], ':') ? 6 : 4,
				.src = probes_text[i],
				.dst = strchr(probes_text[i], ':') ? "2001:db8:ffff::1" : "198.18.0.1",
				.dport = 9,
			};

			flen[i] = xrl_pkt_build(frames[i], sizeof(frames[i]), &spec, NULL, NULL);
		}
		v = xrl_tl_run(tl.prog_fd, frames[i], flen[i], 1, NULL);
		if (v != expected_verdict(s, probes_text[i])) {
			snprintf(why, len, "%s: verdict %d, the set says %d", probes_text[i], v,
				 expected_verdict(s, probes_text[i]));
			return 1;
		}
	}
	return 0;
}

static bool same_set(const struct set *a, const struct set *b)
{
	return !memcmp(a, b, sizeof(*a));
}

static void check_in_force(const struct set *s, const char *when)
{
	struct set got;
	char why[256];

	read_set(&tl.maps, &got);
	if (!same_set(&got, s))
		fail_msg("%s: the definitions differ from the set applied", when);
	if (lpm_exact(&tl.maps, why, sizeof(why)))
		fail_msg("%s: %s", when, why);
	if (probes_agree(s, why, sizeof(why)))
		fail_msg("%s: %s", when, why);
}

/* One random step from s: the kinds of change a sequence must survive. */
static void random_step(struct set *s, unsigned *seed, char *what, size_t len)
{
	int op = (int)(rand_r(seed) % 10), i = (int)(rand_r(seed) % NPREF), k = (int)(rand_r(seed) % NMATCH);
	int covering = rand_r(seed) % 2 ? 0 : (rand_r(seed) % 2 ? 1 : 11);   /* /0, /8, ::/0 */

	switch (op) {
	case 0:   /* a covering rule, present in many entries, changes or goes */
		s->r[covering][0] = (s->r[covering][0] + 1) % 3;
		snprintf(what, len, "covering %s to %d", prefixes[covering], s->r[covering][0]);
		break;
	case 1: {   /* a whole new set */
		int a, b;

		for (a = 0; a < NPREF; a++)
			for (b = 0; b < NMATCH; b++)
				s->r[a][b] = rand_r(seed) % 3 ? R_NONE : 1 + (int)(rand_r(seed) % 2);
		snprintf(what, len, "a whole new set");
		break;
	}
	case 2:   /* everything goes */
		memset(s, 0, sizeof(*s));
		snprintf(what, len, "the empty set");
		break;
	default:   /* one rule added, changed or deleted */
		s->r[i][k] = (s->r[i][k] + 1 + (int)(rand_r(seed) % 2)) % 3;
		snprintf(what, len, "%s%s to %d", prefixes[i], k ? " tcp" : "", s->r[i][k]);
		break;
	}
}

static void test_sequence_exact(void **state)
{
	struct set s = { 0 };
	unsigned seed = 12345;
	char what[128], when[192], why[256];
	int step, v;

	(void)state;
	for (step = 0; step < 300; step++) {
		random_step(&s, &seed, what, sizeof(what));
		assert_int_equal(apply_set(&tl.maps, &s, &seed), 0);
		snprintf(when, sizeof(when), "step %d (%s)", step, what);
		check_in_force(&s, when);
		/*
		 * 100 more prefixes, then without them: two changes that write
		 * every entry, and the parity they leave behind made the same
		 */
		if (step % 50 == 25) {
			for (v = 0; v < 2; v++) {
				assert_int_equal(apply_set_extra(&tl.maps, &s, &seed, v ? 0 : 100), 0);
				if (lpm_exact(&tl.maps, why, sizeof(why)) || probes_agree(&s, why, sizeof(why)))
					fail_msg("step %d, %s 100 more prefixes: %s", step, v ? "without" : "with", why);
			}
		}
		/* a delete then a re-add of one rule, the next two generations */
		if (step % 25 == 0) {
			for (v = 0; v < NPREF && s.r[v][0] == R_NONE; v++)
				;
			if (v < NPREF) {
				int was = s.r[v][0];

				s.r[v][0] = R_NONE;
				assert_int_equal(apply_set(&tl.maps, &s, &seed), 0);
				snprintf(when, sizeof(when), "step %d: %s deleted", step, prefixes[v]);
				check_in_force(&s, when);
				s.r[v][0] = was;
				assert_int_equal(apply_set(&tl.maps, &s, &seed), 0);
				snprintf(when, sizeof(when), "step %d: %s added again", step, prefixes[v]);
				check_in_force(&s, when);
			}
		}
	}
}

/*
 * A change from a to b killed before each of its bpf() calls in turn: the
 * set in force is a or b whole, and the next change (to c) is exact from
 * whatever the kill left in the spare parity.
 */
static void test_killed_changes(void **state)
{
	struct set a = { 0 }, b = { 0 }, c, got, empty = { 0 };
	unsigned seed = 777;
	char why[256];
	long n;
	int olds = 0, news = 0, st, done = 0, round;

	(void)state;
	for (round = 0; round < 4; round++) {
		/*
		 * round 0: covering rules change (many entries), the spare parity
		 * empty; round 1: a few entries, the spare parity holding c; round
		 * 2: the same, with a itself in the spare parity and then as the
		 * next change, which finds nothing to write unless it knows what
		 * the kill left there; round 3: the spare parity marked as a kill
		 * leaves it, so the change writes it whole and then brings the
		 * parity it leaves behind to the new set too, after the switch
		 */
		const struct set *spare, *after;
		memset(&a, 0, sizeof(a));
		a.r[0][0] = R_ALLOW; a.r[1][0] = R_DENY; a.r[3][0] = R_ALLOW; a.r[4][1] = R_DENY;
		a.r[7][0] = R_DENY; a.r[11][0] = R_DENY; a.r[13][0] = R_ALLOW; a.r[15][0] = R_DENY;
		b = a;
		if (round == 0) {
			b.r[0][0] = R_DENY; b.r[1][0] = R_ALLOW; b.r[11][0] = R_ALLOW; b.r[12][0] = R_DENY;
		} else {
			b.r[3][0] = R_NONE; b.r[5][0] = R_ALLOW; b.r[15][0] = R_ALLOW; b.r[16][1] = R_DENY;
		}
		c = b;
		c.r[2][0] = R_DENY;
		c.r[14][0] = R_DENY;
		spare = round == 0 ? &empty : round == 1 ? &c : &a;
		after = round >= 2 ? &a : &c;
		for (n = 1, done = 0; n < 200 && !done; n++) {
			pid_t pid;

			/*
			 * a in force, and in the spare parity the empty set (round 0:
			 * the change writes all of b) or c (round 1: what differs)
			 */
			assert_int_equal(apply_set(&tl.maps, spare, &seed), 0);
			assert_int_equal(apply_set(&tl.maps, &a, &seed), 0);
			check_in_force(&a, "before the kill");
			if (round == 3) {
				struct xrl_config cfg;

				assert_int_equal(xrl_read_config(&tl.maps, &cfg), 0);
				cfg.spare_dirty = 1;
				assert_int_equal(xrl_write_config(&tl.maps, &cfg), 0);
			}
			pid = fork();
			assert_true(pid >= 0);
			if (pid == 0) {
				bpf_calls = 0;
				kill_at = n;
				_exit(apply_set(&tl.maps, &b, &seed) ? 1 : 0);
			}
			assert_int_equal(waitpid(pid, &st, 0), pid);
			assert_true(WIFEXITED(st));
			if (WEXITSTATUS(st) == 0) {
				done = 1;
				check_in_force(&b, "the change not killed");
				break;
			}
			assert_int_equal(WEXITSTATUS(st), 77);
			read_set(&tl.maps, &got);
			if (same_set(&got, &a)) {
				olds++;
				snprintf(why, sizeof(why), "killed before bpf call %ld, old set", n);
				check_in_force(&a, why);
			} else if (same_set(&got, &b)) {
				news++;
				snprintf(why, sizeof(why), "killed before bpf call %ld, new set", n);
				check_in_force(&b, why);
			} else {
				fail_msg("killed before bpf call %ld: the definitions are neither set", n);
			}
			/* the next change starts from what the kill left */
			assert_int_equal(apply_set(&tl.maps, after, &seed), 0);
			snprintf(why, sizeof(why), "round %d: the change after a kill before bpf call %ld",
				 round, n);
			check_in_force(after, why);
			/* and the one after it, from the parity the kill did not touch */
			assert_int_equal(apply_set(&tl.maps, &a, &seed), 0);
			snprintf(why, sizeof(why), "round %d: the second change after a kill before bpf call %ld",
				 round, n);
			check_in_force(&a, why);
		}
		print_message("round %d: the change makes %ld bpf() calls\n", round, n - 1);
		assert_true(done);
	}
	/* kill points after the switch: only where a change catches the other parity up (round 3) */
	print_message("killed: %d left the old set, %d the new one\n", olds, news);
	assert_true(olds > 20);
	assert_true(news > 0);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One change at 4095-4096 rules of each family: the best of five, printed; a loose bound. */
static void test_change_at_4096(void **state)
{
	static struct xrl_rule_def defs[XRL_MAX_RULES];
	char line[128], err[XRL_ERRLEN], why[256];
	int fam, i, k, n;

	(void)state;
	for (fam = 4; fam <= 6; fam += 2) {
		double best = 1e9, t0, t, load;

		for (i = 0; i < XRL_MAX_RULES - 1; i++) {
			if (fam == 4)
				snprintf(line, sizeof(line), "10.%d.%d.0/24 --rate 100/s", i / 256, i % 256);
			else
				snprintf(line, sizeof(line), "2001:db8:%x::/48 --rate 100/s", i);
			assert_int_equal(xrl_rule_parse_line(line, &defs[i], err, sizeof(err)), 1);
		}
		n = XRL_MAX_RULES - 1;
		t0 = now_ms();
		assert_int_equal(xrl_ruleset_apply(&tl.maps, defs, n, err, sizeof(err)), 0);
		load = now_ms() - t0;
		/* a set replaced whole (the other family's before): every entry written, the old ones gone */
		if (lpm_exact(&tl.maps, why, sizeof(why)))
			fail_msg("IPv%d: after the rule load of %d rules: %s", fam, n, why);
		for (k = 0; k < 6; k++) {
			/* an add, then changes of its rate, then a delete and an add again */
			snprintf(line, sizeof(line), "%s --rate %d/s",
				 fam == 4 ? "192.0.2.0/24" : "2001:db8:ffff::/48", 5 + k);
			assert_int_equal(xrl_rule_parse_line(line, &defs[n], err, sizeof(err)), 1);
			t0 = now_ms();
			assert_int_equal(xrl_ruleset_apply(&tl.maps, defs, k == 4 ? n : n + 1, err,
							   sizeof(err)), 0);
			t = now_ms() - t0;
			if (t < best)
				best = t;
		}
		if (lpm_exact(&tl.maps, why, sizeof(why)))
			fail_msg("IPv%d: after the changes at %d rules: %s", fam, n, why);
		print_message("IPv%d: rule load of %d rules %.1f ms; one change at %d-%d rules %.2f ms at best\n",
			      fam, n, load, n, n + 1, best);
		assert_true(best < 500);
	}
}

/* Every LPM entry of both parities whose rules carry --total: how many have the wrong total_batch. */
static int wrong_batches(const struct xrl_maps *m, __u32 want, int *seen)
{
	struct xrl_lpm_v4 key, next;
	struct xrl_prefix_entry e;
	void *prev = NULL;
	int wrong = 0;
	__u32 i;

	*seen = 0;
	while (!bpf_map_get_next_key(m->rules_v4, prev, &next)) {
		key = next;
		prev = &key;
		assert_int_equal(bpf_map_lookup_elem(m->rules_v4, &key, &e), 0);
		for (i = 0; i < e.count; i++) {
			if (!(e.rules[i].flags & XRL_F_TOTAL))
				continue;
			++*seen;
			wrong += e.rules[i].total_batch != want;
		}
	}
	return wrong;
}

/*
 * Entries compiled on another CPU count (a CPU hotplugged since): the
 * recorded count is made to differ through the map, and a change of one
 * rule elsewhere must then rewrite every entry of both parities with the
 * host's total_batch, not only the entries of the prefix it touched.
 */
static void test_host_change_rewrites(void **state)
{
	static const char *const before[] = {
		"10.0.0.0/8 --rate 100/s --total 1000/s --total-burst 2000",
		"10.1.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"10.2.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"192.168.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"172.16.0.0/12 --deny",
		NULL,
	};
	static const char *const after[] = {
		"10.0.0.0/8 --rate 100/s --total 1000/s --total-burst 2000",
		"10.1.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"10.2.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"192.168.0.0/16 --rate 100/s --total 1000/s --total-burst 2000",
		"172.16.0.0/12 --allow",
		NULL,
	};
	__u32 want = xrl_total_batch(2000, xrl_cpus()), faked = xrl_total_batch(2000, xrl_cpus() + 3);
	struct xrl_prefix_entry e;
	struct xrl_config cfg;
	__u32 key = 0, i;
	int seen, wrong;

	(void)state;
	assert_int_not_equal(want, faked);
	assert_int_equal(xrl_tl_maps_rules(&tl.maps, before), 0);
	assert_int_equal(xrl_tl_maps_rules(&tl.maps, before), 0);
	assert_int_equal(wrong_batches(&tl.maps, want, &seen), 0);
	assert_true(seen > 0);
	/* what entries compiled on 3 more CPUs hold: total_batch written so, the count recorded so */
	{
		struct xrl_lpm_v4 k, next;
		void *prev = NULL;

		while (!bpf_map_get_next_key(tl.maps.rules_v4, prev, &next)) {
			k = next;
			prev = &k;
			assert_int_equal(bpf_map_lookup_elem(tl.maps.rules_v4, &k, &e), 0);
			for (i = 0; i < e.count; i++)
				if (e.rules[i].flags & XRL_F_TOTAL)
					e.rules[i].total_batch = faked;
			assert_int_equal(bpf_map_update_elem(tl.maps.rules_v4, &k, &e, BPF_EXIST), 0);
		}
	}
	assert_int_equal(bpf_map_lookup_elem(tl.maps.config, &key, &cfg), 0);
	cfg.compiled_cpus = (__u32)xrl_cpus() + 3;
	assert_int_equal(bpf_map_update_elem(tl.maps.config, &key, &cfg, BPF_ANY), 0);
	/* one rule changed, on a prefix no --total rule is on */
	assert_int_equal(xrl_tl_maps_rules(&tl.maps, after), 0);
	wrong = wrong_batches(&tl.maps, want, &seen);
	if (wrong)
		fail_msg("%d of %d --total rules in the entries keep the total_batch of another CPU count",
			 wrong, seen);
	assert_int_equal(bpf_map_lookup_elem(tl.maps.config, &key, &cfg), 0);
	assert_int_equal(cfg.compiled_cpus, (__u32)xrl_cpus());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_sequence_exact),
		cmocka_unit_test(test_killed_changes),
		cmocka_unit_test(test_change_at_4096),
		cmocka_unit_test(test_host_change_rewrites),
	};

	/* XRL_TEST_FILTER=test_change_at_4096: one test alone (the timing) */
	if (getenv("XRL_TEST_FILTER"))
		cmocka_set_test_filter(getenv("XRL_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
