// Lab 5 -- a student's solution (correct).
public class Solution {
    public static int sumOfDigits(int n) {
        if (n < 0) {
            n = -n;
        }
        int sum = 0;
        while (n > 0) {
            sum = sum + n % 10;
            n = n / 10;
        }
        return sum;
    }

    public static boolean isLeapYear(int year) {
        if (year % 400 == 0) {
            return true;
        }
        if (year % 100 == 0) {
            return false;
        }
        return year % 4 == 0;
    }

    public static String reverseWords(String sentence) {
        String[] words = sentence.split(" ");
        String result = "";
        for (int i = words.length - 1; i >= 0; i--) {
            result = result + words[i];
            if (i != 0) {
                result = result + " ";
            }
        }
        return result;
    }

    public static int countOccurrences(int[] values, int x) {
        int count = 0;
        for (int i = 0; i < values.length; i++) {
            if (values[i] == x) {
                count++;
            }
        }
        return count;
    }
}
