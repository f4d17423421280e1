/* proctor serve: the HTTP API, its background duties, and the in-process workers of the one-machine
 * case. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "service/api.h"
#include "service/callback.h"
#include "service/commands.h"
#include "service/http.h"
#include "service/worker.h"
#include "store/store.h"
#include "util.h"

/*
 * The main thread does the background duties between signals, once a
 * second: end the jobs whose last lease expired (store_job_sweep), fold
 * finished jobs' phase times into /metrics, deliver due callbacks, and
 * keep the worker process alive.  No duty may keep it from its signals
 * for long: a stop must be seen within about a second, so callbacks are
 * sent in slices of a tick (callback_pump), woken by a signal too.  The
 * API's threads belong to libmicrohttpd.
 *
 * `--workers N` (N > 0) runs `proctor-service worker -j N` as a child with
 * the same --db, --state-dir, --isolation, --slots and --lease: grading
 * forks sandboxes, which a process with HTTP threads must not do, so the
 * workers are a process of their own, restarted if it dies.
 */

struct serve_options {
	const char *listen;
	const char *db_url;
	unsigned workers;
	const char *isolation;
	const char *state_dir;
	unsigned slots;
	unsigned lease_s;
	const char *secret_file;
	bool callback_private;
	struct api_config api;
	struct http_limits http;
	unsigned max_upload_mb;
	unsigned queue_bound;
};

/* --price-vcpu-hour and --price-gib-hour: dollars, a number >= 0. */
static int set_price(const struct cli_option *opt, char *value, struct err *e)
{
	char *end;
	double v = strtod(value, &end);

	if (end == value || *end || !(v >= 0) || v > 1e6)
		return err_setk(e, ERR_USAGE, 0, "--%s: '%s' is not a price in dollars (>= 0)",
				opt->name, value);
	*(double *)opt->dest = v;
	return 0;
}

static pid_t spawn_worker(const struct serve_options *o)
{
	char jobs[16], slots[16], lease[16];
	char *argv[] = {(char *)"proctor-service",
			(char *)"worker",
			(char *)"--db",
			(char *)o->db_url,
			(char *)"-j",
			jobs,
			(char *)"--state-dir",
			(char *)o->state_dir,
			(char *)"--isolation",
			(char *)o->isolation,
			(char *)"--slots",
			slots,
			(char *)"--lease",
			lease,
			NULL};
	sigset_t none;

	snprintf(jobs, sizeof(jobs), "%u", o->workers);
	snprintf(slots, sizeof(slots), "%u", o->slots);
	snprintf(lease, sizeof(lease), "%u", o->lease_s);
	pid_t parent = getpid(), pid = fork();
	if (pid == 0) {
		/* A server that dies (even SIGKILL) stops its worker the gentle
		 * way: it finishes and records what it runs, then exits. */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(0);
		/* Its own process group: a terminal's Ctrl-C reaches the server,
		 * which tells the worker once (a second signal would give the
		 * running jobs back instead of finishing them). */
		setpgid(0, 0);
		/* The worker inherits nothing but stdin, stdout and stderr: the
		 * server's sockets (HTTP clients, a callback batch in flight,
		 * libcurl's own) stay the server's even where a library did not
		 * open them O_CLOEXEC.  A kernel without close_range (< 5.11)
		 * leaves them as they are. */
		close_range(3, ~0u, CLOSE_RANGE_CLOEXEC);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		execv("/proc/self/exe", argv);
		service_log("serve", "exec worker: %s", strerror(errno));
		_exit(127);
	}
	if (pid < 0)
		service_log("serve", "fork a worker: %s", strerror(errno));
	return pid;
}

/* Stop the worker: SIGTERM (it finishes its gradings), and each further
 * SIGINT or SIGTERM to the server is passed on (it gives them back). */
static void stop_worker(pid_t worker, int sig_fd)
{
	kill(worker, SIGTERM);
	while (waitpid(worker, NULL, WNOHANG) == 0) {
		struct pollfd p = {.fd = sig_fd, .events = POLLIN};
		struct signalfd_siginfo si;
		if (poll(&p, 1, 200) <= 0)
			continue;
		while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si))
			if (si.ssi_signo != SIGCHLD)
				kill(worker, SIGTERM);
	}
}

/* The period of the background duties, and the longest a duty may keep
 * the main thread from its signals. */
#define TICK_MS 1000

