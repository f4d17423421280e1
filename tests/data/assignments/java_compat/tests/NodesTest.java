// JUnit tests of nodes whose fields the tests read and write (java_compat).
import static org.junit.jupiter.api.Assertions.*;
import org.junit.jupiter.api.Test;
class NodesTest {
    @Test void reversesNodesTheTestsBuilt() {
        ListNode a = new ListNode(1);
        a.next = new ListNode(2);
        a.next.next = new ListNode(3);
        ListNode r = Nodes.reverse(a);
        assertEquals(3, r.val);
        assertEquals(2, r.next.val);
        assertEquals(1, r.next.next.val);
        assertNull(r.next.next.next);
        assertSame(a, r.next.next);
        assertNull(a.next);
    }
    @Test void readsNodesTheSubmissionBuilt() {
        ListNode h = Nodes.build(4, 5, 6);
        int sum = 0;
        for (ListNode n = h; n != null; n = n.next) sum += n.val;
        assertEquals(15, sum);
        h.next.val = 50;
        assertEquals(6, Nodes.reverse(h).val);
        ListNode n = Nodes.build(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20);
        int len = 0;
        for (; n != null; n = n.next) len++;
        assertEquals(20, len);
    }
    @Test void trees() {
        TreeNode t = new TreeNode(1);
        t.left = new TreeNode(2);
        t.left.left = new TreeNode(3);
        t.right = new TreeNode(4);
        assertEquals(3, Nodes.height(t));
        Nodes.mirror(t);
        assertEquals(4, t.left.val);
        assertEquals(2, t.right.val);
        assertEquals(3, t.right.right.val);
    }
    @Test void fieldsAfterMethods() {
        Counter c = new Counter();
        c.inc(); c.inc();
        assertEquals(2, c.count);
        c.count = 10;
        c.inc();
        assertEquals(11, c.count);
        assertArrayEquals(new int[] {0, 10, 0}, c.history);
    }
}
