/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The command line as tables: options (name, value, parser, target field,
 * the modes that accept them) and commands (name, handler, usage). One
 * table gives the parsing, the usage text, the "expected ..." lists of the
 * error messages and what `xrl help options` prints; adding an option is
 * adding one row. Also: text made safe for JSON (UTF-8).
 *
 * Parsing rules, the same for every table: long options are written in
 * full (--rate, never --ra: abbreviations would become ambiguous as options
 * are added), with the value as the next word or after '=' (--rate=10);
 * short options (-j) may be bundled (-jp) and take a value as -n5 or -n 5;
 * every option may be given once; "--" ends the options. The library
 * prints nothing: errors come back as one line in err.
 */
#ifndef XRL_OPTS_H
#define XRL_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <jansson.h>

struct xrl_opt;
/*
 * Store an option's value (arg; NULL for a flag) in obj, the struct the
 * table fills, at the row's field(s). 0, or -1 with a message in err.
 */
typedef int (*xrl_opt_parse_fn)(const struct xrl_opt *o, const char *arg, void *obj,
				char *err, size_t errlen);
/*
 * Write the option back as words (" --rate 10/s") from obj into buf (len
 * bytes), or nothing when obj does not have it; the length it needed, as
 * snprintf returns.
 */
typedef int (*xrl_opt_format_fn)(const struct xrl_opt *o, const void *obj, char *buf, size_t len);

#define XRL_OPT_OPTIONAL_ARG 0x1   /* the value may be left out (--metrics [ADDR:PORT]) */
#define XRL_OPT_CHOICE       0x2   /* one of the CHOICE rows is the mode's required word */
/* usage shows it inside the brackets of the row before: [--watch [--interval SEC]] */
#define XRL_OPT_NESTED       0x4
/* may be given more than once (--trusted-proxy A --trusted-proxy B): its parser accumulates */
#define XRL_OPT_REPEATABLE   0x8

struct xrl_opt {
	const char *name;        /* long form without "--" ("rate") */
	char short_name;         /* one-letter form ('j' for -j); 0: none */
	const char *arg;         /* the value as usage names it ("RATE"); NULL: a flag */
	xrl_opt_parse_fn parse;
	size_t off, size;        /* the target field (XRL_OPT_FIELD) */
	size_t off2, size2;      /* a second field some parsers write (a rate's period) */
	unsigned modes;          /* the modes (bit 1 << mode) that accept it */
	unsigned flags;          /* XRL_OPT_* */
	unsigned long long min, max;   /* xrl_opt_uint's range; a size's maximum */
	unsigned long long val;        /* what xrl_opt_flag ORs in, xrl_opt_set stores */
	const char *what;        /* the value in messages ("burst"); the choices of xrl_opt_enum */
	const char *help;        /* one line for `xrl help options` */
	/* tables that write their struct back as words (rules: `rule save`) */
	xrl_opt_format_fn format;
	unsigned char save_rank; /* xrl_opts_format's order: rank, then row */
	int with;                /* 1 + the row this one qualifies (--bytes-burst: --bytes); 0: none */
	/* the same field(s) in a second struct, copied by xrl_opts_copy (a rule's compiled form) */
	size_t copy_off, copy_size, copy_off2, copy_size2;
	/* the words of a whole entry that uses the option (a rule's, after its
	 * prefix): the round-trip test of every row parses, writes back and
	 * parses it again */
	const char *example;
};

#define XRL_OPT_FIELD(type, member) \
	.off = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define XRL_OPT_FIELD2(type, member) \
	.off2 = offsetof(type, member), .size2 = sizeof(((type *)0)->member)
#define XRL_OPT_COPY(type, member) \
	.copy_off = offsetof(type, member), .copy_size = sizeof(((type *)0)->member)
#define XRL_OPT_COPY2(type, member) \
	.copy_off2 = offsetof(type, member), .copy_size2 = sizeof(((type *)0)->member)
#define XRL_OPT_WITH(row) .with = (row) + 1

struct xrl_opt_table {
	const char *name;        /* "global", "rule": what `xrl help options` calls it */
	const struct xrl_opt *opts;
	int n;                   /* at most 64 rows */
	int nmodes;
	const char *const *mode_names;   /* "add", "match" */
	/* per mode, why an option of another mode is refused: "does not name a rule: ..." */
	const char *const *mode_refusal;
	const char *see;         /* appended to "unknown option" messages, e.g. "see xrl --help" */
};

/* Bit i: the table's row i was given. */
typedef unsigned long long xrl_opt_seen;
#define XRL_SEEN(seen, row) ((((seen) >> (row)) & 1ULL) != 0)

/*
 * Parse the options of argv[*argi...] in the given mode into obj. Stops at
 * the end, at the first word that is not an option (left in *argi), or
 * after "--". 0, or -1 with one line in err (unknown option, repeated,
 * refused in this mode, missing or unwanted value, the parser's message).
 */
