/*
 * Java source of the stand-ins (docs/split-protocol.md, "Java"): for each
 * class the program side described (Signatures.java), a class of the same
 * name, kind, type parameters and members whose bodies call ProctorSplit.
 * The text comes from the submission's class files (names and types,
 * validated here as Java identifiers and type text), never its code.
 */
package proctor.split;

import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

final class StandIns {
	private static final String API = "proctor.split.ProctorSplit";
	/* Type text as Signatures.source() writes it: names, dots, generics, arrays, wildcards. */
	private static final Pattern TYPE = Pattern.compile("[\\p{L}\\p{N}_$.<>\\[\\]?, &]*");
	private static final Pattern NAME = Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*");
	/* An erased type, as a class literal's: a name and brackets. */
	static final Pattern ERASURE = Pattern.compile("[\\p{L}_$][\\p{L}\\p{N}_$]*(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*(\\[\\])*");
	private static final Pattern PACKAGE = Pattern.compile("([\\p{L}_$][\\p{L}\\p{N}_$]*)(\\.[\\p{L}_$][\\p{L}\\p{N}_$]*)*");

	/* Why the described classes cannot be stood in for, or null. */
	static String unsupported(List<?> classes) {
		for (Object o : classes) {
			Map<?, ?> d = (Map<?, ?>) o;
			if (d.get("unsupported") instanceof String)
				return (String) d.get("unsupported");
			String n = unsupported(list(d.get("nested")));
			if (n != null)
				return n;
		}
		return null;
	}

	static List<?> list(Object o) {
		return o instanceof List ? (List<?>) o : List.of();
	}

	static String str(Object o) {
		return o instanceof String ? (String) o : "";
	}

	private static String type(Object o) {
		String s = str(o);
		if (s.isEmpty() || !TYPE.matcher(s).matches())
			throw new Channel.Broken("a type that is not Java: " + s);
		return s;
	}

	private static String erasure(Object o) {
		String s = str(o);
		if (!ERASURE.matcher(s).matches())
			throw new Channel.Broken("an erased type that is not Java: " + s);
		return s;
	}

	private static String name(Object o) {
		String s = str(o);
		if (!NAME.matcher(s).matches())
			throw new Channel.Broken("a name that is not Java: " + s);
		return s;
	}

	private static String access(Object o) {
		String s = str(o);
		if (!s.equals("public") && !s.equals("protected") && !s.isEmpty())
			throw new Channel.Broken("an access that is not Java: " + s);
		return s.isEmpty() ? "" : s + " ";
	}

	private static String typeParams(Object o) {
		List<?> l = list(o);
		if (l.isEmpty())
			return "";
		StringBuilder b = new StringBuilder("<");
		for (int k = 0; k < l.size(); k++)
			b.append(k > 0 ? ", " : "").append(type(l.get(k)));
		return b.append("> ").toString();
	}

	/* The package of a class, "" for the unnamed one. */
	static String packageOf(Map<?, ?> d) {
		String p = str(d.get("package"));
		if (!p.isEmpty() && !PACKAGE.matcher(p).matches())
			throw new Channel.Broken("a package that is not Java: " + p);
		return p;
	}

	/* The source file of one top-level class. */
	static String file(Map<?, ?> d) {
		StringBuilder b = new StringBuilder();
		String p = packageOf(d);
		if (!p.isEmpty())
			b.append("package ").append(p).append(";\n\n");
		b.append("// A stand-in of Proctor's split runtime for the submission's class ").append(name(d.get("simple")))
		    .append(": its methods run in the submission's process.\n");
		cls(b, d, false, "");
		return b.toString();
	}

	private static String primitiveBox(String t) {
		switch (t) {
		case "int": return "java.lang.Integer";
		case "long": return "java.lang.Long";
		case "double": return "java.lang.Double";
		case "float": return "java.lang.Float";
		case "short": return "java.lang.Short";
		case "byte": return "java.lang.Byte";
		case "char": return "java.lang.Character";
		case "boolean": return "java.lang.Boolean";
		default: return null;
		}
	}

