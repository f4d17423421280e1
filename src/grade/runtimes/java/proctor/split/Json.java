/*
 * JSON of the split channel (docs/split-protocol.md, "Framing"): objects as
 * LinkedHashMap, arrays as ArrayList, integers as Long (the protocol's
 * numbers are integers within 2^53), strings, booleans and null.  A
 * fraction or an exponent is refused: floats cross as tagged values.
 */
package proctor.split;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Json {
	static final class Error extends RuntimeException {
		private static final long serialVersionUID = 1L;

		Error(String why) {
			super(why);
		}
	}

	private static final int DEPTH_MAX = 200;

	private final String s;
	private int i;

	private Json(String s) {
		this.s = s;
	}

	static Object parse(String text) {
		Json p = new Json(text);
		p.space();
		Object v = p.value(0);
		p.space();
		if (p.i != p.s.length())
			throw new Error("text after the value");
		return v;
	}

	private void space() {
		while (i < s.length()) {
			char c = s.charAt(i);
			if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
				break;
			i++;
		}
	}

	private char next() {
		if (i >= s.length())
			throw new Error("the text ends inside a value");
		return s.charAt(i++);
	}

	private void expect(String word) {
		if (!s.startsWith(word, i))
			throw new Error("not a value at " + i);
		i += word.length();
	}

	private Object value(int depth) {
		if (depth > DEPTH_MAX)
			throw new Error("nested too deep");
		if (i >= s.length())
			throw new Error("no value");
		char c = s.charAt(i);
		switch (c) {
		case '{': {
			i++;
			Map<String, Object> m = new LinkedHashMap<>();
			space();
			if (i < s.length() && s.charAt(i) == '}') {
				i++;
				return m;
			}
			for (;;) {
				space();
				if (next() != '"')
					throw new Error("a key is not a string");
				String k = string();
				space();
				if (next() != ':')
					throw new Error("no ':' after a key");
				space();
				m.put(k, value(depth + 1));
				space();
				char d = next();
				if (d == '}')
					return m;
				if (d != ',')
					throw new Error("no ',' between members");
			}
		}
		case '[': {
			i++;
			List<Object> l = new ArrayList<>();
			space();
			if (i < s.length() && s.charAt(i) == ']') {
				i++;
				return l;
			}
			for (;;) {
				space();
				l.add(value(depth + 1));
				space();
				char d = next();
				if (d == ']')
					return l;
				if (d != ',')
					throw new Error("no ',' between elements");
			}
		}
		case '"':
			i++;
			return string();
		case 't':
			expect("true");
			return Boolean.TRUE;
		case 'f':
			expect("false");
			return Boolean.FALSE;
		case 'n':
			expect("null");
			return null;
		default:
			return number();
		}
	}

	private Object number() {
		int start = i;
		if (i < s.length() && s.charAt(i) == '-')
			i++;
		int digits = i;
		while (i < s.length() && s.charAt(i) >= '0' && s.charAt(i) <= '9')
			i++;
		if (i == digits || i - digits > 18)
			throw new Error("not an integer the protocol allows");
		if (i < s.length() && (s.charAt(i) == '.' || s.charAt(i) == 'e' || s.charAt(i) == 'E'))
			throw new Error("a number that is not an integer");
		return Long.parseLong(s.substring(start, i));
	}

	private String string() {
		StringBuilder b = new StringBuilder();
		for (;;) {
			char c = next();
			if (c == '"')
				return b.toString();
			if (c < 0x20)
				throw new Error("a control character in a string");
			if (c != '\\') {
				b.append(c);
				continue;
			}
			char e = next();
			switch (e) {
			case '"': b.append('"'); break;
			case '\\': b.append('\\'); break;
			case '/': b.append('/'); break;
			case 'b': b.append('\b'); break;
			case 'f': b.append('\f'); break;
			case 'n': b.append('\n'); break;
			case 'r': b.append('\r'); break;
			case 't': b.append('\t'); break;
			case 'u': {
				if (i + 4 > s.length())
					throw new Error("a short \\u escape");
				int v = 0;
				for (int k = 0; k < 4; k++) {
					int d = Character.digit(s.charAt(i++), 16);
					if (d < 0)
						throw new Error("a bad \\u escape");
					v = v * 16 + d;
				}
				b.append((char) v);
				break;
			}
			default:
				throw new Error("a bad escape");
			}
		}
	}

	static String write(Object v) {
		StringBuilder b = new StringBuilder();
		write(b, v, 0);
		return b.toString();
	}

	private static void write(StringBuilder b, Object v, int depth) {
		if (depth > DEPTH_MAX)
			throw new Error("nested too deep");
		if (v == null) {
			b.append("null");
		} else if (v instanceof Boolean) {
			b.append(((Boolean) v) ? "true" : "false");
		} else if (v instanceof Long || v instanceof Integer) {
			b.append(v.toString());
		} else if (v instanceof String) {
			quote(b, (String) v);
		} else if (v instanceof Map) {
			b.append('{');
			boolean first = true;
			for (Map.Entry<?, ?> e : ((Map<?, ?>) v).entrySet()) {
				if (!first)
					b.append(',');
				first = false;
				quote(b, (String) e.getKey());
				b.append(':');
				write(b, e.getValue(), depth + 1);
			}
			b.append('}');
		} else if (v instanceof List) {
			b.append('[');
			boolean first = true;
			for (Object o : (List<?>) v) {
				if (!first)
					b.append(',');
				first = false;
				write(b, o, depth + 1);
			}
			b.append(']');
		} else {
			throw new Error("not a JSON value: " + v.getClass().getName());
		}
	}

	private static void quote(StringBuilder b, String s) {
		b.append('"');
		for (int k = 0; k < s.length(); k++) {
			char c = s.charAt(k);
			switch (c) {
			case '"': b.append("\\\""); break;
			case '\\': b.append("\\\\"); break;
			case '\n': b.append("\\n"); break;
			case '\r': b.append("\\r"); break;
			case '\t': b.append("\\t"); break;
			default:
				if (c < 0x20 || Character.isSurrogate(c))
					b.append(String.format("\\u%04x", (int) c));
				else
					b.append(c);
			}
		}
		b.append('"');
	}
}
