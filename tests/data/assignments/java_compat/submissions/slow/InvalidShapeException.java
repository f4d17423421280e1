public class InvalidShapeException extends RuntimeException {
    private final double value;
    public InvalidShapeException(String message, double value) { super(message); this.value = value; }
    public double getValue() { return value; }
}
