// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Redis side of fleet-wide rules. Times are Redis' own clock (TIME inside
 * the script), in microseconds as Lua doubles (53 bits: ns-exact for
 * centuries of µs); hosts never compare their clocks with each other or
 * with Redis. Values returned as strings because Redis truncates Lua
 * numbers to integers.
 */
#include "xrl_scripts.h"

/*
 * GCRA over the fleet, for a batch of one rule's sources at once (one call
 * per batch, so a round of 10,000 sources is ~160 calls, not 10,000).
 * KEYS: first one string per source, holding the theoretical arrival time
 * (TAT) of the fleet's budget for it; then, for the sources whose demand
 * goes along this time, in the same order, a hash of each host's demand
 * (field HOST = "last-seen packets/s", smoothed over ~1 s). A source's
 * keys share its hash tag.
 * ARGV[1] mode: "1" take the n tokens only if they are there, all or
 * nothing; "0" record admissions already made (the data path admitted
 * before asking). ARGV[2] host, ARGV[3] the live window of demand (µs),
 * ARGV[4] the life of a TAT past its time (µs), ARGV[5] the rule's
 * interval (µs per token), ARGV[6] its span (burst x interval), ARGV[7] how
 * many demand keys follow the TAT keys, ARGV[8] since (µs: how far back the
 * admissions go, the time since the host's last round). Then one per
 * source: n admissions, or "n@since" for a source younger than that; then
 * two per demand key: the packets this host saw for the source, admitted
 * and refused, and the µs they cover.
 * What is the same for every source comes once per call, and a source
 * without demand brings one key and one number: Redis' time per source is
 * what bounds a round, and most of it is Lua calling into Redis.
 * Returns integers (Redis truncates Lua numbers): per source the debt, TAT
 * - now in µs (how far ahead of now the fleet has spent; the host turns it
 * into a floor under its local TAT); in take mode then per source the
 * tokens granted; then per demand key this host's share of the live hosts'
 * demand in parts per million and the number of live hosts.
 * A TAT lives at least its life past its time: until then a host may still
 * report admissions made before it (since reaches back at most that far),
 * which must add to the TAT, not to a fresh one; after that a missing TAT
 * and one in the past mean the same, a full bucket. It expires at the end
 * of the life-long slot after the one it falls in, so it lives one to two
 * lives past its time and most writes keep the expiry already set: a TAT
 * still ahead (a source over budget) grows in place with INCRBY, one in the
 * past is SET with KEEPTTL, and only one that moves to a later slot is SET
 * with PXAT (an expiry costs Redis about half as much again as the write).
 * Every host must pass the same life, or one could keep an expiry that
 * another set too short. TATs are stored as whole µs, rounded up: at most
 * 1 µs of extra debt per report; a TAT with a fraction (written by an
 * older xrl) makes INCRBY fail and is SET whole instead. Numbers go to
 * Redis as strings: Redis formats a Lua number with %.17g, which costs
 * more than the write.
 * The demand expires a live window after the last report.
 * The keys of one call must share a Redis Cluster slot on a cluster.
 */
