/*
 * fault_trace.c
 *		A diagnostic for faults that kill a backend where no debugger is at
 *		hand (the GPU host has none): with the environment variable
 *		GJ_FAULT_TRACE set in the server's environment, SIGBUS and SIGSEGV
 *		write the faulting address, the /proc/self/maps line it falls in and
 *		a backtrace to stderr (the server log) before the default action
 *		kills the process as usual; and the stages of backend exit after
 *		the GPU was used are logged.  Off by default; nothing is installed.
 *
 * Written for the SIGBUS seen at exit of long GPU sessions
 * (docs/troubleshooting.md).  The handler uses snprintf, which is not
 * async-signal-safe; it only ever runs on the way down.
 */
#include "postgres.h"

#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "storage/ipc.h"

#include "gpujoin.h"

static bool tracing = false;

static void
say(const char *s)
{
	ssize_t		r = write(2, s, strlen(s));

	(void) r;
}

/* The maps line holding addr, read with plain system calls. */
static void
print_mapping(uintptr_t addr)
{
	char		buf[8192],
				line[512];
	int			fd = open("/proc/self/maps", O_RDONLY);
	int			len = 0;
	ssize_t		n;

	if (fd < 0)
		return;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
	{
		for (ssize_t i = 0; i < n; i++)
		{
			if (buf[i] != '\n')
			{
				if (len < (int) sizeof(line) - 2)
					line[len++] = buf[i];
				continue;
			}
			line[len] = '\0';
			{
				unsigned long lo = strtoul(line, NULL, 16);
				char	   *dash = strchr(line, '-');
				unsigned long hi = dash ? strtoul(dash + 1, NULL, 16) : 0;

				if (addr >= lo && addr < hi)
				{
					say("gpujoin fault trace: mapping ");
					say(line);
					say("\n");
				}
			}
			len = 0;
		}
	}
	close(fd);
}

/* Wall-clock seconds, to line the trace up with the server log. */
static double
NowSeconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double) ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The first step of proc_exit. */
static void
ExitBegins(int code, Datum arg)
{
	GjFaultTraceNote("exit: begins");
}

static void
fault_handler(int sig, siginfo_t *si, void *uc)
{
	char		msg[256];
	void	   *frames[64];
	int			k;

	(void) uc;
	snprintf(msg, sizeof(msg), "gpujoin fault trace: pid %d thread %ld signal %d code %d addr %p at %.3f\n",
			 (int) getpid(), (long) syscall(SYS_gettid), sig, si->si_code, si->si_addr,
			 NowSeconds());
	say(msg);
	print_mapping((uintptr_t) si->si_addr);
	k = backtrace(frames, 64);
	backtrace_symbols_fd(frames, k, 2);
	/* SA_RESETHAND: returning re-runs the access under the default action */
}

/* From _PG_init: install the handlers when GJ_FAULT_TRACE is set. */
void
GjFaultTraceInit(void)
{
	struct sigaction sa;

	if (getenv("GJ_FAULT_TRACE") == NULL)
		return;
	tracing = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fault_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGBUS, &sa, NULL);
	sigaction(SIGSEGV, &sa, NULL);
	before_shmem_exit(ExitBegins, (Datum) 0);
}

/* After the GPU was first used; and at stages of exit. */
void
GjFaultTraceNote(const char *what)
{
	char		msg[160];

	if (!tracing)
		return;
	snprintf(msg, sizeof(msg), "gpujoin fault trace: pid %d %s at %.3f\n", (int) getpid(), what,
			 NowSeconds());
	say(msg);
}
