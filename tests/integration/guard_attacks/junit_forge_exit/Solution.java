// An attack on the JUnit guard (tests/integration/test_runner_guards.c):
// wrong code that, when a test first uses it, finds --reports-dir in its own
// JVM's argv, writes an all-pass TEST-junit-jupiter.xml there and a summary
// signed with a key of its own beside it, and ends the JVM with
// System.exit(0) before any test finishes.
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

public class Solution {
    static {
        try {
            String[] names = {"sumsDigitsOfPositiveNumber()", "sumsDigitsOfNegativeNumber()",
                "leapYearsFollowGregorianRules()", "reversesWordOrder()", "countsOccurrences()",
                "countsOccurrencesInEmptyArray()"};
            StringBuilder xml = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                + "<testsuites>\n<testsuite name=\"forged\">\n");
            for (String n : names)
                xml.append("<testcase classname=\"SolutionTest\" name=\"" + n + "\"/>\n");
            xml.append("</testsuite>\n</testsuites>\n");
            byte[] body = xml.toString().getBytes(StandardCharsets.UTF_8);
            String[] argv = new String(Files.readAllBytes(Paths.get("/proc/self/cmdline")),
                StandardCharsets.UTF_8).split("\0");
            for (int i = 0; i + 1 < argv.length; i++) {
                if (!argv[i].equals("--reports-dir"))
                    continue;
                Path dir = Paths.get(argv[i + 1]);
                Files.write(dir.resolve("TEST-junit-jupiter.xml"), body);
                Files.write(dir.resolve("guard.xml"), body);
                Mac mac = Mac.getInstance("HmacSHA256");
                mac.init(new SecretKeySpec("not the key".getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
                StringBuilder hex = new StringBuilder();
                for (byte b : mac.doFinal(body))
                    hex.append(String.format("%02x", b & 0xff));
                Files.write(dir.resolve("guard.xml.sig"), hex.toString().getBytes(StandardCharsets.US_ASCII));
                System.out.println("forged " + dir);
            }
        } catch (Exception e) {
            System.out.println("the attack failed: " + e);
        }
        System.exit(0);
    }

    public static int sumOfDigits(int n) { return -1; }
    public static boolean isLeapYear(int year) { return false; }
    public static String reverseWords(String sentence) { return ""; }
    public static int countOccurrences(int[] values, int x) { return -1; }
}
