// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * bpf/xrl_algo.h on the host: the window algorithms of --algo against
 * plain models (a fixed window's counter, a brute-force sliding log, the
 * sliding window's stated bound), their compare-and-swap loops from
 * several threads at once, and the rule words: --algo parsed, formatted
 * back and refused where it does not fit.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "xrl_algo.h"
#include "xrl_rule.h"

#define SEC_NS 1000000000ULL
#define MS_NS  1000000ULL

static __u64 rnd_state = 88172645463325252ull;

static __u64 rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

/* UTC alignment: the window of a monotonic time moves with the offset. */
static void test_window_index(void **state)
{
	(void)state;
	assert_int_equal(xrl_win_index(999 * MS_NS, 0, SEC_NS), 0);
	assert_int_equal(xrl_win_index(1000 * MS_NS, 0, SEC_NS), 1);
	assert_int_equal(xrl_win_index(600 * MS_NS, 400 * MS_NS, SEC_NS), 1);
	assert_int_equal(xrl_win_pos(600 * MS_NS, 500 * MS_NS, SEC_NS), 100 * MS_NS);
	/* 14:05 UTC on 1 Dec 2026 is one minute window everywhere */
	assert_int_equal(xrl_win_index(0, 1796133900ull * SEC_NS, 60 * SEC_NS), 1796133900ull / 60);
	assert_int_equal(xrl_win_index(59 * SEC_NS, 1796133900ull * SEC_NS, 60 * SEC_NS), 1796133900ull / 60);
	assert_int_equal(xrl_win_index(60 * SEC_NS, 1796133900ull * SEC_NS, 60 * SEC_NS), 1796133900ull / 60 + 1);
}

/* Fixed window against a counter per window, random times and gaps. */
static void test_fixed_window_model(void **state)
{
	__u64 word = 0, t = 5 * SEC_NS, next, model_idx = ~0ull, model_cnt = 0;
	const __u32 limit = 7;
	int i;

	(void)state;
	for (i = 0; i < 200000; i++) {
		__u64 idx;
		int got, want;

		t += rnd() % (i % 1000 < 500 ? 30 * MS_NS : 3 * SEC_NS);
		idx = xrl_win_index(t, 0, SEC_NS);
		if (idx != model_idx) {
			model_idx = idx;
			model_cnt = 0;
		}
		want = model_cnt < limit;
		got = xrl_win_peek(XRL_ALGO_FIXED_WINDOW, word, 0, t, 0, SEC_NS, limit, 0, &next);
		assert_int_equal(got, want);
		if (got) {
			word = next;
			model_cnt++;
		}
	}
	/*
	 * A packet whose clock is behind the word's window (another CPU read a
	 * later clock at a boundary) counts in the word's window: it never
	 * resets it, or two CPUs either side of a boundary would each restart
	 * the count for the other.
	 */
	assert_true(xrl_fw_admit(((__u64)5 << 32) | 3, 0, 4, 10, 0, &next));
	assert_int_equal(next, ((__u64)5 << 32) | 4);
	assert_false(xrl_fw_admit(((__u64)5 << 32) | 10, 0, 4, 10, 0, &next));
	assert_true(xrl_fw_admit(((__u64)5 << 32) | 10, 0, 6, 10, 0, &next));   /* the next window */
	assert_int_equal(next, ((__u64)6 << 32) | 1);
	/* the same for the sliding window: decided in the word's window, at its start */
	assert_false(xrl_sw_admit(((__u64)5 << 40) | (4ull << 20) | 6, 0, 4, 999 * MS_NS, SEC_NS, 10,
				  0, 0, &next));
	assert_true(xrl_sw_admit(((__u64)5 << 40) | (4ull << 20) | 5, 0, 4, 999 * MS_NS, SEC_NS, 10,
				 0, 0, &next));
	assert_int_equal(next, ((__u64)5 << 40) | (4ull << 20) | 6);
	/* --global: the rest of the fleet's count adds to the source's own, capped at the limit */
	assert_true(xrl_fw_admit(((__u64)7 << 32) | 3, 0, 7, 10, 6, &next));
	assert_false(xrl_fw_admit(((__u64)7 << 32) | 4, 0, 7, 10, 6, &next));
	assert_false(xrl_fw_admit(0, 0, 7, 10, 0xffffffffu, &next));
	assert_true(xrl_sw_admit(((__u64)7 << 40) | 2, 0, 7, 500 * MS_NS, SEC_NS, 10, 3, 8, &next));
	/* 8 x 0.5 + 2 + 3 + 1 = 10 <= 10; one more is over */
	assert_false(xrl_sw_admit(next, 0, 7, 500 * MS_NS, SEC_NS, 10, 3, 8, &next));
	assert_false(xrl_sw_admit(0, 0, 7, 0, 3600 * SEC_NS, XRL_SW_MAX, 0xffffffffu, 0xffffffffu,
				  &next));
	/* the daemon's answer is this window's, one window old, or moot */
	assert_int_equal(xrl_win_others(9, 9, 3, 4), (4ull << 32) | 3);
	assert_int_equal(xrl_win_others(10, 9, 3, 4), 3ull << 32);
	assert_int_equal(xrl_win_others(11, 9, 3, 4), 0);
	assert_int_equal(xrl_win_others(8, 9, 3, 4), 0);
	/* fresh: a source of an older rule version starts at 0 */
	assert_true(xrl_fw_admit(word, 1, xrl_win_index(t, 0, SEC_NS), 1, 0, &next));
	assert_int_equal((__u32)next, 1);
}

/*
 * Sliding window: random traffic, and for every admission the count in
 * the window-long span ending there is at most limit + prev x pos / W
 * (DESIGN), which is under twice the limit; admissions are exactly what
 * the formula says.
 */
static void test_sliding_window_bound(void **state)
{
	static __u64 at[400000];
	__u64 word = 0, t = 7 * SEC_NS + 123, next;
	const __u32 limit = 20;
	int i, n = 0, j0 = 0, worst = 0;

	(void)state;
	for (i = 0; i < 300000; i++) {
		__u64 idx, pos, prev, cur, cnt;
		int got, want, j;

		t += rnd() % (i % 2000 < 1000 ? 5 * MS_NS : 400 * MS_NS);
		idx = xrl_win_index(t, 0, SEC_NS);
		pos = xrl_win_pos(t, 0, SEC_NS);
		xrl_sw_counts(word, 0, idx, &prev, &cur);
		want = (double)prev * (double)(SEC_NS - pos) / SEC_NS + cur + 1 <= limit + 1e-9;
		got = xrl_sw_admit(word, 0, idx, pos, SEC_NS, limit, 0, 0, &next);
		assert_int_equal(got, want);
		if (!got)
			continue;
		word = next;
		at[n++] = t;
		while (at[j0] + SEC_NS <= t)
			j0++;
		cnt = (__u64)(n - j0);
		j = (int)cnt;
		if (j > worst)
			worst = j;
		if (cnt > limit + prev * pos / SEC_NS)
			fail_msg("%llu in the span ending %llu ns into its window, prev %llu",
				 (unsigned long long)cnt, (unsigned long long)pos,
				 (unsigned long long)prev);
	}
	printf("  sliding window 20/s: most in any 1-s span %d (bound: under 40)\n", worst);
	assert_true(worst < 2 * (int)limit);
	/* counts saturate at the limit for any window, hours included */
	assert_false(xrl_sw_admit(((__u64)5 << 40) | XRL_SW_MAX, 0, 5, 0, 3600 * SEC_NS, XRL_SW_MAX,
				  0, 0, &next));
}

/* The sliding log against a brute-force log: exact, at random times. */
static void test_sliding_log_model(void **state)
{
	static __u64 at[300000];
	__u64 word = xrl_log_word(77), ring[XRL_LOG_MAX] = { 0 }, t = 9 * SEC_NS;
	const __u32 limit = 13;
	int i, n = 0, j0 = 0;

	(void)state;
	for (i = 0; i < 200000; i++) {
		int got, want;

		t += (rnd() % (i % 1000 < 500 ? 40 * MS_NS : 2 * SEC_NS)) & ~15ull;   /* 16-ns grid */
		while (j0 < n && at[j0] + SEC_NS <= t)
			j0++;
		want = n - j0 < (int)limit;
		got = xrl_log_take(&word, ring, NULL, 0, limit, 0, t, SEC_NS);
		assert_int_equal(got, want);
		if (got)
			at[n++] = t;
	}
	/* a log of another incarnation (other nonce) is empty */
	word = xrl_log_word(78);
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, limit, 0, t, SEC_NS), 1);
	/* a limit above the ring is never admitted (the parser refuses it) */
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, XRL_LOG_MAX + 1, 0, t, SEC_NS), 0);
}

