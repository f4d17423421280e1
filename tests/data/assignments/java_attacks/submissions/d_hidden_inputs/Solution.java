// Wrong code that records what the tests pass it and answers a visible
// test with it, so that a hidden test's input would show in a visible
// test's message ("expected: <hi> but was: <...>").  Split, visible tests
// run first: nothing hidden has been passed yet.
import java.util.ArrayList;
import java.util.List;

public class Solution {
    private static final List<String> seen = new ArrayList<>();

    public static String echo(String s) { seen.add(s); return String.join(",", seen) + ",seen"; }
    public static Point make(int x, int y) { return new Point(y, x); }
    public static int secret(int x) { seen.add("secret=" + x); return x; }
    public static int length(String s) { seen.add(s); return -1; }
}
