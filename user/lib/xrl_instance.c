// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Instances: their pin directories, lock and maps (xrl_instance.h). Prints nothing. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>
#include <linux/magic.h>
#include <bpf/bpf.h>

#include "xrl_instance.h"

/* Is /sys/fs/bpf a bpffs in this mount namespace? */
static bool bpffs_here(void)
{
	struct statfs st;

	return statfs("/sys/fs/bpf", &st) == 0 && st.f_type == BPF_FS_MAGIC;
}

/*
 * Another mount namespace than init's (pid 1's), as 'ip netns exec' makes:
 * it remounts /sys, which hides the host's bpffs and every pin in it. false
 * when it cannot be told (pid 1's namespace unreadable: a sandbox, not root).
 */
static bool foreign_mount_ns(void)
{
	struct stat self, init;

	return stat("/proc/self/ns/mnt", &self) == 0 && stat("/proc/1/ns/mnt", &init) == 0 &&
	       (self.st_ino != init.st_ino || self.st_dev != init.st_dev);
}

/* The /run/netns name of this network namespace (as 'ip netns exec NAME' enters it), or NULL. */
static const char *named_netns(char *name, size_t len)
{
	struct stat self, st;
	struct dirent *de;
	const char *found = NULL;
	char path[512];
	DIR *d;

	if (stat("/proc/self/ns/net", &self) || !(d = opendir("/run/netns")))
		return NULL;
	while (!found && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/run/netns/%s", de->d_name);
		if (stat(path, &st) == 0 && st.st_ino == self.st_ino && st.st_dev == self.st_dev) {
			snprintf(name, len, "%s", de->d_name);
			found = name;
		}
	}
	closedir(d);
	return found;
}

/*
 * Mount bpffs when it is missing, except where the host's bpffs is only
 * hidden (another mount namespace than init's, or a named network namespace
 * entered with 'ip netns exec'): a bpffs mounted there would be a new, empty
 * one that goes with the namespace, so pins made in it would be lost. There
 * nothing is mounted and xrl_pin_root_ready says what to do.
 */
