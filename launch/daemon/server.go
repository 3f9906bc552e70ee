package daemon

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/numasteal/numasteal/balance"
	"github.com/numasteal/numasteal/buildgraph"
	"github.com/numasteal/numasteal/farm"
	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/memory"
	"github.com/numasteal/numasteal/topology"
	"github.com/numasteal/numasteal/topology/domains"
)

// Config configures a daemon. Zero fields mean the defaults given.
type Config struct {
	Paths launch.Paths
	// Slots is how many jobs run at once; 0: the usable CPUs
	// (topology.EffectiveParallelism: cgroup cpuset and quota).
	Slots int
	// Mem bounds what the running jobs hold or are expected to hold
	// together, in bytes; 0: only what the machine and the daemon's
	// cgroups allow (package memory reads every limit).
	Mem int64
	// Reserve is the memory kept free of jobs; 0: package memory's
	// default (a sixteenth of the limit, within 32 to 512 MiB).
	Reserve int64
	// Memory is where memory is read; nil: the live machine and the
	// daemon's own cgroups (memory.Open("/", 0)).
	Memory *memory.Source
	// GuessCompile and GuessLink are the first guesses of a job's peak
	// RSS before one was measured; 0: 256 MiB and 1 GiB.
	GuessCompile, GuessLink int64
	// Idle is how long the daemon runs with no connection before it
	// exits; 0: 5 minutes; negative: never.
	Idle time.Duration
	// History is the peak-RSS store's file; "": Paths.Dir/peak-rss.
	History string
	// Trace, when set, receives the Chrome trace of every admitted job
	// when the daemon exits.
	Trace string
	// Topology is the machine; nil: topology.Discover().
	Topology *topology.Topology
	// Policy places jobs; nil: balance.Default().
	Policy balance.Policy
	// Log gets the daemon's messages; nil: io.Discard.
	Log io.Writer
	// Farm is the compile farm that compiles go to when no local slot is
	// free ("Farm" in the package documentation); nil: none. The caller
	// builds it (and probes its hosts); the daemon takes and releases its
	// leases.
	Farm *farm.Farm
}

// ErrRunning: another daemon holds the lock and answers on the socket.
var ErrRunning = errors.New("a numasteal daemon is already running")

// Server is a running daemon.
type Server struct {
	cfg   Config
	ln    *listener
	lock  *os.File
	topo  *topology.Topology
	start time.Time

	mu     sync.Mutex // guards everything below, and pool and rss
	pool   pool
	rss    *rssStore
	nextID int64
	// remeasure is the re-measure sampling of jobs whose peak is known
	// (remeasure.go).
	remeasure remeasure
	active    int // connections, and handed-off jobs still running
	lastIdle  time.Time
	closing   bool
	trace     *buildgraph.TraceWriter
	tracks    map[string]int // trace track by name: "cpu N", or a farm host's address
	admitted  int64
	// wake is the timer that admits again when a farm host comes back up
	// (pool.wake), due at wakeAt; nil when none is armed.
	wake   *time.Timer
	wakeAt time.Time

	watchers sync.WaitGroup // the handed-off jobs' exit watchers
	builds   *launch.Builds // the build of each launcher without $NUMASTEAL_BUILD

	// mem is the memory governor of the local jobs (pool.mem too).
	// priors are the peaks of each build's recent jobs by kind, the need
	// of a job whose output was never measured. oomRetries counts the
	// jobs run again after an OOM kill, oomFailed those that failed.
	mem        *memory.Governor
	priors     map[string]*memory.Prior
	oomRetries int64
	oomFailed  int64
	// buildWatches are the builds whose process is watched, to drop
	// their waiting jobs when it ends (buildwatch.go).
	buildWatches map[string]buildWatch
	// jsTicking is set while tickJobservers runs (jobserver.go).
	jsTicking bool
}

// Serve runs a daemon until ctx is done or it has been idle for
// cfg.Idle; it returns ErrRunning when another one runs.
func Serve(ctx context.Context, cfg Config) error {
	s, err := Listen(cfg)
	if err != nil {
		return err
	}
	return s.Run(ctx)
}

