// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Escalation's count: see xrl_http_escalate.h. */
#include <stdlib.h>
#include <string.h>

#include "xrl_http_escalate.h"

struct xrl_http_esc *xrl_http_esc_new(__u64 seed)
{
	struct xrl_http_esc *e = calloc(1, sizeof(*e));

	if (!e)
		return NULL;
	pthread_mutex_init(&e->lock, NULL);
	e->seed = seed | 1;
	return e;
}

void xrl_http_esc_free(struct xrl_http_esc *e)
{
	if (!e)
		return;
	pthread_mutex_destroy(&e->lock);
	free(e);
}

static __u32 slot_of(const struct xrl_http_esc *e, int rule, const __u8 a[16])
{
	__u64 h = e->seed ^ ((__u64)(__u32)rule * 0x9e3779b97f4a7c15ull);
	int i;

	for (i = 0; i < 16; i++) {
		h ^= a[i];
		h *= 0x100000001b3ull;
	}
	h ^= h >> 29;
	return (__u32)(h % XRL_HTTP_ESC_SLOTS);
}

int xrl_http_esc_refused(struct xrl_http_esc *e, int rule, __u32 rate,
			 const struct xrl_http_addr *a, __u64 now_ns, __u32 *count)
{
	struct xrl_http_esc_slot *s;
	int up = 0;

	pthread_mutex_lock(&e->lock);
	s = &e->s[slot_of(e, rule, a->a)];
	if (s->rule != (__u32)rule + 1 || memcmp(s->a, a->a, 16) ||
	    now_ns - s->start_ns >= 1000000000ull) {
		/* a new window (or another key's slot, forgotten) */
		memcpy(s->a, a->a, 16);
		s->rule = (__u32)rule + 1;
		s->count = 0;
		s->start_ns = now_ns;
	}
	s->count++;
	if (s->count > rate) {
		*count = s->count;
		up = 1;
		s->count = 0;
		s->start_ns = now_ns;
	}
	pthread_mutex_unlock(&e->lock);
	return up;
}
