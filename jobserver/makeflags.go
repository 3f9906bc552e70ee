package jobserver

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Kind is the form of a jobserver.
type Kind int

// The jobserver forms.
const (
	KindNone Kind = iota // no jobserver
	KindPipe             // inherited pipe descriptors R,W
	KindFIFO             // named FIFO, opened by path
)

// String returns "none", "pipe" or "fifo".
func (k Kind) String() string {
	switch k {
	case KindPipe:
		return "pipe"
	case KindFIFO:
		return "fifo"
	}
	return "none"
}

// Auth is the jobserver description parsed from MAKEFLAGS.
type Auth struct {
	Kind   Kind
	R, W   int    // descriptors, for KindPipe
	Path   string // FIFO path, for KindFIFO
	Jobs   int    // N of -jN; 0 when absent, -1 for -j alone (unlimited)
	Option string // the word that named the jobserver, as written
}

// Option prefixes recognised in MAKEFLAGS.
const (
	optAuth = "--jobserver-auth="
	optFds  = "--jobserver-fds=" // make 3.8x–4.1
	fifoPfx = "fifo:"
)

// ParseMakeflags parses a MAKEFLAGS value as GNU make writes it: an optional
// first word of single-letter flags, then options, then " -- " and variable
// assignments (which are ignored). The last --jobserver-auth or
// --jobserver-fds word wins, as in make. It returns an Auth of KindNone when
// no jobserver is named, and an *UnavailableError when the option is
// malformed.
func ParseMakeflags(flags string) (Auth, error) {
	a := Auth{R: -1, W: -1}
	for i, w := range splitWords(flags) {
		if w == "--" {
			break // command-line variable definitions follow
		}
		if i == 0 && !strings.HasPrefix(w, "-") {
			continue // single-letter flag cluster, e.g. "ks"
		}
		switch {
		case w == "-j" || w == "--jobs":
			a.Jobs = -1
		case strings.HasPrefix(w, "-j") || strings.HasPrefix(w, "--jobs="):
			v := strings.TrimPrefix(strings.TrimPrefix(w, "--jobs="), "-j")
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				return Auth{}, &UnavailableError{Option: w, Op: "parse -j", Err: fmt.Errorf("in MAKEFLAGS %q: %w", flags, errBadNumber)}
			}
			a.Jobs = n
		case strings.HasPrefix(w, optAuth), strings.HasPrefix(w, optFds):
			v := w[strings.IndexByte(w, '=')+1:]
			a.Option = w
			if p, ok := strings.CutPrefix(v, fifoPfx); ok {
				if p == "" {
					return Auth{}, &UnavailableError{Option: w, Op: "parse", Err: fmt.Errorf("in MAKEFLAGS %q: empty FIFO path", flags)}
				}
				a.Kind, a.Path, a.R, a.W = KindFIFO, p, -1, -1
				continue
			}
			r, wr, ok := parseFDs(v)
			if !ok {
				return Auth{}, &UnavailableError{Option: w, Op: "parse", Err: fmt.Errorf("in MAKEFLAGS %q: want R,W descriptors or fifo:PATH", flags)}
			}
			a.Kind, a.R, a.W, a.Path = KindPipe, r, wr, ""
		}
	}
	return a, nil
}

var errBadNumber = errors.New("not a non-negative number")

// parseFDs parses "R,W" into two distinct non-negative descriptors.
func parseFDs(v string) (r, w int, ok bool) {
	rs, ws, found := strings.Cut(v, ",")
	if !found {
		return 0, 0, false
	}
	r, err1 := strconv.Atoi(rs)
	w, err2 := strconv.Atoi(ws)
	if err1 != nil || err2 != nil || r < 0 || w < 0 {
		return 0, 0, false
	}
	return r, w, true
}

// MergeMakeflags returns old with its job options (-j, --jobs,
// --jobserver-auth, --jobserver-fds) replaced by " -jN --jobserver-auth=auth",
// keeping make's layout: the single-letter flag cluster stays first and the
// " -- VAR=value" part stays last. jobs ≤ 0 omits -j.
func MergeMakeflags(old string, jobs int, auth string) string {
	words := splitWords(old)
	var b strings.Builder
	rest := words
	if len(words) > 0 && !strings.HasPrefix(words[0], "-") && !strings.Contains(words[0], "=") {
		b.WriteString(words[0]) // flag cluster
		rest = words[1:]
	}
	if jobs > 0 {
		b.WriteString(" -j")
		b.WriteString(strconv.Itoa(jobs))
	}
	b.WriteString(" " + optAuth)
	b.WriteString(auth)
	vars := false
	for _, w := range rest {
		if w == "--" {
			vars = true
		}
		if !vars && isJobWord(w) {
			continue
		}
		b.WriteByte(' ')
		b.WriteString(w)
	}
	return b.String()
}

// isJobWord reports whether w is a MAKEFLAGS word about job slots.
func isJobWord(w string) bool {
	return strings.HasPrefix(w, "-j") || w == "--jobs" || strings.HasPrefix(w, "--jobs=") ||
		strings.HasPrefix(w, optAuth) || strings.HasPrefix(w, optFds)
}

// splitWords splits MAKEFLAGS on blanks not escaped by a backslash, keeping
// the escapes in the words (make writes "VAR=a\ b"). An empty first word
// (MAKEFLAGS starting with a blank) is dropped.
func splitWords(s string) []string {
	var words []string
	start := -1
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '\\' && i+1 < len(s) {
			if start < 0 {
				start = i
			}
			i++
			continue
		}
		if c == ' ' || c == '\t' || c == '\n' {
			if start >= 0 {
				words = append(words, s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		words = append(words, s[start:])
	}
	return words
}

// makeflagsFromEnv returns the value of the last MAKEFLAGS entry in env.
func makeflagsFromEnv(env []string) string {
	v := ""
	for _, kv := range env {
		if s, ok := strings.CutPrefix(kv, "MAKEFLAGS="); ok {
			v = s
		}
	}
	return v
}

// setenv returns env with every key entry removed and key=value appended.
func setenv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}
