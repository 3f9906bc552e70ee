package launch

import (
	"bytes"
	"encoding/binary"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/internal/kernfile"
)

// A launcher is invisible to its command's signals: every disposition it
// inherited (ignored stays ignored; a caught signal is default after exec
// anyway) and its signal mask reach the command as they came, handed off
// or measured. Go's runtime stands in the way: at start it installs its
// handler on almost every signal, ignored ones included (it keeps an
// inherited SIG_IGN only for SIGHUP and SIGINT), and unblocks the signals
// it needs (SIGHUP, SIGINT, SIGQUIT, SIGTERM...) in every thread; exec
// then resets the handled signals to their default and keeps the changed
// mask, and a forked child gets the default for every handled signal. The
// runtime remembers what it found, in runtime.fwdSig (each signal's
// disposition at start) and runtime.initSigmask (the mask at start), which
// no API exports: startSignals reads them through the executable's symbol
// table. A stripped executable (no .symtab) falls back to what the kernel
// and os/signal still know: an ignored SIGHUP or SIGINT, and the signals
// the runtime does not handle; the mask is then left as the runtime made
// it.

// inherited is what the launcher's signals were when it started.
type inherited struct {
	ignored   uint64 // bit sig-1: SIG_IGN at start
	mask      uint64 // the signal mask at start, when maskKnown
	maskKnown bool
}

// sigIgn is SIG_IGN as rt_sigaction takes it.
const sigIgn = 1

// startSignals returns the inherited dispositions and mask, and ignores
// again in the launcher the signals that were ignored (so that neither the
// launcher nor a child it forks is killed by one), except SIGCHLD, whose
// SIG_IGN would reap the measured command before the launcher's wait. Run
// calls it first, before anything calls signal.Notify, and passes what it
// returns to every exec and fork.
func startSignals() (startup inherited) {
	fwd, mask := runtimeSignalState()
	startup.ignored = ignoredNow()
	if fwd != nil {
		for sig := 1; sig <= 64; sig++ {
			if fwd[sig] == sigIgn {
				startup.ignored |= 1 << (sig - 1)
			}
		}
	}
	if mask != nil {
		startup.mask, startup.maskKnown = *mask, true
	}
	for sig := 1; sig <= 64; sig++ {
		if startup.ignoredAt(syscall.Signal(sig)) && syscall.Signal(sig) != syscall.SIGCHLD {
			signal.Ignore(syscall.Signal(sig))
		}
	}
	return startup
}

// ignoredNow returns the signals ignored now (bit sig-1): those the
// runtime left ignored, and those it does not handle. The kernel shows
// them in /proc/self/status (SigIgn), one read where asking rt_sigaction
// takes 64 system calls; without /proc, it asks rt_sigaction.
func ignoredNow() uint64 {
	var buf [2048]byte
	if b, err := kernfile.Read("/proc/self/status", buf[:]); err == nil {
		if ign, ok := statusMask(b, "SigIgn:"); ok {
			return ign
		}
	}
	var ign uint64
	for sig := 1; sig <= 64; sig++ {
		if h, ok := sigHandler(sig); ok && h == sigIgn {
			ign |= 1 << (sig - 1)
		}
	}
	return ign
}

// statusMask returns the hexadecimal mask of the line key ("SigIgn:") of
// a /proc/PID/status text.
func statusMask(status []byte, key string) (uint64, bool) {
	for len(status) > 0 {
		line := status
		if i := bytes.IndexByte(status, '\n'); i >= 0 {
			line, status = status[:i], status[i+1:]
		} else {
			status = nil
		}
		if v, ok := bytes.CutPrefix(line, []byte(key)); ok {
			n, err := strconv.ParseUint(string(bytes.TrimSpace(v)), 16, 64)
			if err != nil {
				return 0, false
			}
			return n, true
		}
	}
	return 0, false
}

func (in inherited) ignoredAt(sig syscall.Signal) bool {
	return sig >= 1 && sig <= 64 && in.ignored&(1<<(sig-1)) != 0
}

// beforeExec sets, in the calling thread, every inherited SIG_IGN and the
// inherited mask, for the exec that follows; undo puts the mask back when
// the exec failed.
func (in inherited) beforeExec() (undo func()) {
	for sig := 1; sig <= 64; sig++ {
		if in.ignoredAt(syscall.Signal(sig)) {
			setHandler(sig, sigIgn)
		}
	}
	return in.startMask()
}

// startMask sets the calling thread's signal mask to the inherited one,
// for an exec or a fork from this thread (the runtime gives a forked
// child the forking thread's mask), and returns the function that puts
// the runtime's back. The launcher still gets the signals the mask
// blocks: its other threads take them. An empty inherited mask (what
// make and ninja give their children) is already every thread's: the
// runtime starts each thread with the inherited mask and only unblocks
// signals, so nothing is set and the goroutine is not locked to its
// thread (locking would start the runtime's template thread).
func (in inherited) startMask() (undo func()) {
	if !in.maskKnown || in.mask == 0 {
		return func() {}
	}
	runtime.LockOSThread()
	var set, old unix.Sigset_t
	for sig := 1; sig <= 64; sig++ {
		if in.mask&(1<<(sig-1)) != 0 {
			w := uint(sig-1) / uint(8*unsafe.Sizeof(set.Val[0]))
			set.Val[w] |= 1 << (uint(sig-1) % uint(8*unsafe.Sizeof(set.Val[0])))
		}
	}
	if unix.PthreadSigmask(unix.SIG_SETMASK, &set, &old) != nil {
		runtime.UnlockOSThread()
		return func() {}
	}
	return func() {
		unix.PthreadSigmask(unix.SIG_SETMASK, &old, nil)
		runtime.UnlockOSThread()
	}
}