// Listen takes the daemon lock and the socket ("Startup" in the launch
// package documentation). While another daemon holds the lock it waits,
// up to 10 s, for that one to answer (then ErrRunning) or to exit (a
// daemon exiting idle releases the lock a moment after it closed its
// socket).
func Listen(cfg Config) (*Server, error) {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	p := cfg.Paths
	if err := p.Ensure(); err != nil {
		return nil, err
	}
	lock, err := os.OpenFile(p.Lock, os.O_RDWR|os.O_CREATE|syscall.O_CLOEXEC, 0o600)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		err = unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			lock.Close()
			return nil, err
		}
		if c, err := launch.Dial(p.Socket); err == nil {
			c.Close()
			lock.Close()
			if b, err := os.ReadFile(p.Lock); err == nil && len(b) > 1 {
				return nil, fmt.Errorf("%w on %s (pid %s)", ErrRunning, p.Socket, b[:len(b)-1])
			}
			return nil, fmt.Errorf("%w on %s", ErrRunning, p.Socket)
		}
		if time.Now().After(deadline) {
			lock.Close()
			return nil, fmt.Errorf("%w: it holds %s but does not answer on %s", ErrRunning, p.Lock, p.Socket)
		}
		time.Sleep(wait)
	}
	lock.Truncate(0)
	lock.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	// Holding the lock, any socket file is a dead daemon's: replace it.
	if err := os.Remove(p.Socket); err != nil && !os.IsNotExist(err) {
		lock.Close()
		return nil, err
	}
	ln, err := listen(p.Socket)
	if err != nil {
		lock.Close()
		return nil, err
	}
	os.Chmod(p.Socket, 0o600)
	s := &Server{cfg: cfg, ln: ln, lock: lock, start: time.Now()}
	if err := s.init(); err != nil {
		ln.release()
		os.Remove(p.Socket)
		lock.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) init() error {
	cfg := &s.cfg
	topo := cfg.Topology
	if topo == nil {
		var err error
		if topo, err = topology.Discover(); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	s.topo = topo
	slots := cfg.Slots
	if slots <= 0 {
		slots = topo.EffectiveParallelism()
	}
	src := cfg.Memory
	if src == nil {
		var err error
		if src, err = memory.Open("/", 0); err != nil {
			return fmt.Errorf("daemon: %w", err)
		}
	}
	s.mem = memory.NewGovernor(src, memory.Thresholds{Budget: cfg.Mem, Reserve: cfg.Reserve}, memory.Options{
		Changed: s.readmit,
		Event:   s.memEvent,
	})
	s.priors = make(map[string]*memory.Prior)
	if cfg.GuessCompile <= 0 {
		cfg.GuessCompile = 256 << 20
	}
	if cfg.GuessLink <= 0 {
		cfg.GuessLink = 1 << 30
	}
	if cfg.Idle == 0 {
		cfg.Idle = 5 * time.Minute
	}
	if cfg.History == "" {
		cfg.History = filepath.Join(cfg.Paths.Dir, "peak-rss")
	}
	rss, err := loadRSS(cfg.History)
	if err != nil {
		fmt.Fprintf(cfg.Log, "numasteal serve: %v; starting with no history\n", err)
		rss = newRSSStore()
	}
	s.rss = rss
	pol := cfg.Policy
	if pol == nil {
		pol = balance.Default()
	}
	var bal balance.Balancer
	if doms, err := domains.Build(topo); err == nil {
		bal, err = pol.Bind(topo, doms, topo.Usable, 0)
		if err != nil {
			fmt.Fprintf(cfg.Log, "numasteal serve: placement off: %v\n", err)
		}
	}
	s.pool = pool{
		slots:         slots,
		mem:           s.mem,
		running:       make(map[int64]*job),
		perCPU:        make([]int, topo.Usable.Last()+1),
		bal:           bal,
		nodeOf:        topo.NodeOf,
		farm:          cfg.Farm,
		wake:          s.wakeLocked,
		estimate:      s.estimateLocked,
		estimateBuild: s.estimateBuildLocked,
		nodes:         newNodePlacer(topo),
	}
	if cfg.Trace != "" {
		s.trace = buildgraph.NewTraceWriter(s.start, "numasteal serve")
		s.tracks = make(map[string]int)
	}
	s.builds = launch.NewBuilds("/proc")
	s.lastIdle = time.Now()
	fmt.Fprintf(cfg.Log, "numasteal serve: pid %d on %s: %d slots, %s\n",
		os.Getpid(), cfg.Paths.Socket, slots, describeMemory(src, cfg.Mem))
	if cfg.Farm != nil {
		fmt.Fprintf(cfg.Log, "numasteal serve: farm of %d hosts, %d slots\n", len(cfg.Farm.Hosts()), cfg.Farm.Slots())
	}
	return nil
}

// Run accepts connections until ctx is done or the daemon has been idle
// for Config.Idle, then shuts down: the socket is unlinked and closed
// while the lock is still held (so it can only be this daemon's socket),
// the history and trace are written, and the lock is released last.
func (s *Server) Run(ctx context.Context) error {
	stop := make(chan struct{})
	go s.watchIdle(ctx, stop)
	memCtx, memStop := context.WithCancel(context.Background())
	memDone := make(chan struct{})
	go func() { s.mem.Run(memCtx); close(memDone) }()
	defer func() { memStop(); <-memDone }() // continues any job it froze
	for {
		c, err := s.ln.accept()
		if err != nil {
			break
		}
		s.mu.Lock()
		if s.closing {
			s.mu.Unlock()
			c.Close() // the launcher retries against a new daemon
			continue
		}
		s.active++
		s.mu.Unlock()
		s.serve(c)
	}
	s.ln.release()
	close(stop)
	s.mu.Lock()
	for _, j := range s.pool.running {
		if j.pidfd != nil {
			j.pidfd.Close() // ends its watcher
		}
	}
	s.stopBuildWatchesLocked()
	s.endJobserversLocked()
	s.mu.Unlock()
	s.watchers.Wait()
	s.mu.Lock()
	s.closing = true
	if s.wake != nil {
		s.wake.Stop()
	}
	err := s.saveLocked()
	if s.trace != nil {
		if f, e := os.Create(s.cfg.Trace); e == nil {
			s.trace.WriteTo(f)
			f.Close()
		}
	}
	s.mu.Unlock()
	s.builds.Close()
	s.lock.Close()
	return err
}

// watchIdle closes the listener once ctx is done or nothing has been
// connected for Config.Idle, and saves the history every few seconds.
func (s *Server) watchIdle(ctx context.Context, stop <-chan struct{}) {
	tick := 5 * time.Second
	if s.cfg.Idle > 0 {
		tick = min(tick, max(s.cfg.Idle/8, 10*time.Millisecond))
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			s.shutdown()
			return
		case <-t.C:
		}
		s.mu.Lock()
		if s.rss.dirty {
			s.saveLocked()
		}
		idle := s.cfg.Idle > 0 && s.active == 0 && time.Since(s.lastIdle) >= s.cfg.Idle
		s.mu.Unlock()
		if idle {
			fmt.Fprintf(s.cfg.Log, "numasteal serve: idle for %v, exiting\n", s.cfg.Idle)
			s.shutdown()
			return
		}
	}
}

