# xrl: XDP rate limiter. `make` builds, `make test` runs every test, `make demo` shows it working.
BUILD     ?= build
CC        ?= gcc
CLANG     ?= clang
BPFTOOL   ?= bpftool
ARCH_INC  := /usr/include/$(shell $(CC) -dumpmachine)
CFLAGS    ?= -O2 -g
CFLAGS    += -Wall -Wextra -Ibpf -Iuser -I$(BUILD)
BPF_CFLAGS := -O2 -g -target bpf -mcpu=v3 -Wall -Wextra -I$(ARCH_INC) -Ibpf
LIBS_BPF  := -lbpf -lelf -lz
# what the controller library (LIB_OBJS) links against
LIBS_LIB  := $(LIBS_BPF) -ljansson -lmicrohttpd -lpthread
LIBS_XRL  := -lxdp $(LIBS_LIB)
PREFIX    ?= /usr/local

BPF_HDRS  := $(wildcard bpf/*.h)
# every BPF program of the tree, product and bench alike (check-bpf-headers reads them all)
BPF_SRCS  := $(wildcard bpf/*.bpf.c scripts/bench_path.d/*.bpf.c bench/*.bpf.c)
USER_HDRS := $(wildcard user/*.h)
# controller library shared by the CLI and the tests
LIB_SRCS  := user/xrl_rule.c user/xrl_opts.c user/xrl_maps.c user/xrl_format.c user/xrl_metrics.c user/xrl_metrics_http.c
LIB_OBJS  := $(patsubst user/%.c,$(BUILD)/%.o,$(LIB_SRCS))
# the daemon: fleet sync through Redis (also linked by the Redis tests), limit events
FLEET_SRCS := user/xrl_redis.c user/xrl_scripts.c user/xrl_fleet.c user/xrl_log.c user/xrl_events.c
FLEET_SRCS += user/xrl_script_args.c user/xrl_fleet_report.c user/xrl_fleet_sync.c user/xrl_fleet_floor.c \
	      user/xrl_fleet_metrics.c
FLEET_OBJS := $(patsubst user/%.c,$(BUILD)/%.o,$(FLEET_SRCS))
# the Lua scripts of user/lua/, embedded as strings (.incbin)
FLEET_OBJS += $(BUILD)/xrl_scripts_lua.o
LIBS_FLEET := -lhiredis -lpthread -lm
XRL_SRCS  := user/xrl.c user/xrl_loader.c user/xrl_cmd_rule.c user/xrl_cmd_stats.c user/xrl_cmd_top.c user/xrl_cmd_block.c \
	     user/xrl_daemon.c user/xrl_term.c user/xrl_watch.c user/xrl_top_watch.c user/xrl_stats_watch.c
XRL_OBJS  := $(patsubst user/%.c,$(BUILD)/%.o,$(XRL_SRCS))

UNIT_TESTS := $(BUILD)/test_bucket $(BUILD)/test_rule
PROG_TESTS := $(BUILD)/test_prog $(BUILD)/test_policy $(BUILD)/test_cpus $(BUILD)/test_metrics $(BUILD)/test_parse $(BUILD)/test_fuzz
REDIS_TESTS := $(BUILD)/test_redis

.SECONDARY:
.PHONY: FORCE all deps test unit-test prog-test e2e-test demo bench install deb clean check-bpf-headers deb-test
all: $(BUILD)/xrl $(BUILD)/xrl.bash $(BUILD)/xrl_bench $(BUILD)/xrl_bench_ctl $(BUILD)/xrl_bench_fleet $(UNIT_TESTS) $(PROG_TESTS) $(REDIS_TESTS)

$(BUILD):
	mkdir -p $@

# production object reads the kernel clock; the test object takes time from a map
$(BUILD)/%.bpf.o: bpf/%.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/xrl_test.bpf.o: bpf/xrl.bpf.c $(BPF_HDRS) | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -DXRL_TEST_CLOCK -c $< -o $@

# skeleton of build/NAME.bpf.o is build/NAME.skel.h with struct NAME_bpf
$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $*_bpf > $@

$(BUILD)/%.o: user/%.c $(BPF_HDRS) $(USER_HDRS) $(BUILD)/xrl.skel.h | $(BUILD)
	$(CC) $(CFLAGS) -c $< -o $@

$(BUILD)/xrl_scripts_lua.o: user/xrl_scripts_lua.S $(wildcard user/lua/*.lua) | $(BUILD)
	$(CC) -c $< -o $@

# xrl --version: git describe, or the VERSION file outside git; libxdp has no
# version call, so its version at build time. The stamp changes with them.
XRL_VERSION    := $(shell $(if $(wildcard .git),git describe --tags --always --dirty 2>/dev/null ||) cat VERSION 2>/dev/null || echo unknown)
LIBXDP_VERSION := $(shell pkg-config --modversion libxdp 2>/dev/null || echo unknown)
$(BUILD)/version.stamp: FORCE | $(BUILD)
	@echo '$(XRL_VERSION) $(LIBXDP_VERSION)' | cmp -s - $@ || echo '$(XRL_VERSION) $(LIBXDP_VERSION)' >$@
$(BUILD)/xrl.o: CFLAGS += -DXRL_VERSION='"$(XRL_VERSION)"' -DXRL_LIBXDP_VERSION='"$(LIBXDP_VERSION)"'
$(BUILD)/xrl.o: $(BUILD)/version.stamp
FORCE:

$(BUILD)/xrl: $(XRL_OBJS) $(LIB_OBJS) $(FLEET_OBJS)
	$(CC) $(CFLAGS) $^ -o $@ $(LIBS_XRL) $(LIBS_FLEET)

# tests
$(BUILD)/test_bucket: tests/unit/test_bucket.c $(BUILD)/xrl_rule.o $(BUILD)/xrl_opts.o $(BPF_HDRS)
	$(CC) $(CFLAGS) $< $(BUILD)/xrl_rule.o $(BUILD)/xrl_opts.o -o $@ -lcmocka -ljansson
# reads scripts/etc/rules, the rules file the package installs
$(BUILD)/test_rule: tests/unit/test_rule.c $(LIB_OBJS) $(BPF_HDRS) $(USER_HDRS) scripts/etc/rules
	$(CC) $(CFLAGS) -DXRL_SRC_DIR='"$(CURDIR)"' $< $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_prog: tests/prog/test_prog.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h $(BUILD)/xrl_clock.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_prog.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)
# issue 12: evasion by parsing, exact fixtures; and the parser against an independent model
$(BUILD)/test_parse: tests/prog/test_parse.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_parse.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/test_fuzz: tests/prog/test_fuzz.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_fuzz.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ $(LIBS_LIB)
$(BUILD)/test_policy: tests/prog/test_policy.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_policy.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)

$(BUILD)/test_cpus: tests/prog/test_cpus.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/test_cpus.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)
# runs $(BUILD)/xrl (stats --json) and reads docs/grafana-xrl.json
$(BUILD)/test_metrics: tests/prog/test_metrics.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h | $(BUILD)/xrl
	$(CC) $(CFLAGS) -Itests/prog -DXRL_SRC_DIR='"$(CURDIR)"' -DXRL_BUILD_DIR='"$(abspath $(BUILD))"' \
		tests/prog/test_metrics.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ -lcmocka $(LIBS_LIB)
$(BUILD)/xrl_bench: tests/prog/xrl_bench.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(LIB_OBJS) $(BUILD)/xrl_test.skel.h $(BUILD)/xrl.skel.h $(BUILD)/xrl_drop.skel.h $(BUILD)/xrl_clock.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/xrl_bench.c tests/prog/xrl_testlib.c $(LIB_OBJS) -o $@ $(LIBS_LIB)

$(BUILD)/test_redis: tests/redis/test_redis.c $(FLEET_OBJS) $(LIB_OBJS)
	$(CC) $(CFLAGS) $< $(FLEET_OBJS) $(LIB_OBJS) -o $@ -lcmocka $(LIBS_FLEET) $(LIBS_LIB)

$(BUILD)/xrl_bench_fleet: tests/prog/xrl_bench_fleet.c tests/prog/xrl_testlib.c tests/prog/xrl_testlib.h $(FLEET_OBJS) $(LIB_OBJS) $(BUILD)/xrl_test.skel.h
	$(CC) $(CFLAGS) -Itests/prog tests/prog/xrl_bench_fleet.c tests/prog/xrl_testlib.c $(FLEET_OBJS) $(LIB_OBJS) -o $@ $(LIBS_FLEET) $(LIBS_LIB)

$(BUILD)/xrl_bench_ctl: tests/prog/xrl_bench_ctl.c $(LIB_OBJS)
	$(CC) $(CFLAGS) $< $(LIB_OBJS) -o $@ $(LIBS_LIB)

# frame generator of the path bench's no-skb cases (bench/): BPF program and its runner
all: $(BUILD)/xdp_gen
$(BUILD)/xdp_gen.bpf.o: bench/xdp_gen.bpf.c | $(BUILD)
	$(CLANG) $(BPF_CFLAGS) -c $< -o $@
$(BUILD)/xdp_gen: bench/xdp_gen.c $(BUILD)/xdp_gen.skel.h
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
	@scripts/bench

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
	install -d -m 0755 $(1)$(3)
	sed 's|/usr/local/sbin/xrl|$(2)/sbin/xrl|g' scripts/systemd/xrl@.service >$(1)$(3)/xrl@.service && chmod 0644 $(1)$(3)/xrl@.service
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
