/*
 * Java values on the split channel (docs/split-protocol.md, "Values" and
 * "Java"): data crosses as data, read with the JDK's own classes (a List of
 * the submission's crosses as its elements); everything else, the
 * submission's objects and the tests' callbacks, crosses by reference and
 * the receiver gets a stand-in.  A value is decoded for the type its
 * receiver declared (an `int` parameter gets an Integer, a List<Long>
 * Longs), else by its tag.
 */
package proctor.split;

import java.lang.reflect.Array;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

abstract class Codec {
	private static final int DEPTH_MAX = 100;

	/* This side's objects sent by reference, numbered once. */
	private final IdentityHashMap<Object, Long> exportIds = new IdentityHashMap<>();
	private final Map<Long, Object> exports = new HashMap<>();
	/* The other side's objects: one stand-in per number. */
	private final Map<Long, Object> imports = new HashMap<>();
	private long nextId;

	/* The number of the other side's object that `o` stands in for, or null. */
	abstract Long importedId(Object o);

	/* A stand-in for the other side's object `id` (description `desc`), to be
	 * a value of `want`. */
	abstract Object makeStandIn(long id, Map<String, Object> desc, Class<?> want);

	/* A class by its binary name, as this side sees it (the harness's
	 * stand-in for a class of the submission's), or null. */
	abstract Class<?> classNamed(String name);

	/* Whether an object of this class crosses by reference although the
	 * JDK would have it as data (a class of the submission's). */
	abstract boolean ownClass(Class<?> c);

	// ---- mirrored instance fields (docs/split-protocol.md, "Java": "objects") ----

	/* The instance fields of an object of class c that are kept in step
	 * with the other side's copy, each named by its class's binary name and
	 * its own ("Node.next"): the same on both sides. */
	abstract List<java.lang.reflect.Field> syncedFields(Class<?> c);

	/* This side's object of number id (the worker's numbering, both sides), or null. */
	abstract Object objectNumbered(long id);

	/* Whether this side sends only the fields it changed since it last
	 * received them (the harness: the program side's copy is the truth, and
	 * the tests' copy may be stale where the submission changed an object
	 * no message since has carried), or every field (the program side). */
	abstract boolean sendsChangesOnly();

	/* What each field of each object was, encoded, when this side last set
	 * it from a message (sendsChangesOnly()). */
	private final Map<Long, Map<String, Object>> seenFields = new HashMap<>();
	private boolean quiet;

	private Object quietEncode(Object v) {
		boolean was = quiet;
		quiet = true;
		try {
			return encode(v);
		} finally {
			quiet = was;
		}
	}

	private static final int FIELDS_MAX = 100_000;
	private final IdentityHashMap<Object, Boolean> pendingOut = new IdentityHashMap<>();
	private Map<Long, List<?>> fieldsIn = Map.of();
	private final java.util.ArrayDeque<Long> applyQueue = new java.util.ArrayDeque<>();
	private final java.util.Set<Long> applied = new java.util.HashSet<>();

	private void noteOut(Object o) {
		if (!quiet && !syncedFields(o.getClass()).isEmpty())
			pendingOut.put(o, Boolean.TRUE);
	}

	/* The "objects" table of the message being sent: the mirrored fields of
	 * every object the message refers to, and of those their fields refer
	 * to; null when there is none. */
	List<Object> fieldsTable() {
		if (pendingOut.isEmpty())
			return null;
		List<Object> table = new ArrayList<>();
		IdentityHashMap<Object, Boolean> done = new IdentityHashMap<>();
		while (!pendingOut.isEmpty() && table.size() < FIELDS_MAX) {
			Object o = pendingOut.keySet().iterator().next();
			pendingOut.remove(o);
			if (done.put(o, Boolean.TRUE) != null)
				continue;
			Long id = importedId(o);
			if (id == null)
				id = exportIds.get(o);
			if (id == null)
				continue;
			List<Object> fs = new ArrayList<>();
			Map<String, Object> seen = sendsChangesOnly() ? seenFields.computeIfAbsent(id, k -> new HashMap<>()) : null;
			for (java.lang.reflect.Field f : syncedFields(o.getClass())) {
				Object v;
				try {
					f.setAccessible(true);
					v = f.get(o);
				} catch (ReflectiveOperationException | RuntimeException e) {
					continue;
				}
				String key = f.getDeclaringClass().getName() + "." + f.getName();
				Object enc = encode(v);
				if (seen != null) {
					if (seen.containsKey(key) && java.util.Objects.equals(seen.get(key), enc))
						continue;
					seen.put(key, enc);
				}
				fs.add(Channel.list(key, enc));
			}
			if (!fs.isEmpty())
				table.add(Channel.list(id, fs));
		}
		pendingOut.clear();
		return table;
	}

