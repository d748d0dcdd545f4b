-- The layout of ARGV is defined in user/daemon/xrl_script_args.h (XRL_HOSTS_*),
-- which the daemon's call builder and test_redis use; read by position
-- here, checked by test_redis, and a call of another size is refused.
--
-- Hosts running a rule. KEYS[1] is a hash host-id -> "last-seen rate".
-- ARGV: host id, this host's admissions per second for the rule (smoothed),
-- live window (µs), key TTL (ms). Returns {live hosts, sum of their rates}:
-- a host's share of the budget is its rate over the sum, or 1/live.
-- Entries silent for a minute are removed; the key expires with the rule.

local F = 4   -- XRL_HOSTS_FIXED: ARGV 1 to F are the fixed figures
if #ARGV ~= F or #KEYS ~= 1 then
  return redis.error_reply(string.format('xrl hosts: %d arguments and %d keys, expected %d and 1: see user/daemon/xrl_script_args.h', #ARGV, #KEYS, F))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
redis.call('HSET', KEYS[1], ARGV[1], string.format('%.0f %s', now, ARGV[2]))
local all = redis.call('HGETALL', KEYS[1])
local live, sum = 0, 0
for i = 1, #all, 2 do
  local seen, rate = string.match(all[i + 1], '^(%S+) (%S+)$')
  local age = now - (tonumber(seen) or 0)
  if age <= tonumber(ARGV[3]) then
    live = live + 1
    sum = sum + (tonumber(rate) or 0)
  elseif age > 60000000 then
    redis.call('HDEL', KEYS[1], all[i])
  end
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {live, string.format('%.3f', sum)}
