/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* The Lua scripts of user/daemon/lua/, as NUL-terminated strings (see xrl_scripts.c). */
	.section .rodata
	.globl xrl_lua_gcra
	.type xrl_lua_gcra, @object
xrl_lua_gcra:
	.incbin "user/daemon/lua/gcra.lua"
	.byte 0
	.size xrl_lua_gcra, . - xrl_lua_gcra
	.globl xrl_lua_hosts
	.type xrl_lua_hosts, @object
xrl_lua_hosts:
	.incbin "user/daemon/lua/hosts.lua"
	.byte 0
	.size xrl_lua_hosts, . - xrl_lua_hosts
	.globl xrl_lua_window
	.type xrl_lua_window, @object
xrl_lua_window:
	.incbin "user/daemon/lua/window.lua"
	.byte 0
	.size xrl_lua_window, . - xrl_lua_window
	.globl xrl_lua_log
	.type xrl_lua_log, @object
xrl_lua_log:
	.incbin "user/daemon/lua/log.lua"
	.byte 0
	.size xrl_lua_log, . - xrl_lua_log
	.globl xrl_lua_take
	.type xrl_lua_take, @object
xrl_lua_take:
	.incbin "user/daemon/lua/take.lua"
	.byte 0
	.size xrl_lua_take, . - xrl_lua_take
	.section .note.GNU-stack, "", @progbits