struct background {
	struct api *api;
	struct store *st;
	struct callback_sender *callbacks; /* NULL: no secret, none are sent */
	int64_t floor_id, after_ms, after_id;
};

/* Callback attempts into /metrics: every counter from the first tick on,
 * so a scrape sees 0 rather than nothing. */
static void count_callback_attempts(struct api *api, const struct callback_stats *cs)
{
	api_count(api, "callback_deliveries_ok", cs->delivered);
	api_count(api, "callback_deliveries_retried", cs->retried);
	api_count(api, "callback_deliveries_failed", cs->failed);
	api_count(api, "callback_deliveries_unrecorded", cs->record_errors);
}

/*
 * One round of the background duties.  Returns how long to wait for a
 * signal before the next round: 0 while callbacks are in flight (the pump
 * did the waiting, on their sockets and sig_fd), else TICK_MS.
 */
static int do_background_duties(struct background *b, const struct serve_options *o, int sig_fd)
{
	struct err e;
	int64_t ended = 0;

	if (!b->st && store_open(o->db_url, &b->st, &e) < 0) {
		service_log("serve", "store: %s", e.msg);
		return TICK_MS;
	}
	if (store_job_sweep(b->st, &ended, &e) < 0)
		goto broken;
	if (ended)
		api_count(b->api, "jobs_ended_after_last_lease", (uint64_t)ended);
	struct store_phase_times pt[256];
	size_t n;
	do {
		if (store_job_phases(b->st, &b->floor_id, &b->after_ms, &b->after_id, pt, 256, &n,
				     &e) < 0)
			goto broken;
		for (size_t i = 0; i < n; i++)
			api_observe_phases(b->api, pt[i].queued_ms, pt[i].started_ms,
					   pt[i].sandbox_ready_ms, pt[i].finished_ms);
	} while (n == 256);
	/* Before the callbacks, which return early while any is in flight. */
	api_sandbox_duties(b->api, b->st);
	if (b->callbacks) {
		struct callback_stats cs;
		int rc = callback_pump(b->callbacks, b->st, TICK_MS, sig_fd, &cs, &e);
		count_callback_attempts(b->api, &cs);
		if (rc < 0)
			goto broken;
		if (callback_in_flight(b->callbacks))
			return 0;
	}
	return TICK_MS;
broken:
	service_log("serve", "%s", e.msg);
	b->st = store_close(b->st); /* reopened next round */
	return TICK_MS;
}

static int read_callback_secret(const char *path, char *buf, size_t cap, size_t *len, struct err *e)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return err_setk(e, ERR_INPUT, errno, "--callback-secret-file '%s'", path);
	*len = fread(buf, 1, cap - 1, f);
	fclose(f);
	while (*len && (buf[*len - 1] == '\n' || buf[*len - 1] == '\r'))
		(*len)--;
	buf[*len] = '\0';
	if (*len < 16)
		return err_setk(e, ERR_INPUT, 0,
				"--callback-secret-file '%s': the secret must be at least 16 bytes",
				path);
	return 0;
}

