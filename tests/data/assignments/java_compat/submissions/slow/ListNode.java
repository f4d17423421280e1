// A node of the submission's whose fields the tests read and write
// (package-private, LeetCode-style): the stand-in mirrors them.
public class ListNode {
    int val;
    ListNode next;
    ListNode(int val) { this.val = val; }
    ListNode(int val, ListNode next) { this.val = val; this.next = next; }
}
