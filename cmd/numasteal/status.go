package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/numasteal/numasteal/launch"
	"github.com/numasteal/numasteal/launch/daemon"
)

// runStatus is "numasteal status": the daemon's slots, memory budget,
// running jobs (CPU and node, or farm host; build), waiting jobs per
// build, and the farm's hosts (slots, running jobs, jobs done, faults).
func runStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal status", stderr)
	asJSON := fs.Bool("json", false, "print the daemon's JSON answer")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	p := launch.PathsFromEnv(os.Getenv)
	js, err := daemonStatusJSON(p.Socket)
	if err != nil {
		fmt.Fprintf(stderr, "numasteal status: %v\n", err)
		return exitFail
	}
	if *asJSON {
		fmt.Fprintln(stdout, js)
		return exitOK
	}
	var st daemon.Status
	if err := json.Unmarshal([]byte(js), &st); err != nil {
		fmt.Fprintf(stderr, "numasteal status: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "daemon pid %d, up %.0fs, socket %s\n", st.PID, st.Uptime, p.Socket)
	remote := 0
	for _, j := range st.Running {
		if j.Host != "" {
			remote++
		}
	}
	fmt.Fprintf(stdout, "slots %d, running %d (%d on farm hosts), jobs done %d\n", st.Slots, len(st.Running), remote, st.Done)
	m := st.Memory
	budget := "none"
	if st.MemBudget > 0 {
		budget = fmt.Sprintf("%d MiB", st.MemBudget>>10)
	}
	limit := "no cgroup limit"
	if m.Limit > 0 {
		limit = fmt.Sprintf("limit %d MiB (%s)", m.Limit>>10, m.LimitFile)
	}
	fmt.Fprintf(stdout, "memory available %d MiB, %s, reserve %d MiB, --mem %s\n", m.Available>>10, limit, m.Reserve>>10, budget)
	fmt.Fprintf(stdout, "memory of running jobs: expected %d MiB, in use %d MiB; pressure some %.0f%% full %.0f%%; learned outputs %d\n",
		st.MemUsed>>10, m.InUse>>10, m.Some, m.Full, st.Learned)
	fmt.Fprintf(stdout, "frozen %d (freezes %d), OOM kills run again %d, failed %d\n", m.Frozen, m.Freezes, m.OOMRetries, m.OOMFailed)
	if m.Holding != "" {
		fmt.Fprintf(stdout, "admission holds: %s\n", m.Holding)
	}
	if m.Err != "" {
		fmt.Fprintf(stdout, "memory: %s\n", m.Err)
	}
	for _, j := range st.Running {
		if j.Host != "" {
			fmt.Fprintf(stdout, "  host %s %-7s %5.1fs  build %s  %s\n", j.Host, j.Kind, j.For, j.Build, j.Out)
			continue
		}
		src := "guess"
		if j.Learned {
			src = "learned"
		}
		fmt.Fprintf(stdout, "  cpu %-3d node %-2d %-7s %6d MiB (%s) %5.1fs  build %s  %s\n",
			j.CPU, j.Node, j.Kind, j.NeedKiB>>10, src, j.For, j.Build, j.Out)
	}
	for _, q := range st.Waiting {
		fmt.Fprintf(stdout, "  waiting %d  build %s\n", q.Waiting, q.Build)
	}
	for _, js := range st.Jobservers {
		fmt.Fprintf(stdout, "jobserver of build %s: %d tokens lent (%d ahead, %d idle), %d launchers running, %d waiting, at most %d; %d lost tokens counted back\n",
			js.Build, js.Lent, js.Ahead, js.Idle, js.Running, js.Waiting, js.Peak, js.Recovered)
	}
	for _, h := range st.Hosts {
		state := "up"
		if h.Down {
			state = "down"
		}
		fmt.Fprintf(stdout, "farm host %s %s: running %d/%d, jobs %d, failures %d, score %.3f\n",
			h.Host, state, h.Running, h.Slots, h.Jobs, h.Failures, h.Score)
		if h.LastErr != "" {
			fmt.Fprintf(stdout, "  last failure: %s\n", h.LastErr)
		}
	}
	return exitOK
}

// daemonStatusJSON asks the daemon on socket for its status, as JSON.
func daemonStatusJSON(socket string) (string, error) {
	c, err := launch.Dial(socket)
	if err != nil {
		if errors.Is(err, os.ErrPermission) {
			if err := launch.OtherUserError(socket); err != nil {
				return "", err
			}
		}
		return "", fmt.Errorf("no daemon on %s: %w", socket, err)
	}
	defer c.Close()
	m, err := c.Call(launch.NewMsg("status"))
	js, ok := m.Get("json")
	if code, _ := m.Get("code"); m.Verb == "error" && code == "perm" {
		if err := launch.OtherUserError(socket); err != nil {
			return "", err
		}
	}
	if err != nil || m.Verb != "status" || !ok {
		msg, _ := m.Get("msg")
		if err == nil {
			err = fmt.Errorf("%s %s", m.Verb, msg)
		}
		return "", fmt.Errorf("the daemon on %s did not answer with its status: %v", socket, err)
	}
	return js, nil
}

// daemonStatus is daemonStatusJSON decoded.
func daemonStatus(socket string) (daemon.Status, error) {
	var st daemon.Status
	js, err := daemonStatusJSON(socket)
	if err != nil {
		return st, err
	}
	return st, json.Unmarshal([]byte(js), &st)
}
