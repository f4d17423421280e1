public class InsufficientFundsException extends Exception {
    private final double needed;
    public InsufficientFundsException(double needed) { super("needs " + needed + " more"); this.needed = needed; }
    public double getNeeded() { return needed; }
}
