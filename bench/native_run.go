package bench

import (
	"context"
	"fmt"
	"time"
)

// nativeMeasure is one run of a contender.
type nativeMeasure struct {
	buildMeasure
	daemonCPU  float64
	daemonJobs int64
}

// runNativePlan runs plan's contenders o.Reps times, alternating, and
// returns the medians and ratios.
func runNativePlan(ctx context.Context, plan *nativePlan, o NativeOptions, sess *daemonSession) (*NativeResult, error) {
	samples := make([][]nativeMeasure, len(plan.contenders))
	total := len(plan.contenders) * o.Reps
	start := time.Now()
	for rep := range o.Reps {
		for i, c := range plan.contenders {
			done := rep*len(plan.contenders) + i
			if o.Progress != nil {
				p := KernbenchProgress{Runner: c.key, Jobs: c.jobs, Rep: rep + 1, Reps: o.Reps, Run: done + 1, Runs: total}
				if done > 0 {
					p.Left = time.Since(start) / time.Duration(done) * time.Duration(total-done)
				}
				o.Progress(p)
			}
			m, err := runNativeContender(ctx, c, sess)
			if err != nil {
				return nil, err
			}
			samples[i] = append(samples[i], m)
		}
	}
	res := &NativeResult{Corpus: plan.name, CPUs: o.CPUs, Reps: o.Reps, Launcher: o.Launcher}
	for i, c := range plan.contenders {
		res.Rows = append(res.Rows, nativeRow(c, samples[i]))
	}
	res.Ratios = nativeRatios(plan.ratios, res.Rows)
	return res, nil
}

// nativeRow returns c's row: the medians of its runs.
func nativeRow(c nativeContender, runs []nativeMeasure) NativeRow {
	row := NativeRow{
		Row: c.key, Runner: c.runner, Jobs: c.jobs, J: c.j, Launcher: c.launcher,
		Builds: len(c.builds), Command: c.builds[0].build.String(), Runs: len(runs),
	}
	var elapsed, user, sys, daemon, jobs, cpu []float64
	for _, m := range runs {
		elapsed = append(elapsed, m.elapsed)
		user = append(user, m.user)
		sys = append(sys, m.sys)
		daemon = append(daemon, m.daemonCPU)
		jobs = append(jobs, float64(m.daemonJobs))
		pct := 0.0
		if m.elapsed > 0 {
			pct = 100 * (m.user + m.sys + m.daemonCPU) / m.elapsed
		}
		cpu = append(cpu, pct)
	}
	row.ElapsedS, row.UserS, row.SysS = median(elapsed), median(user), median(sys)
	row.DaemonS, row.DaemonJobs, row.CPUPct = median(daemon), median(jobs), median(cpu)
	return row
}

// runNativeContender cleans c's trees and runs its builds once, at once,
// the launcher ones with a daemon socket of their own, which it stops
// when they end (see native_daemon.go).
func runNativeContender(ctx context.Context, c nativeContender, sess *daemonSession) (nativeMeasure, error) {
	cmds := make([]nativeCmd, len(c.builds))
	for i, b := range c.builds {
		if err := b.clean.run(ctx, nil); err != nil {
			return nativeMeasure{}, fmt.Errorf("bench: %s: cleaning: %w", c.key, ctxCause(ctx, err))
		}
		cmds[i] = b.build
	}
	if !c.launcher {
		m, err := runTogether(ctx, cmds, nil)
		if err != nil {
			return nativeMeasure{}, fmt.Errorf("bench: %s: %w", c.key, ctxCause(ctx, err))
		}
		return nativeMeasure{buildMeasure: m}, verifyBuilds(ctx, c)
	}
	p := sess.next()
	m, err := runTogether(ctx, cmds, sess.env(p))
	use, serr := stopDaemon(p)
	switch {
	case err != nil:
		return nativeMeasure{}, fmt.Errorf("bench: %s: %w", c.key, ctxCause(ctx, err))
	case serr != nil:
		return nativeMeasure{}, serr
	case !use.ran || use.jobs == 0:
		return nativeMeasure{}, fmt.Errorf("bench: %s: the launchers ran no job through a daemon on %s (they run their commands alone when none answers); the daemon's log:\n%s",
			c.key, p.Socket, daemonLogTail(p))
	}
	return nativeMeasure{buildMeasure: m, daemonCPU: use.cpu, daemonJobs: use.jobs}, verifyBuilds(ctx, c)
}

// verifyBuilds runs the checks of c's builds.
func verifyBuilds(ctx context.Context, c nativeContender) error {
	for _, b := range c.builds {
		if b.verify == nil {
			continue
		}
		if err := b.verify(ctx); err != nil {
			return fmt.Errorf("bench: %s: %w", c.key, err)
		}
	}
	return nil
}

// ctxCause returns ctx's cause when it is done (the command failed
// because it was killed), else err.
func ctxCause(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return err
}

// withDaemon runs f (a configure step that may run the launcher) with
// the variables of a socket of its own, and stops whatever daemon it
// started.
func (s *daemonSession) withDaemon(f func(env []string) error) error {
	p := s.next()
	err := f(s.env(p))
	if _, serr := stopDaemon(p); err == nil {
		err = serr
	}
	return err
}
