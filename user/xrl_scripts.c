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
 * GCRA over the fleet, for a batch of (rule, source) budgets at once (one
 * call per batch, so a round of 10,000 sources is ~160 calls, not 10,000).
 * KEYS come in pairs per (rule, source): a string holding the theoretical
 * arrival time (TAT) of the fleet's budget, and a hash of each host's
 * demand (field HOST = "last-seen packets/s", smoothed over ~1 s), both
 * with the same hash tag.
 * ARGV[1] mode: "1" take the n tokens only if they are there, all or
 * nothing; "0" record admissions already made (the data path admitted
 * before asking). ARGV[2] host ("" when no demand is reported), ARGV[3]
 * the live window (µs). Then six per (rule, source): n admissions,
 * interval (µs per token), span (burst x interval), since (µs: how far
 * back the n admissions go), demand (packets this host saw for the
 * source, admitted and refused; -1: not reported this time) and the µs it
 * covers.
 * Returns integers (Redis truncates Lua numbers), per (rule, source): the
 * debt, TAT - now in µs (how far ahead of now the fleet has spent; the
 * host turns it into a floor under its local TAT); then, in take mode, the
 * tokens granted; then, when demand was reported, this host's share of the
 * live hosts' demand in parts per million and the number of live hosts.
 * The TAT expires a live window after it is reached: until then a host may
 * still report admissions made before it (since reaches back at most that
 * far), which must add to the TAT, not to a fresh one; after that a missing
 * TAT and one in the past mean the same, a full bucket. The demand expires
 * a live window after the last report.
 * The keys of one call must share a Redis Cluster slot on a cluster.
 */
static const char gcra[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local take, host = ARGV[1] == '1', ARGV[2]\n"
	"local window = tonumber(ARGV[3])\n"
	"local fmt, max, out, names, m = string.format, math.max, {}, {}, #KEYS / 2\n"
	"for i = 1, m do names[i] = KEYS[2 * i - 1] end\n"
	"local tats = redis.call('MGET', unpack(names))\n"
	"local a = 3\n"
	"for i = 1, m do\n"
	"  local key = names[i]\n"
	"  local n, demand = tonumber(ARGV[a + 1]), tonumber(ARGV[a + 5])\n"
	"  local tat = tonumber(tats[i]) or 0\n"
	"  local granted = 0\n"
	"  if n > 0 then\n"
	"    local nxt = max(tat, now - ARGV[a + 4]) + n * ARGV[a + 2]\n"
	"    if not take or nxt - now <= tonumber(ARGV[a + 3]) then\n"
	"      granted, tat = n, nxt\n"
	"      redis.call('SET', key, fmt('%.3f', tat), 'PX', max(1, math.ceil((tat - now + window) / 1000)))\n"
	"    end\n"
	"  end\n"
	"  out[#out + 1] = tat - now\n"
	"  if take then out[#out + 1] = granted end\n"
	"  if host ~= '' and demand >= 0 then\n"
	"    local dkey, el = KEYS[2 * i], max(tonumber(ARGV[a + 6]), 1)\n"
	"    local rate = demand * 1000000 / el\n"
	"    local all = redis.call('HGETALL', dkey)\n"
	"    local sum, live, gone, mine = 0, 1, {}, nil\n"
	"    for j = 1, #all, 2 do\n"
	"      if all[j] == host then mine = all[j + 1] end\n"
	"    end\n"
	"    if mine then\n"
	"      local r = tonumber(string.match(mine, ' (%S+)$')) or rate\n"
	"      rate = r + (rate - r) * (1 - math.exp(-el / 1000000))\n"
	"    end\n"
	"    sum = rate\n"
	"    for j = 1, #all, 2 do\n"
	"      if all[j] ~= host then\n"
	"        local seen, r = string.match(all[j + 1], '^(%S+) (%S+)$')\n"
	"        if now - (tonumber(seen) or 0) <= window then\n"
	"          live, sum = live + 1, sum + (tonumber(r) or 0)\n"
	"        else\n"
	"          gone[#gone + 1] = all[j]\n"
	"        end\n"
	"      end\n"
	"    end\n"
	"    if #gone > 0 then redis.call('HDEL', dkey, unpack(gone)) end\n"
	"    redis.call('HSET', dkey, host, fmt('%.0f %.3f', now, rate))\n"
	"    redis.call('PEXPIRE', dkey, math.ceil(window / 1000))\n"
	"    out[#out + 1] = (sum > 0 and rate / sum or 1 / live) * 1000000\n"
	"    out[#out + 1] = live\n"
	"  end\n"
	"  a = a + 6\n"
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
