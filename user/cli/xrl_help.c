// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A command's help (`xrl help CMD [SUB]`, `xrl CMD [SUB] --help`), made from
 * its row of the command table and its option table: the usage, what it
 * does, each option with its line of help, the syntax of every value word
 * the usage names (RATE, DURATION, PREFIX ...; the choices of an option
 * that takes one of a list), and examples. The value words' syntax lives
 * here, once, for every command that names them.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "xrl_cli.h"
#include "xrl_opts.h"

#define HELP_WIDTH 80
#define OPT_COL    26   /* where an option's help starts */
#define VAL_COL    13   /* where a value word's syntax starts */

/* The value words of usage lines and what they accept (the parsers in user/lib say the same). */
static const struct {
	const char *word;
	const char *syntax;
} value_words[] = {
	{ "PREFIX", "an IPv4 or IPv6 address with an optional /LEN, host bits clear: "
		    "203.0.113.0/24, 2001:db8::/32, 192.0.2.7" },
	{ "RATE", "packets: N per second, or N/s, N/m, N/h (also /sec, /min, /minute, /hour): "
		  "100/s, 6000/m; --bytes RATE is bytes per second with an optional k, M, G or T "
		  "suffix: 10M" },
	{ "SIZE", "bytes with an optional k, M, G or T suffix: 64k, 1M" },
	{ "DURATION", "a whole number with its unit s, m or h (also sec, min, hour): 30s, 10m, 1h" },
	{ "N", "a whole number" },
	{ "LEN", "a prefix length: 0 to 32 for IPv4, 0 to 128 for IPv6" },
	{ "PORT", "a port number, 0 to 65535" },
	{ "PORTS", "a port 0 to 65535, or up to 8 ports and ranges joined by commas: 443, "
		   "80,443,8000-8100" },
	{ "IFACE", "a network interface name: eth0" },
	{ "SOURCE", "a source address or block as top and block list show it: 198.51.100.7, "
		    "2001:db8:1:2::/64" },
	{ "FILE", "a path; a rules file has one rule a line in the words of 'rule add', # comments" },
	{ "SEC", "seconds, in the range the option's line gives: 2, or 0.5 where a fraction is accepted" },
	{ "MS", "milliseconds, a whole number" },
	{ "K", "a whole number" },
	{ "NAME", "1 to 64 letters, digits, '-' or '_'" },
	{ "URL", "redis://[:PASSWORD@]HOST[:PORT][/DB]: redis://10.0.0.5:6379 (--redis-password-file "
		 "keeps the password off the command line)" },
	{ "ADDR:PORT", "an address and a port to listen on: 127.0.0.1:9464, 0.0.0.0:9464" },
	{ "ID", "any text without spaces" },
	{ "CIDR", "an IPv4 or IPv6 address with an optional /LEN, host bits clear: 10.0.0.0/8, "
		  "fd00::/8, 127.0.0.1" },
};

static const char *value_syntax(const char *word)
{
	size_t i;

	for (i = 0; i < sizeof(value_words) / sizeof(value_words[0]); i++)
		if (!strcmp(value_words[i].word, word))
			return value_words[i].syntax;
	return NULL;
}

/* Print text from column col, wrapped at HELP_WIDTH, continuation lines indented to indent. */
static void wrap_at(FILE *f, int col, int indent, const char *text)
{
	const char *p = text;
	bool first = true;

	while (*p) {
		const char *start;
		int n;

		while (*p == ' ')
			p++;
		if (!*p)
			break;
		for (start = p; *p && *p != ' '; p++)
			;
		n = (int)(p - start);
		if (!first && col + 1 + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			col = indent;
		} else if (!first) {
			fputc(' ', f);
			col++;
		}
		fwrite(start, 1, (size_t)n, f);
		col += n;
		first = false;
	}
	fputc('\n', f);
}

/* "  -d, --interval SEC" then the help from OPT_COL (or on the next line) */
static void help_option(FILE *f, const struct xrl_opt *o)
{
	char words[160], sh[8] = "", val[96] = "";
	int n;

	if (o->short_name)
		snprintf(sh, sizeof(sh), "-%c, ", o->short_name);
	if (o->arg)
		snprintf(val, sizeof(val), (o->flags & XRL_OPT_OPTIONAL_ARG) ? " [%s]" : " %s", o->arg);
	n = snprintf(words, sizeof(words), "  %s--%s%s", sh, o->name, val);
	fputs(words, f);
	if (n + 2 > OPT_COL)
		fprintf(f, "\n%*s", OPT_COL, "");
	else
		fprintf(f, "%*s", OPT_COL - n, "");
	wrap_at(f, OPT_COL, OPT_COL, o->help ? o->help : "");
}

static bool in_mode(const struct xrl_opt *o, int mode)
{
	return (o->modes >> mode) & 1;
}

/* an option whose value is one of a list given in o->what ("ALGO": token-bucket|...) */
static bool named_choices(const struct xrl_opt *o)
{
	return o->arg && o->parse == xrl_opt_enum && o->what && strchr(o->what, '|') &&
	       strcmp(o->arg, o->what);
}

/* The value words of a usage line, each once: the upper-case words and ADDR:PORT. */
static int usage_words(const char *usage, char words[][16], int max)
{
	const char *p = usage;
	int n = 0, i;

	while (*p && n < max) {
		const char *s;
		size_t len;

		while (*p && !isupper((unsigned char)*p))
			p++;
		for (s = p; *p && (isupper((unsigned char)*p) || *p == ':' || *p == '_'); p++)
			;
		len = (size_t)(p - s);
		if (len < 1 || len >= 16 || (s > usage && (isalnum((unsigned char)s[-1]) || s[-1] == '-')))
			continue;
		for (i = 0; i < n; i++)
			if (strlen(words[i]) == len && !strncmp(words[i], s, len))
				break;
		if (i == n) {
			memcpy(words[n], s, len);
			words[n++][len] = 0;
		}
	}
	return n;
}

