/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The terminal of a live view: keys without echo, the alternate screen, and
 * the operator's terminal given back however the view ends.
 */
#ifndef XRL_TERM_H
#define XRL_TERM_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Take over standard output's terminal: no echo, keys one at a time,
 * alternate screen, cursor hidden. Ctrl-C, Ctrl-\ and Ctrl-Z still make
 * signals: SIGINT, SIGTERM, SIGHUP and SIGQUIT are only recorded (see
 * xrl_term_stop_signal), Ctrl-Z gives the terminal back while stopped.
 * 0, or -errno.
 */
int xrl_term_enter(void);
/* Give the terminal back as it was. Safe to call twice and at exit. */
void xrl_term_leave(void);

/* The signal that asked the view to end, or 0. */
int xrl_term_stop_signal(void);
/* True once after each resize (or resume after Ctrl-Z): redraw everything. */
bool xrl_term_take_redraw(void);
/* Rows and columns of standard output's terminal (24 x 80 when unknown). */
void xrl_term_size(int *rows, int *cols);
/*
 * Wait up to ms for a key on standard input: the key's byte, or 0 when the
 * time ran out or a signal came first.
 */
int xrl_term_key(int ms);
/* Write all of buf to standard output. 0, or -errno. */
int xrl_term_write(const char *buf, size_t len);

#endif /* XRL_TERM_H */