/*
 * Several threads on one word (and ring), started together: each walks the
 * same 200 windows of time, 2000 tries per window, so admissions race at
 * every window's start. Never more than the limit per window in all: exactly
 * the limit, as every window is tried far more often than it admits.
 */
#define RACE_WINDOWS 200
#define RACE_TRIES   2000
static pthread_barrier_t race_start;

struct race {
	__u8 algo;
	__u64 *word, *ring;
	__u32 limit;
	int passed;
};

static void *race_thread(void *arg)
{
	struct race *r = arg;
	int i;

	pthread_barrier_wait(&race_start);
	for (i = 0; i < RACE_WINDOWS * RACE_TRIES; i++) {
		__u64 t = 40 * SEC_NS + (__u64)(i / RACE_TRIES) * SEC_NS + 5 * MS_NS;
		int got;

		if (r->algo == XRL_ALGO_SLIDING_LOG)
			got = xrl_log_take(r->word, r->ring, NULL, 0, r->limit, 0, t, SEC_NS);
		else
			got = xrl_win_take(r->word, NULL, 0, r->algo, 0, t, 0, SEC_NS, r->limit, 0);
		r->passed += got > 0;
	}
	return NULL;
}

static void test_cas_threads(void **state)
{
	static const __u8 algos[] = { XRL_ALGO_FIXED_WINDOW, XRL_ALGO_SLIDING_WINDOW, XRL_ALGO_SLIDING_LOG };
	int a, i;

	(void)state;
	for (a = 0; a < 3; a++) {
		__u64 word = algos[a] == XRL_ALGO_SLIDING_LOG ? xrl_log_word(5) : 0;
		__u64 ring[XRL_LOG_MAX] = { 0 };
		struct race r[4];
		pthread_t th[4];
		int total = 0;

		assert_int_equal(pthread_barrier_init(&race_start, NULL, 4), 0);
		for (i = 0; i < 4; i++) {
			r[i] = (struct race){ .algo = algos[a], .word = &word, .ring = ring, .limit = 64 };
			assert_int_equal(pthread_create(&th[i], NULL, race_thread, &r[i]), 0);
		}
		for (i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			total += r[i].passed;
		}
		pthread_barrier_destroy(&race_start);
		printf("  %s from 4 threads: %d admitted over %d windows of 64\n",
		       algos[a] == XRL_ALGO_SLIDING_LOG ? "sliding-log" :
		       algos[a] == XRL_ALGO_SLIDING_WINDOW ? "sliding-window" : "fixed-window", total,
		       RACE_WINDOWS);
		assert_true(total <= 64 * RACE_WINDOWS);
		/* a fixed window and the log are full in every window; a sliding window spreads its count */
		if (algos[a] != XRL_ALGO_SLIDING_WINDOW)
			assert_true(total >= 64 * RACE_WINDOWS - 64);
	}
}

