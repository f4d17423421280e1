/*
 * One end of the split channel (docs/split-protocol.md): framing (a 4-byte
 * big-endian length, then UTF-8 JSON), numbered requests, answers, and the
 * re-entrant wait: while a side waits for its answer it serves the other
 * side's requests.  Blocking I/O on fd 0, where the runtime's launcher puts
 * the channel, through plain file streams: an interrupt of the calling
 * thread (JUnit's @Timeout) neither closes the channel nor ends a call, as
 * it would on an interruptible SocketChannel.  One thread at a time holds
 * the channel (a re-entrant lock: a callback served while waiting is the
 * same thread's).
 */
package proctor.split;

import java.io.FileDescriptor;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.locks.ReentrantLock;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

final class Channel {
	/* The channel ended or broke: the run cannot go on. */
	static final class Closed extends RuntimeException {
		private static final long serialVersionUID = 1L;

		Closed(String why) {
			super(why);
		}
	}

	/* The other side broke the protocol. */
	static final class Broken extends RuntimeException {
		private static final long serialVersionUID = 1L;

		Broken(String why) {
			super(why);
		}
	}

	/* An answer carrying an exception of the other side's. */
	static final class Raised extends RuntimeException {
		private static final long serialVersionUID = 1L;
		final Map<String, Object> exc;

		Raised(Map<String, Object> exc) {
			super("an exception of the other side's", null, false, false);
			this.exc = exc;
		}
	}

	/* A value served with what became of the request's mutable arguments
	 * ("back": [[index, value]...], Java's arrays and collections). */
	static final class WithBack {
		final Object value;
		final List<Object> back;

		WithBack(Object value, List<Object> back) {
			this.value = value;
			this.back = back;
		}
	}

	interface Server {
		/* Answer one request of the other side's: the value, or throw. */
		Object serve(Map<String, Object> request) throws Throwable;

		/* An exception of this side's as the protocol's EXCEPTION. */
		Map<String, Object> describe(Throwable t);

		/* What this side printed since its last message, for "out"/"err". */
		default void drainOutput(Map<String, Object> msg) {
		}

		/* "out"/"err" of the other side's message. */
		default void takeOutput(Map<String, Object> msg) {
		}
	}

	static final int MAX_BYTES = maxBytes();
	private static final boolean DEBUG = System.getenv("PROCTOR_SPLIT_DEBUG") != null;

	private final InputStream in;
	private final OutputStream out;
	private final Server server;
	private final ReentrantLock lock = new ReentrantLock();
	private long seq;
	/* The last answer received (read right after request() returns). */
	Map<String, Object> lastAnswer;

	/* The channel on fd 0 (check first that it is a socket:
	 * System.inheritedChannel()). */
	Channel(Server server) {
		this.in = new FileInputStream(FileDescriptor.in);
		this.out = new FileOutputStream(FileDescriptor.in);
		this.server = server;
	}

	private static int maxBytes() {
		String v = System.getenv("PROCTOR_SPLIT_MAX_BYTES");
		try {
			int n = v == null ? 0 : Integer.parseInt(v);
			return n > 0 ? n : 16 << 20;
		} catch (NumberFormatException e) {
			return 16 << 20;
		}
	}

	void send(Map<String, Object> msg) {
		String text = Json.write(msg);
		if (DEBUG)
			debug("send " + text);
		byte[] body = text.getBytes(StandardCharsets.UTF_8);
		if (body.length > MAX_BYTES)
			throw new IllegalArgumentException("a value of " + body.length
			    + " bytes is more than the " + MAX_BYTES + " a call may carry");
		ByteBuffer b = ByteBuffer.allocate(4 + body.length);
		b.putInt(body.length).put(body);
		lock.lock();
		try {
			out.write(b.array());
			out.flush();
		} catch (IOException e) {
			throw new Closed(String.valueOf(e.getMessage()));
		} finally {
			lock.unlock();
		}
	}

