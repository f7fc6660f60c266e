# Ripple top-level Makefile.
#
#   make            build everything into $(O) (default: build/)
#   make check      install missing Debian packages, build, run every test suite
#   make demo       install missing Debian packages, build, run the demo
#   make V=1        show the full commands
#   make install    PREFIX=/usr/local DESTDIR=; make uninstall; make deb (tools/packaging/deploy/Build.mk)
#   make ARCH=arm64 cross-build everything for aarch64 into build/arm64
#
# Everything is built out of tree. Each directory adds its targets through a
# Build.mk fragment (bpf/Build.mk, agent/Build.mk, ...); the fragments only
# append to the variables below and use the pattern rules defined here:
#   %.bpf.c -> $(O)/bpf/%.bpf.o -> $(O)/include/ripple/skel/%.skel.h
#   %.cc / %.c -> $(O)/obj/%.o -> libraries in $(O)/lib, programs in $(O)/bin
#
# Test suites register themselves for `make check`:
#   GTEST_SUITES  GoogleTest binaries
#   TAP_SUITES    programs or scripts that print TAP (kselftest harness, shell)
#   SKIPPED_SUITES  suites this machine cannot build, by name (SKIP_WHY_<name> says why):
#                 make check counts each as skipped rather than dropping it silently

# --- target architecture ----------------------------------------------------
# ARCH is the kernel's name of the target (x86, arm64): it picks the BPF target
# (-D__TARGET_ARCH_$(ARCH)). The real targets are aarch64. By default it is the
# host's; CROSS_COMPILE=aarch64-linux-gnu- alone implies ARCH=arm64. An ARCH that
# is not the host's cross-builds with Debian's cross toolchain and multiarch
# libraries into build/$(ARCH), with vmlinux.h from that architecture's Debian
# kernel (tools/packaging/cross/kernel-btf.sh). Documentation/build.md.
arch_of = $(shell echo $(1) | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/' \
	-e 's/ppc64le/powerpc/' -e 's/riscv64/riscv/' -e 's/s390x/s390/')
UNAME_M := $(shell uname -m)
HOST_ARCH := $(call arch_of,$(UNAME_M))
ifeq ($(origin ARCH),undefined)
ARCH := $(if $(CROSS_COMPILE),$(call arch_of,$(firstword $(subst -, ,$(CROSS_COMPILE)))),$(HOST_ARCH))
endif
CROSS_TRIPLET_arm64 := aarch64-linux-gnu
CROSS_TRIPLET_x86 := x86_64-linux-gnu
ifneq ($(ARCH),$(HOST_ARCH))
CROSS_COMPILE ?= $(CROSS_TRIPLET_$(ARCH))-
O ?= build/$(ARCH)
endif
ifneq ($(CROSS_COMPILE),)
ifneq ($(filter default undefined,$(origin CC)),)
CC := $(CROSS_COMPILE)gcc
endif
ifneq ($(filter default undefined,$(origin CXX)),)
CXX := $(CROSS_COMPILE)g++
endif
ifneq ($(filter default undefined,$(origin AR)),)
AR := $(CROSS_COMPILE)ar
endif
# The target's .pc files (Debian's pkgconf:arm64 provides aarch64-linux-gnu-pkg-config).
PKG_CONFIG ?= $(CROSS_COMPILE)pkg-config
endif
PKG_CONFIG ?= pkg-config
# make SANITIZE=address,undefined (or thread): the same build and suites with those
# sanitizers, into its own output folder (default build/san-<list>); tests/sanitize/.
comma := ,
ifneq ($(SANITIZE),)
O ?= build/san-$(subst $(comma),-,$(SANITIZE))
# -O1 (after COMMON_FLAGS' -O2, so it wins): what the sanitizers' own documentation
# advises, and it compiles the instrumented tree about 40 % faster.
SAN_FLAGS := -fsanitize=$(SANITIZE) -fno-sanitize-recover=all -Wno-maybe-uninitialized -O1
endif

O ?= build
abs_O := $(abspath $(O))

ifeq ($(V),1)
Q :=
msg :=
else
Q := @
msg = @printf '  %-8s %s\n' "$(1)" "$(patsubst $(abs_O)/%,%,$(patsubst $(O)/%,%,$(2)))";
endif

CLANG ?= clang
BPFTOOL ?= bpftool
CXX ?= g++
CC ?= gcc
NVCC ?= $(firstword $(wildcard /usr/local/cuda/bin/nvcc) nvcc)
NPROC := $(shell nproc)

# vmlinux.h: generated from the running kernel's BTF unless VMLINUX_H names a file;
# cross-building, from the BTF of the target architecture's Debian kernel.
ifeq ($(ARCH),$(HOST_ARCH))
VMLINUX_BTF ?= /sys/kernel/btf/vmlinux
else
VMLINUX_BTF ?= $(O)/btf/vmlinux
endif
VMLINUX_H ?= $(O)/include/vmlinux.h

# The kselftest harness comes from Debian's kernel source package at build time.
LINUX_SOURCE_TAR ?= /usr/src/linux-source-6.1.tar.xz
KSELFTEST_DIR := $(O)/include/kselftest

BPF_CFLAGS := -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) -Wall -Werror \
	-I$(O)/include -Iinclude $(BPF_EXTRA_CFLAGS)

