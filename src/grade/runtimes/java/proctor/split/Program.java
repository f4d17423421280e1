/*
 * The program side of a split JUnit run (ProctorSplit.java): the program
 * uid's JVM, with the submission's classes on its class path.  It says
 * {"ready": true}, then serves the harness: the signatures of the
 * submission's classes (`classes`), and `new`, `call`, `getstatic`, `state`
 * and `str` on them.  What the submission prints goes back with each
 * message; what it reads from System.in comes from the harness's.
 */
package proctor.split;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintStream;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Proxy;
import java.nio.channels.Channel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

final class Program implements proctor.split.Channel.Server {
	private final ByteArrayOutputStream out = new ByteArrayOutputStream();
	private final ByteArrayOutputStream err = new ByteArrayOutputStream();
	private final ClassLoader loader = ClassLoader.getSystemClassLoader();
	private proctor.split.Channel chan;
	private final Codec codec = new Codec() {
		@Override
		Long importedId(Object o) {
			if (o != null && Proxy.isProxyClass(o.getClass())) {
				InvocationHandler h = Proxy.getInvocationHandler(o);
				if (h instanceof Tests)
					return ((Tests) h).id;
			}
			return null;
		}

		@Override
		Object makeStandIn(long id, Map<String, Object> desc, Class<?> want) {
			List<Class<?>> ifs = new ArrayList<>();
			Object names = desc.get("interfaces");
			if (names instanceof List)
				for (Object n : (List<?>) names)
					if (n instanceof String) {
						Class<?> c = classNamed((String) n);
						if (c != null && c.isInterface())
							ifs.add(c);
					}
			if (want != Object.class && !want.isInterface())
				throw new IllegalArgumentException("an object of the tests' cannot be a " + want.getName()
				    + " in the submission's process (only an interface type crosses)");
			if (want.isInterface() && !ifs.contains(want))
				ifs.add(want);
			return Proxy.newProxyInstance(loader, ifs.toArray(new Class<?>[0]), new Tests(id));
		}

		@Override
		Class<?> classNamed(String name) {
			try {
				return Class.forName(name, false, loader);
			} catch (ClassNotFoundException | LinkageError e) {
				return null;
			}
		}

		@Override
		boolean ownClass(Class<?> c) {
			return isSubmissions(c);
		}

		@Override
		List<Field> syncedFields(Class<?> c) {
			return fieldsOf.computeIfAbsent(c, k -> {
				List<Field> l = new ArrayList<>();
				for (Class<?> x = k; x != null && isSubmissions(x); x = x.getSuperclass())
					l.addAll(Signatures.mirrored(x));
				return l;
			});
		}

		@Override
		boolean sendsChangesOnly() {
			return false;
		}

		@Override
		Object objectNumbered(long id) {
			try {
				return exported(id);
			} catch (proctor.split.Channel.Broken e) {
				return null;
			}
		}
	};
	private final Map<Class<?>, List<Field>> fieldsOf = new java.util.HashMap<>();

	/* A proxy of an object of the tests' (a lambda, a callback): its
	 * interface methods are called in the harness, the default ones here. */
	private final class Tests implements InvocationHandler {
		final long id;

		Tests(long id) {
			this.id = id;
		}

		@Override
		public Object invoke(Object proxy, Method m, Object[] args) throws Throwable {
			if (m.getDeclaringClass() == Object.class) {
				switch (m.getName()) {
				case "equals": return proxy == args[0];
				case "hashCode": return System.identityHashCode(proxy);
				default: return "<the tests' object>";
				}
			}
			if (m.isDefault())
				return InvocationHandler.invokeDefault(proxy, m, args);
			List<Object> a = new ArrayList<>();
			if (args != null)
				for (Object o : args)
					a.add(codec.encode(o));
			List<Object> params = new ArrayList<>();
			for (Class<?> p : m.getParameterTypes())
				params.add(p.getName());
			Object r;
			try {
				r = chan.request("call", proctor.split.Channel.fields("target", proctor.split.Channel.list("o", id),
				    "class", m.getDeclaringClass().getName(), "name", m.getName(), "params", params, "args", a));
			} catch (proctor.split.Channel.Raised e) {
				throw rebuild(e.exc);
			}
			return codec.decode(r, m.getGenericReturnType());
		}
	}

