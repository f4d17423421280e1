public class Triangle extends AbstractShape {
    private final double base, height;
    public Triangle(double base, double height) { this.base = base; this.height = height; }
    public double area() { return base * height / 2; }
}
