public class BankAccount {
    private double balance;
    private final String owner;
    private static int opened = 0;
    public BankAccount(String owner) { this(owner, 0); }
    public BankAccount(String owner, double initial) { this.owner = owner; this.balance = initial; opened++; }
    public void deposit(double amount) { if (amount <= 0) throw new IllegalArgumentException("amount must be positive"); balance += amount; }
    public void withdraw(double amount) throws InsufficientFundsException { if (amount > balance) throw new InsufficientFundsException(amount - balance); balance -= amount; }
    public double getBalance() { return balance; }
    public String getOwner() { return owner; }
    public static int opened() { return opened; }
}
