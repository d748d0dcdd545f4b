#!/usr/bin/env bash
# A measurement, not a suite test (its TCP counts swing with the SYN retransmissions' timing
# against the flood: 29/14, 6/10, 20/3 of 40 in three runs): bench/total_share.sh, run by hand.
# --total shares itself among packets whether their source is new or
# already has a bucket, both kinds at once, over a veth pair:
#   TCP: a `--proto tcp --syn --total 1000/s` rule; a paced spoofed SYN
#        flood of new sources (3000/s, random sources of 198.18.128.0/17),
#        and at the same time 40 real TCP clients that connected before the
#        flood (a bucket each) and 40 that never did connect to a listener
#        behind XDP (a connect of 4 s each: the SYN and its retransmissions
#        at 1 and 3 s). Both kinds connect alike: neither gets fewer than
#        half of the other's connections plus a margin.
#   UDP (first, on an empty table): a `--proto udp --total 1000/s` rule;
#        10 established sources (a frame every 10 ms, in turn) and a flood
#        of new sources at 3000/s, counted per kind at a UDP socket behind
#        XDP: each kind's share of what it sent is within a factor of 2 of
#        the other's.
# The jiffy clock lags the exact one by one to two ticks; a cap taken on
# the exact clock by a new source's first packet and on the jiffy clock by
# a source with a bucket gave every token to the flood (established TCP
# clients 10-22 of 50, new ones 37-38 of 50).
# Bounded: every sender by count and by timeout(1).
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INST=tsh$$
SERVER=198.18.0.254

xrlt_counted_checks
xrlt_require_root
xrlt_require_bpf
xrlt_init
xrlt_setup_pair
# one /16 on both ends: the SYN-ACKs to the flood's sources stay on the veth
ip addr add "$SERVER/16" dev "$XRLT_ROOT_IF" || xrlt_fail "cannot address $XRLT_ROOT_IF"
for i in $(seq 10 49) $(seq 110 149); do
	ip -n "$XRLT_NS" addr add "198.18.0.$i/16" dev "$XRLT_NS_IF" || xrlt_fail "cannot add 198.18.0.$i"
done
ROOT_MAC=$(cat /sys/class/net/"$XRLT_ROOT_IF"/address)
xrlt_on_cleanup "$XRL --instance $INST detach $XRLT_ROOT_IF >/dev/null 2>&1"
"$XRL" --instance "$INST" attach "$XRLT_ROOT_IF" --mode native >/dev/null || xrlt_fail "attach failed"

# servers behind XDP in the root namespace: a TCP listener (accept, close) and a UDP counter
timeout -k 2 60 /usr/bin/python3 - "$SERVER" >"$XRLT_TMP/servers.log" 2>&1 <<'EOF' &
import socket, sys, threading, collections
t = socket.socket(); t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind((sys.argv[1], 8080)); t.listen(4096)
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.bind((sys.argv[1], 9999))
def acc():
	while True:
		c, _ = t.accept(); c.close()
threading.Thread(target=acc, daemon=True).start()
n = collections.Counter()
while True:
	d, (a, _) = u.recvfrom(64)
	if d == b'DUMP':
		print('known %d new %d' % (n['k'], n['n']), flush=True); continue
	n['k' if a.startswith('198.18.0.') else 'n'] += 1
EOF
xrlt_track $!

# flood PROTO SECS: spoofed frames of new sources from the namespace, 3000/s, at most 3000 x SECS;
# with udp also the established sources' frames (one every 10 ms in turn); prints "known N new N" sent
flood() {
	timeout -k 2 $(($2 + 5)) ip netns exec "$XRLT_NS" /usr/bin/python3 - "$XRLT_NS_IF" "$ROOT_MAC" \
		"$SERVER" "$1" "$2" <<'EOF'
import random, socket, struct, sys, time
ifname, dmac, dip, proto, secs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW); s.bind((ifname, 0))
smac = open('/sys/class/net/%s/address' % ifname).read().strip()
mac = lambda m: bytes(int(x, 16) for x in m.split(':'))
eth = mac(dmac) + mac(smac) + b'\x08\x00'
def csum(b):
	t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
	while t >> 16: t = (t & 0xffff) + (t >> 16)
	return ~t & 0xffff
def frame(src):
	sa, da = socket.inet_aton(src), socket.inet_aton(dip)
	if proto == 'tcp':
		l4 = struct.pack('!HHIIBBHHH', random.randint(1024, 65535), 8080, random.getrandbits(32), 0, 5 << 4, 0x02, 65535, 0, 0)
		c = csum(sa + da + struct.pack('!BBH', 0, 6, len(l4)) + l4)
		l4 = l4[:16] + struct.pack('!H', c) + l4[18:]; p = 6
	else:
		l4 = struct.pack('!HHHH', 40000, 9999, 12, 0) + b'XRLT'; p = 17
	ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(l4), 0, 0x4000, 64, p, 0, sa, da)
	return eth + ip[:10] + struct.pack('!H', csum(ip)) + ip[12:] + l4