	/* `expr` (an Object) as a value of type t. */
	private static String cast(String t, String expr) {
		String box = primitiveBox(t);
		if (box != null)
			return "((" + box + ") " + expr + ")." + t + "Value()";
		return "(" + t + ") " + expr;
	}

	private static void cls(StringBuilder b, Map<?, ?> d, boolean nested, String ind) {
		String kind = str(d.get("kind"));
		String simple = name(d.get("simple"));
		String self = simple; // class literals: Outer.Inner.class works from inside Outer too
		boolean iface = kind.equals("interface");
		boolean enm = kind.equals("enum");
		String superKind = str(d.get("superKind"));
		boolean abs = Boolean.TRUE.equals(d.get("abstract")) && !iface && !enm;
		b.append(ind).append("@java.lang.SuppressWarnings({\"unchecked\", \"rawtypes\", \"all\"})\n");
		b.append(ind).append(access(d.get("access"))).append(nested && !iface && !enm ? "static " : "")
		    .append(abs ? "abstract " : "")
		    .append(iface ? "interface " : enm ? "enum " : "class ").append(simple);
		String tp = typeParams(d.get("typeParams"));
		if (!tp.isEmpty())
			b.append(tp.substring(0, tp.length() - 1));
		if (!iface && !enm && !superKind.equals("object"))
			b.append(" extends ").append(type(d.get("super")));
		List<?> ifs = list(d.get("interfaces"));
		boolean root = !iface && !enm && !superKind.equals("own");
		if (!ifs.isEmpty() || root) {
			b.append(iface ? " extends " : " implements ");
			int k = 0;
			for (Object i : ifs)
				b.append(k++ > 0 ? ", " : "").append(type(i));
			if (root)
				b.append(k > 0 ? ", " : "").append(API).append(".Remote");
		}
		b.append(" {\n");
		String in = ind + "\t";
		if (enm) {
			List<?> consts = list(d.get("constants"));
			for (int k = 0; k < consts.size(); k++)
				b.append(in).append(k > 0 ? ", " : "").append(name(consts.get(k))).append("\n");
			b.append(in).append(";\n");
		}
		if (!iface && !enm) {
			if (root) {
				b.append(in).append("private final ").append(API).append(".Ref $proctorRef;\n");
				b.append(in).append("public ").append(simple).append("(").append(API).append(".Ref $r) {\n");
				b.append(in).append("\t").append(superKind.equals("throwable") ? "super($r.message());\n" : "");
				b.append(in).append("\tthis.$proctorRef = $r;\n");
				b.append(in).append("\t").append(API).append(".bind(this);\n");
				b.append(in).append("}\n");
				b.append(in).append("public final ").append(API).append(".Ref $proctorRef() {\n");
				b.append(in).append("\treturn $proctorRef;\n").append(in).append("}\n");
				if (!superKind.equals("throwable")) {
					b.append(in).append("@java.lang.Override public boolean equals(java.lang.Object o) {\n").append(in).append("\treturn ")
					    .append(API).append(".equal(this, o);\n").append(in).append("}\n");
					b.append(in).append("@java.lang.Override public int hashCode() {\n").append(in).append("\treturn ")
					    .append(API).append(".hash(this);\n").append(in).append("}\n");
					b.append(in).append("@java.lang.Override public java.lang.String toString() {\n").append(in).append("\treturn ")
					    .append(API).append(".str(this);\n").append(in).append("}\n");
				}
			} else {
				b.append(in).append("public ").append(simple).append("(").append(API).append(".Ref $r) {\n");
				b.append(in).append("\tsuper($r);\n").append(in).append("}\n");
			}
			for (Object c : list(d.get("ctors"))) {
				Map<?, ?> m = (Map<?, ?>) c;
				b.append(in).append(access(m.get("access"))).append(typeParams(m.get("typeParams"))).append(simple);
				signature(b, m);
				b.append(in).append("\tthis(").append(API).append(".construct(").append(self).append(".class, ");
				classes(b, m);
				b.append(", ");
				argsArray(b, m);
				b.append("));\n").append(in).append("}\n");
			}
		}
		if (!iface && !enm)
			for (Object f : list(d.get("ifields"))) {
				Map<?, ?> m = (Map<?, ?>) f;
				String fname = name(m.get("name"));
				if (fname.startsWith("$proctor"))
					throw new Channel.Broken("a field of Proctor's name: " + fname);
				b.append(in).append(access(m.get("access"))).append(type(m.get("type"))).append(" ").append(fname)
				    .append(";\n");
			}
		for (Object f : list(d.get("fields"))) {
			Map<?, ?> m = (Map<?, ?>) f;
			String t = type(m.get("type"));
			b.append(in).append(iface ? "" : access(m.get("access")) + "static ")
			    .append(Boolean.TRUE.equals(m.get("final")) || iface ? "final " : "").append(t).append(" ")
			    .append(name(m.get("name"))).append(" = ")
			    .append(cast(t, API + ".getStatic(" + self + ".class, \"" + name(m.get("name")) + "\")")).append(";\n");
		}
		for (Object o : list(d.get("methods"))) {
			Map<?, ?> m = (Map<?, ?>) o;
			boolean isStatic = Boolean.TRUE.equals(m.get("static"));
			boolean isDefault = Boolean.TRUE.equals(m.get("default"));
			String ret = type(m.get("returns"));
			String mname = name(m.get("name"));
			if (iface && !isStatic && !isDefault) {
				b.append(in).append(typeParams(m.get("typeParams"))).append(ret).append(" ").append(mname);
				params(b, m);
				throwsClause(b, m);
				b.append(";\n");
				continue;
			}
			b.append(in).append(iface ? (isStatic ? "static " : "default ") : access(m.get("access")) + (isStatic ? "static " : ""))
			    .append(typeParams(m.get("typeParams"))).append(ret).append(" ").append(mname);
			signature(b, m);
			String call = API + ".invoke(" + self + ".class, \"" + mname + "\", " + classesText(m) + ", "
			    + (isStatic ? "null" : "this") + ", " + argsText(m) + ")";
			if (ret.equals("void"))
				b.append(in).append("\t").append(call).append(";\n");
			else
				b.append(in).append("\treturn ").append(cast(ret, call)).append(";\n");
			b.append(in).append("}\n");
		}
		for (Object n : list(d.get("nested")))
			cls(b, (Map<?, ?>) n, true, in);
		b.append(ind).append("}\n");
	}