/*
 * A sliding log across a rule change, from 4 threads at once (xrl_win_decide's
 * path): the word is of version 7, and every thread saw the source "fresh"
 * (its entry's key of an older version), so each restarts it for version 8
 * before taking, and thread 0 does so once more, late (a CPU that read the
 * old key before another stored the new one). Threads 1 and 3 go by a second
 * word of the same source, of version 8 already (two CPUs inserted it at
 * once: two entries, one ring). Each window admits exactly the limit: the
 * restarts share a nonce and a word of it is left alone. With a nonce per
 * restart or per insert (the old code) the late restart or the second
 * entry's word made the ring read empty (320 and 256 in a window of 64).
 */
struct restart_race {
	__u64 *word, *ring;
	int id, passed[3];
};

static void *restart_thread(void *arg)
{
	struct restart_race *r = arg;
	int w, i;

	pthread_barrier_wait(&race_start);
	if (!(r->id & 1))   /* the second entry is of version 8 already */
		assert_int_equal(xrl_log_restart(r->word, xrl_log_word(8)), 0);
	for (w = 0; w < 3; w++) {
		for (i = 0; i < RACE_TRIES; i++) {
			__u64 t = 70 * SEC_NS + (__u64)w * SEC_NS + 5 * MS_NS + (__u64)i * 16;

			if (r->id == 0 && w == 0 && i == RACE_TRIES / 2)
				assert_int_equal(xrl_log_restart(r->word, xrl_log_word(8)), 0);
			r->passed[w] += xrl_log_take(r->word, r->ring, NULL, 0, 64, 0, t, SEC_NS) > 0;
		}
		pthread_barrier_wait(&race_start);
	}
	return NULL;
}

