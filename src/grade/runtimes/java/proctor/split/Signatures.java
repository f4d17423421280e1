/*
 * What the program side reports of the submission's classes (the
 * `classes` answer, docs/split-protocol.md "Java"): for each top-level
 * class of its class path directories, loaded without being initialized
 * (no code of the submission's runs for it), the members the tests could
 * use (everything but private), with their types as Java source.  The
 * harness writes the stand-ins from it (StandIns.java).
 */
package proctor.split;

import java.io.IOException;
import java.lang.reflect.Constructor;
import java.lang.reflect.Executable;
import java.lang.reflect.Field;
import java.lang.reflect.GenericArrayType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.ParameterizedType;
import java.lang.reflect.Type;
import java.lang.reflect.TypeVariable;
import java.lang.reflect.WildcardType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

final class Signatures {
	private Signatures() {
	}

	static List<Object> describe(List<Path> dirs, Set<String> skip, ClassLoader loader) throws IOException {
		Set<String> names = new TreeSet<>();
		for (Path d : dirs)
			try (Stream<Path> s = Program.walk(d)) {
				s.filter(p -> p.toString().endsWith(".class") && Files.isRegularFile(p)).forEach(p -> {
					String rel = d.relativize(p).toString();
					String n = rel.substring(0, rel.length() - 6).replace('/', '.');
					if (!n.contains("$") && !n.equals("module-info") && !n.endsWith("package-info"))
						names.add(n);
				});
			}
		List<Object> out = new ArrayList<>();
		for (String n : names) {
			String simple = n.substring(n.lastIndexOf('.') + 1);
			if (skip.contains(n) || skip.contains(simple))
				continue;
			Class<?> c;
			try {
				c = Class.forName(n, false, loader);
			} catch (ClassNotFoundException | LinkageError e) {
				continue;
			}
			if (Modifier.isPrivate(c.getModifiers()))
				continue;
			out.add(describeClass(c));
		}
		return out;
	}

	private static String access(int mod) {
		return Modifier.isPublic(mod) ? "public" : Modifier.isProtected(mod) ? "protected" : "";
	}

	/* Whether the tests can name every class in t (a public class of the
	 * JDK, or one of the submission's that is not private, local or
	 * anonymous). */
	static boolean visible(Type t) {
		if (t instanceof Class) {
			Class<?> c = (Class<?>) t;
			while (c.isArray())
				c = c.getComponentType();
			if (c.isPrimitive())
				return true;
			if (c.isAnonymousClass() || c.isLocalClass() || c.isSynthetic() || c.isHidden())
				return false;
			for (Class<?> k = c; k != null; k = k.getEnclosingClass()) {
				if (Modifier.isPrivate(k.getModifiers()))
					return false;
				if (!Program.isSubmissions(k) && !Modifier.isPublic(k.getModifiers()))
					return false;
				if (k.getEnclosingClass() != null && !Modifier.isStatic(k.getModifiers()) && !k.isInterface()
				    && !k.isEnum() && !k.isRecord())
					return false;
			}
			return true;
		}
		if (t instanceof ParameterizedType) {
			ParameterizedType p = (ParameterizedType) t;
			if (!visible(p.getRawType()))
				return false;
			for (Type a : p.getActualTypeArguments())
				if (!visible(a))
					return false;
			return true;
		}
		if (t instanceof GenericArrayType)
			return visible(((GenericArrayType) t).getGenericComponentType());
		if (t instanceof WildcardType) {
			for (Type b : ((WildcardType) t).getUpperBounds())
				if (!visible(b))
					return false;
			for (Type b : ((WildcardType) t).getLowerBounds())
				if (!visible(b))
					return false;
			return true;
		}
		return t instanceof TypeVariable;
	}

