// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The library's one instance API (user/lib/xrl_instance.h) on real bpffs
 * pins (an instance of this test's own, xtestPID, with the maps of the
 * loaded test object): what each lock mode lets through, the timeout and
 * non-blocking forms, the checks of the maps (not attached, no interface,
 * another map pinned since, a bucket table of another format), refused directories, and the daemon's
 * one-per-instance lock. Every failure must say why in the caller's buffer.
 * Needs root (bpffs).
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "xrl_testlib.h"
#include "xrl_instance.h"
#include "xrl_test.skel.h"

/* what the tests wait for a lock: bounded, so that a lock left held fails them, not hangs them */
#define WAIT 1000

static struct xrl_tl tl;
static char name[64], dir[256];

static struct xrl_instance inst(void)
{
	return (struct xrl_instance){ .name = name, .pin_dir = dir, .lock_fd = -1 };
}

static void pin_maps(void)
{
	char path[512];
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		int fd = bpf_map__fd(bpf_object__find_map_by_name(tl.skel->obj, xrl_map_names[i]));

		snprintf(path, sizeof(path), "%s/%s", dir, xrl_map_names[i]);
		assert_int_equal(bpf_obj_pin(fd, path), 0);
	}
}

static int setup(void **state)
{
	(void)state;
	snprintf(name, sizeof(name), "xtest%d", (int)getpid());
	snprintf(dir, sizeof(dir), "%s/%s", XRL_PIN_ROOT, name);
	if (xrl_bpffs_ensure() || xrl_tl_open(&tl, 1024, 0))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	struct xrl_instance in = inst();

	(void)state;
	xrl_instance_unpin(&in);
	xrl_tl_close(&tl);
	return 0;
}

/* Nothing there: every mode says "not attached" and how to attach; nothing is created. */
static void test_not_attached(void **state)
{
	enum xrl_lock_mode modes[] = { XRL_LOCK_NONE, XRL_LOCK_SHARED, XRL_LOCK_EXCLUSIVE };
	struct xrl_instance in = inst();
	char err[XRL_INSTANCE_ERRLEN], want[256];
	struct xrl_maps m;
	size_t i;

	(void)state;
	snprintf(want, sizeof(want), "instance '%s' is not attached: run 'xrl --instance %s attach IFACE' first",
		 name, name);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(xrl_instance_open(&in, modes[i], WAIT, 0, &m, err, sizeof(err)),
				 -ENOENT);
		assert_string_equal(err, want);
		assert_int_equal(in.lock_fd, -1);
	}
	assert_int_not_equal(access(dir, F_OK), 0);
}

/*
 * A writer's lock (made with XRL_OPEN_CREATE, maps not opened) keeps
 * readers and writers out: not at all (timeout 0) and bounded waits fail
 * with -EBUSY and say who to look for; readers share. Released, a reader
 * gets in.
 */
