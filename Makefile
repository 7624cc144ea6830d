# flightrec: the one top-level Makefile.
#
# Artifacts are staged in build/ with the install layout (build/bin/flightrec,
# build/lib/flightrec/libmcount.so), so `flightrec record` finds its libraries relative to its
# own path both in the tree and once installed.
#
# Two flavours of every shared object file:
#   build/rt/   runtime flags: -fPIC, hidden visibility, never sanitizers or instrumentation
#               (the runtimes run inside the traced program).
#   build/host/ host flags: CLI, readers and unit tests; ASAN=1 / TSAN=1 apply here only.
#
# Targets: all, install [DESTDIR=STAGE] PREFIX=DIR, uninstall, check, bench, fuzz, clean.
# Knobs: V=1, ASAN=1, TSAN=1, DEBUG=1.

-include config.mk

PREFIX ?= $(or $(PREFIX_DEFAULT),/usr/local)
CC ?= gcc
CLANG ?= clang

ifneq ($(V),1)
Q := @
msg = @printf '  %-8s %s\n' $(1) $(2);
endif

OPT := $(if $(DEBUG),-O0,-O2)
WARN := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
COMMON := -std=gnu11 -g $(OPT) $(WARN) -D_GNU_SOURCE -I. -Iinclude -MMD -MP

# Runtime code: no sanitizers; hot-path code must not touch SSE/x87 registers so that the
# trampolines need not save them (-mgeneral-regs-only applies to the hook files only).
RT_CFLAGS := $(COMMON) -fPIC -fvisibility=hidden -fno-omit-frame-pointer \
	-fno-stack-protector -ftls-model=initial-exec -fno-strict-aliasing
SAN_FLAGS :=
ifeq ($(ASAN),1)
SAN_FLAGS += -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
endif
ifeq ($(TSAN),1)
SAN_FLAGS += -fsanitize=thread
endif
HOST_CFLAGS := $(COMMON) -fno-omit-frame-pointer $(SAN_FLAGS)
HOST_LDFLAGS := $(SAN_FLAGS)

