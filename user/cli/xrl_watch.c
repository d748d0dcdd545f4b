// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* The refresh loop of the live views, and the frames they draw. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "xrl_term.h"
#include "xrl_rule.h"
#include "xrl_watch.h"

double xrl_watch_rate(__u64 prev, __u64 cur, double secs)
{
	if (secs <= 0)
		return 0;
	return (double)(cur >= prev ? cur - prev : cur) / secs;
}

int xrl_watch_interval(struct xrl_ctx *ctx, const char *s, double *out)
{
	char *end = NULL;
	double v;

	errno = 0;
	v = strtod(s, &end);
	/* the comparison also refuses nan */
	if (end == s || *end || errno || !(v >= XRL_WATCH_MIN_S && v <= XRL_WATCH_MAX_S))
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "invalid --interval '%s': expected seconds from %g to %g (e.g. 1 or 0.5)",
				 s, XRL_WATCH_MIN_S, XRL_WATCH_MAX_S);
	*out = v;
	return 0;
}

int xrl_watch_usable(struct xrl_ctx *ctx, const char *cmd)
{
	if (ctx->json)
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "--watch draws a live view for people and --json prints one reading for programs: "
				 "use 'xrl %s --watch' or 'xrl --json %s'", cmd, cmd);
	if (!isatty(STDOUT_FILENO))
		return xrl_error(ctx, XRL_EXIT_USAGE,
				 "--watch redraws a terminal, but standard output is not one: "
				 "use 'xrl %s' or 'xrl --json %s' for a file or a pipe", cmd, cmd);
	return 0;
}

/* ---------------------------------------------------------------- frames */

static void frame_put(struct xrl_frame *f, const char *s, size_t n)
{
	if (f->len + n > f->cap) {
		size_t cap = 2 * (f->len + n) + 4096;
		char *b = realloc(f->buf, cap);

		if (!b) {
			f->oom = true;
			return;
		}
		f->buf = b;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, s, n);
	f->len += n;
}

static void frame_puts(struct xrl_frame *f, const char *s)
{
	frame_put(f, s, strlen(s));
}

/*
 * Every line is addressed by its row and nothing ends in a newline, so the
 * last row never scrolls the screen; old text right of a shorter line is
 * erased instead of clearing the whole screen first (no flicker).
 */
static void frame_text(struct xrl_frame *f, enum xrl_frame_style style, const char *text)
{
	size_t n = strlen(text), w = (size_t)f->cols;
	char pos[32];

	if (f->line >= f->rows)
		return;
	f->line++;
	snprintf(pos, sizeof(pos), "\x1b[%d;1H", f->line);
	frame_puts(f, pos);
	if (n > w)
		n = w;
	if (style == XRL_FRAME_BOLD)
		frame_puts(f, "\x1b[1m");
	else if (style == XRL_FRAME_BAR)
		frame_puts(f, "\x1b[7m");
	frame_put(f, text, n);
	if (style == XRL_FRAME_BAR)
		for (; n < w; n++)
			frame_put(f, " ", 1);
	if (style != XRL_FRAME_PLAIN)
		frame_puts(f, "\x1b[m");   /* before erasing: the cleared cells take the current colours */
	/* a full line leaves the cursor on its last cell: erasing there would take that character */
	if (n < w)
		frame_puts(f, "\x1b[K");
}

void xrl_frame_line(struct xrl_frame *f, enum xrl_frame_style style, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	frame_text(f, style, text);
}

void xrl_frame_wrap(struct xrl_frame *f, enum xrl_frame_style style, const char *fmt, ...)
{
	char text[2048], line[1024];
	const char *p = text;
	int width = f->cols < 20 ? 20 : f->cols, indent = 0;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	while (*p && f->line < f->rows) {
		int room = width - indent, n = 0, brk = -1;

		if (room > (int)sizeof(line) - 8)
			room = (int)sizeof(line) - 8;
		/* the longest run of words that fits; a word longer than the line is cut */
		while (p[n] && n < room) {
			if (p[n] == ' ')
				brk = n;
			n++;
		}
		if (p[n] && brk > 0)
			n = brk;
		snprintf(line, sizeof(line), "%*s%.*s", indent, "", n, p);
		frame_text(f, style, line);
		p += n;
		while (*p == ' ')
			p++;
		indent = 2;   /* continuation lines, under the first */
	}
}

