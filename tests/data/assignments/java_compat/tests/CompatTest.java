// Compatibility suite of split JUnit runs: the shapes real Java suites have.
import static org.junit.jupiter.api.Assertions.*;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.PrintStream;
import java.math.BigInteger;
import java.util.*;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CompatTest {
    private BankAccount account;

    @BeforeEach
    void setUp() { account = new BankAccount("ada", 100); }

    @Test @Timeout(5) void staticMethods() { assertEquals(5, Solution.add(2, 3)); assertEquals(9L, Solution.big(3L)); assertEquals(2.0, Solution.mean(new double[] {1, 2, 3}), 1e-9); }
    @Test void collections() {
        assertEquals(List.of(2, 4), Solution.evens(List.of(1, 2, 3, 4)));
        Map<String, Integer> m = Solution.wordCounts("b a b");
        assertEquals(Map.of("a", 1, "b", 2), m);
        assertEquals(List.of("a", "b"), new ArrayList<>(m.keySet()));
        assertEquals(Set.of('a', 'b', 'c'), Solution.letters("c-b-a"));
    }
    @Test void charsArraysAndVarargs() {
        assertEquals('H', Solution.firstUpper("hi"));
        assertArrayEquals(new String[] {"a", "b"}, Solution.split("a,b"));
        assertArrayEquals(new int[][] {{1, 0}, {0, 1}}, Solution.grid(2));
        assertEquals(6, Solution.sum(1, 2, 3));
        assertEquals(0, Solution.sum());
    }
    @Test void generics() { assertEquals("pear", Solution.max(List.of("apple", "pear", "fig"))); assertEquals(7, Solution.max(List.of(3, 7, 5))); }
    @Test void callbacks() {
        assertEquals(List.of("A!", "B!"), Solution.mapAll(List.of("a", "b"), s -> s.toUpperCase() + "!"));
        assertEquals(2, Solution.countIf(new int[] {1, 5, 8}, x -> x > 3));
        List<String> xs = new ArrayList<>(List.of("ccc", "a", "bb"));
        Solution.sortBy(xs, Comparator.comparing(String::length));
        assertEquals(List.of("a", "bb", "ccc"), xs);
    }
    @Test void changesInPlace() {
        int[] a = {1, 2, 3};
        Solution.reverse(a);
        assertArrayEquals(new int[] {3, 2, 1}, a);
        int[][] g = new int[2][2];
        Solution.fill(g, 7);
        assertEquals(7, g[1][1]);
        StringBuilder sb = new StringBuilder("x");
        Solution.appendTo(sb, "yz");
        assertEquals("xyz", sb.toString());
        Map<String, Integer> m = new HashMap<>();
        Solution.count(m, "k");
        assertEquals(Map.of("k", 1), m);
    }
    @Test void moreShapesOfCollections() {
        List<Integer> fixed = Arrays.asList(3, 1, 2);
        Solution.sortAll(fixed);
        assertEquals(List.of(1, 2, 3), fixed);
        assertEquals(6, Solution.drain(new ArrayDeque<>(List.of(1, 2, 3))));
        SortedSet<String> s = Solution.sorted(List.of("b", "a"));
        assertEquals("a", s.first());
        Queue<Integer> q = Solution.queueOf(4, 5);
        assertEquals(4, q.poll());
    }
    @Test void abstractClassesAndDeepEquality() {
        AbstractShape t = new Triangle(4, 3);
        assertEquals(6.0, t.area(), 1e-9);
        assertEquals("shape", t.kind());
        LinkedBag a = new LinkedBag(), b = new LinkedBag();
        a.add(1); a.add(2); b.add(1); b.add(2);
        assertEquals(a, b);
        b.add(3);
        assertNotEquals(a, b);
        assertEquals(2, a.pick());
        InvalidShapeException e = new InvalidShapeException("made by the tests", 1.5);
        assertEquals("made by the tests", e.getMessage());
    }
    @Test void optional() { assertEquals(Optional.of("beta"), Solution.find(List.of("alpha", "beta"), "b")); assertTrue(Solution.find(List.of(), "x").isEmpty()); }
    @Test void output() {
        PrintStream old = System.out;
        ByteArrayOutputStream buf = new ByteArrayOutputStream();
        System.setOut(new PrintStream(buf));
        try { Solution.greet("Ada"); } finally { System.setOut(old); }
        assertEquals("Hello, Ada!" + System.lineSeparator(), buf.toString());
    }
    @Test void stdin() {
        InputStream old = System.in;
        System.setIn(new ByteArrayInputStream("1 2 3\n4\n".getBytes()));
        try { assertEquals(10, Solution.readSum()); } finally { System.setIn(old); }
    }
    @Test void exceptions() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> Solution.divide(1, 0));
        assertEquals("b is zero", e.getMessage());
        InvalidShapeException s = assertThrows(InvalidShapeException.class, () -> new Square(-1));
        assertEquals("negative side", s.getMessage());
        assertEquals(-1.0, s.getValue());
    }
    @Test void checkedException() throws Exception {
        InsufficientFundsException e = assertThrows(InsufficientFundsException.class, () -> account.withdraw(150));
        assertEquals(50.0, e.getNeeded(), 1e-9);
        account.withdraw(30);
        assertEquals(70.0, account.getBalance(), 1e-9);
        assertThrows(RuntimeException.class, () -> account.deposit(-1));
    }
    @Test void objectsAndState() {
        account.deposit(25);
        assertEquals(125.0, account.getBalance(), 1e-9);
        assertEquals("ada", account.getOwner());
        assertTrue(BankAccount.opened() >= 1);
    }
    @Test void inheritance() {
        SavingsAccount s = new SavingsAccount("bo", 100, 0.1);
        s.addInterest();
        assertEquals(110.0, s.getBalance(), 1e-9);
        BankAccount b = s;
        assertTrue(b instanceof SavingsAccount);
    }
    @Test void interfacesAndPolymorphism() {
        List<Shape> shapes = List.of(new Square(2), new Circle(1), new Square(1));
        assertEquals(new Square(2), Solution.biggest(shapes));
        assertEquals(5 + Math.PI, Solution.totalArea(shapes), 1e-9);
        assertEquals("Square(4.0)", new Square(2).label());
        assertEquals(1.0, Shape.unit().area());
        Shape mine = () -> 10.0;
        assertSame(mine, Solution.biggest(List.of(new Square(1), mine)));
    }
    @Test void equalityAndHashing() {
        assertEquals(new Square(3), new Square(3));
        assertNotEquals(new Square(3), new Square(4));
        Set<Square> set = new HashSet<>(List.of(new Square(1), new Square(1), new Square(2)));
        assertEquals(2, set.size());
        assertEquals("Square(3.0)", new Square(3).toString());
        assertTrue(new Square(1).compareTo(new Square(2)) < 0);
        List<Square> sq = new ArrayList<>(List.of(new Square(3), new Square(1)));
        Collections.sort(sq);
        assertEquals(List.of(new Square(1), new Square(3)), sq);
    }
    @Test void enums() {
        assertEquals(Color.BROWN, Solution.mix(Color.RED, Color.GREEN));
        assertSame(Color.RED, Solution.mix(Color.RED, Color.RED));
        assertEquals("g", Color.GREEN.code());
        assertEquals(3, Color.values().length);
    }
    @Test void records() {
        assertEquals(new Point(0, 0), Solution.origin());
        Point p = Point.of(1, 2).translate(2, 3);
        assertEquals(3, p.x());
        assertEquals(5, p.y());
        assertEquals(new Point(3, 5), p);
        assertEquals("Point[x=3, y=5]", p.toString());
    }
    @Test void genericClassAndIteration() {
        Stack<String> s = new Stack<>();
        s.push("a"); s.push("b");
        assertEquals(2, s.size());
        List<String> seen = new ArrayList<>();
        for (String x : s) seen.add(x);
        assertEquals(List.of("a", "b"), seen);
        assertEquals("b", s.pop());
        assertEquals("a", s.peek());
        s.pop();
        assertThrows(EmptyStackException.class, s::pop);
        Stack.Node n = new Stack.Node(7);
        assertEquals(7, n.get());
    }
    @Test void iterators() {
        Iterator<Integer> it = Solution.countdown(3);
        List<Integer> out = new ArrayList<>();
        while (it.hasNext()) out.add(it.next());
        assertEquals(List.of(3, 2, 1), out);
    }
    @Test void bigNumbersAndConstants() {
        assertEquals(new BigInteger("2432902008176640000"), Solution.factorial(20));
        assertEquals(42, Solution.LIMIT);
        assertEquals("ArrayList", Solution.describe(new ArrayList<>(List.of(1))));
    }
}