// kernelSigaction is struct sigaction as rt_sigaction(2) takes it; only
// the handler is read or set, and the rest is zero, so the layouts of the
// architectures (with or without sa_restorer) all fit.
type kernelSigaction struct {
	handler uintptr
	rest    [3]uint64
}

func sigHandler(sig int) (uintptr, bool) {
	var old kernelSigaction
	_, _, e := unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), 0, uintptr(unsafe.Pointer(&old)), 8, 0, 0)
	return old.handler, e == 0
}

func setHandler(sig int, h uintptr) {
	act := kernelSigaction{handler: h}
	unix.RawSyscall6(unix.SYS_RT_SIGACTION, uintptr(sig), uintptr(unsafe.Pointer(&act)), 0, 8, 0, 0)
}

// runtimeSignalState returns the runtime's fwdSig and initSigmask, found
// by their addresses in the executable's symbol table relative to
// runtime.MemProfileRate (so a position-independent executable works too),
// and checked by their sizes; nil when they cannot be found.
func runtimeSignalState() (fwd *[65]uintptr, mask *uint64) {
	syms := elfSymbols("/proc/self/exe", "runtime.MemProfileRate", "runtime.fwdSig", "runtime.initSigmask")
	anchor, ok := syms["runtime.MemProfileRate"]
	if !ok || anchor.size != uint64(unsafe.Sizeof(runtime.MemProfileRate)) {
		return nil, nil
	}
	base := unsafe.Pointer(&runtime.MemProfileRate)
	if s, ok := syms["runtime.fwdSig"]; ok && s.size == uint64(unsafe.Sizeof([65]uintptr{})) {
		fwd = (*[65]uintptr)(unsafe.Add(base, int(s.value-anchor.value)))
	}
	if s, ok := syms["runtime.initSigmask"]; ok && s.size == 8 {
		mask = (*uint64)(unsafe.Add(base, int(s.value-anchor.value)))
	}
	return fwd, mask
}

type elfSym struct{ value, size uint64 }

// elfSymbols returns the value and size of the named symbols of the
// 64-bit little-endian ELF file path (.symtab); what it cannot read is
// missing. It reads only the section headers, the symbol table from its
// end and the part of the string table that names those symbols, with
// pread(2), not debug/elf's whole model: Go's linker writes the functions
// first and the variables (the runtime's, which are asked for) after
// them, so a few kilobytes of the launcher's 3 MB are read. (A mapping of
// the file would cost more: each touched page maps its neighbours too,
// and the exec unmaps them all.)
func elfSymbols(path string, names ...string) map[string]elfSym {
	out := make(map[string]elfSym, len(names))
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return out
	}
	defer unix.Close(fd)
	read := func(off, n uint64) []byte {
		if n > elfReadMax {
			return nil
		}
		b := make([]byte, n)
		if got, err := unix.Pread(fd, b, int64(off)); err != nil || uint64(got) != n {
			return nil
		}
		return b
	}
	le := binary.LittleEndian
	h := read(0, 64)
	if h == nil || string(h[:4]) != "\x7fELF" || h[4] != 2 || h[5] != 1 {
		return out
	}
	shoff, shentsize, shnum := le.Uint64(h[0x28:]), uint64(le.Uint16(h[0x3a:])), uint64(le.Uint16(h[0x3c:]))
	if shentsize < 64 || shnum == 0 {
		return out
	}
	shdrs := read(shoff, shnum*shentsize)
	if shdrs == nil {
		return out
	}
	section := func(i uint64) (typ uint32, off, size uint64, link uint32) {
		s := shdrs[i*shentsize:]
		return le.Uint32(s[4:]), le.Uint64(s[0x18:]), le.Uint64(s[0x20:]), le.Uint32(s[0x28:])
	}
	for i := range shnum {
		typ, symOff, symSize, link := section(i)
		if typ != 2 || uint64(link) >= shnum { // SHT_SYMTAB
			continue
		}
		_, strOff, strSize, _ := section(uint64(link))
		// The table from its end, a chunk at a time; each chunk's names
		// in one read of the span of the string table they lie in.
		for end := symSize - symSize%24; end >= 24 && len(out) < len(names); {
			start := end - min(end, elfSymChunk)
			syms := read(symOff+start, end-start)
			if syms == nil {
				return out
			}
			lo, hi := strSize, uint64(0)
			for k := 0; k+24 <= len(syms); k += 24 {
				if o := uint64(le.Uint32(syms[k:])); o < strSize {
					lo, hi = min(lo, o), max(hi, o)
				}
			}
			if lo <= hi {
				strs := read(strOff+lo, min(hi+elfNameMax, strSize)-lo)
				if strs == nil {
					return out
				}
				for k := len(syms) - 24; k >= 0; k -= 24 {
					o := uint64(le.Uint32(syms[k:]))
					if o < lo || o > hi {
						continue
					}
					name := strs[o-lo:]
					for _, n := range names {
						if len(name) > len(n) && name[len(n)] == 0 && string(name[:len(n)]) == n {
							out[n] = elfSym{value: le.Uint64(syms[k+8:]), size: le.Uint64(syms[k+16:])}
						}
					}
				}
			}
			end = start
		}
		return out
	}
	return out
}

// elfSymChunk is the part of the symbol table elfSymbols reads at a time
// (a multiple of a symbol's 24 bytes); elfNameMax bounds the names it
// compares; elfReadMax bounds any one read.
const (
	elfSymChunk = 24 * 512
	elfNameMax  = 64
	elfReadMax  = 16 << 20
)
