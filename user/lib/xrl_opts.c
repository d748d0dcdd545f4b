// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Option and command tables (see xrl_opts.h); text made valid UTF-8 for JSON. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_opts.h"
#include "xrl_units.h"

void xrl_opt_store(void *obj, size_t off, size_t size, unsigned long long v)
{
	char *p = (char *)obj + off;

	switch (size) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(p, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(p, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(p, &x, 4); break; }
	default: { uint64_t x = (uint64_t)v; memcpy(p, &x, 8); break; }
	}
}

unsigned long long xrl_opt_load(const void *obj, size_t off, size_t size)
{
	const char *p = (const char *)obj + off;

	switch (size) {
	case 1: { uint8_t x; memcpy(&x, p, 1); return x; }
	case 2: { uint16_t x; memcpy(&x, p, 2); return x; }
	case 4: { uint32_t x; memcpy(&x, p, 4); return x; }
	default: { uint64_t x; memcpy(&x, p, 8); return x; }
	}
}

int xrl_opt_format_flag(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	if (!(xrl_opt_load(obj, o->off, o->size) & o->val))
		return 0;
	return snprintf(buf, len, " --%s", o->name);
}

int xrl_opt_format_set(const struct xrl_opt *o, const void *obj, char *buf, size_t len)
{
	if (xrl_opt_load(obj, o->off, o->size) != o->val)
		return 0;
	return snprintf(buf, len, " --%s", o->name);
}

void xrl_opts_format(const struct xrl_opt_table *t, unsigned modes, const void *obj, char *buf,
		     size_t len, size_t *n)
{
	const struct xrl_opt *row[64];
	int i, j, k = 0;

	/* the rows that write, by rank then row (insertion sort: a few dozen rows) */
	for (i = 0; i < t->n && i < 64; i++) {
		const struct xrl_opt *o = &t->opts[i];

		if (!o->format || !(o->modes & modes))
			continue;
		for (j = k++; j > 0 && row[j - 1]->save_rank > o->save_rank; j--)
			row[j] = row[j - 1];
		row[j] = o;
	}
	for (i = 0; i < k && *n < len; i++)
		*n += (size_t)row[i]->format(row[i], obj, buf + *n, len - *n);
}

bool xrl_opts_same(const struct xrl_opt_table *t, unsigned skip, const void *a, const void *b)
{
	int i;

	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];

		if (o->modes & skip)
			continue;
		if (o->size && xrl_opt_load(a, o->off, o->size) != xrl_opt_load(b, o->off, o->size))
			return false;
		if (o->size2 && xrl_opt_load(a, o->off2, o->size2) != xrl_opt_load(b, o->off2, o->size2))
			return false;
	}
	return true;
}

void xrl_opts_copy(const struct xrl_opt_table *t, const void *obj, void *to)
{
	int i;

	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];

		if (o->copy_size)
			xrl_opt_store(to, o->copy_off, o->copy_size, xrl_opt_load(obj, o->off, o->size));
		if (o->copy_size2)
			xrl_opt_store(to, o->copy_off2, o->copy_size2,
				      xrl_opt_load(obj, o->off2, o->size2));
	}
}

int xrl_opt_flag(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	(void)arg, (void)err, (void)errlen;
	xrl_opt_store(obj, o->off, o->size, xrl_opt_load(obj, o->off, o->size) | (o->val ? o->val : 1));
	return 0;
}

int xrl_opt_set(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	(void)arg, (void)err, (void)errlen;
	xrl_opt_store(obj, o->off, o->size, o->val);
	return 0;
}

int xrl_opt_uint(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	__u64 v;

	if (xrl_parse_uint(o->what ? o->what : o->name, arg, o->min, o->max, &v, err, errlen))
		return -1;
	xrl_opt_store(obj, o->off, o->size, v);
	return 0;
}

int xrl_opt_str(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	(void)err, (void)errlen;
	memcpy((char *)obj + o->off, &arg, sizeof(arg));
	return 0;
}

int xrl_opt_enum(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen)
{
	const char *p = o->what, *bar;
	size_t n = strlen(arg), k = 0, len;
	unsigned long long i;
	char list[320];

	for (i = 0;; i++, p = bar + 1) {
		bar = strchr(p, '|');
		len = bar ? (size_t)(bar - p) : strlen(p);
		if (len == n && !strncmp(p, arg, n)) {
			xrl_opt_store(obj, o->off, o->size, i);
			return 0;
		}
		/* the choices for the message: "a, b or c" */
		if (k < sizeof(list))
			k += (size_t)snprintf(list + k, sizeof(list) - k, "%s%.*s",
					      i == 0 ? "" : bar ? ", " : " or ", (int)len, p);
		if (!bar)
			break;
	}
	return xrl_fail(err, errlen, "invalid --%s '%s': expected %s", o->name, arg, list);
}

