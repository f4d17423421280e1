/*
 * Proctor's split runtime for JUnit (docs/split-protocol.md, "Java";
 * docs/grading.md, "Java: JUnit, split"):
 *
 *   harness   java [OPTIONS] -cp RUNTIME:LAUNCHER proctor.split.ProctorSplit harness LAUNCHER-ARGS...
 *   program   java [OPTIONS] -cp RUNTIME:CLASSES proctor.split.ProctorSplit program
 *
 * Both are started by `sh -c` with the channel moved to fd 0 (Java reaches
 * an inherited socket only there: System.inheritedChannel()); the harness's
 * own standard input is then on fd 3.  The program side loads the
 * submission's classes and serves calls; the harness asks it for the
 * signatures of those classes, writes stand-in classes with the same names
 * and signatures whose methods cross the channel, compiles the hidden tests
 * against them with the JDK's compiler, in its own process, and runs the
 * JUnit console launcher there.  No class the program wrote is loaded in
 * the harness's JVM.
 *
 * This class is also the API the generated stand-ins call (public, static).
 */
package proctor.split;

public final class ProctorSplit {
	/* The harness ends with these when the run cannot go on (grade.c reads them). */
	static final int ABORT_STATUS = 70;
	static final int NOT_STARTED_STATUS = 71;
	/* The hidden tests do not compile against the submission's classes. */
	static final int TESTS_DO_NOT_COMPILE_STATUS = 72;
	/* The stand-ins do not compile: Proctor's failure. */
	static final int STAND_INS_DO_NOT_COMPILE_STATUS = 73;

	private ProctorSplit() {
	}

	/** A stand-in's reference to its object in the program side. */
	public static final class Ref {
		final long id;
		final String message;

		Ref(long id, String message) {
			this.id = id;
			this.message = message;
		}

		/** The message of an exception of the submission's, for its stand-in. */
		public String message() {
			return message;
		}
	}

	/** Implemented by every stand-in of a class (not of an interface or an enum). */
	public interface Remote {
		Ref $proctorRef();
	}

	/** A call of a stand-in's method: `self` null for a static one. */
	public static Object invoke(Class<?> owner, String name, Class<?>[] params, Object self, Object[] args) {
		return Harness.get().invoke(owner, name, params, self, args);
	}

	/** A stand-in's constructor: the new object's reference. */
	public static Ref construct(Class<?> owner, Class<?>[] params, Object[] args) {
		return Harness.get().construct(owner, params, args);
	}

	/** A static field of the submission's class, read once. */
	public static Object getStatic(Class<?> owner, String name) {
		return Harness.get().getStatic(owner, name);
	}

	/** equals() of a stand-in: by the objects' fields, never the submission's equals(). */
	public static boolean equal(Remote self, Object other) {
		return Harness.get().equal(self, other);
	}

	/** hashCode() of a stand-in, consistent with equal(). */
	public static int hash(Remote self) {
		return Harness.get().hash(self);
	}

	/** toString() of a stand-in: the submission's. */
	public static String str(Remote self) {
		return Harness.get().str(self);
	}

	/** A stand-in's constructor registers it: one stand-in per object. */
	public static void bind(Remote self) {
		Harness.get().bind(self);
	}

	/* Throw any exception, checked or not, from a method that declares none. */
	@SuppressWarnings("unchecked")
	static <E extends Throwable> RuntimeException sneaky(Throwable t) throws E {
		throw (E) t;
	}

	public static void main(String[] args) {
		if (args.length >= 1 && args[0].equals("program")) {
			Program.main();
			return;
		}
		if (args.length >= 1 && args[0].equals("harness")) {
			String[] rest = new String[args.length - 1];
			System.arraycopy(args, 1, rest, 0, rest.length);
			Harness.main(rest);
			return;
		}
		System.err.println("usage: java proctor.split.ProctorSplit harness LAUNCHER-ARGS... | program");
		System.exit(2);
	}
}
