// Wrong code that ends its JVM when a test first uses it, before any
// report exists: crashed in both modes.
public class Solution {
    static {
        System.exit(0);
    }

    public static String echo(String s) { return ""; }
    public static Point make(int x, int y) { return new Point(y, x); }
    public static int secret(int x) { return x; }
    public static int length(String s) { return -1; }
}
