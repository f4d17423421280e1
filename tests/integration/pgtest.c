/* Test helper: a private PostgreSQL server started and stopped by the suite itself. */
#include "pgtest.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

struct pgtest {
	char dir[256];
	char bindir[256];
	int port;
	int guard_fd; /* write end; the guard stops the server at EOF */
	pid_t guard;
};

static void why_set(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void why_set(char *why, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, len, fmt, ap);
	va_end(ap);
}

bool pgtest_must_work(void)
{
	const char *v = getenv("PROCTOR_MUST_WORK");
	return v && strcmp(v, "1") == 0;
}

static const char *find_runuser(void)
{
	static const char *const paths[] = {"/usr/sbin/runuser", "/sbin/runuser",
					    "/usr/bin/runuser"};

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (access(paths[i], X_OK) == 0)
			return paths[i];
	return NULL;
}

/* The newest /usr/lib/postgresql/N/bin, or $PROCTOR_PG_BINDIR. */
static int find_bindir(char *dst, size_t cap)
{
	const char *env = getenv("PROCTOR_PG_BINDIR");
	glob_t g;

	if (env && *env) {
		snprintf(dst, cap, "%s", env);
		return 0;
	}
	if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0)
		return -1;
	/* Versions sort numerically: pick the longest, then the greatest name. */
	const char *best = NULL;
	for (size_t i = 0; i < g.gl_pathc; i++) {
		const char *p = g.gl_pathv[i];
		if (!best || strlen(p) > strlen(best) ||
		    (strlen(p) == strlen(best) && strcmp(p, best) > 0))
			best = p;
	}
	snprintf(dst, cap, "%.*s", (int)(strlen(best) - strlen("/initdb")), best);
	globfree(&g);
	return 0;
}

/* Run argv (runuser ...) with stdout and stderr appended to `log`; its exit status or -1. */
static int run(char *const argv[], const char *log)
{
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (fd < 0 || null < 0)
			_exit(126);
		dup2(null, 0);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -1;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int free_port(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return ntohs(a.sin_port);
}

static void print_log(const char *path)
{
	char buf[4096];
	FILE *f = fopen(path, "re");

	if (!f)
		return;
	fprintf(stderr, "---- %s ----\n", path);
	while (fgets(buf, sizeof(buf), f))
		fputs(buf, stderr);
	fclose(f);
}

static void stop_server(const struct pgtest *pg, const char *runuser)
{
	char data[300], pg_ctl[300], log[300];

	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(pg_ctl, sizeof(pg_ctl), "%s/pg_ctl", pg->bindir);
	snprintf(log, sizeof(log), "%s/ctl.log", pg->dir);
	char *const argv[] = {(char *)runuser, "-u", "postgres", "--", pg_ctl, "-D", data, "-m",
			      "immediate",     "-w", "stop",	 NULL};
	run(argv, log);
}

static void remove_dir(const char *dir)
{
	char *const argv[] = {"/bin/rm", "-rf", "--", (char *)dir, NULL};
	run(argv, "/dev/null");
}

/* The guard: wait for EOF on the pipe, then stop the server and clean up. */
static void guard_main(const struct pgtest *pg, int rfd, const char *runuser)
{
	char c;

	setsid();
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	for (;;) {
		ssize_t n = read(rfd, &c, 1);
		if (n == 0 || (n < 0 && errno != EINTR))
			break;
	}
	stop_server(pg, runuser);
	const char *keep = getenv("PGTEST_KEEP");
	if (keep && strcmp(keep, "1") == 0)
		fprintf(stderr, "pgtest: kept %s\n", pg->dir);
	else
		remove_dir(pg->dir);
	_exit(0);
}

int pgtest_start(struct pgtest **ret, char *why, size_t why_len)
{
	const char *runuser = find_runuser();
	struct passwd *pw = getpwnam("postgres");
	char initdb[300], pg_ctl[300], data[300], log[300], opts[512];
	struct pgtest *pg;

	if (geteuid() != 0) {
		why_set(why, why_len, "not root: cannot run PostgreSQL as the postgres user");
		return 1;
	}
	if (!runuser || !pw) {
		why_set(why, why_len, "no runuser or no postgres user (install postgresql)");
		return 1;
	}
	pg = calloc(1, sizeof(*pg));
	if (!pg) {
		why_set(why, why_len, "out of memory");
		return -1;
	}
	pg->guard_fd = -1;
	if (find_bindir(pg->bindir, sizeof(pg->bindir)) < 0) {
		free(pg);
		why_set(why, why_len, "no /usr/lib/postgresql/*/bin/initdb (install postgresql)");
		return 1;
	}
	snprintf(initdb, sizeof(initdb), "%s/initdb", pg->bindir);
	snprintf(pg_ctl, sizeof(pg_ctl), "%s/pg_ctl", pg->bindir);
	if (access(initdb, X_OK) != 0 || access(pg_ctl, X_OK) != 0) {
		why_set(why, why_len, "no initdb or pg_ctl in %s", pg->bindir);
		free(pg);
		return 1;
	}
	snprintf(pg->dir, sizeof(pg->dir), "/tmp/proctor-pgtest.XXXXXX");
	if (!mkdtemp(pg->dir) || chown(pg->dir, pw->pw_uid, pw->pw_gid) < 0) {
		why_set(why, why_len, "temporary directory: %s", strerror(errno));
		free(pg);
		return -1;
	}

	/* The guard first, so that every later failure is cleaned up. */
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) < 0) {
		why_set(why, why_len, "pipe: %s", strerror(errno));
		remove_dir(pg->dir);
		free(pg);
		return -1;
	}
	pg->guard = fork();
	if (pg->guard == 0) {
		close(fds[1]);
		guard_main(pg, fds[0], runuser);
	}
	close(fds[0]);
	if (pg->guard < 0) {
		why_set(why, why_len, "fork: %s", strerror(errno));
		close(fds[1]);
		remove_dir(pg->dir);
		free(pg);
		return -1;
	}
	pg->guard_fd = fds[1];

	snprintf(data, sizeof(data), "%s/data", pg->dir);
	snprintf(log, sizeof(log), "%s/initdb.log", pg->dir);
	char *const init_argv[] = {
	    (char *)runuser, "-u",	     "postgres",  "--", initdb, "-D",	      data, "-U",
	    "postgres",	     "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C", NULL};
	if (run(init_argv, log) != 0) {
		print_log(log);
		why_set(why, why_len, "initdb failed (log above)");
		pgtest_stop(pg);
		return -1;
	}
	snprintf(log, sizeof(log), "%s/server.log", pg->dir);
	for (int tries = 0; tries < 5; tries++) {
		pg->port = free_port();
		if (pg->port <= 0)
			continue;
		snprintf(opts, sizeof(opts),
			 "-c listen_addresses=127.0.0.1 -p %d -k %s -c max_connections=200",
			 pg->port, pg->dir);
		char *const start_argv[] = {(char *)runuser,
					    "-u",
					    "postgres",
					    "--",
					    pg_ctl,
					    "-D",
					    data,
					    "-l",
					    log,
					    "-w",
					    "-t",
					    "60",
					    "-o",
					    opts,
					    "start",
					    NULL};
		char ctl_log[300];
		snprintf(ctl_log, sizeof(ctl_log), "%s/ctl.log", pg->dir);
		if (run(start_argv, ctl_log) == 0) {
			*ret = pg;
			return 0;
		}
	}
	print_log(log);
	why_set(why, why_len, "pg_ctl start failed (server log above)");
	pgtest_stop(pg);
	return -1;
}

