/*
 * Visible tests first (docs/grading.md, "Hidden inputs"): with
 * PROCTOR_SPLIT_VISIBLE set (the manifest's visible tests, one a line,
 * NAME or NAME<TAB>CLASSNAME), the harness has JUnit Jupiter order each
 * class's test methods visible first, and the classes that hold a visible
 * test before the others, so no visible test of a class runs after a
 * hidden one of it.  The orderers implement JUnit's interfaces, so they
 * are compiled with the tests (against the launcher's jar); they ask this
 * class which tests are visible.  A test class's own @TestMethodOrder or
 * @TestClassOrder wins over them.
 */
package proctor.split;

import java.io.IOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public final class Visible {
	static final String METHOD_ORDERER = "proctor.split.order.VisibleFirst";
	static final String CLASS_ORDERER = "proctor.split.order.VisibleClassesFirst";

	private static List<String[]> listed;
	private static boolean read;

	private Visible() {
	}

	/* The visible tests, [name, classname or null], or null when unset. */
	static synchronized List<String[]> listed() {
		if (read)
			return listed;
		read = true;
		String v = System.getenv("PROCTOR_SPLIT_VISIBLE");
		if (v == null)
			return null;
		listed = new ArrayList<>();
		for (String line : v.split("\n")) {
			if (line.isEmpty())
				continue;
			int tab = line.indexOf('\t');
			listed.add(tab < 0 ? new String[] {line, null} : new String[] {line.substring(0, tab), line.substring(tab + 1)});
		}
		return listed;
	}

	private static boolean classMatches(String want, Class<?> c) {
		if (want == null)
			return true;
		for (Class<?> k = c; k != null; k = k.getEnclosingClass())
			if (want.equals(k.getName()) || want.equals(k.getSimpleName()) || c.getName().endsWith("." + want)
			    || c.getName().endsWith("$" + want))
				return true;
		return false;
	}

	/** Whether the test method (its display name, or its name with its
	 * parameters' simple names, as JUnit's reports write it) is visible. */
	public static boolean method(Method m, String displayName) {
		List<String[]> l = listed();
		if (l == null)
			return true;
		StringBuilder sig = new StringBuilder(m.getName()).append('(');
		Class<?>[] ps = m.getParameterTypes();
		for (int k = 0; k < ps.length; k++)
			sig.append(k > 0 ? ", " : "").append(ps[k].getSimpleName());
		sig.append(')');
		for (String[] t : l)
			if ((t[0].equals(displayName) || t[0].equals(sig.toString()) || t[0].equals(m.getName()))
			    && classMatches(t[1], m.getDeclaringClass()))
				return true;
		return false;
	}

	/** Whether the class holds a visible test method. */
	public static boolean holdsVisible(Class<?> c) {
		if (listed() == null)
			return true;
		for (Class<?> k = c; k != null && k != Object.class; k = k.getSuperclass())
			for (Method m : k.getDeclaredMethods())
				if (method(m, m.getName() + "()"))
					return true;
		return false;
	}

	/* The orderers' sources below src; returns their paths. */
	static List<Path> writeOrderers(Path src) throws IOException {
		Path dir = Files.createDirectories(src.resolve("proctor/split/order"));
		Path m = dir.resolve("VisibleFirst.java"), c = dir.resolve("VisibleClassesFirst.java");
		Files.writeString(m, "package proctor.split.order;\n"
		    + "public final class VisibleFirst implements org.junit.jupiter.api.MethodOrderer {\n"
		    + "\t@Override public void orderMethods(org.junit.jupiter.api.MethodOrdererContext c) {\n"
		    + "\t\tc.getMethodDescriptors().sort(java.util.Comparator.comparingInt(\n"
		    + "\t\t    d -> proctor.split.Visible.method(d.getMethod(), d.getDisplayName()) ? 0 : 1));\n"
		    + "\t}\n}\n", StandardCharsets.UTF_8);
		Files.writeString(c, "package proctor.split.order;\n"
		    + "public final class VisibleClassesFirst implements org.junit.jupiter.api.ClassOrderer {\n"
		    + "\t@Override public void orderClasses(org.junit.jupiter.api.ClassOrdererContext c) {\n"
		    + "\t\tc.getClassDescriptors().sort(java.util.Comparator.comparingInt(\n"
		    + "\t\t    d -> proctor.split.Visible.holdsVisible(d.getTestClass()) ? 0 : 1));\n"
		    + "\t}\n}\n", StandardCharsets.UTF_8);
		return List.of(m, c);
	}
}