rnd = random.Random(7 if proto == "tcp" else 8)   # each phase's flood new to the table
known = ['198.18.0.%d' % i for i in range(10, 20)]
t0 = time.monotonic(); i = kn = nw = 0
while i < 3000 * secs:
	at = t0 + i / 3000.0
	while time.monotonic() < at: pass
	s.send(frame('198.18.%d.%d' % (128 + rnd.randrange(127), 1 + rnd.randrange(254)))); nw += 1
	if proto == 'udp' and i % 30 == 0:
		s.send(frame(known[(i // 30) % 10])); kn += 1
	i += 1
print('known %d new %d' % (kn, nw))
EOF
}

# clients A B: connect from 198.18.0.A..B to the listener, 4 s each, all at once; prints how many connected
clients() {
	timeout -k 2 15 ip netns exec "$XRLT_NS" /usr/bin/python3 - "$SERVER" "$1" "$2" <<'EOF'
import socket, sys, threading
ok = []
def one(src):
	c = socket.socket(); c.settimeout(4.0)
	try:
		c.bind((src, 0)); c.connect((sys.argv[1], 8080)); ok.append(src)
	except OSError:
		pass
	c.close()
th = [threading.Thread(target=one, args=('198.18.0.%d' % i,)) for i in range(int(sys.argv[2]), int(sys.argv[3]) + 1)]
[t.start() for t in th]; [t.join() for t in th]
print(len(ok))
EOF
}

section "UDP: 10 established sources beside a flood of new ones, --total 1000/s"
echo "198.18.0.0/16 --proto udp --rate 1000/s --burst 1000 --total 1000/s --total-burst 100" >"$XRLT_TMP/rules"
"$XRL" --instance "$INST" rule load "$XRLT_TMP/rules" >/dev/null || xrlt_fail "rule load failed"
sleep 0.3
sent=$(flood udp 4)
got=$(timeout 5 ip netns exec "$XRLT_NS" /usr/bin/python3 -c "
import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(('198.18.0.1', 0))
s.sendto(b'DUMP', ('$SERVER', 9999))" && sleep 0.5 && tail -1 "$XRLT_TMP/servers.log")
xrlt_log "UDP: sent $sent; received $got"
"$XRL" --instance "$INST" --json stats >"$XRLT_TMP/stats_udp.json"
xrlt_log "UDP: rule $(jq -c '.rules[0] | {passed, dropped, total_refused, created}' "$XRLT_TMP/stats_udp.json" 2>/dev/null)"
read -r _ ks _ ns_ <<<"$sent"
read -r _ kr _ nr <<<"$got"
kr=$((kr - 0))
check "UDP: the established sources' share of the cap is within a factor of 2 of the flood's ($kr/$ks vs $nr/$ns_)" \
	"$ks > 0 && $ns_ > 0 && $nr > 0 && ($kr / $ks) >= ($nr / $ns_) / 2 && ($kr / $ks) <= 2 * ($nr / $ns_)"

section "TCP: 40 clients with a bucket and 40 new ones beside a spoofed SYN flood, --syn --total 1000/s"
echo "198.18.0.0/16 --proto tcp --syn --rate 100/s --burst 100 --total 1000/s --total-burst 100" >"$XRLT_TMP/rules"
"$XRL" --instance "$INST" rule load "$XRLT_TMP/rules" >/dev/null || xrlt_fail "rule load failed"
sleep 0.3
pre=$(clients 10 49)
check "before the flood, every established client connected (got $pre of 40)" "$pre == 40"
flood tcp 8 >"$XRLT_TMP/flood_tcp.log" &
fpid=$!
xrlt_track $fpid
sleep 1
clients 10 49 >"$XRLT_TMP/known.out" &
kp=$!
clients 110 149 >"$XRLT_TMP/new.out" &
np=$!
wait $kp $np
wait $fpid
known=$(cat "$XRLT_TMP/known.out")
new=$(cat "$XRLT_TMP/new.out")
xrlt_log "TCP: established clients connected $known of 40, new clients $new of 40 ($(cat "$XRLT_TMP/flood_tcp.log") sent)"
"$XRL" --instance "$INST" --json stats >"$XRLT_TMP/stats_tcp.json"
xrlt_log "TCP: rule $(jq -c '.rules[0] | {passed, dropped, total_refused, created}' "$XRLT_TMP/stats_tcp.json" 2>/dev/null)"
check "TCP: clients with a bucket connect about as often as new ones ($known vs $new of 40)" \
	"$known + 0 >= $new / 2 - 3 && $new + 0 >= $known / 2 - 3"

xrlt_finish