COMMON_FLAGS := -O2 -g -Wall -Wextra -Werror=return-type -fno-omit-frame-pointer \
	-I. -Iinclude -I$(O)/include -MMD -MP $(SAN_FLAGS)
CXXFLAGS ?=
CFLAGS ?=
# Eigen (the pricing core's fit), headers only and the same on every architecture: set
# once here for every C++ unit (-isystem: its warnings are not ours).
EIGEN_CFLAGS := -isystem /usr/include/eigen3
RIPPLE_CXXFLAGS := -std=gnu++20 $(COMMON_FLAGS) $(EIGEN_CFLAGS) $(CXXFLAGS)
RIPPLE_CFLAGS := -std=gnu11 $(COMMON_FLAGS) $(CFLAGS)
LDLIBS_BPF := -lbpf -lelf -lz
LDLIBS_LOG := -lspdlog -lfmt -pthread
LDLIBS_GTEST := -lgtest_main -lgtest -lgmock -pthread

# Lists the fragments append to.
BPF_OBJS :=
SKELETONS :=
LIBS :=
BINS :=
TEST_BINS :=
GTEST_SUITES :=
TAP_SUITES :=
SKIPPED_SUITES :=
# Targets make check makes after the build and before the suites (a fragment's own build
# steps, so that a suite's time bound covers its runs, not its compiling).
CHECK_PREPARE :=
# Foreign architectures make check also builds (into $(O)/ARCH) and the suites
# it runs for them, as tests/run-suites specs (tests/cross/Build.mk).
CHECK_ARCHS :=
CHECK_SUITES =
GENERATED_HEADERS := $(VMLINUX_H) $(KSELFTEST_DIR)/kselftest_harness.h

# objs: source files -> object files under $(O)/obj
objs = $(patsubst %.c,$(O)/obj/%.o,$(patsubst %.cc,$(O)/obj/%.o,$(1)))

.DEFAULT_GOAL := all
.DELETE_ON_ERROR:
.SECONDARY:
.PHONY: all build check demo deps clean install