int xrl_opts_parse(const struct xrl_opt_table *t, int mode, int argc, char **argv, int *argi,
		   void *obj, xrl_opt_seen *seen, char *err, size_t errlen);

/* Generic parsers. */
int xrl_opt_flag(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
int xrl_opt_set(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
int xrl_opt_uint(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
int xrl_opt_str(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
/* o->what lists the choices ("text|json"); stores the index of arg in it. */
int xrl_opt_enum(const struct xrl_opt *o, const char *arg, void *obj, char *err, size_t errlen);
/* Store v in the field at off (size bytes: 1, 2, 4 or 8). */
void xrl_opt_store(void *obj, size_t off, size_t size, unsigned long long v);
/* The field at off (size bytes: 1, 2, 4 or 8). */
unsigned long long xrl_opt_load(const void *obj, size_t off, size_t size);

/* Generic writers: " --NAME" when the field has o->val's bits (a flag), or is o->val (a set). */
int xrl_opt_format_flag(const struct xrl_opt *o, const void *obj, char *buf, size_t len);
int xrl_opt_format_set(const struct xrl_opt *o, const void *obj, char *buf, size_t len);
/*
 * obj's options as words, by save_rank then row, of the rows in the modes
 * (bits 1 << mode) that have a format: appended to buf at *n (len bytes),
 * *n advanced as snprintf would.
 */
void xrl_opts_format(const struct xrl_opt_table *t, unsigned modes, const void *obj, char *buf,
		     size_t len, size_t *n);
/*
 * Do a and b hold the same values in the fields of every row that is in
 * none of the modes skip? (The rows' fields, not the words given.)
 */
bool xrl_opts_same(const struct xrl_opt_table *t, unsigned skip, const void *a, const void *b);
/* Copy each row's field(s) from obj into the copy field(s) of to. */
void xrl_opts_copy(const struct xrl_opt_table *t, const void *obj, void *to);

/* "--rate, --burst, ... or --deny": the options of a mode, for messages. */
void xrl_opts_list(const struct xrl_opt_table *t, int mode, char *buf, size_t len);
/* "{--rate RATE | --allow | --deny} [--burst N] ...": the options of a mode in usage form. */
void xrl_opts_usage(const struct xrl_opt_table *t, int mode, char *buf, size_t len);
/* One line per option: table, modes, -s, --long, value, help (`xrl help options`). */
void xrl_opts_dump(FILE *f, const struct xrl_opt_table *t);

/* ---------------------------------------------------------------- commands */

struct xrl_ctx;
struct xrl_cmd_table;

struct xrl_cmd {
	const char *name;
	/* argv[0] is the command's name */
	int (*fn)(struct xrl_ctx *ctx, int argc, char **argv);
	const char *args;        /* its words in usage ("IFACE [--mode ...]"), before opts */
	const struct xrl_opt_table *opts;  /* options appended to the usage, of opt_mode */
	int opt_mode;
	const struct xrl_cmd_table *sub;   /* subcommands: their usage lines instead */
	/* `xrl help CMD [SUB]` and CMD --help (user/cli/xrl_help.c): what it does, in one
	 * line, and examples, one command line each, '\n' between them */
	const char *summary;
	const char *example;
};

struct xrl_cmd_table {
	const char *path;        /* "xrl", "xrl rule": how usage messages name it */
	const struct xrl_cmd *cmds;
	int n;
};

const struct xrl_cmd *xrl_cmd_find(const struct xrl_cmd_table *t, const char *name);
/* "attach, detach, ... or help" (sep ", ") or "add|del|list|load|save" (sep "|"). */
void xrl_cmd_names(const struct xrl_cmd_table *t, const char *sep, const char *last,
		   char *buf, size_t len);
/* A command's usage on one line: "xrl rule load FILE". */
void xrl_cmd_usage_line(const struct xrl_cmd_table *t, const struct xrl_cmd *c, char *buf,
			size_t len);
/* Every command's usage, subcommands expanded, lines wrapped at width columns. */
void xrl_cmd_usage(FILE *f, const struct xrl_cmd_table *t, const char *indent, int width);
/* Print lead then text wrapped at width, continuation lines indented by strlen(lead). */
void xrl_usage_wrap(FILE *f, const char *lead, const char *text, int width);

/* ---------------------------------------------------------------- text */

/*
 * Copy s into out (len bytes, always terminated) as valid UTF-8: each byte
 * that is not part of a valid UTF-8 sequence becomes the four characters
 * \xNN. Returns the length written.
 */
size_t xrl_utf8_clean(const char *s, char *out, size_t len);
/* A JSON string of s, cleaned as above: never NULL for a non-NULL s. */
json_t *xrl_json_text(const char *s);

#endif /* XRL_OPTS_H */
