// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Units people read, for the human tables; rules and sources as text. */
#include <arpa/inet.h>
#include <stdio.h>
#include <xdp/libxdp.h>
#include "xrl_format.h"

/* v in steps of 1000 with the unit of its step: "1.2M", "340 MB". */
static void fmt_thousands(double v, const char *const unit[6], const char *sep, char *buf,
			  size_t len)
{
	int i = 0;

	while (v >= 1000 && i < 5) {
		v /= 1000;
		i++;
	}
	snprintf(buf, len, i && v < 10 ? "%.1f%s%s" : "%.0f%s%s", v, sep, unit[i]);
}

void xrl_fmt_count(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "", "k", "M", "G", "T", "P" };

	fmt_thousands(v, unit, "", buf, len);
}

void xrl_fmt_bytes(double v, char *buf, size_t len)
{
	static const char *const unit[] = { "B", "kB", "MB", "GB", "TB", "PB" };

	fmt_thousands(v, unit, " ", buf, len);
}

void xrl_fmt_rate(const struct xrl_rule_def *d, char *buf, size_t len)
{
	if (d->action != XRL_ACT_LIMIT) {
		snprintf(buf, len, "-");
		return;
	}
	snprintf(buf, len, "%llu/%s", (unsigned long long)d->rate,
		 d->rate_period == 3600 ? "h" : d->rate_period == 60 ? "m" : "s");
}


const char *xrl_action_name(__u8 action)
{
	switch (action) {
	case XRL_ACT_LIMIT: return "limit";
	case XRL_ACT_ALLOW: return "allow";
	case XRL_ACT_DENY: return "deny";
	default: return "?";
	}
}

const char *xrl_mode_name(__u8 mode)
{
	switch (mode) {
	case XDP_MODE_NATIVE: return "native";
	case XDP_MODE_SKB: return "generic";
	case XDP_MODE_HW: return "offload";
	default: return "unknown";
	}
}

void xrl_source_format(const struct xrl_bucket_key *k, const struct xrl_rule_def *d,
		       char *buf, size_t len)
{
	char a[INET6_ADDRSTRLEN];
	unsigned full = k->family == 4 ? 32 : 128;

	inet_ntop(k->family == 4 ? AF_INET : AF_INET6, k->addr, a, sizeof(a));
	if (d && d->action == XRL_ACT_LIMIT && d->per_len < full)
		snprintf(buf, len, "%s/%u", a, d->per_len);
	else
		snprintf(buf, len, "%s", a);
}
