// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "xrl_maps.h"
#include "xrl_rule.h"
#include "xrl_table.h"
#include "xrl.skel.h"

const char *const xrl_map_names[] = {
#define XRL_MAP_NAME(field, sized) "xrl_" #field,
	XRL_MAPS(XRL_MAP_NAME)
#undef XRL_MAP_NAME
	NULL,
};

/* The bucket tables: sized at attach (--max-sources), only their entries may differ. */
static const bool map_sized[] = {
#define XRL_MAP_SIZED(field, sized) sized,
	XRL_MAPS(XRL_MAP_SIZED)
#undef XRL_MAP_SIZED
};

/* struct xrl_maps is its fds in XRL_MAPS order and nothing else */
#define XRL_MAP_ONE(field, sized) + 1
_Static_assert(sizeof(struct xrl_maps) == sizeof(int) * (0 XRL_MAPS(XRL_MAP_ONE)),
	       "struct xrl_maps holds one int per map of XRL_MAPS");
#undef XRL_MAP_ONE
/* and the program defines each of them (the skeleton has a member per map) */
#define XRL_MAP_IN_PROG(field, sized) \
	_Static_assert(sizeof(((struct xrl_bpf *)0)->maps.xrl_##field), "xrl_" #field " is a map of the program");
XRL_MAPS(XRL_MAP_IN_PROG)
#undef XRL_MAP_IN_PROG

static int *map_slot(struct xrl_maps *m, int i)
{
	return (int *)m + i;
}

int xrl_maps_from_obj(struct bpf_object *obj, struct xrl_maps *m)
{
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		struct bpf_map *map = bpf_object__find_map_by_name(obj, xrl_map_names[i]);

		if (!map)
			return -ENOENT;
		*map_slot(m, i) = bpf_map__fd(map);
	}
	return 0;
}

void xrl_maps_none(struct xrl_maps *m)
{
	int i;

	for (i = 0; xrl_map_names[i]; i++)
		*map_slot(m, i) = -1;
}

int xrl_maps_open_pinned(const char *dir, struct xrl_maps *m)
{
	char path[512];
	int i, err;

	xrl_maps_none(m);
	for (i = 0; xrl_map_names[i]; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, xrl_map_names[i]);
		*map_slot(m, i) = bpf_obj_get(path);
		if (*map_slot(m, i) < 0) {
			err = -errno;
			xrl_maps_close(m);
			return err;
		}
	}
	return 0;
}

int xrl_maps_layout_check(const struct xrl_maps *m, char *bad, size_t badlen)
{
	struct xrl_bpf *skel = xrl_bpf__open();
	int i, err = 0;

	if (!skel)
		return -errno;
	for (i = 0; xrl_map_names[i] && !err; i++) {
		const struct bpf_map *want = bpf_object__find_map_by_name(skel->obj, xrl_map_names[i]);
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		bool sized = map_sized[i];

		if (!want)
			continue;
		if (bpf_obj_get_info_by_fd(*map_slot((struct xrl_maps *)m, i), &info, &len)) {
			err = -errno;
			break;
		}
		if (info.type != (__u32)bpf_map__type(want) || info.key_size != bpf_map__key_size(want) ||
		    info.value_size != bpf_map__value_size(want) ||
		    (!sized && info.max_entries != bpf_map__max_entries(want))) {
			snprintf(bad, badlen, "%s", xrl_map_names[i]);
			err = -EPROTO;
		}
	}
	xrl_bpf__destroy(skel);
	return err;
}

void xrl_maps_close(struct xrl_maps *m)
{
	int i;

	for (i = 0; xrl_map_names[i]; i++) {
		if (*map_slot(m, i) >= 0)
			close(*map_slot(m, i));
		*map_slot(m, i) = -1;
	}
}

int xrl_read_config(const struct xrl_maps *m, struct xrl_config *out)
{
	__u32 k = 0;

	return bpf_map_lookup_elem(m->config, &k, out) ? -errno : 0;
}

