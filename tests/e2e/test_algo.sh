#!/usr/bin/env bash
# --algo over a veth pair, windows aligned to real UTC seconds: one paced
# sender per algorithm (a frame every 5 ms for 0.5 s) started just before a
# real second boundary; the root end's capture (after XDP: what passed,
# stamped with CLOCK_REALTIME) shows, per algorithm:
#   fixed-window 10/s   10 passed before the boundary and 10 right after:
#                       twice the limit within a quarter of a second
#   sliding-log 10/s    10 in all (never more than 10 in any second)
#   sliding-window 10/s 10 before the boundary, then no more in any 1-s
#                       span than 10 + 10 x (time into the window)
# and the literature's boundary burst (10/s: 12 frames at 0.9 s, 12 at
# 1.05 s, 12 at 1.95 s of real UTC), what passed checked frame by frame
# against each algorithm simulated on the recorded send times.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

XRL=${XRL:-$XRLT_REPO/build/xrl}
case $XRL in */*) [ -e "$XRL" ] && XRL=$(cd "$(dirname "$XRL")" && pwd)/$(basename "$XRL") ;; esac
INST=alg$$

xrlt_counted_checks
xrlt_require_root
xrlt_require_cmd trafgen netsniff-ng perl
xrlt_require_bpf
xrlt_init
xrlt_setup_pair
xrlt_on_cleanup "$XRL --instance $INST detach $XRLT_ROOT_IF >/dev/null 2>&1"
"$XRL" --instance "$INST" attach "$XRLT_ROOT_IF" --mode native >/dev/null || xrlt_fail "attach failed"

# Every frame of a pcap: "SRC SEC NSEC" (CLOCK_REALTIME, ns resolution).
pcap_times() {
	perl - "$1" <<'EOF'
use strict; use warnings;
my $f = shift; open(my $fh, '<:raw', $f) or die "open $f: $!\n";
read($fh, my $gh, 24) == 24 or exit 0;
my $ns = unpack('V', $gh) == 0xa1b23c4d;
while (read($fh, my $ph, 16) == 16) {
	my ($sec, $frac, $incl) = unpack('VVV', $ph);
	read($fh, my $d, $incl) == $incl or last;
	next if length($d) < 34 || unpack('n', substr($d, 12, 2)) != 0x0800;
	printf("%s %d %09d\n", join('.', unpack('C4', substr($d, 26, 4))), $sec, $ns ? $frac : $frac * 1000);
}
EOF
}

# Sleep until the realtime clock is FRAC (e.g. 0.80) past a whole second.
sleep_until_frac() {
	local now
	now=$(date +%s.%N)
	sleep "$(awk -v n="$now" -v f="$1" 'BEGIN { x = n - int(n); d = f - x; if (d < 0.05) d += 1; printf "%.3f", d }')"
}

# One attempt with sources 198.18.ATTEMPT.{10,20,30}: 0 when the senders
# straddled a second boundary with at least 10 frames on each side (else
# the run proves nothing: another attempt), the checks' inputs in $XRLT_TMP/times.
attempt() {
	local a=$1 src
	cat >"$XRLT_TMP/rules" <<EOF
198.18.$a.10/32 --rate 10/s --algo fixed-window
198.18.$a.20/32 --rate 10/s --algo sliding-log
198.18.$a.30/32 --rate 10/s --algo sliding-window
EOF
	"$XRL" --instance "$INST" rule load "$XRLT_TMP/rules" >/dev/null || xrlt_fail "rule load failed"
	for src in 10 20 30; do
		xrlt_trafgen_cfg "$XRLT_TMP/s$src.cfg" "198.18.$a.$src"
	done
	xrlt_capture_start "$XRLT_TMP/pass$a.pcap"
	sleep_until_frac 0.80
	for src in 10 20 30; do
		xrlt_paced_bg "$XRLT_TMP/s$src.cfg" 100 5ms "$XRLT_TMP/s$src.log"
		eval "pid$src=$XRLT_LAST_PID"
	done
	# shellcheck disable=SC2154  # set by eval
	for p in "$pid10" "$pid20" "$pid30"; do xrlt_wait "$p"; done
	sleep 0.2
	xrlt_capture_stop
	pcap_times "$XRLT_TMP/pass$a.pcap" >"$XRLT_TMP/times"
	# the fixed-window source's first passed frame: at least 50 ms (10 frames) before a boundary
	awk -v s="198.18.$a.10" '$1 == s { print $3; exit }' "$XRLT_TMP/times" |
		awk '{ exit !($1 + 0 <= 950000000 && $1 + 0 >= 500000000) }'
}

# REDIS=cluster (tests/e2e/test_algo_cluster.sh): only the fleet cases below, against a Redis Cluster
if [ "${REDIS:-single}" != cluster ]; then
section "a burst straddling a real UTC second boundary"
for a in 1 2 3; do
	if attempt "$a"; then
		break
	fi
	xrlt_log "attempt $a: the senders did not start 50..500 ms before a second boundary (load): again"
	[ "$a" = 3 ] && xrlt_fail "three attempts missed the second boundary: the machine is too loaded"
done
T=$XRLT_TMP/times

# per source: the passed frames' UTC seconds and times into them
fw=$(awk -v s="198.18.$a.10" '$1 == s' "$T")
first=$(echo "$fw" | head -1 | awk '{ print $2 }')
n_before=$(echo "$fw" | awk -v b="$first" '$2 == b' | wc -l)
n_after=$(echo "$fw" | awk -v b="$first" '$2 == b + 1' | wc -l)
n_all=$(echo "$fw" | grep -c .)
check "fixed-window 10/s: 10 passed in the UTC second before the boundary ($n_before)" "$n_before == 10"
check "fixed-window 10/s: 10 passed in the UTC second after it ($n_after)" "$n_after == 10"
check "fixed-window 10/s: 20 passed in all ($n_all)" "$n_all == 20"
span=$(echo "$fw" | awk 'NR == 1 { t0 = $2 + $3 / 1e9 } { t = $2 + $3 / 1e9 } END { printf "%.3f", t - t0 }')
check "fixed-window 10/s: the 20 passed within 0.25 s ($span s): twice the limit across the boundary" "$span < 0.25"
after0=$(echo "$fw" | awk -v b="$first" '$2 == b + 1 { printf "%.3f", $3 / 1e9; exit }')
check "fixed-window: the first frame after the boundary passed at once (${after0:-none} s into the second): the window is UTC's" "${after0:-9} < 0.05"

sl=$(awk -v s="198.18.$a.20" '$1 == s' "$T")
n_sl=$(echo "$sl" | grep -c .)
check "sliding-log 10/s: 10 passed over the 0.5 s burst ($n_sl)" "$n_sl == 10"

sw=$(awk -v s="198.18.$a.30" '$1 == s' "$T")
sw_before=$(echo "$sw" | awk -v b="$first" '$2 == b' | wc -l)
check "sliding-window 10/s: 10 passed before the boundary ($sw_before)" "$sw_before == 10"
# every passed frame as the end of a 1-s span: count in (t - 1, t] <= 10 + 10 x pos
worst=$(echo "$sw" | awk '{ t[NR] = $2 + $3 / 1e9; pos[NR] = $3 / 1e9 }
	END { w = -99; for (i = 1; i <= NR; i++) { c = 0; for (j = 1; j <= i; j++) if (t[j] > t[i] - 1) c++;
		x = c - (10 + int(10 * pos[i])); if (x > w) w = x }; print w }')
check "sliding-window 10/s: no 1-s span over 10 + 10 x its end's time into the window (worst margin $worst)" "$worst <= 0"
n_sw=$(echo "$sw" | grep -c .)
check "sliding-window 10/s: fewer passed than the fixed window ($n_sw < 20)" "$n_sw < 20"

section "stats and metrics name the algorithm"
"$XRL" --instance "$INST" --json stats >"$XRLT_TMP/stats.json"
got=$(jq -r --arg p "198.18.$a.10/32" '.rules[] | select(.prefix == $p) | "\(.algo) \(.passed)"' "$XRLT_TMP/stats.json")
[ "$got" = "fixed-window 20" ] && ok "stats --json: fixed-window, 20 passed" || bad "stats --json for 198.18.$a.10/32: $got"

# ---------------------------------------------------------------- the literature's boundary burst, per host, on real UTC
# 10 per 1-s window, per algorithm, one source each (IPv4 and IPv6); a Python sender in the
# namespace (raw AF_PACKET on the veth end) waits for the next real UTC
# second S (a bounded wait: under 1.3 s) and sends three bursts of 12 frames
# per source (interleaved, each frame numbered): B1 at S - 0.10 s, B2 at
# S + 0.05 s (the literature's 10 at 0.9 s and 10 at 1.05 s), B3 at S + 0.95 s
# (over a window after B1), each followed by a frame of a source no rule
# matches (passed: its capture time bounds when XDP judged the burst). It
# records each frame's CLOCK_REALTIME just before its send; the root end's
# capture (after XDP) says which passed. What each algorithm must pass is
# derived from the recorded send times by simulating it (the data path's
# arithmetic, bpf/xrl_algo.h), never assumed; a run where the sender missed
# the shape (B1 in the second before B2 and B3, B2 in the first 0.1 s, B3 a
# window after B1), or a frame lies closer to where its decision flips than
# XDP's lag behind the sends (bounded by the next passed frame's capture)
# plus 2 ms, proves nothing and is repeated (3 attempts).

# utc_burst_send LOG SRC...: the bursts, from inside the namespace; "SRC SEQ BURST T_NS" per frame.
utc_burst_send() {
	local log=$1
	shift
	timeout -k 2 10 ip netns exec "$XRLT_NS" /usr/bin/python3 - "$XRLT_NS_IF" "$XRLT_DST_MAC" \
		"$XRLT_DST_IP" "${XRLT_DST_IP6:-2001:db8:ffff::fe}" "$@" >"$log" <<'EOF'
import socket, struct, sys, time
ifname, dmac, dip, dip6, srcs = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
smac = open('/sys/class/net/%s/address' % ifname).read().strip()
mac = lambda m: bytes(int(x, 16) for x in m.split(':'))
def csum(b):
	t = sum(struct.unpack('!%dH' % (len(b) // 2), b))
	while t >> 16:
		t = (t & 0xffff) + (t >> 16)
	return ~t & 0xffff
def frame(src, seq):
	pl = b'XRLU' + struct.pack('!I', seq) + bytes(10)
	udp = struct.pack('!HHHH', 40000, 9, 8 + len(pl), 0) + pl
	if ':' in src:   # IPv6 (a UDP checksum is required: over the pseudo-header)
		sa, da = socket.inet_pton(socket.AF_INET6, src), socket.inet_pton(socket.AF_INET6, dip6)
		c = csum(sa + da + struct.pack('!IxxxB', len(udp), 17) + udp) or 0xffff
		udp = udp[:6] + struct.pack('!H', c) + udp[8:]
		ip = struct.pack('!IHBB16s16s', 6 << 28, len(udp), 17, 64, sa, da)
		return mac(dmac) + mac(smac) + b'\x86\xdd' + ip + udp
	ip = struct.pack('!BBHHHBBH4s4s', 0x45, 0, 20 + len(udp), seq & 0xffff, 0x4000, 64, 17, 0,
			 socket.inet_aton(src), socket.inet_aton(dip))
	ip = ip[:10] + struct.pack('!H', csum(ip)) + ip[12:]
	return mac(dmac) + mac(smac) + b'\x08\x00' + ip + udp
limited, sentinel = srcs[:-1], srcs[-1]
S = (time.time_ns() + 250000000) // 1000000000 * 1000000000 + 1000000000
seq, out = 0, []
for b, at in enumerate((S - 100000000, S + 50000000, S + 950000000)):
	frames = [(src, frame(src, seq + i * len(limited) + j)) for i in range(12) for j, src in enumerate(limited)]
	frames.append((sentinel, frame(sentinel, seq + len(frames))))
	d = at - time.time_ns()
	if d > 0:
		time.sleep(d / 1e9)
	for src, f in frames:
		t = time.time_ns()
		s.send(f)
		o = 66 if f[12:14] == b'\x86\xdd' else 46
		out.append('%s %d %d %d' % (src, struct.unpack('!I', f[o:o + 4])[0], b + 1, t))
	seq += len(frames)
print('\n'.join(out))
EOF
}

# utc_burst_judge SENDLOG PCAP ALGO:SRC...: "inconclusive WHY", or "conclusive" then per
# source "SRC key=value..." (see below).
utc_burst_judge() {
	/usr/bin/python3 - "$@" <<'EOF'
import struct, sys
sendlog, pcap, specs = sys.argv[1], sys.argv[2], [a.split(':', 1) for a in sys.argv[3:]]
N, W, SLACK = 10, 1000000000, 2000000   # SLACK: the clocks' error (CLOCK_REALTIME slewed against the data path's)
sent = [l.split() for l in open(sendlog) if l.strip()]
sent = [(src, int(seq), int(b), int(t)) for src, seq, b, t in sent]
passed = {}   # seq -> capture time (ns, CLOCK_REALTIME)
with open(pcap, 'rb') as f:
	gh = f.read(24)
	nsres = len(gh) == 24 and struct.unpack('<I', gh[:4])[0] == 0xa1b23c4d
	while True:
		ph = f.read(16)
		if len(ph) < 16:
			break
		sec, frac, incl = struct.unpack('<III', ph[:12])
		d = f.read(incl)
		o = {b'\x08\x00': 42, b'\x86\xdd': 62}.get(d[12:14], len(d))   # the UDP payload
		if len(d) >= o + 8 and d[o:o + 4] == b'XRLU':
			passed[struct.unpack('!I', d[o + 4:o + 8])[0]] = sec * 10**9 + (frac if nsres else frac * 1000)
def bad(why):
	print('inconclusive', why)
	sys.exit(0)
if len(sent) != 3 * (12 * len(specs) + 1):
	bad('the sender sent %d frames of %d' % (len(sent), 3 * (12 * len(specs) + 1)))
# when XDP judged each frame: before the capture of the next frame it passed (one veth queue, in order)
lag, nxt = 0, None
for src, seq, b, t in reversed(sent):
	if seq in passed:
		nxt = passed[seq] if nxt is None else min(nxt, passed[seq])
	if nxt is None:
		bad('frame %d: no later frame passed' % seq)
	lag = max(lag, nxt - t)
def fixed(ts):
	w, c, out = None, 0, []
	for t in ts:
		k = t // W
		if k != w:
			w, c = k, 0
		out.append((c < N, min(t - k * W, (k + 1) * W - t)))
		c += out[-1][0]
	return out
def sliding(ts):
	w, prev, cur, out = None, 0, 0, []
	for t in ts:
		k, pos = t // W, t % W
		if w is not None and k == w + 1:
			prev, cur = cur, 0
		elif k != w:
			prev, cur = 0, 0
		w = k
		m = min(pos, W - pos)
		if prev and cur + 1 <= N:   # the pos where prev (W - pos) + (cur + 1) W = N W
			m = min(m, abs(pos - (W - (N - cur - 1) * W / prev)))
		ok = prev * (W - pos) + (cur + 1) * W <= N * W
		out.append((ok, m))
		cur += ok
	return out
def log(ts):
	adm, out = [], []
	for t in ts:
		if len(adm) < N:
			out.append((True, float('inf')))
		else:
			out.append((t - adm[-N] >= W, abs(t - adm[-N] - W)))
		if out[-1][0]:
			adm.append(t)
	return out
sim = {'fixed-window': fixed, 'sliding-window': sliding, 'sliding-log': log}
res = []
for algo, src in specs:
	fr = [x for x in sent if x[0] == src]
	win = [t // W for _, _, _, t in fr]
	b1 = {w for (_, _, b, _), w in zip(fr, win) if b == 1}
	b23 = {w for (_, _, b, _), w in zip(fr, win) if b != 1}
	if len(b1) != 1 or len(b23) != 1 or b23 != {min(b1) + 1}:
		bad('%s: the bursts missed the second boundary (B1 %.3f..%.3f s, B2 and B3 %.3f..%.3f s into a second)' %
		    (src, min(t for _, _, b, t in fr if b == 1) % W / 1e9, max(t for _, _, b, t in fr if b == 1) % W / 1e9,
		     min(t for _, _, b, t in fr if b != 1) % W / 1e9, max(t for _, _, b, t in fr if b != 1) % W / 1e9))
	b1t = [t for _, _, b, t in fr if b == 1]
	b2t = [t for _, _, b, t in fr if b == 2]
	b3t = [t for _, _, b, t in fr if b == 3]
	if max(b2t) % W >= W // 10 or min(b3t) - max(b1t) < W:
		bad('%s: B2 not within 0.1 s of the boundary or B3 not a window after B1 (%.3f, %.3f s)' %
		    (src, max(b2t) % W / 1e9, (min(b3t) - max(b1t)) / 1e9))
	dec = sim[algo]([t for _, _, _, t in fr])
	m = min(x[1] for x in dec)
	# a frame judged up to lag after its send (and each earlier one too) is decided as at its send
	if m <= lag + SLACK:
		bad('%s (%s): a frame %.1f ms from where its decision flips, XDP up to %.1f ms late (load)' %
		    (src, algo, m / 1e6, lag / 1e6))
	exp = [x[0] for x in dec]
	got = [seq in passed for _, seq, _, _ in fr]
	per = lambda v: '+'.join(str(sum(1 for (_, _, b, _), p in zip(fr, v) if p and b == k)) for k in (1, 2, 3))
	# the passed frames' send times; every window-long span ending at one of them
	pt = [t for (_, _, _, t), p in zip(fr, got) if p]
	span = 0
	worst = -N
	for t in pt:
		c = sum(1 for u in pt if t - W < u <= t)
		span = max(span, c)
		k, pos = t // W, t % W
		prev = sum(1 for u in pt if u // W == k - 1)
		worst = max(worst, c - (N + prev * pos / W))
	res.append('%s algo=%s exp=%s got=%s same=%d span=%d worst=%.3f margin=%.1f' %
		   (src, algo, per(exp), per(got), exp == got, span, worst, m / 1e6))
print('conclusive: XDP judged each frame at most %.2f ms after its send' % (lag / 1e6))
print('\n'.join(res))
EOF
}

# attempt A: IPv4 sources 198.18.(110+A).{10,20,30}, IPv6 2001:db8:(110+A)::{10,20,30}
# (a rule each: fixed window, sliding window, sliding log); ::40 matches none
utc_burst_attempt() {
	local a=$1 p=198.18.$((110 + $1)) q=2001:db8:$((110 + $1))::
	cat >"$XRLT_TMP/utc.rules" <<EOF
$p.10/32 --rate 10/s --algo fixed-window
$p.20/32 --rate 10/s --algo sliding-window
$p.30/32 --rate 10/s --algo sliding-log
${q}10/128 --rate 10/s --algo fixed-window --per 128
${q}20/128 --rate 10/s --algo sliding-window --per 128
${q}30/128 --rate 10/s --algo sliding-log --per 128
EOF
	"$XRL" --instance "$INST" rule load "$XRLT_TMP/utc.rules" >/dev/null || xrlt_fail "rule load failed"
	xrlt_capture_start "$XRLT_TMP/utc$a.pcap"
	utc_burst_send "$XRLT_TMP/utc$a.sent" "$p.10" "$p.20" "$p.30" "${q}10" "${q}20" "${q}30" "${q}40" ||
		xrlt_fail "the sender failed: $(cat "$XRLT_TMP/utc$a.sent")"
	sleep 0.2
	xrlt_capture_stop
	utc_burst_judge "$XRLT_TMP/utc$a.sent" "$XRLT_TMP/utc$a.pcap" \
		"fixed-window:$p.10" "sliding-window:$p.20" "sliding-log:$p.30" \
		"fixed-window:${q}10" "sliding-window:${q}20" "sliding-log:${q}30" >"$XRLT_TMP/utc.judged" ||
		xrlt_fail "the judge failed: $(cat "$XRLT_TMP/utc.judged")"
	grep -q '^conclusive' "$XRLT_TMP/utc.judged"
}

# utc_field SRC KEY: a value of the judged run
utc_field() { awk -v s="$1" -v k="$2" '$1 == s { for (i = 2; i <= NF; i++) if (index($i, k "=") == 1) print substr($i, length(k) + 2) }' "$XRLT_TMP/utc.judged"; }

section "the literature's boundary burst on real UTC seconds, per host: fixed window, sliding window, sliding log"
xrlt_require_cmd /usr/bin/python3
for a in 1 2 3; do
	utc_burst_attempt "$a" && break
	xrlt_log "attempt $a: $(head -1 "$XRLT_TMP/utc.judged"): again"
	[ "$a" = 3 ] && xrlt_fail "three attempts proved nothing: the machine is too loaded"
done
printf '        attempt %s, %s; passed per burst (B1+B2+B3 of 12 each):\n' "$a" "$(head -1 "$XRLT_TMP/utc.judged")"
awk 'NR > 1 { printf "          %-22s %-20s %s\n", $1, $2, $4 }' "$XRLT_TMP/utc.judged"
for f in "198.18.$((110 + a))." "2001:db8:$((110 + a))::"; do
	fam=IPv4
	[ "${f#*:}" != "$f" ] && fam=IPv6
	for s in 10 20 30; do
		al=$(utc_field "$f$s" algo)
		check "$al 10/s ($fam): exactly the frames it admits at their recorded send times passed (expected $(utc_field "$f$s" exp), got $(utc_field "$f$s" got))" \
			"$(utc_field "$f$s" same) == 1"
	done
	check "fixed-window 10/s ($fam): twice the limit in one window-long span across the boundary (most in any 1-s span: $(utc_field "${f}10" span))" \
		"$(utc_field "${f}10" span) == 20"
	check "fixed-window 10/s ($fam): 10 before the boundary, 10 right after it, none a window later (B1+B2+B3 $(utc_field "${f}10" got))" \
		"\"$(utc_field "${f}10" got)\" == \"10+10+0\""
	check "sliding-window 10/s ($fam): in every 1-s span at most 10 + prev x pos / 1 s (DESIGN's bound; worst margin $(utc_field "${f}20" worst))" \
		"$(utc_field "${f}20" worst) <= 0"
	check "sliding-window 10/s ($fam): the literature's boundary burst gives 10 and 0, B3 at 0.95 s 9 (got $(utc_field "${f}20" got))" \
		"\"$(utc_field "${f}20" got)\" == \"10+0+9\""
	check "sliding-log 10/s ($fam): at most 10 in any 1-s span (most: $(utc_field "${f}30" span))" "$(utc_field "${f}30" span) <= 10"
	check "sliding-log 10/s ($fam): 10 before the boundary, none after it, 10 once B1 is a window old (got $(utc_field "${f}30" got))" \
		"\"$(utc_field "${f}30" got)\" == \"10+0+10\""
done

fi   # REDIS=cluster: the fleet cases only
section "the literature's two servers: 30 requests from one client over two hosts, 10 per minute each"
# two "hosts" (instances on veth pairs of their own, each with its own daemon),
# one Redis; one request every 0.4 s alternating between them, all inside one
# UTC minute; per host each admits 10 of its 15 (20 in all), with --global
# the fleet admits 10: the other host's count arrives within a round (100 ms)
# of a request 0.8 s apart on the same host.
. "$(dirname "${BASH_SOURCE[0]}")/fleet_lib.sh"
xrlt_require_cmd redis-server redis-cli jq
FLEET_PORT=$((20000 + ($$ + 7919) % 20000))
FLEET_INTERVAL=100
FLEET_RULES=$XRLT_TMP/fleet.rules
cat >"$FLEET_RULES" <<EOF
198.18.201.10/32 --rate 10/m --algo fixed-window
198.18.201.20/32 --rate 10/m --algo fixed-window --global
198.18.201.30/32 --rate 10/m --algo sliding-window --global
EOF
fleet_redis_start
for i in 1 2; do
	fleet_host_create "$i"
	fleet_daemon_start "$i"
done
sleep 1
for i in 1 2; do
	grep -q "connected" "$XRLT_TMP/daemon$i.log" || bad "host $i: daemon did not connect: $(cat "$XRLT_TMP/daemon$i.log")"
done
fleet_cfg "$XRLT_TMP/lit.cfg" 198.18.201.10 198.18.201.20 198.18.201.30
# start within the first 45 s of a UTC minute: the 12 s run stays in it
sec=$(date -u +%S)
sec=${sec#0}
[ "$sec" -le 44 ] || sleep $((61 - sec))
t0=$(fleet_now)
for k in $(seq 0 29); do
	fleet_sleep_until "$t0" "$(xrlt_calc "$k * 0.4")"
	fleet_send_once $((1 + k % 2)) "$XRLT_TMP/lit.cfg" 3
done
t1=$(fleet_now)
sleep 0.3
local_n=$(fleet_passed_sum 198.18.201.10/32 1 2)
global_fw=$(fleet_passed_sum 198.18.201.20/32 1 2)
global_sw=$(fleet_passed_sum 198.18.201.30/32 1 2)
seen1=$("$XRL" --instance "$(fleet_inst 1)" --json stats |
	jq -r '.rules[] | select(.prefix == "198.18.201.10/32") | .passed + .dropped')
printf '        in %.1f s (UTC minute %s): per host %d of 30 passed; --global fixed-window %d, sliding-window %d\n' \
	"$(xrlt_calc "$t1 - $t0")" "$(date -u -d "@${t0%.*}" +%H:%M)" "$local_n" "$global_fw" "$global_sw"
check "host 1 saw its 15 requests ($seen1)" "${seen1:-0} == 15"
check "per-host fixed-window 10/m on each of 2 hosts lets 20 of 30 through ($local_n)" "$local_n == 20"
check "--global fixed-window 10/m lets 10 of 30 through, at most one more (a round's lag) ($global_fw)" "$global_fw >= 10 && $global_fw <= 11"
check "--global sliding-window 10/m likewise ($global_sw)" "$global_sw >= 10 && $global_sw <= 11"
wkeys=$(fleet_redis_scan 'xrl:*:w:*')
n_keys=$(echo "$wkeys" | grep -c .)
check "Redis holds one window counter per global source ($n_keys keys)" "$n_keys == 2"
ttl=$(fleet_redis_cli pttl "$(echo "$wkeys" | head -1)")
check "a window counter expires (PEXPIRE: two windows and a second at most; $ttl ms left)" "${ttl:--1} > 0 && ${ttl:--1} <= 121000"
for i in 1 2; do fleet_daemon_stop "$i"; done

# The same two hosts and Redis, --algo sliding-log (its fleet-wide
# log): per host each keeps its own exact log (10 of its 15, 20 in all);
# with --global Redis keeps a sorted set of the hosts' round reports per
# source and each host adds the other's admissions still in the window to
# its own log: 10 of 30. The log slides: no UTC minute to stay inside.
fleet_log_case() {
	local i k t0 t1 n_log g_log seen key nkeys card ttl
	FLEET_RULES=$XRLT_TMP/fleet_log.rules
	printf '%s\n' "198.18.202.10/32 --rate 10/m --algo sliding-log" \
		"198.18.202.20/32 --rate 10/m --algo sliding-log --global" >"$FLEET_RULES"
	for i in 1 2; do fleet_daemon_start "$i"; done
	sleep 1
	for i in 1 2; do
		[ "$(grep -c "connected" "$XRLT_TMP/daemon$i.log")" -ge 2 ] ||
			bad "host $i: daemon did not connect again: $(tail -3 "$XRLT_TMP/daemon$i.log")"
	done
	fleet_cfg "$XRLT_TMP/log.cfg" 198.18.202.10 198.18.202.20
	t0=$(fleet_now)
	for k in $(seq 0 29); do
		fleet_sleep_until "$t0" "$(xrlt_calc "$k * 0.4")"
		fleet_send_once $((1 + k % 2)) "$XRLT_TMP/log.cfg" 2
	done
	t1=$(fleet_now)
	sleep 0.3
	n_log=$(fleet_passed_sum 198.18.202.10/32 1 2)
	g_log=$(fleet_passed_sum 198.18.202.20/32 1 2)
	seen=$("$XRL" --instance "$(fleet_inst 2)" --json stats |
		jq -r '.rules[] | select(.prefix == "198.18.202.20/32") | .passed + .dropped')
	printf '        in %.1f s: sliding-log 10/m per host %d of 30 passed; --global %d\n' \
		"$(xrlt_calc "$t1 - $t0")" "$n_log" "$g_log"
	check "host 2 saw its 15 requests of the global log ($seen)" "${seen:-0} == 15"
	check "per-host sliding-log 10/m on each of 2 hosts lets 20 of 30 through ($n_log)" "$n_log == 20"
	check "--global sliding-log 10/m lets 10 of 30 through, at most one more (a round's lag) ($g_log)" "$g_log >= 10 && $g_log <= 11"
	key=$(fleet_redis_scan 'xrl:*:l')
	nkeys=$(echo "$key" | grep -c .)
	check "Redis holds one log per global sliding-log source ($nkeys keys)" "$nkeys == 1"
	card=$(fleet_redis_cli zcard "$(echo "$key" | head -1)")
	check "the log holds a report per host round with admissions, not one per packet ($card members, $g_log admissions)" "${card:-99} >= 1 && ${card:-99} <= $g_log"
	ttl=$(fleet_redis_cli pttl "$(echo "$key" | head -1)")
	check "the log expires (a window and a second at most; $ttl ms left)" "${ttl:--1} > 0 && ${ttl:--1} <= 61000"
	for i in 1 2; do fleet_daemon_stop "$i"; done
}
section "the two servers with --algo sliding-log: 20 of 30 per host, 10 of 30 with --global"
fleet_log_case

xrlt_finish
