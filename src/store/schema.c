/* The job store's schema: versioned migrations, oldest first (docs/service-schema.md). */
#include "store_int.h"

/*
 * A migration, once released, never changes: a new column or table is a new
 * migration with the next version.  Each runs inside the transaction that
 * records its version, so a database is at one version or the next, never
 * between.  Timestamps are integer milliseconds UTC from the database clock.
 */
static const char migration_1[] =
    "CREATE TABLE courses ("
    " id {id},"
    " name TEXT NOT NULL UNIQUE,"
    " daily_cpu_cap DOUBLE PRECISION,"
    " created_ms BIGINT NOT NULL);"

    "CREATE TABLE tokens ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " scope TEXT NOT NULL CHECK (scope IN ('submit', 'instructor', 'admin')),"
    " selector TEXT NOT NULL UNIQUE,"
    " secret_sha256 TEXT NOT NULL,"
    " created_ms BIGINT NOT NULL,"
    " revoked_ms BIGINT);"

    "CREATE TABLE blobs ("
    " sha256 TEXT PRIMARY KEY,"
    " size BIGINT NOT NULL,"
    " data {blob} NOT NULL,"
    " created_ms BIGINT NOT NULL);"

    "CREATE TABLE assignments ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " name TEXT NOT NULL,"
    " created_ms BIGINT NOT NULL,"
    " UNIQUE (course_id, name));"

    "CREATE TABLE assignment_versions ("
    " id {id},"
    " assignment_id BIGINT NOT NULL REFERENCES assignments(id),"
    " version_no INTEGER NOT NULL,"
    " archive_sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    " image_pin TEXT NOT NULL,"
    " created_ms BIGINT NOT NULL,"
    " UNIQUE (assignment_id, version_no));"

    "CREATE TABLE submissions ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " version_id BIGINT NOT NULL REFERENCES assignment_versions(id),"
    " student TEXT,"
    " idempotency_key TEXT,"
    " callback_url TEXT,"
    " blob_sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    " received_ms BIGINT NOT NULL,"
    " UNIQUE (course_id, idempotency_key));"
    "CREATE INDEX submissions_student ON submissions (course_id, student);"

    "CREATE TABLE jobs ("
    " id {id},"
    " submission_id BIGINT NOT NULL REFERENCES submissions(id),"
    " version_id BIGINT NOT NULL REFERENCES assignment_versions(id),"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " kind TEXT NOT NULL CHECK (kind IN ('grade', 'regrade')),"
    " state TEXT NOT NULL CHECK (state IN ('queued', 'running', 'done', 'error')),"
    " attempt INTEGER NOT NULL DEFAULT 0,"
    " max_attempts INTEGER NOT NULL,"
    " lease_token TEXT,"
    " lease_ms BIGINT NOT NULL DEFAULT 0,"
    " lease_expires_ms BIGINT,"
    " worker TEXT,"
    " host TEXT,"
    " not_before_ms BIGINT NOT NULL,"
    " not_gradable INTEGER NOT NULL DEFAULT 0,"
    " error TEXT,"
    " received_ms BIGINT NOT NULL,"
    " queued_ms BIGINT NOT NULL,"
    " started_ms BIGINT,"
    " sandbox_ready_ms BIGINT,"
    " finished_ms BIGINT,"
    " delivered_ms BIGINT);"
    /* Only unfinished jobs: a claim never walks past the done ones. */
    "CREATE INDEX jobs_runnable ON jobs (id) WHERE state IN ('queued', 'running');"
    "CREATE INDEX jobs_submission ON jobs (submission_id, id);"

    "CREATE TABLE results ("
    " id {id},"
    " job_id BIGINT NOT NULL UNIQUE REFERENCES jobs(id),"
    " submission_id BIGINT NOT NULL REFERENCES submissions(id),"
    " version_id BIGINT NOT NULL REFERENCES assignment_versions(id),"
    " attempt INTEGER NOT NULL,"
    " doc TEXT NOT NULL,"
    " score DOUBLE PRECISION,"
    " max_score DOUBLE PRECISION,"
    " cpu_seconds DOUBLE PRECISION NOT NULL,"
    " gib_seconds DOUBLE PRECISION NOT NULL,"
    " created_ms BIGINT NOT NULL);"
    "CREATE INDEX results_submission ON results (submission_id, id);"

    "CREATE TABLE attempts ("
    " job_id BIGINT NOT NULL REFERENCES jobs(id),"
    " attempt INTEGER NOT NULL,"
    " worker TEXT NOT NULL,"
    " host TEXT NOT NULL,"
    " started_ms BIGINT NOT NULL,"
    " ended_ms BIGINT,"
    " outcome TEXT NOT NULL"
    "  CHECK (outcome IN ('running', 'done', 'failed', 'lease_expired', 'released')),"
    " reason TEXT,"
    " PRIMARY KEY (job_id, attempt));"

    "CREATE TABLE outbox ("
    " id {id},"
    " job_id BIGINT NOT NULL REFERENCES jobs(id),"
    " result_id BIGINT NOT NULL REFERENCES results(id),"
    " submission_id BIGINT NOT NULL REFERENCES submissions(id),"
    " url TEXT NOT NULL,"
    " payload TEXT NOT NULL,"
    " delivery_id TEXT NOT NULL UNIQUE,"
    " state TEXT NOT NULL CHECK (state IN ('pending', 'delivered', 'failed')),"
    " attempts INTEGER NOT NULL DEFAULT 0,"
    " next_try_ms BIGINT NOT NULL,"
    " created_ms BIGINT NOT NULL,"
    " delivered_ms BIGINT,"
    " last_status INTEGER,"
    " last_error TEXT);"
    "CREATE INDEX outbox_due ON outbox (state, next_try_ms);"

    "CREATE TABLE deliveries ("
    " outbox_id BIGINT NOT NULL REFERENCES outbox(id),"
    " n INTEGER NOT NULL,"
    " at_ms BIGINT NOT NULL,"
    " http_status INTEGER,"
    " error TEXT,"
    " PRIMARY KEY (outbox_id, n));";