	private void readFully(ByteBuffer b) {
		byte[] a = b.array();
		try {
			for (int off = 0; off < a.length;) {
				int k = in.read(a, off, a.length - off);
				if (k < 0)
					throw new Closed("end of file");
				off += k;
			}
		} catch (IOException e) {
			throw new Closed(String.valueOf(e.getMessage()));
		}
	}

	@SuppressWarnings("unchecked")
	Map<String, Object> recv() {
		ByteBuffer head = ByteBuffer.allocate(4);
		readFully(head);
		int n = head.getInt(0);
		if (n < 0 || n > MAX_BYTES)
			throw new Broken("a message of " + n + " bytes is more than the " + MAX_BYTES + " allowed");
		ByteBuffer body = ByteBuffer.allocate(n);
		readFully(body);
		Object v;
		try {
			v = Json.parse(new String(body.array(), StandardCharsets.UTF_8));
		} catch (Json.Error e) {
			throw new Broken("not a message (" + e.getMessage() + ")");
		}
		if (!(v instanceof Map))
			throw new Broken("not a message");
		if (DEBUG)
			debug("recv " + Json.write(v));
		return (Map<String, Object>) v;
	}

	/* Ask the other side; serve its requests meanwhile.  The answer's value,
	 * or Raised with its exception. */
	Object request(String op, Map<String, Object> fields) {
		lock.lock();
		try {
			return requestLocked(op, fields);
		} finally {
			lock.unlock();
		}
	}

	private Object requestLocked(String op, Map<String, Object> fields) {
		long n = ++seq;
		Map<String, Object> m = new LinkedHashMap<>();
		m.put("op", op);
		m.put("n", n);
		m.putAll(fields);
		server.drainOutput(m);
		send(m);
		for (;;) {
			Map<String, Object> in = recv();
			server.takeOutput(in);
			if (in.containsKey("re")) {
				Object re = in.get("re");
				if (!(re instanceof Long) || (Long) re != n)
					throw new Broken("an answer out of order");
				lastAnswer = in;
				if (in.containsKey("exc")) {
					Object exc = in.get("exc");
					if (!(exc instanceof Map))
						throw new Broken("an exception that is not an object");
					@SuppressWarnings("unchecked")
					Map<String, Object> em = (Map<String, Object>) exc;
					throw new Raised(em);
				}
				return in.get("ok");
			}
			serveOne(in);
		}
	}

	/* Wait for the other side's next request and serve it (the program
	 * side's loop), holding the channel. */
	void serveNext() {
		lock.lock();
		try {
			serveOne(recv());
		} finally {
			lock.unlock();
		}
	}

	/* Serve one request of the other side's and send its answer. */
	void serveOne(Map<String, Object> req) {
		Object n = req.get("n");
		if (!(req.get("op") instanceof String) || !(n instanceof Long))
			throw new Broken("a request without op or n");
		Map<String, Object> a = new LinkedHashMap<>();
		a.put("re", n);
		try {
			Object v = server.serve(req);
			if (v instanceof WithBack) {
				a.put("ok", ((WithBack) v).value);
				if (!((WithBack) v).back.isEmpty())
					a.put("back", ((WithBack) v).back);
			} else {
				a.put("ok", v);
			}
		} catch (Closed | Broken e) {
			throw e;
		} catch (Throwable t) {
			a.remove("ok");
			a.put("exc", server.describe(t));
		}
		server.drainOutput(a);
		send(a);
	}

	private static void debug(String s) {
		System.err.println("[" + ProcessHandle.current().pid() + "] " + (s.length() > 400 ? s.substring(0, 400) : s));
	}

	static Map<String, Object> fields(Object... kv) {
		Map<String, Object> m = new LinkedHashMap<>();
		for (int k = 0; k + 1 < kv.length; k += 2)
			m.put((String) kv[k], kv[k + 1]);
		return m;
	}

	static List<Object> list(Object... v) {
		return new java.util.ArrayList<>(java.util.Arrays.asList(v));
	}
}