// shutdown stops accepting: new connections are refused, and the
// socket file goes away while this daemon still holds the lock.
func (s *Server) shutdown() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
	os.Remove(s.cfg.Paths.Socket)
	s.ln.close()
}

func (s *Server) saveLocked() error {
	if err := s.rss.save(s.cfg.History); err != nil {
		fmt.Fprintf(s.cfg.Log, "numasteal serve: saving history: %v\n", err)
		return err
	}
	return nil
}

// connBuffer is the read buffer of a connection: an acquire line of a
// compile with a long output path fits.
const connBuffer = 512

// readLine reads one line of at most launch.MaxLine bytes from r, newline
// included.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) {
		if len(long) >= launch.MaxLine {
			return nil, fmt.Errorf("%w: line longer than %d bytes", launch.ErrMalformed, launch.MaxLine)
		}
		line, err = r.ReadSlice('\n')
		long = append(long, line...)
	}
	if len(long) > launch.MaxLine {
		return nil, fmt.Errorf("%w: line longer than %d bytes", launch.ErrMalformed, launch.MaxLine)
	}
	return long, err
}

// newJob makes the job of an acquire request, with its memory need: the
// learned peak RSS of its output file (plus a tenth, for run-to-run
// noise), else the first guess of its kind.
func (s *Server) newJob(m launch.Msg, peer int) *job {
	j := &job{granted: make(chan struct{}), cpu: -1, queued: time.Now(), peer: peer}
	j.build, _ = m.Get("build")
	j.kind, _ = m.Get("kind")
	j.out, _ = m.Get("out")
	j.cmd, _ = m.Get("cmd")
	if v, _ := m.Get("local"); v == "1" {
		j.local = true
	} else if v, _ := m.Get("remote"); v == "1" {
		j.remote = true
	}
	if pid, ok := m.Int("pid"); ok {
		j.pid = int(pid)
	}
	forced, _ := m.Get("measure")
	if j.build == "" {
		j.build = "?"
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextID++
	j.id = s.nextID
	if b, ok := s.rss.lookup(j.out); ok {
		j.need, j.learned = b+b/10, true
		j.measure = s.remeasure.next()
	} else {
		j.measure = j.out != ""
		j.need = s.estimateLocked(j)
	}
	j.measure = j.measure || forced == "1"
	return j
}

// remoteOutcome is the farm's Outcome of remote job j from its report m
// ("done status= wall_us= [remote_fault=1]"): a success with the
// object's size, a host fault when distcc itself failed, else a compile
// error that counts against nobody.
func remoteOutcome(j *job, m launch.Msg) farm.Outcome {
	st, _ := m.Int("status")
	us, _ := m.Int("wall_us")
	o := farm.Outcome{Elapsed: time.Duration(us) * time.Microsecond}
	if v, _ := m.Get("remote_fault"); v == "1" {
		o.HostFault = true
		o.Err = fmt.Errorf("distcc exit %d", st)
		return o
	}
	if _, ok := m.Get("status"); ok && st == 0 {
		o.OK = true
		if fi, err := os.Stat(j.out); err == nil {
			o.Bytes = fi.Size()
		}
	}
	return o
}

// traceLocked adds j's span to the trace, on the track of its CPU or of
// its farm host. status is its exit status, "" when unknown (a
// handed-off job).
func (s *Server) traceLocked(j *job, kib int64, status string) {
	if s.trace == nil {
		return
	}
	tr := s.trackLocked(j)
	name := filepath.Base(j.out)
	if name == "" || name == "." {
		name = j.cmd
	}
	args := map[string]any{
		"build": j.build, "kind": j.kind, "out": j.out, "node": j.node,
		"rss_kib": kib, "need_kib": j.need >> 10, "status": status,
		"waited_ms": j.started.Sub(j.queued).Milliseconds(),
	}
	if j.lease != nil {
		args["host"] = j.lease.Host.Addr()
	}
	s.trace.Span(tr, name, j.started, time.Now(), args)
}

// trackLocked returns the trace track of j: its CPU's or its farm
// host's. s.mu held, s.trace set.
func (s *Server) trackLocked(j *job) int {
	track := "cpu " + strconv.Itoa(j.cpu)
	if j.lease != nil {
		track = j.lease.Host.Addr()
	}
	tr, ok := s.tracks[track]
	if !ok {
		tr = s.trace.HostTrack(track)
		s.tracks[track] = tr
	}
	return tr
}

// handoff gives j to its process: the launcher execs the command in its
// own place ("Handoff" in the package documentation), so the slot is
// freed when that process ends, seen on its pidfd (watchHandoff), no
// longer when the connection closes (the exec closes it). j counts as
// active until then.
func (s *Server) handoff(j *job) {
	s.mu.Lock()
	s.active++
	s.mu.Unlock()
	s.watchers.Add(1)
}

// watchHandoff waits for the end of the process of j, handed off, and
// frees its slot. The goroutine of j's connection calls it once the
// connection is closed: one goroutine serves a launch from its request
// to its command's end.
func (s *Server) watchHandoff(j *job) {
	defer s.watchers.Done()
	waitExit(j.pidfd)
	j.pidfd.Close()
	s.mu.Lock()
	if j.running {
		s.admitted++
		s.traceLocked(j, 0, "")
		s.pool.remove(j)
		s.learnLocked(j, 0)
	}
	s.active--
	s.idleLocked()
	s.mu.Unlock()
}

// wakeLocked arms the timer that admits again at t, unless one is due
// before. s.mu held.
func (s *Server) wakeLocked(t time.Time) {
	if s.wake != nil {
		if !s.wakeAt.After(t) {
			return
		}
		s.wake.Stop() // if it fires all the same, it only admits once more
	}
	var tm *time.Timer
	tm = time.AfterFunc(time.Until(t), func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.wake == tm {
			s.wake = nil
		}
		s.pool.admit()
	})
	s.wake, s.wakeAt = tm, t
}

// idleLocked notes when the daemon became idle: nothing connected and no
// handed-off job running. Called with s.mu held, after a decrement of
// s.active.
func (s *Server) idleLocked() {
	if s.active == 0 {
		s.lastIdle = time.Now()
	}
}