static const char gcra[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local take, host = ARGV[1] == '1', ARGV[2]\n"
	"local window, life = tonumber(ARGV[3]), tonumber(ARGV[4])\n"
	"local iv, span, nd = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])\n"
	"local since0 = tonumber(ARGV[8])\n"
	"local m = #KEYS - nd\n"
	"local fmt, max, floor, ceil, out = string.format, math.max, math.floor, math.ceil, {}\n"
	"local tats = redis.call('MGET', unpack(KEYS, 1, m))\n"
	"for i = 1, m do\n"
	"  local v = ARGV[8 + i]\n"
	"  local n, since = tonumber(v), since0\n"
	"  if not n then\n"
	"    local a, b = string.match(v, '^(%d+)@(%d+)$')\n"
	"    n, since = tonumber(a), tonumber(b)\n"
	"  end\n"
	"  local tat = tonumber(tats[i]) or 0\n"
	"  local granted = 0\n"
	"  if n > 0 then\n"
	"    local base = max(tat, now - since)\n"
	"    local nxt = ceil(base + n * iv)\n"
	"    if not take or nxt - now <= span then\n"
	"      local e = (floor(nxt / life) + 2) * life\n"
	"      if tats[i] and e == (floor(tat / life) + 2) * life then\n"
	"        if base ~= tat or type(redis.pcall('INCRBY', KEYS[i], fmt('%d', nxt - tat))) == 'table' then\n"
	"          redis.call('SET', KEYS[i], fmt('%d', nxt), 'KEEPTTL')\n"
	"        end\n"
	"      else\n"
	"        redis.call('SET', KEYS[i], fmt('%d', nxt), 'PXAT', fmt('%d', e / 1000))\n"
	"      end\n"
	"      granted, tat = n, nxt\n"
	"    end\n"
	"  end\n"
	"  out[i] = tat - now\n"
	"  if take then out[m + i] = granted end\n"
	"end\n"
	"local a, o = 9 + m, #out\n"
	"for j = 1, nd do\n"
	"  local dkey, demand = KEYS[m + j], tonumber(ARGV[a])\n"
	"  local el = max(tonumber(ARGV[a + 1]), 1)\n"
	"  local rate = demand * 1000000 / el\n"
	"  local all = redis.call('HGETALL', dkey)\n"
	"  local sum, live, gone, mine = 0, 1, {}, nil\n"
	"  for k = 1, #all, 2 do\n"
	"    if all[k] == host then mine = all[k + 1] end\n"
	"  end\n"
	"  if mine then\n"
	"    local r = tonumber(string.match(mine, ' (%S+)$')) or rate\n"
	"    rate = r + (rate - r) * (1 - math.exp(-el / 1000000))\n"
	"  end\n"
	"  sum = rate\n"
	"  for k = 1, #all, 2 do\n"
	"    if all[k] ~= host then\n"
	"      local seen, r = string.match(all[k + 1], '^(%S+) (%S+)$')\n"
	"      if now - (tonumber(seen) or 0) <= window then\n"
	"        live, sum = live + 1, sum + (tonumber(r) or 0)\n"
	"      else\n"
	"        gone[#gone + 1] = all[k]\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  if #gone > 0 then redis.call('HDEL', dkey, unpack(gone)) end\n"
	"  redis.call('HSET', dkey, host, fmt('%.0f %.3f', now, rate))\n"
	"  redis.call('PEXPIRE', dkey, math.ceil(window / 1000))\n"
	"  out[o + 1] = (sum > 0 and rate / sum or 1 / live) * 1000000\n"
	"  out[o + 2] = live\n"
	"  o, a = o + 2, a + 2\n"
	"end\n"
	"return out\n";

/*
 * Hosts running a rule. KEYS[1] is a hash host-id -> "last-seen rate".
 * ARGV: host id, this host's admissions per second for the rule (smoothed),
 * live window (µs), key TTL (ms). Returns {live hosts, sum of their rates}:
 * a host's share of the budget is its rate over the sum, or 1/live.
 * Entries silent for a minute are removed; the key expires with the rule.
 */
static const char hosts[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f %s', now, ARGV[2]))\n"
	"local all = redis.call('HGETALL', KEYS[1])\n"
	"local live, sum = 0, 0\n"
	"for i = 1, #all, 2 do\n"
	"  local seen, rate = string.match(all[i + 1], '^(%S+) (%S+)$')\n"
	"  local age = now - (tonumber(seen) or 0)\n"
	"  if age <= tonumber(ARGV[3]) then\n"
	"    live = live + 1\n"
	"    sum = sum + (tonumber(rate) or 0)\n"
	"  elseif age > 60000000 then\n"
	"    redis.call('HDEL', KEYS[1], all[i])\n"
	"  end\n"
	"end\n"
	"redis.call('PEXPIRE', KEYS[1], ARGV[4])\n"
	"return {live, string.format('%.3f', sum)}\n";

const char *const xrl_script_source[XRL_SCRIPT_COUNT] = { gcra, hosts };
const char *const xrl_script_name[XRL_SCRIPT_COUNT] = { "gcra", "hosts" };
