/*
 * What a call did to its arguments in place, done to the tests' own
 * objects (docs/split-protocol.md, "Java": "back"): an array's elements
 * (nested arrays element by element while their lengths agree), a
 * collection's or a map's contents, a StringBuilder's text.  An object
 * that refuses the change (List.of) is left as it was, as the callee's
 * change would have been refused in one process too.
 */
package proctor.split;

import java.lang.reflect.Array;
import java.util.Collection;
import java.util.Map;

final class Mutables {
	private Mutables() {
	}

	@SuppressWarnings({"unchecked", "rawtypes"})
	static void copyInto(Object into, Object from) {
		if (into == null || from == null || into == from)
			return;
		if (into.getClass().isArray() && from.getClass().isArray()) {
			int n = Math.min(Array.getLength(into), Array.getLength(from));
			for (int k = 0; k < n; k++) {
				Object a = Array.get(into, k), b = Array.get(from, k);
				if (a != null && b != null && a.getClass().isArray() && b.getClass().isArray()
				    && Array.getLength(a) == Array.getLength(b))
					copyInto(a, b);
				else
					try {
						Array.set(into, k, b);
					} catch (IllegalArgumentException e) {
						// an element of a type the tests' array cannot hold
					}
			}
			return;
		}
		try {
			if (into instanceof java.util.List && from instanceof java.util.List
			    && ((java.util.List) into).size() == ((java.util.List) from).size()) {
				// Element by element: a fixed-size list (Arrays.asList) takes it.
				java.util.List l = (java.util.List) into, r = (java.util.List) from;
				for (int k = 0; k < l.size(); k++)
					if (l.get(k) != r.get(k))
						l.set(k, r.get(k));
			} else if (into instanceof Collection && from instanceof Collection) {
				if (!into.equals(from)) {
					((Collection) into).clear();
					((Collection) into).addAll((Collection) from);
				}
			} else if (into instanceof Map && from instanceof Map) {
				if (!into.equals(from)) {
					((Map) into).clear();
					((Map) into).putAll((Map) from);
				}
			} else if (into instanceof StringBuilder) {
				((StringBuilder) into).setLength(0);
				((StringBuilder) into).append(from);
			}
		} catch (UnsupportedOperationException e) {
			// an unmodifiable collection: unchanged, as it would have been
		}
	}
}