/* 64 secret bits for a new instance's set hash: 0 or -errno. */
static int new_hash_seed(__u64 *seed)
{
	ssize_t n;

	do
		n = getrandom(seed, sizeof(*seed), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	return n == (ssize_t)sizeof(*seed) ? 0 : -EIO;
}

int xrl_config_init(const struct xrl_maps *m, __u32 malformed_policy)
{
	struct xrl_config cfg = { .malformed_policy = malformed_policy };
	int rc = new_hash_seed(&cfg.hash_seed);

	/* --syn-proxy: the cookies' key, 128 bits of its own */
	if (!rc)
		rc = new_hash_seed(&cfg.cookie_key[0]);
	if (!rc)
		rc = new_hash_seed(&cfg.cookie_key[1]);
	if (rc)
		return rc;
	cfg.tick_ns = xrl_coarse_tick_ns();
	cfg.rt_off_ns = xrl_rt_off_ns();
	cfg.sets_v4 = xrl_map_max_entries(m->buckets_v4);
	cfg.sets_v6 = xrl_map_max_entries(m->buckets_v6);
	cfg.table_format = XRL_TABLE_FORMAT;
	cfg.compiled_cpus = (__u32)xrl_cpus();
	cfg.compiled_tick_ns = (__u32)xrl_coarse_tick_ns();
	return xrl_write_config(m, &cfg);
}

int xrl_config_set_rt_off(const struct xrl_maps *m, __u64 rt_off_ns)
{
	struct xrl_config cfg;
	int rc = xrl_read_config(m, &cfg);

	if (rc)
		return rc;
	cfg.rt_off_ns = rt_off_ns;
	return xrl_write_config(m, &cfg);
}

__u64 xrl_hash_seed(const struct xrl_maps *m)
{
	struct xrl_config cfg;

	return xrl_read_config(m, &cfg) ? 0 : cfg.hash_seed;
}

int xrl_write_config(const struct xrl_maps *m, const struct xrl_config *cfg)
{
	__u32 k = 0;

	return bpf_map_update_elem(m->config, &k, cfg, BPF_ANY) ? -errno : 0;
}

/*
 * Readers (this, xrl_count_bucket_entries, xrl_top_read) take their buffers
 * from the heap, not from statics: the daemon's metrics thread reads while
 * its main thread applies rules. xrl_ruleset_apply keeps its statics: rule
 * changes are serialized by the instance lock.
 */
/* xrl_rule_defs with a half per generation; an instance pinned by an older xrl has one: -EPROTO. */
static int defs_layout_ok(const struct xrl_maps *m)
{
	return xrl_map_max_entries(m->rule_defs) == 2 * XRL_MAX_RULES ? 0 : -EPROTO;
}

int xrl_ruleset_read(const struct xrl_maps *m, struct xrl_rule_def *defs, __u32 *ids, int *n)
{
	struct xrl_rule_def *all = calloc(XRL_MAX_RULES, sizeof(*all));
	__u32 *keys = calloc(XRL_MAX_RULES, sizeof(*keys));
	__u32 count = 0, batch, id, base = 0, prev;
	struct xrl_config before, after;
	int err = 0, tries;

	if (!all || !keys) {
		err = -ENOMEM;
		goto out;
	}
	if ((err = defs_layout_ok(m)))
		goto out;
	/*
	 * The half of the generation in force (XRL_RULE_DEFS_SLOT). A writer
	 * only writes the other half; one that switched twice while this read
	 * may have rewritten this one: read again then.
	 */
	for (tries = 0; tries < 16; tries++) {
		if ((err = xrl_read_config(m, &before)))
			goto out;
		base = XRL_RULE_DEFS_SLOT(before.active_gen, 0);
		prev = base - 1;
		count = XRL_MAX_RULES;
		/* one syscall for the whole half, not one per rule id */
		if (bpf_map_lookup_batch(m->rule_defs, base ? &prev : NULL, &batch, keys, all, &count,
					 NULL) && errno != ENOENT) {
			err = -errno;
			goto out;
		}
		if ((err = xrl_read_config(m, &after)))
			goto out;
		if (after.active_gen == before.active_gen)
			break;
	}
	if (tries == 16) {
		err = -EAGAIN;
		goto out;
	}
	*n = 0;
	for (id = 0; id < count; id++) {
		if (!all[id].in_use)
			continue;
		defs[*n] = all[id];
		ids[*n] = keys[id] - base;
		(*n)++;
	}
out:
	free(all);
	free(keys);
	return err;
}

/*
 * A compiled prefix's LPM key in the trie of its family: the parity of the
 * generation it belongs to before the address (struct xrl_lpm_v4/v6).
 */
static void lpm_key(const struct xrl_compiled_prefix *p, __u32 gen, void *key, int *fd,
		    const struct xrl_maps *m)
{
	if (p->family == 4) {
		struct xrl_lpm_v4 *k = key;

		memset(k, 0, sizeof(*k));
		k->prefixlen = 32 + p->plen;
		k->gen = gen & 1u;
		memcpy(k->addr, p->addr, 4);
		if (m)
			*fd = m->rules_v4;
	} else {
		struct xrl_lpm_v6 *k = key;

		memset(k, 0, sizeof(*k));
		k->prefixlen = 32 + p->plen;
		k->gen = gen & 1u;
		memcpy(k->addr, p->addr, 16);
		if (m)
			*fd = m->rules_v6;
	}
}

/*
 * Write n entries (keys ksz, values vsz bytes apart) in one batched syscall;
 * one call per entry where the kernel has no batch for the map. 0 or -errno.
 */
static int update_many(int fd, const void *keys, const void *vals, __u32 n, size_t ksz,
		       size_t vsz)
{
	__u32 count = n, i;

	if (!n || !bpf_map_update_batch(fd, keys, vals, &count, NULL))
		return 0;
	for (i = 0; i < n; i++)
		if (bpf_map_update_elem(fd, (const char *)keys + i * ksz, (const char *)vals + i * vsz,
					BPF_ANY))
			return -errno;
	return 0;
}

/* Delete n keys (ksz bytes apart): batched, else one by one; a key already gone is no error. */
static int delete_many(int fd, const void *keys, __u32 n, size_t ksz)
{
	__u32 count = n, i;

	if (!n || !bpf_map_delete_batch(fd, keys, &count, NULL))
		return 0;
	for (i = 0; i < n; i++)
		if (bpf_map_delete_elem(fd, (const char *)keys + i * ksz) && errno != ENOENT)
			return -errno;
	return 0;
}

/*
 * Delete every LPM entry of parity par: one walk over the keys (never
 * restarted, so linear in the entries), then one batched delete. Clears
 * the spare parity when what it holds is not known. Every key has parity
 * 0 or 1: the maps of an instance of another table format are never
 * written (xrl_instance_maps refuses them; attach makes them afresh when
 * no interface is recorded).
 */
static int purge_parity(int fd, __u32 par)
{
	struct xrl_lpm_v6 key, next;
	struct xrl_lpm_v6 *drop = NULL, *grown;
	__u32 n = 0, cap = 0;
	void *prev = NULL;
	int err = 0;

	while (!bpf_map_get_next_key(fd, prev, &next)) {
		key = next;
		prev = &key;
		if (key.gen != par)
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 256;
			grown = realloc(drop, cap * sizeof(*drop));
			if (!grown) {
				free(drop);
				return -ENOMEM;
			}
			drop = grown;
		}
		drop[n++] = key;
	}
	if (errno != ENOENT)
		err = -errno;
	/* the v4 trie's keys are shorter: pack them so the batch reads them key_size apart */
	if (!err && n) {
		struct bpf_map_info info = { 0 };
		__u32 len = sizeof(info), i;

		if (bpf_obj_get_info_by_fd(fd, &info, &len))
			err = -errno;
		for (i = 0; !err && i < n; i++)
			memmove((char *)drop + (size_t)i * info.key_size, &drop[i], info.key_size);
		if (!err)
			err = delete_many(fd, drop, n, info.key_size);
	}
	free(drop);
	return err;
}

