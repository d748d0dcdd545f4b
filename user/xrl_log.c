// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_log.h"
#include "xrl_opts.h"

static bool as_json;
static char inst[64] = "default";

static const char *const level_name[] = { "error", "warning", "info" };

int xrl_log_init(const char *format, const char *instance)
{
	if (!strcmp(format, "json"))
		as_json = true;
	else if (!strcmp(format, "text"))
		as_json = false;
	else
		return -EINVAL;
	snprintf(inst, sizeof(inst), "%s", instance);
	return 0;
}

static void stamp(char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;
	size_t n;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, len - n, ".%03ldZ", ts.tv_nsec / 1000000);
}

void xrl_log_event(enum xrl_log_level level, const char *msg, json_t *fields)
{
	char ts[40];

	stamp(ts, sizeof(ts));
	if (as_json) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "time", ts, "level", level_name[level],
				      "instance", inst, "msg", xrl_json_text(msg));
		char *s;

		if (fields)
			json_object_update(o, fields);
		s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s)
			fprintf(stderr, "%s\n", s);
		free(s);
		json_decref(o);
	} else {
		const char *key;
		json_t *v;

		fprintf(stderr, "%s xrl[%s] %s: %s", ts, inst, level_name[level], msg);
		if (fields)
			json_object_foreach(fields, key, v) {
				if (json_is_string(v) && strpbrk(json_string_value(v), " \"="))
					fprintf(stderr, " %s=\"%s\"", key, json_string_value(v));
				else if (json_is_string(v))
					fprintf(stderr, " %s=%s", key, json_string_value(v));
				else if (json_is_integer(v))
					fprintf(stderr, " %s=%lld", key, (long long)json_integer_value(v));
				else if (json_is_real(v))
					fprintf(stderr, " %s=%.3f", key, json_real_value(v));
				else if (json_is_boolean(v))
					fprintf(stderr, " %s=%s", key, json_is_true(v) ? "true" : "false");
			}
		fputc('\n', stderr);
	}
	fflush(stderr);
	json_decref(fields);
}

void xrl_log(enum xrl_log_level level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	xrl_log_event(level, msg, NULL);
}
