// Wrong code whose Point says it equals anything: in one process the
// tests' assertEquals(new Point(1, 2), wrong) passes; split, the harness
// compares two Points by their fields.
public class Point {
    private final int x, y;
    public Point(int x, int y) { this.x = x; this.y = y; }
    @Override public boolean equals(Object o) { return true; }
    @Override public int hashCode() { return 0; }
}
