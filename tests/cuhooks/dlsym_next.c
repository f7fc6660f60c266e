/* dlsym_next: a program run with libripple-cuhook.so preloaded (cuhook_test). It checks
 * the pass-through of the dlsym trampoline (cuhooks/dlsym_trampoline.S, on this
 * architecture): a lookup the hook does not answer must reach the real dlsym with this
 * program's return address, so that RTLD_NEXT stays relative to the caller. From here the
 * next "dlsym" is the interposer's own, the one RTLD_DEFAULT finds; a wrapper calling dlsym
 * from inside the interposer would make it the C library's.
 * Prints what it found; exit status 0 when it is right. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char *where(void *p)
{
	Dl_info info;

	return p && dladdr(p, &info) && info.dli_fname ? info.dli_fname : "(none)";
}

int main(void)
{
	void *first = dlsym(RTLD_DEFAULT, "dlsym");
	void *next = dlsym(RTLD_NEXT, "dlsym");
	void *pid = dlsym(RTLD_DEFAULT, "getpid");
	int ok = 1;

	printf("RTLD_DEFAULT dlsym: %s\nRTLD_NEXT dlsym: %s\n", where(first), where(next));
	if (!strstr(where(first), "libripple-cuhook.so")) {
		printf("the interposer is not preloaded\n");
		ok = 0;
	}
	if (next != first) {
		printf("RTLD_NEXT was resolved relative to the interposer, not to the caller\n");
		ok = 0;
	}
	if (pid != (void *)getpid) {
		printf("dlsym(RTLD_DEFAULT, \"getpid\") passed through wrong: %p, not %p\n", pid,
		       (void *)getpid);
		ok = 0;
	}
	puts(ok ? "ok" : "FAILED");
	return ok ? 0 : 1;
}