/* Regrades of many submissions at once, and what each changed. */
static const char migration_2[] =
    "CREATE TABLE regrades ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " assignment_id BIGINT NOT NULL REFERENCES assignments(id),"
    " version_id BIGINT NOT NULL REFERENCES assignment_versions(id),"
    " scope TEXT NOT NULL CHECK (scope IN ('submission', 'student', 'latest', 'all')),"
    " student TEXT,"
    " created_ms BIGINT NOT NULL);"

    "CREATE TABLE regrade_jobs ("
    " regrade_id BIGINT NOT NULL REFERENCES regrades(id),"
    " job_id BIGINT NOT NULL REFERENCES jobs(id),"
    " submission_id BIGINT NOT NULL REFERENCES submissions(id),"
    " prev_result_id BIGINT REFERENCES results(id),"
    " PRIMARY KEY (regrade_id, job_id));";

/*
 * Per-assignment policies (docs/policy.md: a JSON document the store keeps
 * as text), per-student extensions (a new due date or seconds added, never
 * both), and an index for reading an assignment's submissions (gradebook).
 */
static const char migration_3[] =
    "ALTER TABLE assignments ADD COLUMN policy TEXT;"
    "ALTER TABLE assignments ADD COLUMN policy_ms BIGINT;"

    "CREATE TABLE extensions ("
    " assignment_id BIGINT NOT NULL REFERENCES assignments(id),"
    " student TEXT NOT NULL,"
    " extra_s BIGINT,"
    " due_ms BIGINT,"
    " created_ms BIGINT NOT NULL,"
    " PRIMARY KEY (assignment_id, student),"
    " CHECK ((extra_s IS NULL) <> (due_ms IS NULL)));"

    "CREATE INDEX submissions_version ON submissions (version_id, id);";

/* The API counts a course's unfinished jobs on every submission (the queue
 * bound): from this index alone, without reading each job's row. */
static const char migration_4[] =
    "CREATE INDEX jobs_course_unfinished ON jobs (course_id) WHERE state IN ('queued', "
    "'running');";

/* Whom a submission's callback is for: 'staff' (made with an instructor's
 * token) gets the result document, anything else (a submit-scoped token,
 * and rows from before this column) the student view. */
static const char migration_5[] = "ALTER TABLE submissions ADD COLUMN callback_view TEXT;";

/*
 * Sandboxes over the API (docs/sandbox-keeper.md): who owns each, where it
 * is held, its lease and its end; and every command run in one.  A live
 * sandbox (creating or running) is found by its host when that host's
 * server restarts or its worker dies, and by its lease end when the sweep
 * looks for expired ones: both read the partial index of live rows only.
 * An exec carries its own usage so a course's day counts the execs that
 * ended that day (the daily CPU cap).
 */