	/* The tests' exception, as the harness sent it: the type only. */
	private Throwable rebuild(Map<String, Object> exc) {
		Object type = exc.get("type");
		String name = type instanceof Map && ((Map<?, ?>) type).get("name") instanceof String
		    ? (String) ((Map<?, ?>) type).get("name") : "java.lang.RuntimeException";
		Class<?> c = codec.classNamed(name);
		if (c != null && Throwable.class.isAssignableFrom(c) && !isSubmissions(c)) {
			try {
				return (Throwable) c.getConstructor().newInstance();
			} catch (ReflectiveOperationException | RuntimeException e) {
				// below
			}
		}
		return new RuntimeException("an exception of the tests' (" + name + ")");
	}

	static boolean isSubmissions(Class<?> c) {
		while (c.isArray())
			c = c.getComponentType();
		return !c.isPrimitive() && c.getClassLoader() == ClassLoader.getSystemClassLoader()
		    && !c.getName().startsWith("proctor.split.");
	}

	static void main() {
		Channel inherited;
		try {
			inherited = System.inheritedChannel();
		} catch (IOException e) {
			inherited = null;
		}
		if (!(inherited instanceof SocketChannel)) {
			System.err.println("proctor_split program: no channel on fd 0");
			Runtime.getRuntime().halt(ProctorSplit.NOT_STARTED_STATUS);
			return;
		}
		Program p = new Program();
		p.run();
	}

	private void run() {
		PrintStream realErr = System.err;
		chan = new proctor.split.Channel(this);
		System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
		System.setErr(new PrintStream(err, true, StandardCharsets.UTF_8));
		System.setIn(new TestsStdin());
		try {
			chan.send(proctor.split.Channel.fields("ready", true));
			for (;;)
				chan.serveNext();
		} catch (proctor.split.Channel.Closed e) {
			Runtime.getRuntime().halt(0); // the harness is done
		} catch (Throwable t) {
			realErr.println("proctor_split worker: " + t);
			Runtime.getRuntime().halt(ProctorSplit.ABORT_STATUS);
		}
	}

	/* System.in of the submission's: the harness's, read when asked. */
	private final class TestsStdin extends InputStream {
		private byte[] buf = new byte[0];
		private int pos;
		private boolean eof;

		@Override
		public int read() {
			byte[] one = new byte[1];
			return read(one, 0, 1) <= 0 ? -1 : one[0] & 0xff;
		}

		@Override
		public int read(byte[] b, int off, int len) {
			if (len == 0)
				return 0;
			if (pos >= buf.length && !eof) {
				Object r = chan.request("stdin", proctor.split.Channel.fields("size", (long) Math.max(len, 8192)));
				buf = r instanceof String ? Base64.getDecoder().decode((String) r) : new byte[0];
				pos = 0;
				eof = buf.length == 0;
			}
			if (pos >= buf.length)
				return -1;
			int n = Math.min(len, buf.length - pos);
			System.arraycopy(buf, pos, b, off, n);
			pos += n;
			return n;
		}
	}

	@Override
	public void takeOutput(Map<String, Object> msg) {
		codec.takeFields(msg.get("objects"));
	}

	@Override
	public void drainOutput(Map<String, Object> msg) {
		List<Object> objects = codec.fieldsTable();
		if (objects != null)
			msg.put("objects", objects);
		System.out.flush();
		System.err.flush();
		if (out.size() > 0) {
			msg.put("out", out.toString(StandardCharsets.UTF_8));
			out.reset();
		}
		if (err.size() > 0) {
			msg.put("err", err.toString(StandardCharsets.UTF_8));
			err.reset();
		}
	}