	private static void params(StringBuilder b, Map<?, ?> m) {
		List<?> ps = list(m.get("params"));
		boolean varargs = Boolean.TRUE.equals(m.get("varargs"));
		b.append("(");
		for (int k = 0; k < ps.size(); k++) {
			String t = type(list(ps.get(k)).get(0));
			if (varargs && k == ps.size() - 1 && t.endsWith("[]"))
				t = t.substring(0, t.length() - 2) + "...";
			b.append(k > 0 ? ", " : "").append(t).append(" a").append(k);
		}
		b.append(")");
	}

	private static void throwsClause(StringBuilder b, Map<?, ?> m) {
		List<?> t = list(m.get("throws"));
		for (int k = 0; k < t.size(); k++)
			b.append(k == 0 ? " throws " : ", ").append(type(t.get(k)));
	}

	private static void signature(StringBuilder b, Map<?, ?> m) {
		params(b, m);
		throwsClause(b, m);
		b.append(" {\n");
	}

	private static String classesText(Map<?, ?> m) {
		StringBuilder b = new StringBuilder();
		classes(b, m);
		return b.toString();
	}

	private static void classes(StringBuilder b, Map<?, ?> m) {
		List<?> ps = list(m.get("params"));
		b.append("new java.lang.Class<?>[] {");
		for (int k = 0; k < ps.size(); k++)
			b.append(k > 0 ? ", " : "").append(erasure(list(ps.get(k)).get(1))).append(".class");
		b.append("}");
	}

	private static String argsText(Map<?, ?> m) {
		StringBuilder b = new StringBuilder();
		argsArray(b, m);
		return b.toString();
	}

	private static void argsArray(StringBuilder b, Map<?, ?> m) {
		int n = list(m.get("params")).size();
		b.append("new java.lang.Object[] {");
		for (int k = 0; k < n; k++)
			b.append(k > 0 ? ", " : "").append("a").append(k);
		b.append("}");
	}
}
