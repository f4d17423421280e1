/*
 * The harness of a split JUnit run (ProctorSplit.java): the harness uid's
 * JVM.  It finds the hidden tests' sources (files of root's or its own
 * below the working directory, never one the program wrote), asks the
 * program side for the submission's signatures, writes stand-ins for them
 * (StandIns.java) in a directory of its own, compiles them with the tests
 * (javax.tools, in this JVM), and runs the JUnit console launcher with the
 * instructor's arguments, its class path replaced by that directory and
 * the entries the program did not write.  Stand-ins call back here.
 */
package proctor.split;

import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.io.StringWriter;
import java.lang.reflect.Constructor;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.lang.reflect.Type;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.stream.Stream;
import javax.tools.Diagnostic;
import javax.tools.DiagnosticCollector;
import javax.tools.JavaCompiler;
import javax.tools.JavaFileObject;
import javax.tools.StandardJavaFileManager;
import javax.tools.ToolProvider;

final class Harness implements Channel.Server {
	private static Harness session;

	private Channel chan;
	private ClassLoader tests; // the launcher's loader of the stand-ins and the tests
	private final PrintStream stderr = System.err;
	private final Map<String, Method> methods = new HashMap<>();

	private final Codec codec = new Codec() {
		@Override
		Long importedId(Object o) {
			if (o instanceof ProctorSplit.Remote)
				return ((ProctorSplit.Remote) o).$proctorRef().id;
			if (o != null && Proxy.isProxyClass(o.getClass())) {
				InvocationHandler h = Proxy.getInvocationHandler(o);
				if (h instanceof Worker)
					return ((Worker) h).id;
			}
			return null;
		}

		@Override
		Object makeStandIn(long id, Map<String, Object> desc, Class<?> want) {
			return standIn(id, desc, want);
		}

		@Override
		Class<?> classNamed(String name) {
			return Harness.this.classNamed(name);
		}

		@Override
		boolean ownClass(Class<?> c) {
			return false;
		}

		@Override
		List<java.lang.reflect.Field> syncedFields(Class<?> c) {
			return fieldsOf.computeIfAbsent(c, k -> {
				List<java.lang.reflect.Field> l = new ArrayList<>();
				for (Class<?> x = k; x != null && ProctorSplit.Remote.class.isAssignableFrom(x); x = x.getSuperclass())
					for (java.lang.reflect.Field f : x.getDeclaredFields())
						if (!Modifier.isStatic(f.getModifiers()) && !f.isSynthetic() && !f.getName().startsWith("$proctor"))
							l.add(f);
				return l;
			});
		}

		@Override
		boolean sendsChangesOnly() {
			return true;
		}

		@Override
		Object objectNumbered(long id) {
			return imported(id);
		}
	};
	private final Map<Class<?>, List<java.lang.reflect.Field>> fieldsOf = new HashMap<>();

	static Harness get() {
		if (session == null)
			throw new IllegalStateException("proctor_split: no split session in this JVM");
		return session;
	}

	// ---- start --------------------------------------------------------------------------------

	static void main(String[] args) {
		Harness h = new Harness();
		session = h;
		h.run(args);
	}

	private static void abort(String why, int status) {
		try {
			System.err.println("proctor_split: " + why + "; the test run cannot go on");
			System.err.flush();
		} catch (Throwable t) {
			// nothing may stop the exit
		}
		Runtime.getRuntime().halt(status);
	}

