/* Test helper: a private PostgreSQL server started and stopped by the suite itself. */
#ifndef PROCTOR_TEST_PGTEST_H
#define PROCTOR_TEST_PGTEST_H

#include <stdbool.h>
#include <stddef.h>

/*
 * pgtest_start() runs Debian's PostgreSQL as the `postgres` user (it refuses
 * root): initdb in a fresh directory under /tmp owned by postgres, then
 * pg_ctl start with `listen_addresses=127.0.0.1`, a free loopback port and
 * the socket in that directory; trust authentication, loopback only.
 *
 * A guard process (its own session, so a test runner killing the test's
 * process group does not take it along) holds the read end of a pipe: when
 * the test process exits for any reason, even SIGKILL or an ASan abort,
 * the guard runs `pg_ctl -m immediate stop` and removes the directory.
 * pgtest_stop() just closes the pipe and waits for the guard.  With
 * PGTEST_KEEP=1 in the environment the directory (and its server.log) is
 * kept and its path printed.
 *
 * Processes forked by the test inherit the pipe's write end; they should
 * _exit() when done, as they would anyway.
 */
struct pgtest;

/* Returns 0 with *ret set; 1 when PostgreSQL (binaries, the postgres user,
 * runuser, root) is not there, with the reason in `why` (skip, unless the
 * caller must work); -1 when it is there but failed to start. */
int pgtest_start(struct pgtest **ret, char *why, size_t why_len);

/* A cmocka group's PostgreSQL: pgtest_start() and what a group does with
 * its answer.  0 with *ret set; 0 with the reason in `skip` (printed) when
 * PostgreSQL is not there, for the group's tests to skip; -1 (printed)
 * when it failed to start, or is not there and PROCTOR_MUST_WORK=1. */
int pgtest_group_start(struct pgtest **ret, char *skip, size_t skip_len);

/* CREATE DATABASE `name` and write its URL
 * (postgresql://postgres@127.0.0.1:PORT/name) into url. */
int pgtest_createdb(struct pgtest *pg, const char *name, char *url, size_t url_len, char *why,
		    size_t why_len);

/* The server's port. */
int pgtest_port(const struct pgtest *pg);

/* The directory holding the server's Unix socket: a path, so a process in
 * another network namespace (a simulated host with only its own loopback)
 * still reaches the server through it.  Owned by postgres, mode 0700: root
 * processes only. */
const char *pgtest_socket_dir(const struct pgtest *pg);

/* The URL of database `name` (made by pgtest_createdb) through that socket:
 * postgresql://postgres@/name?host=DIR&port=PORT (the port names the
 * socket file).  -1 when it does not fit. */
int pgtest_socket_url(const struct pgtest *pg, const char *name, char *url, size_t url_len);

/* Stop the server and remove its directory; accepts NULL. */
void pgtest_stop(struct pgtest *pg);

/* True when PROCTOR_MUST_WORK=1: a missing PostgreSQL is a failure. */
bool pgtest_must_work(void);

#endif