static int serve_until_stopped(struct serve_options *o)
{
	struct background b = {0};
	struct http_server *srv = NULL;
	char secret[1024];
	size_t secret_len = 0;
	sigset_t set;
	struct err e;
	pid_t worker = -1;
	int sig_fd, status = 0, stops = 0;
	uint64_t restart_at = 0;

	o->api.db_url = o->db_url;
	/* Sandboxes over the API are held on this host, by keepers this very
	 * program runs (docs/sandbox-keeper.md). */
	o->api.state_dir = o->state_dir;
	o->api.keeper_exe = "/proc/self/exe";
	o->api.slots = o->slots;
	if (o->secret_file) {
		struct callback_config cb;
		if (read_callback_secret(o->secret_file, secret, sizeof(secret), &secret_len, &e) <
		    0)
			return cli_usage_error("%s", e.msg);
		callback_config_default(&cb);
		cb.secret = secret;
		cb.secret_len = secret_len;
		cb.allow_private = o->callback_private;
		if (callback_sender_new(&cb, &b.callbacks, &e) < 0) {
			service_log("serve", "%s", e.msg);
			return err_exit_status(e.kind);
		}
	}
	if (api_new(&o->api, &b.api, &e) < 0) {
		service_log("serve", "%s", e.msg);
		b.callbacks = callback_sender_free(b.callbacks);
		return err_exit_status(e.kind);
	}
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN); /* a client gone mid-answer is an error, not a death */
	sig_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (o->workers)
		worker = spawn_worker(o);
	if (http_server_start(o->listen, &o->http, api_gate, api_handle, b.api, &srv, &e) <
	    0) {
		service_log("serve", "%s", e.msg);
		status = e.kind == ERR_USAGE ? 2 : 3;
		goto out;
	}
	char host[64];
	snprintf(host, sizeof(host), "%.*s", (int)strcspn(o->listen, ":"), o->listen);
	service_log("serve", "listening on %s:%u (%s), %u worker%s", host,
		    (unsigned)http_server_port(srv), o->db_url, o->workers,
		    o->workers == 1 ? "" : "s");
	for (int wait_ms = TICK_MS;;) {
		struct pollfd p = {.fd = sig_fd, .events = POLLIN};
		if (poll(&p, 1, wait_ms) > 0) {
			struct signalfd_siginfo si;
			while (read(sig_fd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
				if (si.ssi_signo == SIGCHLD)
					continue;
				stops++;
			}
		}
		int ws;
		if (worker > 0 && waitpid(worker, &ws, WNOHANG) == worker) {
			service_log("serve", "the worker process %d ended (%s %d); %s", (int)worker,
				    WIFSIGNALED(ws) ? "signal" : "status",
				    WIFSIGNALED(ws) ? WTERMSIG(ws) : WEXITSTATUS(ws),
				    stops ? "stopping" : "starting another in 1 s");
			worker = -1;
			restart_at = monotonic_ms() + 1000;
			api_count(b.api, "worker_restarts", 1);
		}
		if (stops)
			break;
		if (o->workers && worker < 0 && monotonic_ms() >= restart_at)
			worker = spawn_worker(o);
		wait_ms = do_background_duties(&b, o, sig_fd);
	}
	service_log(
	    "serve",
	    "stopping: no new requests; the worker finishes its running jobs (signal again to "
	    "give them back now)");
	if (b.callbacks && callback_in_flight(b.callbacks))
		service_log("serve",
			    "%zu callback deliveries in flight are not recorded: they are sent "
			    "again when their hold ends",
			    callback_in_flight(b.callbacks));
	b.callbacks = callback_sender_free(b.callbacks); /* its connections close now */
	http_server_stop(srv);
	if (worker > 0)
		stop_worker(worker, sig_fd);
out:
	if (worker > 0 && status) {
		kill(worker, SIGTERM);
		waitpid(worker, NULL, 0);
	}
	b.callbacks = callback_sender_free(b.callbacks);
	b.st = store_close(b.st);
	api_free(b.api);
	close(sig_fd);
	return status;
}