	@Override
	public Map<String, Object> describe(Throwable t) {
		if (t instanceof InvocationTargetException && t.getCause() != null)
			t = t.getCause();
		Map<String, Object> type = new LinkedHashMap<>();
		type.put("name", t.getClass().getName());
		List<Object> supers = new ArrayList<>();
		for (Class<?> c = t.getClass().getSuperclass(); c != null && c != Object.class; c = c.getSuperclass())
			supers.add(c.getName());
		type.put("supers", supers);
		Map<String, Object> e = new LinkedHashMap<>();
		e.put("type", type);
		String m;
		try {
			m = t.getMessage();
		} catch (Throwable x) {
			m = null;
		}
		e.put("message", m);
		// An exception of the submission's class crosses by reference too:
		// the tests may call its methods (getNeeded()).
		if (isSubmissions(t.getClass()))
			e.put("ref", codec.encode(t));
		return e;
	}

	@Override
	public Object serve(Map<String, Object> req) throws Throwable {
		String op = (String) req.get("op");
		codec.takeFields(req.get("objects"));
		codec.applyFields();
		switch (op) {
		case "classes":
			return Signatures.describe(classPathDirs(), names(req.get("skip")), loader);
		case "new": {
			Class<?> c = named(req.get("class"));
			Constructor<?> k = c.getDeclaredConstructor(params(req.get("params")));
			k.setAccessible(true);
			Object[] a = args(req.get("args"), k.getGenericParameterTypes());
			Object o = unwrap(() -> k.newInstance(a));
			return new proctor.split.Channel.WithBack(codec.encode(o), back(a));
		}
		case "call": {
			Class<?> c = named(req.get("class"));
			Method m = find(c, (String) req.get("name"), params(req.get("params")));
			m.setAccessible(true);
			Object self = Modifier.isStatic(m.getModifiers()) ? null : target(req.get("target"), c);
			Object[] a = args(req.get("args"), m.getGenericParameterTypes());
			Object r = unwrap(() -> m.invoke(self, a));
			// The fields of the target and of the arguments, as the call
			// left them, go back with the answer.
			if (self != null)
				codec.encode(self);
			for (Object x : a)
				if (x != null && isSubmissions(x.getClass()))
					codec.encode(x);
			return new proctor.split.Channel.WithBack(codec.encode(r), back(a));
		}
		case "getstatic": {
			Class<?> c = named(req.get("class"));
			Field f = c.getDeclaredField((String) req.get("name"));
			f.setAccessible(true);
			return codec.encode(unwrap(() -> f.get(null)));
		}
		case "state": {
			Object o = target(req.get("target"), Object.class);
			return state(o, Boolean.TRUE.equals(req.get("deep")));
		}
		case "str": {
			Object o = target(req.get("target"), Object.class);
			return String.valueOf(o);
		}
		default:
			throw new proctor.split.Channel.Broken("an operation the program side does not serve: " + op);
		}
	}

	interface Action {
		Object run() throws Throwable;
	}

	private static Object unwrap(Action a) throws Throwable {
		try {
			return a.run();
		} catch (InvocationTargetException e) {
			throw e.getCause() != null ? e.getCause() : e;
		} catch (ExceptionInInitializerError e) {
			throw e.getCause() != null ? e.getCause() : e;
		}
	}

	/* A method of c or of a class above it, by name and parameter types. */
	private static Method find(Class<?> c, String name, Class<?>[] params) throws NoSuchMethodException {
		for (Class<?> k = c; k != null; k = k.getSuperclass()) {
			try {
				return k.getDeclaredMethod(name, params);
			} catch (NoSuchMethodException e) {
				// above
			}
		}
		return c.getMethod(name, params);
	}

