public class SavingsAccount extends BankAccount {
    private final double rate;
    public SavingsAccount(String owner, double initial, double rate) { super(owner, initial); this.rate = rate; }
    public void addInterest() { deposit(getBalance() * rate); }
    @Override public void deposit(double amount) { super.deposit(amount); }
}