static void test_log_restart_race(void **state)
{
	__u64 ring[XRL_LOG_MAX], words[2], t0 = 69 * SEC_NS + 500 * MS_NS;
	struct restart_race r[4];
	pthread_t th[4];
	int i, w, run;

	(void)state;
	for (run = 0; run < 20; run++) {
		int total[3] = { 0 };

		/* version 7's log, full half a window ago: version 8's starts empty all the same */
		memset(ring, 0, sizeof(ring));
		words[0] = xrl_log_word(7);
		for (i = 0; i < 64; i++)
			assert_int_equal(xrl_log_take(&words[0], ring, NULL, 0, 64, 0, t0, SEC_NS), 1);
		words[1] = xrl_log_word(8);   /* the second entry, inserted under version 8 */
		assert_int_equal(pthread_barrier_init(&race_start, NULL, 4), 0);
		for (i = 0; i < 4; i++) {
			r[i] = (struct restart_race){ .word = &words[i & 1], .ring = ring, .id = i };
			assert_int_equal(pthread_create(&th[i], NULL, restart_thread, &r[i]), 0);
		}
		for (i = 0; i < 4; i++) {
			pthread_join(th[i], NULL);
			for (w = 0; w < 3; w++)
				total[w] += r[i].passed[w];
		}
		pthread_barrier_destroy(&race_start);
		if (run == 0)
			printf("  sliding-log restarted from 4 threads, 2 entries: %d %d %d admitted in 3 windows of 64\n",
			       total[0], total[1], total[2]);
		for (w = 0; w < 3; w++)
			assert_int_equal(total[w], 64);
	}
}

/*
 * The 16-ns unit never admits early: off the 16-ns grid, with a window
 * that is not a multiple of 16 ns, a limit of 1 refuses 1 ns before the
 * window has passed since the admission, and admits 48 ns after.
 */
static void test_log_time_unit(void **state)
{
	const __u64 win = SEC_NS + 7;
	int i;

	(void)state;
	for (i = 0; i < 2000; i++) {
		__u64 word = xrl_log_word(3), ring[XRL_LOG_MAX] = { 0 };
		__u64 t0 = 5 * SEC_NS + rnd() % (10 * SEC_NS);

		assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0, win), 1);
		assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + win - 1, win), 0);
		assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + win + 47, win), 1);
	}
}

/*
 * A source back after 30 days (past the slot time's 48-bit signed range,
 * 2^47 x 16 ns = 26 days) is admitted, not refused until the time wraps
 * again at 52 days; one less than XRL_LOG_AHEAD before the wrap is refused.
 */
static void test_log_wrap(void **state)
{
	const __u64 day = 86400 * SEC_NS, wrap = (1ull << XRL_LOG_TS_BITS) << XRL_LOG_SHIFT;
	__u64 word = xrl_log_word(4), ring[XRL_LOG_MAX] = { 0 }, t0 = 3 * SEC_NS;

	(void)state;
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0, SEC_NS), 1);
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + SEC_NS / 2, SEC_NS), 0);
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + 30 * day, SEC_NS), 1);
	t0 += 30 * day;
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + wrap - 1000 * SEC_NS, SEC_NS), 0);
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 1, 0, t0 + wrap + 2 * SEC_NS, SEC_NS), 1);
}

/*
 * --global: with others of the limit admitted elsewhere in the window, this
 * host takes limit - others, and more as its own first ones age out; with
 * the limit reached elsewhere, none.
 */
static void test_log_others(void **state)
{
	__u64 word = xrl_log_word(5), ring[XRL_LOG_MAX] = { 0 }, t0 = 7 * SEC_NS;
	int i, got = 0;

	(void)state;
	for (i = 0; i < 10; i++)
		got += xrl_log_take(&word, ring, NULL, 0, 10, 7, t0 + (__u64)i * 1000, SEC_NS) == 1;
	assert_int_equal(got, 3);
	/* a window after the first three: they left it, the others' 7 stand: 3 more */
	for (i = 0, got = 0; i < 10; i++)
		got += xrl_log_take(&word, ring, NULL, 0, 10, 7, t0 + SEC_NS + 3000 + (__u64)i, SEC_NS) == 1;
	assert_int_equal(got, 3);
	assert_int_equal(xrl_log_take(&word, ring, NULL, 0, 10, 10, t0 + 5 * SEC_NS, SEC_NS), 0);
}

static void parse_ok(const char *line, const char *formatted)
{
	struct xrl_rule_def d, back;
	char err[XRL_ERRLEN], buf[512];

	if (xrl_rule_parse_line(line, &d, err, sizeof(err)) != 1)
		fail_msg("'%s' refused: %s", line, err);
	xrl_rule_format(&d, buf, sizeof(buf));
	assert_string_equal(buf, formatted);
	assert_int_equal(xrl_rule_parse_line(buf, &back, err, sizeof(err)), 1);
	assert_true(xrl_rule_same_params(&d, &back));
}