	/* A type as Java source. */
	static String source(Type t) {
		if (t instanceof Class) {
			Class<?> c = (Class<?>) t;
			if (c.isArray())
				return source(c.getComponentType()) + "[]";
			String n = c.getCanonicalName();
			return n != null ? n : "java.lang.Object";
		}
		if (t instanceof ParameterizedType) {
			ParameterizedType p = (ParameterizedType) t;
			StringBuilder b = new StringBuilder(source(p.getRawType())).append('<');
			Type[] a = p.getActualTypeArguments();
			for (int k = 0; k < a.length; k++)
				b.append(k > 0 ? ", " : "").append(source(a[k]));
			return b.append('>').toString();
		}
		if (t instanceof GenericArrayType)
			return source(((GenericArrayType) t).getGenericComponentType()) + "[]";
		if (t instanceof WildcardType) {
			WildcardType w = (WildcardType) t;
			if (w.getLowerBounds().length > 0)
				return "? super " + source(w.getLowerBounds()[0]);
			Type[] u = w.getUpperBounds();
			return u.length == 0 || u[0] == Object.class ? "?" : "? extends " + source(u[0]);
		}
		if (t instanceof TypeVariable)
			return ((TypeVariable<?>) t).getName();
		return "java.lang.Object";
	}

	private static List<Object> typeParams(TypeVariable<?>[] vars) {
		List<Object> l = new ArrayList<>();
		for (TypeVariable<?> v : vars) {
			StringBuilder b = new StringBuilder(v.getName());
			Type[] bounds = v.getBounds();
			for (int k = 0; k < bounds.length; k++)
				if (!(bounds.length == 1 && bounds[0] == Object.class))
					b.append(k == 0 ? " extends " : " & ").append(source(bounds[k]));
			l.add(b.toString());
		}
		return l;
	}

	private static boolean allVisible(Executable e) {
		for (Type t : e.getGenericParameterTypes())
			if (!visible(t))
				return false;
		for (Type t : e.getGenericExceptionTypes())
			if (!visible(t))
				return false;
		for (TypeVariable<?> v : e.getTypeParameters())
			for (Type b : v.getBounds())
				if (!visible(b))
					return false;
		return !(e instanceof Method) || visible(((Method) e).getGenericReturnType());
	}

	private static Map<String, Object> executable(Executable e) {
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("access", access(e.getModifiers()));
		List<Object> params = new ArrayList<>();
		Type[] generic = e.getGenericParameterTypes();
		Class<?>[] erased = e.getParameterTypes();
		// An inner or enum class's constructor may report fewer generic types.
		for (int k = 0; k < erased.length; k++) {
			Type g = generic.length == erased.length ? generic[k] : erased[k];
			params.add(Channel.list(source(g), source(erased[k])));
		}
		m.put("params", params);
		m.put("varargs", e.isVarArgs());
		List<Object> thr = new ArrayList<>();
		for (Type t : e.getGenericExceptionTypes())
			thr.add(source(t));
		m.put("throws", thr);
		m.put("typeParams", typeParams(e.getTypeParameters()));
		return m;
	}

	/* The instance fields of c itself (not its superclasses') that are
	 * mirrored in its stand-in: not private, not synthetic, of a type the
	 * tests can name. */
	static List<Field> mirrored(Class<?> c) {
		List<Field> l = new ArrayList<>();
		if (c.isInterface() || c.isEnum() || c.isRecord() || c.isArray() || c.isPrimitive())
			return l;
		for (Field f : c.getDeclaredFields()) {
			int mod = f.getModifiers();
			if (!Modifier.isStatic(mod) && !Modifier.isPrivate(mod) && !f.isSynthetic() && visible(f.getGenericType()))
				l.add(f);
		}
		return l;
	}

