public class Square implements Shape, Comparable<Square> {
    private final double side;
    public Square(double side) { if (side < 0) throw new InvalidShapeException("negative side", side); this.side = side; }
    public double area() { return side * side; }
    public double getSide() { return side; }
    public int compareTo(Square o) { return Double.compare(side, o.side); }
    @Override public boolean equals(Object o) { return o instanceof Square && ((Square) o).side == side; }
    @Override public int hashCode() { return Double.hashCode(side); }
    @Override public String toString() { return "Square(" + side + ")"; }
}