	/* The "objects" table of a message received: applied now to the
	 * objects this side has, and to the others when they first appear. */
	void takeFields(Object table) {
		fieldsIn = new HashMap<>();
		applied.clear();
		applyQueue.clear();
		for (Object e : table instanceof List ? (List<?>) table : List.of()) {
			if (!(e instanceof List) || ((List<?>) e).size() != 2 || !(((List<?>) e).get(0) instanceof Long)
			    || !(((List<?>) e).get(1) instanceof List))
				throw new Channel.Broken("an objects entry that is not [number, fields]");
			long id = (Long) ((List<?>) e).get(0);
			fieldsIn.put(id, (List<?>) ((List<?>) e).get(1));
			if (objectNumbered(id) != null)
				applyQueue.add(id);
		}
	}

	/* Object `id` appeared (a new stand-in): its fields are to be set. */
	void appeared(long id) {
		if (fieldsIn.containsKey(id))
			applyQueue.add(id);
	}

	/* Set the fields of the objects queued, from the last table. */
	void applyFields() {
		while (!applyQueue.isEmpty()) {
			long id = applyQueue.poll();
			if (!applied.add(id))
				continue;
			Object o = objectNumbered(id);
			List<?> fs = fieldsIn.get(id);
			if (o == null || fs == null)
				continue;
			for (Object e : fs) {
				List<?> kv = e instanceof List ? (List<?>) e : List.of();
				if (kv.size() != 2 || !(kv.get(0) instanceof String))
					throw new Channel.Broken("a field that is not [name, value]");
				for (java.lang.reflect.Field f : syncedFields(o.getClass())) {
					if (!(f.getDeclaringClass().getName() + "." + f.getName()).equals(kv.get(0)))
						continue;
					Object v = decode(kv.get(1), f.getGenericType());
					try {
						f.setAccessible(true);
						f.set(o, v);
					} catch (ReflectiveOperationException | RuntimeException x) {
						continue; // a value of another type: the field keeps its own
					}
					if (sendsChangesOnly())
						seenFields.computeIfAbsent(id, k -> new HashMap<>()).put((String) kv.get(0), quietEncode(v));
				}
			}
		}
	}

