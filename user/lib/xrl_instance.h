/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one way to open an xrl instance: its pin directory under bpffs,
 * locked (writers exclusive, readers shared, so that a reader never sees
 * half a rule change) and its maps opened and checked. Prints nothing: a
 * failure returns -errno and says what was wrong and what to do in the
 * caller's buffer. The CLI, the daemon and the exporter all come here.
 */
#ifndef XRL_INSTANCE_H
#define XRL_INSTANCE_H

#include <stdbool.h>
#include <stddef.h>
#include "xrl_maps.h"

#define XRL_PIN_ROOT "/sys/fs/bpf/xrl"
/* Room for any message of this API (the longest says how to reach hidden pins). */
#define XRL_INSTANCE_ERRLEN 1024
/* Pins of an instance made by an xrl before rule definitions were kept per generation. */
#define XRL_OLD_PINS_MSG \
	"the instance was pinned by another build of xrl (its maps differ: %s): detach it everywhere and attach it again"

/* An instance as its users name it; lock_fd is -1 while no lock is held. */
struct xrl_instance {
	const char *name;      /* for the messages: "default", "edge", ... */
	const char *pin_dir;   /* XRL_PIN_ROOT/name */
	int lock_fd;
	int rules_fd;          /* XRL_LOCK_RULES: the rule writers' lock; read only while lock_fd >= 0 */
};

enum xrl_lock_mode {
	XRL_LOCK_NONE,         /* no lock (status; a daemon that locks around each read) */
	XRL_LOCK_SHARED,       /* readers of the rule set */
	XRL_LOCK_EXCLUSIVE,    /* writers: attach, detach, the penalty box, the UTC offset */
	/*
	 * Rule changes: shared on the instance (attach and detach wait for
	 * them, they for attach and detach) and exclusive among rule changes
	 * only, on XRL_RUN_DIR/NAME.rules.lock (bpffs holds only pins and
	 * directories, and nothing is left in the instance's directory that a
	 * detach would have to know of). Readers are not kept waiting: a change
	 * writes the next generation beside the one in force and switches with
	 * one store (xrl_ruleset_apply), so readers see the one or the other.
	 */
	XRL_LOCK_RULES,
};

/* timeout_ms of xrl_instance_open: wait as long as the holder holds it (a signal: -EINTR) */
#define XRL_WAIT_FOREVER (-1)

/* flags of xrl_instance_open and xrl_instance_maps */
#define XRL_OPEN_CREATE     (1u << 0)   /* make XRL_PIN_ROOT and the directory (0700); root only */
#define XRL_OPEN_ANY_LAYOUT (1u << 1)   /* maps of another build's layout too (detach) */
#define XRL_OPEN_NO_IFACE   (1u << 2)   /* no interface recorded is no error */

/*
 * Lock the instance (lock, waiting timeout_ms: XRL_WAIT_FOREVER, 0 for not
 * at all, or a bound) and, when m is not NULL, open its maps into m. 0, or
 * -errno with the reason in err (at least XRL_INSTANCE_ERRLEN is enough)
 * and nothing held:
 *   -ENOENT  not attached (no pin directory, no maps pinned), or detached
 *            while waiting for the lock
 *   -ENODEV  no interface recorded (unless XRL_OPEN_NO_IFACE)
 *   -EPROTO  maps of another build's layout (unless XRL_OPEN_ANY_LAYOUT)
 *   -EBUSY   still locked by another after timeout_ms
 *   -EINTR   a signal came while waiting (XRL_WAIT_FOREVER)
 *   another  the pin directories refused (not root's, a symlink, writable
 *            by others; bpffs hidden in this mount namespace), permissions
 * xrl_instance_close undoes it. Thread-safe (no state but in's).
 */
int xrl_instance_open(struct xrl_instance *in, enum xrl_lock_mode lock, int timeout_ms,
		      unsigned flags, struct xrl_maps *m, char *err, size_t errlen);
/* Open the maps of an instance open (or locked) already, checked as xrl_instance_open does. */
int xrl_instance_maps(const struct xrl_instance *in, unsigned flags, struct xrl_maps *m,
		      char *err, size_t errlen);
/* Close m (when not NULL) and release the lock (when held). */
void xrl_instance_close(struct xrl_instance *in, struct xrl_maps *m);
/* Remove the instance's pins and directory (XRL_PIN_ROOT stays). */
void xrl_instance_unpin(const struct xrl_instance *in);
/* Remove the instance's map pins; the directory (and a lock held on it) stays. */
void xrl_instance_unpin_maps(const struct xrl_instance *in);
/*
 * Is fd the map pinned as the instance's map name? 0 yes, -ENOENT nothing
 * pinned there (detached), -ESTALE another map (detached and attached
 * again), another -errno when it cannot be told now (EMFILE and such); err
 * says which.
 */
int xrl_instance_pinned_same(const struct xrl_instance *in, const char *map, int fd,
			     char *err, size_t errlen);

/*
 * One daemon per instance: each holds an flock on its pid file in
 * XRL_RUN_DIR (bpffs holds only pins and directories). The lock goes with
 * the process, so a file left by a dead daemon blocks nothing; the file is
 * never removed (a daemon removing it could let two others lock two
 * different files). The fd (held, close-on-exec, until exit), or -1 with
 * the reason in err (another daemon runs: its PID).
 */
#define XRL_RUN_DIR "/run/xrl"
int xrl_instance_daemon_lock(const struct xrl_instance *in, char *err, size_t errlen);

/*
 * The pin root is usable: bpffs visible here, XRL_PIN_ROOT a directory of
 * root's that no one else can write (create: made 0700 when missing).
 * 0, -ENOENT when missing (err empty), or a refusal with the reason in err.
 */
int xrl_pin_root_ready(bool create, char *err, size_t errlen);
/* Mount bpffs at /sys/fs/bpf when it is missing (not where it is only hidden). 0 or -errno. */
int xrl_bpffs_ensure(void);
/* Number of interfaces recorded in the instance. */
int xrl_iface_count(const struct xrl_maps *m);
/* 1 to 64 letters, digits, '-' or '_'. */
int xrl_valid_instance(const char *s);

#endif /* XRL_INSTANCE_H */