/* Zero the counters of rules ids[0..n): one batched write. */
static int zero_rule_stats(const struct xrl_maps *m, const __u32 *ids, __u32 n)
{
	int ncpu = libbpf_num_possible_cpus();
	struct xrl_rule_stats *z;
	int err;

	if (ncpu < 0)
		return ncpu;
	if (!n)
		return 0;
	z = calloc((size_t)n * ncpu, sizeof(*z));
	if (!z)
		return -ENOMEM;
	err = update_many(m->rule_stats, ids, z, n, sizeof(*ids), (size_t)ncpu * sizeof(*z));
	free(z);
	return err;
}

enum { ID_FREE, ID_KEPT, ID_RELEASED, ID_NEW };

/*
 * Generation gen's half of xrl_rule_defs (XRL_RULE_DEFS_SLOT) made want
 * (indexed by id, cleared where no rule is): with was (the half as it
 * holds now), only the ids whose definition differs; without, all of
 * them. One batched syscall; the half is not read by anyone until the
 * switch to gen.
 */
static int write_defs_half(const struct xrl_maps *m, __u32 gen, const struct xrl_rule_def *want,
			   const struct xrl_rule_def *was)
{
	static struct xrl_rule_def vals[XRL_MAX_RULES];
	static __u32 keys[XRL_MAX_RULES];
	__u32 count = 0, id, n;

	for (id = 0; id < XRL_MAX_RULES; id++) {
		if (was && !memcmp(&was[id], &want[id], sizeof(want[id])))
			continue;
		keys[count] = XRL_RULE_DEFS_SLOT(gen, id);
		vals[count++] = want[id];
	}
	if (!count)
		return 0;
	n = count;
	if (bpf_map_update_batch(m->rule_defs, keys, vals, &count, NULL))
		return -errno;
	return count == n ? 0 : -EIO;
}

/* The half of xrl_rule_defs of generation gen's parity into half[XRL_MAX_RULES], by id. */
static int read_defs_half(const struct xrl_maps *m, __u32 gen, struct xrl_rule_def *half)
{
	static __u32 keys[XRL_MAX_RULES];
	__u32 base = XRL_RULE_DEFS_SLOT(gen, 0), prev = base - 1, batch, count = XRL_MAX_RULES, id;

	if (bpf_map_lookup_batch(m->rule_defs, base ? &prev : NULL, &batch, keys, half, &count,
				 NULL) && errno != ENOENT)
		return -errno;
	if (count != XRL_MAX_RULES)
		return -EIO;
	for (id = 0; id < XRL_MAX_RULES; id++)
		if (keys[id] != base + id)
			return -EIO;
	return 0;
}

/* A rule and its place: rule sets sorted by xrl_rule_match_cmp, then by place. */
struct match_ord {
	const struct xrl_rule_def *d;
	int i;
};

static int match_ord_cmp(const void *pa, const void *pb)
{
	const struct match_ord *a = pa, *b = pb;
	int c = xrl_rule_match_cmp(a->d, b->d);

	return c ? c : a->i < b->i ? -1 : a->i > b->i;
}

/* defs[0..n) into ord, sorted by match. */
static void match_sort(const struct xrl_rule_def *defs, int n, struct match_ord *ord)
{
	int i;

	for (i = 0; i < n; i++) {
		ord[i].d = &defs[i];
		ord[i].i = i;
	}
	qsort(ord, (size_t)n, sizeof(*ord), match_ord_cmp);
}

