/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rules as the operator writes them: the rule words (command line and rule
 * files alike, one row each in xrl_rule_opts), formatting them back,
 * comparing rules and compiling one rule into what the data path reads
 * (xrl_rule.c); a whole rule set and rules files (xrl_ruleset.c). The
 * scalars they are made of are in xrl_units.h, the GCRA and clocks in
 * xrl_gcra.h.
 */
#ifndef XRL_RULE_H
#define XRL_RULE_H

#include <stddef.h>
#include <stdbool.h>
#include "xrl_common.h"
#include "xrl_opts.h"
#include "xrl_units.h"
#include "xrl_gcra.h"

#define XRL_MAX_BLOCK_S (7ULL * 24 * 3600)   /* --block: at most a week */

/* --algo: the names of enum xrl_algo, in order */
#define XRL_ALGO_NAMES "token-bucket|fixed-window|sliding-window|sliding-log"
const char *xrl_algo_name(__u8 algo);

enum xrl_rule_mode {
	XRL_RULE_ADD,    /* PREFIX --rate ... | --allow | --deny */
	XRL_RULE_MATCH,  /* PREFIX [--proto P] [--dport PORTS] [--dst PREFIX] [--syn]: names a rule */
};

/*
 * The rule words (--rate, --burst, ..., --allow, --deny): one row each, with
 * the modes that accept it (bit 1 << XRL_RULE_ADD, 1 << XRL_RULE_MATCH).
 */
extern const struct xrl_opt_table xrl_rule_opts;
/* Option parsers for rates (count at off, period in seconds at off2) and sizes (at most o->max). */
int xrl_opt_rate(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
int xrl_opt_size(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);

/*
 * Parse rule words (argv[0] is the prefix; the options of xrl_rule_opts
 * in the mode, each once, in full). 0 or -1 with a message in err.
 */
int xrl_rule_parse_args(int argc, char **argv, enum xrl_rule_mode mode,
			struct xrl_rule_def *def, char *err, size_t errlen);
/* Parse one rule-file line. Returns 1 for a rule, 0 for blank/comment, -1 for an error. */
int xrl_rule_parse_line(const char *line, struct xrl_rule_def *def, char *err, size_t errlen);
/* The rule in rule-file words; parsing the text gives the same rule back. */
/*
 * Read a rules file (one rule per line, as `rule save` writes them; "-" is
 * stdin) into defs (XRL_MAX_RULES). -EINVAL with "FILE:LINE: why" in err
 * when the file is refused (a bad line, a line over 1022 characters, a NUL
 * byte, a rule given twice), another -errno when it cannot be read (any
 * read error, at any line: never taken for the end of the file). Lines are
 * read into a bounded buffer: no line is read whole before its length is
 * checked. *count is set only on success: the whole file, or nothing.
 */
int xrl_rules_read_file(const char *file, struct xrl_rule_def *defs, int *count, char *err,
			size_t errlen);
void xrl_rule_format(const struct xrl_rule_def *def, char *buf, size_t len);
/*
 * The prefix and match part only ("10.0.0.0/8 --proto tcp --dport 80 --syn"),
 * in a buffer of XRL_MATCH_TEXT: the longest (an IPv6 prefix, a set of
 * eight ranges of five-digit ports, an IPv6 --dst) is 207 characters.
 */
#define XRL_MATCH_TEXT 256
void xrl_rule_format_match(const struct xrl_rule_def *def, char *buf, size_t len);
/* --dport of one port (or none): the rule's dport alone; else a set of d->nports ranges. */
bool xrl_rule_one_port(const struct xrl_rule_def *d);
/* --dport's value as `rule save` writes it: "443", or a set "80-81,443,8000-8100". */
#define XRL_PORTS_TEXT (XRL_MAX_PORT_RANGES * 12)
void xrl_rule_format_ports(const struct xrl_rule_def *d, char *buf, size_t len);
/* Same prefix and same match fields: the same rule for add/del. */
bool xrl_rule_same_match(const struct xrl_rule_def *a, const struct xrl_rule_def *b);
/*
 * An order of rules by prefix (family, address, length) and match fields:
 * 0 exactly when xrl_rule_same_match. Sorting by it finds a rule given
 * twice in O(n log n).
 */
int xrl_rule_match_cmp(const struct xrl_rule_def *a, const struct xrl_rule_def *b);
/* The prefix part of that order: family, address, length (a prefix before those it contains). */
int xrl_rule_prefix_cmp(const struct xrl_rule_def *a, const struct xrl_rule_def *b);
/*
 * Are the rule's packets all from sources proven to own their address?
 * --block on any other rule can be triggered by packets spoofing a
 * victim's address, so it takes --block-spoofable (and xrl_rule_format
 * writes it back). A --syn-proxy rule's are: a source gets a bucket there
 * only once its handshake has completed.
 */
bool xrl_rule_source_proven(const struct xrl_rule_def *d);
/* Same parameters too (rate, burst, ...): its buckets stay valid. */
bool xrl_rule_same_params(const struct xrl_rule_def *a, const struct xrl_rule_def *b);

int xrl_rule_compile(const struct xrl_rule_def *def, __u32 id, struct xrl_rule *out,
		     char *err, size_t errlen);

/* One LPM entry to write: a prefix and its rules, own first, then inherited. */
struct xrl_compiled_prefix {
	__u8 family;
	__u8 plen;
	__u8 addr[16];
	struct xrl_prefix_entry entry;
};

/*
 * Compile a rule set (defs[i] has id ids[i]) into LPM entries. *out is
 * malloc'd. 0 or -1 with a message (e.g. too many rules cover a prefix).
 */
int xrl_ruleset_compile(const struct xrl_rule_def *defs, const __u32 *ids, int n,
			struct xrl_compiled_prefix **out, int *nout, char *err, size_t errlen);

#endif /* XRL_RULE_H */