static void test_lock_modes(void **state)
{
	struct xrl_instance w = inst(), r1 = inst(), r2 = inst();
	char err[XRL_INSTANCE_ERRLEN];
	struct xrl_maps m;
	struct stat st;

	(void)state;
	assert_int_equal(xrl_instance_open(&w, XRL_LOCK_EXCLUSIVE, WAIT, XRL_OPEN_CREATE,
					   NULL, err, sizeof(err)), 0);
	assert_true(w.lock_fd >= 0);
	assert_int_equal(lstat(dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700);

	assert_int_equal(xrl_instance_open(&r1, XRL_LOCK_SHARED, 0, 0, NULL, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "has been locked by a writer for over 0 ms"));
	assert_non_null(strstr(err, dir));
	assert_int_equal(r1.lock_fd, -1);
	assert_int_equal(xrl_instance_open(&r1, XRL_LOCK_EXCLUSIVE, 50, 0, NULL, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "for over 50 ms"));
	/* no lock asked: the maps are looked at, and there are none yet */
	assert_int_equal(xrl_instance_open(&r1, XRL_LOCK_NONE, 0, 0, &m, err, sizeof(err)), -ENOENT);

	xrl_instance_close(&w, NULL);
	assert_int_equal(w.lock_fd, -1);
	assert_int_equal(xrl_instance_open(&r1, XRL_LOCK_SHARED, 0, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(xrl_instance_open(&r2, XRL_LOCK_SHARED, 0, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(xrl_instance_open(&w, XRL_LOCK_EXCLUSIVE, 0, 0, NULL, err, sizeof(err)), -EBUSY);
	xrl_instance_close(&r1, NULL);
	xrl_instance_close(&r2, NULL);
	assert_int_equal(xrl_instance_open(&w, XRL_LOCK_EXCLUSIVE, 0, 0, NULL, err, sizeof(err)), 0);
	xrl_instance_close(&w, NULL);
}

/*
 * A rule change's lock (XRL_LOCK_RULES) keeps other rule changes out and
 * lets readers in: a reader never waits for a change (a change does not
 * hold the instance exclusive). Attach and detach (exclusive) wait for it,
 * and it for them. The lock is a file of XRL_RUN_DIR, nothing in bpffs.
 */
static void test_lock_rules(void **state)
{
	struct xrl_instance w = inst(), c = inst(), r = inst();
	char err[XRL_INSTANCE_ERRLEN], path[512];
	struct stat st;

	(void)state;
	assert_int_equal(xrl_instance_open(&w, XRL_LOCK_RULES, 0, XRL_OPEN_CREATE, NULL, err,
					   sizeof(err)), 0);
	assert_true(w.lock_fd >= 0 && w.rules_fd >= 0);
	snprintf(path, sizeof(path), "%s/%s.rules.lock", XRL_RUN_DIR, name);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600);
	/* readers get in at once */
	assert_int_equal(xrl_instance_open(&r, XRL_LOCK_SHARED, 0, 0, NULL, err, sizeof(err)), 0);
	xrl_instance_close(&r, NULL);
	/* another change waits, and holds nothing while it does */
	assert_int_equal(xrl_instance_open(&c, XRL_LOCK_RULES, 50, 0, NULL, err, sizeof(err)), -EBUSY);
	assert_non_null(strstr(err, "locked by another rule change for over 50 ms"));
	assert_non_null(strstr(err, path));
	assert_int_equal(c.lock_fd, -1);
	assert_int_equal(xrl_instance_open(&r, XRL_LOCK_EXCLUSIVE, 0, 0, NULL, err, sizeof(err)), -EBUSY);
	xrl_instance_close(&w, NULL);
	assert_int_equal(w.lock_fd, -1);
	assert_int_equal(w.rules_fd, -1);
	/* released: the next change gets in; an exclusive holder keeps it out */
	assert_int_equal(xrl_instance_open(&c, XRL_LOCK_RULES, 0, 0, NULL, err, sizeof(err)), 0);
	xrl_instance_close(&c, NULL);
	assert_int_equal(xrl_instance_open(&r, XRL_LOCK_EXCLUSIVE, 0, 0, NULL, err, sizeof(err)), 0);
	assert_int_equal(xrl_instance_open(&c, XRL_LOCK_RULES, 0, 0, NULL, err, sizeof(err)), -EBUSY);
	xrl_instance_close(&r, NULL);
	/* nothing of the lock in the instance's directory: an unpin removes it whole */
	xrl_instance_unpin(&r);
	assert_int_equal(lstat(dir, &st), -1);
	assert_int_equal(mkdir(dir, 0700), 0);   /* as the tests after this one find it */
	unlink(path);
}

/* The maps: no interface recorded (-ENODEV unless XRL_OPEN_NO_IFACE), then one. */
static void test_maps_checked(void **state)
{
	struct xrl_instance in = inst();
	struct xrl_iface ifc = { .name = "xtest0" };
	char err[XRL_INSTANCE_ERRLEN], want[256];
	__u32 ifindex = 999998;
	struct xrl_maps m;

	(void)state;
	pin_maps();
	assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, 0, &m, err,
					   sizeof(err)), -ENODEV);
	snprintf(want, sizeof(want),
		 "instance '%s' is not attached to any interface: run 'xrl --instance %s attach IFACE' first",
		 name, name);
	assert_string_equal(err, want);
	assert_int_equal(in.lock_fd, -1);   /* nothing held after a failure */
	assert_int_equal(m.config, -1);

	assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, XRL_OPEN_NO_IFACE,
					   &m, err, sizeof(err)), 0);
	assert_true(in.lock_fd >= 0 && m.config >= 0);
	xrl_instance_close(&in, &m);
	assert_int_equal(in.lock_fd, -1);
	assert_int_equal(m.config, -1);

	assert_int_equal(bpf_map_update_elem(tl.maps.ifaces, &ifindex, &ifc, BPF_ANY), 0);
	assert_int_equal(xrl_iface_count(&tl.maps), 1);
	assert_int_equal(xrl_instance_open(&in, XRL_LOCK_EXCLUSIVE, 0, 0, &m, err, sizeof(err)), 0);
	xrl_instance_close(&in, &m);

	/* a table of another format (another build's set hash): refused, nothing held */
	{
		struct xrl_config cfg;

		assert_int_equal(xrl_read_config(&tl.maps, &cfg), 0);
		assert_int_equal(cfg.table_format, XRL_TABLE_FORMAT);
		cfg.table_format = XRL_TABLE_FORMAT - 1;   /* an instance of another table format */
		assert_int_equal(xrl_write_config(&tl.maps, &cfg), 0);
		assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, 0, &m, err, sizeof(err)),
				 -EPROTO);
		assert_non_null(strstr(err, "pinned by another build of xrl (its maps differ: xrl_buckets (table format))"));
		assert_non_null(strstr(err, "detach it everywhere and attach it again"));
		assert_int_equal(in.lock_fd, -1);
		assert_int_equal(m.config, -1);
		cfg.table_format = XRL_TABLE_FORMAT;
		assert_int_equal(xrl_write_config(&tl.maps, &cfg), 0);
		assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, 0, &m, err, sizeof(err)), 0);
		xrl_instance_close(&in, &m);
	}
	assert_int_equal(bpf_map_delete_elem(tl.maps.ifaces, &ifindex), 0);
}