int xrl_bpffs_ensure(void)
{
	char ns[256];

	if (bpffs_here() || foreign_mount_ns() || named_netns(ns, sizeof(ns)))
		return 0;
	if (mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700"))
		return -errno;
	return 0;
}

/* Say why in err (when errno's text does not say it) and return err. */
static int refuse(char *err, size_t errlen, int code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int refuse(char *err, size_t errlen, int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return code;
}

/*
 * A directory xrl may use for pins: a directory (not a symlink), owned by
 * root and writable by no one else. bpffs is mounted 1777 (sticky), so
 * anyone can create XRL_PIN_ROOT before root does and, if it were theirs,
 * rename an instance's pins away; a root-owned directory in a sticky
 * directory cannot be renamed or removed by anyone else, and one root
 * alone can write holds only what root put there.
 */
static int dir_safe(const char *path, const struct stat *st, char *err, size_t errlen)
{
	if (S_ISLNK(st->st_mode))
		return refuse(err, errlen, -EPERM, "refusing %s: it is a symlink; xrl follows nothing in bpffs (remove it and run again)", path);
	if (!S_ISDIR(st->st_mode))
		return refuse(err, errlen, -EPERM, "refusing %s: it is not a directory (remove it and run again)", path);
	if (st->st_uid != 0)
		return refuse(err, errlen, -EPERM,
			      "refusing %s: owned by uid %u, not root (bpffs is writable by every user, so anyone could have made it): check what it holds, remove it and run again",
			      path, (unsigned)st->st_uid);
	if (st->st_mode & 022)
		return refuse(err, errlen, -EPERM,
			      "refusing %s: mode %04o lets other users rename what is in it: 'chmod 0700 %s' and run again",
			      path, (unsigned)(st->st_mode & 07777), path);
	return 0;
}

/* Check (create: make, 0700) one pin directory. 0, -ENOENT when missing, or a refusal. */
static int pin_dir_ready(const char *dir, bool create, char *err, size_t errlen)
{
	struct stat st;

	if (lstat(dir, &st)) {
		if (errno == EACCES)
			return refuse(err, errlen, -EACCES,
				      "permission denied: only root can use the pins in %s (run as root)",
				      XRL_PIN_ROOT);
		if (errno != ENOENT || !create)
			return -errno;
		if (mkdir(dir, 0700) && errno != EEXIST)
			return -errno;
		if (lstat(dir, &st))
			return -errno;
	}
	return dir_safe(dir, &st, err, errlen);
}

int xrl_pin_root_ready(bool create, char *err, size_t errlen)
{
	char ns[256];

	err[0] = 0;
	if (!bpffs_here())
		return refuse(err, errlen, -EMEDIUMTYPE,
			      "bpffs pins are not visible in this mount namespace (/sys/fs/bpf is not a bpffs here; 'ip netns exec' remounts /sys and hides them): run xrl in the host's mount namespace, e.g. 'nsenter --net=/run/netns/%s xrl ...' instead of 'ip netns exec %s xrl ...', or, in a mount namespace that lasts (a container), mount a bpffs there first ('mount -t bpf bpf /sys/fs/bpf') for instances of its own (one mounted under 'ip netns exec' goes with the command)",
			      named_netns(ns, sizeof(ns)) ? ns : "NAME", named_netns(ns, sizeof(ns)) ? ns : "NAME");
	if (create && geteuid() != 0)
		return refuse(err, errlen, -EACCES, "permission denied: attaching needs root (run as root)");
	return pin_dir_ready(XRL_PIN_ROOT, create, err, errlen);
}

/* The pin root, then the instance's directory. */
static int pin_dirs_ready(const char *dir, bool create, char *err, size_t errlen)
{
	int rc = xrl_pin_root_ready(create, err, errlen);

	return rc ? rc : pin_dir_ready(dir, create, err, errlen);
}

/* flock, waiting timeout_ms at most (XRL_WAIT_FOREVER: blocking): 0, -EBUSY or -errno. */
static int flock_wait(int fd, int how, int timeout_ms)
{
	int waited;

	if (timeout_ms < 0)
		return flock(fd, how) ? -errno : 0;
	for (waited = 0;; waited += 10) {
		struct timespec ts = { 0, 10 * 1000000L };

		if (flock(fd, how | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK)
			return -errno;
		if (waited >= timeout_ms)
			return -EBUSY;
		nanosleep(&ts, NULL);
	}
}

/*
 * Lock the pin directory. The holder of the lock may remove the directory
 * (detach of the last interface): a lock taken on a directory that is no
 * longer at the path locks nothing, so check after locking and, when
 * creating, start again on the new directory.
 */
static int lock_dir(struct xrl_instance *in, bool create, int how, int timeout_ms, char *err,
		    size_t errlen)
{
	int tries, rc;

	for (tries = 0; tries < 10; tries++) {
		struct stat held, now;

		if ((rc = pin_dirs_ready(in->pin_dir, create, err, errlen)))
			return rc;
		in->lock_fd = open(in->pin_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (in->lock_fd < 0)
			return -errno;
		if ((rc = flock_wait(in->lock_fd, how, timeout_ms))) {
			close(in->lock_fd);
			in->lock_fd = -1;
			return rc;
		}
		if (fstat(in->lock_fd, &held) == 0 && lstat(in->pin_dir, &now) == 0 &&
		    held.st_ino == now.st_ino && held.st_dev == now.st_dev)
			return 0;
		close(in->lock_fd);
		in->lock_fd = -1;
		if (!create)
			return -ENOENT;   /* removed while we waited: the instance is gone */
	}
	return -EAGAIN;
}

/* " --instance NAME" in the commands a message suggests, nothing for the default instance */
#define INSTANCE_OPT(in) (strcmp((in)->name, "default") ? " --instance " : ""), \
			 (strcmp((in)->name, "default") ? (in)->name : "")

static int not_attached(const struct xrl_instance *in, char *err, size_t errlen)
{
	return refuse(err, errlen, -ENOENT, "instance '%s' is not attached: run 'xrl%s%s attach IFACE' first",
		      in->name, INSTANCE_OPT(in));
}

int xrl_iface_count(const struct xrl_maps *m)
{
	__u32 key, next;
	void *prev = NULL;
	int n = 0;

	while (bpf_map_get_next_key(m->ifaces, prev, &next) == 0) {
		key = next;
		prev = &key;
		n++;
	}
	return n;
}

int xrl_instance_maps(const struct xrl_instance *in, unsigned flags, struct xrl_maps *m,
		      char *err, size_t errlen)
{
	int rc = xrl_maps_open_pinned(in->pin_dir, m);
	char bad[64];

	if (rc == -ENOENT)
		return not_attached(in, err, errlen);
	if (rc == -EPERM || rc == -EACCES)
		return refuse(err, errlen, rc, "cannot open %s: permission denied (run as root)",
			      in->pin_dir);
	if (rc)
		return refuse(err, errlen, rc, "cannot open the maps of instance '%s' in %s: %s",
			      in->name, in->pin_dir, strerror(-rc));
	if (!(flags & XRL_OPEN_ANY_LAYOUT) && xrl_maps_layout_check(m, bad, sizeof(bad)) == -EPROTO) {
		xrl_maps_close(m);
		return refuse(err, errlen, -EPROTO, XRL_OLD_PINS_MSG, bad);
	}
	if (!(flags & XRL_OPEN_ANY_LAYOUT)) {
		struct xrl_config cfg;

		if (xrl_read_config(m, &cfg) == 0 && xrl_iface_count(m) > 0 &&
		    cfg.table_format != XRL_TABLE_FORMAT) {
			xrl_maps_close(m);
			return refuse(err, errlen, -EPROTO, XRL_OLD_PINS_MSG, "xrl_buckets (table format)");
		}
	}
	if (!(flags & XRL_OPEN_NO_IFACE) && xrl_iface_count(m) == 0) {
		xrl_maps_close(m);
		return refuse(err, errlen, -ENODEV,
			      "instance '%s' is not attached to any interface: run 'xrl%s%s attach IFACE' first",
			      in->name, INSTANCE_OPT(in));
	}
	return 0;
}

/*
 * The rule writers' lock, XRL_RUN_DIR/NAME.rules.lock, taken while the
 * instance is held shared (so it is not detached meanwhile). Like the
 * daemon's pid file it is never removed: a lock file removed could let two
 * writers lock two different files. 0 or -errno with the reason in err.
 */
static int lock_rules(struct xrl_instance *in, int timeout_ms, char *err, size_t errlen)
{
	char path[256];
	int rc;

	snprintf(path, sizeof(path), "%s/%s.rules.lock", XRL_RUN_DIR, in->name);
	if (mkdir(XRL_RUN_DIR, 0755) && errno != EEXIST)
		return refuse(err, errlen, -errno, "cannot create %s for the rule writers' lock: %s",
			      XRL_RUN_DIR, strerror(errno));
	in->rules_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (in->rules_fd < 0)
		return refuse(err, errlen, -errno, "cannot open the rule writers' lock %s: %s", path,
			      strerror(errno));
	if ((rc = flock_wait(in->rules_fd, LOCK_EX, timeout_ms))) {
		close(in->rules_fd);
		in->rules_fd = -1;
		if (rc == -EBUSY)
			return refuse(err, errlen, rc,
				      "instance '%s' has been locked by another rule change for over %d ms (one that does not finish?): see who holds %s",
				      in->name, timeout_ms, path);
		return refuse(err, errlen, rc, "cannot lock %s: %s", path, strerror(-rc));
	}
	return 0;
}

int xrl_instance_open(struct xrl_instance *in, enum xrl_lock_mode lock, int timeout_ms,
		      unsigned flags, struct xrl_maps *m, char *err, size_t errlen)
{
	int rc;

	err[0] = 0;
	in->lock_fd = -1;
	in->rules_fd = -1;
	if (lock != XRL_LOCK_NONE) {
		rc = lock_dir(in, flags & XRL_OPEN_CREATE, lock == XRL_LOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH,
			      timeout_ms, err, errlen);
		if (!rc && lock == XRL_LOCK_RULES && (rc = lock_rules(in, timeout_ms, err, errlen))) {
			close(in->lock_fd);
			in->lock_fd = -1;
			return rc;
		}
		if (rc == -ENOENT)
			return not_attached(in, err, errlen);
		if (rc == -EBUSY)
			return refuse(err, errlen, rc,
				      "instance '%s' has been locked by a writer for over %d ms (a rule change that does not finish?): see who holds %s",
				      in->name, timeout_ms, in->pin_dir);
		if (rc && !err[0]) {
			if (rc == -EACCES || rc == -EPERM)
				return refuse(err, errlen, rc, "cannot lock %s: permission denied (run as root)",
					      in->pin_dir);
			return refuse(err, errlen, rc, "cannot lock %s: %s", in->pin_dir, strerror(-rc));
		}
		if (rc)
			return rc;
	} else {
		rc = xrl_pin_root_ready(false, err, errlen);
		if (rc && rc != -ENOENT && err[0])
			return rc;   /* bpffs hidden, pin root refused */
		err[0] = 0;
	}
	if (!m)
		return 0;
	rc = xrl_instance_maps(in, flags, m, err, errlen);
	if (rc)
		xrl_instance_close(in, NULL);
	return rc;
}

void xrl_instance_close(struct xrl_instance *in, struct xrl_maps *m)
{
	if (m)
		xrl_maps_close(m);
	if (in->lock_fd >= 0 && in->rules_fd >= 0)
		close(in->rules_fd);
	if (in->lock_fd >= 0)
		close(in->lock_fd);
	in->lock_fd = -1;
	in->rules_fd = -1;
}

void xrl_instance_unpin_maps(const struct xrl_instance *in)
{
	char path[512];
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", in->pin_dir, xrl_map_names[i]);
		unlink(path);
	}
}

void xrl_instance_unpin(const struct xrl_instance *in)
{
	xrl_instance_unpin_maps(in);
	rmdir(in->pin_dir);
	/*
	 * XRL_PIN_ROOT stays (0700, root's) even when no instance is left: gone,
	 * anyone could take the name before the next attach (which would then refuse it).
	 */
}

/* Kernel id of a map, or 0. */
static __u32 map_id(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

int xrl_instance_pinned_same(const struct xrl_instance *in, const char *map, int fd,
			     char *err, size_t errlen)
{
	char path[512];
	__u32 pinned, ours;
	int pfd;

	err[0] = 0;
	snprintf(path, sizeof(path), "%s/%s", in->pin_dir, map);
	pfd = bpf_obj_get(path);
	if (pfd < 0) {
		if (errno == ENOENT)
			return refuse(err, errlen, -ENOENT,
				      "instance '%s' is not attached: nothing is pinned at %s", in->name, path);
		return refuse(err, errlen, -errno, "cannot open %s: %s", path, strerror(errno));
	}
	pinned = map_id(pfd);
	ours = map_id(fd);
	close(pfd);
	if (pinned && ours && pinned != ours)
		return refuse(err, errlen, -ESTALE,
			      "instance '%s' was detached and attached again: the maps read are no longer the ones pinned in %s",
			      in->name, in->pin_dir);
	return 0;
}

int xrl_valid_instance(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 64)
		return 0;
	for (i = 0; i < n; i++)
		if (!(s[i] == '-' || s[i] == '_' || (s[i] >= '0' && s[i] <= '9') ||
		      (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
			return 0;
	return 1;
}

int xrl_instance_daemon_lock(const struct xrl_instance *in, char *err, size_t errlen)
{
	char path[256], pid[32] = "";
	int fd, n;

	if (mkdir(XRL_RUN_DIR, 0755) && errno != EEXIST)
		return refuse(err, errlen, -1, "cannot create %s for the daemon's lock: %s",
			      XRL_RUN_DIR, strerror(errno));
	snprintf(path, sizeof(path), "%s/%s.daemon.pid", XRL_RUN_DIR, in->name);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return refuse(err, errlen, -1, "cannot open the daemon's lock %s: %s", path,
			      strerror(errno));
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		int e = errno;

		n = e == EWOULDBLOCK ? (int)pread(fd, pid, sizeof(pid) - 1, 0) : -1;
		close(fd);
		if (n > 0) {
			pid[n] = 0;
			pid[strcspn(pid, "\n")] = 0;
		}
		if (e == EWOULDBLOCK)
			return refuse(err, errlen, -1,
				      "another xrl daemon (PID %s) serves instance '%s' (it holds %s): stop it first; one daemon per instance",
				      n > 0 && pid[0] ? pid : "unknown", in->name, path);
		return refuse(err, errlen, -1, "cannot lock %s: %s", path, strerror(e));
	}
	n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, pid, n, 0) != n) {
		int e = errno;

		close(fd);
		return refuse(err, errlen, -1, "cannot write %s: %s", path, strerror(e));
	}
	return fd;
}
