// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Raw keys and the alternate screen for the live views, with plain termios
 * and ANSI escapes (no curses: two escapes and one termios change are all a
 * refreshing table needs).
 *
 * ISIG stays on, as in top: Ctrl-C reaches us as SIGINT like a kill from
 * elsewhere, and every way to stop goes through the view's loop, which
 * restores the terminal in one place. Ctrl-Z must not leave the shell in
 * raw mode on the alternate screen, so SIGTSTP restores first, stops, and
 * takes the terminal again on SIGCONT.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "xrl_term.h"

/* alternate screen on, cursor hidden; and back */
static const char enter_seq[] = "\x1b[?1049h\x1b[?25l";
static const char leave_seq[] = "\x1b[?25h\x1b[?1049l";

static struct termios saved;
static int key_fd = -1;                      /* standard input, when it is a terminal */
static volatile sig_atomic_t active;         /* the terminal is ours */
static volatile sig_atomic_t stop_sig;
static volatile sig_atomic_t redraw;

/* async-signal-safe: the signal handlers use it */
static void put(const char *s, size_t n)
{
	while (n) {
		ssize_t w = write(STDOUT_FILENO, s, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

/* async-signal-safe too: SIGCONT comes back through here */
static int take(void)
{
	struct termios raw = saved;

	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_cc[VMIN] = 1;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(STDOUT_FILENO, TCSAFLUSH, &raw))
		return -errno;
	active = 1;
	put(enter_seq, sizeof(enter_seq) - 1);
	return 0;
}

void xrl_term_leave(void)
{
	if (!active)
		return;
	active = 0;
	put(leave_seq, sizeof(leave_seq) - 1);
	tcsetattr(STDOUT_FILENO, TCSAFLUSH, &saved);
}

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void on_winch(int sig)
{
	(void)sig;
	redraw = 1;
}

static void on_tstp(int sig);

static void catch(int sig, void (*fn)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	sigaction(sig, &sa, NULL);
}

static void on_tstp(int sig)
{
	int e = errno, was = active;
	sigset_t s;

	xrl_term_leave();
	/* stop for real: default action, unblocked (it is blocked inside its handler) */
	catch(sig, SIG_DFL, 0);
	sigemptyset(&s);
	sigaddset(&s, sig);
	sigprocmask(SIG_UNBLOCK, &s, NULL);
	raise(sig);
	/* SIGCONT: the shell may have changed the settings meanwhile */
	sigprocmask(SIG_BLOCK, &s, NULL);
	catch(sig, on_tstp, SA_RESTART);
	if (was && tcgetattr(STDOUT_FILENO, &saved) == 0)
		take();
	redraw = 1;
	errno = e;
}

int xrl_term_enter(void)
{
	static int at_exit_set;
	int err;

	if (tcgetattr(STDOUT_FILENO, &saved))
		return -errno;
	key_fd = isatty(STDIN_FILENO) ? STDIN_FILENO : -1;
	if (!at_exit_set && atexit(xrl_term_leave) == 0)
		at_exit_set = 1;
	/*
	 * No SA_RESTART for the stop signals: a read of the maps blocked on a
	 * writer's lock must return so the view can end. A resize only
	 * redraws, so the call it interrupted carries on.
	 */
	catch(SIGINT, on_stop, 0);
	catch(SIGTERM, on_stop, 0);
	catch(SIGHUP, on_stop, 0);
	catch(SIGQUIT, on_stop, 0);
	catch(SIGWINCH, on_winch, SA_RESTART);
	catch(SIGTSTP, on_tstp, SA_RESTART);
	err = take();
	return err;
}

int xrl_term_stop_signal(void)
{
	return stop_sig;
}

bool xrl_term_take_redraw(void)
{
	if (!redraw)
		return false;
	redraw = 0;
	return true;
}

void xrl_term_size(int *rows, int *cols)
{
	struct winsize w;

	*rows = 24;
	*cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &w) == 0 && w.ws_row && w.ws_col) {
		*rows = w.ws_row;
		*cols = w.ws_col;
	}
}

int xrl_term_key(int ms)
{
	struct pollfd p = { .fd = key_fd, .events = POLLIN };
	unsigned char c;
	ssize_t r;

	if (poll(&p, key_fd >= 0 ? 1 : 0, ms) <= 0)
		return 0;
	r = read(key_fd, &c, 1);
	if (r == 1)
		return c;
	/* standard input hung up: stop polling it, or every wait returns at once */
	if (r == 0 || (errno != EINTR && errno != EAGAIN))
		key_fd = -1;
	return 0;
}

int xrl_term_write(const char *buf, size_t len)
{
	while (len) {
		ssize_t w = write(STDOUT_FILENO, buf, len);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		buf += w;
		len -= (size_t)w;
	}
	return 0;
}
