// An abstract class that leaves an interface method to its subclasses.
public abstract class AbstractShape implements Shape {
    public String kind() { return "shape"; }
}
