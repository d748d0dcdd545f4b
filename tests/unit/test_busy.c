// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Host tests of busy clients' pure decisions (bpf/xrl_busy.h): which
 * segments count as established, which sources are recorded, which
 * addresses belong to a recorded source, what a SYN drop does to a slot
 * (a marked source keeps it), what an ACK writes and how seldom, which
 * socket states prove a handshake, what is written after the look (only
 * while the slot still holds the source), and what a reader makes of a slot.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <string.h>
#include <arpa/inet.h>
#include <cmocka.h>

#include "xrl_busy.h"

#define MS 1000000ULL
#define S  1000000000ULL

static struct xrl_bucket_key key4(__u32 rule, const char *a)
{
	struct xrl_bucket_key k = { .rule_id = rule, .family = 4 };

	inet_pton(AF_INET, a, k.addr);
	return k;
}

static struct xrl_busy_slot slot_of(struct xrl_bucket_key k, __u32 per, __u64 syn)
{
	struct xrl_busy_slot s;

	memset(&s, 0, sizeof(s));
	s.key = k;
	s.per_len = per;
	s.syn_ns = syn;
	return s;
}

static void test_established(void **state)
{
	(void)state;
	assert_true(xrl_busy_established(0x10));          /* ACK */
	assert_true(xrl_busy_established(0x18));          /* PSH ACK */
	assert_true(xrl_busy_established(0x11));          /* FIN ACK */
	assert_false(xrl_busy_established(0x02));         /* SYN */
	assert_false(xrl_busy_established(0x12));         /* SYN ACK */
	assert_false(xrl_busy_established(0x14));         /* RST ACK */
	assert_false(xrl_busy_established(0x04));         /* RST */
	assert_false(xrl_busy_established(0x00));
}

static void test_recordable(void **state)
{
	(void)state;
	assert_true(xrl_busy_recordable(4, 32));
	assert_false(xrl_busy_recordable(4, 24));
	assert_true(xrl_busy_recordable(6, 64));
	assert_true(xrl_busy_recordable(6, 128));
	assert_false(xrl_busy_recordable(6, 48));
}

static void test_match(void **state)
{
	struct xrl_bucket_key k6 = { .rule_id = 1, .family = 6 };
	struct xrl_busy_slot s = slot_of(key4(1, "10.1.1.1"), 32, 5 * S), s6;
	__u32 a[4] = { 0 }, b[4];

	(void)state;
	inet_pton(AF_INET, "10.1.1.1", a);
	assert_true(xrl_busy_match(&s, 4, a));
	assert_false(xrl_busy_match(&s, 6, a));           /* another family */
	inet_pton(AF_INET, "10.1.1.2", a);
	assert_false(xrl_busy_match(&s, 4, a));
	s.syn_ns = 0;                                     /* a free slot holds nothing */
	inet_pton(AF_INET, "10.1.1.1", a);
	assert_false(xrl_busy_match(&s, 4, a));
	/* IPv6 /64: any address of the /64 is the source; the index is the same too */
	inet_pton(AF_INET6, "2001:db8:1:2::", k6.addr);
	s6 = slot_of(k6, 64, 5 * S);
	inet_pton(AF_INET6, "2001:db8:1:2::99", b);
	assert_true(xrl_busy_match(&s6, 6, b));
	assert_int_equal(xrl_busy_index(6, b, 7), xrl_busy_index(6, k6.addr, 7));
	inet_pton(AF_INET6, "2001:db8:1:3::99", b);
	assert_false(xrl_busy_match(&s6, 6, b));
	/* the index is keyed: four seeds do not all give one slot */
	inet_pton(AF_INET, "10.1.1.1", a);
	assert_false(xrl_busy_index(4, a, 1) == xrl_busy_index(4, a, 2) &&
		     xrl_busy_index(4, a, 2) == xrl_busy_index(4, a, 3) &&
		     xrl_busy_index(4, a, 3) == xrl_busy_index(4, a, 4));
}

static void test_syn_drop(void **state)
{
	struct xrl_bucket_key me = key4(1, "10.1.1.1"), other = key4(1, "10.5.0.9");
	struct xrl_busy_slot s = slot_of(me, 32, 0);

	(void)state;
	s.key.family = 0;
	assert_int_equal(xrl_busy_on_syn_drop(&s, &me, 10 * S), XRL_BUSY_TAKE);   /* free */
	s = slot_of(me, 32, 10 * S);
	assert_int_equal(xrl_busy_on_syn_drop(&s, &me, 10 * S + 99 * MS), XRL_BUSY_NOTHING);
	assert_int_equal(xrl_busy_on_syn_drop(&s, &me, 10 * S + 100 * MS), XRL_BUSY_TOUCH);
	/* another source takes an unmarked one's slot, and a sighted one's (bare ACKs hold nothing) ... */
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 10 * S + 1), XRL_BUSY_TAKE);
	s.seen_ns = 10 * S;
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 10 * S + 1), XRL_BUSY_TAKE);
	/* ... not a proven one's, within the window of its record and its proof */
	s.proven_ns = 10 * S;
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 10 * S + 1), XRL_BUSY_KEEP);
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 20 * S - 1), XRL_BUSY_KEEP);
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 20 * S), XRL_BUSY_TAKE);
	/* the same address under another rule is another source */
	other = key4(2, "10.1.1.1");
	s.proven_ns = 0;
	assert_int_equal(xrl_busy_on_syn_drop(&s, &other, 10 * S + 1), XRL_BUSY_TAKE);
}