static const char migration_6[] =
    "CREATE TABLE sandboxes ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " token_id BIGINT NOT NULL REFERENCES tokens(id),"
    " state TEXT NOT NULL"
    "  CHECK (state IN ('creating', 'running', 'deleted', 'expired', 'lost', 'failed')),"
    " isolation TEXT NOT NULL,"
    " image_pin TEXT NOT NULL,"
    " vcpu INTEGER,"
    " memory_mib INTEGER,"
    " disk_mib INTEGER,"
    " timeout_s INTEGER,"
    " labels TEXT NOT NULL,"
    " env TEXT NOT NULL,"
    " idempotency_key TEXT,"
    " secret TEXT NOT NULL,"
    " host_key TEXT,"
    " socket TEXT,"
    " keeper_pid BIGINT,"
    " created_ms BIGINT NOT NULL,"
    " started_ms BIGINT,"
    " lease_end_ms BIGINT NOT NULL,"
    " ended_ms BIGINT,"
    " end_reason TEXT,"
    " execs INTEGER NOT NULL DEFAULT 0,"
    " cpu_ms BIGINT NOT NULL DEFAULT 0,"
    " gib_seconds DOUBLE PRECISION NOT NULL DEFAULT 0,"
    " UNIQUE (course_id, idempotency_key));"
    "CREATE INDEX sandboxes_live ON sandboxes (host_key) "
    "WHERE state IN ('creating', 'running');"
    "CREATE INDEX sandboxes_course ON sandboxes (course_id, id);"

    "CREATE TABLE sandbox_execs ("
    " id {id},"
    " sandbox_id BIGINT NOT NULL REFERENCES sandboxes(id),"
    " argv TEXT NOT NULL,"
    " cwd TEXT,"
    " state TEXT NOT NULL CHECK (state IN ('running', 'done', 'unknown')),"
    " status TEXT,"
    " exit_code INTEGER,"
    " signal INTEGER,"
    " limits_hit TEXT,"
    " timed_out INTEGER,"
    " cpu_ms BIGINT,"
    " wall_ms BIGINT,"
    " peak_memory_kib BIGINT,"
    " peak_pids BIGINT,"
    " stdout_bytes BIGINT,"
    " stderr_bytes BIGINT,"
    " gib_seconds DOUBLE PRECISION,"
    " started_ms BIGINT NOT NULL,"
    " ended_ms BIGINT);"
    "CREATE INDEX sandbox_execs_sandbox ON sandbox_execs (sandbox_id, id);";

/*
 * Money and room for sandboxes (issue 24): a token may carry its own daily
 * spending limit (micro-dollars, at the server's prices) and a maximum of
 * live sandboxes, both NULL for none; a sandbox may carry the metered cost
 * at which it is destroyed.  A create counts its token's live sandboxes and
 * a token's spending reads its sandboxes of the day: both by this index,
 * whose live rows (ended_ms NULL) come first.
 */
static const char migration_7[] =
    "ALTER TABLE tokens ADD COLUMN daily_spend_micros BIGINT;"
    "ALTER TABLE tokens ADD COLUMN max_live_sandboxes INTEGER;"
    "ALTER TABLE sandboxes ADD COLUMN max_cost_micros BIGINT;"
    "CREATE INDEX sandboxes_token ON sandboxes (token_id, ended_ms);";

/*
 * Templates of sandboxes (docs/sandbox-keeper.md, "Templates"): a
 * sandbox's writable tree kept as a content-addressed blob under a name
 * and its next version, so that a sandbox on any host can start from it.
 * A removed one keeps its row (deleted_ms) and its version number is never
 * given again.
 */
static const char migration_8[] =
    "CREATE TABLE sandbox_templates ("
    " id {id},"
    " course_id BIGINT NOT NULL REFERENCES courses(id),"
    " name TEXT NOT NULL,"
    " version_no INTEGER NOT NULL,"
    " blob_sha256 TEXT NOT NULL REFERENCES blobs(sha256),"
    " bytes BIGINT NOT NULL,"
    " source_sandbox_id BIGINT REFERENCES sandboxes(id),"
    " created_ms BIGINT NOT NULL,"
    " deleted_ms BIGINT,"
    " UNIQUE (course_id, name, version_no));"
    "ALTER TABLE sandboxes ADD COLUMN template TEXT;";

const struct store_migration store_migrations[] = {
    {1, migration_1},
    {2, migration_2},
    {3, migration_3},
    {4, migration_4},
    {5, migration_5},
    {6, migration_6},
    {7, migration_7},
    {8, migration_8},
};
const size_t store_migration_count = sizeof(store_migrations) / sizeof(store_migrations[0]);
