-- The layout of ARGV is defined in user/xrl_script_args.h (enum
-- xrl_take_arg), which xrl http's call builder and test_redis use.
--
-- One request of a sliding window or a sliding log over the fleet (xrl
-- http's --global), decided and counted in one script on Redis' clock:
-- a refused request counts nowhere (window.lua and log.lua record what the
-- data paths already admitted; this one admits). The keys are theirs:
--   sliding window ('w'): the counters BASE:w:IDX of window.lua (idx =
--     floor(TIME / window), UTC-aligned), INCR on admission, living two
--     windows and a second; admit when prev x (win - pos) + (cur + 1) x
--     win <= limit x win, the data path's xrl_sw_admit (exact in doubles:
--     limit < 2^20, win < 2^32 µs).
--   sliding log ('l'): the sorted set BASE:l of log.lua, members
--     'N:T:HOST' scored by T (µs); an admission is a member '1:T:ID' (ID
--     unique per request: ARGV[4]); admit when the members' N inside
--     (now - window, now] sum to less than the limit.
-- KEYS[1] the base key. ARGV[1] 'w' or 'l', ARGV[2] the window (µs),
-- ARGV[3] the limit, ARGV[4] the admission's id (log).
-- Returns strings (Redis truncates Lua numbers): admitted (1/0), the
-- requests left after it, the µs until the window resets (the current
-- window's end; for a log, until its oldest member leaves), and when
-- refused the µs until a request would be admitted.
local F = 4   -- XRL_TAKE_FIXED
if #KEYS ~= 1 or #ARGV ~= F then
  return redis.error_reply(string.format('xrl take: %d keys and %d arguments, expected 1 and %d: see user/xrl_script_args.h', #KEYS, #ARGV, F))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local mode = ARGV[1]
local win = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local fmt = string.format
if mode == 'w' then
  local idx = math.floor(now / win)
  local pos = now - idx * win
  local ck = KEYS[1] .. ':w:' .. fmt('%d', idx)
  local cur = tonumber(redis.call('GET', ck)) or 0
  local prev = tonumber(redis.call('GET', KEYS[1] .. ':w:' .. fmt('%d', idx - 1))) or 0
  if prev > limit then prev = limit end
  local ok = cur < limit and prev * (win - pos) + (cur + 1) * win <= limit * win
  local retry = 0
  if ok then
    cur = cur + 1
    if redis.call('INCR', ck) == 1 then
      redis.call('PEXPIRE', ck, fmt('%d', math.ceil(2 * win / 1000) + 1000))
    end
  elseif cur < limit then
    -- this window, once prev x (win - p) <= (limit - cur - 1) x win
    retry = math.ceil(win - (limit - cur - 1) * win / prev) - pos
  else
    -- the next window (prev = cur, cur = 0): once cur x (win - p) <= (limit - 1) x win
    retry = win - pos + math.max(0, math.ceil(win - (limit - 1) * win / cur))
  end
  local left = math.floor((limit * win - prev * (win - pos) - cur * win) / win)
  if left < 0 then left = 0 end
  return { ok and '1' or '0', fmt('%d', left), fmt('%d', win - pos), fmt('%d', math.max(retry, 1)) }
end
if mode ~= 'l' then
  return redis.error_reply('xrl take: mode ' .. tostring(mode) .. ', expected w or l')
end
local key = KEYS[1] .. ':l'
local now_s, from_s = fmt('%d', now), fmt('%d', now - win)
redis.call('ZREMRANGEBYSCORE', key, '-inf', from_s)
local e = redis.call('ZRANGEBYSCORE', key, '(' .. from_s, '+inf', 'WITHSCORES')
local n, first = 0, nil
local cum = {}
for j = 1, #e, 2 do
  local c = tonumber(string.match(e[j], '^(%d+):')) or 0
  n = n + c
  cum[#cum + 1] = { n, tonumber(e[j + 1]) }
  if not first then first = tonumber(e[j + 1]) end
end
local ok = n < limit
local retry = 0
if ok then
  redis.call('ZADD', key, now_s, fmt('1:%s:%s', now_s, ARGV[4]))
  redis.call('PEXPIRE', key, fmt('%d', math.ceil(win / 1000) + 1000))
  n = n + 1
  if not first then first = now end
else
  -- once the oldest members holding n - limit + 1 admissions have left
  for j = 1, #cum do
    if cum[j][1] >= n - limit + 1 then retry = cum[j][2] + win - now; break end
  end
end
return { ok and '1' or '0', fmt('%d', math.max(limit - n, 0)), fmt('%d', first + win - now), fmt('%d', math.max(retry, 1)) }
