// A crash reporter to LD_PRELOAD where no debugger is installed (the lent GPU
// machines have no gdb): on SIGSEGV/SIGABRT it prints each frame's library and
// offset (for addr2line), then re-raises. tools/gpu_check.sh's python stage uses it.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

static void report(int sig, siginfo_t* info, void* unused) {
    (void)unused;
    void* frames[64];
    int n = backtrace(frames, 64);
    fprintf(stderr, "segv_backtrace: signal %d at address %p\n", sig, info->si_addr);
    for (int i = 0; i < n; ++i) {
        Dl_info d;
        if (dladdr(frames[i], &d) && d.dli_fname)
            fprintf(stderr, "frame %d: %s 0x%lx %s\n", i, d.dli_fname,
                    (unsigned long)((char*)frames[i] - (char*)d.dli_fbase), d.dli_sname ? d.dli_sname : "?");
        else
            fprintf(stderr, "frame %d: %p\n", i, frames[i]);
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

__attribute__((constructor)) static void install(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = report;
    sa.sa_flags = SA_SIGINFO;
    sigaction(SIGSEGV, &sa, NULL);
    sigaction(SIGABRT, &sa, NULL);
}
