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
/* never printed: each occurrence, as is or as JSON escapes it, becomes "***" */
static char secret[2][1600];

void xrl_log_secret(const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *e = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	size_t n = e ? strlen(e) : 0;

	snprintf(secret[0], sizeof(secret[0]), "%s", s ? s : "");
	/* the JSON form without its quotes; the same as the raw one unless it escapes */
	snprintf(secret[1], sizeof(secret[1]), "%.*s", n >= 2 ? (int)(n - 2) : 0, e ? e + 1 : "");
	free(e);
	json_decref(j);
}

/* Write one line with the secret masked. */
static void put_line(char *line)
{
	char *p, *q;
	int k;

	for (k = 0; k < 2; k++) {
		size_t n = strlen(secret[k]);

		size_t m = n < 3 ? n : 3;   /* "***", in place: never longer than the secret */

		for (p = line; n && (q = strstr(p, secret[k])); p = q + m) {
			memmove(q + m, q + n, strlen(q + n) + 1);
			memset(q, '*', m);
		}
	}
	fputs(line, stderr);
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
		json_t *o = json_pack("{s:s,s:s,s:s,s:o}", "time", ts, "level", level_name[level],
				      "instance", inst, "msg", xrl_json_text(msg));
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