int pgtest_port(const struct pgtest *pg)
{
	return pg->port;
}

const char *pgtest_socket_dir(const struct pgtest *pg)
{
	return pg->dir;
}

int pgtest_socket_url(const struct pgtest *pg, const char *name, char *url, size_t url_len)
{
	int n = snprintf(url, url_len, "postgresql://postgres@/%s?host=%s&port=%d", name, pg->dir,
			 pg->port);
	return n < 0 || (size_t)n >= url_len ? -1 : 0;
}

int pgtest_createdb(struct pgtest *pg, const char *name, char *url, size_t url_len, char *why,
		    size_t why_len)
{
	char admin[256], sql[256];

	for (const char *p = name; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '_')) {
			why_set(why, why_len, "database name '%s': use [a-z0-9_]", name);
			return -1;
		}
	snprintf(admin, sizeof(admin), "postgresql://postgres@127.0.0.1:%d/postgres", pg->port);
	PGconn *c = PQconnectdb(admin);
	if (PQstatus(c) != CONNECTION_OK) {
		why_set(why, why_len, "connect: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	PGresult *r = PQexec(c, sql);
	int rc = PQresultStatus(r) == PGRES_COMMAND_OK ? 0 : -1;
	if (rc < 0)
		why_set(why, why_len, "%s: %s", sql, PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
	if (rc == 0)
		snprintf(url, url_len, "postgresql://postgres@127.0.0.1:%d/%s", pg->port, name);
	return rc;
}

void pgtest_stop(struct pgtest *pg)
{
	if (!pg)
		return;
	if (pg->guard_fd >= 0)
		close(pg->guard_fd);
	if (pg->guard > 0) {
		int status;
		while (waitpid(pg->guard, &status, 0) < 0 && errno == EINTR)
			;
	}
	free(pg);
}

int pgtest_group_start(struct pgtest **ret, char *skip, size_t skip_len)
{
	char why[512];
	int rc = pgtest_start(ret, why, sizeof(why));

	if (rc == 1) {
		if (pgtest_must_work()) {
			fprintf(stderr, "PostgreSQL needed (PROCTOR_MUST_WORK=1): %s\n", why);
			return -1;
		}
		snprintf(skip, skip_len, "%s", why);
		fprintf(stderr, "skipping PostgreSQL: %s\n", why);
		return 0;
	}
	if (rc < 0) {
		fprintf(stderr, "PostgreSQL: %s\n", why);
		return -1;
	}
	return 0;
}
