// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A rule set: compiled into prefix entries (each prefix with its own rules,
 * then those of the prefixes that contain it), and read from a rules file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xrl_rule.h"

/*
 * Most specific match first: a destination prefix, then a port with SYN,
 * then a port (one port before a set), then SYN, then protocol, then any
 * (xrl(8), "Matching and precedence").
 */
static int match_rank(const struct xrl_rule_def *d)
{
	bool dport = d->flags & XRL_F_DPORT;

	return (d->dst_len ? 16 : 0) + (dport ? 8 : 0) + (d->flags & XRL_F_SYN ? 4 : 0) +
	       (dport && xrl_rule_one_port(d) ? 2 : 0) + (d->flags & XRL_F_PROTO ? 1 : 0);
}

/* How many ports the rule's --dport covers (one port: 1; no --dport: every port). */
static __u32 port_count(const struct xrl_rule_def *d)
{
	__u32 n = 0;
	int i;

	if (!(d->flags & XRL_F_DPORT))
		return 65536;
	if (xrl_rule_one_port(d))
		return 1;
	for (i = 0; i < d->nports && i < XRL_MAX_PORT_RANGES; i++)
		n += (__u32)d->ports[i].hi - d->ports[i].lo + 1;
	return n;
}

/* Does prefix (fa, aa, pa) contain (fb, ab, pb)? */
static bool prefix_contains(__u8 fa, const __u8 *aa, __u8 pa, __u8 fb, const __u8 *ab, __u8 pb)
{
	int i, full = pa / 8, rem = pa % 8;

	if (fa != fb || pa > pb)
		return false;
	for (i = 0; i < full; i++)
		if (aa[i] != ab[i])
			return false;
	if (rem && ((aa[full] ^ ab[full]) & (__u8)(0xff << (8 - rem))))
		return false;
	return true;
}

/* A rule of a rule set being compiled: its definition, its place in the input, its id. */
struct compile_ord {
	const struct xrl_rule_def *d;
	int i;
	__u32 id;
};

/*
 * Prefix order, then most specific match first: the rank, then the longer
 * --dst, then the --dport set covering fewer ports, then the match fields
 * (xrl_rule_match_cmp: lower protocol, lower ports, lower --dst first),
 * the id last. Rules of one prefix and one rank can overlap (--dst
 * 10.0.0.0/8 and --dst 10.0.0.5/32; --dport 80-90 and --dport 85-100):
 * the one with the longer --dst, then the smaller set, comes first; two
 * sets of one size that overlap go by their lowest port. Two rules of a
 * set never have equal match fields, so no entry depends on ids or on the
 * order the rules were given in: a change compares the entries it computes
 * with those a set already written compiles to, and writes only those that
 * differ.
 */
static int compile_cmp(const void *pa, const void *pb)
{
	const struct compile_ord *a = pa, *b = pb;
	int c = xrl_rule_prefix_cmp(a->d, b->d);
	__u32 pa_n, pb_n;

	if (c)
		return c;
	if (match_rank(a->d) != match_rank(b->d))
		return match_rank(a->d) > match_rank(b->d) ? -1 : 1;
	if (a->d->dst_len != b->d->dst_len)
		return a->d->dst_len > b->d->dst_len ? -1 : 1;
	pa_n = port_count(a->d);
	pb_n = port_count(b->d);
	if (pa_n != pb_n)
		return pa_n < pb_n ? -1 : 1;
	c = xrl_rule_match_cmp(a->d, b->d);
	if (c)
		return c;
	return a->id < b->id ? -1 : a->id > b->id;
}

/*
 * One sort, then one pass with a stack of the enclosing prefixes: the cost
 * is O(n log n) in the rules (a prefix inherits from at most XRL_MAX_MATCH
 * levels before it is refused); comparing every prefix with every rule at
 * every length would be O(n^2 x lengths).
 */
int xrl_ruleset_compile(const struct xrl_rule_def *defs, const __u32 *ids, int n,
			struct xrl_compiled_prefix **out, int *nout, char *err, size_t errlen)
{
	/* the open enclosing prefixes: each contains the next, so at most 129 + 1 deep */
	struct { int first, last; } stack[130];
	struct xrl_compiled_prefix *res = calloc(n ? n : 1, sizeof(*res));
	struct compile_ord *ord = calloc(n ? n : 1, sizeof(*ord));
	int np = 0, depth = 0, i, j, s, k;

	if (!res || !ord) {
		free(res);
		free(ord);
		return xrl_fail(err, errlen, "out of memory");
	}
	for (i = 0; i < n; i++) {
		ord[i].d = &defs[i];
		ord[i].i = i;
		ord[i].id = ids[i];
	}
	qsort(ord, (size_t)n, sizeof(*ord), compile_cmp);
	for (i = 0; i < n; i = j) {
		struct xrl_compiled_prefix *p = &res[np++];
		struct xrl_prefix_entry *e = &p->entry;

		for (j = i + 1; j < n && !xrl_rule_prefix_cmp(ord[i].d, ord[j].d); j++)
			;
		p->family = ord[i].d->family;
		p->plen = ord[i].d->plen;
		memcpy(p->addr, ord[i].d->addr, 16);
		while (depth && !prefix_contains(ord[stack[depth - 1].first].d->family,
						 ord[stack[depth - 1].first].d->addr,
						 ord[stack[depth - 1].first].d->plen, p->family, p->addr,
						 p->plen))
			depth--;
		/* own rules first, then each enclosing prefix's, longest first */
		for (s = depth; s >= 0; s--) {
			int first = s == depth ? i : stack[s].first, last = s == depth ? j : stack[s].last;

			for (k = first; k < last; k++) {
				if (e->count == XRL_MAX_MATCH) {
					char t[64];

					xrl_prefix_format(p->family, p->addr, p->plen, t, sizeof(t));
					free(res);
					free(ord);
					return xrl_fail(err, errlen,
							"too many rules apply to %s: at most %d, counting those of enclosing prefixes",
							t, XRL_MAX_MATCH);
				}
				if (xrl_rule_compile(ord[k].d, ids[ord[k].i], &e->rules[e->count], err,
						     errlen)) {
					free(res);
					free(ord);
					return -1;
				}
				e->count++;
			}
		}
		stack[depth].first = i;
		stack[depth].last = j;
		depth++;
	}
	free(ord);
	*out = res;
	*nout = np;
	return 0;
}

