-- The layout of ARGV is defined in user/daemon/xrl_script_args.h (enum
-- xrl_slog_arg), which the daemon's call builder and test_redis use.
--
-- A sliding log over the fleet (--algo sliding-log with --global), for a
-- batch of one rule's sources at once. Each host keeps its own admissions'
-- times exactly (its data path's ring); Redis keeps, per source, the
-- hosts' round reports: a sorted set BASE:l (the same hash tag as the base
-- key, so the same Redis Cluster slot) whose members are 'N:T:HOST' (N
-- admissions reported by HOST at Redis time T, µs) scored by T. A report
-- stays while T is inside the window, (now - window, now]: T is at or after
-- the admissions it carries, so they count for at least as long as they
-- are in the window (longer by at most a round: fewer admitted, never
-- more). The set is trimmed to the window (ZREMRANGEBYSCORE) at every
-- report and bounded to ARGV[3] members (the oldest go first), and expires
-- a window and a second after its last report; reads take only the
-- reports inside the window (ZRANGEBYSCORE).
-- KEYS: one per source, its base key. ARGV[1] this host's id, ARGV[2] the
-- window (µs), ARGV[3] the bound on members per source; then one per
-- source, n: the admissions this host made since its last report (0: none,
-- only read).
-- Returns strings (Redis truncates Lua numbers): Redis' window index
-- (TIME / window, for the daemon's refresh), then per source three: the
-- other hosts' admissions inside the window, the µs until the oldest of
-- their reports leaves it (0: none), and the others' admissions after it has.
local F = 3   -- XRL_SLOG_FIXED
local m = #KEYS
if #ARGV ~= F + m then
  return redis.error_reply(string.format('xrl log: %d arguments for %d keys, expected %d: see user/daemon/xrl_script_args.h', #ARGV, m, F + m))
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local host = ARGV[1]
local win = tonumber(ARGV[2])
local cap = tonumber(ARGV[3])
local fmt, out = string.format, {}
local now_s, from_s = fmt('%d', now), fmt('%d', now - win)
local life = fmt('%d', math.ceil(win / 1000) + 1000)
out[1] = fmt('%d', math.floor(now / win))
for i = 1, m do
  local key = KEYS[i] .. ':l'
  local n = tonumber(ARGV[F + i]) or 0
  if n > 0 then
    -- trimmed when written to (a read leaves old reports to the next write or the expiry)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', from_s)
    redis.call('ZADD', key, now_s, fmt('%d:%s:%s', n, now_s, host))
    redis.call('PEXPIRE', key, life)
  end
  -- the others' reports inside the window, oldest first
  local e = redis.call('ZRANGEBYSCORE', key, '(' .. from_s, '+inf', 'WITHSCORES')
  if #e > 2 * cap then
    -- past the bound: the oldest go (and count no more)
    redis.call('ZREMRANGEBYRANK', key, 0, -cap - 1)
    e = redis.call('ZRANGEBYSCORE', key, '(' .. from_s, '+inf', 'WITHSCORES')
  end
  local others, first, first_n = 0, nil, 0
  for j = 1, #e, 2 do
    local c, h = string.match(e[j], '^(%d+):%d+:(.*)$')
    if c and h ~= host then
      c = tonumber(c)
      others = others + c
      if not first then
        first = tonumber(e[j + 1])
        first_n = c
      elseif tonumber(e[j + 1]) == first then
        first_n = first_n + c   -- reports of the same µs leave together
      end
    end
  end
  out[1 + 3 * i - 2] = fmt('%d', others)
  out[1 + 3 * i - 1] = fmt('%d', first and first + win - now or 0)
  out[1 + 3 * i] = fmt('%d', others - first_n)
end
return out
