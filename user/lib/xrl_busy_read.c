// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* Busy clients as the readers see them: see xrl_busy_read.h and bpf/xrl_busy.h. */
#include <errno.h>
#include <string.h>
#include <bpf/bpf.h>

#include "xrl_busy.h"
#include "xrl_busy_read.h"

int xrl_busy_read(const struct xrl_maps *m, const struct xrl_bucket_key *key,
		  struct xrl_busy_slot *out)
{
	__u32 idx = xrl_busy_index(key->family, key->addr, xrl_hash_seed(m));

	if (m->busy < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(m->busy, &idx, out))
		return -errno;
	if (!out->syn_ns || memcmp(&out->key, key, sizeof(*key)))
		return -ENOENT;
	return 0;
}

int xrl_busy_mark_of(const struct xrl_maps *m, const struct xrl_bucket_key *key, __u64 now)
{
	struct xrl_busy_slot s;

	if (xrl_busy_read(m, key, &s))
		return XRL_BUSY_MARK_NONE;
	return xrl_busy_mark(&s, now);
}

const char *xrl_busy_mark_text(int mark)
{
	switch (mark) {
	case XRL_BUSY_MARK_PROVEN:
		return "busy client (completes handshakes)";
	case XRL_BUSY_MARK_SEEN:
		return "busy client? (sends established-looking TCP; handshakes not proven)";
	default:
		return "";
	}
}

const char *xrl_busy_advice(int mark)
{
	switch (mark) {
	case XRL_BUSY_MARK_PROVEN:
		return "a real client reconnecting faster than the --syn rule allows (each dropped SYN "
		       "stalls it 1 s): raise the rule's --rate/--burst above its connections per "
		       "second, or allow its address with a rule of its own, or let it reuse "
		       "connections longer (nginx keepalive_requests)";
	case XRL_BUSY_MARK_SEEN:
		return "ACKs came from its address, which anyone can send: if xrl runs on the "
		       "server, its connections would prove it; check it before raising the "
		       "rule or allowing it";
	default:
		return NULL;
	}
}

const char *xrl_busy_mark_word(int mark)
{
	switch (mark) {
	case XRL_BUSY_MARK_PROVEN:
		return "proven";
	case XRL_BUSY_MARK_SEEN:
		return "seen";
	default:
		return NULL;
	}
}

int xrl_busy_json(json_t *o, int mark)
{
	const char *word = xrl_busy_mark_word(mark);

	if (!word)
		return 0;
	if (json_object_set_new(o, "busy_client", json_string(word)) ||
	    json_object_set_new(o, "state", json_string(xrl_busy_mark_text(mark))) ||
	    json_object_set_new(o, "advice", json_string(xrl_busy_advice(mark))))
		return -ENOMEM;
	return 0;
}
