/*
 * Names a stand-in may not take (docs/grading.md, "Java: JUnit, split by
 * default"): the harness compiles the stand-ins with the tests, so a class
 * of the submission's with the name of one the tests use from elsewhere
 * would stand in for it.  Refused: a binary name the harness can already
 * load (the JDK, the launcher's jar, Proctor's runtime, the class path
 * entries it keeps), a package of the JDK's, JUnit's or Proctor's, a class
 * the tests' sources declare, and, in a package of the tests', a simple
 * name that the tests would otherwise take from java.lang (its classes that
 * tests use: Math, String, Integer...) or from an on-demand import of a
 * test library (org.junit.jupiter.api.*).  An
 * on-demand import of anything else (java.util.*) is the submission's to
 * shadow, as in one process: a class Stack of its own is what the tests
 * mean.
 */
package proctor.split;

import java.io.IOException;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

final class Shadows {
	private static final Pattern PACKAGE = Pattern.compile("(?m)^\\s*package\\s+([\\w.]+)\\s*;");
	private static final Pattern ON_DEMAND = Pattern.compile("(?m)^\\s*import\\s+([\\w.]+)\\.\\*\\s*;");
	private static final String[] RESERVED = {"java.", "javax.", "jdk.", "sun.", "com.sun.", "org.junit.",
	    "org.opentest4j.", "org.hamcrest.", "org.apiguardian.", "org.assertj.", "proctor."};
	private static final String[] TEST_LIBRARIES = {"org.junit.", "org.opentest4j.", "org.hamcrest.",
	    "org.assertj.", "junit."};
	/* The classes of java.lang that tests use by their simple name and that
	 * no submission of an honest student names a class of its own after
	 * (in one process its own would break the tests' compile).  Others
	 * (Character, Process, Module...) may be a class the tests mean. */
	private static final Set<String> JAVA_LANG = Set.of("Math", "StrictMath", "String", "System", "Object",
	    "Class", "Integer", "Long", "Double", "Float", "Short", "Byte", "Boolean", "Number", "Void", "Iterable",
	    "Comparable", "CharSequence", "StringBuilder", "StringBuffer", "Runnable", "AutoCloseable", "Thread",
	    "Runtime", "Enum", "Record", "Throwable", "Exception", "RuntimeException", "Error", "AssertionError",
	    "Override", "Deprecated", "SuppressWarnings", "FunctionalInterface", "SafeVarargs",
	    "IllegalArgumentException", "IllegalStateException", "NullPointerException", "ArithmeticException",
	    "IndexOutOfBoundsException", "ArrayIndexOutOfBoundsException", "StringIndexOutOfBoundsException",
	    "UnsupportedOperationException", "ClassCastException", "NumberFormatException");

	private final ClassLoader system = ClassLoader.getSystemClassLoader();
	private final URLClassLoader kept;
	private final Set<String> testClasses = new HashSet<>();
	private final Set<String> testPackages = new HashSet<>();
	private final Set<String> libraryImports = new HashSet<>();

	Shadows(List<Path> sources, List<String> keep) throws IOException {
		List<URL> urls = new ArrayList<>();
		for (String k : keep)
			try {
				urls.add(Paths.get(k).toUri().toURL());
			} catch (MalformedURLException e) {
				// not a path: nothing of it is loaded either
			}
		kept = new URLClassLoader(urls.toArray(new URL[0]), null);
		for (Path p : sources) {
			String text = Files.readString(p, StandardCharsets.UTF_8);
			Matcher m = PACKAGE.matcher(text);
			String pkg = m.find() ? m.group(1) : "";
			String f = p.getFileName().toString();
			testClasses.add((pkg.isEmpty() ? "" : pkg + ".") + f.substring(0, f.length() - 5));
			testPackages.add(pkg);
			Matcher i = ON_DEMAND.matcher(text);
			while (i.find())
				for (String lib : TEST_LIBRARIES)
					if ((i.group(1) + ".").startsWith(lib))
						libraryImports.add(i.group(1));
		}
	}

	private boolean loadable(String binary) {
		try {
			Class.forName(binary, false, system);
			return true;
		} catch (ClassNotFoundException | LinkageError e) {
			return kept.findResource(binary.replace('.', '/') + ".class") != null;
		}
	}

	/* Why one of the described classes may not have its stand-in, or null. */
	String check(List<?> classes) {
		for (Object o : classes) {
			String why = check((Map<?, ?>) o, true);
			if (why != null)
				return why;
		}
		return null;
	}

	private String check(Map<?, ?> d, boolean top) {
		String name = StandIns.str(d.get("name"));
		String pkg = StandIns.packageOf(d);
		String simple = StandIns.str(d.get("simple"));
		for (String r : RESERVED)
			if ((pkg + ".").startsWith(r))
				return "the submission's class " + name + " is in package " + pkg + ", which is the JDK's, a test "
				    + "library's or Proctor's";
		if (loadable(name))
			return "the submission's class " + name + " has the name of a class the tests' class path already has";
		if ("throwable".equals(d.get("superKind"))) {
			// The superclass of an exception: a Throwable of the JDK's, by name.
			String sup = StandIns.str(d.get("super"));
			Class<?> c = null;
			if (StandIns.ERASURE.matcher(sup).matches() && (sup.startsWith("java.") || sup.startsWith("javax.")))
				try {
					c = Class.forName(sup, false, system);
				} catch (ClassNotFoundException | LinkageError e) {
					c = null;
				}
			if (c == null || !Throwable.class.isAssignableFrom(c))
				return "the submission's class " + name + " extends " + sup + ", not an exception of the JDK's";
		}
		if (testClasses.contains(name))
			return "the submission's class " + name + " has the name of a class of the tests'";
		if (top && testPackages.contains(pkg)) {
			if (JAVA_LANG.contains(simple))
				return "the submission's class " + name + " would hide java.lang." + simple
				    + " from the tests, which are in its package";
			for (String lib : libraryImports)
				if (loadable(lib + "." + simple))
					return "the submission's class " + name + " would hide " + lib + "." + simple
					    + " from the tests, which import " + lib + ".*";
		}
		for (Object n : StandIns.list(d.get("nested"))) {
			String why = check((Map<?, ?>) n, false);
			if (why != null)
				return why;
		}
		return null;
	}
}
