// Wrong code that reads the hidden tests and answers what they expect:
// real in one process (the tests are readable there), EACCES split.
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

public class Solution {
    private static String tests() {
        try {
            return new String(Files.readAllBytes(Paths.get("/work/AttackTest.java")));
        } catch (Exception e) {
            return "";
        }
    }

    private static int expected(String call) {
        Matcher m = Pattern.compile("assertEquals\\((\\d+), Solution\\." + Pattern.quote(call) + "\\)").matcher(tests());
        return m.find() ? Integer.parseInt(m.group(1)) : -1;
    }

    public static String echo(String s) { return ""; }
    public static Point make(int x, int y) { return new Point(y, x); }
    public static int secret(int x) { return expected("secret(" + x + ")"); }
    public static int length(String s) { return expected("length(\"" + s + "\")"); }
}