/* The place of the rule of ord[0..n) with d's match, or -1. */
static int match_find(const struct match_ord *ord, int n, const struct xrl_rule_def *d)
{
	int lo = 0, hi = n, mid, c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = xrl_rule_match_cmp(ord[mid].d, d);
		if (!c)
			return ord[mid].i;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/*
 * A prefix whose rules a change touches: that of a rule added, removed or
 * changed between the set the spare parity holds and the next one. gone:
 * the spare parity's set has a rule there (its entry may have to go).
 */
struct touched {
	__u8 family, plen, gone;
	__u8 addr[16];
};

/* Prefix order, as xrl_ruleset_compile emits its entries (xrl_rule_prefix_cmp). */
static int prefix_order(__u8 fa, const __u8 *aa, __u8 pa, __u8 fb, const __u8 *ab, __u8 pb)
{
	int c;

	if (fa != fb)
		return fa < fb ? -1 : 1;
	if ((c = memcmp(aa, ab, 16)))
		return c;
	return pa < pb ? -1 : pa > pb;
}

static int touched_cmp(const void *pa, const void *pb)
{
	const struct touched *a = pa, *b = pb;

	return prefix_order(a->family, a->addr, a->plen, b->family, b->addr, b->plen);
}

/* Past this many touched prefixes a family's entries are all written (a set replaced). */
#define TOUCHED_MAX 64

/*
 * Does a touched prefix (t[0..nt), sorted) hold cp's? An entry holds the
 * rules of its prefix and of those that contain it, so one that no
 * touched prefix holds is the same in both sets. lens: bit L set when t
 * has a prefix of length L in cp's family, so only those lengths are
 * looked up.
 */
static bool entry_touched(const struct xrl_compiled_prefix *cp, const struct touched *t, int nt,
			  const __u64 *lens)
{
	struct touched k = { .family = cp->family };
	int l;

	for (l = 0; l <= cp->plen; l++) {
		if (!(lens[l / 64] & (1ULL << (l % 64))))
			continue;
		memset(k.addr, 0, sizeof(k.addr));
		memcpy(k.addr, cp->addr, (size_t)l / 8);
		if (l % 8)
			k.addr[l / 8] = cp->addr[l / 8] & (__u8)(0xff << (8 - l % 8));
		k.plen = (__u8)l;
		if (bsearch(&k, t, (size_t)nt, sizeof(*t), touched_cmp))
			return true;
	}
	return false;
}

/* Is p the prefix of an entry of cp[0..ncp) (in prefix order)? */
static bool has_entry(const struct xrl_compiled_prefix *cp, int ncp, const struct touched *p)
{
	int lo = 0, hi = ncp, mid, c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = prefix_order(cp[mid].family, cp[mid].addr, cp[mid].plen, p->family, p->addr, p->plen);
		if (!c)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * Generation gen's entries of family fam, cp[0..ncp): with t (the touched
 * prefixes, sorted; nt of them), write the entries a touched prefix holds
 * and delete the touched prefixes that hold no entry in the new set; without
 * (the parity was cleared, or too many touched), write them all. One
 * batch of each per trie. keys has room for ncp + nt, vals for ncp.
 */
static int write_family(const struct xrl_maps *m, int fam, __u32 gen,
			const struct xrl_compiled_prefix *cp, int ncp, const struct touched *t,
			int nt, bool all, void *keys, struct xrl_prefix_entry *vals)
{
	size_t ksz = fam == 4 ? sizeof(struct xrl_lpm_v4) : sizeof(struct xrl_lpm_v6);
	char *dk = (char *)keys + (size_t)ncp * ksz;   /* the deletes, after the updates */
	struct xrl_lpm_v6 k;
	__u64 lens[3] = { 0 };
	__u32 n = 0, nd = 0;
	int i, rc, fd = fam == 4 ? m->rules_v4 : m->rules_v6;

	for (i = 0; i < nt; i++)
		if (t[i].family == fam)
			lens[t[i].plen / 64] |= 1ULL << (t[i].plen % 64);
	for (i = 0; i < ncp; i++) {
		if (cp[i].family != fam || (!all && !entry_touched(&cp[i], t, nt, lens)))
			continue;
		lpm_key(&cp[i], gen, &k, &fd, m);
		memcpy((char *)keys + n * ksz, &k, ksz);
		vals[n++] = cp[i].entry;
	}
	for (i = 0; i < nt; i++) {
		struct xrl_compiled_prefix p = { .family = t[i].family, .plen = t[i].plen };

		if (t[i].family != fam || !t[i].gone || has_entry(cp, ncp, &t[i]))
			continue;
		memcpy(p.addr, t[i].addr, 16);
		lpm_key(&p, gen, &k, &fd, m);
		memcpy(dk + nd++ * ksz, &k, ksz);
	}
	if ((rc = update_many(fd, keys, vals, n, ksz, sizeof(*vals))))
		return rc;
	return delete_many(fd, dk, nd, ksz);
}

/* Longest prefix of each family in cp[0..ncp): the rule cache's granule word (XRL_RC_SHORT_*). */
static __u32 rc_short_of(const struct xrl_compiled_prefix *cp, int ncp)
{
	__u32 max4 = 0, max6 = 0;
	int i;

	for (i = 0; i < ncp; i++) {
		if (cp[i].family == 4 && cp[i].plen > max4)
			max4 = cp[i].plen;
		if (cp[i].family == 6 && cp[i].plen > max6)
			max6 = cp[i].plen;
	}
	return (32 - max4) | ((128 - max6) << 8);
}

/*
 * Make parity gen & 1 of the tries and of xrl_rule_defs hold the set half
 * (by id; cp[0..ncp) compiled). was: the half that parity holds now, its
 * entries being what it compiles to; NULL when not known (a change
 * stopped half-way in it), then the parity is cleared and written whole.
 * Otherwise only what differs is written: the definitions of the ids
 * whose rule differs, and the entries of the prefixes those rules are on
 * and of the prefixes inside them (all of them past TOUCHED_MAX such
 * prefixes: *wide then says so).
 */
static int write_parity(const struct xrl_maps *m, __u32 gen, const struct xrl_rule_def *half,
			const struct xrl_compiled_prefix *cp, int ncp, const struct xrl_rule_def *was,
			bool *wide)
{
	static struct touched t[2 * XRL_MAX_RULES];
	static struct xrl_lpm_v6 keys[3 * XRL_MAX_RULES];
	static struct xrl_prefix_entry vals[XRL_MAX_RULES];
	__u32 id;
	int nt = 0, i, j, rc;

	for (id = 0; was && id < XRL_MAX_RULES; id++) {
		if (!memcmp(&was[id], &half[id], sizeof(half[id])))
			continue;
		if (was[id].in_use) {
			t[nt].family = was[id].family;
			t[nt].plen = was[id].plen;
			t[nt].gone = 1;
			memcpy(t[nt++].addr, was[id].addr, 16);
		}
		if (half[id].in_use) {
			t[nt].family = half[id].family;
			t[nt].plen = half[id].plen;
			t[nt].gone = 0;
			memcpy(t[nt++].addr, half[id].addr, 16);
		}
	}
	/* sorted, one per prefix (gone if the set there now has a rule on it) */
	qsort(t, (size_t)nt, sizeof(*t), touched_cmp);
	for (i = 0, j = 0; i < nt; i++) {
		if (j && !touched_cmp(&t[j - 1], &t[i]))
			t[j - 1].gone |= t[i].gone;
		else
			t[j++] = t[i];
	}
	nt = j;
	*wide = !was || nt > TOUCHED_MAX;
	if (!was && ((rc = purge_parity(m->rules_v4, gen & 1)) ||
		     (rc = purge_parity(m->rules_v6, gen & 1))))
		return rc;
	if ((rc = write_family(m, 4, gen, cp, ncp, t, nt, *wide, keys, vals)) ||
	    (rc = write_family(m, 6, gen, cp, ncp, t, nt, *wide, keys, vals)))
		return rc;
	return write_defs_half(m, gen, half, was);
}

/*
 * Every step is at most O(n log n) in the rules, and the maps are written
 * with a few batched syscalls: the spare half of xrl_rule_defs read, a
 * config store marking the spare parity as being written, a batch per trie
 * of the entries that differ from what that parity holds (the set its half
 * of xrl_rule_defs describes), one of the definitions that differ, one for the
 * counters that start afresh, then the switch. After a change that stopped
 * half-way, or on a host whose CPU count or tick differs from those the
 * entries were compiled with, the spare parity is cleared with a walk and
 * written whole (and, after the switch, the other parity too).
 */
int xrl_ruleset_apply(const struct xrl_maps *m, const struct xrl_rule_def *in, int n,
		      char *err, size_t errlen)
{
	static struct xrl_rule_def cur[XRL_MAX_RULES], next[XRL_MAX_RULES];
	static struct xrl_rule_def half[XRL_MAX_RULES], was_half[XRL_MAX_RULES];
	static __u32 cur_ids[XRL_MAX_RULES], next_ids[XRL_MAX_RULES], fresh[XRL_MAX_RULES];
	static struct match_ord in_ord[XRL_MAX_RULES], cur_ord[XRL_MAX_RULES];
	static __u8 state[XRL_MAX_RULES];
	struct xrl_compiled_prefix *cp = NULL;
	struct xrl_config cfg;
	int ncur, ncp, i, j, k, rc, dup = -1;
	__u32 id, gen, nfresh = 0, free_at = 0, rel_at = 0;
	bool known, wide, host_same;

	if (n > XRL_MAX_RULES)
		return xrl_fail(err, errlen, "too many rules: at most %d", XRL_MAX_RULES), -EINVAL;
	/* a rule given twice: the first that repeats an earlier one (neighbours once sorted) */
	match_sort(in, n, in_ord);
	for (k = 1; k < n; k++)
		if (!xrl_rule_match_cmp(in_ord[k - 1].d, in_ord[k].d) && (dup < 0 || in_ord[k].i < dup))
			dup = in_ord[k].i;
	if (dup >= 0) {
		char t[XRL_MATCH_TEXT];

		xrl_rule_format_match(&in[dup], t, sizeof(t));
		return xrl_fail(err, errlen, "rule %s given twice", t), -EINVAL;
	}
	if (defs_layout_ok(m))
		return xrl_fail(err, errlen,
				"the instance was pinned by an older xrl (xrl_rule_defs has %u entries, not %u): detach it everywhere and attach it again",
				xrl_map_max_entries(m->rule_defs), 2 * XRL_MAX_RULES), -EPROTO;
	if ((rc = xrl_read_config(m, &cfg)) || (rc = xrl_ruleset_read(m, cur, cur_ids, &ncur)))
		return xrl_fail(err, errlen, "cannot read the instance's maps: %s", strerror(-rc));

	/*
	 * Ids and versions: a rule with the same prefix and match keeps its id
	 * and its version while its parameters stay the same. A rule whose
	 * parameters (or policy) change gets a new version, so new buckets, and
	 * its counters start afresh: its rows count what the rule as it is now
	 * did, not what it did as it was (a --shadow rule's would-drops).
	 */
	memset(state, ID_FREE, sizeof(state));
	for (j = 0; j < ncur; j++)
		state[cur_ids[j]] = ID_RELEASED;
	match_sort(cur, ncur, cur_ord);
	for (i = 0; i < n; i++) {
		next[i] = in[i];
		next[i].in_use = 1;
		next_ids[i] = XRL_MAX_RULES;
		j = match_find(cur_ord, ncur, &in[i]);
		if (j < 0)
			continue;
		next_ids[i] = cur_ids[j];
		state[cur_ids[j]] = ID_KEPT;
		if (xrl_rule_same_params(&in[i], &cur[j])) {
			next[i].version = cur[j].version;
		} else {
			next[i].version = ++cfg.next_version;
			fresh[nfresh++] = cur_ids[j];
		}
	}
	/* new rules: the lowest free id; ids released by this change come last */
	for (i = 0; i < n; i++) {
		if (next_ids[i] != XRL_MAX_RULES)
			continue;
		while (free_at < XRL_MAX_RULES && state[free_at] != ID_FREE)
			free_at++;
		while (free_at == XRL_MAX_RULES && rel_at < XRL_MAX_RULES && state[rel_at] != ID_RELEASED)
			rel_at++;
		id = free_at < XRL_MAX_RULES ? free_at : rel_at;
		if (id == XRL_MAX_RULES)
			return xrl_fail(err, errlen, "too many rules: at most %d", XRL_MAX_RULES), -EINVAL;
		next_ids[i] = id;
		state[id] = ID_NEW;
		next[i].version = ++cfg.next_version;
		fresh[nfresh++] = id;
	}

	if (xrl_ruleset_compile(next, next_ids, n, &cp, &ncp, err, errlen))
		return -EINVAL;   /* the rule set itself is refused (e.g. too many rules on a prefix) */

	/* a new or changed rule's counters start at zero, whoever had its id before */
	if ((rc = zero_rule_stats(m, fresh, nfresh)))
		goto sys_fail;

	/*
	 * the next generation in the spare parity: data path's entries,
	 * definitions and the rule cache's granule (xrl_config.rc_short, the
	 * bits past the longest prefix of each family); the live parity is not
	 * touched. From the store that marks it (spare_dirty) to the switch,
	 * what the spare parity holds is not known.
	 */
	gen = cfg.active_gen + 1;
	memset(half, 0, sizeof(half));
	for (i = 0; i < n; i++)
		half[next_ids[i]] = next[i];
	/*
	 * entries compiled on another CPU count or tick (a CPU hotplugged since)
	 * hold another total_batch or coarse flag: both parities are written whole
	 */
	host_same = cfg.compiled_cpus == (__u32)xrl_cpus() &&
		    cfg.compiled_tick_ns == (__u32)xrl_coarse_tick_ns();
	known = host_same && !cfg.spare_dirty && !read_defs_half(m, gen, was_half);
	cfg.spare_dirty = 1;
	cfg.rc_short[gen & 1] = rc_short_of(cp, ncp);
	if ((rc = xrl_write_config(m, &cfg)) ||
	    (rc = write_parity(m, gen, half, cp, ncp, known ? was_half : NULL, &wide)))
		goto sys_fail;
	/*
	 * the switch, of the data path's set and the operator's view together:
	 * one store, which also records that the parity left behind holds the
	 * old generation whole (spare_dirty 0), for the next change to start from
	 */
	cfg.active_gen = gen;
	cfg.spare_dirty = 0;
	cfg.compiled_cpus = (__u32)xrl_cpus();
	cfg.compiled_tick_ns = (__u32)xrl_coarse_tick_ns();
	cfg.rt_off_ns = xrl_rt_off_ns();   /* --algo windows: each rule change refreshes UTC's offset */
	if ((rc = xrl_write_config(m, &cfg)))
		goto sys_fail;
	/*
	 * A change that rewrote most of the set (a rule load): the parity left
	 * behind made the same, so that the next change writes only its own
	 * difference, not this one's again. Done: a failure or a kill here
	 * leaves the spare parity marked, for the next change to write whole.
	 */
	if (wide) {
		memset(was_half, 0, sizeof(was_half));
		for (i = 0; i < ncur; i++)
			was_half[cur_ids[i]] = cur[i];
		cfg.spare_dirty = 1;
		if (!xrl_write_config(m, &cfg) &&
		    !write_parity(m, gen - 1, half, cp, ncp, host_same ? was_half : NULL, &wide)) {
			cfg.spare_dirty = 0;
			xrl_write_config(m, &cfg);
		}
	}
	free(cp);
	return 0;
sys_fail:
	free(cp);
	return xrl_fail(err, errlen, "cannot update the rule maps: %s", strerror(-rc));
}

static int sum_percpu(int fd, __u32 key, void *out, size_t size)
{
	int ncpu = libbpf_num_possible_cpus(), c, w;
	__u64 *vals, *o = out;
	size_t words = size / 8;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, size);
	if (!vals)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, vals)) {
		free(vals);
		return -errno;
	}
	memset(out, 0, size);
	for (c = 0; c < ncpu; c++)
		for (w = 0; w < (int)words; w++)
			o[w] += vals[c * words + w];
	free(vals);
	return 0;
}

