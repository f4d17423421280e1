/* Views of a grade result: the student's, Gradescope's, and a terminal summary. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capbuf.h"
#include "grade/grade.h"

static bool is_visible(const json_t *test)
{
	const char *v = json_string_value(json_object_get(test, "visibility"));

	return v && strcmp(v, "visible") == 0;
}

/* A step's numbers and flags that the program controls: a submission that
 * reads hidden input (a hidden I/O case's stdin, hidden tests the build or
 * the runner can see) could encode it in any of them, a few bits per field
 * per submission.  The student view keeps a step's name, status and
 * limits_hit, and nulls these. */
static const char *const modulated[] = {
	"exit_code",	  "signal",	      "signal_name",	   "cpu_ms",
	"wall_ms",	  "peak_memory_kib",  "peak_pids",	   "stdout_bytes",
	"stderr_bytes",	  "stdout_truncated", "stderr_truncated",
};

json_t *grade_student_view(const json_t *result)
{
	json_t *v = json_deep_copy(result), *tests, *steps, *t, *s;
	size_t i, hidden = 0;

	if (!v)
		return NULL;
	json_object_set_new(v, "view", json_string("student"));
	/* Hidden tests keep their points and outcome but not their identity,
	 * nor how they failed (an I/O case's reason is the program's choice:
	 * timeout, runtime_error, wrong_answer...). */
	tests = json_object_get(v, "tests");
	steps = json_object_get(v, "steps");
	json_array_foreach(tests, i, t) {
		if (is_visible(t))
			continue;
		char name[64];
		snprintf(name, sizeof(name), "hidden test %zu", ++hidden);
		/* I/O mode: a hidden case's own step goes entirely; its test
		 * entry says passed or failed. */
		char step_name[1100];
		snprintf(step_name, sizeof(step_name), "case:%s",
			 json_string_value(json_object_get(t, "name")));
		for (size_t k = 0; k < json_array_size(steps);) {
			const char *sn =
				json_string_value(json_object_get(json_array_get(steps, k), "name"));
			if (sn && strcmp(sn, step_name) == 0)
				json_array_remove(steps, k);
			else
				k++;
		}
		json_object_set_new(t, "name", json_string(name));
		json_object_set_new(t, "classname", json_null());
		json_object_set_new(t, "message", json_null());
		if (json_object_get(t, "reason"))
			json_object_set_new(t, "reason", json_null());
	}
	/* Raw output can hold anything the submission printed, hidden tests
	 * included: the student sees verdicts, never the bytes or the numbers. */
	json_array_foreach(steps, i, s) {
		json_object_set_new(s, "stdout", json_null());
		json_object_set_new(s, "stderr", json_null());
		json_object_set_new(s, "message", json_null());
		for (size_t k = 0; k < sizeof(modulated) / sizeof(modulated[0]); k++)
			if (json_object_get(s, modulated[k]))
				json_object_set_new(s, modulated[k], json_null());
	}
	json_t *sub = json_object_get(v, "submission");
	if (sub)
		json_object_set_new(sub, "path", json_null());
	return v;
}