include $(sort $(wildcard */Build.mk */*/Build.mk */*/*/Build.mk))

all: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build

build: $(GENERATED_HEADERS) $(SKELETONS) $(LIBS) $(BINS) $(TEST_BINS)

deps:
	@tools/packaging/deps/install.sh

check: deps
	@$(if $(filter-out $(HOST_ARCH),$(ARCH)),echo "make check: run it without ARCH= or CROSS_COMPILE=:" \
		"on an x86_64 host it builds and runs the arm64 suites itself" >&2; exit 2)
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@$(foreach a,$(CHECK_ARCHS),$(MAKE) --no-print-directory -j$(NPROC) ARCH=$(a) O=$(O)/$(a) build && \
		{ tools/packaging/deps/binfmt.sh $(a) || true; } &&) true
	@$(if $(CHECK_PREPARE),$(MAKE) --no-print-directory $(CHECK_PREPARE))
	@tools/packaging/deps/mount-fs.sh
	@O=$(abs_O) tests/run-suites $(foreach s,$(GTEST_SUITES),gtest:$(s)) \
		$(foreach s,$(TAP_SUITES),tap:$(s)) $(foreach s,$(SKIPPED_SUITES),'skip:$(s):$(SKIP_WHY_$(s))') \
		$(CHECK_SUITES)

demo: deps
	@$(MAKE) --no-print-directory -j$(NPROC) build
	@O=$(abs_O) tools/bench/demo.sh

clean:
	rm -rf $(O)

# --- generated headers ------------------------------------------------------

ifeq ($(VMLINUX_H),$(O)/include/vmlinux.h)
$(VMLINUX_H): $(filter $(O)/%,$(VMLINUX_BTF))
	@mkdir -p $(@D)
	@test -r $(VMLINUX_BTF) || { echo "kernel lacks BTF: $(VMLINUX_BTF) not readable (set VMLINUX_H=path/to/vmlinux.h)"; exit 1; }
	$(call msg,GEN,$@)$(BPFTOOL) btf dump file $(VMLINUX_BTF) format c > $@
endif

ifneq ($(ARCH),$(HOST_ARCH))
$(O)/btf/vmlinux: tools/packaging/cross/kernel-btf.sh
	@mkdir -p $(@D)
	$(call msg,BTF,$@)tools/packaging/cross/kernel-btf.sh $(ARCH) $@
endif

$(KSELFTEST_DIR)/kselftest_harness.h: $(LINUX_SOURCE_TAR)
	@mkdir -p $(@D)
	$(call msg,EXTRACT,$@)tar -xJf $< -C $(@D) --strip-components=4 \
		linux-source-6.1/tools/testing/selftests/kselftest.h \
		linux-source-6.1/tools/testing/selftests/kselftest_harness.h
	@touch $@

# --- pattern rules ----------------------------------------------------------

$(O)/bpf/%.bpf.o: bpf/%.bpf.c $(VMLINUX_H) $(wildcard include/ripple/bpf/*.h) | $(VMLINUX_H)
	@mkdir -p $(@D)
	$(call msg,BPF,$@)$(CLANG) $(BPF_CFLAGS) -c $< -o $@

$(O)/include/ripple/skel/%.skel.h: $(O)/bpf/%.bpf.o
	@mkdir -p $(@D)
	$(call msg,GEN-SKEL,$@)$(BPFTOOL) gen skeleton $< name $(subst -,_,$*)_bpf > $@

$(O)/obj/%.o: %.cc | $(GENERATED_HEADERS) $(SKELETONS)
	@mkdir -p $(@D)
	$(call msg,CXX,$@)$(CXX) $(RIPPLE_CXXFLAGS) $(CXXFLAGS_$(subst /,_,$*)) -c $< -o $@

$(O)/obj/%.o: %.c | $(GENERATED_HEADERS) $(SKELETONS)
	@mkdir -p $(@D)
	$(call msg,CC,$@)$(CC) $(RIPPLE_CFLAGS) $(CFLAGS_$(subst /,_,$*)) -c $< -o $@

$(O)/lib/%.a:
	@mkdir -p $(@D)
	$(call msg,AR,$@)rm -f $@ && $(AR) rcs $@ $^

-include $(shell find $(O)/obj $(O)/pic -name '*.d' 2>/dev/null)

# Link recipes for fragments: set LDLIBS as a target-specific variable.
define link_cxx
	@mkdir -p $(@D)
	$(call msg,LINK,$@)$(CXX) $(RIPPLE_CXXFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS)
endef
define link_c
	@mkdir -p $(@D)
	$(call msg,LINK,$@)$(CC) $(RIPPLE_CFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS)
endef