static void test_ack(void **state)
{
	struct xrl_busy_slot s = slot_of(key4(1, "10.1.1.1"), 32, 10 * S);
	__u32 a[4] = { 0 }, o[4] = { 0 };

	(void)state;
	inet_pton(AF_INET, "10.1.1.1", a);
	inet_pton(AF_INET, "10.1.1.2", o);
	assert_int_equal(xrl_busy_on_ack(&s, 4, o, 10 * S), XRL_BUSY_ACK_NONE);
	assert_int_equal(xrl_busy_on_ack(&s, 4, a, 10 * S), XRL_BUSY_ACK_SEEN | XRL_BUSY_ACK_LOOK);
	s.seen_ns = s.tried_ns = 10 * S;
	/* a stamp at most every 100 ms, the kernel asked as seldom */
	assert_int_equal(xrl_busy_on_ack(&s, 4, a, 10 * S + 99 * MS), XRL_BUSY_ACK_NONE);
	assert_int_equal(xrl_busy_on_ack(&s, 4, a, 10 * S + 100 * MS),
			 XRL_BUSY_ACK_SEEN | XRL_BUSY_ACK_LOOK);
	/* proven lately: no look */
	s.proven_ns = 10 * S + 50 * MS;
	assert_int_equal(xrl_busy_on_ack(&s, 4, a, 10 * S + 120 * MS), XRL_BUSY_ACK_SEEN);
	/* a record older than the window marks nothing */
	assert_int_equal(xrl_busy_on_ack(&s, 4, a, 20 * S), XRL_BUSY_ACK_NONE);
}

static void test_states(void **state)
{
	(void)state;
	assert_true(xrl_busy_completed_state(XRL_TCP_ESTABLISHED));
	assert_true(xrl_busy_completed_state(XRL_TCP_TIME_WAIT));
	assert_true(xrl_busy_completed_state(XRL_TCP_CLOSE_WAIT));
	assert_true(xrl_busy_completed_state(XRL_TCP_CLOSING));
	assert_false(xrl_busy_completed_state(XRL_TCP_SYN_SENT));
	assert_false(xrl_busy_completed_state(XRL_TCP_SYN_RECV));
	assert_false(xrl_busy_completed_state(XRL_TCP_LISTEN));
	assert_false(xrl_busy_completed_state(XRL_TCP_NEW_SYN_RECV));   /* a request socket */
	assert_false(xrl_busy_completed_state(-1));                     /* no socket */
	assert_false(xrl_busy_completed_state(0));
}

/*
 * After the look: the stamps are written only while the slot still holds
 * the segment's source. A spoofed source's drop that took the slot while
 * the kernel was asked must not get the real client's proof.
 */
static void test_after_look(void **state)
{
	struct xrl_bucket_key real = key4(1, "10.1.1.1");
	struct xrl_busy_slot s = slot_of(real, 32, 10 * S);
	__u32 a[4] = { 0 };
	int w;

	(void)state;
	inet_pton(AF_INET, "10.1.1.1", a);
	w = xrl_busy_on_ack(&s, 4, a, 10 * S);
	assert_int_equal(w, XRL_BUSY_ACK_SEEN | XRL_BUSY_ACK_LOOK);
	/* the slot unchanged: a connection proves, a request socket or none only sights */
	assert_int_equal(xrl_busy_after_look(&s, 4, a, w, XRL_TCP_ESTABLISHED),
			 XRL_BUSY_ACK_SEEN | XRL_BUSY_ACK_PROVE);
	assert_int_equal(xrl_busy_after_look(&s, 4, a, w, XRL_TCP_NEW_SYN_RECV), XRL_BUSY_ACK_SEEN);
	assert_int_equal(xrl_busy_after_look(&s, 4, a, w, -1), XRL_BUSY_ACK_SEEN);
	/* no look asked: no proof, whatever the state */
	assert_int_equal(xrl_busy_after_look(&s, 4, a, XRL_BUSY_ACK_SEEN, XRL_TCP_ESTABLISHED),
			 XRL_BUSY_ACK_SEEN);
	/* during the look a spoofed source's SYN drop takes the slot (XRL_BUSY_TAKE) */
	assert_int_equal(xrl_busy_on_syn_drop(&s, &(struct xrl_bucket_key){ 0 }, 10 * S), XRL_BUSY_TAKE);
	s = slot_of(key4(1, "203.0.113.9"), 32, 10 * S + 1);
	assert_int_equal(xrl_busy_after_look(&s, 4, a, w, XRL_TCP_ESTABLISHED), XRL_BUSY_ACK_NONE);
	/* or the slot is freed */
	s = slot_of(real, 32, 0);
	assert_int_equal(xrl_busy_after_look(&s, 4, a, w, XRL_TCP_ESTABLISHED), XRL_BUSY_ACK_NONE);
}

static void test_mark(void **state)
{
	struct xrl_busy_slot s = slot_of(key4(1, "10.1.1.1"), 32, 10 * S);

	(void)state;
	assert_int_equal(xrl_busy_mark(&s, 10 * S), XRL_BUSY_MARK_NONE);
	s.seen_ns = 10 * S;
	assert_int_equal(xrl_busy_mark(&s, 10 * S), XRL_BUSY_MARK_SEEN);
	s.proven_ns = 10 * S;
	assert_int_equal(xrl_busy_mark(&s, 20 * S - 1), XRL_BUSY_MARK_PROVEN);
	assert_int_equal(xrl_busy_mark(&s, 20 * S), XRL_BUSY_MARK_NONE);   /* the record's window */
	/* a stamp on a clock up to two ticks ahead (the exact one) is recent */
	assert_int_equal(xrl_busy_mark(&s, 10 * S - 4 * MS), XRL_BUSY_MARK_PROVEN);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_established),
		cmocka_unit_test(test_recordable),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_syn_drop),
		cmocka_unit_test(test_ack),
		cmocka_unit_test(test_states),
		cmocka_unit_test(test_after_look),
		cmocka_unit_test(test_mark),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
