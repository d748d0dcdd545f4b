-- The layout of ARGV (the fixed figures' positions, how many follow per
-- source and per demand key) is defined in user/daemon/xrl_script_args.h, which
-- the daemon's call builder and test_redis use; this script reads them by
-- position. test_redis checks that F and the ARGV[n] below match it, and a
-- call whose argument count does not fit is refused.
--
-- GCRA over the fleet, for a batch of one rule's sources at once (one call
-- per batch, so a round of 10,000 sources is ~160 calls, not 10,000).
-- KEYS: first one string per source, holding the theoretical arrival time
-- (TAT) of the fleet's budget for it; then, for the sources whose demand
-- goes along this time, in the same order, a hash of each host's demand
-- (field HOST = "last-seen packets/s", smoothed over ~1 s). A source's
-- keys share its hash tag.
-- ARGV[1] mode: "1" take the n tokens only if they are there, all or
-- nothing; "0" record admissions already made (the data path admitted
-- before asking). ARGV[2] host, ARGV[3] the live window of demand (µs),
-- ARGV[4] the life of a TAT past its time (µs), ARGV[5] the rule's
-- interval (µs per token), ARGV[6] its span (burst x interval), ARGV[7] how
-- many demand keys follow the TAT keys, ARGV[8] since (µs: how far back the
-- admissions go, the time since the host's last round). Then one per
-- source: n admissions, or "n@since" for a source younger than that, with
-- a leading "+" when the host expects the source's TAT still ahead; then
-- two per demand key: the packets this host saw for the source, admitted
-- and refused, and the µs they cover.
-- What is the same for every source comes once per call, and a source
-- without demand brings one key and one number: Redis' time per source is
-- what bounds a round, and most of it is Lua calling into Redis.
-- Returns integers (Redis truncates Lua numbers): per source the debt, TAT
-- - now in µs (how far ahead of now the fleet has spent; the host turns it
-- into a floor under its local TAT); in take mode then per source the
-- tokens granted; then per demand key this host's share of the live hosts'
-- demand in parts per million and the number of live hosts.
-- A TAT lives at least its life past its time: until then a host may still
-- report admissions made before it (since reaches back at most that far),
-- which must add to the TAT, not to a fresh one; after that a missing TAT
-- and one in the past mean the same, a full bucket. It expires at the end
-- of the life-long slot after the one it falls in, so it lives one to two
-- lives past its time and most writes keep the expiry already set: a TAT
-- still ahead (a source over budget) grows in place with INCRBY, one in the
-- past is SET with KEEPTTL, and only one that moves to a later slot is SET
-- with PXAT (an expiry costs Redis about half as much again as the write).
-- A source sent with "+" is not read first: its INCRBY's reply is the new
-- TAT, so a source over budget costs Redis one command, not an MGET slot,
-- a conversion and a write; a guess that was wrong costs one SET more and
-- ends where the read-first path would (the same TAT, expiry and reply).
-- Keys and values are those of the previous script: hosts running either
-- read what the other wrote (tests/redis: test_gcra_rolling_upgrade).
-- Every host must pass the same life, or one could keep an expiry that
-- another set too short. TATs are stored as whole µs, rounded up: at most
-- 1 µs of extra debt per report; a TAT with a fraction (written by an
-- older xrl) makes INCRBY fail and is SET whole instead. Numbers go to
-- Redis as strings: Redis formats a Lua number with %.17g, which costs
-- more than the write.
-- The demand expires one to two live windows after the last report.
-- The keys of one call must share a Redis Cluster slot on a cluster:
-- nothing here spans sources, so a batch split by slot is still a batch.

local F = 8   -- XRL_GCRA_FIXED: ARGV 1 to F are the fixed figures
-- Globals read per source are made locals once (a local is a register, a
-- global a table lookup).
local KEYS, ARGV, type, tonumber, unpack = KEYS, ARGV, type, tonumber, unpack
local rcall, rpcall = redis.call, redis.pcall
local t = rcall('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local take, host = ARGV[1] == '1', ARGV[2]
local window, life = tonumber(ARGV[3]), tonumber(ARGV[4])
local iv, span, nd = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local since0 = tonumber(ARGV[8])
local slack = math.min(math.ceil(span / iv), iv / 2)
local m = #KEYS - nd
if #ARGV ~= F + m + 2 * nd then
  return redis.error_reply(string.format('xrl gcra: %d arguments for %d keys (%d with demand), expected %d: see user/daemon/xrl_script_args.h', #ARGV, #KEYS, nd, F + m + 2 * nd))
end
local fmt, max, floor, ceil, out = string.format, math.max, math.floor, math.ceil, {}
-- Per distinct per-source argument (most sources of a round bring the
-- same few): n, since, the TAT's growth g = ceil(n x interval) in µs as a
-- number and as text for INCRBY, and whether the host expects the TAT
-- ahead (a leading '+').
local memo = {}
local function parse(v)
  local since, w = since0, v
  if string.byte(v, 1) == 43 then w = string.sub(v, 2) end
  local n = tonumber(w)
  if not n then
    local a, b = string.match(w, '^(%d+)@(%d+)$')
    n, since = tonumber(a), tonumber(b)
  end
  local g = ceil(n * iv)
  local c = { n, since, g, fmt('%d', g), w ~= v and not take and n > 0 }
  memo[v] = c
  return c
end
-- The end of the life-long slot after the one a TAT falls in: its expiry.
local function slot_end(tat) return (floor(tat / life) + 2) * life end
-- Write TAT nxt to key k, whose TAT was tat (stored: a key was there).
local function put(k, nxt, tat, stored)
  local e = slot_end(nxt)
  if stored and e == slot_end(tat) then
    rcall('SET', k, fmt('%d', nxt), 'KEEPTTL')
  else
    rcall('SET', k, fmt('%d', nxt), 'PXAT', fmt('%d', e / 1000))
  end
end
-- Sources expected ahead come first (the daemon sorts them so); while
-- they last (record mode, admissions, '+'): one INCRBY, whose reply is the
-- new TAT, and no read. If the TAT was in fact behind (or missing: INCRBY
-- made it g), it is set to now - since + g after it; if INCRBY is refused
-- (an older xrl's fraction, or not a string), the source is read first
-- with the rest. From the first other source on, all are read with one
-- MGET and each written back with its new TAT.
local r0 = m + 1
for i = 1, m do
  local c = memo[ARGV[F + i]] or parse(ARGV[F + i])
  local new = c[5] and rpcall('INCRBY', KEYS[i], c[4])
  if type(new) ~= 'number' then r0 = i break end
  local g = c[3]
  local tat, base = new - g, now - c[2]
  if tat >= base then
    -- written; a new expiry only when the TAT moved to a later slot
    -- slot_end(new) ~= slot_end(tat), written out: this runs for every source
    local sn = floor(new / life)
    if sn ~= floor(tat / life) then rcall('PEXPIREAT', KEYS[i], fmt('%d', (sn + 2) * life / 1000)) end
  else
    new = base + g
    put(KEYS[i], new, tat, tat ~= 0)
  end
  out[i] = new - now
end
if r0 <= m then
  local tats = rcall('MGET', unpack(KEYS, r0, m))
  for i = r0, m do
    local v = ARGV[F + i]
    local c = memo[v] or parse(v)
    local n, g, stored = c[1], c[3], tats[i - r0 + 1]
    local tat = tonumber(stored) or 0
    local granted = 0
    if n > 0 then
      local base = max(tat, now - c[2])
      local nxt = ceil(base) + g
      -- take: a TAT is whole µs and each take grows it by ceil(n x
      -- interval), so a burst of B takes runs up to B µs past B x interval
      -- (the data path's intervals carry picoseconds): the test allows that
      -- slack, which stays below half a token
      if not take or nxt - now <= span + slack then
        -- in place when the TAT stays in its slot and grows from itself, else put
        if not (stored and base == tat and slot_end(nxt) == slot_end(tat) and
                type(rpcall('INCRBY', KEYS[i], c[4])) == 'number') then
          put(KEYS[i], nxt, tat, stored)
        end
        granted, tat = n, nxt
      end
    end
    out[i] = tat - now
    if take then out[m + i] = granted end
  end
end
-- The demand hash's own expiry (ms, absolute) is kept in it as field MARK,
-- which no host id can be (they have no spaces): HGETALL brings it along,
-- and the key's expiry is renewed (to two windows past now) only when less
-- than a window is left, not at every report. An older xrl takes MARK for
-- a host long gone and deletes it; it then renews the expiry itself.
-- A host's field is "SEEN RATE" (µs of Redis' clock, packets/s): one pass
-- over the hash finds this host's previous rate, the mark and the live
-- hosts' rates, each value cut at its space with a plain find (a pattern
-- match with captures costs Lua about twice as much), and a table of hosts
-- gone is made only when there is one. What Redis does per demand key is
-- its HGETALL and HSET (and, once a window, the expiry), which are both
-- needed; the Lua around them is most of the rest.
local MARK, wms, nowms = ' x', ceil(window / 1000), floor(now / 1000)
local find, sub, exp = string.find, string.sub, math.exp
local a, o = F + 1 + m, #out
for j = 1, nd do
  local dkey = KEYS[m + j]
  local el = max(tonumber(ARGV[a + 1]), 1)
  local rate = tonumber(ARGV[a]) * 1000000 / el
  local all = rcall('HGETALL', dkey)
  local others, live, gone, x = 0, 1, nil, 0
  for k = 1, #all, 2 do
    local f, v = all[k], all[k + 1]
    if f == MARK then
      x = tonumber(v) or 0
    else
      local sp = find(v, ' ', 1, true)
      if f == host then
        local r = sp and tonumber(sub(v, sp + 1))
        if r then rate = r + (rate - r) * (1 - exp(-el / 1000000)) end
      elseif sp and now - (tonumber(sub(v, 1, sp - 1)) or 0) <= window then
        live, others = live + 1, others + (tonumber(sub(v, sp + 1)) or 0)
      elseif gone then
        gone[#gone + 1] = f
      else
        gone = { f }
      end
    end
  end
  if gone then rcall('HDEL', dkey, unpack(gone)) end
  if x - nowms >= wms then
    rcall('HSET', dkey, host, fmt('%d %.3f', now, rate))
  else
    x = nowms + 2 * wms
    rcall('HSET', dkey, host, fmt('%d %.3f', now, rate), MARK, fmt('%d', x))
    rcall('PEXPIREAT', dkey, fmt('%d', x))
  end
  local sum = rate + others
  out[o + 1] = (sum > 0 and rate / sum or 1 / live) * 1000000
  out[o + 2] = live
  o, a = o + 2, a + 2
end
return out
