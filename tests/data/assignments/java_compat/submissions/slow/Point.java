public record Point(int x, int y) {
    public Point translate(int dx, int dy) { return new Point(x + dx, y + dy); }
    public static Point of(int x, int y) { return new Point(x, y); }
}
