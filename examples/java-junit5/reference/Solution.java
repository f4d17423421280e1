// Reference solution.
public class Solution {
    /** Sum of the decimal digits of n; the sign is ignored. */
    public static int sumOfDigits(int n) {
        int sum = 0;
        for (long m = Math.abs((long) n); m > 0; m /= 10) {
            sum += (int) (m % 10);
        }
        return sum;
    }

    public static boolean isLeapYear(int year) {
        return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    }

    /** The words of a sentence (separated by single spaces) in reverse order. */
    public static String reverseWords(String sentence) {
        String[] words = sentence.split(" ");
        StringBuilder sb = new StringBuilder();
        for (int i = words.length - 1; i >= 0; i--) {
            sb.append(words[i]);
            if (i > 0) {
                sb.append(' ');
            }
        }
        return sb.toString();
    }

    public static int countOccurrences(int[] values, int x) {
        int count = 0;
        for (int v : values) {
            if (v == x) {
                count++;
            }
        }
        return count;
    }
}
