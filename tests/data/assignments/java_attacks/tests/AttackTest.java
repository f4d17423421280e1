// Hidden JUnit 5 tests of the java_attacks suite (tests/integration/test_tamper.c).
import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class AttackTest {
    @Test
    void measuresAWord() {
        assertEquals("hi", Solution.echo("hi"));
    }

    @Test
    void makesPoints() {
        assertEquals(new Point(1, 2), Solution.make(1, 2));
    }

    @Test
    void secretOfSeven() {
        assertEquals(42, Solution.secret(7));
    }

    @Test
    void hiddenWord() {
        assertEquals(16, Solution.length("xylophone-quartz"));
    }
}