/* indent, "xrl rule add " then the rest of usage, continuation lines under its first word */
static void usage_wrapped(FILE *f, const char *indent, const struct xrl_cmd_table *t,
			  const struct xrl_cmd *c, const char *usage)
{
	char lead[160];
	size_t skip;

	snprintf(lead, sizeof(lead), "%s%s %s ", indent, t->path, c->name);
	skip = strlen(lead) - strlen(indent);
	xrl_usage_wrap(f, lead, strlen(usage) > skip ? usage + skip : "", HELP_WIDTH);
}

static void help_examples(FILE *f, const char *example)
{
	const char *p = example;

	fputs("\nExamples:\n", f);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "  %.*s\n", len, p);
		p = nl ? nl + 1 : NULL;
	}
}

void xrl_help_command(FILE *f, const struct xrl_cmd_table *t, const struct xrl_cmd *c)
{
	char usage[1024], words[24][16];
	int i, n;

	if (c->sub) {
		const struct xrl_cmd_table *s = c->sub;

		fprintf(f, "usage: %s %s SUBCOMMAND ...\n", t->path, c->name);
		if (c->summary)
			wrap_at(f, 0, 0, c->summary);
		fputs("\nSubcommands:\n", f);
		for (i = 0; i < s->n; i++) {
			xrl_cmd_usage_line(s, &s->cmds[i], usage, sizeof(usage));
			usage_wrapped(f, "  ", s, &s->cmds[i], usage);
			if (s->cmds[i].summary) {
				fprintf(f, "%*s", 6, "");
				wrap_at(f, 6, 6, s->cmds[i].summary);
			}
		}
		fprintf(f, "\n'xrl help %s SUBCOMMAND' or 'xrl %s SUBCOMMAND --help': its options,\n"
			   "values and examples.\n", c->name, c->name);
		if (c->example)
			help_examples(f, c->example);
		return;
	}
	xrl_cmd_usage_line(t, c, usage, sizeof(usage));
	xrl_usage_wrap(f, "usage: ", usage, HELP_WIDTH);
	if (c->summary)
		wrap_at(f, 0, 0, c->summary);
	if (c->opts) {
		bool any = false;

		for (i = 0; i < c->opts->n; i++) {
			if (!in_mode(&c->opts->opts[i], c->opt_mode))
				continue;
			if (!any)
				fputs("\nOptions:\n", f);
			any = true;
			help_option(f, &c->opts->opts[i]);
		}
	}
	n = usage_words(usage, words, 24);
	{
		bool any = false;

		for (i = 0; i < n; i++) {
			const char *syn = value_syntax(words[i]);
			int k;

			if (!syn)
				continue;
			if (!any)
				fputs("\nValues:\n", f);
			any = true;
			k = fprintf(f, "  %s", words[i]);
			fprintf(f, "%*s", k < VAL_COL ? VAL_COL - k : 2, "");
			wrap_at(f, k < VAL_COL ? VAL_COL : k + 2, VAL_COL, syn);
		}
		for (i = 0; c->opts && i < c->opts->n; i++) {
			const struct xrl_opt *o = &c->opts->opts[i];
			char choices[256];
			const char *p;
			size_t w;
			int k;

			if (!in_mode(o, c->opt_mode) || !named_choices(o))
				continue;
			if (!any)
				fputs("\nValues:\n", f);
			any = true;
			/* "one of: a, b, c" from "a|b|c" */
			w = (size_t)snprintf(choices, sizeof(choices), "one of: ");
			for (p = o->what; *p && w + 3 < sizeof(choices); p++) {
				if (*p == '|') {
					choices[w++] = ',';
					choices[w++] = ' ';
				} else {
					choices[w++] = *p;
				}
			}
			choices[w] = 0;
			k = fprintf(f, "  %s", o->arg);
			fprintf(f, "%*s", k < VAL_COL ? VAL_COL - k : 2, "");
			wrap_at(f, k < VAL_COL ? VAL_COL : k + 2, VAL_COL, choices);
		}
	}
	if (c->example)
		help_examples(f, c->example);
	fputs("\nGlobal options go before the command: [--instance NAME] [-j|--json]\n"
	      "[-p|--pretty] (see xrl --help).\n", f);
}

/* `xrl help options`: every option of every command, under the command's usage. */
void xrl_help_options(FILE *f, const struct xrl_cmd_table *t, const struct xrl_opt_table *global)
{
	char usage[1024];
	int i, j;

	if (global) {
		fputs("Global options (before the command):\n", f);
		for (i = 0; i < global->n; i++)
			help_option(f, &global->opts[i]);
	}
	for (i = 0; i < t->n; i++) {
		const struct xrl_cmd *c = &t->cmds[i];

		if (c->sub) {
			xrl_help_options(f, c->sub, NULL);
			continue;
		}
		if (!c->opts)
			continue;
		xrl_cmd_usage_line(t, c, usage, sizeof(usage));
		fputc('\n', f);
		usage_wrapped(f, "", t, c, usage);
		for (j = 0; j < c->opts->n; j++)
			if (in_mode(&c->opts->opts[j], c->opt_mode))
				help_option(f, &c->opts->opts[j]);
	}
}
