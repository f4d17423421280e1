// Wrong code, no attack: every test fails.
public class Solution {
    public static String echo(String s) { return ""; }
    public static Point make(int x, int y) { return new Point(y, x); }
    public static int secret(int x) { return x; }
    public static int length(String s) { return -1; }
}