/* Is the map held the one pinned? The same, another one pinned since, none. */
static void test_pinned_same(void **state)
{
	struct xrl_instance in = inst();
	char err[XRL_INSTANCE_ERRLEN], path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/xrl_config", dir);
	assert_int_equal(xrl_instance_pinned_same(&in, "xrl_config", tl.maps.config, err, sizeof(err)), 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(bpf_obj_pin(tl.maps.stats, path), 0);   /* another map there */
	assert_int_equal(xrl_instance_pinned_same(&in, "xrl_config", tl.maps.config, err, sizeof(err)),
			 -ESTALE);
	assert_non_null(strstr(err, "was detached and attached again"));
	assert_int_equal(unlink(path), 0);
	assert_int_equal(xrl_instance_pinned_same(&in, "xrl_config", tl.maps.config, err, sizeof(err)),
			 -ENOENT);
	assert_non_null(strstr(err, "is not attached: nothing is pinned at"));
	assert_non_null(strstr(err, path));
	assert_int_equal(bpf_obj_pin(tl.maps.config, path), 0);
}

_Static_assert(XRL_TABLE_FORMAT > 4, "the keyed set hash, the last-seen stamp and the LPM keys by generation parity are new table formats");

/*
 * The set hash's seed (xrl_config.hash_seed): made when the instance's
 * config is (xrl_config_init, from getrandom), the same through every
 * re-open of the pins, another one for another instance. An instance of a
 * build before the seed (its xrl_config 8 bytes shorter) is refused.
 */
static void test_seed_kept(void **state)
{
	struct xrl_instance in = inst();
	char err[XRL_INSTANCE_ERRLEN], path[512];
	__u64 seed = xrl_tl_seed(&tl);
	struct xrl_tl other;
	struct xrl_maps m;
	int i, fd;

	(void)state;
	assert_true(seed != 0);
	for (i = 0; i < 2; i++) {
		assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, XRL_OPEN_NO_IFACE, &m, err,
						   sizeof(err)), 0);
		assert_true(xrl_hash_seed(&m) == seed);
		xrl_instance_close(&in, &m);
	}
	assert_int_equal(xrl_tl_open(&other, 1024, 0), 0);
	assert_true(xrl_tl_seed(&other) != 0 && xrl_tl_seed(&other) != seed);
	xrl_tl_close(&other);
	assert_true(xrl_tl_seed(&tl) == seed);

	snprintf(path, sizeof(path), "%s/xrl_config", dir);
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "xrl_config", sizeof(__u32),
			    sizeof(struct xrl_config) - sizeof(__u64), 1, NULL);   /* no hash_seed */
	assert_true(fd >= 0);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(bpf_obj_pin(fd, path), 0);
	assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, XRL_OPEN_NO_IFACE, &m, err,
					   sizeof(err)), -EPROTO);
	assert_non_null(strstr(err, "pinned by another build of xrl (its maps differ: xrl_config)"));
	assert_int_equal(in.lock_fd, -1);
	assert_int_equal(unlink(path), 0);
	close(fd);
	assert_int_equal(bpf_obj_pin(tl.maps.config, path), 0);
	assert_int_equal(xrl_instance_open(&in, XRL_LOCK_SHARED, WAIT, XRL_OPEN_NO_IFACE, &m, err,
					   sizeof(err)), 0);
	assert_true(xrl_hash_seed(&m) == seed);
	xrl_instance_close(&in, &m);
}

