// Lab 5 -- a student's solution that stops the program on an empty array:
// System.exit(0) ends the whole JVM, test runner included, with status 0
// and before the JUnit report is written.
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
                result += " ";
            }
        }
        return result;
    }

    public static int countOccurrences(int[] values, int x) {
        if (values.length == 0) {
            System.out.println("Error: the array is empty");
            System.exit(0);
        }
        int count = 0;
        for (int v : values) {
            if (v == x) {
                count++;
            }
        }
        return count;
    }
}