	private void run(String[] args) {
		// The step's standard input is on fd 3 (the channel is on fd 0).
		try {
			System.setIn(new FileInputStream("/proc/self/fd/3"));
		} catch (IOException e) {
			System.setIn(InputStream.nullInputStream());
		}
		java.nio.channels.Channel inherited;
		try {
			inherited = System.inheritedChannel();
		} catch (IOException e) {
			inherited = null;
		}
		if (!(inherited instanceof SocketChannel))
			abort("no channel on fd 0", ProctorSplit.NOT_STARTED_STATUS);
		chan = new Channel(this);
		try {
			Map<String, Object> hello = chan.recv();
			if (!Boolean.TRUE.equals(hello.get("ready")))
				abort("the program side did not start", ProctorSplit.NOT_STARTED_STATUS);
		} catch (Channel.Closed | Channel.Broken e) {
			abort("the program side did not start", ProctorSplit.NOT_STARTED_STATUS);
		}
		Path work = Paths.get("").toAbsolutePath();
		List<Path> sources = testSources(work);
		List<Object> skip = new ArrayList<>();
		for (Path p : sources) {
			String f = p.getFileName().toString();
			skip.add(f.substring(0, f.length() - 5));
		}
		List<?> classes = describe(skip);
		String why = StandIns.unsupported(classes);
		if (why != null)
			abort(why + " (set test.in_process: true, docs/grading.md \"Java: JUnit, split\")",
			    ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
		Path dir, out;
		List<Path> standIns = new ArrayList<>();
		List<String> launcher = new ArrayList<>();
		try {
			dir = Files.createTempDirectory("proctor-split-",
			    PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
			out = Files.createDirectory(dir.resolve("classes"));
		} catch (IOException e) {
			abort("cannot write the stand-ins: " + e.getMessage(), ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
			return;
		}
		List<String> keep = launcherArgs(args, out, launcher);
		try {
			String clash = new Shadows(sources, keep).check(classes);
			if (clash != null) {
				stderr.println("proctor_split: " + clash + ": rename it");
				abort("the tests do not compile against the submission's classes", ProctorSplit.TESTS_DO_NOT_COMPILE_STATUS);
			}
			Path src = Files.createDirectory(dir.resolve("src"));
			for (Object o : classes) {
				Map<?, ?> d = (Map<?, ?>) o;
				String pkg = StandIns.packageOf(d);
				Path pdir = pkg.isEmpty() ? src : src.resolve(pkg.replace('.', '/'));
				Files.createDirectories(pdir);
				Path f = pdir.resolve(StandIns.str(d.get("simple")) + ".java");
				if (Files.exists(f, LinkOption.NOFOLLOW_LINKS))
					abort("the submission's process broke the protocol (a class described twice)", ProctorSplit.ABORT_STATUS);
				Files.writeString(f, StandIns.file(d), StandardCharsets.UTF_8);
				standIns.add(f);
			}
		} catch (IOException e) {
			abort("cannot write the stand-ins: " + e.getMessage(), ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
			return;
		} catch (Channel.Broken | ClassCastException e) {
			abort("the submission's process broke the protocol (" + e.getMessage() + ")", ProctorSplit.ABORT_STATUS);
			return;
		}
		List<Path> own = new ArrayList<>(standIns);
		if (Visible.listed() != null) {
			// Visible tests first (docs/grading.md, "Hidden inputs"): JUnit's
			// orderers, compiled here against the launcher's API.
			try {
				own.addAll(Visible.writeOrderers(dir.resolve("src")));
			} catch (IOException e) {
				abort("cannot write the test orderers: " + e.getMessage(), ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
			}
			launcher.add("--config=junit.jupiter.testmethod.order.default=" + Visible.METHOD_ORDERER);
			launcher.add("--config=junit.jupiter.testclass.order.default=" + Visible.CLASS_ORDERER);
		}
		compile(own, sources, out, keep);
		try {
			Class<?> main = Class.forName("org.junit.platform.console.ConsoleLauncher");
			Method m = main.getMethod("main", String[].class);
			m.invoke(null, (Object) launcher.toArray(new String[0]));
		} catch (InvocationTargetException e) {
			Throwable c = e.getCause();
			stderr.println("proctor_split: the launcher failed: " + c);
			System.exit(1);
		} catch (ReflectiveOperationException e) {
			abort("no JUnit console launcher on the class path: " + e, ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
		}
	}

	/* The submission's classes as the program side describes them. */
	private List<?> describe(List<Object> skip) {
		Object r;
		try {
			r = guarded(() -> chan.request("classes", Channel.fields("skip", skip)));
		} catch (Channel.Raised e) {
			Object type = e.exc.get("type");
			abort("the submission's classes could not be read: " + (type instanceof Map ? ((Map<?, ?>) type).get("name") : "?")
			    + ": " + e.exc.get("message"), ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
			return null;
		}
		if (!(r instanceof List))
			abort("the submission's process broke the protocol (classes: not a list)", ProctorSplit.ABORT_STATUS);
		for (Object o : (List<?>) r)
			if (!(o instanceof Map) || !validClass((Map<?, ?>) o))
				abort("the submission's process broke the protocol (classes: not a class)", ProctorSplit.ABORT_STATUS);
		return (List<?>) r;
	}

	private static boolean validClass(Map<?, ?> d) {
		if (!(d.get("name") instanceof String) || !(d.get("simple") instanceof String))
			return false;
		for (Object n : StandIns.list(d.get("nested")))
			if (!(n instanceof Map) || !validClass((Map<?, ?>) n))
				return false;
		return true;
	}

	/* Whether the program could have written the file or link: owned by
	 * anyone but root and this uid, or writable by others than its owner. */
	static boolean programWrote(Path p) {
		try {
			Object uid = Files.getAttribute(p, "unix:uid", LinkOption.NOFOLLOW_LINKS);
			int me = ((Number) Files.getAttribute(Paths.get("/proc/self"), "unix:uid")).intValue();
			if (!(uid instanceof Number) || (((Number) uid).intValue() != 0 && ((Number) uid).intValue() != me))
				return true;
			Set<PosixFilePermission> perm = Files.getPosixFilePermissions(p, LinkOption.NOFOLLOW_LINKS);
			return perm.contains(PosixFilePermission.GROUP_WRITE) || perm.contains(PosixFilePermission.OTHERS_WRITE);
		} catch (IOException | RuntimeException e) {
			return true;
		}
	}

	/* The hidden tests' sources: .java files of root's or this uid's below dir. */
	private static List<Path> testSources(Path dir) {
		List<Path> out = new ArrayList<>();
		try (Stream<Path> s = Files.walk(dir, 20)) {
			s.filter(p -> p.toString().endsWith(".java") && Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
			    && !programWrote(p)).sorted().forEach(out::add);
		} catch (IOException | RuntimeException e) {
			abort("cannot list the tests: " + e.getMessage(), ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
		}
		return out;
	}

	/* The launcher's arguments with its class path options made one, of the
	 * entries the program cannot have written and `out` last; returns the
	 * entries kept. */
	private static List<String> launcherArgs(String[] args, Path out, List<String> launcher) {
		List<String> keep = new ArrayList<>();
		for (int k = 0; k < args.length; k++) {
			String a = args[k];
			String value = null;
			for (String o : new String[] {"-cp", "--classpath", "--class-path"}) {
				if (a.equals(o) && k + 1 < args.length)
					value = args[++k];
				else if (a.startsWith(o + "="))
					value = a.substring(o.length() + 1);
				if (value != null)
					break;
			}
			if (value == null) {
				launcher.add(a);
				continue;
			}
			for (String e : value.split(":")) {
				Path p = Paths.get(e).toAbsolutePath();
				if (!e.isEmpty() && Files.exists(p, LinkOption.NOFOLLOW_LINKS) && !programWrote(p)
				    && !under(p, Paths.get("").toAbsolutePath()) && !keep.contains(p.toString()))
					keep.add(p.toString());
			}
		}
		// One class path: the kept entries (the guard's directory, the
		// instructor's libraries), then the compiled tests and stand-ins,
		// so no stand-in takes the place of a class of theirs (Shadows
		// refuses such names too).
		List<String> entries = new ArrayList<>(keep);
		entries.add(out.toString());
		launcher.add(0, String.join(":", entries));
		launcher.add(0, "--class-path");
		return keep;
	}

	private static boolean under(Path p, Path dir) {
		return p.normalize().startsWith(dir.normalize());
	}

	private void compile(List<Path> standIns, List<Path> sources, Path out, List<String> keep) {
		JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
		if (javac == null)
			abort("this JVM has no Java compiler (a JDK, not a JRE, runs the tests)",
			    ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
		DiagnosticCollector<JavaFileObject> diags = new DiagnosticCollector<>();
		List<String> opts = new ArrayList<>(Arrays.asList("-d", out.toString(), "-encoding", "UTF-8", "-proc:none",
		    "-implicit:class", "-nowarn", "-g", "-Xlint:none"));
		List<String> cp = new ArrayList<>(Arrays.asList(System.getProperty("java.class.path", "").split(":")));
		cp.addAll(keep);
		opts.add("-cp");
		opts.add(String.join(":", cp));
		List<Path> all = new ArrayList<>(standIns);
		all.addAll(sources);
		boolean ok;
		try (StandardJavaFileManager fm = javac.getStandardFileManager(diags, null, StandardCharsets.UTF_8)) {
			Iterable<? extends JavaFileObject> units = fm.getJavaFileObjectsFromPaths(all);
			StringWriter w = new StringWriter();
			ok = javac.getTask(w, fm, diags, opts, null, units).call();
		} catch (IOException | RuntimeException e) {
			abort("the compiler failed: " + e, ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
			return;
		}
		if (ok)
			return;
		boolean ours = false;
		StringBuilder text = new StringBuilder();
		for (Diagnostic<? extends JavaFileObject> d : diags.getDiagnostics()) {
			if (d.getKind() != Diagnostic.Kind.ERROR)
				continue;
			String where = d.getSource() == null ? "" : Paths.get(d.getSource().toUri()).toString();
			boolean standIn = standIns.stream().anyMatch(p -> p.toString().equals(where));
			ours |= standIn;
			text.append(standIn ? "(stand-in) " : "").append(where.isEmpty() ? "" : Paths.get(where).getFileName() + ":")
			    .append(d.getLineNumber()).append(": error: ").append(d.getMessage(null)).append('\n');
		}
		stderr.print(text);
		if (ours)
			abort("the stand-ins of the submission's classes do not compile (Proctor's failure)",
			    ProctorSplit.STAND_INS_DO_NOT_COMPILE_STATUS);
		abort("the tests do not compile against the submission's classes", ProctorSplit.TESTS_DO_NOT_COMPILE_STATUS);
	}

	// ---- calls from the stand-ins ---------------------------------------------------------------

	interface Call {
		Object run();
	}

	private static Object guarded(Call c) {
		try {
			return c.run();
		} catch (Channel.Closed e) {
			abort("the submission's process ended during a call from the tests", ProctorSplit.ABORT_STATUS);
		} catch (Channel.Broken e) {
			abort("the submission's process broke the protocol (" + e.getMessage() + ")", ProctorSplit.ABORT_STATUS);
		}
		return null;
	}

	private void learnLoader(Class<?> owner) {
		if (tests == null)
			tests = owner.getClassLoader();
	}

	Class<?> classNamed(String name) {
		Class<?> p = Codec.primitive(name);
		if (p != null)
			return p;
		try {
			return Class.forName(name, false, tests != null ? tests : ClassLoader.getSystemClassLoader());
		} catch (ClassNotFoundException | LinkageError e) {
			return null;
		}
	}

	private Method standInMethod(Class<?> owner, String name, Class<?>[] params) {
		String key = owner.getName() + "#" + name + Arrays.toString(params);
		return methods.computeIfAbsent(key, k -> {
			try {
				return owner.getDeclaredMethod(name, params);
			} catch (NoSuchMethodException e) {
				throw new IllegalStateException("proctor_split: no stand-in method " + k);
			}
		});
	}

	private static List<Object> names(Class<?>[] params) {
		List<Object> l = new ArrayList<>();
		for (Class<?> p : params)
			l.add(p.getName());
		return l;
	}

	private List<Object> encodeAll(Object[] args) {
		List<Object> l = new ArrayList<>();
		if (args != null)
			for (Object a : args)
				l.add(codec.encode(a));
		return l;
	}

	Object invoke(Class<?> owner, String name, Class<?>[] params, Object self, Object[] args) {
		learnLoader(owner);
		Method m = standInMethod(owner, name, params);
		Object r = ask("call", Channel.fields("class", owner.getName(), "name", name, "params", names(params),
		    "target", self == null ? null : codec.encode(self), "args", encodeAll(args)));
		applyBack(args);
		return decode(r, m.getGenericReturnType());
	}

	/* Ask the program side; its exception is raised here as the
	 * submission's (rebuild()), the run's end or a broken protocol ends it. */
	private Object ask(String op, Map<String, Object> fields) {
		try {
			return guarded(() -> chan.request(op, fields));
		} catch (Channel.Raised e) {
			throw ProctorSplit.sneaky(rebuild(e.exc));
		}
	}

	/* An answer's value, and the mirrored fields its message carried. */
	private Object decode(Object r, Type t) {
		return guarded(() -> {
			Object v = codec.decode(r, t);
			codec.applyFields();
			return v;
		});
	}

	/* What the callee of the last answer did to the mutable arguments
	 * `args` (its "back") is done to them here too. */
	private void applyBack(Object[] args) {
		Map<String, Object> answer = chan.lastAnswer;
		if (args == null || answer == null)
			return;
		for (Object o : StandIns.list(answer.get("back"))) {
			List<?> kv = StandIns.list(o);
			if (kv.size() != 2 || !(kv.get(0) instanceof Long) || (Long) kv.get(0) < 0
			    || (Long) kv.get(0) >= args.length)
				abort("the submission's process broke the protocol (a bad argument index)", ProctorSplit.ABORT_STATUS);
			Object target = args[(int) (long) (Long) kv.get(0)];
			if (target != null)
				guarded(() -> {
					Mutables.copyInto(target, codec.decode(kv.get(1), target.getClass()));
					return null;
				});
		}
	}

	ProctorSplit.Ref construct(Class<?> owner, Class<?>[] params, Object[] args) {
		learnLoader(owner);
		Object r = ask("new", Channel.fields("class", owner.getName(), "params", names(params), "args",
		    encodeAll(args)));
		applyBack(args);
		if (!(r instanceof List) || ((List<?>) r).size() < 3 || !"r".equals(((List<?>) r).get(0))
		    || !(((List<?>) r).get(1) instanceof Long))
			abort("the submission's process broke the protocol (a new object that is not a reference)",
			    ProctorSplit.ABORT_STATUS);
		// An exception the tests make has the message it was made with.
		Object desc = ((List<?>) r).get(2);
		Object message = desc instanceof Map ? ((Map<?, ?>) desc).get("message") : null;
		return new ProctorSplit.Ref((Long) ((List<?>) r).get(1), message instanceof String ? (String) message : null);
	}

	/* A static field of the submission's class, read when its stand-in class
	 * is initialized.  A value that cannot be one of the field's type here
	 * (an object of a JDK class, such as a Random or a Scanner, crosses by
	 * reference) is the type's default, so the class stays usable. */
	Object getStatic(Class<?> owner, String name) {
		learnLoader(owner);
		Type t;
		try {
			t = owner.getDeclaredField(name).getGenericType();
		} catch (NoSuchFieldException e) {
			t = Object.class;
		}
		try {
			return decode(ask("getstatic", Channel.fields("class", owner.getName(), "name", name)), t);
		} catch (ClassCastException | IllegalArgumentException e) {
			Class<?> c = Codec.raw(t);
			if (c == boolean.class)
				return false;
			if (c == char.class)
				return (char) 0;
			if (c.isPrimitive())
				return Codec.zero(c);
			return null;
		}
	}

	void bind(ProctorSplit.Remote self) {
		long id = self.$proctorRef().id;
		if (codec.imported(id) == null) {
			codec.remember(id, self);
			// A stand-in the tests made: the fields its constructor set.
			codec.appeared(id);
			guarded(() -> {
				codec.applyFields();
				return null;
			});
		}
	}

	/* The fields the submission's object is compared by, or null (its
	 * classes keep Object's equals); `deep`: its fields whatever its equals. */
	private List<?> state(long id, boolean deep) {
		Object r = ask("state", Channel.fields("target", Channel.list("o", id), "deep", deep));
		if (r != null && !(r instanceof List))
			abort("the submission's process broke the protocol (a state that is not a list)", ProctorSplit.ABORT_STATUS);
		return (List<?>) r;
	}

	/* One comparison of two of the submission's objects, with what it
	 * visited (pairs of objects taken as equal while they are compared, so a
	 * cycle ends) and how many objects' states it may still ask for. */
	private static final class Comparison {
		final java.util.Set<String> seen = new java.util.HashSet<>();
		int budget = 20000;
		int hashDepth;
	}

	private final ThreadLocal<Comparison> comparing = new ThreadLocal<>();

	/*
	 * equals() of a stand-in.  Two objects of the same class are equal when
	 * their fields are (docs/grading.md, "Java: JUnit, split by default"):
	 * at the top, an object whose classes keep Object's equals is equal to
	 * itself only, and one whose state has no field at all too (it keeps
	 * its data elsewhere); below it, in the fields of an object being
	 * compared, objects of the submission's compare by their fields whatever
	 * their equals (the nodes of a list whose equals walks them).
	 */
	boolean equal(ProctorSplit.Remote self, Object other) {
		if (self == other)
			return true;
		if (!(other instanceof ProctorSplit.Remote) || other.getClass() != self.getClass())
			return false;
		Comparison c = comparing.get();
		if (c != null)
			return deepEqual(self, (ProctorSplit.Remote) other, c, true);
		c = new Comparison();
		comparing.set(c);
		try {
			return deepEqual(self, (ProctorSplit.Remote) other, c, false);
		} finally {
			comparing.remove();
		}
	}

	/* a and b: stand-ins or proxies of the submission's objects (their
	 * numbers: ia, ib).  Field names are qualified by their class, so two
	 * objects of different classes have different states. */
	private boolean deepEqual(Object a, Object b, Comparison c, boolean nested) {
		if (a == b)
			return true;
		if (a.getClass() != b.getClass())
			return false;
		Long ia = codec.importedId(a), ib = codec.importedId(b);
		if (ia == null || ib == null)
			return false;
		if (ia.longValue() == ib.longValue())
			return true;
		if (!c.seen.add(ia + ":" + ib))
			return true;
		if ((c.budget -= 2) < 0)
			return false;
		List<?> x = state(ia, nested), y = state(ib, nested);
		if (x == null || y == null || x.size() != y.size() || (!nested && x.isEmpty()))
			return false;
		for (int k = 0; k < x.size(); k++) {
			List<?> fx = StandIns.list(x.get(k)), fy = StandIns.list(y.get(k));
			if (fx.size() != 2 || fy.size() != 2)
				abort("the submission's process broke the protocol (a field that is not a pair)", ProctorSplit.ABORT_STATUS);
			if (!Objects.equals(fx.get(0), fy.get(0)))
				return false;
			Object vx = guarded(() -> codec.decode(fx.get(1), Object.class));
			Object vy = guarded(() -> codec.decode(fy.get(1), Object.class));
			boolean same = vx != null && vy != null && codec.importedId(vx) != null && codec.importedId(vy) != null
			    ? deepEqual(vx, vy, c, true)
			    : Objects.deepEquals(vx, vy);
			if (!same)
				return false;
		}
		return true;
	}

	/* hashCode() of a stand-in, consistent with equal(): its class and the
	 * fields that are plain values (an object of the submission's in them
	 * adds nothing). */
	int hash(ProctorSplit.Remote self) {
		Comparison c = comparing.get();
		boolean top = c == null;
		if (top) {
			c = new Comparison();
			comparing.set(c);
		}
		try {
			if (c.hashDepth > 2)
				return 0;
			c.hashDepth++;
			List<?> a = state(self.$proctorRef().id, !top);
			if (a == null)
				return System.identityHashCode(self);
			int h = self.getClass().getName().hashCode();
			for (Object f : a) {
				Object v = guarded(() -> codec.decode(StandIns.list(f).size() == 2 ? StandIns.list(f).get(1) : null, Object.class));
				if (v == null || codec.importedId(v) == null)
					h = 31 * h + Arrays.deepHashCode(new Object[] {v});
			}
			return h;
		} finally {
			c.hashDepth--;
			if (top)
				comparing.remove();
		}
	}

	String str(ProctorSplit.Remote self) {
		Object r = ask("str", Channel.fields("target", codec.encode(self)));
		return r instanceof String ? (String) r : String.valueOf(r);
	}

	/* A stand-in for an object of the submission's, to be a `want`. */
	private Object standIn(long id, Map<String, Object> desc, Class<?> want) {
		List<String> candidates = new ArrayList<>();
		candidates.add(StandIns.str(desc.get("class")));
		for (Object s : StandIns.list(desc.get("supers")))
			candidates.add(StandIns.str(s));
		for (String n : candidates) {
			Class<?> c = classNamed(n);
			if (c == null || !ProctorSplit.Remote.class.isAssignableFrom(c) || !want.isAssignableFrom(c)
			    || Modifier.isAbstract(c.getModifiers()))
				continue;
			try {
				Constructor<?> k = c.getDeclaredConstructor(ProctorSplit.Ref.class);
				k.setAccessible(true);
				return k.newInstance(new ProctorSplit.Ref(id, null));
			} catch (ReflectiveOperationException e) {
				throw new IllegalStateException("proctor_split: no stand-in constructor of " + n, e);
			}
		}
		List<Class<?>> ifs = new ArrayList<>();
		for (Object n : StandIns.list(desc.get("interfaces"))) {
			Class<?> c = classNamed(StandIns.str(n));
			if (c != null && c.isInterface() && Modifier.isPublic(c.getModifiers()) || c != null && c.isInterface()
			    && c.getClassLoader() == tests)
				ifs.add(c);
		}
		if (want.isInterface() && !ifs.contains(want))
			ifs.add(want);
		if (!want.isInterface() && want != Object.class)
			throw new ClassCastException("the submission's " + desc.get("class") + " is not a " + want.getName()
			    + " here");
		ClassLoader l = tests != null ? tests : ClassLoader.getSystemClassLoader();
		return Proxy.newProxyInstance(l, ifs.toArray(new Class<?>[0]), new Worker(id));
	}

	/* A proxy of an object of the submission's that has no stand-in class
	 * (an Iterator, a lambda): its interface methods run there. */
	private final class Worker implements InvocationHandler {
		final long id;

		Worker(long id) {
			this.id = id;
		}

		@Override
		public Object invoke(Object proxy, Method m, Object[] args) {
			if (m.getDeclaringClass() == Object.class) {
				switch (m.getName()) {
				case "equals": return proxy == args[0];
				case "hashCode": return System.identityHashCode(proxy);
				default:
					return String.valueOf(ask("str", Channel.fields("target", Channel.list("o", id))));
				}
			}
			Object r = ask("call", Channel.fields("class", m.getDeclaringClass().getName(), "name", m.getName(),
			    "params", names(m.getParameterTypes()), "target", Channel.list("o", id), "args", encodeAll(args)));
			return decode(r, m.getGenericReturnType());
		}
	}

	/* An exception of the submission's: its stand-in class's, else the
	 * JDK's class of that name or above it, with the message. */
	private Throwable rebuild(Map<String, Object> exc) {
		Map<?, ?> type = exc.get("type") instanceof Map ? (Map<?, ?>) exc.get("type") : Map.of();
		String message = exc.get("message") instanceof String ? (String) exc.get("message") : null;
		List<String> names = new ArrayList<>();
		names.add(StandIns.str(type.get("name")));
		for (Object s : StandIns.list(type.get("supers")))
			names.add(StandIns.str(s));
		for (String n : names) {
			Class<?> c = classNamed(n);
			if (c == null || !Throwable.class.isAssignableFrom(c))
				continue;
			try {
				if (ProctorSplit.Remote.class.isAssignableFrom(c)) {
					List<?> ref = StandIns.list(exc.get("ref"));
					if (ref.size() < 2 || !"r".equals(ref.get(0)) || !(ref.get(1) instanceof Long))
						continue;
					Constructor<?> k = c.getDeclaredConstructor(ProctorSplit.Ref.class);
					k.setAccessible(true);
					return (Throwable) k.newInstance(new ProctorSplit.Ref((Long) ref.get(1), message));
				}
				if (c.getClassLoader() == null || c.getName().startsWith("java.")) {
					try {
						return (Throwable) c.getConstructor(String.class).newInstance(message);
					} catch (NoSuchMethodException e) {
						return (Throwable) c.getConstructor().newInstance();
					}
				}
			} catch (ReflectiveOperationException | RuntimeException e) {
				// the next class above it
			}
		}
		return new RuntimeException(message);
	}

	// ---- the program side's requests --------------------------------------------------------------

	@Override
	public Object serve(Map<String, Object> req) throws Throwable {
		String op = (String) req.get("op");
		switch (op) {
		case "call": {
			Object target = codec.decode(req.get("target"), Object.class);
			Class<?> c = classNamed(StandIns.str(req.get("class")));
			if (c == null || !c.isInterface() || !c.isInstance(target))
				throw new Channel.Broken("a call of no interface of the tests' object");
			List<Class<?>> ps = new ArrayList<>();
			for (Object n : StandIns.list(req.get("params"))) {
				Class<?> p = classNamed(StandIns.str(n));
				if (p == null)
					throw new Channel.Broken("no parameter type " + n);
				ps.add(p);
			}
			Method m = c.getMethod(StandIns.str(req.get("name")), ps.toArray(new Class<?>[0]));
			if (Modifier.isStatic(m.getModifiers()))
				throw new Channel.Broken("a static method of the tests'");
			Type[] types = m.getGenericParameterTypes();
			List<?> a = StandIns.list(req.get("args"));
			if (a.size() != types.length)
				throw new Channel.Broken("a call with the wrong number of arguments");
			Object[] args = new Object[types.length];
			for (int k = 0; k < args.length; k++)
				args[k] = codec.decode(a.get(k), types[k]);
			m.setAccessible(true);
			try {
				return codec.encode(m.invoke(target, args));
			} catch (InvocationTargetException e) {
				throw e.getCause() != null ? e.getCause() : e;
			}
		}
		case "stdin": {
			long size = req.get("size") instanceof Long ? (Long) req.get("size") : 8192;
			byte[] b = new byte[(int) Math.max(1, Math.min(size, 1 << 20))];
			int n = System.in.read(b);
			return Base64.getEncoder().encodeToString(n <= 0 ? new byte[0] : Arrays.copyOf(b, n));
		}
		default:
			throw new Channel.Broken("an operation the harness does not serve: " + op);
		}
	}

	/* The tests' exceptions cross quietly: the type only. */
	@Override
	public Map<String, Object> describe(Throwable t) {
		Map<String, Object> type = new LinkedHashMap<>();
		Class<?> c = t.getClass();
		while (c != null && !c.getName().startsWith("java."))
			c = c.getSuperclass();
		type.put("name", c == null ? "java.lang.RuntimeException" : c.getName());
		Map<String, Object> e = new LinkedHashMap<>();
		e.put("type", type);
		e.put("message", null);
		return e;
	}

	@Override
	public void drainOutput(Map<String, Object> msg) {
		List<Object> objects = codec.fieldsTable();
		if (objects != null)
			msg.put("objects", objects);
	}

	@Override
	public void takeOutput(Map<String, Object> msg) {
		guarded(() -> {
			codec.takeFields(msg.get("objects"));
			codec.applyFields();
			return null;
		});
		if (msg.get("out") instanceof String) {
			System.out.print((String) msg.get("out"));
			System.out.flush();
		}
		if (msg.get("err") instanceof String) {
			System.err.print((String) msg.get("err"));
			System.err.flush();
		}
	}
}
