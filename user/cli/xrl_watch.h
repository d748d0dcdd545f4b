/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Live views (`top --watch`, `stats --watch`): a loop that reads the
 * instance's counters every interval and redraws a table of rates.
 */
#ifndef XRL_WATCH_H
#define XRL_WATCH_H

#include <stdbool.h>
#include "xrl_cli.h"

#define XRL_WATCH_DEFAULT_S 1.0
#define XRL_WATCH_MIN_S     0.1
#define XRL_WATCH_MAX_S     3600.0

/* One screenful, built line by line and written at once (no flicker). */
struct xrl_frame {
	char *buf;
	size_t len, cap;
	int rows, cols;   /* the terminal's size when the frame was started */
	int line;         /* lines used so far */
	bool oom;
};

enum xrl_frame_style {
	XRL_FRAME_PLAIN,
	XRL_FRAME_BOLD,
	XRL_FRAME_BAR,    /* reverse video across the whole width: column titles */
};

/* Add a line, cut at the terminal's width; lines past its height are dropped. */
void xrl_frame_line(struct xrl_frame *f, enum xrl_frame_style style, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Text wrapped at the terminal's width (continuation lines indented by two): never cut. */
void xrl_frame_wrap(struct xrl_frame *f, enum xrl_frame_style style, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A line with left text and right text at the right edge (dropped when there is no room). */
void xrl_frame_title(struct xrl_frame *f, const char *left, const char *right);
/* Lines still free. */
int xrl_frame_room(const struct xrl_frame *f);

struct xrl_view {
	/*
	 * Read the counters of the open, share-locked instance into state.
	 * rows: at most this many table rows will be shown (to read no more
	 * than that). 0, or -errno.
	 */
	int (*sample)(struct xrl_ctx *ctx, const struct xrl_maps *m, void *state, int rows);
	/* Draw the last reading. */
	void (*draw)(struct xrl_ctx *ctx, void *state, struct xrl_frame *f);
	void *state;
};

/*
 * Per-second rate of a counter read twice secs apart; a counter found
 * smaller than before restarted from zero meanwhile (new rule, new bucket,
 * new sketch slot), so what it holds now is what happened since.
 */
double xrl_watch_rate(__u64 prev, __u64 cur, double secs);

/* Parse --interval SEC: 0, or the usage exit code (reported). */
int xrl_watch_interval(struct xrl_ctx *ctx, const char *s, double *out);
/* --watch needs a terminal and no --json: 0, or the usage exit code (reported). */
int xrl_watch_usable(struct xrl_ctx *ctx, const char *cmd);
/*
 * Run a view until q, Ctrl-C or a signal; the exit status. The first
 * reading is taken before the screen changes, so a missing instance is
 * reported as by every command.
 */
int xrl_watch_run(struct xrl_ctx *ctx, const struct xrl_view *v, const char *cmd, double interval);

int xrl_top_watch(struct xrl_ctx *ctx, double interval, __u64 count);
int xrl_stats_watch(struct xrl_ctx *ctx, double interval);

#endif /* XRL_WATCH_H */