int xrl_read_global(const struct xrl_maps *m, struct xrl_global_stats *out)
{
	return sum_percpu(m->stats, 0, out, sizeof(*out));
}

int xrl_read_rule_stats(const struct xrl_maps *m, __u32 id, struct xrl_rule_stats *out)
{
	return sum_percpu(m->rule_stats, id, out, sizeof(*out));
}

/*
 * Every entry of every CPU of a per-CPU array in one syscall: entry e of
 * CPU c is (*out)[e * *ncpu + c], malloc'd. An array's keys come in index
 * order. 0 or -errno.
 */
static int percpu_array_read(int fd, __u32 entries, size_t vsz, void **out, int *ncpu)
{
	__u32 count = entries, batch, *keys;
	int n = libbpf_num_possible_cpus(), err = 0;
	void *all;

	if (n < 0)
		return n;
	/* on the heap: the metrics thread reads beside the daemon */
	all = calloc((size_t)n * entries, vsz);
	keys = calloc(entries, sizeof(*keys));
	if (!all || !keys)
		err = -ENOMEM;
	else if (bpf_map_lookup_batch(fd, NULL, &batch, keys, all, &count, NULL) && errno != ENOENT)
		err = -errno;
	free(keys);
	if (err) {
		free(all);
		return err;
	}
	*out = all;
	*ncpu = n;
	return 0;
}