	private Object target(Object j, Class<?> c) {
		Object o = codec.decode(j, Object.class);
		if (o == null || !c.isInstance(o))
			throw new proctor.split.Channel.Broken("a call on no object of the submission's");
		return o;
	}

	private Class<?> named(Object name) {
		Class<?> c = name instanceof String ? codec.classNamed((String) name) : null;
		if (c == null)
			throw new proctor.split.Channel.Broken("no class " + name);
		return c;
	}

	private Class<?>[] params(Object j) {
		List<Class<?>> out = new ArrayList<>();
		if (j instanceof List)
			for (Object n : (List<?>) j) {
				Class<?> c = n instanceof String ? codec.primitiveOrNamed((String) n) : null;
				if (c == null || (c == Object.class && !"java.lang.Object".equals(n)))
					throw new proctor.split.Channel.Broken("no parameter type " + n);
				out.add(c);
			}
		return out.toArray(new Class<?>[0]);
	}

	private Object[] args(Object j, java.lang.reflect.Type[] types) {
		List<?> l = j instanceof List ? (List<?>) j : List.of();
		if (l.size() != types.length)
			throw new proctor.split.Channel.Broken("a call with " + l.size() + " arguments for " + types.length);
		Object[] a = new Object[l.size()];
		for (int k = 0; k < a.length; k++)
			a[k] = codec.decode(l.get(k), types[k]);
		return a;
	}

	/* The arguments the callee could have changed in place (arrays, the
	 * JDK's collections, a StringBuilder), as they are now: the harness
	 * puts their contents into the tests' own objects. */
	private List<Object> back(Object[] a) {
		List<Object> l = new ArrayList<>();
		for (int k = 0; k < a.length; k++) {
			Object v = a[k];
			if (v != null && (v.getClass().isArray() || ((v instanceof java.util.Collection || v instanceof Map
			    || v instanceof StringBuilder) && v.getClass().getName().startsWith("java."))))
				l.add(proctor.split.Channel.list((long) k, codec.encode(v)));
		}
		return l;
	}

	private static Set<String> names(Object j) {
		Set<String> s = new HashSet<>();
		if (j instanceof List)
			for (Object o : (List<?>) j)
				if (o instanceof String)
					s.add((String) o);
		return s;
	}

	/* The fields an object is compared by (docs/split-protocol.md, "Java"):
	 * null when its class keeps Object's equals(), else every instance
	 * field of its classes, read without running its code. */
	private Object state(Object o, boolean deep) throws IllegalAccessException {
		if (o == null)
			return null;
		boolean own = deep;
		for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass())
			try {
				c.getDeclaredMethod("equals", Object.class);
				own = true;
				break;
			} catch (NoSuchMethodException e) {
				// above
			}
		if (!own)
			return null;
		List<Object> fields = new ArrayList<>();
		for (Class<?> c = o.getClass(); c != null && c != Object.class; c = c.getSuperclass())
			for (Field f : c.getDeclaredFields()) {
				if (Modifier.isStatic(f.getModifiers()) || f.isSynthetic())
					continue;
				f.setAccessible(true);
				fields.add(proctor.split.Channel.list(c.getName() + "." + f.getName(), codec.encode(f.get(o))));
			}
		fields.sort((x, y) -> ((String) ((List<?>) x).get(0)).compareTo((String) ((List<?>) y).get(0)));
		return fields;
	}

	/* The directories of the class path (the submission's classes). */
	private static List<Path> classPathDirs() {
		List<Path> dirs = new ArrayList<>();
		for (String e : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
			if (e.isEmpty())
				continue;
			Path p = Paths.get(e);
			if (Files.isDirectory(p) && !Files.exists(p.resolve("proctor/split/ProctorSplit.class")))
				dirs.add(p);
		}
		return dirs;
	}

	static Stream<Path> walk(Path dir) throws IOException {
		return Files.walk(dir, 32);
	}
}