B := build
# librecord: the format-neutral core. Salvage is offline code (flightrec salvage/record): host
# builds only, never in a runtime. The exec/_exit wrappers: in every runtime (linked
# explicitly: nothing refers to them), never in the CLI.
SALVAGE_SRCS := $(wildcard librecord/rec_salvage*.c)
REC_WRAP_SRC := librecord/rec_wrap_exec.c
REC_SRCS := $(filter-out $(SALVAGE_SRCS) $(REC_WRAP_SRC),$(wildcard librecord/*.c))
REC_ASM := $(wildcard librecord/*.S)
REC_RT_OBJS := $(REC_SRCS:%.c=$(B)/rt/%.o) $(REC_ASM:%.S=$(B)/rt/%.o)
REC_HOST_OBJS := $(REC_SRCS:%.c=$(B)/host/%.o) $(REC_ASM:%.S=$(B)/host/%.o) \
	$(SALVAGE_SRCS:%.c=$(B)/host/%.o)
REC_WRAP_OBJ := $(REC_WRAP_SRC:%.c=$(B)/rt/%.o)
CFLAGS_rec_wrap_exec := -fno-builtin

# formats/<name>/: one archive per format and flavour. The writer (every file but read_*,
# salvage_*, cli_* and conv_*) goes into the runtimes (build/rt/formats/libfmt-<name>.a); the
# whole format, reader, salvager, converter and command entry included, into the host archive
# (build/host/formats/libfmt-<name>.a). formats/common is the readers' toolkit (host only),
# formats/xcode the function events any hook writes into any format (both).
FORMATS := uftrace xray ovni cacheray tfile chrome speedscope folded xcode common
fmt_srcs = $(wildcard formats/$(1)/*.c)
fmt_host_only = formats/$(1)/read_% formats/$(1)/salvage_% formats/$(1)/cli_% formats/$(1)/conv_%
fmt_rt_srcs = $(filter-out $(call fmt_host_only,$(1)),$(call fmt_srcs,$(1)))
fmt_rt = $(B)/rt/formats/libfmt-$(1).a
fmt_host = $(B)/host/formats/libfmt-$(1).a
FMT_HOST_LIBS := $(foreach f,$(FORMATS),$(call fmt_host,$(f)))
# the formats' table (formats/salvagers.c) and every host archive, in a group: formats use one
# another (a sink of one format decodes with xcode, readers share common)
FMT_HOST := $(B)/host/formats/salvagers.o -Wl,--start-group $(FMT_HOST_LIBS) -Wl,--end-group
FMT_HOST_DEPS := $(B)/host/formats/salvagers.o $(FMT_HOST_LIBS)

# the formats each runtime writes (any function hook into any function format)
FN_FORMATS := uftrace xray tfile chrome xcode
fmt_rt_objs = $(foreach f,$(1),$(patsubst %.c,$(B)/rt/%.o,$(call fmt_rt_srcs,$(f))))
fmt_rt_libs = $(foreach f,$(1),$(call fmt_rt,$(f)))

MC_SRCS := $(wildcard libmcount/*.c)
MC_ASM := $(wildcard libmcount/*.S)
CLI_SRCS := $(wildcard cli/*.c)
UNIT_SRCS := $(wildcard tests/unit/test_*.c)

MC_OBJS := $(MC_SRCS:%.c=$(B)/rt/%.o) $(MC_ASM:%.S=$(B)/rt/%.o) $(REC_WRAP_OBJ)
# the CLI checks the record-time filters with the runtime's own parser
CLI_OBJS := $(CLI_SRCS:%.c=$(B)/host/%.o) $(B)/host/libmcount/mcount_filter.o \
	$(B)/host/libmcount/mcount_argspec.o $(B)/host/libmcount/mcount_dynsel.o
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)

XRAY_SRCS := $(wildcard xray-rt/*.c)
XRAY_ASM := $(wildcard xray-rt/*.S)
XRAY_OBJS := $(XRAY_SRCS:%.c=$(B)/rt/%.o) $(XRAY_ASM:%.S=$(B)/rt/%.o) $(REC_WRAP_OBJ)
OVNI_SRCS := $(wildcard ovni-rt/*.c)
OVNI_OBJS := $(OVNI_SRCS:%.c=$(B)/rt/%.o) $(REC_WRAP_OBJ)
CACHERAY_SRCS := $(wildcard cacheray-rt/*.c)
CACHERAY_ASM := $(wildcard cacheray-rt/*.S)
CACHERAY_OBJS := $(CACHERAY_SRCS:%.c=$(B)/rt/%.o) $(CACHERAY_ASM:%.S=$(B)/rt/%.o) \
	$(REC_WRAP_OBJ)

LIBRECORD_RT := $(B)/rt/librecord.a
LIBRECORD_HOST := $(B)/host/librecord.a
LIBMCOUNT := $(B)/lib/flightrec/libmcount.so
FLIGHTREC := $(B)/bin/flightrec
LIBXRAY := $(if $(XRAY_SRCS),$(B)/lib/flightrec/libxray-rt.so $(B)/lib/flightrec/libxray-rt.a)
LIBOVNI := $(if $(OVNI_SRCS),$(B)/lib/libovni.so.1 $(B)/lib/libovni.so $(B)/include/ovni.h)
LIBCACHERAY := $(if $(CACHERAY_SRCS),$(B)/lib/flightrec/libcacheray-rt.so \
	$(B)/lib/flightrec/libcacheray-rt.a $(B)/include/cacheray_rtta.h)

RUNTIME_LIBS := -lelf -lpthread -ldl

all: $(LIBMCOUNT) $(LIBXRAY) $(LIBOVNI) $(LIBCACHERAY) $(FLIGHTREC)

$(B)/rt/%.o: %.c config.mk
	$(call msg,CC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(RT_CFLAGS) $(CFLAGS_$(notdir $*)) -c -o $@ $<

$(B)/rt/%.o: %.S
	$(call msg,AS,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(RT_CFLAGS) -c -o $@ $<

$(B)/host/%.o: %.S
	$(call msg,AS,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HOST_CFLAGS) -c -o $@ $<

$(B)/host/%.o: %.c config.mk
	$(call msg,CC,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HOST_CFLAGS) -c -o $@ $<

$(LIBRECORD_RT): $(REC_RT_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(LIBRECORD_HOST): $(REC_HOST_OBJS)
	$(call msg,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# one archive per format and flavour (see FORMATS above)
define fmt_archives
$(call fmt_rt,$(1)): $(patsubst %.c,$(B)/rt/%.o,$(call fmt_rt_srcs,$(1)))
	$$(call msg,AR,$$@)
	@mkdir -p $$(dir $$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^

$(call fmt_host,$(1)): $(patsubst %.c,$(B)/host/%.o,$(call fmt_srcs,$(1)))
	$$(call msg,AR,$$@)
	@mkdir -p $$(dir $$@)
	$$(Q)rm -f $$@ && ar rcs $$@ $$^
endef
$(foreach f,$(FORMATS),$(eval $(call fmt_archives,$(f))))

# libmcount: hook files are compiled so that they never use SSE/x87 registers; the wrappers
# define libc names (longjmp, execve, ...) with their own prototypes
CFLAGS_mcount_hooks := -mgeneral-regs-only
CFLAGS_mcount_plt := -mgeneral-regs-only
# mcount_args runs before the instrumented function reads its float arguments: no vector
# register, and no loop turned into a memcpy/memset call (libc's use them)
CFLAGS_mcount_args := -mgeneral-regs-only -fno-tree-loop-distribute-patterns
# mcount_read (read= triggers) runs from the entry and exit hooks' filtering paths: the same
CFLAGS_mcount_read := -mgeneral-regs-only -fno-tree-loop-distribute-patterns
CFLAGS_mcount_wrap := -fno-builtin
# prologue relocation for -P: libcapstone's header when configure found it (the library is
# loaded at run time, only when a function needs it)
CFLAGS_mcount_dynreloc := $(if $(filter on,$(HAVE_CAPSTONE)),-DMC_HAVE_CAPSTONE)
# arguments from DWARF (-a, -A FUNC): libdw's headers when configure found them (the library
# is dlopen'ed at run time, only when DWARF is asked for)
CFLAGS_mcount_dwarf := $(if $(filter on,$(HAVE_LIBDW)),-DMC_HAVE_LIBDW)
$(B)/host/libmcount/mcount_dwarf.o: HOST_CFLAGS += $(CFLAGS_mcount_dwarf)
$(LIBMCOUNT): $(MC_OBJS) $(call fmt_rt_libs,$(FN_FORMATS)) $(LIBRECORD_RT) libmcount/exports.map
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ $(MC_OBJS) $(call fmt_rt_libs,$(FN_FORMATS)) $(LIBRECORD_RT) $(RUNTIME_LIBS) -Wl,-z,nodelete -Wl,-z,defs \
		-Wl,--version-script=libmcount/exports.map

# xray-rt: LD_PRELOAD library, and an archive to link instead of compiler-rt's runtime
$(B)/lib/flightrec/libxray-rt.so: $(XRAY_OBJS) $(call fmt_rt_libs,$(FN_FORMATS)) $(LIBRECORD_RT) \
		xray-rt/exports.map
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ $(XRAY_OBJS) $(call fmt_rt_libs,$(FN_FORMATS)) $(LIBRECORD_RT) \
		$(RUNTIME_LIBS) -Wl,-z,nodelete \
		-Wl,-z,defs -Wl,--version-script=xray-rt/exports.map

$(B)/lib/flightrec/libxray-rt.a: $(XRAY_OBJS) $(call fmt_rt_objs,$(FN_FORMATS)) $(REC_RT_OBJS)
	$(call msg,AR,$@)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

# ovni-rt: a drop-in for libovni.so.1 with the original's public header
$(B)/lib/libovni.so.1: $(OVNI_OBJS) $(call fmt_rt,ovni) $(LIBRECORD_RT) ovni-rt/exports.map
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ -Wl,-soname,libovni.so.1 $(OVNI_OBJS) $(call fmt_rt,ovni) $(LIBRECORD_RT) \
		$(RUNTIME_LIBS) -Wl,-z,defs -Wl,--version-script=ovni-rt/exports.map

$(B)/lib/libovni.so: $(B)/lib/libovni.so.1
	$(Q)ln -sf libovni.so.1 $@

$(B)/include/ovni.h: ovni-rt/ovni.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

# cacheray-rt: linked instead of TSan's runtime (.so or .a) or preloaded; it defines libc
# names (memcpy, malloc, ...) with their own prototypes
CFLAGS_cr_intercept := -fno-builtin -fno-tree-loop-distribute-patterns
$(B)/lib/flightrec/libcacheray-rt.so: $(CACHERAY_OBJS) $(call fmt_rt,cacheray) $(LIBRECORD_RT) \
		cacheray-rt/exports.map
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) -shared -o $@ $(CACHERAY_OBJS) $(call fmt_rt,cacheray) $(LIBRECORD_RT) $(RUNTIME_LIBS) -Wl,-z,nodelete \
		-Wl,-z,defs -Wl,--version-script=cacheray-rt/exports.map

$(B)/lib/flightrec/libcacheray-rt.a: $(CACHERAY_OBJS) $(call fmt_rt_objs,cacheray) $(REC_RT_OBJS)
	$(call msg,AR,$@)
	@mkdir -p $(dir $@)
	$(Q)rm -f $@ && ar rcs $@ $^

$(B)/include/cacheray_rtta.h: cacheray-rt/cacheray_rtta.h
	@mkdir -p $(dir $@)
	$(Q)cp $< $@

$(FLIGHTREC): $(CLI_OBJS) $(FMT_HOST_DEPS) $(LIBRECORD_HOST)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HOST_LDFLAGS) -o $@ $(CLI_OBJS) $(FMT_HOST) $(LIBRECORD_HOST) -lelf

# the golden inputs travel with the tree; a unit test finds them by this absolute path of the
# checkout it was built from (FLIGHTREC_SAMPLES at run time overrides it)
$(B)/host/tests/unit/%.o: HOST_CFLAGS += -DFLIGHTREC_SAMPLES_DIR='"$(CURDIR)/tests/samples"'

# a unit test links the formats and librecord (host flavour) and, where it tests a front end's
# plain-C piece, that piece compiled for the host (UNIT_EXTRA_<test>)
UNIT_EXTRA_test_xray_map := $(B)/host/xray-rt/xray_map.o
UNIT_EXTRA_test_cacheray := $(B)/host/cacheray-rt/cr_options.o
UNIT_EXTRA_test_conv := $(B)/host/cli/namecount.o
UNIT_EXTRA_test_mcount_filter := $(B)/host/libmcount/mcount_filter.o
UNIT_EXTRA_test_mcount_argspec := $(B)/host/libmcount/mcount_filter.o \
	$(B)/host/libmcount/mcount_argspec.o
UNIT_EXTRA_test_mcount_dwarf := $(B)/host/libmcount/mcount_dwarf.o
UNIT_EXTRA_test_mcount_read := $(B)/host/libmcount/mcount_read.o
UNIT_EXTRA_test_mcount_dynsel := $(B)/host/libmcount/mcount_filter.o \
	$(B)/host/libmcount/mcount_dynsel.o
.SECONDEXPANSION:
$(B)/tests/unit/%: $(B)/host/tests/unit/%.o $$(UNIT_EXTRA_$$*) $(FMT_HOST_DEPS) $(LIBRECORD_HOST)
	$(call msg,LD,$@)
	@mkdir -p $(dir $@)
	$(Q)$(CC) $(HOST_LDFLAGS) -o $@ $< $(UNIT_EXTRA_$*) $(FMT_HOST) $(LIBRECORD_HOST) \
		-lcmocka -lelf -lpthread -ldl

unit: $(UNIT_BINS)

check: all unit
	$(Q)tests/run

# every front end's benchmark, one after the other (each prints its own table)
bench: all
	$(Q)for b in bench/run bench/run-*; do [ -x "$$b" ] && { echo "== $$b"; "$$b" || exit 1; }; done; true

# libFuzzer targets of the readers (fuzz/Makefile, clang): build/fuzz/fuzz_*; fuzz/run runs them
fuzz:
	$(Q)$(MAKE) -f fuzz/Makefile B=$(B) V=$(V)

# install: DESTDIR stages (packaging), PREFIX is where it will live (ovni.pc names it).
# libovni goes in under libovni 1.14's own names: libovni.so.1.14.0, its soname link
# libovni.so.1 and the development link libovni.so, with include/ovni.h and
# lib/pkgconfig/ovni.pc (same name and variables as libovni's, plus prefix= so that
# `pkg-config --define-prefix` finds a staged copy).
OVNI_LIB_VERSION := 1.14.0
D := $(DESTDIR)$(PREFIX)
MAN_PAGES := $(wildcard doc/man/*.1)
INSTALLED := bin/flightrec lib/flightrec/libmcount.so \
	$(if $(XRAY_SRCS),lib/flightrec/libxray-rt.so lib/flightrec/libxray-rt.a) \
	$(if $(OVNI_SRCS),lib/libovni.so.$(OVNI_LIB_VERSION) lib/libovni.so.1 lib/libovni.so \
		include/ovni.h lib/pkgconfig/ovni.pc) \
	$(if $(CACHERAY_SRCS),lib/flightrec/libcacheray-rt.so lib/flightrec/libcacheray-rt.a \
		include/cacheray_rtta.h) \
	$(MAN_PAGES:doc/man/%=share/man/man1/%)

install: all
	$(call msg,INSTALL,$(D))
	$(Q)install -d $(D)/bin $(D)/lib/flightrec $(D)/share/man/man1
	$(Q)install -m 755 $(FLIGHTREC) $(D)/bin/flightrec
	$(Q)install -m 755 $(LIBMCOUNT) $(D)/lib/flightrec/libmcount.so
	$(Q)$(if $(XRAY_SRCS),install -m 755 $(B)/lib/flightrec/libxray-rt.so $(D)/lib/flightrec/ && install -m 644 $(B)/lib/flightrec/libxray-rt.a $(D)/lib/flightrec/)
	$(Q)$(if $(OVNI_SRCS),install -d $(D)/include $(D)/lib/pkgconfig && \
		install -m 755 $(B)/lib/libovni.so.1 $(D)/lib/libovni.so.$(OVNI_LIB_VERSION) && \
		ln -sf libovni.so.$(OVNI_LIB_VERSION) $(D)/lib/libovni.so.1 && \
		ln -sf libovni.so.1 $(D)/lib/libovni.so && \
		install -m 644 ovni-rt/ovni.h $(D)/include/ovni.h && \
		printf 'prefix=%s\nincludedir=$${prefix}/include\nlibdir=$${prefix}/lib\n\nName: ovni\nDescription: Obtuse but Versatile Nanoscale Instrumentation (flightrec ovni-rt)\nVersion: %s\nLibs: -L$${libdir} -lovni\nCflags: -I$${includedir}\n' \
			'$(PREFIX)' '$(OVNI_LIB_VERSION)' > $(D)/lib/pkgconfig/ovni.pc && \
		chmod 644 $(D)/lib/pkgconfig/ovni.pc)
	$(Q)$(if $(CACHERAY_SRCS),install -m 755 $(B)/lib/flightrec/libcacheray-rt.so $(D)/lib/flightrec/ && install -m 644 $(B)/lib/flightrec/libcacheray-rt.a $(D)/lib/flightrec/ && install -d $(D)/include && install -m 644 cacheray-rt/cacheray_rtta.h $(D)/include/cacheray_rtta.h)
	$(Q)install -m 644 $(MAN_PAGES) $(D)/share/man/man1/

# what install put there, and the directories it made if they are left empty
uninstall:
	$(call msg,UNINSTALL,$(D))
	$(Q)rm -f $(addprefix $(D)/,$(INSTALLED))
	$(Q)for d in lib/flightrec lib/pkgconfig share/man/man1 share/man share include lib bin; do \
		rmdir $(D)/$$d 2>/dev/null; done; true

clean:
	$(Q)rm -rf $(B)

.PHONY: all unit check bench install uninstall clean fuzz
.SECONDARY:

-include $(shell find $(B) -name '*.d' 2>/dev/null)
