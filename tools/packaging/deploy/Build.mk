# tools/packaging/deploy: make install / uninstall / deb (Documentation/deploy.md).
#
#   make install   [PREFIX=/usr/local] [SYSCONFDIR=/etc] [DESTDIR=]
#   make uninstall [same]
#   make deb       build/deb/ripple_<version>_<arch>.deb, with dpkg-buildpackage/debhelper
#
# tools/packaging/deploy/install.sh holds the layout; it never overwrites /etc/ripple/ripple.toml.

PREFIX ?= /usr/local
SYSCONFDIR ?= /etc
DESTDIR ?=
UNITDIR ?= $(PREFIX)/lib/systemd/system

# What install copies (the hook library only where the CUDA headers let it be built).
INSTALL_FILES := $(O)/bin/ripple-agent $(O)/bin/ripplectl $(O)/bin/ripple-run $(O)/bin/ripple-profile \
	$(filter $(O)/lib/libripple-cuhook.so,$(LIBS))

.PHONY: install uninstall deb
install: $(INSTALL_FILES)
	@O=$(abs_O) PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) DESTDIR=$(DESTDIR) UNITDIR=$(UNITDIR) tools/packaging/deploy/install.sh install

uninstall:
	@O=$(abs_O) PREFIX=$(PREFIX) SYSCONFDIR=$(SYSCONFDIR) DESTDIR=$(DESTDIR) UNITDIR=$(UNITDIR) tools/packaging/deploy/install.sh uninstall

# Install, uninstall and unit checks (TAP, bash; no root needed).
TAP_SUITES += tests/deploy/install.sh


# The unit (systemd-analyze verify/security) and the agent's Type=notify side (TAP, bash),
# and the capabilities the unit grants: enough, and each one needed (TAP, bash, root).
TAP_SUITES += tests/deploy/systemd.sh tests/deploy/caps.sh

# The Debian package (dpkg-buildpackage + debhelper; build log in $(O)/deb/build.log).
deb: $(INSTALL_FILES)
	@O=$(abs_O) tools/packaging/deploy/make-deb.sh

# The package's contents, Depends, conffile and unit scripts (TAP, bash; skips without
# dpkg-buildpackage/debhelper).
TAP_SUITES += tests/deploy/deb.sh

# Documentation/config.md against the parser's key lists and ripple-agent --check-config (TAP).
TAP_SUITES += tests/deploy/config_doc.sh
