// Lab 5 -- a student's solution (does not compile: a missing semicolon).
public class Solution {
    public static int sumOfDigits(int n) {
        n = Math.abs(n);
        int sum = 0;
        while (n > 0) {
            sum += n % 10;
            n /= 10;
        }
        return sum;
    }

    public static boolean isLeapYear(int year) {
        return (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    }

    public static String reverseWords(String sentence) {
        String[] words = sentence.split(" ");
        String result = "";
        for (int i = words.length - 1; i >= 0; i--) {
            result += words[i];
            if (i > 0) {
                result += " "
            }
        }
        return result;
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