/* A pin directory others could write is refused, whatever the lock mode, and nothing opened. */
static void test_refused_dir(void **state)
{
	enum xrl_lock_mode modes[] = { XRL_LOCK_SHARED, XRL_LOCK_EXCLUSIVE };
	struct xrl_instance in = inst();
	char err[XRL_INSTANCE_ERRLEN], want[1024];
	struct xrl_maps m;
	size_t i;

	(void)state;
	assert_int_equal(chmod(dir, 0777), 0);
	snprintf(want, sizeof(want),
		 "refusing %s: mode 0777 lets other users rename what is in it: 'chmod 0700 %s' and run again",
		 dir, dir);
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		assert_int_equal(xrl_instance_open(&in, modes[i], 0, XRL_OPEN_NO_IFACE, &m, err,
						   sizeof(err)), -EPERM);
		assert_string_equal(err, want);
		assert_int_equal(in.lock_fd, -1);
	}
	assert_int_equal(chmod(dir, 0700), 0);
}

/* One daemon per instance: the second is told the first one's PID. */
static void test_daemon_lock(void **state)
{
	struct xrl_instance in = inst();
	char err[XRL_INSTANCE_ERRLEN], want[1024], path[256];
	int fd;

	(void)state;
	snprintf(path, sizeof(path), "%s/%s.daemon.pid", XRL_RUN_DIR, name);
	fd = xrl_instance_daemon_lock(&in, err, sizeof(err));
	assert_true(fd >= 0);
	assert_int_equal(xrl_instance_daemon_lock(&in, err, sizeof(err)), -1);
	snprintf(want, sizeof(want),
		 "another xrl daemon (PID %d) serves instance '%s' (it holds %s): stop it first; one daemon per instance",
		 (int)getpid(), name, path);
	assert_string_equal(err, want);
	close(fd);
	fd = xrl_instance_daemon_lock(&in, err, sizeof(err));   /* released with its fd */
	assert_true(fd >= 0);
	close(fd);
	unlink(path);   /* this test's own file */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_not_attached),
		cmocka_unit_test(test_lock_modes),
		cmocka_unit_test(test_lock_rules),
		cmocka_unit_test(test_maps_checked),
		cmocka_unit_test(test_pinned_same),
		cmocka_unit_test(test_seed_kept),
		cmocka_unit_test(test_refused_dir),
		cmocka_unit_test(test_daemon_lock),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