int xrl_read_rule_stats_many(const struct xrl_maps *m, const __u32 *ids, int n,
			     struct xrl_rule_stats *out)
{
	struct xrl_rule_stats *all;
	int ncpu, i, c, err;

	err = percpu_array_read(m->rule_stats, XRL_MAX_RULES, sizeof(*all), (void **)&all, &ncpu);
	if (err)
		return err;
	for (i = 0; i < n; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		if (ids[i] >= XRL_MAX_RULES)
			continue;
		for (c = 0; c < ncpu; c++) {
			const struct xrl_rule_stats *v = &all[(size_t)ids[i] * ncpu + c];

			out[i].passed += v->passed;
			out[i].passed_bytes += v->passed_bytes;
			out[i].dropped += v->dropped;
			out[i].dropped_bytes += v->dropped_bytes;
			out[i].new_refused += v->new_refused;
			out[i].total_refused += v->total_refused;
			out[i].created += v->created;
			out[i].shadow_dropped += v->shadow_dropped;
			out[i].shadow_dropped_bytes += v->shadow_dropped_bytes;
			out[i].blocked += v->blocked;
			out[i].synack_sent += v->synack_sent;   /* --syn-proxy */
			out[i].proven += v->proven;
			out[i].bad_cookie += v->bad_cookie;
		}
	}
	free(all);
	return 0;
}

