// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The answer's fields (xrl_http_headers.h). A rule's name is letters,
 * digits and - _ . (the rules parser refuses quotes and backslashes), so it
 * goes into a structured-field string and a JSON string as it is.
 */
#include <stdio.h>

#include "xrl_http_headers.h"

int xrl_http_policy_field(const char *name, const struct xrl_http_figures *f, char *buf,
			  size_t len)
{
	return snprintf(buf, len, "\"%s\";q=%llu;w=%u", name, (unsigned long long)f->quota,
			f->window_s);
}

int xrl_http_ratelimit_field(const char *name, const struct xrl_http_figures *f, char *buf,
			     size_t len)
{
	return snprintf(buf, len, "\"%s\";r=%llu;t=%llu", name, (unsigned long long)f->remaining,
			(unsigned long long)f->reset_s);
}

int xrl_http_problem_body(const char *name, const struct xrl_http_figures *f, char *buf,
			  size_t len)
{
	if (f->missing)
		return snprintf(buf, len,
				"{\"type\":\"about:blank\",\"title\":\"Too Many Requests\","
				"\"status\":429,\"detail\":\"rule '%s' needs a key this request "
				"does not carry\",\"rule\":\"%s\"}\n", name, name);
	return snprintf(buf, len,
			"{\"type\":\"about:blank\",\"title\":\"Too Many Requests\",\"status\":429,"
			"\"detail\":\"rule '%s' allows %llu per %u s; retry after %llu s\","
			"\"rule\":\"%s\",\"retry_after\":%llu}\n",
			name, (unsigned long long)f->quota, f->window_s,
			(unsigned long long)f->retry_s, name, (unsigned long long)f->retry_s);
}
