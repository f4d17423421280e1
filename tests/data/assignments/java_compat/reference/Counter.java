public class Counter {
    public int count;
    public int[] history = new int[3];
    public void inc() { history[count % 3] = count; count++; }
}
