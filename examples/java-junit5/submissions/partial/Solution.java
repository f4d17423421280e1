// Lab 5 -- a student's solution (partial: negative numbers give 0, and
// every year divisible by 4 counts as a leap year).
public class Solution {
    public static int sumOfDigits(int n) {
        int sum = 0;
        while (n > 0) {
            sum += n % 10;
            n /= 10;
        }
        return sum;
    }

    public static boolean isLeapYear(int year) {
        return year % 4 == 0;
    }

    public static String reverseWords(String sentence) {
        String[] words = sentence.split(" ");
        String result = words[words.length - 1];
        for (int i = words.length - 2; i >= 0; i--) {
            result += " " + words[i];
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
