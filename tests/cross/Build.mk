# tests/cross: the aarch64 build, checked by `make check` on an x86_64 host
# (Documentation/build.md, Documentation/results/aarch64.md). make check cross-builds
# the whole tree into $(O)/arm64 (make ARCH=arm64) and runs there, under qemu-user
# (binfmt_misc: tools/packaging/deps/binfmt.sh), every GoogleTest suite that needs no kernel
# privileges: the unit tests (protocol, pricing, admission, ...) and the interposer's
# tests against the fake driver (the dlsym trampoline's aarch64 half included).
# The BPF object, which user-mode emulation cannot load, is checked statically
# (bpf_arm64.sh), and the BPF test runner runs on Debian's arm64 kernel booted in
# qemu-system-aarch64 (bpf_arm64_vm.sh; what it sees, not its timing).
ifeq ($(ARCH)-$(HOST_ARCH),x86-x86)
CHECK_ARCHS += arm64
# Deferred (=): the fragments that register the suites are read after this one.
CHECK_SUITES += $(foreach s,$(filter $(O)/tests/unit/% $(O)/tests/cuhooks/%,$(GTEST_SUITES)),\
	gtest@arm64:$(patsubst $(O)/%,$(O)/arm64/%,$(s)))
TAP_SUITES += tests/cross/bpf_arm64.sh tests/cross/bpf_arm64_vm.sh
endif
