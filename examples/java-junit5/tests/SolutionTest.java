// Hidden JUnit 5 tests for the Solution class (6 tests).
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class SolutionTest {
    @Test
    void sumsDigitsOfPositiveNumber() {
        assertEquals(6, Solution.sumOfDigits(123));
        assertEquals(0, Solution.sumOfDigits(0));
    }

    @Test
    void sumsDigitsOfNegativeNumber() {
        assertEquals(9, Solution.sumOfDigits(-45));
    }

    @Test
    void leapYearsFollowGregorianRules() {
        assertTrue(Solution.isLeapYear(2024));
        assertFalse(Solution.isLeapYear(2023));
        assertFalse(Solution.isLeapYear(1900));
        assertTrue(Solution.isLeapYear(2000));
    }

    @Test
    void reversesWordOrder() {
        assertEquals("world big hello", Solution.reverseWords("hello big world"));
        assertEquals("one", Solution.reverseWords("one"));
    }

    @Test
    void countsOccurrences() {
        assertEquals(3, Solution.countOccurrences(new int[] {4, 1, 4, 4, 2}, 4));
        assertEquals(0, Solution.countOccurrences(new int[] {1, 2, 3}, 7));
    }

    @Test
    void countsOccurrencesInEmptyArray() {
        assertEquals(0, Solution.countOccurrences(new int[] {}, 1));
    }
}