json_t *grade_to_gradescope(const json_t *result)
{
	json_t *gs = json_object(), *tests = json_array(), *t;
	size_t i;
	double wall = 0;

	json_array_foreach(json_object_get(result, "steps"), i, t)
		wall += (double)json_integer_value(json_object_get(t, "wall_ms")) / 1000.0;
	json_array_foreach(json_object_get(result, "tests"), i, t) {
		const char *status = json_string_value(json_object_get(t, "status"));
		json_t *msg = json_object_get(t, "message");
		json_t *reason = json_object_get(t, "reason");
		char number[32];
		snprintf(number, sizeof(number), "%zu", i + 1);
		json_array_append_new(
			tests,
			json_pack("{s:O, s:O, s:O, s:s, s:s, s:O, s:s}", "name",
				  json_object_get(t, "name"), "score", json_object_get(t, "score"),
				  "max_score", json_object_get(t, "max_score"), "status",
				  status && strcmp(status, "passed") == 0 ? "passed" : "failed",
				  "number", number, "visibility", json_object_get(t, "visibility"),
				  "output",
				  json_is_string(msg)	   ? json_string_value(msg)
				  : json_is_string(reason) ? json_string_value(reason)
				  : status		   ? status
							   : ""));
	}
	const char *st = json_string_value(json_object_get(result, "status"));
	const char *reason = json_string_value(json_object_get(result, "reason"));
	char output[1200];
	snprintf(output, sizeof(output), "%s%s%s", st ? st : "error", reason ? ": " : "",
		 reason ? reason : "");
	json_object_set(gs, "score", json_object_get(result, "score"));
	json_object_set_new(gs, "execution_time", json_real(wall));
	json_object_set_new(gs, "output", json_string(output));
	json_object_set_new(gs, "output_format", json_string("text"));
	/* Raw output stays with the instructor, as in the student view. */
	json_object_set_new(gs, "stdout_visibility", json_string("hidden"));
	json_object_set_new(gs, "visibility", json_string("visible"));
	json_object_set_new(gs, "tests", tests);
	return gs;
}

/* Text from a report or a reason, on one line and harmless to a terminal
 * (controls become spaces), at most `max` bytes. */
static void print_clean(FILE *f, const char *s, size_t max)
{
	char line[1024];

	text_printable(line, max + 1 < sizeof(line) ? max + 1 : sizeof(line), s ? s : "", ' ');
	fputs(line, f);
}

void grade_print_summary(FILE *f, const json_t *r)
{
	const char *status = json_string_value(json_object_get(r, "status"));
	const char *reason = json_string_value(json_object_get(r, "reason"));
	json_t *t;
	size_t i;

	fprintf(f, "%s: %s  score %g/%g  (%lld/%lld tests passed)\n",
		json_string_value(json_object_get(json_object_get(r, "assignment"), "name")),
		status, json_number_value(json_object_get(r, "score")),
		json_number_value(json_object_get(r, "max_score")),
		(long long)json_integer_value(json_object_get(r, "passed")),
		(long long)json_integer_value(json_object_get(r, "total")));
	if (reason) {
		fputs("reason: ", f);
		print_clean(f, reason, 1000);
		fputc('\n', f);
	}
	json_array_foreach(json_object_get(r, "tests"), i, t) {
		const char *ts = json_string_value(json_object_get(t, "status"));
		const char *msg = json_string_value(json_object_get(t, "message"));
		const char *why = json_string_value(json_object_get(t, "reason"));
		fprintf(f, "  %-7s ", ts);
		print_clean(f, json_string_value(json_object_get(t, "name")), 200);
		fprintf(f, " (%g/%g)%s", json_number_value(json_object_get(t, "score")),
			json_number_value(json_object_get(t, "max_score")), msg || why ? ": " : "");
		print_clean(f, msg ? msg : why ? why : "", 160);
		fputc('\n', f);
	}
	json_array_foreach(json_object_get(r, "steps"), i, t) {
		fprintf(f, "  step %-12s %s", json_string_value(json_object_get(t, "name")),
			json_string_value(json_object_get(t, "status")));
		/* The student view has no numbers. */
		if (json_is_integer(json_object_get(t, "wall_ms")))
			fprintf(f, ", cpu %lld ms, wall %lld ms, peak %lld KiB",
				(long long)json_integer_value(json_object_get(t, "cpu_ms")),
				(long long)json_integer_value(json_object_get(t, "wall_ms")),
				(long long)json_integer_value(json_object_get(t, "peak_memory_kib")));
		fputc('\n', f);
	}
	json_t *ign = json_object_get(json_object_get(r, "submission"), "ignored");
	if (json_array_size(ign) > 0)
		fprintf(f, "  ignored %zu file(s) not in the allowlist\n", json_array_size(ign));
}

bool grade_score_changed(double before, double after)
{
	if (isnan(before) || isnan(after))
		return isnan(before) != isnan(after);
	return before != after;
}