/* Longest line a rules file may hold, without its newline (xrl_rule_parse_line's buffer). */
#define RULE_LINE_MAX 1022

/*
 * One line of f into buf (RULE_LINE_MAX + 1 bytes), never more: a line is
 * refused as soon as it passes the limit, so no line, however long (or
 * endless, as /dev/zero's), is read whole. 1 a line (*nul: the column of
 * its first NUL byte, where reading stopped; 0 for none), 0 the end of the file, -E2BIG a line
 * too long, -errno a read error (an error is never taken for the end).
 */
static int read_rule_line(FILE *f, char *buf, int *nul)
{
	size_t len = 0;
	int c;

	*nul = 0;
	for (;;) {
		errno = 0;
		c = getc(f);
		if (c == EOF) {
			if (ferror(f))
				return errno ? -errno : -EIO;
			buf[len] = 0;
			return len ? 1 : 0;
		}
		if (c == '\n') {
			buf[len] = 0;
			return 1;
		}
		if (c == 0) {
			*nul = (int)len + 1;   /* refused there: the rest of the line is not read */
			buf[len] = 0;
			return 1;
		}
		if (len == RULE_LINE_MAX)
			return -E2BIG;
		buf[len++] = (char)c;
	}
}

/* A rule of a file, with its line: duplicates are found by sorting. */
struct file_rule {
	const struct xrl_rule_def *d;
	int line;
};

static int file_rule_cmp(const void *pa, const void *pb)
{
	const struct file_rule *a = pa, *b = pb;
	int c = xrl_rule_match_cmp(a->d, b->d);

	return c ? c : a->line < b->line ? -1 : a->line > b->line;
}

int xrl_rules_read_file(const char *file, struct xrl_rule_def *defs, int *count, char *err,
			size_t errlen)
{
	struct xrl_rule_def extra;
	struct file_rule *fr = NULL;
	char line[RULE_LINE_MAX + 1], why[XRL_ERRLEN];
	int n = 0, lineno = 0, r, i, rc = 0, nul, dup = 0;
	FILE *f = strcmp(file, "-") ? fopen(file, "r") : stdin;

	if (!f) {
		int e = errno;

		xrl_fail(err, errlen, "cannot read %s: %s", file, strerror(e));
		return -e;
	}
	fr = calloc(XRL_MAX_RULES, sizeof(*fr));
	if (!fr) {
		rc = -ENOMEM;
		xrl_fail(err, errlen, "cannot read %s: out of memory", file);
		goto out;
	}
	while ((r = read_rule_line(f, line, &nul)) != 0) {
		lineno++;
		if (r == -E2BIG) {
			rc = -EINVAL;
			xrl_fail(err, errlen, "%s:%d: line longer than %d characters: a rules file holds one rule per line, as `xrl rule save` writes them (is it the right file?)",
				 file, lineno, RULE_LINE_MAX);
			break;
		}
		if (r < 0) {
			rc = r;
			if (lineno == 1)
				xrl_fail(err, errlen, "cannot read %s: %s", file, strerror(-r));
			else
				xrl_fail(err, errlen, "cannot read %s: %s at line %d: nothing of it was loaded; load it again once it reads whole",
					 file, strerror(-r), lineno);
			break;
		}
		/* a NUL would end the line early for the parser: the rest would be dropped */
		if (nul) {
			rc = -EINVAL;
			xrl_fail(err, errlen, "%s:%d: NUL byte at column %d: a rule file is text, one rule per line",
				 file, lineno, nul);
			break;
		}
		r = xrl_rule_parse_line(line, n < XRL_MAX_RULES ? &defs[n] : &extra, why, sizeof(why));
		if (r > 0 && n == XRL_MAX_RULES) {
			rc = -EINVAL;
			xrl_fail(err, errlen, "%s:%d: more than %d rules", file, lineno, XRL_MAX_RULES);
			break;
		}
		if (r < 0) {
			rc = -EINVAL;
			xrl_fail(err, errlen, "%s:%d: %s", file, lineno, why);
			break;
		}
		if (r) {
			fr[n].d = &defs[n];
			fr[n].line = lineno;
		}
		n += r;
	}
	/*
	 * A rule given twice: the first line where one repeats an earlier one,
	 * as reading line by line would find it (sorted, not compared pairwise).
	 */
	if (!rc && n > 1) {
		qsort(fr, (size_t)n, sizeof(*fr), file_rule_cmp);
		for (i = 1; i < n; i++)
			if (!xrl_rule_match_cmp(fr[i - 1].d, fr[i].d) && (!dup || fr[i].line < fr[dup].line))
				dup = i;
		if (dup) {
			char t[XRL_MATCH_TEXT];

			xrl_rule_format_match(fr[dup].d, t, sizeof(t));
			rc = -EINVAL;
			xrl_fail(err, errlen, "%s:%d: rule %s appears twice", file, fr[dup].line, t);
		}
	}
out:
	free(fr);
	if (f != stdin)
		fclose(f);
	if (!rc)
		*count = n;
	return rc;
}
