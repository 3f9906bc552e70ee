package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/numasteal/numasteal/farm"
)

// farmCommands are the subcommands of "numasteal farm".
var farmCommands = [...]command{
	{"status", "probe the farm's hosts: slots, reachability, round trip, score", runFarmStatus},
}

// runFarmCmd dispatches "numasteal farm SUBCOMMAND".
func runFarmCmd(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return dispatchIn(ctx, "numasteal farm", farmCommands[:], farmUsage, args, stdout, stderr)
}

func farmUsage(w io.Writer) {
	fmt.Fprintln(w, "usage: numasteal farm <command> [flags]")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "commands:")
	for _, c := range farmCommands {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
}

// farmStatusJSON is one host in `numasteal farm status --json`.
type farmStatusJSON struct {
	Host  string  `json:"host"`
	Slots int     `json:"slots"`
	Up    bool    `json:"up"`
	RTTms float64 `json:"rtt_ms,omitempty"`
	Score float64 `json:"score"`
	Error string  `json:"error,omitempty"`
}

// runFarmStatus implements "numasteal farm status": it probes every host
// with a TCP connect and prints its slots, state, round trip and the
// placement score it starts a run with. Exit status 1 when no host
// answers.
func runFarmStatus(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("numasteal farm status", stderr)
	hosts := fs.String("farm", "env", "distcc `HOSTS` (\"host[:port]/N ...\"), a hosts file, or env for $DISTCC_HOSTS")
	timeout := fs.Duration("timeout", probeTimeout, "connect timeout per host")
	asJSON := fs.Bool("json", false, "print a JSON array")
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: numasteal farm status [--farm HOSTS] [--timeout D] [--json]")
		return exitUsage
	}
	hs, err := farm.LoadHosts(*hosts, os.Getenv, func(err error) { fmt.Fprintf(stderr, "numasteal farm status: warning: %v\n", err) })
	if err != nil {
		fmt.Fprintf(stderr, "numasteal farm status: %v\n", err)
		return exitUsage
	}
	f := farm.New(hs, farm.Config{})
	now := time.Now()
	errs := f.ProbeAll(ctx, *timeout, now)
	stats := f.Stats(now)
	var rows []farmStatusJSON
	up, slots := 0, 0
	for i, s := range stats {
		r := farmStatusJSON{Host: s.Host.Addr(), Slots: s.Host.Slots, Up: errs[i] == nil,
			RTTms: float64(s.RTT.Microseconds()) / 1e3, Score: s.Score}
		if errs[i] != nil {
			r.Error = errs[i].Error()
		} else {
			up++
			slots += s.Host.Slots
		}
		rows = append(rows, r)
	}
	code := exitOK
	if up == 0 {
		code = exitFail
	}
	if *asJSON {
		if c := writeJSON(stdout, rows); c != exitOK {
			return c
		}
		return code
	}
	tw := tabwriter.NewWriter(stdout, 0, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tSLOTS\tSTATE\tRTT\tSCORE")
	for _, r := range rows {
		state, rtt := "up", fmt.Sprintf("%.2fms", r.RTTms)
		if !r.Up {
			state, rtt = "down", "-"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%.3f\n", r.Host, r.Slots, state, rtt, r.Score)
	}
	tw.Flush()
	fmt.Fprintf(stdout, "%d of %d hosts up, %d slots\n", up, len(rows), slots)
	for _, r := range rows {
		if r.Error != "" {
			fmt.Fprintf(stdout, "  %s: %s\n", r.Host, r.Error)
		}
	}
	return code
}
