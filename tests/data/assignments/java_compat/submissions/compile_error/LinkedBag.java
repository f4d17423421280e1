import java.util.Random;

// A list of its own nodes whose equals() walks them (the nodes keep
// Object's equals), and a static field of a JDK class.
public class LinkedBag {
    static Random rng = new Random(7);
    private static class Node { final int value; Node next; Node(int v, Node n) { value = v; next = n; } }
    private Node head;
    private int size;
    public void add(int v) { head = new Node(v, head); size++; }
    public int size() { return size; }
    public int pick() { return head == null ? -1 : head.value + 0 * rng.nextInt(1); }
    @Override public boolean equals(Object o) {
        if (!(o instanceof LinkedBag)) return false;
        Node a = head, b = ((LinkedBag) o).head;
        for (; a != null && b != null; a = a.next, b = b.next) if (a.value != b.value) return false;
        return a == null && b == null;
    }
    @Override public int hashCode() { return size; }
}