void xrl_frame_title(struct xrl_frame *f, const char *left, const char *right)
{
	int gap = f->cols - (int)strlen(left) - (int)strlen(right);

	if (gap >= 1)
		xrl_frame_line(f, XRL_FRAME_PLAIN, "%s%*s%s", left, gap, "", right);
	else
		xrl_frame_line(f, XRL_FRAME_PLAIN, "%s", left);
}

int xrl_frame_room(const struct xrl_frame *f)
{
	return f->rows - f->line;
}

static int frame_draw(struct xrl_ctx *ctx, const struct xrl_view *v, struct xrl_frame *f)
{
	char pos[32];

	f->len = 0;
	f->line = 0;
	f->oom = false;
	xrl_term_size(&f->rows, &f->cols);
	v->draw(ctx, v->state, f);
	if (f->line < f->rows) {
		snprintf(pos, sizeof(pos), "\x1b[%d;1H\x1b[J", f->line + 1);
		frame_puts(f, pos);
	}
	if (f->oom)
		return -ENOMEM;
	return xrl_term_write(f->buf, f->len);
}

/* ---------------------------------------------------------------- the loop */

/*
 * One refresh: lock, open, read, close, unlock. The maps are opened anew
 * each time, so a detach is noticed (and a reader never holds the lock
 * between refreshes, where it would keep every rule change waiting).
 */
static int sample_live(struct xrl_ctx *ctx, const struct xrl_view *v, int rows, char *why,
		       size_t len)
{
	struct xrl_maps m;
	int err;

	while ((err = xrl_instance_open(xrl_ctx_instance(ctx), XRL_LOCK_SHARED, XRL_WAIT_FOREVER, 0,
					&m, why, len)) == -EINTR && !xrl_term_stop_signal())
		;
	if (err == -EINTR)
		return 0;   /* asked to stop while waiting for a writer */
	if (err == -ENOENT || err == -ENODEV)
		goto detached;   /* the pins, or the last interface, gone */
	if (err)
		return err;
	err = v->sample(ctx, &m, v->state, rows);
	xrl_instance_end(ctx, &m);
	if (err)
		snprintf(why, len, "cannot read the counters of instance '%s': %s", ctx->instance,
			 strerror(-err));
	return err;
detached:
	snprintf(why, len, "instance '%s' was detached while watching: nothing left to show",
		 ctx->instance);
	return -ENOENT;
}

int xrl_watch_run(struct xrl_ctx *ctx, const struct xrl_view *v, const char *cmd, double interval)
{
	__u64 period = (__u64)(interval * 1e9), next, now;
	struct xrl_frame f = { 0 };
	struct xrl_maps m;
	char why[XRL_INSTANCE_ERRLEN] = "";
	bool draw = true;
	int rc, err, key, sig, rows, cols;

	xrl_term_size(&rows, &cols);
	if ((rc = xrl_instance_begin(ctx, &m, false)))
		return rc;
	err = v->sample(ctx, &m, v->state, rows);
	xrl_instance_end(ctx, &m);
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "cannot read the counters of instance '%s': %s",
				 ctx->instance, strerror(-err));
	if ((err = xrl_term_enter())) {
		xrl_term_leave();
		return xrl_error(ctx, XRL_EXIT_FAIL, "xrl %s --watch cannot set up the terminal: %s",
				 cmd, strerror(-err));
	}
	next = xrl_mono_ns() + period;
	for (;;) {
		if (draw) {
			if ((err = frame_draw(ctx, v, &f))) {
				snprintf(why, sizeof(why), "cannot write to the terminal: %s", strerror(-err));
				break;
			}
			draw = false;
		}
		if (xrl_term_stop_signal())
			break;
		if (xrl_term_take_redraw()) {
			draw = true;
			continue;
		}
		now = xrl_mono_ns();
		if (now >= next) {
			xrl_term_size(&rows, &cols);
			if ((err = sample_live(ctx, v, rows, why, sizeof(why))))
				break;
			/* late (stopped with Ctrl-Z, a slow read): carry on from now, no catching up */
			next = next + period > now ? next + period : now + period;
			draw = true;
			continue;
		}
		key = xrl_term_key((int)((next - now + 999999) / 1000000));
		if (key == 'q' || key == 'Q')
			break;
		if (key == ' ')
			next = now;   /* refresh now, as in top */
	}
	xrl_term_leave();
	free(f.buf);
	if (err)
		return xrl_error(ctx, XRL_EXIT_FAIL, "%s", why);
	/* q and Ctrl-C are the ways to quit; any other signal is reported as such */
	sig = xrl_term_stop_signal();
	return sig && sig != SIGINT ? 128 + sig : 0;
}