static bool in_mode(const struct xrl_opt *o, int mode)
{
	return (o->modes >> mode) & 1;
}

static const struct xrl_opt *find_long(const struct xrl_opt_table *t, const char *name, size_t n)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (strlen(t->opts[i].name) == n && !strncmp(t->opts[i].name, name, n))
			return &t->opts[i];
	return NULL;
}

static const struct xrl_opt *find_short(const struct xrl_opt_table *t, char c)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (t->opts[i].short_name && t->opts[i].short_name == c)
			return &t->opts[i];
	return NULL;
}

static int unknown(const struct xrl_opt_table *t, int mode, const char *word, char *err,
		   size_t errlen)
{
	char list[512];

	xrl_opts_list(t, mode, list, sizeof(list));
	return xrl_fail(err, errlen, "unknown option '%s': expected %s%s%s%s", word, list,
			t->see ? " (" : "", t->see ? t->see : "", t->see ? ")" : "");
}

/* The row o was named by word: may it be given here, and now? */
static int admit(const struct xrl_opt_table *t, const struct xrl_opt *o, int mode,
		 xrl_opt_seen *seen, char *err, size_t errlen)
{
	int row = (int)(o - t->opts);

	if (!in_mode(o, mode)) {
		char u[512];

		xrl_opts_usage(t, mode, u, sizeof(u));
		if (t->mode_refusal && t->mode_refusal[mode])
			return xrl_fail(err, errlen, "--%s %s %s", o->name, t->mode_refusal[mode], u);
		return xrl_fail(err, errlen, "--%s is not accepted here: expected %s", o->name, u);
	}
	if (XRL_SEEN(*seen, row) && !(o->flags & XRL_OPT_REPEATABLE))
		return xrl_fail(err, errlen, "--%s given twice", o->name);
	*seen |= 1ULL << row;
	return 0;
}

int xrl_opts_parse(const struct xrl_opt_table *t, int mode, int argc, char **argv, int *argi,
		   void *obj, xrl_opt_seen *seen, char *err, size_t errlen)
{
	int i = *argi;

	while (i < argc) {
		const char *w = argv[i], *val = NULL;
		const struct xrl_opt *o;

		if (w[0] != '-' || !w[1])
			break;   /* not an option: the caller's word */
		if (!strcmp(w, "--")) {
			i++;
			break;
		}
		if (w[1] == '-') {
			const char *eq = strchr(w + 2, '=');

			o = find_long(t, w + 2, eq ? (size_t)(eq - w - 2) : strlen(w + 2));
			if (!o)
				return unknown(t, mode, w, err, errlen);
			if (admit(t, o, mode, seen, err, errlen))
				return -1;
			if (!o->arg) {
				if (eq)
					return xrl_fail(err, errlen, "option '%s' takes no value", w);
			} else if (eq) {
				val = eq + 1;
			} else if (o->flags & XRL_OPT_OPTIONAL_ARG) {
				/* the value is optional: take the next word unless it is an option */
				if (i + 1 < argc && argv[i + 1][0] != '-')
					val = argv[++i];
			} else if (i + 1 < argc) {
				val = argv[++i];
			} else {
				return xrl_fail(err, errlen, "option '%s' needs a value (--%s %s)", w,
						o->name, o->arg);
			}
			if (o->parse(o, val, obj, err, errlen))
				return -1;
			i++;
			continue;
		}
		/* -x, -xVALUE, -x VALUE, bundled flags -xy */
		for (const char *p = w + 1; *p; p++) {
			o = find_short(t, *p);
			if (!o) {
				const struct xrl_opt *l = find_long(t, w + 1, strlen(w + 1));

				if (p == w + 1 && l)
					return xrl_fail(err, errlen, "unknown option '%s': options start with --, e.g. --%s%s%s",
							w, l->name, l->arg ? " " : "", l->arg ? l->arg : "");
				return unknown(t, mode, w, err, errlen);
			}
			if (admit(t, o, mode, seen, err, errlen))
				return -1;
			if (o->arg && p[1]) {
				val = p + 1;
			} else if (o->arg && !(o->flags & XRL_OPT_OPTIONAL_ARG)) {
				if (i + 1 >= argc)
					return xrl_fail(err, errlen, "option '-%c' needs a value (-%c %s)",
							*p, *p, o->arg);
				val = argv[++i];
			}
			if (o->parse(o, val, obj, err, errlen))
				return -1;
			if (o->arg)
				break;
		}
		i++;
	}
	*argi = i;
	return 0;
}

