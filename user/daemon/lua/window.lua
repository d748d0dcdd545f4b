-- The layout of ARGV is defined in user/daemon/xrl_script_args.h (enum
-- xrl_window_arg), which the daemon's call builder and test_redis use.
--
-- Window counters over the fleet (--algo fixed-window and sliding-window
-- with --global), for a batch of one rule's sources at once: the
-- literature's INCR + EXPIRE per window key, made atomic in one script.
-- Windows are Redis' own: idx = floor(TIME / window), aligned to UTC
-- multiples of the window as every host's data path aligns its own.
-- KEYS: one per source, its base key; the counter of window idx is the
-- string key BASE:w:IDX (the same hash tag as the base key, so the same
-- Redis Cluster slot). ARGV[1] the window's length (µs); then one per
-- source, n: the admissions this host made since its last report, added
-- to this window's counter (INCRBY), which lives two windows and a second
-- past its creation (PEXPIRE when INCRBY created it): long enough to be
-- the previous window's count through the next window.
-- Returns strings (Redis truncates Lua numbers): the window index, the
-- time into it (µs), then per source the fleet's count in this window and
-- in the one before.
local F = 1   -- XRL_WINDOW_FIXED
local m = #KEYS
if #ARGV ~= F + m then
  return redis.error_reply(string.format('xrl window: %d arguments for %d keys, expected %d: see user/daemon/xrl_script_args.h', #ARGV, m, F + m))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local win = tonumber(ARGV[1])
local idx = math.floor(now / win)
local fmt, out = string.format, {}
local cur_s, prev_s = fmt('%d', idx), fmt('%d', idx - 1)
local life = fmt('%d', math.ceil(2 * win / 1000) + 1000)
out[1] = cur_s
out[2] = fmt('%d', now - idx * win)
for i = 1, m do
  local n = tonumber(ARGV[F + i]) or 0
  local key = KEYS[i] .. ':w:' .. cur_s
  local c
  if n > 0 then
    c = redis.call('INCRBY', key, n)
    if c == n then redis.call('PEXPIRE', key, life) end
  else
    c = tonumber(redis.call('GET', key)) or 0
  end
  out[2 + 2 * i - 1] = fmt('%d', c)
  out[2 + 2 * i] = fmt('%d', tonumber(redis.call('GET', KEYS[i] .. ':w:' .. prev_s)) or 0)
end
return out
