#!/usr/bin/env bash
# The layers of user space (user/lib < user/daemon < user/http < user/cli): no file of a
# lower layer includes a header of a higher one or calls a function defined
# there, and no two files of one folder call each other, directly or
# through others (one calls, the other is called). Read from the sources'
# includes and from the built objects' symbols (nm): run after `make`.
set -u
cd "$(dirname "$0")/../.." || exit 2
build=${BUILD:-build}
for o in user/*/*.c; do
	b=$build/$(basename "${o%.c}").o
	[ -e "$b" ] || { echo "FAIL: $b is missing: run make first"; echo "0 passed, 1 failed"; exit 1; }
done
/usr/bin/python3 - "$build" <<'PY'
import glob, os, re, subprocess, sys
build = sys.argv[1]
layers = ['user/lib', 'user/daemon', 'user/http', 'user/cli']
rank = {l: i for i, l in enumerate(layers)}
passed = failed = 0
def ok(m):
    global passed; passed += 1; print('ok: ' + m)
def bad(m):
    global failed; failed += 1; print('FAIL: ' + m)

# headers: which layer each one is in
hdr = {}
for l in layers:
    for h in glob.glob(l + '/*.h'):
        hdr[os.path.basename(h)] = l
# 1. includes
for l in layers:
    wrong = []
    for f in sorted(glob.glob(l + '/*.[ch]')):
        for inc in re.findall(r'#include\s+"([^"]+)"', open(f, errors='replace').read()):
            h = hdr.get(os.path.basename(inc))
            if h and rank[h] > rank[l]:
                wrong.append('%s includes %s (%s)' % (f, inc, h))
    (bad if wrong else ok)('%s includes no header of a higher layer%s' % (l, ': ' + '; '.join(wrong) if wrong else ''))

# 2. calls, from the objects' symbols
defs, undefs, folder = {}, {}, {}
for l in layers:
    for c in glob.glob(l + '/*.c'):
        o = os.path.join(build, os.path.basename(c)[:-2] + '.o')
        folder[o] = l
        out = subprocess.run(['nm', o], capture_output=True, text=True).stdout
        undefs[o] = set()
        for line in out.splitlines():
            p = line.split()
            if len(p) == 2 and p[0] == 'U':
                undefs[o].add(p[1])
            elif len(p) == 3 and p[1] in 'TDBR':
                defs.setdefault(p[2], o)
calls = {o: {defs[s] for s in u if s in defs and defs[s] != o} for o, u in undefs.items()}
name = lambda o: folder[o] + '/' + os.path.basename(o)[:-2] + '.c'
for l in layers:
    up = ['%s calls %s' % (name(o), name(t)) for o in sorted(calls) if folder[o] == l
          for t in sorted(calls[o]) if rank[folder[t]] > rank[l]]
    (bad if up else ok)('%s calls nothing of a higher layer%s' % (l, ': ' + '; '.join(up) if up else ''))
# within a folder: no cycle (a file reaches itself through others of its folder)
for l in layers:
    objs = [o for o in calls if folder[o] == l]
    cyc = []
    for o in sorted(objs):
        seen, todo = set(), [t for t in calls[o] if folder[t] == l]
        while todo:
            t = todo.pop()
            if t in seen:
                continue
            seen.add(t)
            todo += [u for u in calls[t] if folder[u] == l]
        if o in seen:
            cyc.append(name(o))
    (bad if cyc else ok)('no two files of %s call each other%s' % (l, ' (in a cycle: ' + ', '.join(cyc) + ')' if cyc else ''))
print('%d passed, %d failed' % (passed, failed))
sys.exit(1 if failed else 0)
PY