void xrl_opts_list(const struct xrl_opt_table *t, int mode, char *buf, size_t len)
{
	int i, n = 0, k = 0;
	size_t w = 0;

	buf[0] = 0;
	for (i = 0; i < t->n; i++)
		n += in_mode(&t->opts[i], mode);
	for (i = 0; i < t->n && w < len; i++) {
		if (!in_mode(&t->opts[i], mode))
			continue;
		k++;
		w += (size_t)snprintf(buf + w, len - w, "%s--%s", k == 1 ? "" : k == n ? " or " : ", ",
				      t->opts[i].name);
	}
}

/* "--rate RATE", "-j|--json", "--metrics [ADDR:PORT]" */
static size_t opt_words(const struct xrl_opt *o, char *buf, size_t len)
{
	char sh[8] = "";

	if (o->short_name)
		snprintf(sh, sizeof(sh), "-%c|", o->short_name);
	if (!o->arg)
		return (size_t)snprintf(buf, len, "%s--%s", sh, o->name);
	if (o->flags & XRL_OPT_OPTIONAL_ARG)
		return (size_t)snprintf(buf, len, "%s--%s [%s]", sh, o->name, o->arg);
	return (size_t)snprintf(buf, len, "%s--%s %s", sh, o->name, o->arg);
}

void xrl_opts_usage(const struct xrl_opt_table *t, int mode, char *buf, size_t len)
{
	int i, j, nchoice = 0;
	size_t w = 0;
	bool choices_done = false;
	char one[128];

	buf[0] = 0;
	for (i = 0; i < t->n; i++)
		nchoice += in_mode(&t->opts[i], mode) && (t->opts[i].flags & XRL_OPT_CHOICE);
	for (i = 0; i < t->n && w < len; i++) {
		const struct xrl_opt *o = &t->opts[i];

		if (!in_mode(o, mode))
			continue;
		if (o->flags & XRL_OPT_CHOICE) {
			int k = 0;

			if (choices_done)
				continue;
			choices_done = true;
			w += (size_t)snprintf(buf + w, len - w, "%s%s", w ? " " : "", nchoice > 1 ? "{" : "");
			for (j = i; j < t->n && w < len; j++) {
				if (!in_mode(&t->opts[j], mode) || !(t->opts[j].flags & XRL_OPT_CHOICE))
					continue;
				opt_words(&t->opts[j], one, sizeof(one));
				w += (size_t)snprintf(buf + w, len - w, "%s%s", k++ ? " | " : "", one);
			}
			if (nchoice > 1 && w < len)
				w += (size_t)snprintf(buf + w, len - w, "}");
			continue;
		}
		if (o->flags & XRL_OPT_NESTED)
			continue;   /* inside the brackets of the row before */
		opt_words(o, one, sizeof(one));
		w += (size_t)snprintf(buf + w, len - w, "%s[%s", w ? " " : "", one);
		for (j = i + 1; j < t->n && (t->opts[j].flags & XRL_OPT_NESTED) && w < len; j++) {
			if (!in_mode(&t->opts[j], mode))
				continue;
			opt_words(&t->opts[j], one, sizeof(one));
			w += (size_t)snprintf(buf + w, len - w, " [%s]", one);
		}
		if (w < len)
			w += (size_t)snprintf(buf + w, len - w, "]");
	}
}

void xrl_opts_dump(FILE *f, const struct xrl_opt_table *t)
{
	int i, m;

	for (i = 0; i < t->n; i++) {
		const struct xrl_opt *o = &t->opts[i];
		char modes[128] = "";
		size_t w = 0;

		for (m = 0; m < t->nmodes && w < sizeof(modes); m++)
			if (in_mode(o, m))
				w += (size_t)snprintf(modes + w, sizeof(modes) - w, "%s%s", w ? "," : "",
						      t->mode_names ? t->mode_names[m] : "-");
		fprintf(f, "%s\t%s\t", t->name, modes[0] ? modes : "-");
		if (o->short_name)
			fprintf(f, "-%c", o->short_name);
		else
			fputc('-', f);
		fprintf(f, "\t--%s\t%s%s%s\t%s\n", o->name,
			o->arg && (o->flags & XRL_OPT_OPTIONAL_ARG) ? "[" : "", o->arg ? o->arg : "-",
			o->arg && (o->flags & XRL_OPT_OPTIONAL_ARG) ? "]" : "", o->help ? o->help : "");
	}
}