	/* The description of this side's object sent by reference. */
	Map<String, Object> describe(Object o) {
		Map<String, Object> d = new LinkedHashMap<>();
		d.put("kind", "object");
		d.put("class", o.getClass().getName());
		List<Object> supers = new ArrayList<>();
		for (Class<?> c = o.getClass().getSuperclass(); c != null && c != Object.class; c = c.getSuperclass())
			supers.add(c.getName());
		d.put("supers", supers);
		List<Object> ifs = new ArrayList<>();
		Set<Class<?>> seen = new LinkedHashSet<>();
		for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass())
			interfaces(c, seen);
		for (Class<?> i : seen)
			if (Modifier.isPublic(i.getModifiers()) || ownClass(i))
				ifs.add(i.getName());
		d.put("interfaces", ifs);
		if (o instanceof Throwable) {
			String m;
			try {
				m = ((Throwable) o).getMessage();
			} catch (RuntimeException e) {
				m = null;
			}
			d.put("message", m);
		}
		return d;
	}

	/* The zero of a numeric primitive type, boxed. */
	static Object zero(Class<?> c) {
		return number(0, c);
	}

	private static void interfaces(Class<?> c, Set<Class<?>> out) {
		for (Class<?> i : c.getInterfaces())
			if (out.add(i))
				interfaces(i, out);
	}

	Object exported(long id) {
		Object o = exports.get(id);
		if (o == null && !exports.containsKey(id))
			throw new Channel.Broken("a reference to no object of this side's");
		return o;
	}

	Object imported(long id) {
		return imports.get(id);
	}

	void remember(long id, Object standIn) {
		imports.put(id, standIn);
	}

	static Class<?> raw(Type t) {
		if (t instanceof Class)
			return (Class<?>) t;
		if (t instanceof ParameterizedType)
			return raw(((ParameterizedType) t).getRawType());
		if (t instanceof GenericArrayType)
			return Array.newInstance(raw(((GenericArrayType) t).getGenericComponentType()), 0).getClass();
		if (t instanceof TypeVariable) {
			Type[] b = ((TypeVariable<?>) t).getBounds();
			return b.length > 0 ? raw(b[0]) : Object.class;
		}
		if (t instanceof WildcardType) {
			Type[] b = ((WildcardType) t).getUpperBounds();
			return b.length > 0 ? raw(b[0]) : Object.class;
		}
		return Object.class;
	}

	static Type arg(Type t, int k) {
		if (t instanceof ParameterizedType) {
			Type[] a = ((ParameterizedType) t).getActualTypeArguments();
			if (k < a.length)
				return a[k];
		}
		return Object.class;
	}

	static Type component(Type t) {
		if (t instanceof GenericArrayType)
			return ((GenericArrayType) t).getGenericComponentType();
		Class<?> c = raw(t);
		return c.isArray() ? c.getComponentType() : Object.class;
	}

	// ---- encoding ------------------------------------------------------------------------------

	Object encode(Object v) {
		return encode(v, 0);
	}

	private static List<Object> tag(String t, Object... rest) {
		List<Object> l = new ArrayList<>();
		l.add(t);
		for (Object o : rest)
			l.add(o);
		return l;
	}

	static String hexFloat(double d) {
		if (Double.isNaN(d))
			return "nan";
		if (Double.isInfinite(d))
			return d > 0 ? "inf" : "-inf";
		return Double.toHexString(d);
	}

	Object encode(Object v, int depth) {
		if (depth > DEPTH_MAX)
			throw new IllegalArgumentException("a value nested deeper than " + DEPTH_MAX);
		if (v == null)
			return null;
		Long other = importedId(v);
		if (other != null) {
			noteOut(v);
			return tag("o", other);
		}
		Class<?> c = v.getClass();
		if (c == Boolean.class || c == String.class)
			return v;
		if (c == Integer.class)
			return (long) (Integer) v;
		if (c == Long.class)
			return tag("J", v.toString());
		if (c == Short.class)
			return tag("sh", (long) (Short) v);
		if (c == Byte.class)
			return tag("by", (long) (Byte) v);
		if (c == Character.class)
			return tag("ch", v.toString());
		if (c == Double.class)
			return tag("f", hexFloat((Double) v));
		if (c == Float.class)
			return tag("ff", hexFloat((Float) v));
		if (c == BigInteger.class)
			return tag("i", ((BigInteger) v).toString(16));
		if (c == BigDecimal.class)
			return tag("D", v.toString());
		if (c == StringBuilder.class)
			return tag("SB", v.toString());
		if (v instanceof Enum) {
			Class<?> e = ((Enum<?>) v).getDeclaringClass();
			return tag("en", e.getName(), ((Enum<?>) v).name());
		}
		if (c.isArray()) {
			int n = Array.getLength(v);
			List<Object> l = new ArrayList<>(n);
			for (int k = 0; k < n; k++)
				l.add(encode(Array.get(v, k), depth + 1));
			return tag("A", c.getComponentType().getName(), l);
		}
		if (!ownClass(c) && c.getName().startsWith("java.")) {
			if (v instanceof List) {
				List<Object> l = new ArrayList<>();
				for (Object o : (List<?>) v)
					l.add(encode(o, depth + 1));
				return tag("l", l);
			}
			if (v instanceof Set) {
				List<Object> l = new ArrayList<>();
				for (Object o : (Set<?>) v)
					l.add(encode(o, depth + 1));
				return tag("s", l);
			}
			if (v instanceof Collection && !(v instanceof java.util.Queue)) {
				List<Object> l = new ArrayList<>();
				for (Object o : (Collection<?>) v)
					l.add(encode(o, depth + 1));
				return tag("l", l);
			}
			if (v instanceof java.util.Queue) {
				List<Object> l = new ArrayList<>();
				for (Object o : (Collection<?>) v)
					l.add(encode(o, depth + 1));
				return tag("q", l);
			}
			if (v instanceof Map) {
				List<Object> l = new ArrayList<>();
				for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet())
					l.add(Channel.list(encode(e.getKey(), depth + 1), encode(e.getValue(), depth + 1)));
				return tag("d", l);
			}
			if (c == Optional.class) {
				Optional<?> o = (Optional<?>) v;
				return o.isPresent() ? tag("Op", Channel.list(encode(o.get(), depth + 1))) : tag("Op", new ArrayList<>());
			}
		}
		Long id = exportIds.get(v);
		if (id == null) {
			id = ++nextId;
			exportIds.put(v, id);
			exports.put(id, v);
		}
		noteOut(v);
		return tag("r", id, describe(v));
	}

	// ---- decoding ------------------------------------------------------------------------------

	Object decode(Object j, Type want) {
		return decode(j, want, 0);
	}

	static Object number(long n, Class<?> w) {
		if (w == int.class || w == Integer.class)
			return (int) n;
		if (w == long.class || w == Long.class)
			return n;
		if (w == double.class || w == Double.class)
			return (double) n;
		if (w == float.class || w == Float.class)
			return (float) n;
		if (w == short.class || w == Short.class)
			return (short) n;
		if (w == byte.class || w == Byte.class)
			return (byte) n;
		if (w == char.class || w == Character.class)
			return (char) n;
		if (w == BigInteger.class)
			return BigInteger.valueOf(n);
		if (w == BigDecimal.class)
			return BigDecimal.valueOf(n);
		return n >= Integer.MIN_VALUE && n <= Integer.MAX_VALUE ? (Object) (int) n : (Object) n;
	}

	static double parseHexFloat(String s) {
		switch (s) {
		case "nan": return Double.NaN;
		case "inf": return Double.POSITIVE_INFINITY;
		case "-inf": return Double.NEGATIVE_INFINITY;
		default:
			try {
				return Double.parseDouble(s);
			} catch (NumberFormatException e) {
				throw new Channel.Broken("a float that does not decode");
			}
		}
	}

	private static long integer(Object o) {
		if (o instanceof Long)
			return (Long) o;
		if (o instanceof String)
			try {
				return Long.parseLong((String) o);
			} catch (NumberFormatException e) {
				throw new Channel.Broken("an integer that does not decode");
			}
		throw new Channel.Broken("an integer that does not decode");
	}

	private static String text(Object o) {
		if (o instanceof String)
			return (String) o;
		throw new Channel.Broken("a string that does not decode");
	}

	@SuppressWarnings("unchecked")
	private static List<Object> items(Object o) {
		if (o instanceof List)
			return (List<Object>) o;
		throw new Channel.Broken("a list that does not decode");
	}

	/* A new collection of `w` if it is a concrete class with a public
	 * constructor of no arguments, else `fallback`. */
	@SuppressWarnings("unchecked")
	private static <T> T fresh(Class<?> w, Class<?> base, T fallback) {
		if (base.isAssignableFrom(w) && !w.isInterface() && !Modifier.isAbstract(w.getModifiers())
		    && w.getName().startsWith("java.")) {
			try {
				return (T) w.getConstructor().newInstance();
			} catch (ReflectiveOperationException | RuntimeException e) {
				return fallback;
			}
		}
		// An interface or abstract type: the JDK's usual class for it.
		if (w == java.util.SortedSet.class || w == java.util.NavigableSet.class)
			return (T) new java.util.TreeSet<>();
		if (w == java.util.SortedMap.class || w == java.util.NavigableMap.class)
			return (T) new java.util.TreeMap<>();
		if (w == java.util.Queue.class || w == java.util.Deque.class)
			return (T) new java.util.LinkedList<>();
		if (w == Set.class || w == java.util.AbstractSet.class)
			return (T) new LinkedHashSet<>();
		if (w == List.class || w == java.util.AbstractList.class)
			return (T) new ArrayList<>();
		if (w == Map.class || w == java.util.AbstractMap.class)
			return (T) new LinkedHashMap<>();
		return fallback;
	}

	@SuppressWarnings({"unchecked", "rawtypes"})
	Object decode(Object j, Type want, int depth) {
		if (depth > DEPTH_MAX)
			throw new Channel.Broken("a value nested deeper than " + DEPTH_MAX);
		Class<?> w = raw(want);
		if (j == null)
			return null;
		if (j instanceof Boolean)
			return j;
		if (j instanceof String) {
			String s = (String) j;
			if ((w == char.class || w == Character.class) && s.length() == 1)
				return s.charAt(0);
			if (w == StringBuilder.class)
				return new StringBuilder(s);
			return s;
		}
		if (j instanceof Long)
			return number((Long) j, w);
		List<Object> l = items(j);
		if (l.isEmpty() || !(l.get(0) instanceof String))
			throw new Channel.Broken("a value without a tag");
		String t = (String) l.get(0);
		Object a = l.size() > 1 ? l.get(1) : null;
		switch (t) {
		case "J":
		case "sh":
		case "by":
			return number(integer(a), w == Object.class || w.isInterface()
			    ? (t.equals("J") ? Long.class : t.equals("sh") ? Short.class : Byte.class) : w);
		case "ch": {
			String s = text(a);
			if (s.length() != 1)
				throw new Channel.Broken("a char that is not one");
			if (w == String.class)
				return s;
			return s.charAt(0);
		}
		case "f":
		case "ff": {
			double d = parseHexFloat(text(a));
			if (w == float.class || w == Float.class || (t.equals("ff") && (w == Object.class || w.isInterface())))
				return (float) d;
			if (w == BigDecimal.class)
				return BigDecimal.valueOf(d);
			return d;
		}
		case "i": {
			BigInteger b = new BigInteger(text(a), 16);
			if (w == long.class || w == Long.class)
				return b.longValue();
			if (w == int.class || w == Integer.class)
				return b.intValue();
			return b;
		}
		case "D":
			return new BigDecimal(text(a));
		case "SB":
			return w == String.class ? text(a) : new StringBuilder(text(a));
		case "b":
			return Base64.getDecoder().decode(text(a));
		case "en": {
			Class<?> e = classNamed(text(a));
			if (e == null || !e.isEnum() || l.size() < 3)
				throw new Channel.Broken("an enum constant of no enum here");
			return Enum.valueOf((Class) e, text(l.get(2)));
		}
		case "A": {
			List<Object> v = items(l.size() > 2 ? l.get(2) : null);
			Class<?> comp = w.isArray() ? w.getComponentType() : primitiveOrNamed(text(a));
			Type compType = w.isArray() ? component(want) : comp;
			if (comp == null)
				comp = Object.class;
			if (!w.isArray() && (List.class.isAssignableFrom(w) || Collection.class.isAssignableFrom(w)
			    || Iterable.class == w)) {
				List<Object> out = new ArrayList<>();
				for (Object o : v)
					out.add(decode(o, arg(want, 0), depth + 1));
				return out;
			}
			Object arr = Array.newInstance(comp, v.size());
			for (int k = 0; k < v.size(); k++)
				Array.set(arr, k, decode(v.get(k), compType, depth + 1));
			return arr;
		}
		case "l":
		case "t":
		case "q":
		case "s":
		case "S": {
			List<Object> v = items(a);
			if (w.isArray()) {
				Object arr = Array.newInstance(w.getComponentType(), v.size());
				for (int k = 0; k < v.size(); k++)
					Array.set(arr, k, decode(v.get(k), component(want), depth + 1));
				return arr;
			}
			Type el = arg(want, 0);
			Collection<Object> out;
			if (t.equals("s") || t.equals("S"))
				out = fresh(w, Set.class, new LinkedHashSet<>());
			else if (t.equals("q"))
				out = fresh(w, Collection.class, new java.util.ArrayDeque<>());
			else
				out = fresh(w, Collection.class, new ArrayList<>());
			if (w.isAssignableFrom(Set.class) && !Set.class.isAssignableFrom(out.getClass()) && !t.equals("l"))
				out = new LinkedHashSet<>();
			for (Object o : v)
				out.add(decode(o, el, depth + 1));
			return out;
		}
		case "d": {
			Map<Object, Object> out = fresh(w, Map.class, new LinkedHashMap<>());
			for (Object kv : items(a)) {
				List<Object> p = items(kv);
				if (p.size() != 2)
					throw new Channel.Broken("a map entry that is not a pair");
				out.put(decode(p.get(0), arg(want, 0), depth + 1), decode(p.get(1), arg(want, 1), depth + 1));
			}
			return out;
		}
		case "Op": {
			List<Object> v = items(a);
			return v.isEmpty() ? Optional.empty() : Optional.ofNullable(decode(v.get(0), arg(want, 0), depth + 1));
		}
		case "o":
			return exported(integer(a));
		case "r": {
			long id = integer(a);
			Object known = imports.get(id);
			if (known != null && w.isInstance(known))
				return known;
			Object desc = l.size() > 2 ? l.get(2) : null;
			if (!(desc instanceof Map))
				throw new Channel.Broken("a reference without a description");
			Object s = makeStandIn(id, (Map<String, Object>) desc, w);
			if (known == null)
				imports.put(id, s);
			appeared(id);
			return s;
		}
		default:
			throw new Channel.Broken("a value of an unknown tag '" + t + "'");
		}
	}

	/* The primitive type of that name, or null. */
	static Class<?> primitive(String name) {
		switch (name) {
		case "int": return int.class;
		case "long": return long.class;
		case "double": return double.class;
		case "float": return float.class;
		case "short": return short.class;
		case "byte": return byte.class;
		case "char": return char.class;
		case "boolean": return boolean.class;
		default: return null;
		}
	}

	Class<?> primitiveOrNamed(String name) {
		Class<?> c = primitive(name);
		if (c == null)
			c = classNamed(name);
		return c != null ? c : Object.class;
	}
}