static void parse_refused(const char *line, const char *why)
{
	struct xrl_rule_def d;
	char err[XRL_ERRLEN];

	assert_int_equal(xrl_rule_parse_line(line, &d, err, sizeof(err)), -1);
	if (!strstr(err, why))
		fail_msg("'%s': message \"%s\" does not say \"%s\"", line, err, why);
	assert_null(strchr(err, '\n'));
}

static void test_algo_words(void **state)
{
	struct xrl_rule_def a, b;
	struct xrl_rule r;
	char err[XRL_ERRLEN];

	(void)state;
	parse_ok("10.0.0.0/8 --rate 10/s", "10.0.0.0/8 --rate 10/s --burst 10 --per 32");
	parse_ok("10.0.0.0/8 --rate 10/s --algo token-bucket",
		 "10.0.0.0/8 --rate 10/s --burst 10 --per 32");
	parse_ok("10.0.0.0/8 --algo fixed-window --rate 10/s",
		 "10.0.0.0/8 --rate 10/s --algo fixed-window --per 32");
	parse_ok("2001:db8::/32 --rate 10/m --algo sliding-window --per 48 --proto udp --dport 53",
		 "2001:db8::/32 --proto udp --dport 53 --rate 10/m --algo sliding-window --per 48");
	parse_ok("10.0.0.0/8 --rate 64/h --algo sliding-log --syn",
		 "10.0.0.0/8 --syn --rate 64/h --algo sliding-log --per 32");
	parse_ok("10.0.0.0/8 --rate 1000/h --algo fixed-window --total 100/s --new-sources 5/s",
		 "10.0.0.0/8 --rate 1000/h --algo fixed-window --new-sources 5/s --new-burst 5 --total 100/s --total-burst 100 --per 32");

	/* the algorithm is a parameter: another one is another rule version */
	assert_int_equal(xrl_rule_parse_line("10.0.0.0/8 --rate 10/s --algo fixed-window", &a, err, sizeof(err)), 1);
	assert_int_equal(xrl_rule_parse_line("10.0.0.0/8 --rate 10/s --algo sliding-window", &b, err, sizeof(err)), 1);
	assert_true(xrl_rule_same_match(&a, &b));
	assert_false(xrl_rule_same_params(&a, &b));
	/* compiled: a window of the rate's unit, its count, the exact clock */
	assert_int_equal(xrl_rule_compile(&a, 3, &r, err, sizeof(err)), 0);
	assert_int_equal(r.algo, XRL_ALGO_FIXED_WINDOW);
	assert_int_equal(r.win_ns, SEC_NS);
	assert_int_equal(r.win_limit, 10);
	assert_int_equal(r.coarse, 0);

	parse_refused("10.0.0.0/8 --rate 10/s --algo leaky", "fixed-window");
	parse_refused("10.0.0.0/8 --rate 10/s --algo", "--algo");
	parse_refused("10.0.0.0/8 --rate 10/s --algo fixed-window --burst 5",
		      "--burst is a token-bucket setting");
	parse_refused("10.0.0.0/8 --rate 10/s --algo sliding-log --bytes 1M", "--bytes is a token bucket");
	parse_ok("10.0.0.0/8 --rate 10/s --algo sliding-log --global",
		 "10.0.0.0/8 --rate 10/s --algo sliding-log --per 32 --global");
	parse_refused("10.0.0.0/8 --rate 65/s --algo sliding-log --global", "at most 64");
	parse_ok("10.0.0.0/8 --rate 10/s --algo sliding-window --global",
		 "10.0.0.0/8 --rate 10/s --algo sliding-window --per 32 --global");
	parse_refused("10.0.0.0/8 --rate 65/s --algo sliding-log", "at most 64");
	parse_refused("10.0.0.0/8 --rate 65/s --algo sliding-log", "sliding-window");
	parse_refused("10.0.0.0/8 --rate 1048576/h --algo sliding-window", "1048575");
	parse_refused("10.0.0.0/8 --deny --algo fixed-window", "--algo");
	parse_refused("10.0.0.0/8 --rate 10/s --algo fixed-window --algo fixed-window", "--algo");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_window_index),
		cmocka_unit_test(test_fixed_window_model),
		cmocka_unit_test(test_sliding_window_bound),
		cmocka_unit_test(test_sliding_log_model),
		cmocka_unit_test(test_log_restart_race),
		cmocka_unit_test(test_log_time_unit),
		cmocka_unit_test(test_log_wrap),
		cmocka_unit_test(test_log_others),
		cmocka_unit_test(test_cas_threads),
		cmocka_unit_test(test_algo_words),
	};

	return cmocka_run_group_tests_name("xrl --algo arithmetic", tests, NULL, NULL);
}