/* ---------------------------------------------------------------- commands */

const struct xrl_cmd *xrl_cmd_find(const struct xrl_cmd_table *t, const char *name)
{
	int i;

	for (i = 0; i < t->n; i++)
		if (!strcmp(t->cmds[i].name, name))
			return &t->cmds[i];
	return NULL;
}

void xrl_cmd_names(const struct xrl_cmd_table *t, const char *sep, const char *last,
		   char *buf, size_t len)
{
	size_t w = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < t->n && w < len; i++)
		w += (size_t)snprintf(buf + w, len - w, "%s%s",
				      i == 0 ? "" : i == t->n - 1 ? last : sep, t->cmds[i].name);
}

/* the words after the command's name */
static void cmd_args(const struct xrl_cmd *c, char *buf, size_t len)
{
	char u[512] = "";

	if (c->opts)
		xrl_opts_usage(c->opts, c->opt_mode, u, sizeof(u));
	snprintf(buf, len, "%s%s%s", c->args ? c->args : "", c->args && c->args[0] && u[0] ? " " : "",
		 u);
}

void xrl_cmd_usage_line(const struct xrl_cmd_table *t, const struct xrl_cmd *c, char *buf,
			size_t len)
{
	char a[640];

	cmd_args(c, a, sizeof(a));
	snprintf(buf, len, "%s %s%s%s", t->path, c->name, a[0] ? " " : "", a);
}

void xrl_usage_wrap(FILE *f, const char *lead, const char *text, int width)
{
	int col = (int)strlen(lead), indent = col, depth = 0;
	const char *p = text, *start;
	bool first = true;

	fputs(lead, f);
	while (*p) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		/* one word: up to a space outside brackets */
		for (start = p; *p && (*p != ' ' || depth > 0); p++) {
			if (*p == '[' || *p == '{')
				depth++;
			else if ((*p == ']' || *p == '}') && depth > 0)
				depth--;
		}
		if (!first && col + 1 + (int)(p - start) > width) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fwrite(start, 1, (size_t)(p - start), f);
		col += (int)(p - start);
		first = false;
	}
	fputc('\n', f);
}

void xrl_cmd_usage(FILE *f, const struct xrl_cmd_table *t, const char *indent, int width)
{
	const char *path = strchr(t->path, ' ');   /* "xrl rule" -> "rule " before each */
	int i;

	for (i = 0; i < t->n; i++) {
		const struct xrl_cmd *c = &t->cmds[i];
		char lead[128], a[640];

		if (c->sub) {
			xrl_cmd_usage(f, c->sub, indent, width);
			continue;
		}
		cmd_args(c, a, sizeof(a));
		snprintf(lead, sizeof(lead), "%s%s%s%s%s", indent, path ? path + 1 : "", path ? " " : "",
			 c->name, a[0] ? " " : "");
		xrl_usage_wrap(f, lead, a, width);
	}
}

/* ---------------------------------------------------------------- text */

/* Length of the valid UTF-8 sequence at s (1 to 4), or 0 when it is not one. */
static int utf8_seq(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 ? 3 : 0;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		return s[1] >= lo && s[1] <= hi && (s[2] & 0xc0) == 0x80 &&
		       (s[3] & 0xc0) == 0x80 ? 4 : 0;
	}
	return 0;
}

size_t xrl_utf8_clean(const char *s, char *out, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t w = 0;

	if (!len)
		return 0;
	while (*p) {
		int n = utf8_seq(p);

		if (n) {
			if (w + (size_t)n >= len)
				break;
			memcpy(out + w, p, (size_t)n);
			w += (size_t)n;
			p += n;
		} else {
			if (w + 4 >= len)
				break;
			snprintf(out + w, 5, "\\x%02x", *p);
			w += 4;
			p++;
		}
	}
	out[w] = 0;
	return w;
}

json_t *xrl_json_text(const char *s)
{
	size_t n = strlen(s) * 4 + 1;
	char *buf = malloc(n);
	json_t *v;

	if (!buf)
		return json_string("(out of memory)");
	xrl_utf8_clean(s, buf, n);
	v = json_string(buf);
	free(buf);
	return v;
}
