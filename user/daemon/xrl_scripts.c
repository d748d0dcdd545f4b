// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Redis side of fleet-wide rules: the scripts are user/daemon/lua/ (gcra.lua, hosts.lua, window.lua, log.lua, take.lua), embedded
 * at build time by user/daemon/xrl_scripts_lua.S (each NUL-terminated); Redis
 * computes their SHA1 when the daemon loads them (SCRIPT LOAD). Times are
 * Redis' own clock (TIME inside the script), in microseconds as Lua doubles
 * (53 bits: ns-exact for centuries of µs); hosts never compare their clocks
 * with each other or with Redis. Values returned as strings because Redis
 * truncates Lua numbers to integers. The layout of their arguments is
 * user/daemon/xrl_script_args.h.
 */
#include "xrl_scripts.h"

extern const char xrl_lua_gcra[], xrl_lua_hosts[], xrl_lua_window[], xrl_lua_log[],
	xrl_lua_take[];

const char *const xrl_script_source[XRL_SCRIPT_COUNT] = { xrl_lua_gcra, xrl_lua_hosts,
							  xrl_lua_window, xrl_lua_log, xrl_lua_take };
const char *const xrl_script_name[XRL_SCRIPT_COUNT] = { "gcra", "hosts", "window", "log", "take" };
