// Methods on nodes of the submission's and the tests'.
public class Nodes {
    static ListNode reverse(ListNode head) {
        ListNode prev = null;
        while (head != null) { ListNode n = head.next; head.next = prev; prev = head; head = n; }
        return prev;
    }
    static ListNode build(int... xs) { ListNode h = null; for (int i = xs.length - 1; i >= 0; i--) h = new ListNode(xs[i], h); return h; }
    public static int height(TreeNode t) { return t == null ? 0 : 1 + Math.max(height(t.left), height(t.right)); }
    public static void mirror(TreeNode t) { if (t == null) return; TreeNode l = t.left; t.left = t.right; t.right = l; mirror(t.left); mirror(t.right); }
}
