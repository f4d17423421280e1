/*
 * Proctor's JUnit guard (docs/grading.md, "The node and JUnit guards"): a
 * TestExecutionListener the JUnit Platform launcher finds through
 * ServiceLoader (META-INF/services) in a fresh root-owned directory that
 * Proctor puts first on the launcher's class path.  The launcher makes it
 * when it starts, before it discovers the tests (so before any class of
 * the submission is loaded): it then reads the one-time key and deletes
 * the key file.  It records every test's outcome and only when the test
 * plan has finished, a normal end of the run, writes them as a JUnit XML
 * summary with its HMAC-SHA256 under the key.  System.exit(), a crash or a
 * kill writes none, so a report the submission forged cannot be signed.
 * Code of the submission runs in this JVM: with reflection it can reach
 * this object, its key and its results (docs/grading.md says what remains).
 */
package proctor.guard;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

public final class ProctorGuard implements TestExecutionListener {
	private static final int MESSAGE_CAP = 2000;

	/* One test's outcome: "passed", "failed" or "skipped". */
	private static final class Outcome {
		final String classname, name, status, message;

		Outcome(String classname, String name, String status, String message) {
			this.classname = classname;
			this.name = name;
			this.status = status;
			this.message = message;
		}
	}

	private final byte[] key;
	private final String out;
	private final Map<String, Outcome> outcomes = new LinkedHashMap<>();
	private TestPlan plan;

	public ProctorGuard() {
		String keyFile = System.getenv("PROCTOR_GUARD_KEY_FILE");
		byte[] k = null;
		if (keyFile != null && !keyFile.isEmpty()) {
			try {
				Path p = Paths.get(keyFile);
				k = Files.readAllBytes(p);
				Files.delete(p);
			} catch (IOException | RuntimeException e) {
				k = null;
			}
		}
		key = k;
		out = System.getenv("PROCTOR_GUARD_OUT");
	}

	@Override
	public void testPlanExecutionStarted(TestPlan testPlan) {
		plan = testPlan;
	}

	private void record(TestIdentifier id, String status, String message) {
		if (plan == null || outcomes.containsKey(id.getUniqueId()))
			return;
		outcomes.put(id.getUniqueId(), new Outcome(className(id),
							    id.getLegacyReportingName(), status,
							    message));
	}

	/* The class name JUnit's XML report gives a test: the class of the
	 * closest ClassSource among it and its ancestors, else its parent's
	 * name (LegacyReportingUtils, which later JUnit versions move). */
	private String className(TestIdentifier id) {
		for (Optional<TestIdentifier> t = Optional.of(id); t.isPresent(); t = plan.getParent(t.get())) {
			Optional<TestSource> s = t.get().getSource();
			if (s.isPresent() && s.get() instanceof ClassSource)
				return ((ClassSource)s.get()).getClassName();
		}
		return plan.getParent(id).map(TestIdentifier::getLegacyReportingName).orElse("");
	}

	/* A container that was skipped or failed before its tests ran: every
	 * test below it that has no outcome yet gets the container's. */
	private void recordBelow(TestIdentifier container, String status, String message) {
		if (plan == null)
			return;
		for (TestIdentifier d : plan.getDescendants(container))
			if (d.isTest())
				record(d, status, message);
	}

	@Override
	public void executionSkipped(TestIdentifier id, String reason) {
		if (id.isTest())
			record(id, "skipped", reason);
		else
			recordBelow(id, "skipped", reason);
	}

	@Override
	public void executionFinished(TestIdentifier id, TestExecutionResult result) {
		String message = result.getThrowable().map(String::valueOf).orElse("");
		if (message.length() > MESSAGE_CAP)
			message = message.substring(0, MESSAGE_CAP);
		String status;
		switch (result.getStatus()) {
		case SUCCESSFUL:
			status = "passed";
			break;
		case ABORTED:
			status = "skipped";
			break;
		default:
			status = "failed";
			break;
		}
		if (id.isTest())
			record(id, status, message);
		else if (!status.equals("passed"))
			recordBelow(id, "failed", message);
	}

	@Override
	public void testPlanExecutionFinished(TestPlan testPlan) {
		if (key == null || key.length == 0 || out == null || out.isEmpty())
			return;
		StringBuilder xml = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
		xml.append("<testsuites>\n<testsuite name=\"proctor-guard\">\n");
		for (Outcome o : outcomes.values()) {
			xml.append("<testcase classname=\"").append(escape(o.classname));
			xml.append("\" name=\"").append(escape(o.name)).append('"');
			if (o.status.equals("passed")) {
				xml.append("/>\n");
				continue;
			}
			xml.append(">");
			String tag = o.status.equals("skipped") ? "skipped" : "failure";
			xml.append('<').append(tag).append(" message=\"").append(escape(o.message));
			xml.append("\"/></testcase>\n");
		}
		xml.append("</testsuite>\n</testsuites>\n");
		byte[] body = xml.toString().getBytes(StandardCharsets.UTF_8);
		try {
			Mac mac = Mac.getInstance("HmacSHA256");
			mac.init(new SecretKeySpec(key, "HmacSHA256"));
			StringBuilder hex = new StringBuilder();
			for (byte b : mac.doFinal(body))
				hex.append(String.format("%02x", b & 0xff));
			Files.write(Paths.get(out), body);
			Files.write(Paths.get(out + ".sig"), hex.toString().getBytes(StandardCharsets.US_ASCII));
		} catch (Exception e) {
			System.err.println("proctor guard: cannot write the summary: " + e);
		}
	}

	/* XML attribute text: markup escaped, characters XML 1.0 forbids replaced. */
	private static String escape(String s) {
		if (s == null)
			return "";
		StringBuilder b = new StringBuilder(s.length());
		for (int i = 0; i < s.length(); i++) {
			char c = s.charAt(i);
			switch (c) {
			case '&':
				b.append("&amp;");
				break;
			case '<':
				b.append("&lt;");
				break;
			case '>':
				b.append("&gt;");
				break;
			case '"':
				b.append("&quot;");
				break;
			case '\n':
				b.append("&#10;");
				break;
			case '\t':
				b.append("&#9;");
				break;
			case '\r':
				b.append("&#13;");
				break;
			default:
				if (c < 0x20 || c == 0xfffe || c == 0xffff)
					b.append('?');
				else if (Character.isSurrogate(c)) {
					boolean pair = Character.isHighSurrogate(c) && i + 1 < s.length() &&
						       Character.isLowSurrogate(s.charAt(i + 1));
					if (pair)
						b.append(c).append(s.charAt(++i));
					else
						b.append('?');
				} else
					b.append(c);
			}
		}
		return b.toString();
	}
}
