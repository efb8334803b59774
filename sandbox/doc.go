// Package sandbox confines the calling process with the kernel, so that
// what it runs next (kustomize, Helm, a JSON Schema validator: any library
// that interprets repository content) cannot reach more than it was given,
// whatever that library's own loaders try.
//
// Confine applies, in this order, each where the kernel has it:
//   - Landlock (ABI 1+): files are read only below Rules.ReadOnly and
//     written only below Rules.ReadWrite; everything else on the file
//     system is refused (EACCES), symlinks included, as the kernel checks
//     the object a path resolves to.
//   - Landlock (ABI 4+): no TCP connect or bind.
//   - Landlock (ABI 6+): no signal to, and no abstract UNIX socket of, a
//     process outside the confined one.
//   - seccomp: socket(2), socketpair(2) and io_uring fail with EPERM, so no
//     UDP, raw, netlink or pathname UNIX socket either (Landlock restricts
//     those only from ABI 9 and 10), together with a few system calls a
//     renderer never needs (ptrace, bpf, keyctl, mount, namespaces).
//   - RLIMIT_DATA and RLIMIT_CPU: past its memory the process's allocations
//     fail; at its CPU time the kernel kills it (SIGKILL).
//
// The restrictions hold for every thread of the process (go-landlock's
// all-threads system call, seccomp's TSYNC) and for every process it
// starts; none can be lifted. Report says what was enforced and, in words,
// what the kernel could not give (Missing), so that a caller can say so.
package sandbox