	static Map<String, Object> describeClass(Class<?> c) {
		Map<String, Object> d = new LinkedHashMap<>();
		d.put("name", c.getName());
		d.put("simple", c.getSimpleName());
		d.put("package", c.getPackageName());
		d.put("kind", c.isInterface() ? "interface" : c.isEnum() ? "enum" : c.isRecord() ? "record" : "class");
		d.put("access", access(c.getModifiers()));
		d.put("abstract", Modifier.isAbstract(c.getModifiers()));
		d.put("typeParams", typeParams(c.getTypeParameters()));
		Class<?> sup = c.getSuperclass();
		String superKind = "object";
		if (c.isInterface() || c.isEnum() || c.isRecord() || sup == null || sup == Object.class) {
			superKind = "object";
		} else if (Program.isSubmissions(sup)) {
			superKind = "own";
			d.put("super", source(c.getGenericSuperclass()));
		} else if (Throwable.class.isAssignableFrom(sup) && Modifier.isPublic(sup.getModifiers())) {
			superKind = "throwable";
			d.put("super", source(c.getGenericSuperclass()));
		} else {
			d.put("unsupported", c.getName() + " extends " + sup.getName()
			    + ", a class of the JDK's that a split run cannot stand in for");
		}
		d.put("superKind", superKind);
		List<Object> ifs = new ArrayList<>();
		for (Type i : c.getGenericInterfaces())
			if (visible(i))
				ifs.add(source(i));
		d.put("interfaces", ifs);
		List<Object> ctors = new ArrayList<>();
		if (!c.isInterface() && !c.isEnum())
			for (Constructor<?> k : c.getDeclaredConstructors())
				if (!Modifier.isPrivate(k.getModifiers()) && !k.isSynthetic() && allVisible(k))
					ctors.add(executable(k));
		d.put("ctors", ctors);
		List<Object> methods = new ArrayList<>();
		for (Method m : c.getDeclaredMethods()) {
			int mod = m.getModifiers();
			if (Modifier.isPrivate(mod) || m.isSynthetic() || m.isBridge() || !allVisible(m))
				continue;
			if (c.isEnum() && Modifier.isStatic(mod) && (m.getName().equals("values") || m.getName().equals("valueOf")))
				continue;
			if (!Modifier.isStatic(mod) && m.getParameterCount() == 0
			    && (m.getName().equals("hashCode") || m.getName().equals("toString")))
				continue;
			if (m.getName().equals("equals") && m.getParameterCount() == 1 && m.getParameterTypes()[0] == Object.class)
				continue;
			Map<String, Object> e = executable(m);
			e.put("name", m.getName());
			e.put("static", Modifier.isStatic(mod));
			e.put("abstract", Modifier.isAbstract(mod));
			e.put("default", m.isDefault());
			e.put("returns", source(m.getGenericReturnType()));
			methods.add(e);
		}
		d.put("methods", methods);
		List<Object> fields = new ArrayList<>();
		for (Field f : c.getDeclaredFields()) {
			int mod = f.getModifiers();
			if (!Modifier.isStatic(mod) || Modifier.isPrivate(mod) || f.isSynthetic() || f.isEnumConstant()
			    || !visible(f.getGenericType()))
				continue;
			Map<String, Object> e = new LinkedHashMap<>();
			e.put("access", access(mod));
			e.put("name", f.getName());
			e.put("type", source(f.getGenericType()));
			e.put("final", Modifier.isFinal(mod));
			fields.add(e);
		}
		d.put("fields", fields);
		// Instance fields the tests may read and write (node.next): the
		// stand-in has them too, kept in step with the object's (Codec).
		List<Object> ifields = new ArrayList<>();
		if (!c.isInterface() && !c.isEnum() && !c.isRecord())
			for (Field f : mirrored(c)) {
				Map<String, Object> e = new LinkedHashMap<>();
				e.put("access", access(f.getModifiers()));
				e.put("name", f.getName());
				e.put("type", source(f.getGenericType()));
				ifields.add(e);
			}
		d.put("ifields", ifields);
		List<Object> consts = new ArrayList<>();
		if (c.isEnum())
			for (Field f : c.getDeclaredFields())
				if (f.isEnumConstant())
					consts.add(f.getName());
		d.put("constants", consts);
		List<Object> nested = new ArrayList<>();
		for (Class<?> n : c.getDeclaredClasses()) {
			int mod = n.getModifiers();
			if (Modifier.isPrivate(mod) || n.isSynthetic() || n.isAnonymousClass())
				continue;
			if (!Modifier.isStatic(mod) && !n.isInterface() && !n.isEnum() && !n.isRecord()) {
				Map<String, Object> inner = new LinkedHashMap<>();
				inner.put("name", n.getName());
				inner.put("unsupported", n.getName() + " is an inner (not static) class");
				nested.add(inner);
				continue;
			}
			nested.add(describeClass(n));
		}
		d.put("nested", nested);
		return d;
	}
}