/* The family of a bucket table, told by its name (xrl_buckets_v4 or _v6): 4, 6, or 0: not one. */
static int table_family(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	if (!strcmp(info.name, "xrl_buckets_v4"))
		return 4;
	if (!strcmp(info.name, "xrl_buckets_v6"))
		return 6;
	return 0;
}

__u32 xrl_bucket_capacity(int fd)
{
	int fam = table_family(fd);

	return xrl_map_max_entries(fd) * (fam == 4 ? XRL_WAYS4 : fam == 6 ? XRL_WAYS6 : 0);
}

long xrl_count_bucket_entries(int fd)
{
	int fam = table_family(fd);
	__u32 nsets = xrl_map_max_entries(fd), i, w;
	size_t len = (size_t)nsets * (fam == 4 ? sizeof(struct xrl_set4) : sizeof(struct xrl_set6));
	const unsigned char *tab;
	long total = 0;

	if (!fam || !nsets)
		return -EINVAL;
	/* the table is MMAPABLE: read in place, no copy of its (up to GiBs of) sets */
	len = (len + (size_t)sysconf(_SC_PAGESIZE) - 1) / (size_t)sysconf(_SC_PAGESIZE) * (size_t)sysconf(_SC_PAGESIZE);
	tab = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (tab == MAP_FAILED)
		return -errno;
	for (i = 0; i < nsets; i++) {
		if (fam == 4) {
			const struct xrl_set4 *s4 = (const void *)(tab + (size_t)i * sizeof(*s4));

			for (w = 0; w < XRL_WAYS4; w++)
				total += xrl_key_live(s4->w[w].key);
		} else {
			const struct xrl_set6 *s6 = (const void *)(tab + (size_t)i * sizeof(*s6));

			for (w = 0; w < XRL_WAYS6; w++)
				total += xrl_key_live(s6->w[w].e.key);
		}
	}
	munmap((void *)tab, len);
	return total;
}

long xrl_count_sources(const struct xrl_maps *m)
{
	long v4 = xrl_count_bucket_entries(m->buckets_v4);
	long v6 = xrl_count_bucket_entries(m->buckets_v6);

	if (v4 < 0)
		return v4;
	if (v6 < 0)
		return v6;
	return v4 + v6;
}

unsigned long long xrl_map_memlock(int fd)
{
	char path[64], line[256];
	unsigned long long v = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "memlock: %llu", &v) == 1)
			break;
	fclose(f);
	return v;
}

__u32 xrl_map_max_entries(int fd)
{
	struct bpf_map_info info = { 0 };
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return 0;
	return info.max_entries;
}

static int top_cmp(const void *a, const void *b)
{
	const struct xrl_top_entry *x = a, *y = b;

	return x->dropped < y->dropped ? 1 : x->dropped > y->dropped ? -1 : 0;
}

int xrl_sketch_read(const struct xrl_maps *m, struct xrl_sketch_slot **out, int *ncpu)
{
	return percpu_array_read(m->drop_sketch, XRL_SKETCH_SLOTS, sizeof(**out), (void **)out, ncpu);
}

int xrl_top_read(const struct xrl_maps *m, struct xrl_top_entry **out, int *n)
{
	struct xrl_sketch_slot *all, *vals;
	struct xrl_top_entry *res;
	int ncpu, c, k, cnt = 0, err;
	__u32 slot;

	if ((err = xrl_sketch_read(m, &all, &ncpu)))
		return err;
	res = calloc((size_t)ncpu * XRL_SKETCH_SLOTS, sizeof(*res));
	if (!res) {
		free(all);
		return -ENOMEM;
	}
	for (slot = 0; slot < XRL_SKETCH_SLOTS; slot++) {
		int first = cnt;

		vals = &all[(size_t)slot * ncpu];
		/* a key lands in the same slot on every CPU: merge within the slot */
		for (c = 0; c < ncpu; c++) {
			if (!vals[c].total)
				continue;
			for (k = first; k < cnt; k++)
				if (!memcmp(&res[k].key, &vals[c].key, sizeof(vals[c].key)))
					break;
			if (k == cnt) {
				res[cnt].key = vals[c].key;
				cnt++;
			}
			res[k].dropped += vals[c].total;
			if (vals[c].last_ns > res[k].last_ns)
				res[k].last_ns = vals[c].last_ns;
		}
	}
	qsort(res, (size_t)cnt, sizeof(*res), top_cmp);
	free(all);
	*out = res;
	*n = cnt;
	return 0;
}

