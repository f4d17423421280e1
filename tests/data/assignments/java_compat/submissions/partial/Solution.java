import java.util.*;
import java.util.function.*;

public class Solution {
    public static int add(int a, int b) { return a - b; }
    static long big(long x) { return x * 3; }
    public static double mean(double[] xs) { double s = 0; for (double x : xs) s += x; return s / xs.length; }
    public static List<Integer> evens(List<Integer> xs) { List<Integer> out = new ArrayList<>(); for (int x : xs) if (x % 2 == 0) out.add(x); return out; }
    public static Map<String, Integer> wordCounts(String text) { Map<String, Integer> m = new TreeMap<>(); for (String w : text.split("\\s+")) if (!w.isEmpty()) m.merge(w, 1, Integer::sum); return m; }
    public static Set<Character> letters(String s) { Set<Character> out = new TreeSet<>(); for (char c : s.toCharArray()) if (Character.isLetter(c)) out.add(c); return out; }
    public static char firstUpper(String s) { return Character.toUpperCase(s.charAt(0)); }
    public static String[] split(String s) { return s.split(","); }
    public static int[][] grid(int n) { int[][] g = new int[n][n]; for (int i = 0; i < n; i++) g[i][i] = 1; return g; }
    public static <T extends Comparable<T>> T max(List<T> xs) { T best = xs.get(0); for (T x : xs) if (x.compareTo(best) > 0) best = x; return best; }
    public static int sum(int... xs) { int s = 0; for (int x : xs) s += x; return s; }
    public static List<String> mapAll(List<String> xs, Function<String, String> f) { List<String> out = new ArrayList<>(); for (String x : xs) out.add(f.apply(x)); return out; }
    public static int countIf(int[] xs, IntPredicate p) { int n = 0; for (int x : xs) if (p.test(x)) n++; return n; }
    public static void sortBy(List<String> xs, Comparator<String> c) { xs.sort(c); }
    public static Optional<String> find(List<String> xs, String prefix) { return xs.stream().filter(x -> x.startsWith(prefix)).findFirst(); }
    public static void greet(String name) { System.out.println("Hello, " + name + "!"); }
    public static int readSum() { Scanner sc = new Scanner(System.in); int s = 0; while (sc.hasNextInt()) s += sc.nextInt(); return s; }
    public static int divide(int a, int b) { if (b == 0) throw new IllegalArgumentException("b is zero"); return a / b; }
    public static Iterator<Integer> countdown(int n) { return new Iterator<Integer>() { int i = n; public boolean hasNext() { return i > 0; } public Integer next() { return i--; } }; }
    public static Shape biggest(List<Shape> shapes) { Shape best = null; for (Shape s : shapes) if (best == null || s.area() > best.area()) best = s; return best; }
    public static double totalArea(List<? extends Shape> shapes) { double t = 0; for (Shape s : shapes) t += s.area(); return t; }
    public static Color mix(Color a, Color b) { return a == b ? a : Color.BROWN; }
    public static Point origin() { return new Point(0, 0); }
    public static java.math.BigInteger factorial(int n) { java.math.BigInteger r = java.math.BigInteger.ONE; for (int i = 2; i < n; i++) r = r.multiply(java.math.BigInteger.valueOf(i)); return r; }
    public static final int LIMIT = 42;
    public static void sortAll(List<Integer> xs) { Collections.sort(xs); }
    public static int drain(Deque<Integer> d) { int s = 0; while (!d.isEmpty()) s += d.pop(); return s; }
    public static SortedSet<String> sorted(List<String> xs) { return new TreeSet<>(xs); }
    public static Queue<Integer> queueOf(int... xs) { Queue<Integer> q = new ArrayDeque<>(); for (int x : xs) q.add(x); return q; }
    public static void reverse(int[] a) { for (int i = 0, j = a.length - 1; i < j; i++, j--) { int t = a[i]; a[i] = a[j]; a[j] = t; } }
    public static void fill(int[][] g, int v) { for (int[] row : g) Arrays.fill(row, v); }
    public static void appendTo(StringBuilder sb, String s) { sb.append(s); }
    public static void count(Map<String, Integer> m, String k) { m.merge(k, 1, Integer::sum); }
    public static String describe(Object o) { return o == null ? "null" : o.getClass().getSimpleName(); }
}
