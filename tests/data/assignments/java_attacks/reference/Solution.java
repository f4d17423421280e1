// Reference solution of the java_attacks suite.
public class Solution {
    public static String echo(String s) { return s; }
    public static Point make(int x, int y) { return new Point(x, y); }
    public static int secret(int x) { return 6 * x; }
    public static int length(String s) { return s.length(); }
}
