// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "xrl_log.h"

static bool as_json;
static char inst[64] = "default";

static const char *const level_name[] = { "error", "warning", "info" };
static char secret[256];   /* never printed: each occurrence becomes "***" */

void xrl_log_secret(const char *s)
{
	snprintf(secret, sizeof(secret), "%s", s ? s : "");
}

/* Write one line with the secret masked. */
static void put_line(const char *line)
{
	const char *p = line, *q;
	size_t n = strlen(secret);

	while (n && (q = strstr(p, secret))) {
		fwrite(p, 1, (size_t)(q - p), stderr);
		fputs("***", stderr);
		p = q + n;
	}
	fputs(p, stderr);
	fputc('\n', stderr);
}

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
	char ts[40], *line = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&line, &len);

	if (!out) {
		json_decref(fields);
		return;
	}
	stamp(ts, sizeof(ts));
	if (as_json) {
		json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "time", ts, "level", level_name[level],
				      "instance", inst, "msg", msg);
		char *s;

		if (fields)
			json_object_update(o, fields);
		s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
		if (s)
			fputs(s, out);
		free(s);
		json_decref(o);
	} else {
		const char *key;
		json_t *v;

		fprintf(out, "%s xrl[%s] %s: %s", ts, inst, level_name[level], msg);
		if (fields)
			json_object_foreach(fields, key, v) {
				if (json_is_string(v) && strpbrk(json_string_value(v), " \"="))
					fprintf(out, " %s=\"%s\"", key, json_string_value(v));
				else if (json_is_string(v))
					fprintf(out, " %s=%s", key, json_string_value(v));
				else if (json_is_integer(v))
					fprintf(out, " %s=%lld", key, (long long)json_integer_value(v));
				else if (json_is_real(v))
					fprintf(out, " %s=%.3f", key, json_real_value(v));
				else if (json_is_boolean(v))
					fprintf(out, " %s=%s", key, json_is_true(v) ? "true" : "false");
			}
	}
	fclose(out);
	if (line && len)
		put_line(line);
	free(line);
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
