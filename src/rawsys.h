/* System calls that leave errno alone: for a child that shares its parent's memory. */
#ifndef PROCTOR_RAWSYS_H
#define PROCTOR_RAWSYS_H

/*
 * A clone() with CLONE_VM and without CLONE_SETTLS shares its parent's
 * thread-local storage, errno included.  When both run at once (the jail's
 * program process while init builds the root, the cgroup threshold armer
 * beside the supervisor), every failing libc call of one writes the
 * other's errno: init's mkdir EEXIST read as the program's prctl failure,
 * the program's EINVAL read as init's.  Such a child makes its system
 * calls through raw_syscall(), which returns -errno and touches no
 * memory of libc's, and decides from that value alone.  (A sanitizer's
 * interceptors are bypassed too, which is what such a child wants.)
 *
 * Returns the kernel's value: >= 0 on success, -errno on failure.
 */
static inline long raw_syscall(long n, long a1, long a2, long a3, long a4, long a5, long a6)
{
#if defined(__x86_64__)
	register long r10 __asm__("r10") = a4;
	register long r8 __asm__("r8") = a5;
	register long r9 __asm__("r9") = a6;
	long ret;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(n), "D"(a1), "S"(a2), "d"(a3), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = n;
	register long x0 __asm__("x0") = a1;
	register long x1 __asm__("x1") = a2;
	register long x2 __asm__("x2") = a3;
	register long x3 __asm__("x3") = a4;
	register long x4 __asm__("x4") = a5;
	register long x5 __asm__("x5") = a6;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory", "cc");
	return x0;
#else
#error "raw_syscall: add this architecture's system-call sequence"
#endif
}

#define RAW0(n)			  raw_syscall((n), 0, 0, 0, 0, 0, 0)
#define RAW1(n, a)		  raw_syscall((n), (long)(a), 0, 0, 0, 0, 0)
#define RAW2(n, a, b)		  raw_syscall((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define RAW3(n, a, b, c)	  raw_syscall((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define RAW4(n, a, b, c, d)	  raw_syscall((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)
#define RAW5(n, a, b, c, d, f)	  raw_syscall((n), (long)(a), (long)(b), (long)(c), (long)(d), (long)(f), 0)

#endif
