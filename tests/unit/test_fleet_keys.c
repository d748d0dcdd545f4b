// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The fleet's key names in Redis (user/daemon/xrl_fleet_keys.c), linked
 * alone with the rule library and no libbpf (the Makefile's link line is
 * the check that the file reads no map). The names are what hosts of
 * different versions share budgets by: a rule's name must not change
 * between releases, or a rolling upgrade splits every global budget in two.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "xrl_fleet_keys.h"
#include "xrl_rule.h"

static void rule_name(const char *line, char name[17])
{
	struct xrl_rule_def d;
	char err[256];

	if (xrl_rule_parse_line(line, &d, err, sizeof(err)) != 1)
		fail_msg("%s: %s", line, err);
	xrl_fleet_rule_name(&d, name);
}

/* The names of released rules: fixed, and the same for the same rule however it is written. */
static void test_rule_names(void **state)
{
	char a[17], b[17], c[17];

	(void)state;
	rule_name("198.18.0.0/16 --rate 100/s --burst 20 --global", a);
	assert_string_equal(a, "7be2f9be963b2b8c");
	rule_name("198.18.0.0/16  --global --burst 20 --rate 100/s", b);
	assert_string_equal(a, b);
	rule_name("198.18.0.0/16 --rate 101/s --burst 20 --global", c);
	assert_string_not_equal(a, c);
}

static void test_source_keys(void **state)
{
	struct xrl_bucket_key k4 = { .family = 4 }, k6 = { .family = 6 };
	char buf[96];

	(void)state;
	inet_pton(AF_INET, "198.18.9.1", k4.addr);
	inet_pton(AF_INET6, "2001:db8:1:2::", k6.addr);
	xrl_fleet_source_key("7be2f9be963b2b8c", &k4, 32, buf, sizeof(buf));
	assert_string_equal(buf, "xrl:{7be2f9be963b2b8c:198.18.9.1}");
	inet_pton(AF_INET, "198.18.9.0", k4.addr);
	xrl_fleet_source_key("7be2f9be963b2b8c", &k4, 24, buf, sizeof(buf));
	assert_string_equal(buf, "xrl:{7be2f9be963b2b8c:198.18.9.0/24}");
	xrl_fleet_source_key("7be2f9be963b2b8c", &k6, 64, buf, sizeof(buf));
	assert_string_equal(buf, "xrl:{7be2f9be963b2b8c:2001:db8:1:2::/64}");
	xrl_fleet_hosts_key("7be2f9be963b2b8c", buf, sizeof(buf));
	assert_string_equal(buf, "xrl:{7be2f9be963b2b8c}:hosts");
	xrl_fleet_sentinel_key("web-1/default", buf, sizeof(buf));
	assert_string_equal(buf, "xrl:{web-1/default}:sentinel");
}

/*
 * The keys are written by hand (a round writes one per source): byte for
 * byte what inet_ntop and printf write, for every octet in every place, the
 * prefix lengths, the cluster's tagged form and a buffer too short.
 */
static void test_source_keys_as_printf(void **state)
{
	static const __u8 lens[] = { 32, 24, 16, 9, 8, 0 };
	struct xrl_bucket_key k = { .family = 4 };
	char buf[96], want[96], addr[INET_ADDRSTRLEN];
	unsigned v, at, l;

	(void)state;
	for (at = 0; at < 4; at++)
		for (v = 0; v < 256; v++)
			for (l = 0; l < sizeof(lens); l++) {
				unsigned char *a = (unsigned char *)k.addr;

				a[0] = 198, a[1] = 18, a[2] = 7, a[3] = 1;
				a[at] = (unsigned char)v;
				inet_ntop(AF_INET, k.addr, addr, sizeof(addr));
				if (lens[l] < 32)
					snprintf(want, sizeof(want), "xrl:{7be2f9be963b2b8c:%s/%u}", addr, lens[l]);
				else
					snprintf(want, sizeof(want), "xrl:{7be2f9be963b2b8c:%s}", addr);
				xrl_fleet_source_key("7be2f9be963b2b8c", &k, lens[l], buf, sizeof(buf));
				assert_string_equal(buf, want);
				if (lens[l] < 32)
					snprintf(want, sizeof(want), "xrl:{s7.1}:7be2f9be963b2b8c:%s/%u", addr, lens[l]);
				else
					snprintf(want, sizeof(want), "xrl:{s7.1}:7be2f9be963b2b8c:%s", addr);
				xrl_fleet_source_key_tagged("s7.1", "7be2f9be963b2b8c", &k, lens[l], buf, sizeof(buf));
				assert_string_equal(buf, want);
			}
	inet_pton(AF_INET, "198.18.9.1", k.addr);
	xrl_fleet_source_key("7be2f9be963b2b8c", &k, 32, buf, 12);
	assert_string_equal(buf, "xrl:{7be2f9");
}

/*
 * A rule's figures as Redis takes them are the data path's fixed-point
 * integers (the one derivation the daemon and the request layer share),
 * not the rate's exact quotient: 10/m is 6000001.024 µs a token there.
 */
static void test_gcra_figures(void **state)
{
	char iv[XRL_FLEET_US_LEN], span[XRL_FLEET_US_LEN];
	double iv_ns, span_ns;

	(void)state;
	assert_int_equal(xrl_fleet_gcra_figures(10, 60, 10, iv, span, &iv_ns, &span_ns), 0);
	assert_string_equal(iv, "6000001.024000");
	assert_string_equal(span, "60000010.240000");
	assert_true(iv_ns == 6000001024.0 && span_ns == 60000010240.0);
	assert_int_equal(xrl_fleet_gcra_figures(3, 1, 3, iv, span, NULL, NULL), 0);
	assert_string_equal(iv, "333333.248000");
	assert_int_equal(xrl_fleet_gcra_figures(0, 1, 1, iv, span, NULL, NULL), -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_rule_names),
		cmocka_unit_test(test_source_keys),
		cmocka_unit_test(test_source_keys_as_printf),
		cmocka_unit_test(test_gcra_figures),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
