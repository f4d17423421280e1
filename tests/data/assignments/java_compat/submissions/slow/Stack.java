import java.util.ArrayList;
import java.util.EmptyStackException;
import java.util.Iterator;
import java.util.List;

public class Stack<T> implements Iterable<T> {
    private final List<T> items = new ArrayList<>();
    public void push(T x) { items.add(x); }
    public T pop() { if (items.isEmpty()) throw new EmptyStackException(); return items.remove(items.size() - 1); }
    public T peek() { return items.get(items.size() - 1); }
    public int size() { return items.size(); }
    public boolean isEmpty() { return items.isEmpty(); }
    public Iterator<T> iterator() { return items.iterator(); }
    public static class Node { public int value; public Node(int v) { value = v; } public int get() { return value; } }
}
