# xrl: XDP rate limiter. `make` builds, `make test` runs every test, `make demo` shows it working.
BUILD     ?= build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
ARCH_INC  := /usr/include/$(shell $(CC) -dumpmachine)
CFLAGS    ?= -O2 -g
# user/lib/ is the controller library, user/daemon/ the daemon side, user/cli/ the command
# line: each layer sees its own headers and those below it (the rules below take the
# upper layers' -I away from the lower layers' objects, so an include across layers fails)
INC_LIB    := -Ibpf -Iuser/lib -I$(BUILD)
INC_DAEMON := -Iuser/daemon
INC_HTTP   := -Iuser/http
INC_CLI    := -Iuser/cli
CFLAGS    += -Wall -Wextra $(INC_LIB) $(INC_DAEMON) $(INC_HTTP) $(INC_CLI)
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Wextra -I$(ARCH_INC) -Ibpf
LIBS_BPF  := -lbpf -lelf -lz
# what the controller library (libxrl.a) links against
LIBS_LIB  := $(LIBS_BPF) -ljansson
LIBS_XRL  := -lxdp $(LIBS_LIB)
PREFIX    ?= /usr/local

BPF_HDRS  := $(wildcard bpf/*.h)
# every BPF program of the tree, product and bench alike (check-bpf-headers reads them all)
BPF_SRCS  := $(wildcard bpf/*.bpf.c bench/*.bpf.c bench/bench_path.d/*.bpf.c)
USER_HDRS := $(wildcard user/*/*.h)
# The controller library (user/lib/: rules, maps, the instance API, units, option tables;
# prints nothing), built once as $(BUILD)/libxrl.a: the CLI, the daemon side, the tests and
# the benches link it. A new .c in user/lib/ is in it without more.
LIB_SRCS  := $(wildcard user/lib/*.c)
LIB_OBJS  := $(patsubst user/lib/%.c,$(BUILD)/%.o,$(LIB_SRCS))
LIBXRL    := $(BUILD)/libxrl.a
# The daemon side (user/daemon/: fleet sync through Redis, the Lua scripts, limit events,
# log, metrics, the hardened HTTP server), $(BUILD)/libxrl_daemon.a, over libxrl.a: linked by
# xrl, the Redis and metrics tests and the fleet bench. The `xrl daemon`
# command itself is the CLI's (user/cli/xrl_cmd_daemon.c). A new .c in user/daemon/ is in it
# without more.
DAEMON_SRCS := $(wildcard user/daemon/*.c)
DAEMON_OBJS := $(patsubst user/daemon/%.c,$(BUILD)/%.o,$(DAEMON_SRCS))
# the Lua scripts of user/daemon/lua/, embedded as strings (.incbin)
DAEMON_OBJS += $(BUILD)/xrl_scripts_lua.o
LIBXRL_DAEMON := $(BUILD)/libxrl_daemon.a
LIBS_DAEMON := -lhiredis -lmicrohttpd -lpthread -lm
# The request layer (user/http/: `xrl http`, the 429 decision service for nginx and other
# gateways: rules file, keys and trusted proxies, decision, headers, main), $(BUILD)/libxrl_http.a
# over the daemon side (its HTTP server, log) and the library; the CLI's `xrl http` calls it.
HTTP_SRCS := $(wildcard user/http/*.c)
HTTP_OBJS := $(patsubst user/http/%.c,$(BUILD)/%.o,$(HTTP_SRCS))
LIBXRL_HTTP := $(BUILD)/libxrl_http.a
# The command line (user/cli/: main and the command table, one file per command family
# (the `xrl daemon` command's among them), the shared error and JSON reporter and
# instance lock (xrl_ctx.c), the live views). A
# new .c in user/cli/ is in xrl without more.
XRL_SRCS  := $(wildcard user/cli/*.c)
XRL_OBJS  := $(addprefix $(BUILD)/,$(notdir $(XRL_SRCS:.c=.o)))

UNIT_TESTS := $(BUILD)/test_bucket $(BUILD)/test_rule
UNIT_TESTS += $(BUILD)/test_algo   # --algo
UNIT_TESTS += $(BUILD)/test_fleet_keys
UNIT_TESTS += $(BUILD)/test_synproxy   # --syn-proxy
UNIT_TESTS += $(BUILD)/test_busy   # busy clients of --syn rules: the pure decisions
UNIT_TESTS += $(BUILD)/test_cluster   # redis-cluster://
UNIT_TESTS += $(BUILD)/test_http   # xrl http: rules, X-Forwarded-For, fields, decisions
PROG_TESTS := $(BUILD)/test_prog $(BUILD)/test_policy $(BUILD)/test_cpus $(BUILD)/test_metrics $(BUILD)/test_parse $(BUILD)/test_fuzz
PROG_TESTS += $(BUILD)/test_algo_prog   # --algo
PROG_TESTS += $(BUILD)/test_escalate_prog   # xrl http --escalate: the data path's drop
PROG_TESTS += $(BUILD)/test_busy_prog   # a --syn rule's limited sources that complete handshakes
PROG_TESTS += $(BUILD)/test_synproxy_prog   # --syn-proxy
REDIS_TESTS := $(BUILD)/test_redis
# a real 6-node Redis Cluster (tests/redis/cluster.sh)
REDIS_TESTS += $(BUILD)/test_redis_cluster
# the library's instance API on real pins (tests/prog/test_instance.c)
PROG_TESTS += $(BUILD)/test_instance
# a rule change writes only what differs: the data path exact after each (tests/prog/test_rules_diff.c)
PROG_TESTS += $(BUILD)/test_rules_diff

.SECONDARY:
.PHONY: FORCE all deps test unit-test prog-test e2e-test demo bench install deb clean check-bpf-headers deb-test
all: $(BUILD)/xrl $(BUILD)/xrl.bash $(BUILD)/xrl_bench $(BUILD)/xrl_bench_ctl $(BUILD)/xrl_bench_fleet $(UNIT_TESTS) $(PROG_TESTS) $(REDIS_TESTS)

$(BUILD):
	mkdir -p $@

# production object reads the kernel clock; the test object takes time from a map
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
# the benches' programs (bench/): a bare XDP_DROP, the clock and table probes
$(BUILD)/%.bpf.o: bench/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/xrl_test.bpf.o: bpf/xrl.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -DXRL_TEST_CLOCK -c $< -o $@

# skeleton of build/NAME.bpf.o is build/NAME.skel.h with struct NAME_bpf
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

# objects are $(BUILD)/NAME.o whatever the folder; the library's see only user/lib/, the
# daemon side's user/lib/ and user/daemon/
$(BUILD)/%.o: user/lib/%.c $(BPF_HDRS) $(USER_HDRS) $(BUILD)/xrl.skel.h | $(BUILD)
	$(CC) $(filter-out $(INC_DAEMON) $(INC_HTTP) $(INC_CLI),$(CFLAGS)) -c $< -o $@
# the SYN proxy's tc program (bpf/xrl_tc.bpf.c) is loaded from its own skeleton
$(BUILD)/xrl_tc.o: $(BUILD)/xrl_tc.skel.h
$(BUILD)/%.o: user/daemon/%.c $(BPF_HDRS) $(USER_HDRS) $(BUILD)/xrl.skel.h | $(BUILD)
	$(CC) $(filter-out $(INC_HTTP) $(INC_CLI),$(CFLAGS)) -c $< -o $@
$(BUILD)/%.o: user/http/%.c $(BPF_HDRS) $(USER_HDRS) $(BUILD)/xrl.skel.h | $(BUILD)
	$(CC) $(filter-out $(INC_CLI),$(CFLAGS)) -c $< -o $@
$(BUILD)/%.o: user/cli/%.c $(BPF_HDRS) $(USER_HDRS) $(BUILD)/xrl.skel.h | $(BUILD)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/xrl_scripts_lua.o: user/daemon/xrl_scripts_lua.S $(wildcard user/daemon/lua/*.lua) | $(BUILD)
	$(CC) -c $< -o $@

$(LIBXRL): $(LIB_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(LIBXRL_DAEMON): $(DAEMON_OBJS)
	rm -f $@ && $(AR) rcs $@ $^
$(LIBXRL_HTTP): $(HTTP_OBJS)
	rm -f $@ && $(AR) rcs $@ $^

# xrl --version: git describe, or the VERSION file outside git; libxdp has no
# version call, so its version at build time. The stamp changes with them.
XRL_VERSION    := $(shell $(if $(wildcard .git),git describe --tags --always --dirty 2>/dev/null ||) cat VERSION 2>/dev/null || echo unknown)
LIBXDP_VERSION := $(shell pkg-config --modversion libxdp 2>/dev/null || echo unknown)
# the package's version (0.1.0+gc63f3c9), what make deb names the package: xrl --version says both
XRL_PKG_VERSION := $(shell scripts/mkdeb --version-of '$(XRL_VERSION)' 2>/dev/null || echo '$(XRL_VERSION)')
$(BUILD)/version.stamp: FORCE | $(BUILD)
	@echo '$(XRL_VERSION) $(LIBXDP_VERSION)' | cmp -s - $@ || echo '$(XRL_VERSION) $(LIBXDP_VERSION)' >$@
$(BUILD)/xrl.o: CFLAGS += -DXRL_VERSION='"$(XRL_VERSION)"' -DXRL_PKG_VERSION='"$(XRL_PKG_VERSION)"' \
	-DXRL_LIBXDP_VERSION='"$(LIBXDP_VERSION)"'
$(BUILD)/xrl.o: $(BUILD)/version.stamp
FORCE:

$(BUILD)/xrl: $(XRL_OBJS) $(LIBXRL_HTTP) $(LIBXRL_DAEMON) $(LIBXRL)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS_XRL) $(LIBS_DAEMON)

# tests
$(BUILD)/test_bucket: tests/unit/test_bucket.c $(LIBXRL) $(BPF_HDRS)
	$(CC) $(CFLAGS) $< $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_synproxy: tests/unit/test_synproxy.c $(BPF_HDRS)
	$(CC) $(CFLAGS) $< -o $@ -lcmocka
$(BUILD)/test_busy: tests/unit/test_busy.c $(BPF_HDRS)
	$(CC) $(CFLAGS) $< -o $@ -lcmocka
$(BUILD)/test_algo: tests/unit/test_algo.c $(LIBXRL) $(BPF_HDRS)
	$(CC) $(CFLAGS) $< $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB) -lpthread
# the fleet's key names, linked without libbpf: the file reads no map
$(BUILD)/test_fleet_keys: tests/unit/test_fleet_keys.c $(BUILD)/xrl_fleet_keys.o $(LIBXRL) $(BPF_HDRS)
	$(CC) $(CFLAGS) $< $(BUILD)/xrl_fleet_keys.o $(LIBXRL) -o $@ -lcmocka -ljansson
# Redis Cluster routing, linked alone with hiredis: the file holds no connection
$(BUILD)/test_cluster: tests/unit/test_cluster.c $(BUILD)/xrl_cluster.o
	$(CC) $(CFLAGS) $< $(BUILD)/xrl_cluster.o -o $@ -lcmocka -lhiredis
# the request layer's rules parser, trusted proxies, fields and decisions (user/http)
# (and reads docs/grafana-xrl.json's request-layer queries)
$(BUILD)/test_http: tests/unit/test_http.c $(LIBXRL_HTTP) $(LIBXRL_DAEMON) $(LIBXRL) $(BPF_HDRS) $(USER_HDRS)
	$(CC) $(CFLAGS) -DXRL_SRC_DIR='"$(CURDIR)"' $< $(LIBXRL_HTTP) $(LIBXRL_DAEMON) $(LIBXRL) -o $@ -lcmocka $(LIBS_DAEMON) $(LIBS_LIB)
# reads scripts/etc/rules, the rules file the package installs; names rules as the fleet does
$(BUILD)/test_rule: tests/unit/test_rule.c $(BUILD)/xrl_fleet_keys.o $(LIBXRL) $(BPF_HDRS) $(USER_HDRS) scripts/etc/rules
	$(CC) $(CFLAGS) -DXRL_SRC_DIR='"$(CURDIR)"' $< $(BUILD)/xrl_fleet_keys.o $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_prog: tests/prog/test_prog.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h $(BUILD)/xrl_clock.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_prog.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
# evasion by parsing, exact fixtures; and the parser against an independent model
$(BUILD)/test_parse: tests/prog/test_parse.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_parse.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_fuzz: tests/prog/test_fuzz.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_fuzz.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ $(LIBS_LIB)
$(BUILD)/test_cpus: tests/prog/test_cpus.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_cpus.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
# -ldl: its syscall(3) counts the bpf() calls, to stop a change before each in turn
$(BUILD)/test_rules_diff: tests/prog/test_rules_diff.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_rules_diff.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB) -ldl
$(BUILD)/test_instance: tests/prog/test_instance.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_instance.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
# --algo through the program (test clock)
$(BUILD)/test_synproxy_prog: tests/prog/test_synproxy.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_synproxy.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_algo_prog: tests/prog/test_algo_prog.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL_DAEMON) $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_algo_prog.c tests/prog/xrl_testlib.c $(LIBXRL_DAEMON) $(LIBXRL) -o $@ -lcmocka $(LIBS_DAEMON) $(LIBS_LIB)
# --shadow, --block, byte-only rules through the program (test clock)
$(BUILD)/test_busy_prog: tests/prog/test_busy_prog.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_busy_prog.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_escalate_prog: tests/prog/test_escalate_prog.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_escalate_prog.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)

$(BUILD)/test_policy: tests/prog/test_policy.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_policy.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ -lcmocka $(LIBS_LIB)
# runs $(BUILD)/xrl (stats --json) and reads docs/grafana-xrl.json
$(BUILD)/test_metrics: tests/prog/test_metrics.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL_DAEMON) $(LIBXRL) $(BUILD)/xrl_test.skel.h | $(BUILD)/xrl
	$(CC) $(CFLAGS) -Itests/prog -DXRL_SRC_DIR='"$(CURDIR)"' -DXRL_BUILD_DIR='"$(abspath $(BUILD))"' \
		tests/prog/test_metrics.c tests/prog/xrl_testlib.c $(LIBXRL_DAEMON) $(LIBXRL) -o $@ -lcmocka $(LIBS_DAEMON) $(LIBS_LIB)
# the cmocka tests' shared asserting helpers (tl_*)
$(PROG_TESTS): tests/prog/xrl_tl_assert.h

$(BUILD)/test_redis_cluster: tests/redis/test_redis_cluster.c $(LIBXRL_DAEMON) $(LIBXRL)
	$(CC) $(CFLAGS) -DXRL_SRC_DIR='"$(CURDIR)"' $< $(LIBXRL_DAEMON) $(LIBXRL) -o $@ -lcmocka $(LIBS_DAEMON) $(LIBS_LIB)
$(BUILD)/test_redis: tests/redis/test_redis.c $(LIBXRL_DAEMON) $(LIBXRL)
	$(CC) $(CFLAGS) $< $(LIBXRL_DAEMON) $(LIBXRL) -o $@ -lcmocka $(LIBS_DAEMON) $(LIBS_LIB)

# benchmarks (bench/): not tests; `make bench` runs them through bench/bench
$(BUILD)/xrl_bench: bench/xrl_bench.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL) $(BUILD)/xrl_test.skel.h $(BUILD)/xrl.skel.h $(BUILD)/xrl_drop.skel.h $(BUILD)/xrl_clock.skel.h
	$(CC) $(CFLAGS) -Itests/prog bench/xrl_bench.c tests/prog/xrl_testlib.c $(LIBXRL) -o $@ $(LIBS_LIB)
$(BUILD)/xrl_bench_fleet: bench/xrl_bench_fleet.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIBXRL_DAEMON) $(LIBXRL) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog bench/xrl_bench_fleet.c tests/prog/xrl_testlib.c $(LIBXRL_DAEMON) $(LIBXRL) -o $@ $(LIBS_DAEMON) $(LIBS_LIB)
$(BUILD)/xrl_bench_ctl: bench/xrl_bench_ctl.c $(LIBXRL)
	$(CC) $(CFLAGS) $< $(LIBXRL) -o $@ $(LIBS_LIB)

# frame generator of the path bench's no-skb cases (bench/): BPF program and its runner
all: $(BUILD)/xdp_gen
$(BUILD)/xdp_gen.bpf.o: bench/xdp_gen.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/xdp_gen: bench/xdp_gen.c $(BUILD)/xdp_gen.skel.h
	$(CC) $(CFLAGS) $< -o $@ $(LIBS_BPF)
# bench/bench_newconn.sh --probe's timeline of xrl's counters and the SYNs on each veth end
all: $(BUILD)/newconn_probe
$(BUILD)/newconn_probe: bench/newconn_probe.c bpf/xrl_common.h | $(BUILD)
	$(CC) $(CFLAGS) $< -o $@ $(LIBS_BPF)
# the parser fuzzer for longer: FUZZ_FRAMES frames per policy from FUZZ_SEED (default: the time; it is printed)
FUZZ_FRAMES ?= 100000
FUZZ_SEED   ?= $(shell date +%s)
.PHONY: fuzz
fuzz: $(BUILD)/test_fuzz
	$(BUILD)/test_fuzz --seed $(FUZZ_SEED) --frames $(FUZZ_FRAMES)

deps:
	@scripts/deps.sh

# no BPF object may include a glibc header (they need libc6-dev-i386 under -target bpf)
check-bpf-headers:
	@scripts/check-bpf-headers $(CLANG) "$(BPF_CFLAGS)" $(BPF_SRCS)

unit-test: $(UNIT_TESTS)
	@for t in $(UNIT_TESTS); do echo "== $$t"; $$t || exit 1; done

prog-test: $(PROG_TESTS)
	@for t in $(PROG_TESTS); do echo "== $$t"; $$t || exit 1; done

e2e-test: $(BUILD)/xrl
	@for t in tests/e2e/test_*.sh; do echo "== $$t"; XRL=$(BUILD)/xrl bash $$t || exit 1; done

test: deps
	@$(MAKE) --no-print-directory check-bpf-headers
	@$(MAKE) --no-print-directory all
	@tests/run_all.sh $(BUILD) $(UNIT_TESTS) $(PROG_TESTS) $(REDIS_TESTS)

demo: deps
	@$(MAKE) --no-print-directory check-bpf-headers
	@$(MAKE) --no-print-directory $(BUILD)/xrl
	@scripts/demo

bench: deps
	@$(MAKE) --no-print-directory all
	@bench/bench

# bash completion, made by xrl from its option and command tables
$(BUILD)/xrl.bash: $(BUILD)/xrl
	$(BUILD)/xrl help completion >$@.tmp && mv $@.tmp $@

# The files of xrl, for make install and make deb alike (the package's list):
# $(call install-files,ROOT,PREFIX,UNITDIR). The units name $(PREFIX)/sbin/xrl;
# an existing /etc/xrl/rules is kept (the package's conffile).
define install-files
	install -D -m 0755 $(BUILD)/xrl $(1)$(2)/sbin/xrl
	install -d -m 0755 $(1)$(2)/share/man/man8
	gzip -9n <docs/xrl.8 >$(1)$(2)/share/man/man8/xrl.8.gz && chmod 0644 $(1)$(2)/share/man/man8/xrl.8.gz
	install -D -m 0644 $(BUILD)/xrl.bash $(1)$(2)/share/bash-completion/completions/xrl
	install -d -m 0755 $(1)$(3) $(1)$(2)/lib/xrl $(1)$(2)/share/doc/xrl/examples
	sed 's|/usr/local/|$(2)/|g; s|/usr/share/doc/|$(2)/share/doc/|g' scripts/systemd/xrl@.service >$(1)$(3)/xrl@.service && chmod 0644 $(1)$(3)/xrl@.service
	sed 's|/usr/local/|$(2)/|g' scripts/systemd/xrl-http@.service >$(1)$(3)/xrl-http@.service && chmod 0644 $(1)$(3)/xrl-http@.service
	sed 's|/usr/local/|$(2)/|g; s|/usr/share/doc/|$(2)/share/doc/|g' scripts/systemd/xrl-unit-start >$(1)$(2)/lib/xrl/xrl-unit-start && chmod 0755 $(1)$(2)/lib/xrl/xrl-unit-start
	install -m 0644 scripts/deb/copyright $(1)$(2)/share/doc/xrl/copyright
	install -m 0644 scripts/etc/xrl-NAME.default $(1)$(2)/share/doc/xrl/examples/xrl-NAME.default
	[ -e $(1)/etc/xrl/rules ] || install -D -m 0644 scripts/etc/rules $(1)/etc/xrl/rules
endef
UNITDIR ?= /etc/systemd/system

install: $(BUILD)/xrl $(BUILD)/xrl.bash
	$(call install-files,$(DESTDIR),$(PREFIX),$(UNITDIR))

# build/xrl_VERSION_amd64.deb (dpkg-deb; the same files as make install, under /usr)
deb: $(BUILD)/xrl $(BUILD)/xrl.bash
	rm -rf $(BUILD)/deb && mkdir -p $(BUILD)/deb
	$(call install-files,$(BUILD)/deb,/usr,/lib/systemd/system)
	scripts/mkdeb $(BUILD) $(BUILD)/deb

# the package installed for real with apt-get, checked, removed and purged (changes the system:
# scripts/fresh-check runs it in its fresh root; not part of make test)
deb-test: deps
	@$(MAKE) --no-print-directory deb
	@bash tests/pkg/test_deb.sh $$(ls -t $(BUILD)/xrl_*.deb | head -1)

clean:
	rm -rf $(BUILD)