int cmd_serve(int argc, char **argv)
{
	struct serve_options o = {.isolation = "auto",
				  .slots = CLI_DEFAULT_SLOTS,
				  .lease_s = WORKER_LEASE_S_DEFAULT,
				  .workers = 1};
	char upload_help[96], queue_help[96], wait_help[96], threads_help[96], cpu_price_help[96],
	    gib_price_help[96];

	/* The API's and the HTTP front's defaults are theirs, kept in one place
	 * (api_config_default, http_limits_default): an option overrides one,
	 * and --help shows what they are. */
	api_config_default(&o.api);
	http_limits_default(&o.http);
	o.max_upload_mb = (unsigned)(o.api.max_upload >> 20);
	o.queue_bound = (unsigned)o.api.queue_bound;
	snprintf(upload_help, sizeof(upload_help),
		 "largest submission or assignment archive, MiB (default %u)", o.max_upload_mb);
	snprintf(queue_help, sizeof(queue_help),
		 "unfinished submissions of a course before 429 (default\n%u)", o.queue_bound);
	snprintf(wait_help, sizeof(wait_help), "the longest long poll, seconds (default %u)",
		 o.api.wait_max_s);
	snprintf(threads_help, sizeof(threads_help), "threads answering requests (default %u)",
		 o.http.threads);
	snprintf(cpu_price_help, sizeof(cpu_price_help),
		 "the estimated cost of a vCPU-hour (default %g,\nE2B's list price)",
		 o.api.price_cpu_hour);
	snprintf(gib_price_help, sizeof(gib_price_help),
		 "the estimated cost of a GiB-hour of memory (default\n%g)", o.api.price_gib_hour);
	const struct cli_option opts[] = {
	    {.name = "listen",
	     .kind = CLI_STRING,
	     .value_name = "ADDR:PORT",
	     .dest = &o.listen,
	     .help = "where to answer HTTP, e.g. 127.0.0.1:8080 (port 0: any free one)"},
	    {.name = "db",
	     .kind = CLI_STRING,
	     .value_name = "URL",
	     .dest = &o.db_url,
	     .help = "the store: sqlite:PATH (default sqlite:STATE_DIR/service.db)\nor "
		     "postgresql://... (shared by workers on many hosts)"},
	    {.name = "workers",
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o.workers,
	     .max = 256,
	     .help = "grade N submissions at once on this machine (default 1;\n0: only "
		     "`proctor worker` processes grade)"},
	    CLI_OPTION_ISOLATION(&o.isolation, "an image is pinned"),
	    CLI_OPTION_STATE_DIR(&o.state_dir, "slots, images, unpacked assignments"),
	    CLI_OPTION_SLOTS(&o.slots, NULL),
	    {.name = "lease",
	     .kind = CLI_UINT,
	     .value_name = "S",
	     .dest = &o.lease_s,
	     .min = 3,
	     .max = 3600,
	     .help = "the workers' lease on a job, seconds (default " CLI_STR(
		 WORKER_LEASE_S_DEFAULT) ")"},
	    {.name = "max-upload",
	     .kind = CLI_UINT,
	     .value_name = "MB",
	     .dest = &o.max_upload_mb,
	     .min = 1,
	     .max = 256,
	     .help = upload_help},
	    {.name = "queue-bound",
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o.queue_bound,
	     .min = 1,
	     .max = 10000000,
	     .help = queue_help},
	    {.name = "wait-max",
	     .kind = CLI_UINT,
	     .value_name = "S",
	     .dest = &o.api.wait_max_s,
	     .max = 600,
	     .help = wait_help},
	    {.name = "threads",
	     .kind = CLI_UINT,
	     .value_name = "N",
	     .dest = &o.http.threads,
	     .min = 1,
	     .max = 256,
	     .help = threads_help},
	    {.name = "price-vcpu-hour",
	     .kind = CLI_CALL,
	     .value_name = "USD",
	     .dest = &o.api.price_cpu_hour,
	     .call = set_price,
	     .help = cpu_price_help},
	    {.name = "price-gib-hour",
	     .kind = CLI_CALL,
	     .value_name = "USD",
	     .dest = &o.api.price_gib_hour,
	     .call = set_price,
	     .help = gib_price_help},
	    {.name = "callback-private",
	     .kind = CLI_FLAG,
	     .dest = &o.callback_private,
	     .help = "deliver callbacks to loopback and private addresses too\n(refused by "
		     "default: a submitter could aim them inside)"},
	    {.name = "callback-secret-file",
	     .kind = CLI_STRING,
	     .value_name = "FILE",
	     .dest = &o.secret_file,
	     .help = "the HMAC-SHA256 key that signs callbacks (at least 16\nbytes); without "
		     "it no callback is delivered"},
	};
	const struct cli_command cmd = {
	    .name = "serve",
	    .synopsis = "--listen ADDR:PORT [--db URL]",
	    .about = "Answer the grading service's HTTP API (docs/api.md) and, with --workers,\n"
		     "grade on this machine too (docs/service.md).",
	    .options = opts,
	    .n_options = sizeof(opts) / sizeof(opts[0]),
	    .exit_status = "  0  stopped by SIGTERM or SIGINT\n"
			   "  2  usage error (an option, the listen address, the secret file)\n"
			   "  3  Proctor's own failure (the store cannot be opened, the port is "
			   "taken)",
	    .max_operands = 0};
	char db[PATH_MAX + 16];
	int n, r;

	o.state_dir = cli_state_dir();
	r = cli_parse(&cmd, argc, argv, &n);
	if (r != CLI_OK)
		return cli_exit_status(r);
	if (!o.listen)
		return cli_usage_error("serve: --listen is required, e.g. --listen 127.0.0.1:8080");
	if (!o.db_url) {
		snprintf(db, sizeof(db), "sqlite:%s/service.db", o.state_dir);
		o.db_url = db;
	}
	o.api.max_upload = (uint64_t)o.max_upload_mb << 20;
	o.api.queue_bound = o.queue_bound;
	o.http.max_body = (size_t)(o.api.max_upload / 3 * 4 + (1u << 20));
	return serve_until_stopped(&o);
}
