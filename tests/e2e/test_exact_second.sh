#!/usr/bin/env bash
# The literature's case at the exact second, in real time over a veth pair:
# a rule of 5/s with a burst of 10 (a jiffy-clock rule), one source sends 20
# frames at once, then 10 more exactly 1.000 s (+1 ms) after its first
# frame: 10 and 5 pass. The jiffy clock alone lags by one to two ticks (4-8
# ms at HZ=250) and would pass 4; the data path re-reads the exact clock
# where its lag decides a packet after a pause.
# A Python sender (raw AF_PACKET in the namespace) records each frame's
# CLOCK_REALTIME before its send; the root end's capture (after XDP, the
# same clock) records what passed. An attempt is conclusive when the second
# burst's first send is at least 1.000 s after the first passed frame's
# capture (XDP judged that frame before its capture, the second burst after
# its send: at least 1 s apart, so 5 tokens are due) and its last capture
# under 1.15 s after the first send (no sixth token due), and the capture
# holds as many passed frames as the rule's counter says XDP passed (a
# capture that lost one would count it as refused). Up to 3 attempts.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INST=exs$$

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd netsniff-ng
xrlt_require_bpf
xrlt_init
xrlt_setup_pair
xrlt_on_cleanup "$XRL --instance $INST detach $XRLT_ROOT_IF >/dev/null 2>&1"
"$XRL" --instance "$INST" attach "$XRLT_ROOT_IF" --mode native >/dev/null || xrlt_fail "attach failed"

# send SRC LOG: 20 frames, then 10 at the first frame's send + 1.001 s; "BURST T_NS" per frame
send() {
	timeout -k 2 10 ip netns exec "$XRLT_NS" /usr/bin/python3 - "$XRLT_NS_IF" "$XRLT_DST_MAC" \
		"$XRLT_DST_IP" "$1" >"$2" <<'EOF'
import socket, struct, sys, time
ifname, dmac, dip, src = sys.argv[1:5]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
smac = open('/sys/class/net/%s/address' % ifname).read().strip()
mac = lambda m: bytes(int(x, 16) for x in m.split(':'))
def csum(b):
	t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
	while t >> 16:
		t = (t & 0xffff) + (t >> 16)
	return ~t & 0xffff
def frame(seq):
	udp = struct.pack('!HHHH', 40000, 9, 8 + 8, 0) + b'XRLE' + struct.pack('!I', seq)
	ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), seq, 0x4000, 64, 17, 0,
			 socket.inet_aton(src), socket.inet_aton(dip))
	ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
	return mac(dmac) + mac(smac) + b'\x08\x00' + ip + udp
frames = [frame(i) for i in range(30)]
out = []
t0 = time.time_ns()
for i in range(20):
	out.append('1 %d' % time.time_ns())
	s.send(frames[i])
at = t0 + 1001000000
while time.time_ns() < at - 2000000:
	time.sleep(0.001)
while time.time_ns() < at:
	pass
for i in range(20, 30):
	out.append('2 %d' % time.time_ns())
	s.send(frames[i])
print('\n'.join(out))
EOF
}

# judge SENDLOG PCAP SRC: "inconclusive WHY" or "conclusive B1 B2" (frames of each burst passed)
judge() {
	/usr/bin/python3 - "$@" <<'EOF'
import socket, struct, sys
sendlog, pcap, src = sys.argv[1], sys.argv[2], socket.inet_aton(sys.argv[3])
sent = [tuple(map(int, l.split())) for l in open(sendlog) if l.strip()]
b1 = [t for b, t in sent if b == 1]
b2 = [t for b, t in sent if b == 2]
cap = []   # (burst, capture ns) of the source's passed frames
with open(pcap, 'rb') as f:
	ns = struct.unpack('<I', f.read(24)[:4])[0] == 0xa1b23c4d
	while True:
		h = f.read(16)
		if len(h) < 16:
			break
		sec, frac, incl, _ = struct.unpack('<IIII', h)
		d = f.read(incl)
		if len(d) < 50 or d[12:14] != b'\x08\x00' or d[26:30] != src or d[42:46] != b'XRLE':
			continue
		seq = struct.unpack('!I', d[46:50])[0]
		cap.append((1 if seq < 20 else 2, sec * 10**9 + (frac if ns else frac * 1000)))
if len(b1) != 20 or len(b2) != 10:
	print('inconclusive the sender did not finish'); sys.exit()
first = min((t for b, t in cap if b == 1), default=None)
if first is None:
	print('inconclusive no frame of the first burst passed'); sys.exit()
if b2[0] - first < 10**9:
	print('inconclusive the second burst left %.3f ms after the first capture, under 1 s' % ((b2[0] - first) / 1e6)); sys.exit()
last2 = max((t for b, t in cap if b == 2), default=b2[-1])
if last2 - b1[0] >= 1150000000:
	print('inconclusive the second burst was judged %.3f ms after the first send' % ((last2 - b1[0]) / 1e6)); sys.exit()
print('conclusive %d %d %.3f' % (sum(1 for b, t in cap if b == 1), sum(1 for b, t in cap if b == 2),
				 (b2[0] - first) / 1e6))
EOF
}

section "5/s burst 10: 20 frames at t = 0, 10 at t = 1.000 s"
result=
for a in 1 2 3; do
	src=198.18.$((100 + a)).7
	echo "$src/32 --rate 5/s --burst 10" >"$XRLT_TMP/rules"
	"$XRL" --instance "$INST" rule load "$XRLT_TMP/rules" >/dev/null || xrlt_fail "rule load failed"
	xrlt_capture_start "$XRLT_TMP/pass$a.pcap" "udp"
	send "$src" "$XRLT_TMP/send$a.log" || xrlt_fail "the sender failed"
	sleep 0.3
	xrlt_capture_stop
	result=$(judge "$XRLT_TMP/send$a.log" "$XRLT_TMP/pass$a.pcap" "$src")
	"$XRL" --instance "$INST" --json stats >"$XRLT_TMP/stats$a.json"
	xdp=$(xrlt_json_rule_field "$XRLT_TMP/stats$a.json" "$src/32" passed)
	xrlt_log "attempt $a: $result; the rule's counter: ${xdp:-?} passed"
	case $result in
	conclusive*)
		# the capture counts what passed per burst; the rule's counter is what XDP passed
		read -r _ n1 n2 _ <<<"$result"
		[ "${xdp:-x}" = $((n1 + n2)) ] && break
		result="inconclusive the capture holds $((n1 + n2)) passed frames, the rule's counter ${xdp:-none}"
		xrlt_log "attempt $a: $result"
		;;
	esac
done
case $result in
conclusive*)
	read -r _ n1 n2 gap <<<"$result"
	check "the first burst: 10 of 20 passed (got $n1)" "$n1 == 10"
	check "the second burst, $gap ms after the first passed frame: 5 of 10 passed (got $n2)" "$n2 == 5"
	;;
*) bad "no conclusive attempt in 3: $result" ;;
esac
xrlt_finish
