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
 * GCRA over the fleet. KEYS[1] is a hash for one (rule, source): field t
 * holds the theoretical arrival time (TAT) of the fleet's budget, fields
 * d:HOST each host's demand ("last-seen packets/s", smoothed over ~1 s).
 * ARGV: n admissions, interval (µs per token), span (burst x interval),
 * since (µs: how far back this host's n admissions go), mode ("1": take
 * only if the n tokens are there, all or nothing; "0": record admissions
 * already made, which the data path did before asking), and optionally
 * host, packets this host saw for the source (admitted and refused),
 * over how many µs, and the live window (µs).
 * Returns {granted, debt, share, live}: debt = TAT - now in µs, how far
 * ahead of now the fleet has spent (the host turns it into a floor under
 * its local TAT); share = this host's part of the live hosts' demand.
 * The key expires once its TAT is reached and no host reported for a live
 * window: a missing key and a TAT in the past mean the same, a full bucket.
 */
static const char gcra[] =
	"local t = redis.call('TIME')\n"
	"local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
	"local tat = tonumber(redis.call('HGET', KEYS[1], 't') or '0')\n"
	"local n = tonumber(ARGV[1])\n"
	"local granted = 0\n"
	"if n > 0 then\n"
	"  local base = math.max(tat, now - tonumber(ARGV[4]))\n"
	"  local nxt = base + n * tonumber(ARGV[2])\n"
	"  if ARGV[5] ~= '1' or nxt - now <= tonumber(ARGV[3]) then\n"
	"    granted = n\n"
	"    tat = nxt\n"
	"    redis.call('HSET', KEYS[1], 't', string.format('%.3f', tat))\n"
	"  end\n"
	"end\n"
	"local share, live, keep = 1, 1, 0\n"
	"if ARGV[6] then\n"
	"  local el = math.max(tonumber(ARGV[8]), 1)\n"
	"  local window = tonumber(ARGV[9])\n"
	"  local rate = tonumber(ARGV[7]) * 1000000 / el\n"
	"  local prev = redis.call('HGET', KEYS[1], 'd:' .. ARGV[6])\n"
	"  if prev then\n"
	"    local _, r = string.match(prev, '^(%S+) (%S+)$')\n"
	"    r = tonumber(r) or rate\n"
	"    rate = r + (rate - r) * (1 - math.exp(-el / 1000000))\n"
	"  end\n"
	"  redis.call('HSET', KEYS[1], 'd:' .. ARGV[6], string.format('%.0f %.3f', now, rate))\n"
	"  local all = redis.call('HGETALL', KEYS[1])\n"
	"  local sum = 0\n"
	"  live = 0\n"
	"  for i = 1, #all, 2 do\n"
	"    if string.sub(all[i], 1, 2) == 'd:' then\n"
	"      local seen, r = string.match(all[i + 1], '^(%S+) (%S+)$')\n"
	"      if now - (tonumber(seen) or 0) <= window then\n"
	"        live = live + 1\n"
	"        sum = sum + (tonumber(r) or 0)\n"
	"      else\n"
	"        redis.call('HDEL', KEYS[1], all[i])\n"
	"      end\n"
	"    end\n"
	"  end\n"
	"  share = sum > 0 and rate / sum or 1 / live\n"
	"  keep = window / 1000\n"
	"end\n"
	"if redis.call('EXISTS', KEYS[1]) == 1 then\n"
	"  redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((tat - now) / 1000), math.ceil(keep)))\n"
	"end\n"
	"return {granted, string.format('%.3f', tat - now), string.format('%.6f', share), live}\n";

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
