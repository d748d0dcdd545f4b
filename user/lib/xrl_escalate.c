// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Escalations: see xrl_escalate.h. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <bpf/bpf.h>

#include "xrl_escalate.h"

static void key_of(struct xrl_esc_key *k, int family, const void *addr)
{
	memset(k, 0, sizeof(*k));
	k->family = (__u32)family;
	memcpy(k->addr, addr, family == 4 ? 4 : 16);
}

int xrl_escalate_add(const struct xrl_maps *m, int family, const void *addr, __u64 now_ns,
		     __u64 duration_ns, const char *rule, __u32 refusals, __u32 rate)
{
	struct xrl_escalation e = { .since_ns = now_ns, .until_ns = now_ns + duration_ns,
				    .refusals = refusals, .rate = rate }, old;
	struct xrl_esc_key k;
	__u32 zero = 0, one = 1;

	if ((family != 4 && family != 6) || !addr || !rule)
		return -EINVAL;
	key_of(&k, family, addr);
	snprintf(e.rule, sizeof(e.rule), "%s", rule);
	/* a live escalation is extended: it keeps its start and its count */
	if (!bpf_map_lookup_elem(m->escalated, &k, &old) && (__s64)(old.until_ns - now_ns) > 0) {
		e.since_ns = old.since_ns;
		e.dropped = old.dropped;
	}
	if (bpf_map_update_elem(m->escalated, &k, &e, BPF_ANY))
		return -errno;
	/* only now does the data path look: the entry is there before the first lookup */
	return bpf_map_update_elem(m->esc_on, &zero, &one, BPF_ANY) ? -errno : 0;
}

int xrl_escalate_read(const struct xrl_maps *m, __u64 now_ns, struct xrl_esc_key *keys,
		      struct xrl_escalation *vals, int max)
{
	int n = xrl_map_read_all(m->escalated, keys, vals, sizeof(keys[0]), sizeof(vals[0]), max),
	    i, k = 0;

	for (i = 0; i < n; i++) {
		if ((__s64)(vals[i].until_ns - now_ns) <= 0)
			continue;
		keys[k] = keys[i];
		vals[k] = vals[i];
		k++;
	}
	return n < 0 ? n : k;
}

int xrl_escalate_del(const struct xrl_maps *m, const struct xrl_esc_key *key)
{
	return bpf_map_delete_elem(m->escalated, key) ? -errno : 0;
}

void xrl_escalate_reason(const struct xrl_escalation *e, char *buf, size_t len)
{
	snprintf(buf, len, "escalated by xrl http rule %.*s: %u refusals/s", XRL_ESC_RULE_LEN,
		 e->rule, e->refusals);
}
