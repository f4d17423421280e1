public interface Shape {
    double area();
    default String label() { return getClass().getSimpleName() + "(" + area() + ")"; }
    static Shape unit() { return new Square(1); }
}
