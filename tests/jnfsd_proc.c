/*
 * jnfsd_proc.c - see jnfsd_proc.h.
 */
#include "jnfsd_proc.h"

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"

void tc_jnfsd_start(struct tc_jnfsd *j, const char *bin, const char *const *args)
{
	int pfd[2];
	int nlisten = 0;
	const char *argv[64];
	int argc = 0;
	bool image = false;
	char path[96];
	argv[argc++] = bin;
	for (int i = 0; args[i]; i++) {
		if (strcmp(args[i], "--listen") == 0)
			nlisten++;
		if (strcmp(args[i], "--image") == 0)
			image = true;
		argv[argc++] = args[i];
	}
	j->dir[0] = '\0';
	if (!image) {
		strcpy(j->dir, "/tmp/jnfsd-test.XXXXXX");
		CHECK(mkdtemp(j->dir) != NULL);
		snprintf(path, sizeof(path), "%s/img", j->dir);
		argv[argc++] = "--image";
		argv[argc++] = path;
		argv[argc++] = "--size";
		argv[argc++] = "256M";
	}
	argv[argc] = NULL;
	CHECK_OK(pipe(pfd));
	j->pid = fork();
	CHECK(j->pid >= 0);
	if (j->pid == 0) {
		/* a test that dies (a failed check, a sanitizer) takes it along */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		execv(bin, (char *const *)argv);
		_exit(127);
	}
	close(pfd[1]);
	j->out_fd = pfd[0];
	j->nports = 0;
	j->metrics_port = 0;
	char line[256];
	size_t n = 0;
	while (j->nports < nlisten) {
		char ch;
		ssize_t r = read(j->out_fd, &ch, 1);
		if (r <= 0) {
			fprintf(stderr, "jnfsd exited before listening\n");
			exit(1);
		}
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		const char *colon = strrchr(line, ':');
		if (strncmp(line, "listening on ", 13) == 0 && colon)
			j->port[j->nports++] = (uint16_t)atoi(colon + 1);
		if (strncmp(line, "metrics on http://", 18) == 0 && colon)
			j->metrics_port = (uint16_t)atoi(colon + 1);
	}
}

int tc_jnfsd_stop(struct tc_jnfsd *j)
{
	int status;
	CHECK_OK(kill(j->pid, SIGTERM));
	for (int i = 0; i < 1000; i++) {
		pid_t r = waitpid(j->pid, &status, WNOHANG);
		if (r == j->pid) {
			close(j->out_fd);
			if (j->dir[0]) {
				char cmd[128];
				snprintf(cmd, sizeof(cmd), "rm -rf %s", j->dir);
				CHECK(system(cmd) == 0);
			}
			return status;
		}
		usleep(10000);
	}
	kill(j->pid, SIGKILL);
	waitpid(j->pid, &status, 0);
	fprintf(stderr, "jnfsd did not stop on SIGTERM\n");
	exit(1);
}

void tc_jnfsd_signal(struct tc_jnfsd *j, int sig, const char *reply)
{
	CHECK_OK(kill(j->pid, sig));
	char line[256];
	size_t n = 0;
	for (;;) {
		char ch;
		if (read(j->out_fd, &ch, 1) != 1) {
			fprintf(stderr, "jnfsd is gone before it printed '%s'\n", reply);
			exit(1);
		}
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		if (strcmp(line, reply) == 0)
			return;
	}
}

uint64_t tc_jnfsd_stat(struct tc_jnfsd *j, const char *name)
{
	CHECK_OK(kill(j->pid, SIGUSR1));
	/* read up to the dump's last line */
	char line[256];
	size_t n = 0;
	uint64_t value = UINT64_MAX;
	for (;;) {
		char ch;
		ssize_t r = read(j->out_fd, &ch, 1);
		if (r != 1) {
			int status = 0;
			waitpid(j->pid, &status, 0);
			fprintf(stderr, "jnfsd is gone while reading %s: %s %d\n", name,
				WIFSIGNALED(status) ? "killed by signal" : "exit status",
				WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
			exit(1);
		}
		if (ch != '\n') {
			if (n < sizeof(line) - 1)
				line[n++] = ch;
			continue;
		}
		line[n] = '\0';
		n = 0;
		char *sp = strchr(line, ' ');
		if (!sp)
			continue;
		*sp = '\0';
		if (strcmp(line, name) == 0)
			value = strtoull(sp + 1, NULL, 10);
		if (strcmp(line, "stats.end") == 0)
			break;
	}
	CHECK(value != UINT64_MAX);
	return value;
}