__u64 xrl_source_passed(const struct xrl_maps *m, const struct xrl_bucket_key *key)
{
	__u32 h, idx, w;
	__u64 want = xrl_table_key(key, xrl_hash_seed(m), &h);

	if (key->family == 4) {
		struct xrl_set4 s4;

		idx = xrl_set_index(h, xrl_map_max_entries(m->buckets_v4));
		if (bpf_map_lookup_elem(m->buckets_v4, &idx, &s4))
			return 0;
		for (w = 0; w < XRL_WAYS4; w++)
			if (xrl_key_match(s4.w[w].key, want))
				return s4.w[w].st.passed;
	} else {
		struct xrl_set6 s6;

		idx = xrl_set_index(h, xrl_map_max_entries(m->buckets_v6));
		if (bpf_map_lookup_elem(m->buckets_v6, &idx, &s6))
			return 0;
		for (w = 0; w < XRL_WAYS6; w++)
			if (xrl_key_match(s6.w[w].e.key, want) &&
			    !memcmp(s6.w[w].addr, key->addr, sizeof(s6.w[w].addr)))
				return s6.w[w].e.st.passed;
	}
	return 0;
}

int xrl_map_read_all(int fd, void *keys, void *vals, size_t ksz, size_t vsz, int max)
{
	__u32 batch, count;
	void *in = NULL;
	int n = 0, err;

	do {
		count = max - n < 4096 ? (__u32)(max - n) : 4096;
		if (!count)
			break;
		err = bpf_map_lookup_batch(fd, in, &batch, (char *)keys + n * ksz,
					   (char *)vals + n * vsz, &count, NULL);
		if (err && errno != ENOENT)
			return -errno;
		n += count;
		in = &batch;
	} while (!err);
	return n;
}

__u64 xrl_evicted(const struct xrl_global_stats *g, long live)
{
	return live >= 0 && g->sources_created > (__u64)live ? g->sources_created - (__u64)live : 0;
}

/*
 * One bucket table's live entries sorted into those of a rule in force at
 * its current version (counted per rule id in per_id) and the rest (stale).
 * cur_ver[id] is the version + 1 of the rule in force with that id, 0 for none.
 */
static int census_table(int fd, const __u64 *cur_ver, long *per_id, long *stale)
{
	int fam = table_family(fd);
	__u32 ways = fam == 4 ? XRL_WAYS4 : fam == 6 ? XRL_WAYS6 : 0;
	__u32 nsets = xrl_map_max_entries(fd), i, w;
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t len = (size_t)nsets * (fam == 4 ? sizeof(struct xrl_set4) : sizeof(struct xrl_set6));
	const unsigned char *tab;

	if (!ways || !nsets)
		return -EINVAL;
	len = (len + page - 1) / page * page;
	tab = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (tab == MAP_FAILED)
		return -errno;
	for (i = 0; i < nsets; i++) {
		for (w = 0; w < ways; w++) {
			__u64 k = fam == 4 ?
				((const struct xrl_set4 *)(const void *)tab)[i].w[w].key :
				((const struct xrl_set6 *)(const void *)tab)[i].w[w].e.key;
			__u32 id;

			if (!xrl_key_live(k))
				continue;
			id = xrl_key_rule(k);
			if (cur_ver[id] && xrl_key_current(k, (__u32)(cur_ver[id] - 1)))
				per_id[id]++;
			else
				(*stale)++;
		}
	}
	munmap((void *)tab, len);
	return 0;
}

int xrl_census_sources(const struct xrl_maps *m, const struct xrl_rule_def *defs, const __u32 *ids,
		       int n, long *per_rule, struct xrl_source_census *out)
{
	__u64 *cur_ver = calloc(XRL_MAX_RULES, sizeof(*cur_ver));
	long *per_id[2] = { calloc(XRL_MAX_RULES, sizeof(long)), calloc(XRL_MAX_RULES, sizeof(long)) };
	int i, err = -ENOMEM;

	memset(out, 0, sizeof(*out));
	if (!cur_ver || !per_id[0] || !per_id[1])
		goto out;
	for (i = 0; i < n; i++)
		if (ids[i] < XRL_MAX_RULES)
			cur_ver[ids[i]] = (__u64)defs[i].version + 1;
	if ((err = census_table(m->buckets_v4, cur_ver, per_id[0], &out->stale)) ||
	    (err = census_table(m->buckets_v6, cur_ver, per_id[1], &out->stale)))
		goto out;
	for (i = 0; i < XRL_MAX_RULES; i++) {
		out->tracked_v4 += per_id[0][i];
		out->tracked_v6 += per_id[1][i];
	}
	out->tracked = out->tracked_v4 + out->tracked_v6;
	for (i = 0; per_rule && i < n; i++)
		per_rule[i] = ids[i] < XRL_MAX_RULES ? per_id[0][ids[i]] + per_id[1][ids[i]] : 0;
out:
	free(cur_ver);
	free(per_id[0]);
	free(per_id[1]);
	return err;
}
